#include "server/views.h"

#include <algorithm>
#include <array>

#include "model/gpu_catalog.h"
#include "server/telemetry_view.h"

namespace gpurent::server {

Json time_or_null(const std::optional<Timestamp>& t) {
  return t ? Json(format_rfc3339(*t)) : Json(nullptr);
}

namespace {

Json optional_or_null(const auto& value) { return value ? Json(*value) : Json(nullptr); }

// What a workload asked for: an instance's spec, and what each member of a job runs.
Json spec_view(const model::InstanceSpec& spec) {
  return {
      {"name", spec.name},
      {"gpu_type", model::requested_gpu_type(spec)},
      {"gpu_types", spec.gpu_types},
      {"min_gpu_memory_gb", spec.min_gpu_memory_gb},
      {"gpu_count", spec.gpu_count},
      {"gpu_milli", spec.gpu_milli},
      {"gpu_memory_gb", spec.gpu_memory_gb},
      {"cpu", spec.cpu},
      {"memory_gb", spec.memory_gb},
      {"disk_gb", spec.disk_gb},
      {"node_selector", spec.node_selector},
      {"template", spec.template_name.empty() ? Json(nullptr) : Json(spec.template_name)},
      {"image", spec.image.empty() ? Json(nullptr) : Json(spec.image)},
      {"command", spec.command},
      // With an image: what a node without a container engine runs instead.
      {"process_command", spec.process_command},
      {"env", spec.env},
      {"pricing", model::to_string(spec.pricing)},
      {"restart_policy", model::to_string(spec.restart_policy)},
      {"reservation_id", spec.reservation_id.empty() ? Json(nullptr) : Json(spec.reservation_id)},
      {"priority", spec.priority},
      {"max_runtime_s", optional_or_null(spec.max_runtime_s)},
      {"max_price_micros", optional_or_null(spec.max_price)},
      {"volumes", spec.volumes},
      {"services", spec.services},
      {"workdir", spec.workdir.empty() ? Json(nullptr) : Json(spec.workdir)}};
}

constexpr model::JobState kJobStates[] = {model::JobState::kQueued,    model::JobState::kRunning,
                                          model::JobState::kSucceeded, model::JobState::kFailed,
                                          model::JobState::kCancelled, model::JobState::kPreempted};

Json task_view(const model::JobTask& task) {
  return {{"index", task.index},
          {"state", model::to_string(task.state)},
          {"attempts", task.attempts},
          {"exit_code", optional_or_null(task.exit_code)},
          {"instances", task.members}};
}

}  // namespace

Json template_view(const model::Template& t) {
  return {{"name", t.name},
          {"description", t.description},
          {"image", t.image.empty() ? Json(nullptr) : Json(t.image)},
          {"command", t.command},
          {"process_command", t.process_command},
          {"env", t.env},
          {"services", t.services},
          {"recommended_gpu_memory_gb", t.recommended_gpu_memory_gb},
          {"runtimes",
           [&] {
             Json runtimes = Json::array();
             if (!t.process_command.empty()) runtimes.push_back("process");
             if (!t.image.empty()) runtimes.push_back("container");
             return runtimes;
           }()},
          {"builtin", t.builtin}};
}

Json instance_view(const controller::Controller& controller, const model::Instance& instance) {
  const auto price = controller.instance_price(instance);
  Json view = spec_view(instance.spec);
  view.update(
      Json{{"id", instance.id},
           {"tenant_id", instance.tenant_id},
           {"state", model::to_string(instance.state)},
           // The type it runs (or last ran) on; before its first placement, what it asked for.
           {"gpu_type", instance.gpu_type.empty() ? model::requested_gpu_type(instance.spec)
                                                  : instance.gpu_type},
           {"queue", instance.spec.queue},
           {"wait_for_capacity", instance.spec.wait_for_capacity},
           {"node_id", instance.node_id.empty() ? Json(nullptr) : Json(instance.node_id)},
           {"gpus", instance.gpus},
           {"run", instance.run},
           {"created_at", format_rfc3339(instance.created_at)},
           {"started_at", time_or_null(instance.started_at)},
           {"ended_at", time_or_null(instance.ended_at)},
           {"exit_code", optional_or_null(instance.exit_code)},
           {"reason", instance.reason},
           {"start_requested", instance.start_requested},
           {"job_id", instance.job_id.empty() ? Json(nullptr) : Json(instance.job_id)},
           {"job_task", instance.job_id.empty() ? Json(nullptr) : Json(instance.job_task)},
           {"job_rank", instance.job_id.empty() ? Json(nullptr) : Json(instance.job_rank)},
           {"price_per_gpu_hour_micros", optional_or_null(price)},
           {"currency", controller.options().currency}});
  return view;
}

Json job_view(const model::Job& job, bool all_tasks) {
  // Counted by the enum's value, then named: clients poll a job while its array (up to
  // model::kMaxJobArray tasks) starts, and a map lookup by name per task was most of the view.
  std::array<int, std::size(kJobStates)> by_state{};
  for (const auto& task : job.tasks) ++by_state[static_cast<size_t>(task.state)];
  std::map<std::string_view, int> counts;
  for (const auto state : kJobStates) {
    counts[model::to_string(state)] = by_state[static_cast<size_t>(state)];
  }
  Json view = spec_view(job.spec.task);
  view.update(Json{{"id", job.id},
                   {"tenant_id", job.tenant_id},
                   {"state", model::to_string(job.state)},
                   {"nodes", job.spec.nodes},
                   {"array", job.spec.array},
                   {"retries", job.spec.retries},
                   {"created_at", format_rfc3339(job.created_at)},
                   {"started_at", time_or_null(job.started_at)},
                   {"ended_at", time_or_null(job.ended_at)},
                   {"reason", job.reason},
                   {"task_counts", std::move(counts)}});
  if (all_tasks || job.spec.array <= kMaxTasksInJobView) {
    Json tasks = Json::array();
    for (const auto& task : job.tasks) tasks.push_back(task_view(task));
    view["tasks"] = std::move(tasks);
  }
  return view;
}

Json reservation_view(const model::Reservation& reservation, std::string_view currency) {
  return {{"id", reservation.id},
          {"tenant_id", reservation.tenant_id},
          {"gpu_type", reservation.gpu_type},
          {"gpu_count", reservation.gpu_count},
          {"start", format_rfc3339(reservation.start)},
          {"end", format_rfc3339(reservation.end)},
          {"state", model::to_string(reservation.state)},
          {"created_at", format_rfc3339(reservation.created_at)},
          {"payment", model::to_string(reservation.payment)},
          {"price_per_gpu_hour_micros", reservation.price_per_gpu_hour},
          {"discount_permille", reservation.discount_permille},
          {"total_micros", reservation.total},
          {"paid_micros", reservation.paid},
          {"currency", currency},
          {"refunded", reservation.refunded}};
}

Json quota_view(const model::Quota& quota) {
  return {{"tenant_id", quota.tenant_id},
          {"max_gpus_per_type", quota.max_gpus_per_type},
          {"max_instances", optional_or_null(quota.max_instances)},
          {"weight", quota.weight}};
}

Json gpu_quarantine_view(const model::GpuQuarantine& q) {
  return {{"uuid", q.id},
          {"index", q.gpu_index},
          {"cause", q.cause},
          {"xid", optional_or_null(q.xid)},
          {"message", q.message},
          {"quarantined_at", format_rfc3339(q.at)},
          {"released_at", time_or_null(q.released_at)},
          {"released_by", q.released_by.empty() ? Json(nullptr) : Json(q.released_by)}};
}

Json node_view(const controller::Controller& controller, const model::Node& node) {
  Json gpus = Json::array();
  int free = 0;
  const auto quarantined = controller.quarantined_gpus(node.id);
  Json quarantined_gpus = Json::array();
  for (const auto* q : quarantined) quarantined_gpus.push_back(gpu_quarantine_view(*q));
  for (const auto& gpu : node.gpus) {
    const auto holders = controller.gpu_holders(gpu.uuid);
    const bool out = std::any_of(quarantined.begin(), quarantined.end(),
                                 [&](const model::GpuQuarantine* q) { return q->id == gpu.uuid; });
    if (holders.empty() && !out) ++free;
    gpus.push_back({{"uuid", gpu.uuid},
                    {"quarantined", out},
                    {"index", gpu.index},
                    {"type", gpu.type},
                    {"name", gpu.name},
                    {"memory_mb", gpu.memory_mb},
                    {"nvlink_domain", gpu.nvlink_domain},
                    {"instance_id", holders.empty() ? Json(nullptr) : Json(holders.front())},
                    {"instance_ids", holders},
                    {"telemetry", gpu_telemetry_view(controller.nodes().gpu_telemetry(gpu.uuid))}});
  }
  const auto skew = controller.nodes().clock_skew_ms(node.id);
  return {{"id", node.id},
          {"name", node.name},
          {"state", model::to_string(node.state)},
          {"cordoned", node.cordoned},
          {"status", controller.node_status(node)},
          {"schedulable", node.state == model::NodeState::kReady && !node.cordoned},
          {"gpu_count", node.gpus.size()},
          {"free_gpus", free},
          {"gpus", std::move(gpus)},
          {"quarantined_gpus", std::move(quarantined_gpus)},
          {"cpu_count", node.cpu_count},
          {"memory_mb", node.memory_mb},
          {"disk_gb", node.disk_gb},
          {"fabric_group", node.fabric_group},
          {"labels", node.labels},
          {"simulated", node.simulated},
          {"isolation", node.isolation.empty() ? "none" : node.isolation},
          {"isolation_note", node.isolation_note},
          {"registered_from", node.registered_from},
          {"agent_version", node.agent_version},
          {"registered_at", format_rfc3339(node.registered_at)},
          {"last_heartbeat", format_rfc3339(node.last_heartbeat)},
          {"clock_skew_ms", skew ? Json(*skew) : Json(nullptr)}};
}

Json tenant_view(const model::Tenant& tenant) {
  return {
      {"id", tenant.id}, {"name", tenant.name}, {"created_at", format_rfc3339(tenant.created_at)}};
}

Json api_key_view(const model::ApiKey& key) {
  return {{"id", key.id},
          {"tenant_id", key.tenant_id},
          {"role", model::to_string(key.role)},
          {"name", key.name},
          {"prefix", key.prefix},
          {"created_at", format_rfc3339(key.created_at)}};
}

Json offer_view(const controller::Controller& controller, const controller::Offer& offer) {
  const auto* type = model::find_gpu_type(offer.gpu_type);
  return {{"gpu_type", offer.gpu_type},
          {"display_name", type ? type->display_name : offer.gpu_type},
          {"memory_mb", type ? type->memory_mb : 0},
          {"total", offer.total},
          {"free", offer.free},
          {"max_free_per_node", offer.max_free_per_node},
          {"price_per_gpu_hour_micros",
           offer.price_per_gpu_hour ? Json(*offer.price_per_gpu_hour) : Json(nullptr)},
          {"currency", controller.options().currency}};
}

// Of a run's billed seconds, those its minimum duration added (price book: minimum_billed_seconds):
// what was charged beyond the whole seconds it ran. 0 while it runs.
int64_t minimum_seconds(const model::UsageRecord& usage) {
  if (usage.kind != model::UsageKind::kRun || !usage.ended_at) return 0;
  const int64_t ran = (*usage.ended_at - usage.started_at).count() / 1000;
  return std::max<int64_t>(0, usage.billed_seconds + usage.package_seconds - ran);
}

Json usage_view(const model::UsageRecord& usage) {
  return {{"instance_id", usage.instance_id},
          {"run", usage.run},
          {"kind", model::to_string(usage.kind)},
          {"gpu_type", usage.gpu_type},
          {"gpu_count", usage.gpu_count},
          {"price_per_gpu_hour_micros", usage.price_per_gpu_hour},
          {"started_at", format_rfc3339(usage.started_at)},
          {"ended_at", time_or_null(usage.ended_at)},
          {"seconds", usage.billed_seconds},
          {"minimum_seconds", minimum_seconds(usage)},
          {"amount_micros", usage.charged}};
}

Json transfer_view(const model::Transfer& transfer, std::string_view currency) {
  return {{"id", transfer.id},
          {"at", format_rfc3339(transfer.at)},
          {"kind", model::to_string(transfer.kind)},
          {"from_account", transfer.from_account},
          {"to_account", transfer.to_account},
          {"amount_micros", transfer.amount},
          {"currency", currency},
          {"reference", transfer.reference}};
}

Json volume_view(const model::Volume& volume) {
  return {{"id", volume.id},
          {"tenant_id", volume.tenant_id},
          {"name", volume.name},
          {"size_gb", volume.size_gb},
          {"node_id", volume.node_id.empty() ? Json(nullptr) : Json(volume.node_id)},
          {"state", model::to_string(volume.state)},
          {"created_at", format_rfc3339(volume.created_at)},
          {"price_per_gb_month_micros", volume.price_per_gb_month}};
}

Json event_view(const model::Event& event) {
  return {{"seq", event.seq},
          {"at", format_rfc3339(event.at)},
          {"tenant_id", event.tenant_id.empty() ? Json(nullptr) : Json(event.tenant_id)},
          {"object_id", event.object_id},
          {"kind", event.kind},
          {"message", event.message}};
}

Json volume_usage_view(const model::Volume& volume) {
  return {{"volume_id", volume.id},
          {"name", volume.name},
          {"size_gb", volume.size_gb},
          {"price_per_gb_month_micros", volume.price_per_gb_month},
          {"created_at", format_rfc3339(volume.created_at)},
          {"deleted_at", time_or_null(volume.deleted_at)},
          {"seconds", volume.billed_seconds},
          {"amount_micros", volume.charged}};
}

}  // namespace gpurent::server
