#include "server/views.h"

#include <algorithm>
#include <array>

#include "api/accounts.h"
#include "api/billing.h"
#include "api/fleet.h"
#include "api/templates.h"
#include "api/workloads.h"
#include "model/gpu_catalog.h"
#include "server/telemetry_view.h"

namespace gpurent::server {

namespace {

std::optional<std::string> unless_empty(const std::string& text) {
  return text.empty() ? std::nullopt : std::optional<std::string>(text);
}

// What a workload asked for: an instance's spec, and what each member of a job runs.
api::WorkloadView workload_view(const model::InstanceSpec& spec) {
  return {.name = spec.name,
          .gpu_type = model::requested_gpu_type(spec),
          .gpu_types = spec.gpu_types,
          .min_gpu_memory_gb = spec.min_gpu_memory_gb,
          .gpu_count = spec.gpu_count,
          .gpu_milli = spec.gpu_milli,
          .gpu_memory_gb = spec.gpu_memory_gb,
          .cpu = spec.cpu,
          .memory_gb = spec.memory_gb,
          .disk_gb = spec.disk_gb,
          .node_selector = spec.node_selector,
          .template_name = unless_empty(spec.template_name),
          .image = unless_empty(spec.image),
          .command = spec.command,
          .process_command = spec.process_command,
          .runtime = std::string(model::runtime_of(spec)),
          .env = spec.env,
          .pricing = spec.pricing,
          .restart_policy = spec.restart_policy,
          .reservation_id = unless_empty(spec.reservation_id),
          .priority = spec.priority,
          .max_runtime_s = spec.max_runtime_s,
          .max_price_micros = spec.max_price,
          .volumes = spec.volumes,
          .services = spec.services,
          .ssh_keys = spec.ssh_keys,
          .workdir = unless_empty(spec.workdir)};
}

constexpr model::JobState kJobStates[] = {model::JobState::kQueued,    model::JobState::kRunning,
                                          model::JobState::kSucceeded, model::JobState::kFailed,
                                          model::JobState::kCancelled, model::JobState::kPreempted};

api::JobTask task_view(const model::JobTask& task) {
  return {.index = task.index,
          .state = task.state,
          .attempts = task.attempts,
          .exit_code = task.exit_code,
          .instances = task.members};
}

}  // namespace

Json template_view(const model::Template& t) {
  api::Template view{.name = t.name,
                     .description = t.description,
                     .image = unless_empty(t.image),
                     .command = t.command,
                     .process_command = t.process_command,
                     .env = t.env,
                     .services = t.services,
                     .recommended_gpu_memory_gb = t.recommended_gpu_memory_gb,
                     .builtin = t.builtin};
  if (!t.process_command.empty()) view.runtimes.push_back("process");
  if (!t.image.empty()) view.runtimes.push_back("container");
  return view;
}

Json instance_view(const controller::Controller& controller, const model::Instance& instance) {
  api::Instance view{
      .id = instance.id,
      .tenant_id = instance.tenant_id,
      .state = instance.state,
      .workload = workload_view(instance.spec),
      .queue = instance.spec.queue,
      .wait_for_capacity = instance.spec.wait_for_capacity,
      .node_id = unless_empty(instance.node_id),
      .gpus = instance.gpus,
      .run = instance.run,
      .created_at = instance.created_at,
      .started_at = instance.started_at,
      .ended_at = instance.ended_at,
      .exit_code = instance.exit_code,
      .reason = instance.reason,
      .start_requested = instance.start_requested,
      .start_on_node = unless_empty(instance.start_on_node),
      .price_per_gpu_hour_micros = controller.metering().price_per_gpu_hour(instance),
      .currency = controller.options().currency};
  // The type it runs (or last ran) on; before its first placement, what it asked for.
  if (!instance.gpu_type.empty()) view.workload.gpu_type = instance.gpu_type;
  if (!instance.job_id.empty()) {
    view.job_id = instance.job_id;
    view.job_task = instance.job_task;
    view.job_rank = instance.job_rank;
  }
  return view;
}

Json job_view(const model::Job& job, bool all_tasks) {
  // Counted by the enum's value, then named: clients poll a job while its array (up to
  // model::kMaxJobArray tasks) starts, and a map lookup by name per task was most of the view.
  std::array<int, std::size(kJobStates)> by_state{};
  for (const auto& task : job.tasks) ++by_state[static_cast<size_t>(task.state)];
  api::Job view{.id = job.id,
                .tenant_id = job.tenant_id,
                .state = job.state,
                .workload = workload_view(job.spec.task),
                .nodes = job.spec.nodes,
                .array = job.spec.array,
                .retries = job.spec.retries,
                .created_at = job.created_at,
                .started_at = job.started_at,
                .ended_at = job.ended_at,
                .reason = job.reason};
  for (const auto state : kJobStates) {
    view.task_counts.emplace(model::to_string(state), by_state[static_cast<size_t>(state)]);
  }
  if (all_tasks || job.spec.array <= kMaxTasksInJobView) {
    auto& tasks = view.tasks.emplace();
    tasks.reserve(job.tasks.size());
    for (const auto& task : job.tasks) tasks.push_back(task_view(task));
  }
  return view;
}

Json reservation_view(const model::Reservation& reservation, std::string_view currency) {
  return api::Reservation{.id = reservation.id,
                          .tenant_id = reservation.tenant_id,
                          .gpu_type = reservation.gpu_type,
                          .gpu_count = reservation.gpu_count,
                          .start = reservation.start,
                          .end = reservation.end,
                          .state = reservation.state,
                          .created_at = reservation.created_at,
                          .payment = reservation.payment,
                          .price_per_gpu_hour_micros = reservation.price_per_gpu_hour,
                          .discount_permille = reservation.discount_permille,
                          .total_micros = reservation.total,
                          .paid_micros = reservation.paid,
                          .refunded = reservation.refunded,
                          .currency = std::string(currency)};
}

Json quota_view(const model::Quota& quota) {
  return api::Quota{.tenant_id = quota.tenant_id,
                    .max_gpus_per_type = quota.max_gpus_per_type,
                    .max_instances = quota.max_instances,
                    .max_queued = quota.max_queued,
                    .max_array = quota.max_array,
                    .max_body_bytes = quota.max_body_bytes,
                    .weight = quota.weight};
}

namespace {

api::GpuQuarantine quarantine_view(const model::GpuQuarantine& q) {
  return {.uuid = q.id,
          .index = q.gpu_index,
          .cause = q.cause,
          .xid = q.xid,
          .message = q.message,
          .quarantined_at = q.at,
          .released_at = q.released_at,
          .released_by = unless_empty(q.released_by)};
}

}  // namespace

Json gpu_quarantine_view(const model::GpuQuarantine& q) { return quarantine_view(q); }

namespace {

double in_thousands(int64_t value) { return static_cast<double>(value) / 1000; }

api::Figures figures_view(const std::map<std::string, int64_t>& gemm_gflops, int64_t memory_mbps,
                          int64_t h2d_mbps, int64_t d2h_mbps) {
  api::Figures view{.memory_gbps = in_thousands(memory_mbps),
                    .h2d_gbps = in_thousands(h2d_mbps),
                    .d2h_gbps = in_thousands(d2h_mbps)};
  for (const auto& [precision, gflops] : gemm_gflops) {
    view.gemm_tflops.emplace(precision, in_thousands(gflops));
  }
  if (const auto training = model::training_gflops(gemm_gflops)) {
    view.training_tflops = in_thousands(*training);
  }
  return view;
}

api::Figures figures_view(const model::GpuBenchmark& figures) {
  return figures_view(figures.gemm_gflops, figures.memory_mbps, figures.h2d_mbps, figures.d2h_mbps);
}

// A figure (training TFLOPS, images an hour) per currency unit of an hour's price; none without
// either.
std::optional<double> per_price(const std::optional<double>& figure,
                                const std::optional<Micros>& price_per_hour) {
  if (!figure || !price_per_hour || *price_per_hour <= 0) return std::nullopt;
  return *figure * static_cast<double>(kMicrosPerUnit) / static_cast<double>(*price_per_hour);
}

// Images a second, from the images an hour stored.
std::map<std::string, double> images_per_s(const std::map<std::string, int64_t>& images_per_hour) {
  std::map<std::string, double> out;
  for (const auto& [precision, images] : images_per_hour) {
    out.emplace(precision, static_cast<double>(images) / 3600);
  }
  return out;
}

// Images an hour of one GPU buys per currency unit of its hourly price; none without a price.
std::optional<double> images_per_price(const std::map<std::string, int64_t>& images_per_hour,
                                       const std::optional<Micros>& price_per_hour) {
  const auto amp = images_per_hour.find("amp");
  if (amp == images_per_hour.end()) return std::nullopt;
  return per_price(static_cast<double>(amp->second), price_per_hour);
}

std::optional<api::GpuBenchmark> gpu_benchmark_view(const controller::GpuBenchmarks& benchmarks,
                                                    std::string_view uuid) {
  const model::GpuBenchmarkHistory* history = benchmarks.of_gpu(uuid);
  if (history == nullptr || history->runs.empty()) return std::nullopt;
  const model::BenchmarkRun& newest = history->runs.back();
  api::GpuBenchmark view{.at = newest.at,
                         .reason = newest.reason,
                         .simulated = newest.simulated,
                         .figures = figures_view(newest.figures)};
  if (const auto shortfall = benchmarks.shortfall(uuid)) {
    view.shortfall_percent = shortfall->percent;
    if (!shortfall->figure.empty()) view.shortfall_figure = shortfall->figure;
    view.slow = shortfall->percent > controller::kSlowShortfallPercent;
  }
  return view;
}

api::BenchmarkRequest benchmark_request_of(const model::Node& node,
                                           const model::BenchmarkRequest& request) {
  api::BenchmarkRequest view{.id = request.id,
                             .node_id = node.id,
                             .gpus = {},
                             .reason = request.reason,
                             .asked_at = request.asked_at};
  for (const auto& uuid : request.gpus) {
    const auto gpu = std::ranges::find(node.gpus, uuid, &model::Gpu::uuid);
    if (gpu != node.gpus.end()) view.gpus.push_back(gpu->index);
  }
  return view;
}

}  // namespace

Json node_view(const controller::Controller& controller, const model::Node& node) {
  const auto quarantined = controller.fleet().quarantines().on_node(node.id);
  api::Node view{.id = node.id,
                 .name = node.name,
                 .state = node.state,
                 .cordoned = node.cordoned,
                 .status = std::string(controller.fleet().node_status(node)),
                 .schedulable = node.state == model::NodeState::kReady && !node.cordoned,
                 .gpu_count = static_cast<int>(node.gpus.size()),
                 .cpu_count = node.cpu_count,
                 .memory_mb = node.memory_mb,
                 .disk_gb = node.disk_gb,
                 .fabric_group = node.fabric_group,
                 .labels = node.labels,
                 .simulated = node.simulated,
                 .isolation = node.isolation.empty() ? "none" : node.isolation,
                 .isolation_note = node.isolation_note,
                 .container_runtime = node.container_runtime,
                 .container_toolkit = node.container_toolkit,
                 .vm = node.vm,
                 .registered_from = node.registered_from,
                 .agent_version = node.agent_version,
                 .registered_at = node.registered_at,
                 .last_heartbeat = node.last_heartbeat,
                 .clock_skew_ms = controller.fleet().nodes().clock_skew_ms(node.id)};
  if (node.benchmark) {
    view.benchmark_pending = benchmark_request_of(node, *node.benchmark);
  }
  for (const auto* q : quarantined) view.quarantined_gpus.push_back(quarantine_view(*q));
  for (const auto& gpu : node.gpus) {
    const auto& holders = controller.fleet().placements().holders(gpu.uuid);
    const bool out = std::any_of(quarantined.begin(), quarantined.end(),
                                 [&](const model::GpuQuarantine* q) { return q->id == gpu.uuid; });
    if (holders.empty() && !out) ++view.free_gpus;
    view.gpus.push_back(
        {.uuid = gpu.uuid,
         .index = gpu.index,
         .type = gpu.type,
         .name = gpu.name,
         .memory_mb = gpu.memory_mb,
         .nvlink_domain = gpu.nvlink_domain,
         .quarantined = out,
         .instance_id = holders.empty() ? std::nullopt : std::optional(*holders.begin()),
         .instance_ids = {holders.begin(), holders.end()},
         .telemetry = gpu_telemetry_view(controller.fleet().nodes().gpu_telemetry(gpu.uuid)),
         .benchmark = gpu_benchmark_view(controller.fleet().benchmarks(), gpu.uuid)});
  }
  return view;
}

Json tenant_view(const model::Tenant& tenant) {
  return api::Tenant{.id = tenant.id, .name = tenant.name, .created_at = tenant.created_at};
}

Json api_key_view(const model::ApiKey& key) {
  return api::ApiKey{.id = key.id,
                     .tenant_id = key.tenant_id,
                     .role = key.role,
                     .name = key.name,
                     .prefix = key.prefix,
                     .created_at = key.created_at,
                     .scopes = key.scopes.empty() ? std::vector<std::string>{"*"} : key.scopes,
                     .expires_at = key.expires_at};
}

Json offer_view(const controller::Controller& controller, const controller::Offer& offer) {
  const auto* type = model::find_gpu_type(offer.gpu_type);
  api::Offer view{.gpu_type = offer.gpu_type,
                  .display_name = type ? type->display_name : offer.gpu_type,
                  .memory_mb = type ? type->memory_mb : 0,
                  .total = offer.total,
                  .free = offer.free,
                  .max_free_per_node = offer.max_free_per_node,
                  .price_per_gpu_hour_micros = offer.price_per_gpu_hour,
                  .spot_price_per_gpu_hour_micros = controller.pricing().spot_price(offer.gpu_type),
                  .currency = controller.options().currency};
  if (const auto* measured = controller.fleet().benchmarks().of_type(offer.gpu_type)) {
    api::OfferMeasured m{.gpus = measured->gpus,
                         .simulated = measured->simulated,
                         .figures = figures_view(measured->gemm_gflops, measured->memory_mbps,
                                                 measured->h2d_mbps, measured->d2h_mbps),
                         .spread_percent = measured->training_spread_percent};
    m.perf_per_price = per_price(m.figures.training_tflops, view.price_per_gpu_hour_micros);
    m.spot_perf_per_price =
        per_price(m.figures.training_tflops, view.spot_price_per_gpu_hour_micros);
    if (const auto& training = measured->resnet50) {
      m.resnet50 = api::OfferTraining{
          .gpus = training->gpus,
          .model = training->model,
          .batch = training->batch,
          .image_size = training->image_size,
          .images_per_s = images_per_s(training->images_per_hour),
          .images_per_price =
              images_per_price(training->images_per_hour, view.price_per_gpu_hour_micros),
          .spot_images_per_price =
              images_per_price(training->images_per_hour, view.spot_price_per_gpu_hour_micros)};
    }
    view.measured = std::move(m);
  }
  return view;
}

Result<OfferOrder> offer_order(std::string_view sort) {
  // The figure an order reads of an offer; null where it has none.
  const auto by = [](const Json::json_pointer& where, bool highest_first) -> OfferOrder {
    return [where, highest_first](const Json& a, const Json& b) {
      const Json& x = a.contains(where) ? a.at(where) : Json();
      const Json& y = b.contains(where) ? b.at(where) : Json();
      if (x.is_null() || y.is_null()) return !x.is_null() && y.is_null();
      return highest_first ? y < x : x < y;
    };
  };
  if (sort == "gpu_type") return by(Json::json_pointer("/gpu_type"), false);
  if (sort == "price") return by(Json::json_pointer("/price_per_gpu_hour_micros"), false);
  if (sort == "perf_per_price") return by(Json::json_pointer("/measured/perf_per_price"), true);
  if (sort == "spot_perf_per_price") {
    return by(Json::json_pointer("/measured/spot_perf_per_price"), true);
  }
  if (sort == "images_per_price") {
    return by(Json::json_pointer("/measured/resnet50/images_per_price"), true);
  }
  return fail(Error::invalid("invalid_sort",
                             fmt::format("sort '{}' is not one of gpu_type, price, perf_per_price, "
                                         "spot_perf_per_price, images_per_price",
                                         sort)));
}

Json benchmark_request_view(const model::Node& node, const model::BenchmarkRequest& request) {
  return benchmark_request_of(node, request);
}

api::TrainingRun training_view(const model::TrainingRun& run) {
  return {.at = run.at,
          .instance_id = run.instance_id,
          .model = run.model,
          .batch = run.batch,
          .image_size = run.image_size,
          .device = run.device,
          .images_per_s = images_per_s(run.images_per_hour)};
}

Json training_record_view(const controller::RecordedTraining& recorded) {
  return api::TrainingRecord{.node_id = recorded.node_id,
                             .gpu_uuid = recorded.gpu,
                             .gpu_index = recorded.gpu_index,
                             .gpu_type = recorded.gpu_type,
                             .run = training_view(recorded.run)};
}

Json node_benchmarks_view(const controller::Controller& controller, const model::Node& node) {
  const controller::GpuBenchmarks& benchmarks = controller.fleet().benchmarks();
  Json items = Json::array();
  for (const auto* history : benchmarks.on_node(node)) {
    api::GpuBenchmarkHistory view{
        .uuid = history->id, .index = history->gpu_index, .type = history->gpu_type};
    if (const auto shortfall = benchmarks.shortfall(history->id)) {
      view.shortfall_percent = shortfall->percent;
    }
    for (const auto& run : history->runs) {
      api::BenchmarkRun item{.at = run.at,
                             .reason = run.reason,
                             .simulated = run.simulated,
                             .figures = figures_view(run.figures)};
      for (const auto& peer : run.peers) {
        item.peers.push_back({.to = peer.to, .gbps = in_thousands(peer.mbps)});
      }
      view.runs.push_back(std::move(item));
    }
    for (const auto& training : history->trainings)
      view.trainings.push_back(training_view(training));
    items.push_back(std::move(view));
  }
  return items;
}

namespace {

// Of a run's billed seconds, those its minimum duration added (price book: minimum_billed_seconds):
// what was charged beyond the whole seconds it ran. 0 while it runs.
int64_t minimum_seconds(const model::UsageRecord& usage) {
  if (usage.kind != model::UsageKind::kRun || !usage.ended_at) return 0;
  const int64_t ran = (*usage.ended_at - usage.started_at).count() / 1000;
  return std::max<int64_t>(0, usage.billed_seconds + usage.package_seconds - ran);
}

}  // namespace

Json usage_view(const model::UsageRecord& usage) {
  return api::UsageItem{.instance_id = usage.instance_id,
                        .run = usage.run,
                        .kind = usage.kind,
                        .gpu_type = usage.gpu_type,
                        .gpu_count = usage.gpu_count,
                        .pricing = usage.pricing,
                        .price_per_gpu_hour_micros = usage.price_per_gpu_hour,
                        .started_at = usage.started_at,
                        .ended_at = usage.ended_at,
                        .seconds = usage.billed_seconds,
                        .minimum_seconds = minimum_seconds(usage),
                        .amount_micros = usage.charged};
}

Json transfer_view(const model::Transfer& transfer, std::string_view currency) {
  return api::Transfer{.id = transfer.id,
                       .at = transfer.at,
                       .kind = transfer.kind,
                       .from_account = transfer.from_account,
                       .to_account = transfer.to_account,
                       .amount_micros = transfer.amount,
                       .currency = std::string(currency),
                       .reference = transfer.reference};
}

Json volume_view(const model::Volume& volume) {
  return api::Volume{.id = volume.id,
                     .tenant_id = volume.tenant_id,
                     .name = volume.name,
                     .size_gb = volume.size_gb,
                     .node_id = unless_empty(volume.node_id),
                     .state = volume.state,
                     .created_at = volume.created_at,
                     .price_per_gb_month_micros = volume.price_per_gb_month};
}

Json event_view(const model::Event& event) {
  return api::Event{.seq = event.seq,
                    .at = event.at,
                    .tenant_id = unless_empty(event.tenant_id),
                    .object_id = event.object_id,
                    .kind = event.kind,
                    .message = event.message};
}

Json audit_view(const model::AuditRecord& entry) {
  std::optional<model::Role> role;
  if (model::Role parsed; model::parse_role(entry.role, &parsed)) role = parsed;
  return api::AuditEntry{.seq = entry.seq,
                         .at = entry.at,
                         .tenant_id = unless_empty(entry.tenant_id),
                         .key_id = unless_empty(entry.key_id),
                         .role = role,
                         .address = entry.address,
                         .action = entry.action,
                         .target = entry.target,
                         .status = entry.status,
                         .outcome = entry.outcome};
}

Json volume_usage_view(const model::Volume& volume) {
  return api::VolumeUsageItem{.volume_id = volume.id,
                              .name = volume.name,
                              .size_gb = volume.size_gb,
                              .price_per_gb_month_micros = volume.price_per_gb_month,
                              .created_at = volume.created_at,
                              .deleted_at = volume.deleted_at,
                              .seconds = volume.billed_seconds,
                              .amount_micros = volume.charged};
}

}  // namespace gpurent::server
