#include "server/price_views.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <limits>
#include <map>

#include <fmt/format.h>

namespace gpurent::server {

namespace {

constexpr size_t kMaxGpuTypeLength = 64;
constexpr size_t kMaxPricedTypes = 256;
constexpr size_t kMaxReservedTerms = 32;

// Any integer: the book says which are prices (negative ones get its 422 invalid_field).
Result<std::optional<Micros>> optional_amount(const Json& body, std::string_view key) {
  return optional_int(body, key, std::numeric_limits<int64_t>::min(),
                      std::numeric_limits<int64_t>::max());
}

}  // namespace

Result<billing::PriceChange> parse_price_change(const Json& body) {
  static constexpr std::string_view kFields[] = {"effective_at",
                                                 "currency",
                                                 "gpu_per_hour_micros",
                                                 "cpu_per_core_hour_micros",
                                                 "memory_per_gb_hour_micros",
                                                 "disk_per_gb_hour_micros",
                                                 "storage_per_gb_month_micros",
                                                 "egress_per_gb_micros",
                                                 "minimum_billed_seconds",
                                                 "spot_floor_permille",
                                                 "reserved_discount_permille"};
  for (const auto& [key, value] : body.items()) {
    if (std::find(std::begin(kFields), std::end(kFields), key) == std::end(kFields)) {
      return fail(Error::invalid("unknown_field", fmt::format("unknown field '{}'", key)));
    }
  }
  billing::PriceChange change;
  GPURENT_TRY(effective_at, optional_string(body, "effective_at", 64));
  if (effective_at) {
    change.effective_at = parse_rfc3339(*effective_at);
    if (!change.effective_at) {
      return fail(invalid_field("effective_at", "must be an RFC 3339 time in UTC"));
    }
  }
  GPURENT_TRY(currency, optional_string(body, "currency", 8));
  change.currency = std::move(currency);
  if (const auto gpus = body.find("gpu_per_hour_micros"); gpus != body.end() && !gpus->is_null()) {
    if (!gpus->is_object() || gpus->size() > kMaxPricedTypes) {
      return fail(invalid_field("gpu_per_hour_micros",
                                fmt::format("must be an object of at most {} GPU types, each an "
                                            "integer price per GPU-hour or null",
                                            kMaxPricedTypes)));
    }
    for (const auto& [type, price] : gpus->items()) {
      if (type.empty() || type.size() > kMaxGpuTypeLength) {
        return fail(invalid_field("gpu_per_hour_micros", "GPU types are 1..64 characters"));
      }
      if (price.is_null()) {
        change.gpu_per_hour.emplace(type, std::nullopt);
      } else if (price.is_number_integer()) {
        change.gpu_per_hour.emplace(type, price.get<Micros>());
      } else {
        return fail(
            invalid_field("gpu_per_hour_micros",
                          fmt::format("the price of '{}' must be an integer or null", type)));
      }
    }
  }
  GPURENT_TRY(cpu, optional_amount(body, "cpu_per_core_hour_micros"));
  change.cpu_per_core_hour = cpu;
  GPURENT_TRY(memory, optional_amount(body, "memory_per_gb_hour_micros"));
  change.memory_per_gb_hour = memory;
  GPURENT_TRY(disk, optional_amount(body, "disk_per_gb_hour_micros"));
  change.disk_per_gb_hour = disk;
  GPURENT_TRY(storage, optional_amount(body, "storage_per_gb_month_micros"));
  change.storage_per_gb_month = storage;
  GPURENT_TRY(egress, optional_amount(body, "egress_per_gb_micros"));
  change.egress_per_gb = egress;
  GPURENT_TRY(minimum, optional_amount(body, "minimum_billed_seconds"));
  change.minimum_billed_seconds = minimum;
  GPURENT_TRY(floor, optional_int(body, "spot_floor_permille", std::numeric_limits<int>::min(),
                                  std::numeric_limits<int>::max()));
  if (floor) change.spot_floor_permille = static_cast<int>(*floor);
  if (const auto terms = body.find("reserved_discount_permille");
      terms != body.end() && !terms->is_null()) {
    const auto invalid = [] {
      return fail(invalid_field("reserved_discount_permille",
                                "must be an object of term days (\"30\") to an integer "
                                "discount per mille"));
    };
    if (!terms->is_object() || terms->size() > kMaxReservedTerms) return invalid();
    std::map<int, int> discounts;
    for (const auto& [days, permille] : terms->items()) {
      int parsed = 0;
      const auto [end, ec] = std::from_chars(days.data(), days.data() + days.size(), parsed);
      if (ec != std::errc() || end != days.data() + days.size() || !permille.is_number_integer() ||
          permille.get<int64_t>() < std::numeric_limits<int>::min() ||
          permille.get<int64_t>() > std::numeric_limits<int>::max()) {
        return invalid();
      }
      discounts.emplace(parsed, permille.get<int>());
    }
    change.reserved_discount_permille = std::move(discounts);
  }
  return change;
}

api::PriceVersion price_version_view(const model::PriceVersion& v) {
  api::PriceVersion view{.version = v.version,
                         .effective_at = v.effective_at,
                         .set_at = v.set_at,
                         .currency = v.currency,
                         .gpu_per_hour_micros = {v.gpu_per_hour.begin(), v.gpu_per_hour.end()},
                         .cpu_per_core_hour_micros = v.cpu_per_core_hour,
                         .memory_per_gb_hour_micros = v.memory_per_gb_hour,
                         .disk_per_gb_hour_micros = v.disk_per_gb_hour,
                         .storage_per_gb_month_micros = v.storage_per_gb_month,
                         .egress_per_gb_micros = v.egress_per_gb,
                         .minimum_billed_seconds = v.minimum_billed_seconds,
                         .spot_floor_permille = v.spot_floor_permille};
  for (const auto& [days, permille] : v.reserved_discount_permille) {
    view.reserved_discount_permille.emplace(std::to_string(days), permille);
  }
  return view;
}

api::SpotPricePoint spot_point_view(const model::SpotPricePoint& point, Micros price) {
  return {.gpu_type = point.gpu_type,
          .at = point.at,
          .price_per_gpu_hour_micros = price,
          .utilisation_permille = point.utilisation_permille};
}

api::Estimate estimate_view(const billing::Estimate& e, std::string_view currency) {
  api::Estimate view{.gpu_type = e.gpu_type,
                     .pricing = e.pricing,
                     .currency = std::string(currency),
                     .gpu_price_per_gpu_hour_micros = e.gpu_price_per_gpu_hour,
                     .per_hour_micros = {.gpu = e.gpu_per_hour,
                                         .cpu = e.cpu_per_hour,
                                         .memory = e.memory_per_hour,
                                         .disk = e.disk_per_hour,
                                         .total = e.total_per_hour},
                     .stopped_storage_per_hour_micros = e.stopped_storage_per_hour,
                     .minimum_billed_seconds = e.minimum_billed_seconds,
                     .minimum_charge_micros = e.minimum_charge};
  if (e.pricing == model::PricingModel::kSpot) {
    view.spot = api::SpotRange{.floor_per_gpu_hour_micros = e.spot_floor_per_gpu_hour,
                               .cap_per_gpu_hour_micros = e.spot_cap_per_gpu_hour,
                               .current_per_gpu_hour_micros = e.gpu_price_per_gpu_hour};
  }
  return view;
}

Result<api::WorkEstimate> work_estimate_view(const controller::GpuBenchmarks& benchmarks,
                                             const model::InstanceSpec& spec,
                                             const billing::Estimate& hourly,
                                             const billing::TrainingWork& work) {
  const auto* type = benchmarks.of_type(hourly.gpu_type);
  const controller::GpuBenchmarks::TrainingFigures* training =
      type && type->resnet50 ? &*type->resnet50 : nullptr;
  if (training == nullptr || !training->images_per_hour.contains(work.precision)) {
    return fail(Error::conflict(
        "not_measured",
        fmt::format("no {} ResNet-50 run has been recorded for GPU type '{}' (an operator runs "
                    "`gpurent bench resnet50 --gpu {} --record`)",
                    work.precision, hourly.gpu_type, hourly.gpu_type)));
  }
  const int64_t images = work.epochs * work.images_per_epoch;
  GPURENT_TRY(e, billing::estimate_work(images, training->images_per_hour.at(work.precision),
                                        spec.gpu_count, spec.gpu_milli, hourly));
  return api::WorkEstimate{.model = work.model,
                           .epochs = work.epochs,
                           .images = images,
                           .precision = work.precision,
                           .images_per_s = static_cast<double>(e.images_per_hour) / 3600,
                           .measured_gpus = training->gpus,
                           .batch = training->batch,
                           .image_size = training->image_size,
                           .seconds = e.seconds,
                           .cost_micros = e.cost};
}

}  // namespace gpurent::server
