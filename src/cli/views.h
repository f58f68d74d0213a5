// The table form (`-o table`) of every object and list the API returns: one function per shape,
// to the text printed. Instances, jobs, volumes, nodes, tenants and keys, balance and usage are
// shown from their typed bodies (src/api/, as client::Answer reads them: resource_views.cc); the
// other answers from the server's JSON (views.cc), where missing or mistyped fields print as "-".
// Either way a newer server with changed fields still gives readable output; `-o json` is the
// exact form for programs.
#pragma once

#include <string>
#include <string_view>

#include "api/accounts.h"
#include "api/fleet.h"
#include "api/workloads.h"
#include "common/clock.h"
#include "common/json.h"

namespace gpurent::cli {

// A member as text: strings as they are, numbers and booleans spelled out, anything else "".
std::string field_text(const Json& object, std::string_view key);

std::string instances_view(const std::vector<api::Instance>& items, Timestamp now);
std::string instance_view(const api::Instance& instance, Timestamp now);
std::string offers_view(const Json& items);
std::string gpu_types_view(const Json& items);
std::string balance_view(const api::Balance& balance);
std::string usage_view(const api::Usage& usage, Timestamp now);
std::string transfers_view(const Json& items, Timestamp now);
std::string topup_view(const Json& topup);
std::string whoami_view(const Json& whoami);
std::string tenants_view(const std::vector<api::TenantWithBalance>& items, Timestamp now);
std::string tenant_view(const api::Tenant& tenant, Timestamp now);
std::string api_key_view(const api::ApiKeyCreated& key, Timestamp now);
std::string nodes_view(const std::vector<api::Node>& items, Timestamp now);
std::string node_view(const api::Node& node, Timestamp now);
std::string jobs_view(const std::vector<api::Job>& items, Timestamp now);
// With the job's task table when the server listed its tasks.
std::string job_view(const api::Job& job, Timestamp now);
std::string reservations_view(const Json& items, Timestamp now);
std::string reservation_view(const Json& reservation, Timestamp now);
// The question asked before a booking is paid: what it books and what it takes, from a quote.
std::string reservation_quote_text(const Json& quote);
std::string quota_view(const Json& quota);
std::string templates_view(const Json& items);
std::string template_view(const Json& t);
std::string volumes_view(const std::vector<api::Volume>& items, Timestamp now);
std::string volume_view(const api::Volume& volume, Timestamp now);
// server_url goes into the printed `gpurent agent` line that joins a node with the token.
std::string join_token_view(const Json& token, std::string_view server_url, Timestamp now);

// The event log, one line per event: when, kind, object, message.
std::string events_view(const Json& items, Timestamp now);
// The last `tail` items of a list, oldest first (0: all of them): `--tail`.
Json last_items(Json items, size_t tail);
std::string audit_view(const Json& items, Timestamp now);

}  // namespace gpurent::cli
