#include "model/telemetry.h"

#include <fmt/format.h>

#include <map>
#include <stdexcept>
#include <tuple>

namespace gpurent::model {

Status check_telemetry_bounds(const TelemetryBatch& batch) {
  if (batch.samples.size() > kMaxTelemetrySamples || batch.xids.size() > kMaxTelemetryXids) {
    return fail(Error::invalid(
        "telemetry_too_large",
        fmt::format("a report carries at most {} telemetry samples and {} XID events (got {} and "
                    "{})",
                    kMaxTelemetrySamples, kMaxTelemetryXids, batch.samples.size(),
                    batch.xids.size())));
  }
  return {};
}

void to_json(Json& j, const TelemetryBatch& v) {
  // Groups by GPU in order of first appearance, keeping each GPU's samples in order.
  std::vector<std::vector<const GpuSample*>> groups;
  std::map<std::string_view, size_t> group_of;
  for (const auto& sample : v.samples) {
    const auto [it, fresh] = group_of.try_emplace(sample.uuid, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(&sample);
  }
  Json gpus = Json::array();
  for (const auto& group : groups) {
    Json times = Json::array();
    int64_t previous = 0;
    for (const GpuSample* sample : group) {
      times.push_back(sample->time_ms - previous);
      previous = sample->time_ms;
    }
    Json gpu = {{"uuid", group.front()->uuid}, {"t", std::move(times)}};
    for_each_sample_field([&](const char* name, const char*, auto member) {
      bool present = false;
      for (const GpuSample* sample : group) present = present || (sample->*member).has_value();
      if (!present) return;
      Json column = Json::array();
      for (const GpuSample* sample : group) {
        const auto& value = sample->*member;
        column.push_back(value ? Json(*value) : Json(nullptr));
      }
      gpu[name] = std::move(column);
    });
    gpus.push_back(std::move(gpu));
  }
  Json xids = Json::array();
  for (const auto& xid : v.xids) {
    xids.push_back({{"uuid", xid.uuid}, {"t", xid.time_ms}, {"code", xid.code}});
  }
  j = {{"gpus", std::move(gpus)}, {"xids", std::move(xids)}, {"dropped", v.dropped}};
}

void from_json(const Json& j, TelemetryBatch& v) {
  v = {};
  for (const auto& gpu : j.at("gpus")) {
    const auto uuid = gpu.at("uuid").get<std::string>();
    const Json& times = gpu.at("t");
    if (!times.is_array()) throw std::invalid_argument("telemetry: t must be an array");
    const size_t first = v.samples.size();
    int64_t time = 0;
    for (const auto& delta : times) {
      time += delta.get<int64_t>();
      v.samples.push_back(GpuSample{.uuid = uuid, .time_ms = time});
      // Bounded while decoding, so that a huge batch is refused before it is all in memory.
      if (v.samples.size() > kMaxTelemetrySamples) return;
    }
    for_each_sample_field([&](const char* name, const char*, auto member) {
      const auto it = gpu.find(name);
      if (it == gpu.end()) return;
      if (!it->is_array() || it->size() != times.size()) {
        throw std::invalid_argument(
            fmt::format("telemetry: column {} must have one value per time", name));
      }
      using Value = typename std::remove_reference_t<decltype(GpuSample{}.*member)>::value_type;
      for (size_t i = 0; i < times.size(); ++i) {
        const Json& value = (*it)[i];
        if (!value.is_null()) v.samples[first + i].*member = value.get<Value>();
      }
    });
  }
  for (const auto& xid : j.at("xids")) {
    v.xids.push_back({xid.at("uuid").get<std::string>(), xid.at("t").get<int64_t>(),
                      xid.at("code").get<int64_t>()});
    if (v.xids.size() > kMaxTelemetryXids) return;
  }
  v.dropped = j.value("dropped", int64_t{0});
}

}  // namespace gpurent::model
