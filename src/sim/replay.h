// Time-based replay: the real controller (and through it the scheduler), driven by a virtual
// clock and simulated nodes.
//
// Every node registers with a join token like a real agent would; every work item is submitted
// at its arrival time through the controller's own commands (an instance, or a job when it asks
// for several nodes), by its tenant (tenants are created with ample credit). Each node runs the
// simulated agent (agent/sim_workloads.h, through agent::converge_and_report), which starts a
// placed workload at once, reports it running, and reports it exited (0) once it has run for its
// item's duration, or exited (143) as soon as the controller asks it to stop (preemption). Time
// jumps from event to event (arrivals, the agents' exits, one at a time), with a controller tick
// at each; heartbeats never lapse.
//
// The report: placed (items that ever ran), failed (never placed by the end), preempted
// (instance runs ended by preemption), GPU allocation at the end and averaged over time, the
// wait between arrival and first start (p50/p99), the fragmentation at the end, decisions per
// second (wall clock), and the number of invariant checks: the controller's invariants are
// checked every (nodes + work items) / 64 steps (every step on small runs) and at the end, and the
// first failure ends the run with an Error. The controller runs without monitoring: the simulated
// agents report no telemetry, so no alert could fire.
//
// Approximations, because the controller's requests are in whole cores and whole GiB: CPU and
// memory requests are rounded up to those units. The run is deterministic for a seed.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "sched/cluster.h"
#include "sim/inputs.h"
#include "sim/report.h"

namespace gpurent::sim {

struct ReplayOptions {
  uint64_t seed = 42;
  sched::Policy policy = sched::Policy::kBinpack;
};

Result<SimReport> run_replay(const SimInput& input, const ReplayOptions& options);

}  // namespace gpurent::sim
