#include "model/codec.h"

#include <charconv>
#include <iterator>
#include <stdexcept>

#include <fmt/format.h>

#include "model/telemetry.h"

namespace gpurent::model {
namespace {

int64_t ms(Timestamp t) { return to_unix_ms(t); }
Timestamp ts(const Json& j, const char* key) { return from_unix_ms(j.at(key).get<int64_t>()); }

Json optional_ms(const std::optional<Timestamp>& t) { return t ? Json(ms(*t)) : Json(nullptr); }
std::optional<Timestamp> optional_ts(const Json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return from_unix_ms(it->get<int64_t>());
}

// What nlohmann's dump() writes for a character of a string: nullptr when the character stands
// for itself, "" when it is written as \u00xx, else its short escape.
const char* escape(char c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      return static_cast<unsigned char>(c) < 0x20 ? "" : nullptr;
  }
}

// The length of the valid UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, nothing
// above U+10FFFF) that starts text[i], or 0 when none does.
size_t utf8_sequence_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80;  // the second byte's range: narrower after some leads
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong
    if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong
    if (lead == 0xF4) high = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + length > text.size() || byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (size_t k = i + 2; k < i + length; ++k) {
    if (byte(k) < 0x80 || byte(k) > 0xBF) return 0;
  }
  return length;
}

// A direct JSON writer that produces what nlohmann's dump() does: keys in std::map order (the
// callers list them sorted), no spaces, control characters as \u00xx.
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  void string(std::string_view text) {
    out_ += '"';
    // Runs of characters that need no escape are appended whole: most strings are one run.
    size_t run = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      const char* escaped = escape(text[i]);
      if (!escaped) continue;
      out_.append(text, run, i - run);
      run = i + 1;
      if (escaped[0] != '\0') {
        out_ += escaped;
      } else {
        fmt::format_to(std::back_inserter(out_), "\\u{:04x}", static_cast<unsigned>(text[i]));
      }
    }
    out_.append(text, run);
    out_ += '"';
  }
  // A string from outside the platform (a node's message): each byte that starts no valid UTF-8
  // sequence is written as U+FFFD, as nlohmann's dump() with error_handler_t::replace does.
  void text(std::string_view text) {
    std::string replaced;  // stays empty while every sequence so far is valid: the common case
    size_t copied = 0;     // text before this is in `replaced`
    for (size_t i = 0; i < text.size();) {
      if (const size_t length = utf8_sequence_length(text, i); length > 0) {
        i += length;
        continue;
      }
      replaced.append(text, copied, i - copied);
      replaced += "\xEF\xBF\xBD";  // U+FFFD
      copied = ++i;
    }
    if (copied == 0) return string(text);
    replaced.append(text, copied);
    string(replaced);
  }
  void number(int64_t value) {
    char digits[24];
    const auto written = std::to_chars(std::begin(digits), std::end(digits), value);
    out_.append(digits, written.ptr);
  }
  void boolean(bool value) { out_ += value ? "true" : "false"; }
  void null() { out_ += "null"; }
  void strings(const std::vector<std::string>& values) {
    out_ += '[';
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) out_ += ',';
      string(values[i]);
    }
    out_ += ']';
  }
  void string_map(const std::map<std::string, std::string>& values) {
    out_ += '{';
    bool first = true;
    for (const auto& [key, value] : values) {
      if (!first) out_ += ',';
      first = false;
      string(key);
      out_ += ':';
      string(value);
    }
    out_ += '}';
  }
  void mounts(const std::vector<VolumeMount>& values) {
    objects(values, [this](const VolumeMount& mount) {
      field("mount_path", mount.mount_path);
      field("volume_id", mount.volume_id);
    });
  }
  // An array of objects: each item written by write(item) between begin() and end().
  template <class T, class Write>
  void objects(const std::vector<T>& items, Write write) {
    out_ += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out_ += ',';
      begin();
      write(items[i]);
      end();
    }
    out_ += ']';
  }
  template <class T>
  void optional_number(const std::optional<T>& value) {
    value ? number(static_cast<int64_t>(*value)) : null();
  }
  // Opens an object or starts the next member of one.
  void begin() {
    out_ += '{';
    first_ = true;
  }
  void key(std::string_view name) {
    if (!first_) out_ += ',';
    first_ = false;
    out_ += '"';
    out_ += name;
    out_ += "\":";
  }
  void end() {
    out_ += '}';
    first_ = false;
  }
  // A member: its key, then its value.
  void field(std::string_view name, int64_t value) {
    key(name);
    number(value);
  }
  void field(std::string_view name, std::string_view value) {
    key(name);
    string(value);
  }

 private:
  std::string& out_;
  bool first_ = true;
};

