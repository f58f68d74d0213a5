#include "server/request_bodies.h"

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

#include "common/json.h"
#include "controller/controller.h"
#include "model/gpu_catalog.h"
#include "model/template.h"
#include "model/workload_fields.h"

namespace gpurent::server {

using model::kMaxImageLength;
using model::set_by_platform;
using model::valid_env_name;
using model::valid_image;

// Refuses a field that is in neither list (a misspelt field must not be silently ignored).
Status reject_unknown_fields(const Json& body, std::span<const std::string_view> known,
                             std::span<const std::string_view> also_known) {
  const auto listed = [](std::span<const std::string_view> names, std::string_view key) {
    return std::find(names.begin(), names.end(), key) != names.end();
  };
  for (const auto& [key, value] : body.items()) {
    if (!listed(known, key) && !listed(also_known, key)) {
      return fail(Error::invalid("unknown_field", fmt::format("unknown field '{}'", key)));
    }
  }
  return {};
}

Status reject_unknown_fields(const Json& body, std::initializer_list<std::string_view> known) {
  return reject_unknown_fields(body, std::span(known.begin(), known.size()));
}

bool valid_name(std::string_view name) {
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

namespace {

// The fields that say what a workload runs and needs: an instance's, and each job member's.
constexpr std::array<std::string_view, 27> kWorkloadFields = {"workdir",
                                                              "queue",
                                                              "wait_for_capacity",
                                                              "name",
                                                              "gpu_type",
                                                              "gpu_types",
                                                              "min_gpu_memory_gb",
                                                              "gpu_count",
                                                              "gpu_milli",
                                                              "gpu_memory_gb",
                                                              "cpu",
                                                              "memory_gb",
                                                              "disk_gb",
                                                              "node_selector",
                                                              "image",
                                                              "command",
                                                              "env",
                                                              "pricing",
                                                              "reservation_id",
                                                              "priority",
                                                              "max_runtime_s",
                                                              "template",
                                                              "runtime",
                                                              "volumes",
                                                              "services",
                                                              "restart_policy",
                                                              "max_price_micros"};

// What every job member gets from the platform besides GPURENT_*: torchrun's rendezvous
// variables (a single-node job gets them too, as a gang of one), which would override the
// request's.
bool set_for_job_members(std::string_view variable) {
  constexpr std::array<std::string_view, 7> kJobVariables = {
      "MASTER_ADDR", "MASTER_PORT",      "RANK",  "NODE_RANK",
      "WORLD_SIZE",  "LOCAL_WORLD_SIZE", "NNODES"};
  // torchrun's own PET_* configuration is set too, so a bare `torchrun train.py` works.
  return variable.starts_with("PET_") ||
         std::find(kJobVariables.begin(), kJobVariables.end(), variable) != kJobVariables.end();
}

// Reserved pricing draws on a reservation's held capacity, so it needs one and nothing else does.
Status parse_pricing(const Json& body, model::InstanceSpec& spec) {
  GPURENT_TRY(pricing, optional_string(body, "pricing", 32));
  if (pricing && !model::parse_pricing_model(*pricing, &spec.pricing)) {
    return fail(Error::unprocessable(
        "unsupported_pricing",
        fmt::format("pricing '{}' is not offered; use on_demand, spot or reserved", *pricing)));
  }
  GPURENT_TRY(reservation, optional_string(body, "reservation_id", kMaxNameLength));
  spec.reservation_id = reservation.value_or("");
  const bool reserved = spec.pricing == model::PricingModel::kReserved;
  if (reserved && spec.reservation_id.empty()) {
    return fail(Error::unprocessable(
        "reservation_required",
        "pricing 'reserved' runs on a reservation: give its id in reservation_id "
        "(book one with POST /v1/reservations)"));
  }
  if (!reserved && !spec.reservation_id.empty()) {
    return fail(invalid_field("reservation_id", "applies only to pricing 'reserved'"));
  }
  GPURENT_TRY(max_price, optional_int(body, "max_price_micros", 1, billing::kMaxPrice));
  if (max_price && spec.pricing != model::PricingModel::kSpot) {
    return fail(invalid_field("max_price_micros", "applies only to pricing 'spot'"));
  }
  spec.max_price = max_price;
  return {};
}

}  // namespace
bool has_value(const Json& body, std::string_view key) {
  const auto it = body.find(key);
  return it != body.end() && !it->is_null();
}

namespace {

// A command as argv (an array), or as a shell line (a string, run through /bin/sh -c); nullopt
// when absent.
Result<std::optional<std::vector<std::string>>> optional_command(const Json& body,
                                                                 std::string_view key) {
  if (!has_value(body, key)) return std::nullopt;
  const Json& command = body.at(key);
  if (command.is_string()) {
    const auto& text = command.get_ref<const std::string&>();
    if (text.empty() || text.size() > 16384) {
      return fail(invalid_field(key, "must be 1..16384 characters"));
    }
    return std::vector<std::string>{"/bin/sh", "-c", text};
  }
  GPURENT_TRY(argv, optional_string_list(body, key, 256, 4096));
  if (argv.empty() || argv[0].empty()) {
    return fail(invalid_field(key, "must be a non-empty array of strings or a string"));
  }
  return argv;
}

// `volumes`: [{"volume_id": "v-...", "mount_path": "/data"}, ...]. Shapes here; the paths' rules
// are model::validate_volume_mounts (applied by the controller), ownership the controller's.
Result<std::vector<model::VolumeMount>> parse_volume_mounts(const Json& body) {
  std::vector<model::VolumeMount> mounts;
  const auto it = body.find("volumes");
  if (it == body.end() || it->is_null()) return mounts;
  if (!it->is_array() || it->size() > model::kMaxVolumeMounts) {
    return fail(invalid_field(
        "volumes", fmt::format("must be an array of at most {} {{\"volume_id\", \"mount_path\"}}",
                               model::kMaxVolumeMounts)));
  }
  for (const Json& item : *it) {
    if (!item.is_object()) {
      return fail(invalid_field("volumes", "each item must be {\"volume_id\", \"mount_path\"}"));
    }
    GPURENT_CHECK(reject_unknown_fields(item, {"volume_id", "mount_path"}));
    GPURENT_TRY(volume_id, required_string(item, "volume_id", kMaxNameLength));
    GPURENT_TRY(mount_path, required_string(item, "mount_path", model::kMaxMountPathLength));
    mounts.push_back({std::move(volume_id), std::move(mount_path)});
  }
  return mounts;
}

}  // namespace
Result<controller::NewVolume> parse_volume(const Json& body) {
  GPURENT_CHECK(reject_unknown_fields(body, {"name", "size_gb", "node_id"}));
  controller::NewVolume volume;
  GPURENT_TRY(name, required_string(body, "name", model::kMaxVolumeNameLength));
  if (!model::valid_volume_name(name)) {
    return fail(invalid_field("name", "may hold only letters, digits, '-', '_' and '.'"));
  }
  volume.name = std::move(name);
  GPURENT_TRY(size_gb, required_int(body, "size_gb", 1, model::kMaxVolumeSizeGb));
  volume.size_gb = static_cast<int>(size_gb);
  GPURENT_TRY(node_id, optional_string(body, "node_id", kMaxNameLength));
  volume.node_id = node_id.value_or("");
  return volume;
}

namespace {

// Reads kWorkloadFields; the caller has refused the fields it does not know.
Result<model::InstanceSpec> parse_workload_spec(const Json& body) {
  model::InstanceSpec spec;
  GPURENT_TRY(name, optional_string(body, "name", kMaxNameLength));
  if (name && !valid_name(*name)) {
    return fail(invalid_field("name", "may hold only letters, digits, '-', '_' and '.'"));
  }
  spec.name = name.value_or("");
  // One exact type ("any": every type), or a list of acceptable types.
  GPURENT_TRY(gpu_type, optional_string(body, "gpu_type", kMaxNameLength));
  GPURENT_TRY(gpu_types, optional_string_list(body, "gpu_types", 32, kMaxNameLength));
  if (gpu_type.has_value() == body.contains("gpu_types")) {
    return fail(invalid_field("gpu_type", "give either gpu_type or gpu_types"));
  }
  if (gpu_type && *gpu_type != "any") gpu_types = {*gpu_type};
  if (body.contains("gpu_types") && gpu_types.empty()) {
    return fail(invalid_field("gpu_types", "must name at least one type"));
  }
  spec.gpu_types = std::move(gpu_types);
  GPURENT_TRY(min_memory, optional_int(body, "min_gpu_memory_gb", 0, 4096));
  spec.min_gpu_memory_gb = static_cast<int>(min_memory.value_or(0));
  GPURENT_TRY(gpu_count, optional_int(body, "gpu_count", 1, controller::kMaxGpusPerInstance));
  spec.gpu_count = static_cast<int>(gpu_count.value_or(1));
  GPURENT_TRY(gpu_milli, optional_int(body, "gpu_milli", 1, model::kMilliPerGpu));
  spec.gpu_milli = static_cast<int>(gpu_milli.value_or(model::kMilliPerGpu));
  if (spec.gpu_milli < model::kMilliPerGpu && spec.gpu_count != 1) {
    return fail(invalid_field("gpu_milli", "a share of a GPU (below 1000) needs gpu_count 1"));
  }
  GPURENT_TRY(gpu_memory, optional_int(body, "gpu_memory_gb", 0, 4096));
  spec.gpu_memory_gb = static_cast<int>(gpu_memory.value_or(0));
  if (spec.gpu_memory_gb > 0 && spec.gpu_milli == model::kMilliPerGpu) {
    return fail(invalid_field("gpu_memory_gb", "applies only to a share of a GPU (gpu_milli)"));
  }
  GPURENT_TRY(cpu, optional_int(body, "cpu", 0, 1024));
  spec.cpu = static_cast<int>(cpu.value_or(0));
  GPURENT_TRY(memory, optional_int(body, "memory_gb", 0, 65536));
  spec.memory_gb = static_cast<int>(memory.value_or(0));
  GPURENT_TRY(disk, optional_int(body, "disk_gb", 0, 1'000'000));
  spec.disk_gb = static_cast<int>(disk.value_or(0));
  GPURENT_TRY(selector, optional_string_map(body, "node_selector", 16, 253));
  spec.node_selector = std::move(selector);
  GPURENT_TRY(priority, optional_int(body, "priority", -100, 100));
  spec.priority = static_cast<int>(priority.value_or(0));
  GPURENT_TRY(max_runtime, optional_int(body, "max_runtime_s", 1, 366LL * 24 * 3600));
  spec.max_runtime_s = max_runtime;

  GPURENT_TRY(image, optional_string(body, "image", kMaxImageLength));
  if (image && !valid_image(*image)) {
    return fail(invalid_field("image", "must be an image reference such as pytorch/pytorch:2.5.1"));
  }
  spec.image = image.value_or("");
  GPURENT_TRY(command, optional_command(body, "command"));
  if (command) {
    spec.command = std::move(*command);
  } else if (spec.image.empty() && !has_value(body, "template")) {
    spec.command = {"sleep", "infinity"};  // keep the machine until the tenant stops it
  }  // else the image's own command (as `docker run IMAGE`), or the template's
  GPURENT_TRY(env, optional_string_map(body, "env", 128, 4096));
  for (const auto& [key, value] : env) {
    if (!valid_env_name(key))
      return fail(invalid_field("env", fmt::format("'{}' is not a variable name", key)));
    if (set_by_platform(key)) {
      return fail(invalid_field("env", fmt::format("'{}' is set by the platform", key)));
    }
  }
  spec.env = std::move(env);
  GPURENT_TRY(volumes, parse_volume_mounts(body));
  spec.volumes = std::move(volumes);
  GPURENT_TRY(services, optional_string_list(body, "services", model::kMaxServices,
                                             model::kMaxServiceNameLength));
  for (size_t i = 0; i < services.size(); ++i) {
    if (!model::valid_service_name(services[i])) {
      return fail(invalid_field(
          "services",
          fmt::format("'{}' is not a service name ([a-z][a-z0-9-]{{0,30}})", services[i])));
    }
    if (std::find(services.begin(), services.begin() + static_cast<std::ptrdiff_t>(i),
                  services[i]) != services.begin() + static_cast<std::ptrdiff_t>(i)) {
      return fail(invalid_field("services", fmt::format("'{}' is named twice", services[i])));
    }
  }
  spec.services = std::move(services);
  GPURENT_TRY(workdir, optional_string(body, "workdir", 64));
  spec.workdir = workdir.value_or("");
  GPURENT_TRY(wait_for_capacity, optional_bool(body, "wait_for_capacity"));
  spec.wait_for_capacity = wait_for_capacity.value_or(false);
  GPURENT_TRY(queue, optional_bool(body, "queue"));
  spec.queue = queue.value_or(true);
  if (!spec.queue && spec.wait_for_capacity) {
    return fail(invalid_field("wait_for_capacity", "waiting for capacity needs queue: true"));
  }
  GPURENT_CHECK(parse_pricing(body, spec));
  GPURENT_TRY(restart, optional_string(body, "restart_policy", 32));
  spec.restart_policy = model::default_restart_policy(spec.pricing);
  if (restart && !model::parse_restart_policy(*restart, &spec.restart_policy)) {
    return fail(invalid_field("restart_policy", "must be on_node_failure or never"));
  }
  return spec;
}

}  // namespace
Result<model::InstanceSpec> parse_instance_spec(const Json& body) {
  GPURENT_CHECK(reject_unknown_fields(body, kWorkloadFields));
  return parse_workload_spec(body);
}

// A job takes what each member runs (an instance's fields; `queue: false` refuses the job unless
// its first task can start now) and its shape: tasks, members per task, retries.
Result<model::JobSpec> parse_job_spec(const Json& body) {
  constexpr std::array<std::string_view, 3> kJobFields = {"nodes", "array", "retries"};
  GPURENT_CHECK(reject_unknown_fields(body, kWorkloadFields, kJobFields));
  model::JobSpec spec;
  if (!has_value(body, "command")) {
    return fail(invalid_field("command", "a job runs a command to completion: give one"));
  }
  GPURENT_TRY(task, parse_workload_spec(body));
  spec.task = std::move(task);
  GPURENT_TRY(nodes, optional_int(body, "nodes", 1, model::kMaxJobNodes));
  spec.nodes = static_cast<int>(nodes.value_or(1));
  GPURENT_TRY(array, optional_int(body, "array", 1, model::kMaxJobArray));
  spec.array = static_cast<int>(array.value_or(1));
  GPURENT_TRY(retries, optional_int(body, "retries", 0, model::kMaxJobRetries));
  spec.retries = static_cast<int>(retries.value_or(0));
  for (const auto& [key, value] : spec.task.env) {
    if (set_for_job_members(key)) {
      return fail(invalid_field("env", fmt::format("'{}' is set by the platform for jobs", key)));
    }
  }
  return spec;
}

namespace {

Result<Timestamp> required_time(const Json& body, std::string_view key) {
  GPURENT_TRY(text, required_string(body, key, 64));
  const auto parsed = parse_rfc3339(text);
  if (!parsed) {
    return fail(invalid_field(key, "must be an RFC 3339 time, e.g. 2026-11-30T15:00:00Z"));
  }
  return *parsed;
}

// Accounts (server/account_views.h has their views).
constexpr int64_t kMaxAccountAmount = int64_t{1'000'000'000} * kMicrosPerUnit;

}  // namespace
// PUT /v1/packages/products: {name, gpu_type, gpu_hours, price_micros, validity_days}.
Result<model::PackageProduct> parse_package_product(const Json& body) {
  GPURENT_CHECK(reject_unknown_fields(
      body, {"name", "gpu_type", "gpu_hours", "price_micros", "validity_days"}));
  GPURENT_TRY(name, required_string(body, "name", 64));
  GPURENT_TRY(gpu_type, required_string(body, "gpu_type", 64));
  GPURENT_TRY(gpu_hours, required_int(body, "gpu_hours", 1, 10'000'000));
  GPURENT_TRY(price, required_int(body, "price_micros", 1, kMaxAccountAmount));
  GPURENT_TRY(validity, required_int(body, "validity_days", 1, 3660));
  return model::PackageProduct{.name = std::move(name),
                               .gpu_type = std::move(gpu_type),
                               .gpu_hours = gpu_hours,
                               .price = price,
                               .validity_days = static_cast<int>(validity)};
}

// POST /v1/packages: {product}.
Result<std::string> parse_package_purchase(const Json& body) {
  GPURENT_CHECK(reject_unknown_fields(body, {"product"}));
  return required_string(body, "product", 64);
}

// PUT /v1/billing/settings: {tenant_id, warning_threshold_micros, credit_limit_micros}.
Result<model::BalanceSettings> parse_balance_settings(const Json& body) {
  GPURENT_CHECK(reject_unknown_fields(
      body, {"tenant_id", "warning_threshold_micros", "credit_limit_micros"}));
  GPURENT_TRY(tenant, required_string(body, "tenant_id", 128));
  GPURENT_TRY(warning, optional_int(body, "warning_threshold_micros", 0, kMaxAccountAmount));
  GPURENT_TRY(limit, optional_int(body, "credit_limit_micros", 0, kMaxAccountAmount));
  return model::BalanceSettings{
      .tenant_id = std::move(tenant),
      .warning_threshold = warning.value_or(model::kDefaultWarningThreshold),
      .credit_limit = limit.value_or(model::kDefaultCreditLimit)};
}

// POST /v1/reservations: {gpu_type, gpu_count, start, end} for a window, or {gpu_type, gpu_count,
// term_days[, start]} for a term from start (default: now); payment "upfront" (default) or
// "monthly".
Result<controller::NewReservation> parse_reservation(const Json& body) {
  GPURENT_CHECK(reject_unknown_fields(
      body, {"tenant_id", "gpu_type", "gpu_count", "start", "end", "term_days", "payment"}));
  controller::NewReservation reservation;
  GPURENT_TRY(tenant, optional_string(body, "tenant_id", kMaxNameLength));
  reservation.tenant_id = tenant.value_or("");
  GPURENT_TRY(gpu_type, required_string(body, "gpu_type", kMaxNameLength));
  reservation.gpu_type = std::move(gpu_type);
  GPURENT_TRY(gpu_count, required_int(body, "gpu_count", 1, kMaxCount));
  reservation.gpu_count = static_cast<int>(gpu_count);
  GPURENT_TRY(term_days, optional_int(body, "term_days", 1, billing::kMaxReservedTermDays));
  if (term_days.has_value() == body.contains("end")) {
    return fail(invalid_field("term_days", "give either end or term_days"));
  }
  if (term_days) {
    reservation.term_days = static_cast<int>(*term_days);
    if (body.contains("start")) {
      GPURENT_TRY(start, required_time(body, "start"));
      reservation.start = start;
    }
  } else {
    GPURENT_TRY(start, required_time(body, "start"));
    GPURENT_TRY(end, required_time(body, "end"));
    if (end <= start) return fail(invalid_field("end", "must be after start"));
    reservation.start = start;
    reservation.end = end;
  }
  GPURENT_TRY(payment, optional_string(body, "payment", 16));
  if (payment && !model::parse_reservation_payment(*payment, &reservation.payment)) {
    return fail(invalid_field("payment", "must be upfront or monthly"));
  }
  return reservation;
}

namespace {

// GPU type -> count, for a quota's per-type limits.
Result<std::map<std::string, int>> optional_count_map(const Json& body, std::string_view key) {
  std::map<std::string, int> out;
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return out;
  if (!it->is_object() || it->size() > 64) {
    return fail(invalid_field(key, "must be an object of at most 64 GPU types and counts"));
  }
  for (const auto& [type, count] : it->items()) {
    if (type.empty() || type.size() > kMaxNameLength || !count.is_number_integer() ||
        count.get<int64_t>() < 0 || count.get<int64_t>() > kMaxCount) {
      return fail(invalid_field(
          key, fmt::format("'{}' must map a GPU type to a count 0..{}", type, kMaxCount)));
    }
    if (model::find_gpu_type(type) == nullptr) {
      return fail(Error::unprocessable("unknown_gpu_type",
                                       fmt::format("GPU type '{}' does not exist", type)));
    }
    out.emplace(type, static_cast<int>(count.get<int64_t>()));
  }
  return out;
}

}  // namespace
// PUT replaces the whole quota: an absent field means no limit (weight: 1).
Result<model::Quota> parse_quota(const Json& body, std::string tenant_id) {
  GPURENT_CHECK(reject_unknown_fields(body, {"max_gpus_per_type", "max_instances", "weight"}));
  model::Quota quota;
  quota.tenant_id = std::move(tenant_id);
  GPURENT_TRY(per_type, optional_count_map(body, "max_gpus_per_type"));
  quota.max_gpus_per_type = std::move(per_type);
  GPURENT_TRY(max_instances, optional_int(body, "max_instances", 0, kMaxCount));
  if (max_instances) quota.max_instances = static_cast<int>(*max_instances);
  GPURENT_TRY(weight, optional_int(body, "weight", 1, kMaxQuotaWeight));
  quota.weight = static_cast<int>(weight.value_or(1));
  return quota;
}

// An operator's template, PUT whole under its name.
Result<model::Template> parse_template(const Json& body, std::string name) {
  GPURENT_CHECK(reject_unknown_fields(body, {"description", "image", "command", "process_command",
                                             "env", "services", "recommended_gpu_memory_gb"}));
  model::Template t;
  t.name = std::move(name);
  GPURENT_TRY(description, optional_string(body, "description", 1024));
  t.description = description.value_or("");
  GPURENT_TRY(image, optional_string(body, "image", kMaxImageLength));
  t.image = image.value_or("");
  GPURENT_TRY(command, optional_command(body, "command"));
  t.command = command.value_or(std::vector<std::string>());
  GPURENT_TRY(process_command, optional_command(body, "process_command"));
  t.process_command = process_command.value_or(std::vector<std::string>());
  GPURENT_TRY(env, optional_string_map(body, "env", 128, 4096));
  t.env = std::move(env);
  GPURENT_TRY(services, optional_string_list(body, "services", 8, 31));
  t.services = std::move(services);
  GPURENT_TRY(memory, optional_int(body, "recommended_gpu_memory_gb", 0, 4096));
  t.recommended_gpu_memory_gb = static_cast<int>(memory.value_or(0));
  GPURENT_CHECK(model::validate_template(t));
  return t;
}

}  // namespace gpurent::server
