#include "billing/spot_market.h"

#include <algorithm>

namespace gpurent::billing {

Micros spot_price(Micros on_demand, int floor_permille, int utilisation_permille) {
  const int64_t u = std::clamp(utilisation_permille, 0, model::kPermille);
  const Micros floor =
      on_demand * std::clamp(floor_permille, 0, model::kPermille) / model::kPermille;
  // (cap - floor) * u^2 / 10^6 through 128 bits: one rounding.
  const auto rise = static_cast<__int128>(on_demand - floor) * u * u / 1'000'000;
  return floor + static_cast<Micros>(rise);
}

void SpotMarket::restore(std::vector<model::SpotPricePoint> points) {
  std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) {
    return std::tie(a.gpu_type, a.at) < std::tie(b.gpu_type, b.at);
  });
  for (auto& point : points) {
    auto& kept = points_[point.gpu_type];
    kept.push_back(std::move(point));
    if (kept.size() > kMaxSpotPointsPerType) kept.pop_front();
  }
  ++revision_;
}

std::optional<model::SpotPricePoint> SpotMarket::observe(std::string_view gpu_type,
                                                         int utilisation_permille, Timestamp t,
                                                         const PriceBook& book) {
  utilisation_permille = std::clamp(utilisation_permille, 0, model::kPermille);
  auto it = points_.find(gpu_type);
  if (it == points_.end())
    it = points_.emplace(std::string(gpu_type), std::deque<model::SpotPricePoint>()).first;
  auto& points = it->second;
  if (!points.empty() &&
      (points.back().utilisation_permille == utilisation_permille || points.back().at >= t)) {
    return std::nullopt;  // unchanged, or time did not move (two ticks in one millisecond)
  }
  const auto on_demand = book.on_demand_price(gpu_type, t);
  model::SpotPricePoint point{
      .gpu_type = std::string(gpu_type),
      .at = t,
      .price = on_demand
                   ? spot_price(*on_demand, book.at(t).spot_floor_permille, utilisation_permille)
                   : 0,
      .utilisation_permille = utilisation_permille};
  points.push_back(point);
  if (points.size() > kMaxSpotPointsPerType) points.pop_front();
  ++revision_;
  return point;
}

SpotMarket::Span SpotMarket::span_at(std::string_view gpu_type, Timestamp t) const {
  Span span;
  const auto it = points_.find(gpu_type);
  if (it == points_.end()) return span;
  const auto& points = it->second;
  const auto p = std::upper_bound(
      points.begin(), points.end(), t,
      [](Timestamp value, const model::SpotPricePoint& q) { return value < q.at; });
  if (p != points.end()) span.until = p->at;
  if (p != points.begin()) {
    span.utilisation_permille = std::prev(p)->utilisation_permille;
    span.from = std::prev(p)->at;
  }
  return span;
}

std::optional<Micros> SpotMarket::price_at(const PriceBook& book, std::string_view gpu_type,
                                           Timestamp t) const {
  const auto on_demand = book.on_demand_price(gpu_type, t);
  if (!on_demand) return std::nullopt;
  return spot_price(*on_demand, book.at(t).spot_floor_permille, utilisation_at(gpu_type, t));
}

std::vector<model::SpotPricePoint> SpotMarket::history(std::string_view gpu_type, Timestamp from,
                                                       Timestamp to) const {
  std::vector<model::SpotPricePoint> out;
  const auto it = points_.find(gpu_type);
  if (it == points_.end()) return out;
  const auto& points = it->second;
  auto p = std::upper_bound(
      points.begin(), points.end(), from,
      [](Timestamp value, const model::SpotPricePoint& q) { return value < q.at; });
  if (p != points.begin()) --p;
  for (; p != points.end() && p->at < to; ++p) out.push_back(*p);
  return out;
}

std::vector<std::string> SpotMarket::types() const {
  std::vector<std::string> out;
  for (const auto& [type, points] : points_) out.push_back(type);
  return out;
}

}  // namespace gpurent::billing
