// Full-fidelity JSON forms of the model types, used by the store (and by nothing that faces a
// tenant: those views live in the server and leave out hashes and internals). Timestamps are
// integer milliseconds. from_json throws nlohmann's exceptions on malformed input; the store
// catches them at its call site and reports a corrupt record as an Error.
#pragma once

#include <functional>
#include <string_view>

#include "common/json.h"
#include "model/agent_protocol.h"
#include "model/event.h"
#include "model/instance.h"
#include "model/job.h"
#include "model/ledger.h"
#include "model/node.h"
#include "model/template.h"
#include "model/tenant.h"
#include "model/volume.h"

namespace gpurent::model {

void to_json(Json& j, const Gpu& v);
void from_json(const Json& j, Gpu& v);
void to_json(Json& j, const Node& v);
void from_json(const Json& j, Node& v);
void to_json(Json& j, const InstanceSpec& v);
void from_json(const Json& j, InstanceSpec& v);
void to_json(Json& j, const Instance& v);
void from_json(const Json& j, Instance& v);
void to_json(Json& j, const JobTask& v);
void from_json(const Json& j, JobTask& v);
void to_json(Json& j, const Job& v);
void from_json(const Json& j, Job& v);
void to_json(Json& j, const Reservation& v);
void from_json(const Json& j, Reservation& v);
void to_json(Json& j, const Quota& v);
void from_json(const Json& j, Quota& v);
void to_json(Json& j, const Template& v);
void from_json(const Json& j, Template& v);
void to_json(Json& j, const Tenant& v);
void from_json(const Json& j, Tenant& v);
void to_json(Json& j, const ApiKey& v);
void from_json(const Json& j, ApiKey& v);
void to_json(Json& j, const JoinToken& v);
void from_json(const Json& j, JoinToken& v);
void to_json(Json& j, const IdempotencyRecord& v);
void from_json(const Json& j, IdempotencyRecord& v);
void to_json(Json& j, const UsageRecord& v);
void from_json(const Json& j, UsageRecord& v);
void to_json(Json& j, const Volume& v);
void from_json(const Json& j, Volume& v);
void to_json(Json& j, const Event& v);
void from_json(const Json& j, Event& v);

// Exactly Json(v).dump() of an instance, written directly: the store writes every changed
// instance on every commit, and building nlohmann's tree first cost several times as much.
// (Strings are assumed valid UTF-8, as everything parsed from JSON is.)
std::string instance_json(const Instance& v);
// An instance's row in the store: instance_json's form, except that a job's member leaves out its
// spec, which its job determines (job_member_spec): an array member's row is less than half the
// size, and the rows of an array are most of what its commits write (bench/RESULTS.md).
std::string instance_row_json(const Instance& v);
// Reads a row of either form (rows written before instance_row_json are whole instances); job_of
// finds a member's job (nullptr: none, which throws, as a corrupt record does).
Instance instance_from_row(Json row, const std::function<const Job*(std::string_view)>& job_of);
// Exactly Json(values).dump(): a job task's members, which the store writes for every task of an
// array when it is created.
std::string strings_json(const std::vector<std::string>& values);
// Exactly Json(v).dump() of a usage record: the store writes one for every run that starts.
std::string usage_record_json(const UsageRecord& v);
// Exactly Json(v).dump() of a desired state (the line or long-poll answer of every woken node).
std::string desired_state_json(const DesiredState& v);
// A node's report (the body of POST /v1/agent/report), written directly: a simulated fleet writes
// a thousand in the burst that starts an array, where nlohmann's tree was the largest part of its
// CPU. Read back by read_node_report (node_report_json.h). The members are those of
// agent_protocol.h, in sorted order, the telemetry as telemetry_text and left out when there is
// none. sent_at_ms, when given, stands for v.sent_at_ms (the agent stamps a report as it sends
// it). The strings come from the node, so a byte that starts no valid UTF-8 sequence is written
// as U+FFFD.
std::string node_report_json(const NodeReport& v, std::optional<int64_t> sent_at_ms = std::nullopt);

}  // namespace gpurent::model
