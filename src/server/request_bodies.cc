#include "server/request_bodies.h"

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

#include "api/accounts.h"
#include "api/fleet.h"
#include "api/read_request.h"
#include "api/templates.h"
#include "api/workloads.h"
#include "common/json.h"
#include "controller/controller.h"
#include "model/benchmark.h"
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

}  // namespace

bool has_value(const Json& body, std::string_view key) {
  const auto it = body.find(key);
  return it != body.end() && !it->is_null();
}

namespace {

// The bounds of the API's values, with common/json.h's messages (read_request has checked their
// JSON types).
Status check_range(std::string_view key, const std::optional<int64_t>& value, int64_t min,
                   int64_t max) {
  if (value && (*value < min || *value > max)) {
    return fail(invalid_field(key, fmt::format("must be between {} and {}", min, max)));
  }
  return {};
}

Status check_length(std::string_view key, const std::optional<std::string>& value,
                    size_t max_length) {
  if (value && value->size() > max_length) {
    return fail(invalid_field(key, fmt::format("is longer than {} characters", max_length)));
  }
  return {};
}

Status check_list(std::string_view key, const std::vector<std::string>& values, size_t max_entries,
                  size_t max_length) {
  if (values.size() > max_entries) {
    return fail(invalid_field(key, fmt::format("has more than {} entries", max_entries)));
  }
  for (const auto& value : values) {
    if (value.size() > max_length) {
      return fail(invalid_field(
          key, fmt::format("entries must be strings of at most {} characters", max_length)));
    }
  }
  return {};
}

Status check_map(std::string_view key, const std::map<std::string, std::string>& values,
                 size_t max_entries, size_t max_length) {
  if (values.size() > max_entries) {
    return fail(invalid_field(key, fmt::format("has more than {} entries", max_entries)));
  }
  for (const auto& [name, value] : values) {
    if (name.empty() || name.size() > max_length || value.size() > max_length) {
      return fail(invalid_field(key, fmt::format("entries must be 1..{} characters", max_length)));
    }
  }
  return {};
}

// A present string that must not be empty (as common/json.h's required_string).
Status check_required(std::string_view key, const std::string& value, size_t max_length) {
  if (value.empty()) return fail(invalid_field(key, "is required"));
  return check_length(key, value, max_length);
}

// A command as argv, or as a shell line (run through /bin/sh -c).
Result<std::vector<std::string>> command_argv(std::string_view key, const api::Command& command) {
  if (const auto* line = std::get_if<std::string>(&command)) {
    if (line->empty() || line->size() > 16384) {
      return fail(invalid_field(key, "must be 1..16384 characters"));
    }
    return std::vector<std::string>{"/bin/sh", "-c", *line};
  }
  const auto& argv = std::get<std::vector<std::string>>(command);
  GPURENT_CHECK(check_list(key, argv, 256, 4096));
  if (argv.empty() || argv[0].empty()) {
    return fail(invalid_field(key, "must be a non-empty array of strings or a string"));
  }
  return argv;
}

// How many and how long; the paths' rules are model::validate_volume_mounts (applied by the
// controller), ownership the controller's.
Status check_volume_mounts(const std::vector<model::VolumeMount>& mounts) {
  if (mounts.size() > model::kMaxVolumeMounts) {
    return fail(invalid_field(
        "volumes", fmt::format("must be an array of at most {} {{\"volume_id\", \"mount_path\"}}",
                               model::kMaxVolumeMounts)));
  }
  for (const auto& mount : mounts) {
    GPURENT_CHECK(check_required("volume_id", mount.volume_id, kMaxNameLength));
    GPURENT_CHECK(check_required("mount_path", mount.mount_path, model::kMaxMountPathLength));
  }
  return {};
}

// An unknown pricing is not offered (422); other unknown names are the field's fault.
Error unknown_name_of_workload(std::string_view member, std::string_view text,
                               std::string_view names) {
  if (member != "pricing") return api::unknown_name(member, text, names);
  return Error::unprocessable(
      "unsupported_pricing",
      fmt::format("pricing '{}' is not offered; use on_demand, spot or reserved", text));
}

int as_int(const std::optional<int64_t>& value, int fallback) {
  return static_cast<int>(value.value_or(fallback));
}

// Reserved pricing draws on a reservation's held capacity, so it needs one and nothing else does.
Status read_pricing(const api::WorkloadRequest& request, model::InstanceSpec& spec) {
  spec.pricing = request.pricing.value_or(model::PricingModel::kOnDemand);
  GPURENT_CHECK(check_length("reservation_id", request.reservation_id, kMaxNameLength));
  spec.reservation_id = request.reservation_id.value_or("");
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
  GPURENT_CHECK(check_range("max_price_micros", request.max_price_micros, 1, billing::kMaxPrice));
  if (request.max_price_micros && spec.pricing != model::PricingModel::kSpot) {
    return fail(invalid_field("max_price_micros", "applies only to pricing 'spot'"));
  }
  spec.max_price = request.max_price_micros;
  return {};
}

// What an instance, or each job member, runs and needs; template and runtime are the route's
// (they need the catalog).
Result<model::InstanceSpec> parse_workload_spec(const api::WorkloadRequest& request) {
  model::InstanceSpec spec;
  GPURENT_CHECK(check_length("name", request.name, kMaxNameLength));
  if (request.name && !valid_name(*request.name)) {
    return fail(invalid_field("name", "may hold only letters, digits, '-', '_' and '.'"));
  }
  spec.name = request.name.value_or("");
  // One exact type ("any": every type), or a list of acceptable types.
  GPURENT_CHECK(check_length("gpu_type", request.gpu_type, kMaxNameLength));
  if (request.gpu_types)
    GPURENT_CHECK(check_list("gpu_types", *request.gpu_types, 32, kMaxNameLength));
  if (request.gpu_type.has_value() == request.gpu_types.has_value()) {
    return fail(invalid_field("gpu_type", "give either gpu_type or gpu_types"));
  }
  if (request.gpu_types) {
    if (request.gpu_types->empty()) {
      return fail(invalid_field("gpu_types", "must name at least one type"));
    }
    spec.gpu_types = *request.gpu_types;
  } else if (*request.gpu_type != "any") {
    spec.gpu_types = {*request.gpu_type};
  }
  GPURENT_CHECK(check_range("min_gpu_memory_gb", request.min_gpu_memory_gb, 0, 4096));
  spec.min_gpu_memory_gb = as_int(request.min_gpu_memory_gb, 0);
  GPURENT_CHECK(check_range("gpu_count", request.gpu_count, 1, controller::kMaxGpusPerInstance));
  spec.gpu_count = as_int(request.gpu_count, 1);
  GPURENT_CHECK(check_range("gpu_milli", request.gpu_milli, 1, model::kMilliPerGpu));
  spec.gpu_milli = as_int(request.gpu_milli, model::kMilliPerGpu);
  if (spec.gpu_milli < model::kMilliPerGpu && spec.gpu_count != 1) {
    return fail(invalid_field("gpu_milli", "a share of a GPU (below 1000) needs gpu_count 1"));
  }
  GPURENT_CHECK(check_range("gpu_memory_gb", request.gpu_memory_gb, 0, 4096));
  spec.gpu_memory_gb = as_int(request.gpu_memory_gb, 0);
  if (spec.gpu_memory_gb > 0 && spec.gpu_milli == model::kMilliPerGpu) {
    return fail(invalid_field("gpu_memory_gb", "applies only to a share of a GPU (gpu_milli)"));
  }
  GPURENT_CHECK(check_range("cpu", request.cpu, 0, 1024));
  spec.cpu = as_int(request.cpu, 0);
  GPURENT_CHECK(check_range("memory_gb", request.memory_gb, 0, 65536));
  spec.memory_gb = as_int(request.memory_gb, 0);
  GPURENT_CHECK(check_range("disk_gb", request.disk_gb, 0, 1'000'000));
  spec.disk_gb = as_int(request.disk_gb, 0);
  spec.node_selector = request.node_selector.value_or(std::map<std::string, std::string>());
  GPURENT_CHECK(check_map("node_selector", spec.node_selector, 16, 253));
  GPURENT_CHECK(check_range("priority", request.priority, -100, 100));
  spec.priority = as_int(request.priority, 0);
  GPURENT_CHECK(check_range("max_runtime_s", request.max_runtime_s, 1, 366LL * 24 * 3600));
  spec.max_runtime_s = request.max_runtime_s;

  GPURENT_CHECK(check_length("image", request.image, kMaxImageLength));
  if (request.image && !valid_image(*request.image)) {
    return fail(invalid_field("image", "must be an image reference such as pytorch/pytorch:2.5.1"));
  }
  spec.image = request.image.value_or("");
  if (request.command) {
    GPURENT_TRY(argv, command_argv("command", *request.command));
    spec.command = std::move(argv);
  } else if (spec.image.empty() && !request.template_name) {
    spec.command = {"sleep", "infinity"};  // keep the machine until the tenant stops it
  }  // else the image's own command (as `docker run IMAGE`), or the template's
  spec.env = request.env.value_or(std::map<std::string, std::string>());
  GPURENT_CHECK(check_map("env", spec.env, 128, 4096));
  for (const auto& [key, value] : spec.env) {
    if (!valid_env_name(key))
      return fail(invalid_field("env", fmt::format("'{}' is not a variable name", key)));
    if (set_by_platform(key)) {
      return fail(invalid_field("env", fmt::format("'{}' is set by the platform", key)));
    }
  }
  spec.volumes = request.volumes.value_or(std::vector<model::VolumeMount>());
  GPURENT_CHECK(check_volume_mounts(spec.volumes));
  spec.services = request.services.value_or(std::vector<std::string>());
  GPURENT_CHECK(
      check_list("services", spec.services, model::kMaxServices, model::kMaxServiceNameLength));
  for (size_t i = 0; i < spec.services.size(); ++i) {
    const auto& service = spec.services[i];
    if (!model::valid_service_name(service)) {
      return fail(invalid_field(
          "services", fmt::format("'{}' is not a service name ([a-z][a-z0-9-]{{0,30}})", service)));
    }
    const auto earlier = spec.services.begin() + static_cast<std::ptrdiff_t>(i);
    if (std::find(spec.services.begin(), earlier, service) != earlier) {
      return fail(invalid_field("services", fmt::format("'{}' is named twice", service)));
    }
  }
  spec.ssh_keys = request.ssh_keys.value_or(std::vector<std::string>());
  GPURENT_CHECK(check_list("ssh_keys", spec.ssh_keys, model::kMaxSshKeys, model::kMaxSshKeyLength));
  GPURENT_CHECK(check_length("workdir", request.workdir, 64));
  spec.workdir = request.workdir.value_or("");
  spec.wait_for_capacity = request.wait_for_capacity.value_or(false);
  spec.queue = request.queue.value_or(true);
  if (!spec.queue && spec.wait_for_capacity) {
    return fail(invalid_field("wait_for_capacity", "waiting for capacity needs queue: true"));
  }
  GPURENT_CHECK(read_pricing(request, spec));
  spec.restart_policy =
      request.restart_policy.value_or(model::default_restart_policy(spec.pricing));
  return spec;
}

}  // namespace