void write_spec(Writer& w, const InstanceSpec& v) {
  w.begin();
  w.key("command");
  w.strings(v.command);
  w.key("cpu");
  w.number(v.cpu);
  w.key("disk_gb");
  w.number(v.disk_gb);
  w.key("env");
  w.string_map(v.env);
  w.key("gpu_count");
  w.number(v.gpu_count);
  w.key("gpu_memory_gb");
  w.number(v.gpu_memory_gb);
  w.key("gpu_milli");
  w.number(v.gpu_milli);
  w.key("gpu_types");
  w.strings(v.gpu_types);
  w.key("image");
  w.string(v.image);
  w.key("max_price");
  w.optional_number(v.max_price);
  w.key("max_runtime_s");
  w.optional_number(v.max_runtime_s);
  w.key("memory_gb");
  w.number(v.memory_gb);
  w.key("min_gpu_memory_gb");
  w.number(v.min_gpu_memory_gb);
  w.key("name");
  w.string(v.name);
  w.key("node_selector");
  w.string_map(v.node_selector);
  w.key("pricing");
  w.string(to_string(v.pricing));
  w.key("priority");
  w.number(v.priority);
  w.key("process_command");
  w.strings(v.process_command);
  w.key("queue");
  w.boolean(v.queue);
  w.key("reservation_id");
  w.string(v.reservation_id);
  w.key("restart_policy");
  w.string(to_string(v.restart_policy));
  w.key("services");
  w.strings(v.services);
  w.key("template");
  w.string(v.template_name);
  w.key("volumes");
  w.mounts(v.volumes);
  w.key("wait_for_capacity");
  w.boolean(v.wait_for_capacity);
  w.key("workdir");
  w.string(v.workdir);
  w.end();
}

template <class Enum>
Enum parse_enum(const Json& j, const char* key, bool (*parse)(std::string_view, Enum*)) {
  Enum value{};
  const auto text = j.at(key).get<std::string>();
  if (!parse(text, &value)) throw std::invalid_argument("unknown " + std::string(key) + " " + text);
  return value;
}

}  // namespace

void to_json(Json& j, const Gpu& v) {
  j = {{"uuid", v.uuid},
       {"index", v.index},
       {"type", v.type},
       {"name", v.name},
       {"memory_mb", v.memory_mb},
       {"nvlink_domain", v.nvlink_domain},
       {"pcie_switch", v.pcie_switch},
       {"numa_node", v.numa_node}};
}
void from_json(const Json& j, Gpu& v) {
  v.uuid = j.at("uuid").get<std::string>();
  v.index = j.at("index").get<int>();
  v.type = j.at("type").get<std::string>();
  v.name = j.at("name").get<std::string>();
  v.memory_mb = j.at("memory_mb").get<int64_t>();
  // Absent in records and registrations from before topology was reported.
  v.nvlink_domain = j.value("nvlink_domain", -1);
  v.pcie_switch = j.value("pcie_switch", -1);
  v.numa_node = j.value("numa_node", -1);
}

void to_json(Json& j, const Node& v) {
  j = {{"id", v.id},
       {"name", v.name},
       {"gpus", v.gpus},
       {"cpu_count", v.cpu_count},
       {"memory_mb", v.memory_mb},
       {"disk_gb", v.disk_gb},
       {"fabric_group", v.fabric_group},
       {"labels", v.labels},
       {"address", v.address},
       {"cordoned", v.cordoned},
       {"simulated", v.simulated},
       {"container_runtime", v.container_runtime},
       {"isolation", v.isolation},
       {"isolation_note", v.isolation_note},
       {"registered_from", v.registered_from},
       {"agent_version", v.agent_version},
       {"state", to_string(v.state)},
       {"registered_at", ms(v.registered_at)},
       {"last_heartbeat", ms(v.last_heartbeat)},
       {"generation", v.generation},
       {"credential_hash", v.credential_hash},
       {"ecc_dbe_seen", v.ecc_dbe_seen}};
}
void from_json(const Json& j, Node& v) {
  v.id = j.at("id").get<std::string>();
  v.name = j.at("name").get<std::string>();
  v.gpus = j.at("gpus").get<std::vector<Gpu>>();
  v.cpu_count = j.at("cpu_count").get<int>();
  v.memory_mb = j.at("memory_mb").get<int64_t>();
  v.disk_gb = j.value("disk_gb", int64_t{0});
  v.fabric_group = j.value("fabric_group", std::string());
  v.labels = j.value("labels", std::map<std::string, std::string>());
  v.cordoned = j.value("cordoned", false);
  v.address = j.value("address", std::string());
  v.simulated = j.at("simulated").get<bool>();
  v.container_runtime = j.value("container_runtime", false);
  v.isolation = j.value("isolation", std::string());
  v.isolation_note = j.value("isolation_note", std::string());
  v.registered_from = j.value("registered_from", std::string());
  v.agent_version = j.at("agent_version").get<std::string>();
  v.state = parse_enum(j, "state", &parse_node_state);
  v.registered_at = ts(j, "registered_at");
  v.last_heartbeat = ts(j, "last_heartbeat");
  v.generation = j.at("generation").get<int64_t>();
  v.credential_hash = j.at("credential_hash").get<std::string>();
  v.ecc_dbe_seen = j.value("ecc_dbe_seen", std::map<std::string, int64_t>());
}

