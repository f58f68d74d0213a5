// The agents' clock skew (NodeRegistry::clock_skew_ms).
//
// Each report carries the agent's wall clock when it was sent (NodeReport::sent_at_ms); the skew is
// that minus the server's Clock when apply_report takes the report. Nothing cancels the delay
// between the two readings (the network, the server's HTTP queue and the wait for the controller
// thread): the measured skew is the true skew minus that one-way delay, so it is never too high,
// and too low by at most the delay (milliseconds on a healthy network and server, well under the
// default 2 s alert limit; a loaded server's queue adds to it). Only the latest report counts: no
// smoothing, so a fixed clock shows at the next report.
//
// The skew is kept per node in memory (a restarted server measures again at the next report),
// shown in the node view, exported in GET /metrics (gpurent_node_clock_skew_seconds) and observed
// by the built-in agent_clock_skew alert rule as |skew| (monitoring.cc).
#include "controller/controller.h"

namespace gpurent::controller {

void Controller::record_clock_skew(const model::Node& node, int64_t sent_at_ms) {
  nodes_.record_clock_skew(node.id, sent_at_ms - to_unix_ms(now()));
}

}  // namespace gpurent::controller