Result<controller::NewVolume> parse_volume(const Json& body) {
  GPURENT_TRY(request, api::read_request<api::VolumeCreate>(body));
  GPURENT_CHECK(check_required("name", request.name, model::kMaxVolumeNameLength));
  if (!model::valid_volume_name(request.name)) {
    return fail(invalid_field("name", "may hold only letters, digits, '-', '_' and '.'"));
  }
  GPURENT_CHECK(check_range("size_gb", request.size_gb, 1, model::kMaxVolumeSizeGb));
  GPURENT_CHECK(check_length("node_id", request.node_id, kMaxNameLength));
  return controller::NewVolume{.name = std::move(request.name),
                               .size_gb = static_cast<int>(request.size_gb),
                               .node_id = request.node_id.value_or("")};
}

Result<model::InstanceSpec> parse_instance_spec(const Json& body) {
  GPURENT_TRY(request, api::read_request<api::InstanceCreate>(body, unknown_name_of_workload));
  return parse_workload_spec(request.workload);
}

Result<EstimateRequest> parse_estimate(const Json& body) {
  GPURENT_TRY(request, api::read_request<api::EstimateCreate>(body, unknown_name_of_workload));
  EstimateRequest out;
  GPURENT_TRY(spec, parse_workload_spec(request.workload));
  out.spec = std::move(spec);
  if (!request.work) return out;
  const api::EstimateWork& asked = *request.work;
  if (asked.model != "resnet50") {
    return fail(invalid_field("work.model", "must be resnet50 (the model measured)"));
  }
  GPURENT_CHECK(check_range("work.epochs", asked.epochs, 1, kMaxEpochs));
  GPURENT_CHECK(
      check_range("work.images_per_epoch", asked.images_per_epoch, 1, kMaxImagesPerEpoch));
  billing::TrainingWork work{.model = asked.model, .epochs = asked.epochs};
  if (asked.images_per_epoch) work.images_per_epoch = *asked.images_per_epoch;
  if (asked.precision) {
    if (std::ranges::find(model::kTrainingPrecisions, *asked.precision) ==
        model::kTrainingPrecisions.end()) {
      return fail(invalid_field("work.precision", "must be amp or fp32"));
    }
    work.precision = *asked.precision;
  }
  out.work = std::move(work);
  return out;
}

