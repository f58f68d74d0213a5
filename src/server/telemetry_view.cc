#include "server/telemetry_view.h"

#include "common/clock.h"

namespace gpurent::server {

Json gpu_telemetry_view(const controller::GpuTelemetry* telemetry) {
  if (!telemetry) return nullptr;
  Json view = Json::object();
  if (const auto& sample = telemetry->latest) {
    view["time"] = format_rfc3339(from_unix_ms(sample->time_ms));
    model::for_each_sample_field([&](const char*, const char* name, auto member) {
      if (const auto& value = (*sample).*member) view[name] = *value;
    });
  }
  view["last_xid"] =
      telemetry->last_xid
          ? Json{{"code", telemetry->last_xid->code},
                 {"time", format_rfc3339(from_unix_ms(telemetry->last_xid->time_ms))}}
          : Json(nullptr);
  view["xid_count"] = telemetry->xid_count;
  return view;
}

}  // namespace gpurent::server
