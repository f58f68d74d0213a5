// Alert rules and transitions as JSON: the API's bodies, the config file's rules (converted to
// JSON first) and the store's rows share this one encoding.
//
// A rule: {"name", "metric" (a signal name, signal_name()), "comparison" (">", ..., "absent"),
// "threshold", "for_s" (seconds, may be fractional), "severity", "scope" ("all", "node",
// "gpu_type", "instance"), "scope_value" (what the scope names; absent for "all"),
// "idle_auto_stop" (instance_gpu_util rules only: present makes it an idle rule)}.
// rule_from_json refuses unknown fields and wrong types with "invalid_field" or "unknown_field"
// naming the field, then applies validate() (its stable codes).
#pragma once

#include "common/json.h"
#include "common/result.h"
#include "monitor/alerts.h"

namespace gpurent::monitor {

Json rule_to_json(const Rule& rule);
Result<Rule> rule_from_json(const Json& body);

Json observation_to_json(const Observation& observation);
Json transition_to_json(const Transition& transition);
// The inverse of transition_to_json, for rows this program wrote (kInternal when corrupt).
Result<Transition> transition_from_json(const Json& body);

}  // namespace gpurent::monitor
