// The event log: what happened to an object, for the people who own it.
//
// The controller records an event when something happens that its owner would want to know and
// cannot see in the object's current state alone: a node went down, an instance was moved to
// another node or interrupted, a balance fell below its warning threshold. Events are appended in
// the order they happen (seq increases by one from 1), never changed, and committed with the
// change that caused them. Each belongs to a tenant ("" for platform events, which only operators
// see) and names the object it is about.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/field_table.h"

namespace gpurent::model {

// Kinds are dotted names "<object>.<what>"; these are the ones the platform records.
namespace event_kind {
inline constexpr std::string_view kNodeDown = "node.down";
inline constexpr std::string_view kNodeUp = "node.up";
inline constexpr std::string_view kGpuQuarantined = "gpu.quarantined";
inline constexpr std::string_view kGpuReleased = "gpu.released";
inline constexpr std::string_view kNodeBenchmarked = "node.benchmarked";
inline constexpr std::string_view kNodeBenchmarkFailed = "node.benchmark_failed";
inline constexpr std::string_view kGpuSlow = "gpu.slow";
inline constexpr std::string_view kInstanceMoved = "instance.moved";
inline constexpr std::string_view kInstancePreempted = "instance.preempted";
inline constexpr std::string_view kInstanceStoppedForBalance = "instance.stopped_for_balance";
inline constexpr std::string_view kBalanceLow = "balance.low";
inline constexpr std::string_view kSlaCredit = "sla.credit";
inline constexpr std::string_view kAll[] = {kNodeDown,          kNodeUp,
                                            kGpuQuarantined,    kGpuReleased,
                                            kNodeBenchmarked,   kNodeBenchmarkFailed,
                                            kGpuSlow,           kInstanceMoved,
                                            kInstancePreempted, kInstanceStoppedForBalance,
                                            kBalanceLow,        kSlaCredit};
}  // namespace event_kind

// The controller keeps the most recent events in memory (the API serves those); the store keeps
// them all.
inline constexpr size_t kMaxEventsInMemory = 100'000;
inline constexpr size_t kMaxEventMessageLength = 1024;

struct Event {
  int64_t seq = 0;
  Timestamp at{};
  std::string tenant_id;  // "": a platform event
  std::string object_id;  // the instance, node, job or tenant it is about
  std::string kind;
  std::string message;  // for people
};

template <class V, schema::Of<Event> S>
void fields(V& visit, S& x) {
  visit("at", x.at);
  visit("kind", x.kind);
  visit("message", x.message);
  visit("object_id", x.object_id);
  visit("seq", x.seq);
  visit("tenant_id", x.tenant_id);
}

}  // namespace gpurent::model
