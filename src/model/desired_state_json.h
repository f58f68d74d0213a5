// A DesiredState read from its JSON text (the answer to GET /v1/agent/desired) without a JSON
// tree: the agent's counterpart of read_node_report (node_report_json.h).
//
// An agent reads one desired state per change of its node, which costs little either way; the
// simulated fleet (`gpurent agent --sim-nodes N`) reads every node's on one thread, a thousand at
// once when a large array lands. This reader walks the text once with simdjson's On-Demand parser
// (json_reader.h) instead of building a tree.
//
// The JSON is what desired_state_json (codec.h) writes. Required members: node_id, generation,
// workloads, and each workload's instance_id, run, should_run, command, env and gpus, and every
// member of a workload's job placement and of a volume mount; the others may be absent (an older
// server's answer). Unknown members are skipped; a member given twice counts as its last value.
// Errors as values: "malformed_json" (not one JSON object, too deep, text after it) and
// "invalid_message" (a required member missing, a member of the wrong type or out of range; the
// message names the member).
//
// Thread-safety: reentrant (each thread keeps its own parser).
#pragma once

#include <string_view>

#include "common/result.h"
#include "model/agent_protocol.h"

namespace gpurent::model {

Result<DesiredState> read_desired_state(std::string_view json);

}  // namespace gpurent::model