// A job takes what each member runs (an instance's fields; `queue: false` refuses the job unless
// its first task can start now) and its shape: tasks, members per task, retries.
Result<model::JobSpec> parse_job_spec(const Json& body) {
  GPURENT_TRY(request, api::read_request<api::JobCreate>(body, unknown_name_of_workload));
  model::JobSpec spec;
  GPURENT_TRY(task, parse_workload_spec(request.workload));
  spec.task = std::move(task);
  GPURENT_CHECK(check_range("nodes", request.nodes, 1, model::kMaxJobNodes));
  spec.nodes = as_int(request.nodes, 1);
  GPURENT_CHECK(check_range("array", request.array, 1, model::kMaxJobArray));
  spec.array = as_int(request.array, 1);
  GPURENT_CHECK(check_range("retries", request.retries, 0, model::kMaxJobRetries));
  spec.retries = as_int(request.retries, 0);
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
Result<controller::NewApiKey> parse_api_key(const Json& body) {
  GPURENT_TRY(request, api::read_request<api::ApiKeyCreate>(body));
  const std::string name = request.name.value_or("");
  if (name.size() > kMaxNameLength) {
    return fail(invalid_field("name", fmt::format("at most {} bytes", kMaxNameLength)));
  }
  std::vector<std::string> scopes = request.scopes.value_or(std::vector<std::string>{});
  if (scopes.size() > kMaxScopes) {
    return fail(invalid_field("scopes", fmt::format("at most {} scopes", kMaxScopes)));
  }
  return controller::NewApiKey{.tenant_id = request.tenant_id.value_or(""),
                               .role = request.role,
                               .name = name,
                               .scopes = std::move(scopes),
                               .expires_at = request.expires_at};
}

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
  GPURENT_CHECK(reject_unknown_fields(body, {"max_gpus_per_type", "max_instances", "max_queued",
                                             "max_array", "max_body_bytes", "weight"}));
  model::Quota quota;
  quota.tenant_id = std::move(tenant_id);
  GPURENT_TRY(per_type, optional_count_map(body, "max_gpus_per_type"));
  quota.max_gpus_per_type = std::move(per_type);
  for (const auto& [name, limit] :
       {std::pair{"max_instances", &quota.max_instances},
        std::pair{"max_queued", &quota.max_queued}, std::pair{"max_array", &quota.max_array},
        std::pair{"max_body_bytes", &quota.max_body_bytes}}) {
    GPURENT_TRY(value, optional_int(body, name, 0, kMaxCount));
    if (value) *limit = static_cast<int>(*value);
  }
  GPURENT_TRY(weight, optional_int(body, "weight", 1, kMaxQuotaWeight));
  quota.weight = static_cast<int>(weight.value_or(1));
  return quota;
}