void to_json(Json& j, const InstanceSpec& v) {
  j = {{"name", v.name},
       {"gpu_types", v.gpu_types},
       {"min_gpu_memory_gb", v.min_gpu_memory_gb},
       {"gpu_count", v.gpu_count},
       {"gpu_milli", v.gpu_milli},
       {"gpu_memory_gb", v.gpu_memory_gb},
       {"cpu", v.cpu},
       {"memory_gb", v.memory_gb},
       {"disk_gb", v.disk_gb},
       {"node_selector", v.node_selector},
       {"image", v.image},
       {"command", v.command},
       {"process_command", v.process_command},
       {"template", v.template_name},
       {"env", v.env},
       {"pricing", to_string(v.pricing)},
       {"priority", v.priority},
       {"queue", v.queue},
       {"max_price", v.max_price ? Json(*v.max_price) : Json(nullptr)},
       {"max_runtime_s", v.max_runtime_s ? Json(*v.max_runtime_s) : Json(nullptr)},
       {"reservation_id", v.reservation_id},
       {"restart_policy", to_string(v.restart_policy)},
       {"volumes", v.volumes},
       {"services", v.services},
       {"wait_for_capacity", v.wait_for_capacity},
       {"workdir", v.workdir}};
}
void from_json(const Json& j, InstanceSpec& v) {
  v.name = j.at("name").get<std::string>();
  // Records from before type lists named one exact type.
  if (j.contains("gpu_types")) {
    v.gpu_types = j.at("gpu_types").get<std::vector<std::string>>();
  } else {
    v.gpu_types = {j.at("gpu_type").get<std::string>()};
  }
  v.min_gpu_memory_gb = j.value("min_gpu_memory_gb", 0);
  v.gpu_count = j.at("gpu_count").get<int>();
  v.gpu_milli = j.value("gpu_milli", kMilliPerGpu);
  v.gpu_memory_gb = j.value("gpu_memory_gb", 0);
  v.cpu = j.at("cpu").get<int>();
  v.memory_gb = j.at("memory_gb").get<int>();
  v.disk_gb = j.value("disk_gb", 0);
  v.node_selector = j.value("node_selector", std::map<std::string, std::string>());
  v.image = j.value("image", std::string());
  v.command = j.at("command").get<std::vector<std::string>>();
  v.process_command = j.value("process_command", std::vector<std::string>());
  v.template_name = j.value("template", std::string());
  v.env = j.at("env").get<std::map<std::string, std::string>>();
  v.pricing = parse_enum(j, "pricing", &parse_pricing_model);
  v.priority = j.value("priority", 0);
  v.queue = j.value("queue", true);
  // Written before restart policies existed: the default for the pricing.
  v.restart_policy = j.contains("restart_policy")
                         ? parse_enum(j, "restart_policy", &parse_restart_policy)
                         : default_restart_policy(v.pricing);
  const auto runtime = j.find("max_runtime_s");
  v.max_runtime_s = runtime == j.end() || runtime->is_null()
                        ? std::nullopt
                        : std::optional<int64_t>(runtime->get<int64_t>());
  const auto max_price = j.find("max_price");
  v.max_price = max_price == j.end() || max_price->is_null()
                    ? std::nullopt
                    : std::optional<Micros>(max_price->get<Micros>());
  v.reservation_id = j.value("reservation_id", std::string());
  v.volumes = j.value("volumes", std::vector<VolumeMount>());
  v.services = j.value("services", std::vector<std::string>());
  v.workdir = j.value("workdir", std::string());
  v.wait_for_capacity = j.value("wait_for_capacity", false);
}

