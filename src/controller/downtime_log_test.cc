#include "controller/downtime_log.h"

#include <gtest/gtest.h>

namespace gpurent::controller {
namespace {

const Timestamp kT0{Millis(1'800'000'000'000)};

model::Instance instance(std::string id) {
  model::Instance out;
  out.id = std::move(id);
  out.tenant_id = "t-1";
  return out;
}

TEST(DowntimeLogTest, ARecordOpensOnceAndClosesNoEarlierThanItStarted) {
  ChangeSet changes;
  DowntimeLog log(changes);
  const auto a = instance("i-a");
  log.start(a, kT0, "node_down");
  log.start(a, kT0 + Millis(5'000), "gpu_quarantined");  // one is open: nothing
  ASSERT_EQ(log.of_instance("i-a").size(), 1u);
  EXPECT_EQ(log.of_instance("i-a")[0]->cause, "node_down");
  EXPECT_FALSE(log.of_instance("i-a")[0]->end);

  log.end(a, kT0 - Millis(1'000));  // a clock that went back: the record ends where it started
  EXPECT_EQ(log.of_instance("i-a")[0]->end, kT0);
  log.end(a, kT0 + Millis(9'000));  // none open: nothing
  EXPECT_EQ(log.of_instance("i-a")[0]->end, kT0);

  log.start(a, kT0 + Millis(10'000), "gpu_quarantined");
  ASSERT_EQ(log.of_instance("i-a").size(), 2u);
  EXPECT_EQ(log.of_instance("i-a")[1]->cause, "gpu_quarantined");
  EXPECT_TRUE(log.of_instance("i-b").empty());
  // Opened, closed, opened: each a row for the store.
  EXPECT_EQ(changes.downtime.size(), 3u);
}

TEST(DowntimeLogTest, SecondsDownCountWithinTheWindowAndAnOpenRecordToItsEnd) {
  ChangeSet changes;
  DowntimeLog log(changes);
  const auto a = instance("i-a");
  const auto b = instance("i-b");
  log.start(a, kT0 - Millis(30'000), "node_down");  // 30 s before the window
  log.end(a, kT0 + Millis(20'000));
  log.start(a, kT0 + Millis(100'000), "node_down");
  log.end(a, kT0 + Millis(110'000));
  log.start(b, kT0 + Millis(3'590'000), "node_down");  // still open
  const auto down = log.seconds_down(kT0, kT0 + Millis(3'600'000));
  EXPECT_EQ(down, (std::map<std::string, int64_t>{{"i-a", 30}, {"i-b", 10}}));
}

TEST(DowntimeLogTest, RecordsComeBackFromTheSnapshotWithTheOpenOneStillOpen) {
  ChangeSet changes;
  DowntimeLog log(changes);
  const auto a = instance("i-a");
  log.start(a, kT0, "node_down");
  log.end(a, kT0 + Millis(1'000));
  log.start(a, kT0 + Millis(2'000), "node_down");

  Snapshot snapshot;
  snapshot.downtime = {changes.downtime[1], changes.downtime[2]};  // the latest row of each
  ChangeSet restored_changes;
  DowntimeLog restored(restored_changes);
  restored.restore(snapshot);
  ASSERT_EQ(restored.of_instance("i-a").size(), 2u);
  restored.start(a, kT0 + Millis(3'000), "node_down");  // still open: nothing
  restored.end(a, kT0 + Millis(4'000));
  EXPECT_EQ(restored.of_instance("i-a")[1]->end, kT0 + Millis(4'000));
  EXPECT_EQ(restored_changes.downtime.size(), 1u);
}

}  // namespace
}  // namespace gpurent::controller
