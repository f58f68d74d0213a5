#include "billing/price_book.h"

#include <algorithm>

#include <fmt/format.h>

#include "model/gpu_catalog.h"

namespace gpurent::billing {

namespace {

Error invalid_price(std::string_view field, std::string_view why) {
  return Error::unprocessable("invalid_field", fmt::format("field '{}' {}", field, why));
}

Status check_price(std::string_view field, const std::optional<Micros>& price) {
  if (price && (*price < 0 || *price > kMaxPrice)) {
    return fail(invalid_price(field, fmt::format("must be between 0 and {}", kMaxPrice)));
  }
  return {};
}

}  // namespace

PriceBook::PriceBook(std::string currency) {
  model::PriceVersion first;
  first.version = 1;
  first.currency = std::move(currency);
  for (const auto& type : model::gpu_catalog()) {
    if (type.default_price_per_hour > 0)
      first.gpu_per_hour.emplace(type.slug, type.default_price_per_hour);
  }
  versions_.push_back(std::move(first));
  reindex();
}

Status PriceBook::restore(std::vector<model::PriceVersion> versions) {
  if (versions.empty()) return {};
  std::sort(versions.begin(), versions.end(),
            [](const auto& a, const auto& b) { return a.version < b.version; });
  for (size_t i = 0; i < versions.size(); ++i) {
    if (versions[i].version != static_cast<int64_t>(i + 1)) {
      return fail(
          Error::internal(fmt::format("price versions are not numbered 1, 2, ...: found {} at {}",
                                      versions[i].version, i + 1)));
    }
  }
  versions_ = std::move(versions);
  reindex();
  return {};
}

Result<model::PriceVersion> PriceBook::set(
    const PriceChange& change, Timestamp now,
    const std::function<bool(std::string_view)>& known_type) {
  const Timestamp effective_at = change.effective_at.value_or(now);
  if (effective_at < now) {
    return fail(Error::unprocessable(
        "effective_at_in_past",
        fmt::format("effective_at {} is in the past: prices are never changed retroactively",
                    format_rfc3339(effective_at))));
  }
  if (change.currency && *change.currency != currency()) {
    return fail(Error::unprocessable(
        "currency_fixed",
        fmt::format("the ledger is kept in {}: a price version cannot change it", currency())));
  }
  for (const auto& [type, price] : change.gpu_per_hour) {
    if (!known_type(type)) {
      return fail(Error::unprocessable("unknown_gpu_type", model::unknown_gpu_type_message(type)));
    }
    GPURENT_CHECK(check_price(fmt::format("gpu_per_hour_micros.{}", type), price));
  }
  GPURENT_CHECK(check_price("cpu_per_core_hour_micros", change.cpu_per_core_hour));
  GPURENT_CHECK(check_price("memory_per_gb_hour_micros", change.memory_per_gb_hour));
  GPURENT_CHECK(check_price("disk_per_gb_hour_micros", change.disk_per_gb_hour));
  GPURENT_CHECK(check_price("storage_per_gb_month_micros", change.storage_per_gb_month));
  GPURENT_CHECK(check_price("egress_per_gb_micros", change.egress_per_gb));
  if (change.minimum_billed_seconds &&
      (*change.minimum_billed_seconds < 0 ||
       *change.minimum_billed_seconds > kMaxMinimumBilledSeconds)) {
    return fail(invalid_price("minimum_billed_seconds",
                              fmt::format("must be between 0 and {}", kMaxMinimumBilledSeconds)));
  }
  if (change.spot_floor_permille &&
      (*change.spot_floor_permille < 0 || *change.spot_floor_permille > model::kPermille)) {
    return fail(invalid_price("spot_floor_permille", "must be between 0 and 1000"));
  }
  if (change.reserved_discount_permille) {
    for (const auto& [days, permille] : *change.reserved_discount_permille) {
      if (days < 1 || days > kMaxReservedTermDays || permille < 0 || permille >= model::kPermille) {
        return fail(invalid_price(
            "reserved_discount_permille",
            fmt::format("terms are 1..{} days, discounts 0..999 per mille", kMaxReservedTermDays)));
      }
    }
  }

  model::PriceVersion next = at(effective_at);
  next.version = static_cast<int64_t>(versions_.size()) + 1;
  next.effective_at = effective_at;
  next.set_at = now;
  for (const auto& [type, price] : change.gpu_per_hour) {
    if (price) {
      next.gpu_per_hour.insert_or_assign(type, *price);
    } else {
      next.gpu_per_hour.erase(type);
    }
  }
  const auto take = [](auto& field, const auto& value) {
    if (value) field = *value;
  };
  take(next.cpu_per_core_hour, change.cpu_per_core_hour);
  take(next.memory_per_gb_hour, change.memory_per_gb_hour);
  take(next.disk_per_gb_hour, change.disk_per_gb_hour);
  take(next.storage_per_gb_month, change.storage_per_gb_month);
  take(next.egress_per_gb, change.egress_per_gb);
  take(next.minimum_billed_seconds, change.minimum_billed_seconds);
  take(next.spot_floor_permille, change.spot_floor_permille);
  take(next.reserved_discount_permille, change.reserved_discount_permille);
  versions_.push_back(next);
  reindex();
  return next;
}

const model::PriceVersion& PriceBook::at(Timestamp t) const {
  const size_t after = first_after(t);
  // Version 1 is effective from the epoch, so some version is always in force.
  return versions_[order_[after == 0 ? 0 : after - 1]];
}

std::vector<const model::PriceVersion*> PriceBook::upcoming(Timestamp now) const {
  std::vector<const model::PriceVersion*> out;
  for (size_t i = first_after(now); i < order_.size(); ++i) out.push_back(&versions_[order_[i]]);
  return out;
}

std::optional<Micros> PriceBook::on_demand_price(std::string_view gpu_type, Timestamp t) const {
  const auto& prices = at(t).gpu_per_hour;
  const auto it = prices.find(gpu_type);
  if (it == prices.end()) return std::nullopt;
  return it->second;
}

Timestamp PriceBook::next_change(Timestamp t) const {
  const size_t after = first_after(t);
  return after == order_.size() ? Timestamp::max() : versions_[order_[after]].effective_at;
}

size_t PriceBook::first_after(Timestamp t) const {
  const auto it = std::upper_bound(
      order_.begin(), order_.end(), t,
      [this](Timestamp value, size_t index) { return value < versions_[index].effective_at; });
  return static_cast<size_t>(it - order_.begin());
}

void PriceBook::reindex() {
  ++revision_;
  order_.resize(versions_.size());
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
  std::stable_sort(order_.begin(), order_.end(), [this](size_t a, size_t b) {
    return versions_[a].effective_at < versions_[b].effective_at;
  });
}

}  // namespace gpurent::billing
