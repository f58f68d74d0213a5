#include "controller/pricing.h"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "controller/internal.h"
#include "model/gpu_catalog.h"

namespace gpurent::controller {

namespace {

// Calls `visit` with each GPU type the request accepts, until it returns true; true if one did.
template <class Visit>
bool any_accepted_type(const model::InstanceSpec& spec, Visit visit) {
  if (!spec.gpu_types.empty())
    return std::any_of(spec.gpu_types.begin(), spec.gpu_types.end(), visit);
  const int64_t min_memory_mb = int64_t{spec.min_gpu_memory_gb} * kMibPerGib;
  return std::any_of(
      model::gpu_catalog().begin(), model::gpu_catalog().end(),
      [&](const auto& type) { return type.memory_mb >= min_memory_mb && visit(type.slug); });
}

}  // namespace

Status Pricing::restore(Snapshot& snapshot) {
  GPURENT_CHECK(book_.restore(std::move(snapshot.price_versions)));
  spot_.restore(std::move(snapshot.spot_prices));
  return {};
}

Result<model::PriceVersion> Pricing::set(const model::Principal& caller,
                                         const billing::PriceChange& change,
                                         const std::function<bool(std::string_view)>& known_type) {
  if (!caller.is_operator()) return fail(forbidden("set prices"));
  const bool first_change = book_.history().size() == 1;
  GPURENT_TRY(version, book_.set(change, now(), known_type));
  if (first_change) c_.changes.price_versions.push_back(book_.history().front());
  c_.changes.price_versions.push_back(version);
  spdlog::info("price version={} effective_at={} set by key={}", version.version,
               format_rfc3339(version.effective_at), caller.key_id);
  return version;
}

std::optional<Pricing::PricedType> Pricing::dearest_type(const model::InstanceSpec& spec) const {
  std::optional<PricedType> dearest;
  any_accepted_type(spec, [&](std::string_view type) {
    const auto price = billing::gpu_price(rates(), type, spec.pricing, now());
    if (price && (!dearest || *price > dearest->per_gpu_hour)) {
      dearest = PricedType{*price, std::string(type)};
    }
    return false;  // every type is considered
  });
  return dearest;
}

Result<billing::Estimate> Pricing::estimate(const model::InstanceSpec& spec) const {
  GPURENT_CHECK(detail::validate_spec(spec, 1));
  const auto dearest = dearest_type(spec);
  return billing::estimate(rates(), spec,
                           dearest ? dearest->gpu_type : model::requested_gpu_type(spec), now());
}

std::optional<Micros> Pricing::spot_price(std::string_view gpu_type) const {
  return spot_.price_at(book_, gpu_type, now());
}

bool Pricing::within_max_price(const model::InstanceSpec& spec) const {
  if (spec.pricing != model::PricingModel::kSpot || !spec.max_price) return true;
  return any_accepted_type(spec, [&](std::string_view type) {
    const auto price = spot_price(type);
    return price && *price <= *spec.max_price;
  });
}

bool Pricing::observe_utilisation(const MilliGpusByType& capacity, const MilliGpusByType& held) {
  bool moved = false;
  const auto observe = [&](std::string_view type, int utilisation) {
    if (auto point = spot_.observe(type, utilisation, now(), book_)) {
      c_.changes.spot_prices.push_back(std::move(*point));
      moved = true;
    }
  };
  for (const auto& [type, milli] : capacity) {
    if (milli <= 0) continue;
    const auto it = held.find(type);
    const int64_t in_use = it == held.end() ? 0 : it->second;
    // Work on a node that went down still holds its GPUs: a full type is full, not over-full.
    observe(type, static_cast<int>(
                      std::min<int64_t>(model::kPermille, in_use * model::kPermille / milli)));
  }
  for (const auto& type : spot_.types()) {
    const auto it = capacity.find(type);
    if (it == capacity.end() || it->second <= 0) observe(type, 0);
  }
  return moved;
}

}  // namespace gpurent::controller