// An operator's template, PUT whole under its name.
Result<model::Template> parse_template(const Json& body, std::string name) {
  GPURENT_TRY(request, api::read_request<api::TemplateSet>(body));
  model::Template t;
  t.name = std::move(name);
  GPURENT_CHECK(check_length("description", request.description, 1024));
  t.description = request.description.value_or("");
  GPURENT_CHECK(check_length("image", request.image, kMaxImageLength));
  t.image = request.image.value_or("");
  if (request.command) {
    GPURENT_TRY(command, command_argv("command", *request.command));
    t.command = std::move(command);
  }
  if (request.process_command) {
    GPURENT_TRY(command, command_argv("process_command", *request.process_command));
    t.process_command = std::move(command);
  }
  t.env = request.env.value_or(std::map<std::string, std::string>());
  GPURENT_CHECK(check_map("env", t.env, 128, 4096));
  t.services = request.services.value_or(std::vector<std::string>());
  GPURENT_CHECK(check_list("services", t.services, 8, 31));
  GPURENT_CHECK(
      check_range("recommended_gpu_memory_gb", request.recommended_gpu_memory_gb, 0, 4096));
  t.recommended_gpu_memory_gb = as_int(request.recommended_gpu_memory_gb, 0);
  GPURENT_CHECK(model::validate_template(t));
  return t;
}

}  // namespace gpurent::server
