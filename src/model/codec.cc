#include "model/codec.h"

#include <stdexcept>

#include <fmt/format.h>

#include "common/json_writer.h"

namespace gpurent::model {

void upgrade_older(const Json& j, InstanceSpec& v) {
  if (!j.contains("gpu_types")) v.gpu_types = {j.at("gpu_type").get<std::string>()};
  if (!j.contains("restart_policy")) v.restart_policy = default_restart_policy(v.pricing);
}

void upgrade_older(const Json& j, Instance& v) {
  if (!j.contains("queued_at")) v.queued_at = v.created_at;
  if (!j.contains("gpu_type")) {
    v.gpu_type = v.spec.gpu_types.empty() ? "" : v.spec.gpu_types.front();
  }
}

void upgrade_older(const Json& j, UsageRecord& v) {
  if (!j.contains("segment_rate")) {
    v.segment_rate = v.price_per_gpu_hour * v.gpu_count * v.gpu_milli;
  }
  if (!j.contains("segment_seconds")) v.segment_seconds = v.billed_seconds;
  if (!j.contains("segment_charged")) v.segment_charged = v.charged;
}

namespace {

// instance_json, or (as_row) instance_row_json: a job member's row leaves out its spec, which its
// job determines (job_member_spec).
std::string write_instance(const Instance& v, bool as_row) {
  const bool member_row = as_row && !v.job_id.empty() && v.job_task >= 0;
  std::string out;
  out.reserve(member_row ? 512 : 1024);
  JsonWriter(out).object(
      v, [member_row](std::string_view name) { return member_row && name == "spec"; });
  return out;
}

}  // namespace

std::string instance_json(const Instance& v) { return write_instance(v, false); }

std::string instance_row_json(const Instance& v) { return write_instance(v, true); }

Instance instance_from_row(Json row, const std::function<const Job*(std::string_view)>& job_of) {
  if (!row.contains("spec")) {  // a job member's row (instance_row_json)
    const std::string job_id = row.at("job_id").get<std::string>();
    const int index = row.at("job_task").get<int>();
    const int rank = row.at("job_rank").get<int>();
    const Job* job = job_of(job_id);
    if (!job) throw std::runtime_error(fmt::format("its job {} is missing", job_id));
    row["spec"] = job_member_spec(*job, index, rank);
  }
  if (const auto port = row.find("master_port"); port != row.end() && port->is_string()) {
    *port = std::stoi(port->get<std::string>());
  }
  return row.get<Instance>();
}

std::string strings_json(const std::vector<std::string>& values) {
  std::string out;
  JsonWriter(out).value(values);
  return out;
}

std::string usage_record_json(const UsageRecord& v) {
  std::string out;
  out.reserve(512);
  JsonWriter(out).object(v);
  return out;
}

std::string desired_state_json(const DesiredState& v) {
  std::string out;
  out.reserve(256 + 1024 * v.workloads.size());
  JsonWriter(out).object(v);
  return out;
}

std::string node_report_json(const NodeReport& v, std::optional<int64_t> sent_at_ms) {
  std::string out;
  out.reserve(256 + 128 * v.workloads.size());
  JsonWriter w(out, JsonWriter::Strings::kFromOutside);
  w.object(v, [&](std::string_view name) {
    if (name != "sent_at_ms" || !sent_at_ms) return false;
    w.key(name);
    w.number(*sent_at_ms);
    return true;
  });
  return out;
}

}  // namespace gpurent::model
