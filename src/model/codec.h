// Full-fidelity JSON forms of the model types, used by the store and the agent protocol (and by
// nothing that faces a tenant: those views live in the server and leave out hashes and
// internals). Each type's field table (beside the type) says its form; nlohmann's to_json and
// from_json follow from it (model/json_form.h: times as integer milliseconds; from_json throws on
// malformed input, and the store reports a corrupt record as an Error), and so do the direct
// writers below (common/json_writer.h), for the documents written on hot paths.
#pragma once

#include <functional>
#include <string_view>

#include "common/json.h"
#include "model/accounts.h"
#include "model/agent_protocol.h"
#include "model/audit.h"
#include "model/event.h"
#include "model/gpu_quarantine.h"
#include "model/instance.h"
#include "model/job.h"
#include "model/json_form.h"
#include "model/ledger.h"
#include "model/node.h"
#include "model/template.h"
#include "model/tenant.h"
#include "model/volume.h"

namespace gpurent::model {

// Exactly Json(v).dump() of an instance: the store writes every changed instance on every commit.
std::string instance_json(const Instance& v);
// An instance's row in the store: instance_json's form, except that a job's member leaves out its
// spec, which its job determines (job_member_spec): an array member's row is less than half the
// size, and the rows of an array are most of what its commits write (bench/RESULTS.md).
std::string instance_row_json(const Instance& v);
// Reads a row of either form (rows written before instance_row_json are whole instances, and
// before the gang port was a number hold it as text); job_of finds a member's job (nullptr: none,
// which throws, as a corrupt record does).
Instance instance_from_row(Json row, const std::function<const Job*(std::string_view)>& job_of);
// Exactly Json(values).dump(): a job task's members, which the store writes for every task of an
// array when it is created.
std::string strings_json(const std::vector<std::string>& values);
// Exactly Json(v).dump() of a usage record: the store writes one for every run that starts.
std::string usage_record_json(const UsageRecord& v);
// Exactly Json(v).dump() of a desired state (the line or long-poll answer of every woken node).
std::string desired_state_json(const DesiredState& v);
// A node's report (the body of POST /v1/agent/report): a simulated fleet writes a thousand in the
// burst that starts an array, where nlohmann's tree was the largest part of its CPU. Read back by
// read_node_report (node_report_json.h). sent_at_ms, when given, stands for v.sent_at_ms (the
// agent stamps a report as it sends it). The strings come from the node, so a byte that starts no
// valid UTF-8 sequence is written as U+FFFD.
std::string node_report_json(const NodeReport& v, std::optional<int64_t> sent_at_ms = std::nullopt);

}  // namespace gpurent::model
