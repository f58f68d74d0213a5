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
// How many runs ahead meter_runs() asks for the objects of a run (fetch_objects()): about what
// the loop does while memory answers (measured: bench/RESULTS.md, "Billing: one metering tick").
constexpr size_t kFetchAhead = 8;
constexpr size_t kCacheLine = 64;

void Controller::meter_run(model::UsageRecord& usage, Timestamp until,
                           billing::Ledger::TenantNames names) {
  // Prepaid packages cover the interval's first seconds; the price applies to the rest.
  draw_packages(usage, until);
  post_usage(usage, billing::meter_usage_due(metering_rates(), usage, until), names);
}

void Controller::index_run(model::Instance& instance, model::UsageRecord& usage) {
  metered_runs_.push_back(
      {&instance, &usage, &nodes_.at(instance.node_id), ledger_.tenant_names(usage.tenant_id)});
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
  // One pass meters the open runs and drops the ended ones, so that each run's objects are read
  // from memory once per tick. They lie scattered through three maps and the usage record's
  // strings, and waiting for them was most of this loop's time: the objects of the runs a few
  // places ahead are asked for while this one is metered (addresses only: nothing is read).
  const auto fetch_objects = [](const MeteredRun& run) {
    __builtin_prefetch(&run.instance->state);
    __builtin_prefetch(&run.instance->run);
    __builtin_prefetch(&run.node->state);
    __builtin_prefetch(&run.node->last_heartbeat);
    const auto* usage = reinterpret_cast<const char*>(run.usage);
    for (size_t line = 0; line < sizeof(model::UsageRecord); line += kCacheLine) {
      __builtin_prefetch(usage + line);
    }
  };
  // The record's strings, once the record itself (asked for kFetchAhead / 2 runs earlier) is in.
  const auto fetch_strings = [](const MeteredRun& run) {
    __builtin_prefetch(run.usage->instance_id.data());
    __builtin_prefetch(run.usage->tenant_id.data());
  };
  const size_t count = metered_runs_.size();
  size_t kept = 0;
  for (size_t i = 0; i < count; ++i) {
    if (i + kFetchAhead < count) fetch_objects(metered_runs_[i + kFetchAhead]);
    if (i + kFetchAhead / 2 < count) fetch_strings(metered_runs_[i + kFetchAhead / 2]);
    const MeteredRun run = metered_runs_[i];
    // A run's node is the one it was placed on: placing again starts a new run (instance.run).
    if (run.usage->ended_at || run.usage->run != run.instance->run) continue;
    metered_runs_[kept++] = run;
    const InstanceState state = run.instance->state;
    if (state != InstanceState::kRunning && state != InstanceState::kStopping) continue;
    // Up to the node's last good report, never past it: a node that then goes silent is not
    // billed for the silence.
    if (run.node->state == NodeState::kReady) {
      meter_run(*run.usage, std::min(t, run.node->last_heartbeat), run.names);
    }
  }
  metered_runs_.resize(kept);
}

}  // namespace gpurent::controller
