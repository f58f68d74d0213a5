// The controller's side of pricing: operators' price-book versions, the spot market's repricing
// and max_price interruptions, estimates, and the metering of what billing/billing.h prices (the
// minimum duration of a run, stopped instances' disks).
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
                                                   billing::PriceChange change) {
  if (!caller.is_operator()) return fail(forbidden("set prices"));
  // A type exists if the catalog knows it or a node has one (an unknown model, priced by hand).
  const auto known_type = [this](std::string_view type) {
    if (model::find_gpu_type(type)) return true;
    return std::any_of(nodes_.begin(), nodes_.end(), [&](const auto& entry) {
      return std::any_of(entry.second.gpus.begin(), entry.second.gpus.end(),
                         [&](const model::Gpu& gpu) { return gpu.type == type; });
    });
  };
  const bool first_change = prices_.history().size() == 1;
  GPURENT_TRY(version, prices_.set(change, now(), known_type));
  // Version 1 is not stored until there is a second: it is then written as it was, so that a
  // later release with other catalog defaults cannot reprice the past.
  if (first_change) changes_.price_versions.push_back(prices_.history().front());
  changes_.price_versions.push_back(version);
  spdlog::info("price version={} effective_at={} set by key={}", version.version,
               format_rfc3339(version.effective_at), caller.key_id);
  // Work queued for a type that just got a price may now be placed.
  queue_changed_ = true;
  return version;
}

Result<billing::Estimate> Controller::estimate(const model::InstanceSpec& spec) const {
  GPURENT_CHECK(validate_spec(spec, 1));
  // The acceptable type that costs most now, as check_funds prices a launch.
  std::optional<std::pair<Micros, std::string>> priciest;
  const auto consider = [&](std::string_view type) {
    const auto price = billing::gpu_price(rates(), type, spec.pricing, now());
    if (price && (!priciest || *price > priciest->first)) priciest.emplace(*price, type);
  };
  if (!spec.gpu_types.empty()) {
    for (const auto& type : spec.gpu_types) consider(type);
  } else {
    for (const auto& type : model::gpu_catalog()) {
      if (type.memory_mb >= int64_t{spec.min_gpu_memory_gb} * kMibPerGib) consider(type.slug);
    }
  }
  return billing::estimate(rates(), spec,
                           priciest ? priciest->second : model::requested_gpu_type(spec), now());
}

void Controller::post_usage(model::UsageRecord& usage, Micros due) {
  post_usage(usage, due, accounts_.tenant_names(usage.tenant_id));
}

void Controller::post_usage(model::UsageRecord& usage, Micros due,
                            billing::Ledger::TenantNames names) {
  touch_metering(usage);
  if (due <= 0) return;
  if (auto posted = accounts_.post_usage(usage, due, names); !posted) {
    spdlog::error("metering usage={} failed: {}", usage.id, posted.error().message);
  }
}

void Controller::charge_minimum_duration(model::UsageRecord& usage) {
  const int64_t minimum = prices_.at(usage.started_at).minimum_billed_seconds;
  // The unrun seconds draw from the tenant's packages first, as if the run had gone on for them
  // (charge_minimum then charges only what the packages left); the run still ended when it did.
  const int64_t missing = minimum - usage.billed_seconds - usage.package_seconds;
  if (usage.kind == model::UsageKind::kRun && missing > 0) {
    const Timestamp ended = usage.metered_until;
    if (accounts_.draw_packages(usage, ended + Millis(missing * 1000))) touch_metering(usage);
    usage.metered_until = ended;
  }
  post_usage(usage, billing::charge_minimum_due(rates(), usage, minimum));
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
    touch_usage(usage_.emplace(disk.id, std::move(disk)).first->second);
  }
}

void Controller::close_stopped_disk(const Instance& instance) {
  const auto it = stopped_disks_.find(instance.id);
  if (it == stopped_disks_.end()) return;
  model::UsageRecord& disk = usage_.at(it->second);
  post_usage(disk, billing::meter_usage_due(rates(), disk, now()));
  disk.ended_at = disk.metered_until;
  touch_usage(disk);
  stopped_disks_.erase(it);
}

void Controller::meter_stopped_disks(Timestamp until) {
  for (const auto& [instance_id, usage_id] : stopped_disks_) {
    model::UsageRecord& disk = usage_.at(usage_id);
    post_usage(disk, billing::meter_usage_due(rates(), disk, until));
  }
}

bool Controller::update_spot_market() {
  // GPUs of each type on ready nodes (quarantined ones are not capacity), and the thousandths of
  // them held by anyone.
  std::map<std::string, int64_t, std::less<>> total;
  for (const model::Node* node : nodes_.in_order()) {
    if (node->state != model::NodeState::kReady) continue;
    // A node's GPUs are nearly always of one type: the map is searched once per node, not once
    // per GPU (this runs every tick over every GPU).
    int64_t* count = nullptr;
    std::string_view counted;
    for (const auto& gpu : node->gpus) {
      if (quarantined(gpu.uuid)) continue;
      if (count == nullptr || gpu.type != counted) {
        count = &total[gpu.type];
        counted = gpu.type;
      }
      *count += model::kMilliPerGpu;
    }
  }
  std::map<std::string, int64_t, std::less<>> held;
  for (const auto& [tenant, holding] : held_) {
    for (const auto& [type, milli] : holding.milli_by_type) held[type] += milli;
  }
  bool moved = false;
  for (const auto& [type, capacity] : total) {
    const auto it = held.find(type);
    const int64_t in_use = it == held.end() ? 0 : it->second;
    // Work on a node that went down still holds its GPUs: a full type is full, not over-full.
    const int utilisation =
        static_cast<int>(std::min<int64_t>(model::kPermille, in_use * model::kPermille / capacity));
    if (auto point = spot_.observe(type, utilisation, now(), prices_)) {
      changes_.spot_prices.push_back(std::move(*point));
      moved = true;
    }
  }
  // A type whose last ready node went away is idle from now on.
  for (const auto& type : spot_.types()) {
    if (total.contains(type)) continue;
    if (auto point = spot_.observe(type, 0, now(), prices_)) {
      changes_.spot_prices.push_back(std::move(*point));
      moved = true;
    }
  }
  return moved;
}

bool Controller::spot_within_max_price(const model::InstanceSpec& spec) const {
  if (spec.pricing != model::PricingModel::kSpot || !spec.max_price) return true;
  const auto affordable = [&](std::string_view type) {
    const auto price = spot_.price_at(prices_, type, now());
    return price && *price <= *spec.max_price;
  };
  if (!spec.gpu_types.empty())
    return std::any_of(spec.gpu_types.begin(), spec.gpu_types.end(), affordable);
  return std::any_of(model::gpu_catalog().begin(), model::gpu_catalog().end(),
                     [&](const auto& type) {
                       return type.memory_mb >= int64_t{spec.min_gpu_memory_gb} * kMibPerGib &&
                              affordable(type.slug);
                     });
}

void Controller::interrupt_spot_over_max_price() {
  for (auto& [id, instance] : instances_) {
    if (instance.spec.pricing != model::PricingModel::kSpot || !instance.spec.max_price ||
        (instance.state != InstanceState::kStarting && instance.state != InstanceState::kRunning)) {
      continue;
    }
    const auto price = spot_.price_at(prices_, instance.gpu_type, now());
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
