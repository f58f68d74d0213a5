#include "model/node_report_json.h"

#include <fmt/format.h>

#include "model/json_reader.h"
#include "model/telemetry.h"

namespace gpurent::model {

namespace {

using namespace json_reader;

Result<WorkloadStatus> read_workload(od::value value) {
  WorkloadStatus workload;
  GPURENT_CHECK(read_members(
      value, "workloads[]", std::array<std::string_view, 3>{"instance_id", "run", "phase"},
      [&](std::string_view key, od::value member) -> Status {
        if (key == "instance_id") {
          return read(member, "workloads[].instance_id", workload.instance_id);
        }
        if (key == "run") return read(member, "workloads[].run", workload.run);
        if (key == "phase") {
          std::string phase;
          GPURENT_CHECK(read(member, "workloads[].phase", phase));
          if (!parse_workload_phase(phase, &workload.phase)) {
            return fail(Error::invalid("invalid_message", fmt::format("unknown phase {}", phase)));
          }
          return {};
        }
        if (key == "exit_code") return read(member, "workloads[].exit_code", workload.exit_code);
        if (key == "message") return read(member, "workloads[].message", workload.message);
        if (key == "never_started") {
          return read(member, "workloads[].never_started", workload.never_started);
        }
        return {};
      }));
  return workload;
}

Status read_workloads(od::value value, std::vector<WorkloadStatus>& out) {
  out.clear();
  return for_each_item(value, "workloads", [&](od::value item) -> Status {
    GPURENT_TRY(workload, read_workload(item));
    out.push_back(std::move(workload));
    return {};
  });
}

}  // namespace

Result<NodeReport> read_node_report(std::string_view json,
                                    std::optional<std::string>* telemetry_text) {
  GPURENT_TRY(object, open_object(json));
  NodeReport report;
  std::optional<std::string> telemetry;
  GPURENT_CHECK(read_members(
      object, "", std::array<std::string_view, 2>{"applied_generation", "workloads"},
      [&](std::string_view key, od::value value) -> Status {
        if (key == "applied_generation") return read(value, key, report.applied_generation);
        if (key == "workloads") return read_workloads(value, report.workloads);
        if (key == "node_api_address") return read(value, key, report.node_api_address);
        if (key == "node_api_secret") return read(value, key, report.node_api_secret);
        if (key == "container_runtime") return read(value, key, report.container_runtime);
        if (key == "sent_at_ms") return read(value, key, report.sent_at_ms);
        if (key == "telemetry") {
          od::json_type type;
          if (const auto code = value.type().get(type)) return fail(member_error(key, code));
          if (type != od::json_type::string && type != od::json_type::null) {
            return fail(Error::invalid("invalid_message", std::string(kTelemetryIsAFrame)));
          }
          return read(value, key, telemetry);
        }
        return {};
      }));
  if (telemetry_text) {
    *telemetry_text = std::move(telemetry);
  } else if (telemetry) {
    GPURENT_TRY(batch, decode_telemetry_text(*telemetry));
    report.telemetry = std::move(batch);
  }
  return report;
}

}  // namespace gpurent::model
