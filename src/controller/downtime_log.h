// The downtime log: when each instance was down through no fault of its tenant (its node stopped
// reporting, a GPU under it was quarantined), the SLA's record (billing/sla.h). A record opens
// when the failure takes the instance down and closes when it runs again or ends.
//
// Invariants: an instance has at most one open record; a record never ends before it starts;
// every opened or closed record is in the pending ChangeSet, durable with the command or report
// that opened or closed it.
//
// Part of the Controller (controller.h), which decides what counts as downtime, and which credits
// it monthly (statements.cc).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "controller/change_set.h"
#include "model/accounts.h"
#include "model/instance.h"

namespace gpurent::controller {

class DowntimeLog {
 public:
  explicit DowntimeLog(ChangeSet& changes) : changes_(changes) {}
  DowntimeLog(const DowntimeLog&) = delete;
  DowntimeLog& operator=(const DowntimeLog&) = delete;

  // The records from the store's snapshot.
  void restore(Snapshot& snapshot);

  // Opens a record from `at`, unless the instance has one open.
  void start(const model::Instance& instance, Timestamp at, std::string_view cause);
  // Closes the instance's open record at `at` (its start, if `at` is earlier); none open: nothing.
  void end(const model::Instance& instance, Timestamp at);

  // The instance's records, in the order opened.
  std::vector<const model::Downtime*> of_instance(std::string_view instance_id) const;
  // Seconds each instance was down within [from, to), by instance id; an open record counts up
  // to `to`.
  std::map<std::string, int64_t> seconds_down(Timestamp from, Timestamp to) const;

 private:
  ChangeSet& changes_;
  std::map<std::string, model::Downtime, std::less<>> records_;   // by id
  std::unordered_map<std::string, std::vector<std::string>> of_;  // instance -> ids
  std::unordered_map<std::string, std::string> open_;             // instance -> id
};

}  // namespace gpurent::controller
