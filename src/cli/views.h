// The table form (`-o table`) of every object and list the API returns: one function per shape,
// to the text printed, from the typed bodies (src/api/, as client::Answer reads them). The forms of
// instances, jobs, volumes, nodes, tenants, keys, balance and usage are in resource_views.cc, the
// others in views.cc. A newer server with changed fields still gives readable output; `-o json` is
// the exact form for programs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/accounts.h"
#include "api/billing.h"
#include "api/fleet.h"
#include "api/templates.h"
#include "api/workloads.h"
#include "client/api_client.h"
#include "common/clock.h"

namespace gpurent::cli {

std::string instances_view(const std::vector<api::Instance>& items, Timestamp now);
std::string instance_view(const api::Instance& instance, Timestamp now);
std::string offers_view(const std::vector<api::Offer>& items);
std::string benchmark_request_view(const api::BenchmarkRequest& request);
std::string node_benchmarks_view(const std::vector<api::GpuBenchmarkHistory>& items, Timestamp now);
std::string gpu_types_view(const std::vector<api::GpuType>& items);
std::string balance_view(const api::Balance& balance);
std::string usage_view(const api::Usage& usage, Timestamp now);
std::string transfers_view(const std::vector<api::Transfer>& items, Timestamp now);
std::string topup_view(const api::TopupResult& topup);
std::string whoami_view(const api::Whoami& whoami);
std::string tenants_view(const std::vector<api::TenantWithBalance>& items, Timestamp now);
std::string tenant_view(const api::Tenant& tenant, Timestamp now);
std::string api_key_view(const api::ApiKeyCreated& key, Timestamp now);
std::string api_keys_view(const std::vector<api::ApiKey>& items, Timestamp now);
std::string nodes_view(const std::vector<api::Node>& items, Timestamp now);
std::string node_view(const api::Node& node, Timestamp now);
std::string jobs_view(const std::vector<api::Job>& items, Timestamp now);
// With the job's task table when the server listed its tasks.
std::string job_view(const api::Job& job, Timestamp now);
std::string reservations_view(const std::vector<api::Reservation>& items, Timestamp now);
std::string reservation_view(const api::Reservation& reservation, Timestamp now);
// The question asked before a booking is paid: what it books and what it takes, from a quote.
std::string reservation_quote_text(const api::Reservation& quote);
std::string quota_view(const api::Quota& quota);
std::string templates_view(const std::vector<api::Template>& items);
std::string template_view(const api::Template& t);
std::string volumes_view(const std::vector<api::Volume>& items, Timestamp now);
std::string volume_view(const api::Volume& volume, Timestamp now);
// server_url goes into the printed `gpurent agent` line that joins a node with the token.
std::string join_token_view(const api::JoinToken& token, std::string_view server_url,
                            Timestamp now);

// The event log, one line per event: when, kind, object, message.
std::string events_view(const std::vector<api::Event>& items, Timestamp now);
// The last `tail` items of a list, oldest first (0: all of them): `--tail`, in both forms.
template <class T>
client::Answer<std::vector<T>> last_items(client::Answer<std::vector<T>> list, size_t tail) {
  if (tail > 0 && list.value.size() > tail) {
    const auto dropped = static_cast<std::ptrdiff_t>(list.value.size() - tail);
    list.value.erase(list.value.begin(), list.value.begin() + dropped);
    if (list.json.is_array() && list.json.size() > tail) {
      list.json.erase(list.json.begin(),
                      list.json.begin() + static_cast<std::ptrdiff_t>(list.json.size() - tail));
    }
  }
  return list;
}
std::string audit_view(const std::vector<api::AuditEntry>& items, Timestamp now);

}  // namespace gpurent::cli
