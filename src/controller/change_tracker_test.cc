// The change tracker (change_tracker.h): each touched object once a batch, at its latest state, in
// the order the contract gives; metering-only changes packed; rows streamed mid-command left out
// of the command's batch unless they changed again.
#include "controller/change_tracker.h"

#include <gtest/gtest.h>

#include <deque>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/codec.h"

namespace gpurent::controller {
namespace {

model::Instance instance(std::string id) {
  model::Instance out;
  out.id = std::move(id);
  out.tenant_id = "t-alice";
  return out;
}

model::UsageRecord usage(std::string id) {
  model::UsageRecord out;
  out.id = std::move(id);
  out.tenant_id = "t-alice";
  return out;
}

model::Node node(std::string id) {
  model::Node out;
  out.id = std::move(id);
  return out;
}

model::Volume volume(std::string id) {
  model::Volume out;
  out.id = std::move(id);
  return out;
}

// A job of `tasks` one-member tasks; the members are named "<job id>-<task>".
model::Job job(std::string id, int tasks) {
  model::Job out;
  out.id = std::move(id);
  for (int index = 0; index < tasks; ++index) {
    out.tasks.push_back({.index = index, .members = {out.id + "-" + std::to_string(index)}});
  }
  return out;
}

template <class T>
std::vector<std::string> ids(const std::vector<T>& objects) {
  std::vector<std::string> out;
  for (const auto& object : objects) out.push_back(object.id);
  return out;
}

std::vector<std::pair<std::string, int>> task_keys(const ChangeSet& changes) {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& change : changes.job_tasks) out.emplace_back(change.job_id, change.task.index);
  return out;
}

using Ids = std::vector<std::string>;

class ChangeTrackerTest : public ::testing::Test {
 protected:
  ChangeSet pending_;
  ChangeTracker tracker_{pending_};
};

TEST_F(ChangeTrackerTest, AnInstanceTouchedTwiceIsListedOnceAtItsLatestState) {
  auto a = instance("i-a");
  auto b = instance("i-b");
  tracker_.touch(a);
  tracker_.touch(b);
  a.reason = "placed";
  tracker_.touch(a);
  const ChangeSet changes = tracker_.take_changes();
  EXPECT_EQ(ids(changes.instances), (Ids{"i-a", "i-b"}));  // in the order first touched
  EXPECT_EQ(changes.instances[0].reason, "placed");
  EXPECT_EQ(changes.instances[0].revision, 2);  // every touch moves the revision
  EXPECT_EQ(a.revision, 2);
  EXPECT_EQ(changes.changed_instances, (Ids{"i-a", "i-b"}));
}

TEST_F(ChangeTrackerTest, ANewBatchListsATouchedObjectAgain) {
  auto a = instance("i-a");
  auto record = usage("i-a/1");
  auto n = node("node-a");
  tracker_.touch(a);
  tracker_.touch_usage(record);
  tracker_.touch_node(n, /*desired_set_changed=*/false);
  ASSERT_EQ(tracker_.take_changes().instances.size(), 1u);
  EXPECT_TRUE(tracker_.take_changes().empty());  // nothing touched since
  tracker_.touch(a);
  tracker_.touch_usage(record);
  tracker_.touch_node(n, /*desired_set_changed=*/false);
  const ChangeSet again = tracker_.take_changes();
  EXPECT_EQ(ids(again.instances), Ids{"i-a"});
  EXPECT_EQ(ids(again.usage), Ids{"i-a/1"});
  EXPECT_EQ(ids(again.nodes), Ids{"node-a"});
}

TEST_F(ChangeTrackerTest, ANotedChangeIsListedAsChangedWithoutARow) {
  auto a = instance("i-a");
  auto b = instance("i-b");
  tracker_.note_change(a);
  tracker_.touch(b);
  tracker_.note_change(b);
  const ChangeSet changes = tracker_.take_changes();
  EXPECT_EQ(ids(changes.instances), Ids{"i-b"});
  EXPECT_EQ(changes.changed_instances, (Ids{"i-a", "i-b"}));
  EXPECT_EQ(a.revision, 1);
  EXPECT_EQ(b.revision, 2);
}

TEST_F(ChangeTrackerTest, MeteringOnlyChangesTravelPackedAfterTheWholeRecords) {
  auto metered = usage("i-a/1");
  auto closed = usage("i-b/1");
  auto opened = usage("i-c/1");
  tracker_.touch_metering(metered);
  tracker_.touch_metering(closed);
  metered.billed_seconds = 60;
  tracker_.touch_metering(metered);
  tracker_.touch_usage(opened);
  closed.ended_at = Timestamp{Millis{1000}};
  tracker_.touch_usage(closed);  // also touched whole: travels whole only
  const ChangeSet changes = tracker_.take_changes();
  EXPECT_EQ(ids(changes.usage), (Ids{"i-c/1", "i-b/1"}));
  ASSERT_EQ(changes.metered_usage.size(), 1u);
  EXPECT_EQ(changes.usage_id(changes.metered_usage[0]), "i-a/1");
  EXPECT_EQ(changes.metered_usage[0].billed_seconds, 60);  // as it is when taken
  EXPECT_EQ(changes.metered_usage[0].position, 2u);        // after both whole records
}

TEST_F(ChangeTrackerTest, ThousandsOfRecordsMeteredTwiceEachArePackedOnceInOrder) {
  // The billing tick's shape: every open run metered, some more than once, not back to back.
  std::deque<model::UsageRecord> records;
  for (int i = 0; i < 5000; ++i) records.push_back(usage("i-" + std::to_string(i) + "/1"));
  tracker_.expect_metering(records.size());
  for (const auto& record : records) tracker_.touch_metering(record);
  for (size_t i = 0; i < records.size(); i += 2) tracker_.touch_metering(records[i]);
  tracker_.touch_usage(records[7]);
  const ChangeSet changes = tracker_.take_changes();
  EXPECT_EQ(ids(changes.usage), Ids{"i-7/1"});
  ASSERT_EQ(changes.metered_usage.size(), records.size() - 1);
  size_t next = 0;
  for (const auto& row : changes.metered_usage) {
    if (next == 7) ++next;
    EXPECT_EQ(changes.usage_id(row), records[next].id);
    ++next;
  }
}

TEST_F(ChangeTrackerTest, ObjectsFarApartInMemoryAreListedOnceToo) {
  static model::Instance far_away = instance("i-static");
  auto near = instance("i-stack");
  tracker_.touch(far_away);
  tracker_.touch(near);
  tracker_.touch(far_away);
  tracker_.touch(near);
  const ChangeSet changes = tracker_.take_changes();
  EXPECT_EQ(ids(changes.instances), (Ids{"i-static", "i-stack"}));
  EXPECT_EQ(changes.changed_instances, (Ids{"i-static", "i-stack"}));
}

TEST_F(ChangeTrackerTest, NodesAndVolumesKeepTheOrderFirstTouchedJobsAndTasksTheirIdOrder) {
  auto c = node("node-c");
  auto a = node("node-a");
  tracker_.touch_node(c, /*desired_set_changed=*/false);
  tracker_.touch_node(a, /*desired_set_changed=*/false);
  tracker_.touch_node(c, /*desired_set_changed=*/false);
  auto v2 = volume("v-2");
  auto v1 = volume("v-1");
  tracker_.touch_volume(v2);
  tracker_.touch_volume(v1);
  tracker_.touch_volume(v2);
  auto late = job("j-b", 3);
  auto early = job("j-a", 3);
  tracker_.touch_task(late, 2);
  tracker_.touch_task(early, 1);
  tracker_.touch_task(late, 0);
  tracker_.touch_task(late, 2);
  tracker_.touch_job(late);
  tracker_.touch_job(early);
  tracker_.touch_job(late);
  const ChangeSet changes = tracker_.take_changes();
  EXPECT_EQ(ids(changes.nodes), (Ids{"node-c", "node-a"}));
  EXPECT_EQ(ids(changes.volumes), (Ids{"v-2", "v-1"}));
  EXPECT_EQ(ids(changes.jobs), (Ids{"j-a", "j-b"}));
  for (const auto& row : changes.jobs) EXPECT_TRUE(row.tasks.empty()) << row.id;
  EXPECT_EQ(late.tasks.size(), 3u);  // the job keeps its tasks
  EXPECT_EQ(late.revision, 2);
  EXPECT_EQ(task_keys(changes),
            (std::vector<std::pair<std::string, int>>{{"j-a", 1}, {"j-b", 0}, {"j-b", 2}}));
}

TEST_F(ChangeTrackerTest, ANewDesiredSetMovesTheGenerationAndWritesTheRowOnlyFarApart) {
  auto n = node("node-a");
  tracker_.touch_node(n, /*desired_set_changed=*/false);
  ASSERT_EQ(tracker_.take_changes().nodes.size(), 1u);  // stored at generation 1
  tracker_.touch_node(n, /*desired_set_changed=*/true);
  tracker_.touch_node(n, /*desired_set_changed=*/true);
  ChangeSet changes = tracker_.take_changes();
  EXPECT_EQ(n.generation, 3);
  EXPECT_TRUE(changes.nodes.empty());
  EXPECT_EQ(changes.woken_nodes, std::set<std::string>{"node-a"});
  n.generation = 1 + kGenerationsBetweenNodeWrites - 1;
  tracker_.touch_node(n, /*desired_set_changed=*/true);
  changes = tracker_.take_changes();
  ASSERT_EQ(ids(changes.nodes), Ids{"node-a"});
  EXPECT_EQ(changes.nodes[0].generation, 1 + kGenerationsBetweenNodeWrites);
  // Measured from the generation just written.
  tracker_.touch_node(n, /*desired_set_changed=*/true);
  EXPECT_TRUE(tracker_.take_changes().nodes.empty());
}

TEST_F(ChangeTrackerTest, ForTheStoreTouchedInstancesComeSerializedOnce) {
  auto a = instance("i-a");
  tracker_.touch(a);
  tracker_.touch(a);
  const ChangeSet changes = tracker_.take_changes_for_store();
  EXPECT_TRUE(changes.instances.empty());
  ASSERT_EQ(changes.instance_rows.size(), 1u);
  EXPECT_EQ(changes.instance_rows[0].id, "i-a");
  EXPECT_EQ(changes.instance_rows[0].tenant_id, "t-alice");
  EXPECT_EQ(changes.instance_rows[0].body, model::instance_row_json(a));
  EXPECT_EQ(changes.changed_instances, Ids{"i-a"});
}

TEST_F(ChangeTrackerTest, StreamedRowsAreLeftOutOfTheBatchUnlessTheyChangedAgain) {
  std::vector<ChangeSet> pieces;
  tracker_.stream_placed_rows([&](ChangeSet piece) { pieces.push_back(std::move(piece)); }, 2);
  auto array = job("j-a", 3);
  std::deque<model::Instance> members;
  for (const auto& task : array.tasks) {
    members.push_back(instance(task.members[0]));
    members.back().job_id = array.id;
    members.back().job_task = task.index;
  }
  auto single = instance("i-single");
  for (auto& member : members) {
    tracker_.touch_task(array, member.job_task);
    tracker_.touch(member);
    tracker_.placed(member, &array);
  }
  tracker_.touch(single);
  tracker_.placed(single, nullptr);
  tracker_.stream_placed_rows_if_due();
  ASSERT_EQ(pieces.size(), 1u);  // the four placements waiting
  EXPECT_EQ(ids(pieces[0].instance_rows), (Ids{"j-a-0", "j-a-1", "j-a-2", "i-single"}));
  EXPECT_EQ(task_keys(pieces[0]),
            (std::vector<std::pair<std::string, int>>{{"j-a", 0}, {"j-a", 1}, {"j-a", 2}}));
  EXPECT_EQ(pieces[0].instance_rows[1].body, model::instance_row_json(members[1]));
  EXPECT_TRUE(pieces[0].jobs.empty() && pieces[0].woken_nodes.empty());

  tracker_.touch(members[1]);  // changed again after its row went
  tracker_.touch_task(array, 2);
  tracker_.stream_placed_rows_if_due();  // nothing placed since: no piece
  EXPECT_EQ(pieces.size(), 1u);
  const ChangeSet rest = tracker_.take_changes_for_store();
  EXPECT_EQ(ids(rest.instance_rows), Ids{"j-a-1"});
  EXPECT_EQ(rest.instance_rows[0].body, model::instance_row_json(members[1]));
  EXPECT_EQ(task_keys(rest), (std::vector<std::pair<std::string, int>>{{"j-a", 2}}));
  EXPECT_EQ(rest.changed_instances, (Ids{"j-a-0", "j-a-1", "j-a-2", "i-single"}));

  // The next batch hands over what it places afresh; without a sink, nothing.
  tracker_.touch(members[0]);
  tracker_.placed(members[0], &array);
  tracker_.stream_placed_rows({}, 0);
  tracker_.placed(members[2], &array);
  tracker_.stream_placed_rows_if_due();
  EXPECT_EQ(pieces.size(), 1u);
  EXPECT_EQ(ids(tracker_.take_changes_for_store().instance_rows), Ids{"j-a-0"});
}

}  // namespace
}  // namespace gpurent::controller
