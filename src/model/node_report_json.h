// A NodeReport read from its JSON text (the body of POST /v1/agent/report) without a JSON tree.
//
// Every node reports every few seconds, so at thousands of nodes reading reports is a large share
// of a server thread; a JSON tree per report is mostly allocations. This reader walks the text
// once with simdjson's On-Demand parser and fills the NodeReport directly (bench/RESULTS.md).
//
// The JSON is what to_json(NodeReport) writes (agent_protocol.h). Members it does not know are
// skipped; a member given twice counts as its last value. Errors, as values:
//   - "malformed_json": not JSON, not one object, nested deeper than kMaxJsonDepth, or text after
//     the object (the same code parse_json_object gives);
//   - "invalid_message": a required member missing (applied_generation, workloads, and a
//     workload's instance_id, run, phase), a member of the wrong type or out of range, an unknown
//     phase, or a telemetry frame that does not decode. The message names the member.
//
// Telemetry: with `telemetry_text` null, the frame is decoded into report.telemetry (and refused as
// from_json(TelemetryBatch) refuses it). Otherwise the member's text (the base64 of the frame) is
// moved there undecoded and report.telemetry stays empty: the server decodes it on its telemetry
// thread. A telemetry member that is not a string (older agents' column form) is refused either
// way, saying to upgrade the agent.
//
// Thread-safety: reentrant (each thread keeps its own parser).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "model/agent_protocol.h"

namespace gpurent::model {

Result<NodeReport> read_node_report(std::string_view json,
                                    std::optional<std::string>* telemetry_text = nullptr);

}  // namespace gpurent::model
