// The API's bodies for tenants, API keys and billing (docs/api.md; docs/openapi.json components
// of the same names): requests a client sends and views it is shown, as api/workloads.h says of
// instances. Money is integer micros of `currency`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/json_form.h"
#include "common/clock.h"
#include "common/field_table.h"
#include "common/money.h"
#include "model/ledger.h"
#include "model/tenant.h"

namespace gpurent::api {

// GET /v1/whoami: the caller.
struct Whoami {
  std::string tenant_id;
  std::string key_id;
  model::Role role = model::Role::kTenantAdmin;
  std::vector<std::string> scopes;  // ["*"]: everything the role allows
};

template <class V, schema::Of<Whoami> S>
void fields(V& visit, S& x) {
  visit("tenant_id", x.tenant_id);
  visit("key_id", x.key_id);
  visit("role", x.role);
  visit("scopes", x.scopes);
}

// POST /v1/tenants.
struct TenantCreate {
  std::string name;
};

template <class V, schema::Of<TenantCreate> S>
void fields(V& visit, S& x) {
  visit("name", x.name);
}

struct Tenant {
  std::string id;
  std::string name;
  Timestamp created_at{};
};

template <class V, schema::Of<Tenant> S>
void fields(V& visit, S& x) {
  visit("id", x.id);
  visit("name", x.name);
  visit("created_at", x.created_at);
}

// A tenant in GET /v1/tenants (operators): with its balance.
struct TenantWithBalance {
  Tenant tenant;
  Micros balance_micros = 0;
  std::string currency;
};

template <class V, schema::Of<TenantWithBalance> S>
void fields(V& visit, S& x) {
  fields(visit, x.tenant);
  visit("balance_micros", x.balance_micros);
  visit("currency", x.currency);
}

// POST /v1/api-keys: every member may be left out (the caller's tenant; the caller's role, or
// tenant-admin when an operator makes it; every scope the role allows; no name; no expiry).
struct ApiKeyCreate {
  std::optional<std::string> tenant_id;
  std::optional<model::Role> role;
  std::optional<std::string> name;
  std::optional<std::vector<std::string>> scopes;  // model/scopes.h
  std::optional<Timestamp> expires_at;
};

template <class V, schema::Of<ApiKeyCreate> S>
void fields(V& visit, S& x) {
  visit("tenant_id", x.tenant_id, schema::kOmitEmpty);
  visit("role", x.role, schema::kOmitEmpty);
  visit("name", x.name, schema::kOmitEmpty);
  visit("scopes", x.scopes, schema::kOmitEmpty);
  visit("expires_at", x.expires_at, schema::kOmitEmpty);
}

struct ApiKey {
  std::string id;
  std::string tenant_id;
  model::Role role = model::Role::kTenantAdmin;
  std::string name;
  std::string prefix;  // the secret's first characters, to recognise it
  Timestamp created_at{};
  std::vector<std::string> scopes;  // ["*"]: everything the role allows
  std::optional<Timestamp> expires_at;
};

template <class V, schema::Of<ApiKey> S>
void fields(V& visit, S& x) {
  visit("id", x.id);
  visit("tenant_id", x.tenant_id);
  visit("role", x.role);
  visit("name", x.name);
  visit("prefix", x.prefix);
  visit("created_at", x.created_at);
  visit("scopes", x.scopes);
  visit("expires_at", x.expires_at, schema::kOmitEmpty);
}

// The answer to POST /v1/api-keys: the key and its secret, shown only here.
struct ApiKeyCreated {
  ApiKey api_key;
  std::string key;
};

template <class V, schema::Of<ApiKeyCreated> S>
void fields(V& visit, S& x) {
  fields(visit, x.api_key);
  visit("key", x.key);
}

// POST /v1/session: sign the console in with an API key.
struct SessionCreate {
  std::string key;
};

template <class V, schema::Of<SessionCreate> S>
void fields(V& visit, S& x) {
  visit("key", x.key);
}

// A console session (POST and GET /v1/session): who is signed in, the API key the session was
// made from, the CSRF token the console sends with every request that changes something, and
// when the session ends. Its secret travels only in the HttpOnly cookie.
struct Session {
  std::string tenant_id;
  std::string key_id;  // the session's own
  model::Role role = model::Role::kTenantAdmin;
  std::string session_of;
  std::string csrf_token;
  Timestamp expires_at{};
};

template <class V, schema::Of<Session> S>
void fields(V& visit, S& x) {
  visit("tenant_id", x.tenant_id);
  visit("key_id", x.key_id);
  visit("role", x.role);
  visit("session_of", x.session_of);
  visit("csrf_token", x.csrf_token);
  visit("expires_at", x.expires_at);
}

// GET /v1/billing/balance.
struct Balance {
  std::string tenant_id;
  Micros balance_micros = 0;
  std::string currency;
};

template <class V, schema::Of<Balance> S>
void fields(V& visit, S& x) {
  visit("tenant_id", x.tenant_id);
  visit("balance_micros", x.balance_micros);
  visit("currency", x.currency);
}

// A run's (or a stopped disk's) line in GET /v1/billing/usage.
struct UsageItem {
  std::string instance_id;
  int64_t run = 0;
  model::UsageKind kind = model::UsageKind::kRun;
  std::string gpu_type;
  int gpu_count = 0;
  model::PricingModel pricing = model::PricingModel::kOnDemand;
  Micros price_per_gpu_hour_micros = 0;
  Timestamp started_at{};
  std::optional<Timestamp> ended_at;
  int64_t seconds = 0;          // billed
  int64_t minimum_seconds = 0;  // of those, what the minimum duration added
  Micros amount_micros = 0;
};

template <class V, schema::Of<UsageItem> S>
void fields(V& visit, S& x) {
  visit("instance_id", x.instance_id);
  visit("run", x.run);
  visit("kind", x.kind);
  visit("gpu_type", x.gpu_type);
  visit("gpu_count", x.gpu_count);
  visit("pricing", x.pricing);
  visit("price_per_gpu_hour_micros", x.price_per_gpu_hour_micros);
  visit("started_at", x.started_at);
  visit("ended_at", x.ended_at);
  visit("seconds", x.seconds);
  visit("minimum_seconds", x.minimum_seconds);
  visit("amount_micros", x.amount_micros);
}

// A volume's line in GET /v1/billing/usage.
struct VolumeUsageItem {
  std::string volume_id;
  std::string name;
  int size_gb = 0;
  Micros price_per_gb_month_micros = 0;
  Timestamp created_at{};
  std::optional<Timestamp> deleted_at;
  int64_t seconds = 0;
  Micros amount_micros = 0;
};

template <class V, schema::Of<VolumeUsageItem> S>
void fields(V& visit, S& x) {
  visit("volume_id", x.volume_id);
  visit("name", x.name);
  visit("size_gb", x.size_gb);
  visit("price_per_gb_month_micros", x.price_per_gb_month_micros);
  visit("created_at", x.created_at);
  visit("deleted_at", x.deleted_at);
  visit("seconds", x.seconds);
  visit("amount_micros", x.amount_micros);
}

// GET /v1/billing/usage: every run and volume of the tenant, and what they cost in all.
struct Usage {
  std::string tenant_id;
  std::vector<UsageItem> items;
  std::vector<VolumeUsageItem> volumes;
  Micros total_micros = 0;
  std::string currency;
  std::optional<std::string> next_cursor;  // always null: the whole list in one page
};

template <class V, schema::Of<Usage> S>
void fields(V& visit, S& x) {
  visit("tenant_id", x.tenant_id);
  visit("items", x.items);
  visit("volumes", x.volumes);
  visit("total_micros", x.total_micros);
  visit("currency", x.currency);
  visit("next_cursor", x.next_cursor);
}

// A ledger transfer that moved the tenant's money (GET /v1/billing/transfers).
struct Transfer {
  std::string id;
  Timestamp at{};
  model::TransferKind kind = model::TransferKind::kUsage;
  std::string from_account;
  std::string to_account;
  Micros amount_micros = 0;
  std::string currency;
  std::string reference;
};

template <class V, schema::Of<Transfer> S>
void fields(V& visit, S& x) {
  visit("id", x.id);
  visit("at", x.at);
  visit("kind", x.kind);
  visit("from_account", x.from_account);
  visit("to_account", x.to_account);
  visit("amount_micros", x.amount_micros);
  visit("currency", x.currency);
  visit("reference", x.reference);
}

// POST /v1/billing/topups (operators).
struct Topup {
  std::string tenant_id;
  Micros amount_micros = 0;
  std::optional<std::string> reference;
};

template <class V, schema::Of<Topup> S>
void fields(V& visit, S& x) {
  visit("tenant_id", x.tenant_id);
  visit("amount_micros", x.amount_micros);
  visit("reference", x.reference, schema::kOmitEmpty);
}

struct TopupResult {
  std::string transfer_id;
  std::string tenant_id;
  Micros amount_micros = 0;
  Micros balance_micros = 0;  // after the top-up
  std::string currency;
};

template <class V, schema::Of<TopupResult> S>
void fields(V& visit, S& x) {
  visit("transfer_id", x.transfer_id);
  visit("tenant_id", x.tenant_id);
  visit("amount_micros", x.amount_micros);
  visit("balance_micros", x.balance_micros);
  visit("currency", x.currency);
}

// A tenant's limits (GET and PUT /v1/tenants/{id}/quota): nullopt and a type not named are no
// limit.
struct Quota {
  std::string tenant_id;
  std::map<std::string, int> max_gpus_per_type;  // GPUs of a type held at once
  std::optional<int> max_instances;              // instances holding GPUs at once
  std::optional<int> max_queued;      // instances and job tasks waiting at once (more refused)
  std::optional<int> max_array;       // tasks in one job array
  std::optional<int> max_body_bytes;  // of one request's body
  int weight = 1;                     // share of contended capacity
};

template <class V, schema::Of<Quota> S>
void fields(V& visit, S& x) {
  visit("tenant_id", x.tenant_id);
  visit("max_gpus_per_type", x.max_gpus_per_type);
  visit("max_instances", x.max_instances);
  visit("max_queued", x.max_queued);
  visit("max_array", x.max_array);
  visit("max_body_bytes", x.max_body_bytes);
  visit("weight", x.weight);
}

// PUT /v1/tenants/{id}/quota: the whole quota (what is left out is no limit; weight 1).
struct QuotaSet {
  std::map<std::string, int> max_gpus_per_type;
  std::optional<int> max_instances;
  std::optional<int> max_queued;
  std::optional<int> max_array;
  std::optional<int> max_body_bytes;
  std::optional<int> weight;
};

template <class V, schema::Of<QuotaSet> S>
void fields(V& visit, S& x) {
  visit("max_gpus_per_type", x.max_gpus_per_type, schema::kOmitEmpty);
  visit("max_instances", x.max_instances, schema::kOmitEmpty);
  visit("max_queued", x.max_queued, schema::kOmitEmpty);
  visit("max_array", x.max_array, schema::kOmitEmpty);
  visit("max_body_bytes", x.max_body_bytes, schema::kOmitEmpty);
  visit("weight", x.weight, schema::kOmitEmpty);
}

// POST /v1/join-tokens (operators).
struct JoinTokenCreate {
  std::optional<std::string> description;
  std::optional<int64_t> ttl_s;  // default 24 h
};

template <class V, schema::Of<JoinTokenCreate> S>
void fields(V& visit, S& x) {
  visit("description", x.description, schema::kOmitEmpty);
  visit("ttl_s", x.ttl_s, schema::kOmitEmpty);
}

// A token a new node joins with; its secret is shown only in the answer that makes it.
struct JoinToken {
  std::string id;
  std::string token;  // gjt_...
  std::string description;
  Timestamp expires_at{};
};

template <class V, schema::Of<JoinToken> S>
void fields(V& visit, S& x) {
  visit("id", x.id);
  visit("token", x.token);
  visit("description", x.description);
  visit("expires_at", x.expires_at);
}

}  // namespace gpurent::api
