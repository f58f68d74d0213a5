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

void Controller::meter_run(model::UsageRecord& usage, Timestamp until,
                           billing::Ledger::TenantNames names) {
  // Prepaid packages cover the interval's first seconds; the price applies to the rest.
  draw_packages(usage, until);
  post_usage(usage, billing::meter_usage_due(rates(), usage, until), names);
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
  // A run's node is the one it was placed on: placing again starts a new run (instance.run).
  const auto ended = [](const MeteredRun& run) {
    return run.usage->ended_at || run.usage->run != run.instance->run;
  };
  std::erase_if(metered_runs_, ended);
  // About one charge per run: grown once here, not by doubling and moving as they are posted.
  changes_.usage_charges.reserve(changes_.usage_charges.size() + metered_runs_.size());
  changes_.packed_text.reserve(changes_.packed_text.size() +
                               metered_runs_.size() * kPackedTextPerRun);
  for (const MeteredRun& run : metered_runs_) {
    const InstanceState state = run.instance->state;
    if (state != InstanceState::kRunning && state != InstanceState::kStopping) continue;
    // Up to the node's last good report, never past it: a node that then goes silent is not
    // billed for the silence.
    if (run.node->state == NodeState::kReady) {
      meter_run(*run.usage, std::min(t, run.node->last_heartbeat), run.names);
    }
  }
}

}  // namespace gpurent::controller
