#include "model/price_book.h"

namespace gpurent::model {

// JSON object keys are strings: {"7": 100, "30": 200}.
Json discounts_json(const std::map<int, int>& discounts) {
  Json out = Json::object();
  for (const auto& [days, permille] : discounts) out[std::to_string(days)] = permille;
  return out;
}

void to_json(Json& j, const PriceVersion& v) {
  j = {{"version", v.version},
       {"effective_at", to_unix_ms(v.effective_at)},
       {"set_at", to_unix_ms(v.set_at)},
       {"currency", v.currency},
       {"gpu_per_hour", v.gpu_per_hour},
       {"cpu_per_core_hour", v.cpu_per_core_hour},
       {"memory_per_gb_hour", v.memory_per_gb_hour},
       {"disk_per_gb_hour", v.disk_per_gb_hour},
       {"storage_per_gb_month", v.storage_per_gb_month},
       {"egress_per_gb", v.egress_per_gb},
       {"minimum_billed_seconds", v.minimum_billed_seconds},
       {"spot_floor_permille", v.spot_floor_permille},
       {"reserved_discount_permille", discounts_json(v.reserved_discount_permille)}};
}

void from_json(const Json& j, PriceVersion& v) {
  v.version = j.at("version").get<int64_t>();
  v.effective_at = from_unix_ms(j.at("effective_at").get<int64_t>());
  v.set_at = from_unix_ms(j.at("set_at").get<int64_t>());
  v.currency = j.at("currency").get<std::string>();
  v.gpu_per_hour.clear();
  for (const auto& [type, price] : j.at("gpu_per_hour").items()) {
    v.gpu_per_hour.emplace(type, price.get<Micros>());
  }
  v.cpu_per_core_hour = j.at("cpu_per_core_hour").get<Micros>();
  v.memory_per_gb_hour = j.at("memory_per_gb_hour").get<Micros>();
  v.disk_per_gb_hour = j.at("disk_per_gb_hour").get<Micros>();
  v.storage_per_gb_month = j.at("storage_per_gb_month").get<Micros>();
  v.egress_per_gb = j.at("egress_per_gb").get<Micros>();
  v.minimum_billed_seconds = j.at("minimum_billed_seconds").get<int64_t>();
  v.spot_floor_permille = j.at("spot_floor_permille").get<int>();
  // Versions stored before reserved terms existed carry the defaults.
  v.reserved_discount_permille = kDefaultReservedDiscountPermille;
  if (const auto it = j.find("reserved_discount_permille"); it != j.end()) {
    v.reserved_discount_permille.clear();
    for (const auto& [days, permille] : it->items()) {
      v.reserved_discount_permille.emplace(std::stoi(days), permille.get<int>());
    }
  }
}

void to_json(Json& j, const SpotPricePoint& v) {
  j = {{"gpu_type", v.gpu_type},
       {"at", to_unix_ms(v.at)},
       {"price", v.price},
       {"utilisation_permille", v.utilisation_permille}};
}

void from_json(const Json& j, SpotPricePoint& v) {
  v.gpu_type = j.at("gpu_type").get<std::string>();
  v.at = from_unix_ms(j.at("at").get<int64_t>());
  v.price = j.at("price").get<Micros>();
  v.utilisation_permille = j.at("utilisation_permille").get<int>();
}

}  // namespace gpurent::model
