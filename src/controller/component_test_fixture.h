// The components most others need, built without a Controller, for the unit tests of one
// component (placements_test, scheduler_test, metering_test): a manual clock, ids, the pending
// ChangeSet and its tracker, events, Idempotency-Keys, accounts, prices, nodes, downtime,
// reservations and a table of instances. A test fixture derives from it and adds the component it
// tests, built on these.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/clock.h"
#include "common/indexed_map.h"
#include "common/random.h"
#include "controller/accounts.h"
#include "controller/change_set.h"
#include "controller/change_tracker.h"
#include "controller/downtime_log.h"
#include "controller/event_log.h"
#include "controller/idempotency.h"
#include "controller/node_registry.h"
#include "controller/pricing.h"
#include "controller/reservations.h"
#include "model/instance.h"
#include "sched/cluster.h"

namespace gpurent::controller {

class ComponentTest : public ::testing::Test {
 protected:
  ManualClock clock_{Timestamp(Millis(1'800'000'000'000))};
  Rng rng_{1};
  ChangeSet changes_;
  ChangeTracker tracker_{changes_};
  EventLog events_{clock_, changes_};
  IdempotencyKeys idempotency_{clock_, changes_};
  std::string currency_ = "CNY";
  Accounts accounts_{{clock_, rng_, changes_, events_, idempotency_, currency_}};
  Pricing pricing_{{clock_, changes_, currency_}};
  NodeRegistry nodes_;
  DowntimeLog downtime_{changes_};
  Reservations reservations_{{clock_, rng_, changes_, idempotency_, accounts_, pricing_, nodes_}};
  IndexedMap<model::Instance> instances_;
};

// Adds a schedulable node of two H100s (64 cores, 512 GiB) to a cluster view.
inline sched::NodeHandle add_two_h100s(sched::Cluster& cluster, std::string id) {
  const auto handle = cluster.upsert_node({.id = std::move(id),
                                           .gpu_type = "h100-80g",
                                           .gpu_memory_mib = 81'920,
                                           .gpus = {{.index = 0}, {.index = 1}},
                                           .cpu_milli = 64'000,
                                           .memory_mib = 512 * 1024});
  EXPECT_TRUE(handle) << handle.error().message;
  cluster.set_schedulable(*handle, true);
  return *handle;
}

}  // namespace gpurent::controller
