#include "model/accounts.h"

#include "model/accounts_codec.h"

namespace gpurent::model {
namespace {

int64_t ms(Timestamp t) { return to_unix_ms(t); }
Timestamp ts(const Json& j, const char* key) { return from_unix_ms(j.at(key).get<int64_t>()); }

}  // namespace

std::string tenant_package_account(std::string_view tenant_id, std::string_view package_id) {
  return "tenant:" + std::string(tenant_id) + ":package:" + std::string(package_id);
}

std::string tenant_reservation_account(std::string_view tenant_id,
                                       std::string_view reservation_id) {
  return "tenant:" + std::string(tenant_id) + ":reservation:" + std::string(reservation_id);
}

void to_json(Json& j, const PackageProduct& v) {
  j = {{"name", v.name},
       {"gpu_type", v.gpu_type},
       {"gpu_hours", v.gpu_hours},
       {"price", v.price},
       {"validity_days", v.validity_days}};
}
void from_json(const Json& j, PackageProduct& v) {
  v.name = j.at("name").get<std::string>();
  v.gpu_type = j.at("gpu_type").get<std::string>();
  v.gpu_hours = j.at("gpu_hours").get<int64_t>();
  v.price = j.at("price").get<Micros>();
  v.validity_days = j.at("validity_days").get<int>();
}

void to_json(Json& j, const Package& v) {
  j = {{"id", v.id},
       {"tenant_id", v.tenant_id},
       {"product", v.product},
       {"gpu_type", v.gpu_type},
       {"capacity", v.capacity},
       {"used", v.used},
       {"price", v.price},
       {"recognised", v.recognised},
       {"bought_at", ms(v.bought_at)},
       {"expires_at", ms(v.expires_at)},
       {"expired", v.expired},
       {"idempotency_key", v.idempotency_key}};
}
void from_json(const Json& j, Package& v) {
  v.id = j.at("id").get<std::string>();
  v.tenant_id = j.at("tenant_id").get<std::string>();
  v.product = j.at("product").get<std::string>();
  v.gpu_type = j.at("gpu_type").get<std::string>();
  v.capacity = j.at("capacity").get<int64_t>();
  v.used = j.at("used").get<int64_t>();
  v.price = j.at("price").get<Micros>();
  v.recognised = j.at("recognised").get<Micros>();
  v.bought_at = ts(j, "bought_at");
  v.expires_at = ts(j, "expires_at");
  v.expired = j.at("expired").get<bool>();
  v.idempotency_key = j.value("idempotency_key", std::string());
}

void to_json(Json& j, const BalanceSettings& v) {
  j = {{"tenant_id", v.tenant_id},
       {"warning_threshold", v.warning_threshold},
       {"credit_limit", v.credit_limit},
       {"warned", v.warned}};
}
void from_json(const Json& j, BalanceSettings& v) {
  v.tenant_id = j.at("tenant_id").get<std::string>();
  v.warning_threshold = j.at("warning_threshold").get<Micros>();
  v.credit_limit = j.at("credit_limit").get<Micros>();
  v.warned = j.at("warned").get<bool>();
}

void to_json(Json& j, const Downtime& v) {
  j = {{"id", v.id},
       {"tenant_id", v.tenant_id},
       {"instance_id", v.instance_id},
       {"cause", v.cause},
       {"start", ms(v.start)},
       {"end", v.end ? Json(ms(*v.end)) : Json(nullptr)}};
}
void from_json(const Json& j, Downtime& v) {
  v.id = j.at("id").get<std::string>();
  v.tenant_id = j.at("tenant_id").get<std::string>();
  v.instance_id = j.at("instance_id").get<std::string>();
  v.cause = j.at("cause").get<std::string>();
  v.start = ts(j, "start");
  const auto end = j.find("end");
  if (end != j.end() && !end->is_null()) v.end = from_unix_ms(end->get<int64_t>());
}

}  // namespace gpurent::model