void to_json(Json& j, const Instance& v) {
  j = {{"id", v.id},
       {"tenant_id", v.tenant_id},
       {"spec", v.spec},
       {"state", to_string(v.state)},
       {"node_id", v.node_id},
       {"gpus", v.gpus},
       {"gpu_type", v.gpu_type},
       {"gpu_milli", v.gpu_milli},
       {"queued_at", ms(v.queued_at)},
       {"queue_sequence", v.queue_sequence},
       {"run", v.run},
       {"created_at", ms(v.created_at)},
       {"started_at", optional_ms(v.started_at)},
       {"ended_at", optional_ms(v.ended_at)},
       {"exit_code", v.exit_code ? Json(*v.exit_code) : Json(nullptr)},
       {"reason", v.reason},
       {"terminate_requested", v.terminate_requested},
       {"preempt_requested", v.preempt_requested},
       {"requeue_requested", v.requeue_requested},
       {"start_requested", v.start_requested},
       {"placed_generation", v.placed_generation},
       {"job_id", v.job_id},
       {"job_task", v.job_task},
       {"job_rank", v.job_rank},
       {"master_addr", v.master_address},
       {"master_port", v.master_port},
       {"revision", v.revision}};
}
namespace {

// instance_json, or (as_row) instance_row_json: a job member's row leaves out its spec, which its
// job determines (job_member_spec).
std::string write_instance(const Instance& v, bool as_row) {
  const bool member_row = as_row && !v.job_id.empty() && v.job_task >= 0;
  std::string out;
  out.reserve(member_row ? 512 : 1024);
  Writer w(out);
  w.begin();
  w.key("created_at");
  w.number(ms(v.created_at));
  w.key("ended_at");
  w.optional_number(v.ended_at ? std::optional(ms(*v.ended_at)) : std::nullopt);
  w.key("exit_code");
  w.optional_number(v.exit_code);
  w.key("gpu_milli");
  w.number(v.gpu_milli);
  w.key("gpu_type");
  w.string(v.gpu_type);
  w.key("gpus");
  w.strings(v.gpus);
  w.key("id");
  w.string(v.id);
  w.key("job_id");
  w.string(v.job_id);
  w.key("job_rank");
  w.number(v.job_rank);
  w.key("job_task");
  w.number(v.job_task);
  w.field("master_addr", v.master_address);
  w.field("master_port", v.master_port);
  w.key("node_id");
  w.string(v.node_id);
  w.key("placed_generation");
  w.number(v.placed_generation);
  w.key("preempt_requested");
  w.boolean(v.preempt_requested);
  w.key("queue_sequence");
  w.number(v.queue_sequence);
  w.key("queued_at");
  w.number(ms(v.queued_at));
  w.key("reason");
  w.string(v.reason);
  w.key("requeue_requested");
  w.boolean(v.requeue_requested);
  w.key("revision");
  w.number(v.revision);
  w.key("run");
  w.number(v.run);
  if (!member_row) {
    w.key("spec");
    write_spec(w, v.spec);
  }
  w.key("start_requested");
  w.boolean(v.start_requested);
  w.key("started_at");
  w.optional_number(v.started_at ? std::optional(ms(*v.started_at)) : std::nullopt);
  w.key("state");
  w.string(to_string(v.state));
  w.key("tenant_id");
  w.string(v.tenant_id);
  w.key("terminate_requested");
  w.boolean(v.terminate_requested);
  w.end();
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
  return row.get<Instance>();
}

std::string desired_state_json(const DesiredState& v) {
  std::string out;
  out.reserve(256 + 1024 * v.workloads.size());
  Writer w(out);
  w.begin();
  w.key("generation");
  w.number(v.generation);
  w.key("node_id");
  w.string(v.node_id);
  w.key("volumes");
  w.strings(v.volumes);
  w.key("workloads");
  w.objects(v.workloads, [&](const WorkloadSpec& workload) {
    w.key("command");
    w.strings(workload.command);
    w.key("cpu");
    w.number(workload.cpu);
    w.key("env");
    w.string_map(workload.env);
    w.key("gpus");
    w.strings(workload.gpus);
    w.key("image");
    w.string(workload.image);
    w.key("instance_id");
    w.string(workload.instance_id);
    if (const auto& job = workload.job) {
      w.key("job");
      w.begin();
      w.field("array_size", job->array_size);
      w.field("gpus_per_node", job->gpus_per_node);
      w.field("id", job->job_id);
      w.field("index", job->index);
      w.field("master_addr", job->master_address);
      w.field("master_port", job->master_port);
      w.field("nodes", job->nodes);
      w.field("rank", job->rank);
      w.end();
    }
    w.key("memory_gb");
    w.number(workload.memory_gb);
    w.key("run");
    w.number(workload.run);
    w.key("services");
    w.strings(workload.services);
    w.key("should_run");
    w.boolean(workload.should_run);
    w.key("tenant_id");
    w.string(workload.tenant_id);
    w.key("volumes");
    w.mounts(workload.volumes);
    w.key("workdir");
    w.string(workload.workdir);
  });
  w.end();
  return out;
}

std::string node_report_json(const NodeReport& v, std::optional<int64_t> sent_at_ms) {
  const std::string telemetry =
      v.telemetry.empty() && v.telemetry.dropped == 0 ? "" : telemetry_text(v.telemetry);
  std::string out;
  out.reserve(256 + 128 * v.workloads.size() + telemetry.size());
  Writer w(out);
  w.begin();
  w.field("applied_generation", v.applied_generation);
  if (v.container_runtime) {
    w.key("container_runtime");
    w.boolean(*v.container_runtime);
  }
  w.key("node_api_address");
  w.text(v.node_api_address);
  w.key("node_api_secret");
  w.text(v.node_api_secret);
  if (!sent_at_ms) sent_at_ms = v.sent_at_ms;
  if (sent_at_ms) w.field("sent_at_ms", *sent_at_ms);
  if (!telemetry.empty()) w.field("telemetry", std::string_view(telemetry));
  w.key("workloads");
  w.objects(v.workloads, [&](const WorkloadStatus& workload) {
    w.key("exit_code");
    w.optional_number(workload.exit_code);
    w.key("instance_id");
    w.text(workload.instance_id);
    w.key("message");
    w.text(workload.message);
    if (workload.never_started) {
      w.key("never_started");
      w.boolean(true);
    }
    w.field("phase", to_string(workload.phase));
    w.field("run", workload.run);
  });
  w.end();
  return out;
}

void from_json(const Json& j, Instance& v) {
  v.id = j.at("id").get<std::string>();
  v.tenant_id = j.at("tenant_id").get<std::string>();
  v.spec = j.at("spec").get<InstanceSpec>();
  v.state = parse_enum(j, "state", &parse_instance_state);
  v.node_id = j.at("node_id").get<std::string>();
  v.gpus = j.at("gpus").get<std::vector<std::string>>();
  v.gpu_milli = j.value("gpu_milli", kMilliPerGpu);
  v.run = j.at("run").get<int64_t>();
  v.created_at = ts(j, "created_at");
  v.queued_at = j.contains("queued_at") ? ts(j, "queued_at") : v.created_at;
  v.queue_sequence = j.value("queue_sequence", int64_t{0});
  v.gpu_type = j.value("gpu_type", v.spec.gpu_types.empty() ? "" : v.spec.gpu_types.front());
  v.started_at = optional_ts(j, "started_at");
  v.ended_at = optional_ts(j, "ended_at");
  const auto& exit = j.at("exit_code");
  v.exit_code = exit.is_null() ? std::nullopt : std::optional<int>(exit.get<int>());
  v.reason = j.at("reason").get<std::string>();
  v.terminate_requested = j.at("terminate_requested").get<bool>();
  v.preempt_requested = j.value("preempt_requested", false);
  v.requeue_requested = j.value("requeue_requested", false);
  v.start_requested = j.value("start_requested", false);
  v.placed_generation = j.at("placed_generation").get<int64_t>();
  v.job_id = j.value("job_id", std::string());
  v.job_task = j.value("job_task", -1);
  v.job_rank = j.value("job_rank", 0);
  v.master_address = j.value("master_addr", std::string());
  // A number; rows written before it was one hold a string, and leave it out when not placed.
  if (const auto port = j.find("master_port"); port != j.end()) {
    v.master_port = port->is_string() ? std::stoi(port->get<std::string>()) : port->get<int>();
  }
  v.revision = j.value("revision", int64_t{0});
}

void to_json(Json& j, const JobTask& v) {
  j = {{"index", v.index},
       {"state", to_string(v.state)},
       {"attempts", v.attempts},
       {"exit_code", v.exit_code ? Json(*v.exit_code) : Json(nullptr)},
       {"members", v.members}};
}
void from_json(const Json& j, JobTask& v) {
  v.index = j.at("index").get<int>();
  v.state = parse_enum(j, "state", &parse_job_state);
  v.attempts = j.at("attempts").get<int>();
  const auto& exit = j.at("exit_code");
  v.exit_code = exit.is_null() ? std::nullopt : std::optional<int>(exit.get<int>());
  v.members = j.at("members").get<std::vector<std::string>>();
}

void to_json(Json& j, const Job& v) {
  j = {{"id", v.id},
       {"tenant_id", v.tenant_id},
       {"task", v.spec.task},
       {"nodes", v.spec.nodes},
       {"array", v.spec.array},
       {"retries", v.spec.retries},
       {"state", to_string(v.state)},
       {"created_at", ms(v.created_at)},
       {"started_at", optional_ms(v.started_at)},
       {"ended_at", optional_ms(v.ended_at)},
       {"reason", v.reason},
       {"tasks", v.tasks},
       {"revision", v.revision}};
}
void from_json(const Json& j, Job& v) {
  v.id = j.at("id").get<std::string>();
  v.tenant_id = j.at("tenant_id").get<std::string>();
  v.spec.task = j.at("task").get<InstanceSpec>();
  v.spec.nodes = j.at("nodes").get<int>();
  v.spec.array = j.at("array").get<int>();
  v.spec.retries = j.at("retries").get<int>();
  v.state = parse_enum(j, "state", &parse_job_state);
  v.created_at = ts(j, "created_at");
  v.started_at = optional_ts(j, "started_at");
  v.ended_at = optional_ts(j, "ended_at");
  v.reason = j.at("reason").get<std::string>();
  v.tasks = j.at("tasks").get<std::vector<JobTask>>();
  v.revision = j.at("revision").get<int64_t>();
}

void to_json(Json& j, const Reservation& v) {
  j = {{"id", v.id},
       {"tenant_id", v.tenant_id},
       {"gpu_type", v.gpu_type},
       {"gpu_count", v.gpu_count},
       {"start", ms(v.start)},
       {"end", ms(v.end)},
       {"state", to_string(v.state)},
       {"created_at", ms(v.created_at)},
       {"payment", to_string(v.payment)},
       {"price_per_gpu_hour", v.price_per_gpu_hour},
       {"discount_permille", v.discount_permille},
       {"total", v.total},
       {"paid", v.paid},
       {"recognised", v.recognised},
       {"periods_paid", v.periods_paid},
       {"refunded", v.refunded}};
}
void from_json(const Json& j, Reservation& v) {
  v.id = j.at("id").get<std::string>();
  v.tenant_id = j.at("tenant_id").get<std::string>();
  v.gpu_type = j.at("gpu_type").get<std::string>();
  v.gpu_count = j.at("gpu_count").get<int>();
  v.start = ts(j, "start");
  v.end = ts(j, "end");
  v.state = parse_enum(j, "state", &parse_reservation_state);
  v.created_at = ts(j, "created_at");
  // Reservations booked before reserved terms were priced carry none: free, nothing owed.
  if (j.contains("payment")) v.payment = parse_enum(j, "payment", &parse_reservation_payment);
  v.price_per_gpu_hour = j.value("price_per_gpu_hour", Micros{0});
  v.discount_permille = j.value("discount_permille", 0);
  v.total = j.value("total", Micros{0});
  v.paid = j.value("paid", Micros{0});
  v.recognised = j.value("recognised", Micros{0});
  v.periods_paid = j.value("periods_paid", 0);
  v.refunded = j.value("refunded", false);
}

void to_json(Json& j, const Template& v) {
  j = {{"name", v.name},
       {"description", v.description},
       {"image", v.image},
       {"command", v.command},
       {"process_command", v.process_command},
       {"env", v.env},
       {"services", v.services},
       {"recommended_gpu_memory_gb", v.recommended_gpu_memory_gb},
       {"builtin", v.builtin}};
}
void from_json(const Json& j, Template& v) {
  v.name = j.at("name").get<std::string>();
  v.description = j.at("description").get<std::string>();
  v.image = j.at("image").get<std::string>();
  v.command = j.at("command").get<std::vector<std::string>>();
  v.process_command = j.at("process_command").get<std::vector<std::string>>();
  v.env = j.at("env").get<std::map<std::string, std::string>>();
  v.services = j.at("services").get<std::vector<std::string>>();
  v.recommended_gpu_memory_gb = j.at("recommended_gpu_memory_gb").get<int>();
  v.builtin = j.at("builtin").get<bool>();
}

void to_json(Json& j, const Quota& v) {
  j = {{"tenant_id", v.tenant_id},
       {"max_gpus_per_type", v.max_gpus_per_type},
       {"max_instances", v.max_instances ? Json(*v.max_instances) : Json(nullptr)},
       {"weight", v.weight}};
}
void from_json(const Json& j, Quota& v) {
  v.tenant_id = j.at("tenant_id").get<std::string>();
  v.max_gpus_per_type = j.at("max_gpus_per_type").get<std::map<std::string, int>>();
  const auto& max = j.at("max_instances");
  v.max_instances = max.is_null() ? std::nullopt : std::optional<int>(max.get<int>());
  v.weight = j.at("weight").get<int>();
}

void to_json(Json& j, const Tenant& v) {
  j = {{"id", v.id}, {"name", v.name}, {"created_at", ms(v.created_at)}};
}
void from_json(const Json& j, Tenant& v) {
  v.id = j.at("id").get<std::string>();
  v.name = j.at("name").get<std::string>();
  v.created_at = ts(j, "created_at");
}

void to_json(Json& j, const ApiKey& v) {
  j = {{"id", v.id},
       {"tenant_id", v.tenant_id},
       {"role", to_string(v.role)},
       {"name", v.name},
       {"secret_hash", v.secret_hash},
       {"prefix", v.prefix},
       {"created_at", ms(v.created_at)}};
}
void from_json(const Json& j, ApiKey& v) {
  v.id = j.at("id").get<std::string>();
  v.tenant_id = j.at("tenant_id").get<std::string>();
  v.role = parse_enum(j, "role", &parse_role);
  v.name = j.at("name").get<std::string>();
  v.secret_hash = j.at("secret_hash").get<std::string>();
  v.prefix = j.at("prefix").get<std::string>();
  v.created_at = ts(j, "created_at");
}

void to_json(Json& j, const JoinToken& v) {
  j = {{"id", v.id},
       {"secret_hash", v.secret_hash},
       {"description", v.description},
       {"created_at", ms(v.created_at)},
       {"expires_at", ms(v.expires_at)}};
}
void from_json(const Json& j, JoinToken& v) {
  v.id = j.at("id").get<std::string>();
  v.secret_hash = j.at("secret_hash").get<std::string>();
  v.description = j.at("description").get<std::string>();
  v.created_at = ts(j, "created_at");
  v.expires_at = ts(j, "expires_at");
}

void to_json(Json& j, const IdempotencyRecord& v) {
  j = {{"tenant_id", v.tenant_id},
       {"key", v.key},
       {"fingerprint", v.fingerprint},
       {"object_id", v.object_id},
       {"created_at", ms(v.created_at)}};
}
void from_json(const Json& j, IdempotencyRecord& v) {
  v.tenant_id = j.at("tenant_id").get<std::string>();
  v.key = j.at("key").get<std::string>();
  v.fingerprint = j.at("fingerprint").get<std::string>();
  v.object_id = j.at("object_id").get<std::string>();
  v.created_at = ts(j, "created_at");
}

void to_json(Json& j, const UsageRecord& v) {
  j = {{"id", v.id},
       {"tenant_id", v.tenant_id},
       {"instance_id", v.instance_id},
       {"run", v.run},
       {"kind", to_string(v.kind)},
       {"pricing", to_string(v.pricing)},
       {"gpu_type", v.gpu_type},
       {"gpu_count", v.gpu_count},
       {"gpu_milli", v.gpu_milli},
       {"cpu", v.cpu},
       {"memory_gb", v.memory_gb},
       {"disk_gb", v.disk_gb},
       {"price_per_gpu_hour", v.price_per_gpu_hour},
       {"started_at", ms(v.started_at)},
       {"ended_at", optional_ms(v.ended_at)},
       {"metered_until", ms(v.metered_until)},
       {"billed_seconds", v.billed_seconds},
       {"charged", v.charged},
       {"segment_rate", v.segment_rate},
       {"segment_seconds", v.segment_seconds},
       {"segment_charged", v.segment_charged},
       {"package_seconds", v.package_seconds}};
}
void from_json(const Json& j, UsageRecord& v) {
  v.id = j.at("id").get<std::string>();
  v.tenant_id = j.at("tenant_id").get<std::string>();
  v.instance_id = j.at("instance_id").get<std::string>();
  v.run = j.at("run").get<int64_t>();
  // Records written before these fields were runs, priced on demand (their price was locked).
  v.kind = j.contains("kind") ? parse_enum(j, "kind", &parse_usage_kind) : UsageKind::kRun;
  v.pricing = j.contains("pricing") ? parse_enum(j, "pricing", &parse_pricing_model)
                                    : PricingModel::kOnDemand;
  v.gpu_type = j.at("gpu_type").get<std::string>();
  v.gpu_count = j.at("gpu_count").get<int>();
  v.gpu_milli = j.value("gpu_milli", 1000);
  v.cpu = j.value("cpu", 0);
  v.memory_gb = j.value("memory_gb", 0);
  v.disk_gb = j.value("disk_gb", 0);
  v.price_per_gpu_hour = j.at("price_per_gpu_hour").get<Micros>();
  v.started_at = ts(j, "started_at");
  v.ended_at = optional_ts(j, "ended_at");
  v.metered_until = ts(j, "metered_until");
  v.billed_seconds = j.at("billed_seconds").get<int64_t>();
  v.charged = j.at("charged").get<Micros>();
  v.segment_rate = j.value("segment_rate", v.price_per_gpu_hour * v.gpu_count * v.gpu_milli);
  v.segment_seconds = j.value("segment_seconds", v.billed_seconds);
  v.segment_charged = j.value("segment_charged", v.charged);
  v.package_seconds = j.value("package_seconds", int64_t{0});
}

std::string strings_json(const std::vector<std::string>& values) {
  std::string out;
  Writer(out).strings(values);
  return out;
}

std::string usage_record_json(const UsageRecord& v) {
  std::string out;
  out.reserve(512);
  Writer w(out);
  w.begin();
  w.field("billed_seconds", v.billed_seconds);
  w.field("charged", v.charged);
  w.field("cpu", v.cpu);
  w.field("disk_gb", v.disk_gb);
  w.key("ended_at");
  w.optional_number(v.ended_at ? std::optional(ms(*v.ended_at)) : std::nullopt);
  w.field("gpu_count", v.gpu_count);
  w.field("gpu_milli", v.gpu_milli);
  w.field("gpu_type", v.gpu_type);
  w.field("id", v.id);
  w.field("instance_id", v.instance_id);
  w.field("kind", to_string(v.kind));
  w.field("memory_gb", v.memory_gb);
  w.field("metered_until", ms(v.metered_until));
  w.field("package_seconds", v.package_seconds);
  w.field("price_per_gpu_hour", v.price_per_gpu_hour);
  w.field("pricing", to_string(v.pricing));
  w.field("run", v.run);
  w.field("segment_charged", v.segment_charged);
  w.field("segment_rate", v.segment_rate);
  w.field("segment_seconds", v.segment_seconds);
  w.field("started_at", ms(v.started_at));
  w.field("tenant_id", v.tenant_id);
  w.end();
  return out;
}

void to_json(Json& j, const Volume& v) {
  j = {{"id", v.id},
       {"tenant_id", v.tenant_id},
       {"name", v.name},
       {"size_gb", v.size_gb},
       {"node_id", v.node_id},
       {"state", to_string(v.state)},
       {"created_at", ms(v.created_at)},
       {"deleted_at", optional_ms(v.deleted_at)},
       {"price_per_gb_month", v.price_per_gb_month},
       {"metered_until", ms(v.metered_until)},
       {"billed_seconds", v.billed_seconds},
       {"charged", v.charged}};
}
void from_json(const Json& j, Volume& v) {
  v.id = j.at("id").get<std::string>();
  v.tenant_id = j.at("tenant_id").get<std::string>();
  v.name = j.at("name").get<std::string>();
  v.size_gb = j.at("size_gb").get<int>();
  v.node_id = j.at("node_id").get<std::string>();
  v.state = parse_enum(j, "state", &parse_volume_state);
  v.created_at = ts(j, "created_at");
  v.deleted_at = optional_ts(j, "deleted_at");
  v.price_per_gb_month = j.at("price_per_gb_month").get<Micros>();
  v.metered_until = ts(j, "metered_until");
  v.billed_seconds = j.at("billed_seconds").get<int64_t>();
  v.charged = j.at("charged").get<Micros>();
}

void to_json(Json& j, const Event& v) {
  j = {{"seq", v.seq},
       {"at", ms(v.at)},
       {"tenant_id", v.tenant_id},
       {"object_id", v.object_id},
       {"kind", v.kind},
       {"message", v.message}};
}
void from_json(const Json& j, Event& v) {
  v.seq = j.at("seq").get<int64_t>();
  v.at = ts(j, "at");
  v.tenant_id = j.at("tenant_id").get<std::string>();
  v.object_id = j.at("object_id").get<std::string>();
  v.kind = j.at("kind").get<std::string>();
  v.message = j.at("message").get<std::string>();
}

}  // namespace gpurent::model
