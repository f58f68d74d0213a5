#include "controller/metering.h"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "billing/billing.h"
#include "controller/internal.h"

namespace gpurent::controller {

using model::InstanceState;
using model::NodeState;

namespace {

// Bytes of ChangeSet::packed_text a charged run takes with today's ids (instance and tenant
// ids of 18 characters): a guess for reserving, not a limit.
constexpr size_t kPackedTextPerRun = 40;
// meter_runs()'s verdicts on a run besides "meter up to": not open any more (dropped from the
// index), or open but not metered now (not running, or its node is not ready).
constexpr Timestamp kEnded = Timestamp::min();
constexpr Timestamp kNotNow = Timestamp::max();

std::string run_id(const model::Instance& instance) {
  return fmt::format("{}/{}", instance.id, instance.run);
}

std::string stopped_disk_id(const model::Instance& instance) {
  return fmt::format("{}/{}/disk", instance.id, instance.run);
}

}  // namespace

void Metering::restore(Snapshot& snapshot) {
  for (auto& usage : snapshot.usage) {
    if (usage.kind == model::UsageKind::kStoppedDisk && !usage.ended_at) {
      stopped_disks_.emplace(usage.instance_id, usage.id);
    }
    usage_by_tenant_[usage.tenant_id].push_back(usage.id);
    usage_.emplace(usage.id, std::move(usage));
  }
}

void Metering::reindex(IndexedMap<model::Instance>& instances) {
  metered_runs_.clear();
  for (auto& [id, instance] : instances) {
    model::UsageRecord* usage = current_record(instance);
    if (usage && !usage->ended_at) index_run(instance, *usage);
  }
}

std::vector<const model::UsageRecord*> Metering::usage(std::string_view tenant_id) const {
  return detail::listed_under(usage_by_tenant_, tenant_id, usage_);
}

const model::UsageRecord* Metering::current(const model::Instance& instance) const {
  const auto it = usage_.find(run_id(instance));
  return it == usage_.end() ? nullptr : &it->second;
}

model::UsageRecord* Metering::current_record(const model::Instance& instance) {
  const auto it = usage_.find(run_id(instance));
  return it == usage_.end() ? nullptr : &it->second;
}

std::optional<Micros> Metering::price_per_gpu_hour(const model::Instance& instance) const {
  if (instance.run > 0) {
    const model::UsageRecord* usage = current(instance);
    if (usage && !usage->ended_at) return usage->price_per_gpu_hour;
  }
  if (!instance.gpu_type.empty()) {
    return billing::gpu_price(c_.pricing.rates(), instance.gpu_type, instance.spec.pricing, now());
  }
  const auto dearest = c_.pricing.dearest_type(instance.spec);
  if (!dearest) return std::nullopt;
  return dearest->per_gpu_hour;
}

model::UsageRecord& Metering::add(model::UsageRecord record) {
  usage_by_tenant_[record.tenant_id].push_back(record.id);
  model::UsageRecord& added = usage_.emplace(record.id, std::move(record)).first->second;
  c_.tracker.touch_usage(added);
  return added;
}

void Metering::open_run(model::Instance& instance, Timestamp started) {
  model::UsageRecord usage = billing::usage_shape(instance.spec, instance.gpu_type);
  usage.id = run_id(instance);
  usage.tenant_id = instance.tenant_id;
  usage.instance_id = instance.id;
  usage.run = instance.run;
  usage.gpu_milli = instance.gpu_milli;
  usage.price_per_gpu_hour =
      billing::gpu_price(c_.pricing.rates(), instance.gpu_type, instance.spec.pricing, started)
          .value_or(0);
  usage.started_at = started;
  usage.metered_until = started;
  index_run(instance, add(std::move(usage)));
}

void Metering::meter(const model::Instance& instance, Timestamp until) {
  model::UsageRecord* usage = current_record(instance);
  if (usage && !usage->ended_at) {
    meter_run(*usage, until, c_.accounts.tenant_names(usage->tenant_id));
  }
}

void Metering::close_run(const model::Instance& instance, Timestamp until, bool cut_short) {
  model::UsageRecord* usage = current_record(instance);
  if (!usage || usage->ended_at) return;
  meter_run(*usage, until, c_.accounts.tenant_names(usage->tenant_id));
  if (!cut_short) charge_minimum_duration(*usage);
  usage->ended_at = usage->metered_until;
  c_.tracker.touch_usage(*usage);
}

void Metering::skip_silence(const model::Instance& instance, Timestamp now) {
  model::UsageRecord* usage = current_record(instance);
  if (!usage || usage->ended_at) return;
  usage->metered_until = std::max(usage->metered_until, now);
  c_.tracker.touch_usage(*usage);
}

void Metering::meter_run(model::UsageRecord& usage, Timestamp until,
                         billing::Ledger::TenantNames names) {
  // Prepaid packages cover the interval's first seconds; the price applies to the rest.
  if (c_.accounts.packages().draw(usage, until)) c_.tracker.touch_metering(usage);
  post(usage, billing::meter_usage_due(c_.pricing.metering_rates(), usage, until), names);
}

void Metering::post(model::UsageRecord& usage, Micros due) {
  post(usage, due, c_.accounts.tenant_names(usage.tenant_id));
}

void Metering::post(model::UsageRecord& usage, Micros due, billing::Ledger::TenantNames names) {
  c_.tracker.touch_metering(usage);
  if (due <= 0) return;
  if (auto posted = c_.accounts.post_usage(usage, due, names); !posted) {
    spdlog::error("metering usage={} failed: {}", usage.id, posted.error().message);
  }
}

void Metering::charge_minimum_duration(model::UsageRecord& usage) {
  const int64_t minimum = c_.pricing.book().at(usage.started_at).minimum_billed_seconds;
  // The unrun seconds draw from the tenant's packages first, as if the run had gone on for them
  // (charge_minimum then charges only what the packages left); the run still ended when it did.
  const int64_t missing = minimum - usage.billed_seconds - usage.package_seconds;
  if (usage.kind == model::UsageKind::kRun && missing > 0) {
    const Timestamp ended = usage.metered_until;
    if (c_.accounts.packages().draw(usage, ended + Millis(missing * 1000))) {
      c_.tracker.touch_metering(usage);
    }
    usage.metered_until = ended;
  }
  post(usage, billing::charge_minimum_due(c_.pricing.rates(), usage, minimum));
}

void Metering::open_stopped_disk(const model::Instance& instance) {
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
  if (usage_.contains(disk.id)) return;  // a run ends once; a replayed report must not reopen it
  stopped_disks_.insert_or_assign(instance.id, disk.id);
  add(std::move(disk));
}

void Metering::close_stopped_disk(const model::Instance& instance) {
  const auto it = stopped_disks_.find(instance.id);
  if (it == stopped_disks_.end()) return;
  model::UsageRecord& disk = usage_.find(it->second)->second;
  post(disk, billing::meter_usage_due(c_.pricing.rates(), disk, now()));
  disk.ended_at = disk.metered_until;
  c_.tracker.touch_usage(disk);
  stopped_disks_.erase(it);
}

void Metering::index_run(model::Instance& instance, model::UsageRecord& usage) {
  metered_runs_.push_back({&instance, &usage, &c_.nodes.at(instance.node_id),
                           c_.accounts.tenant_names(usage.tenant_id)});
}

void Metering::meter_all(Timestamp t) {
  meter_runs(t);
  for (const auto& [instance_id, usage_id] : stopped_disks_) {
    model::UsageRecord& disk = usage_.find(usage_id)->second;
    post(disk, billing::meter_usage_due(c_.pricing.rates(), disk, t));
  }
}

void Metering::meter_runs(Timestamp t) {
  // About one charge per run: grown once here, not by doubling and moving as they are posted.
  c_.changes.usage_charges.reserve(c_.changes.usage_charges.size() + metered_runs_.size());
  c_.changes.packed_text.reserve(c_.changes.packed_text.size() +
                                 metered_runs_.size() * kPackedTextPerRun);
  c_.tracker.expect_metering(metered_runs_.size());
  // Two passes. The first only reads what decides whether and up to when each run is metered:
  // its instance (scattered through a map of 100,000) and node. Its loads do not depend on one
  // another, so the memory answers many of them at once; read between two runs' metering, each
  // waited alone. Metering changes none of what it reads.
  const size_t count = metered_runs_.size();
  metered_until_.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const MeteredRun& run = metered_runs_[i];
    const InstanceState state = run.instance->state;
    // A run's node is the one it was placed on: placing again starts a new run (instance.run).
    const bool open = !run.usage->ended_at && run.usage->run == run.instance->run;
    const bool metered = state == InstanceState::kRunning || state == InstanceState::kStopping;
    // Up to the node's last good report, never past it: a node that then goes silent is not
    // billed for the silence.
    const bool ready = run.node->state == NodeState::kReady;
    metered_until_[i] = !open                ? kEnded
                        : !metered || !ready ? kNotNow
                                             : std::min(t, run.node->last_heartbeat);
  }
  // The second meters the open runs and drops the ended ones.
  size_t kept = 0;
  for (size_t i = 0; i < count; ++i) {
    const Timestamp until = metered_until_[i];
    if (until == kEnded) continue;
    const MeteredRun run = metered_runs_[i];
    metered_runs_[kept++] = run;
    if (until != kNotNow) meter_run(*run.usage, until, run.names);
  }
  metered_runs_.resize(kept);
}

}  // namespace gpurent::controller
