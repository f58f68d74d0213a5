// `gpurent agent --sim-nodes N`: one process that stands in for N simulated GPU nodes, for
// scheduler benchmarks and tests of large fleets on one machine.
//
// Each node is a complete node as the server sees it. Node i is named sim_node_name(prefix, i)
// (prefix: --name, else the host name), has the GPUs of --sim-gpus (default kDefaultSimGpus) with
// their simulated topology and its own UUIDs, the agent's --fabric-group and --labels, and the
// simulated resources below. Its identity and GPU ids live in <data_dir>/sim-nodes/<i>/
// (identity.json, sim_gpus.json, as for a single node), so a restarted fleet reuses them and
// registers nothing twice; only nodes without an identity need the join token.
//
// Each node watches its desired state on a keep-alive connection of its own, runs its workloads
// in a SimWorkloads (no processes: see sim_workloads.h), and reports at once after every change and
// otherwise about every kSimReportInterval (each node's period differs a little, so that nodes
// started together do not keep reporting together). Reports and log uploads share
// kSimPoolConnections connections (real agents have one each: with 64, a report waits for a group
// commit while at most 63 others do, which bounded how fast a thousand nodes could say their
// new work runs); registrations have kSimRegisterConnections of their own (which
// also bounds the registrations in flight), so that the reports of nodes already registered never
// wait behind thousands of queued registrations (they would miss the server's heartbeat timeout
// and be marked down). The server thus sees N + kSimPoolConnections + kSimRegisterConnections
// connections, and accepts 12,000 by default: hence kMaxSimNodes. The open-file limit is raised to
// what that needs (up to the hard limit).
//
// Telemetry (with --telemetry-interval > 0, the default 1 s): each node's GPUs are simulated as a
// single agent's are (telemetry/sim_source.h), driven by its running workloads, but sampled only
// when the node reports: each report carries one sample per GPU for every tick since the previous
// one (about 3 per GPU at 1 Hz). A node that cannot report keeps kSimTelemetryBacklogTicks ticks.
// Faults are injected through <data_dir>/sim_faults.json (telemetry/sim_faults.h; an entry's
// "node" is the node's index), re-read every telemetry interval.
//
// Threads: the caller's runs every node as coroutines on one io_context; kSimFileThreads threads
// do the blocking file work (the fsyncs of identities and GPU ids), so that it never stalls the
// network. Nothing is shared between the two but the files of one node at a time.
//
// Failures: as the single-node agent, each call that fails is retried after retry_delay(), never
// fatal, with one exception: a registration the server refuses for good (a bad join token: any
// error other than unavailable or internal) ends the fleet with exit code 1, as it ends a single
// agent's start. Errors are logged once per kind when they start, then as counts every
// kSimLogInterval, so a server restart yields a few lines, not one per node.
//
// run_sim_fleet() returns (0) after SIGINT or SIGTERM, once every node's coroutine has finished:
// sockets are closed and timers cancelled, nothing is left half-written. A restarted fleet has no
// runs to re-adopt: the server's desired state starts them again.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "agent/agent.h"

namespace gpurent::agent {

inline constexpr int kMaxSimNodes = 10'000;
inline constexpr size_t kSimPoolConnections = 256;
inline constexpr size_t kSimRegisterConnections = 16;
inline constexpr int kSimFileThreads = 4;
inline constexpr std::chrono::seconds kSimReportInterval{3};  // the server's timeout is 10 s
inline constexpr std::chrono::seconds kSimLogInterval{10};
// Each node's telemetry backlog, in ticks of all its GPUs (kept small: 10,000 nodes share one
// process's memory), and XID events.
inline constexpr size_t kSimTelemetryBacklogTicks = 10;
inline constexpr size_t kSimTelemetryBacklogXids = 64;
// Simulated resources per GPU: an HGX H100 node has 8 GPUs, about 112 cores and 2 TB of memory.
inline constexpr int kSimCpusPerGpu = 14;
inline constexpr int64_t kSimMemoryMbPerGpu = 256 * 1024;
inline constexpr int64_t kSimDiskGbPerGpu = 3'500;

// "<prefix>-sim-0042": four digits at least, so names sort in index order up to 10,000 nodes.
std::string sim_node_name(std::string_view prefix, int index);

// Runs options.sim_nodes simulated nodes until SIGINT/SIGTERM. Returns the process exit code:
// 0 after a signal, 1 when the fleet cannot start (bad options, unreadable data directory, a
// missing or refused join token).
int run_sim_fleet(const AgentOptions& options);

}  // namespace gpurent::agent
