// The billing tick's metering of running work: an index of the open runs, so that a tick over
// 100,000 runs walks one vector instead of looking every instance's node and usage record up by
// name (bench/RESULTS.md, "Billing: one metering tick").
#include <algorithm>

#include "controller/controller.h"

namespace gpurent::controller {

using model::InstanceState;
using model::NodeState;

// Bytes of ChangeSet::packed_text a charged run takes with today's ids (instance and tenant
// ids of 18 characters): a guess for reserving, not a limit.
constexpr size_t kPackedTextPerRun = 40;
// meter_runs()'s verdicts on a run besides "meter up to": not open any more (dropped from the
// index), or open but not metered now (not running, or its node is not ready).
constexpr Timestamp kEnded = Timestamp::min();
constexpr Timestamp kNotNow = Timestamp::max();

void Controller::meter_run(model::UsageRecord& usage, Timestamp until,
                           billing::Ledger::TenantNames names) {
  // Prepaid packages cover the interval's first seconds; the price applies to the rest.
  if (accounts_.packages().draw(usage, until)) tracker_.touch_metering(usage);
  post_usage(usage, billing::meter_usage_due(pricing_.metering_rates(), usage, until), names);
}

void Controller::index_run(model::Instance& instance, model::UsageRecord& usage) {
  metered_runs_.push_back(
      {&instance, &usage, &nodes_.at(instance.node_id), accounts_.tenant_names(usage.tenant_id)});
}

void Controller::reindex_runs() {
  metered_runs_.clear();
  for (auto& [id, instance] : instances_) {
    model::UsageRecord* usage = current_usage(instance);
    if (usage && !usage->ended_at) index_run(instance, *usage);
  }
}

void Controller::meter_runs(Timestamp t) {
  // About one charge per run: grown once here, not by doubling and moving as they are posted.
  changes_.usage_charges.reserve(changes_.usage_charges.size() + metered_runs_.size());
  changes_.packed_text.reserve(changes_.packed_text.size() +
                               metered_runs_.size() * kPackedTextPerRun);
  tracker_.expect_metering(metered_runs_.size());
  // Two passes. The first only reads what decides whether and up to when each run is metered:
  // its instance (scattered through a map of 100,000) and node. Its loads do not depend on one
  // another, so the memory answers many of them at once; read between two runs' metering, as
  // one pass did, each waited alone (most of this loop's time, even with software prefetches:
  // bench/RESULTS.md, "Billing: one metering tick"). Metering changes none of what it reads.
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
