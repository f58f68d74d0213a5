// The event log (model/event.h): what happened to tenants' objects and to the platform, in seq
// order, for `gpurent events` and the console. Every event is recorded in the pending ChangeSet
// (durable with the command that caused it); only the most recent model::kMaxEventsInMemory stay
// in memory for listing.
//
// Invariant: seq is dense (each event's is the previous one's plus one), in memory and as
// restored (controller/seq_window.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "controller/change_set.h"
#include "controller/commands.h"
#include "controller/seq_window.h"
#include "model/event.h"
#include "model/tenant.h"

namespace gpurent::controller {

class EventLog {
 public:
  // Events go into `changes` (the controller's pending ChangeSet) as they are recorded.
  EventLog(const Clock& clock, ChangeSet& changes) : clock_(clock), changes_(changes) {}

  // Rebuilds the window from the stored events, oldest first; kInternal on a gap in seq.
  Status restore(std::vector<model::Event> events);
  // Appends an event; the message is cut to model::kMaxEventMessageLength.
  void record(std::string_view tenant_id, std::string_view object_id, std::string_view kind,
              std::string message);
  // The caller's events (operators: all, platform ones included) matching the filter, oldest
  // first, at most `limit`.
  std::vector<const model::Event*> list(const model::Principal& caller, const EventFilter& filter,
                                        size_t limit) const;

 private:
  const Clock& clock_;
  ChangeSet& changes_;
  SeqWindow<model::Event> events_{model::kMaxEventsInMemory};
};

}  // namespace gpurent::controller
