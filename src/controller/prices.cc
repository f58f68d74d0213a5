// The controller's side of pricing (pricing.h has the book and the market): who may set prices
// and what a new version wakes, the utilisation the spot market observes and the max_price
// interruptions it causes, and the metering of what billing/billing.h prices (the minimum
// duration of a run, stopped instances' disks).
#include <spdlog/spdlog.h>

#include "controller/controller.h"
#include "controller/internal.h"
#include "model/gpu_catalog.h"

namespace gpurent::controller {

namespace {

std::string stopped_disk_id(const Instance& instance) {
  return fmt::format("{}/{}/disk", instance.id, instance.run);
}

}  // namespace

Result<model::PriceVersion> Controller::set_prices(const Principal& caller,
                                                   const billing::PriceChange& change) {
  // A type exists if the catalog knows it or a node has one (an unknown model, priced by hand).
  const auto known_type = [this](std::string_view type) {
    if (model::find_gpu_type(type)) return true;
    return std::any_of(nodes_.begin(), nodes_.end(), [&](const auto& entry) {
      return std::any_of(entry.second.gpus.begin(), entry.second.gpus.end(),
                         [&](const model::Gpu& gpu) { return gpu.type == type; });
    });
  };
  GPURENT_TRY(version, pricing_.set(caller, change, known_type));
  // Work queued for a type that just got a price may now be placed.
  queue_changed_ = true;
  return version;
}

Result<billing::Estimate> Controller::estimate(const model::InstanceSpec& spec) const {
  GPURENT_CHECK(validate_spec(spec, 1));
  return pricing_.estimate(spec);
}

void Controller::post_usage(model::UsageRecord& usage, Micros due) {
  post_usage(usage, due, accounts_.tenant_names(usage.tenant_id));
}

void Controller::post_usage(model::UsageRecord& usage, Micros due,
                            billing::Ledger::TenantNames names) {
  tracker_.touch_metering(usage);
  if (due <= 0) return;
  if (auto posted = accounts_.post_usage(usage, due, names); !posted) {
    spdlog::error("metering usage={} failed: {}", usage.id, posted.error().message);
  }
}

void Controller::charge_minimum_duration(model::UsageRecord& usage) {
  const int64_t minimum = pricing_.book().at(usage.started_at).minimum_billed_seconds;
  // The unrun seconds draw from the tenant's packages first, as if the run had gone on for them
  // (charge_minimum then charges only what the packages left); the run still ended when it did.
  const int64_t missing = minimum - usage.billed_seconds - usage.package_seconds;
  if (usage.kind == model::UsageKind::kRun && missing > 0) {
    const Timestamp ended = usage.metered_until;
    if (accounts_.packages().draw(usage, ended + Millis(missing * 1000))) {
      tracker_.touch_metering(usage);
    }
    usage.metered_until = ended;
  }
  post_usage(usage, billing::charge_minimum_due(pricing_.rates(), usage, minimum));
}

void Controller::open_stopped_disk(const Instance& instance) {
  const bool stopped = instance.state == InstanceState::kStopped ||
                       instance.state == InstanceState::kFailed ||
                       instance.state == InstanceState::kPreempted;
  if (!stopped || instance.spec.disk_gb <= 0 || instance.run == 0) return;
  model::UsageRecord disk = billing::usage_shape(instance.spec, instance.gpu_type);
  disk.kind = model::UsageKind::kStoppedDisk;
  disk.id = stopped_disk_id(instance);
  disk.tenant_id = instance.tenant_id;
  disk.instance_id = instance.id;
  disk.run = instance.run;
  disk.started_at = now();
  disk.metered_until = now();
  if (!usage_.contains(disk.id)) {  // a run ends once; a replayed report must not reopen it
    stopped_disks_.insert_or_assign(instance.id, disk.id);
    usage_by_tenant_[disk.tenant_id].push_back(disk.id);
    tracker_.touch_usage(usage_.emplace(disk.id, std::move(disk)).first->second);
  }
}

void Controller::close_stopped_disk(const Instance& instance) {
  const auto it = stopped_disks_.find(instance.id);
  if (it == stopped_disks_.end()) return;
  model::UsageRecord& disk = usage_.at(it->second);
  post_usage(disk, billing::meter_usage_due(pricing_.rates(), disk, now()));
  disk.ended_at = disk.metered_until;
  tracker_.touch_usage(disk);
  stopped_disks_.erase(it);
}

void Controller::meter_stopped_disks(Timestamp until) {
  for (const auto& [instance_id, usage_id] : stopped_disks_) {
    model::UsageRecord& disk = usage_.at(usage_id);
    post_usage(disk, billing::meter_usage_due(pricing_.rates(), disk, until));
  }
}

bool Controller::update_spot_market() {
  // GPUs of each type on ready nodes (quarantined ones are not capacity), and those held.
  MilliGpusByType capacity;
  for (const model::Node* node : nodes_.in_order()) {
    if (node->state != model::NodeState::kReady) continue;
    // A node's GPUs are nearly always of one type: the map is searched once per node, not once
    // per GPU (this runs every tick over every GPU).
    int64_t* count = nullptr;
    std::string_view counted;
    for (const auto& gpu : node->gpus) {
      if (quarantines_.quarantined(gpu.uuid)) continue;
      if (count == nullptr || gpu.type != counted) {
        count = &capacity[gpu.type];
        counted = gpu.type;
      }
      *count += model::kMilliPerGpu;
    }
  }
  MilliGpusByType held;
  for (const auto& [tenant, holding] : held_) {
    for (const auto& [type, milli] : holding.milli_by_type) held[type] += milli;
  }
  return pricing_.observe_utilisation(capacity, held);
}

void Controller::interrupt_spot_over_max_price() {
  for (auto& [id, instance] : instances_) {
    if (instance.spec.pricing != model::PricingModel::kSpot || !instance.spec.max_price ||
        (instance.state != InstanceState::kStarting && instance.state != InstanceState::kRunning)) {
      continue;
    }
    const auto price = pricing_.spot_price(instance.gpu_type);
    if (!price || *price <= *instance.spec.max_price) continue;
    // As a preemption: stopped with notice, state preempted once the process is gone, and said
    // in the tenant's events as any preemption is.
    instance.preempt_requested = true;
    std::string why = fmt::format(
        "interrupted: the spot price of {} ({}/h per GPU) rose above its max_price ({}/h)",
        instance.gpu_type, format_money(*price, options_.currency),
        format_money(*instance.spec.max_price, options_.currency));
    events_.record(instance.tenant_id, instance.id, model::event_kind::kInstancePreempted, why);
    request_stop(instance, std::move(why));
    spdlog::info("interrupted spot instance={} price={} max_price={}", instance.id, *price,
                 *instance.spec.max_price);
  }
}

}  // namespace gpurent::controller
