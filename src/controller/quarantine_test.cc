// GPU quarantine: a fatal XID or a double-bit ECC rise takes one GPU out of service; its work ends
// at the report that carried the fault and moves by its restart policy, the node's other work
// runs on, the node is degraded, and an operator's release (also after a restart through the
// store) puts the GPU back.
#include <gtest/gtest.h>

#include <filesystem>

#include "controller/controller_test_fixture.h"
#include "store/store.h"

namespace gpurent::controller {
namespace {

class QuarantineTest : public ControllerTest {
 protected:
  // The node's agent reports every workload of its desired set as running, with telemetry.
  void report_desired(const std::string& node, model::TelemetryBatch telemetry = {}) {
    const auto desired = ctl_.fleet().desired_state(node);
    model::NodeReport report{.applied_generation = desired->generation};
    for (const auto& w : desired->workloads) {
      report.workloads.push_back(
          {w.instance_id, w.run, model::WorkloadPhase::kRunning, std::nullopt, ""});
    }
    report.telemetry = std::move(telemetry);
    ASSERT_TRUE(ctl_.apply_report(node, report));
  }
  model::TelemetryBatch xid(const std::string& uuid, int64_t code) {
    return {.xids = {{uuid, to_unix_ms(clock_.now()), code}}};
  }
  model::TelemetryBatch dbe(const std::string& uuid, int64_t total) {
    model::GpuSample sample{.uuid = uuid, .time_ms = to_unix_ms(clock_.now())};
    sample.ecc_dbe_total = total;
    return {.samples = {sample}};
  }
  std::string status(const std::string& node) {
    return std::string(ctl_.fleet().node_status(**ctl_.fleet().nodes().get(admin_, node)));
  }
  std::vector<std::string> quarantined(const std::string& node) {
    std::vector<std::string> out;
    for (const auto* q : ctl_.fleet().quarantines().on_node(node)) out.push_back(q->id);
    return out;
  }
  const model::WorkloadSpec* desired(const std::string& node, const std::string& instance_id) {
    desired_ = *ctl_.fleet().desired_state(node);
    for (const auto& w : desired_.workloads) {
      if (w.instance_id == instance_id) return &w;
    }
    return nullptr;
  }
  model::DesiredState desired_;
};

TEST_F(QuarantineTest, AFatalXidMovesTheWorkOnThatGpuAndLeavesTheRestRunning) {
  const auto hit = launch(alice_, 1);
  const auto spared = launch(bob_, 1);
  ASSERT_EQ(hit.node_id, node_);
  ASSERT_EQ(spared.node_id, node_);
  report_desired(node_);
  ASSERT_EQ(get(hit.id).state, InstanceState::kRunning);
  const std::string bad = get(hit.id).gpus.at(0);
  const std::string good = get(spared.id).gpus.at(0);

  clock_.advance(Millis(30'000));
  const Timestamp fault = clock_.now();
  report_desired(node_, xid(bad, 79));

  EXPECT_EQ(quarantined(node_), std::vector<std::string>{bad});
  const auto* record = ctl_.fleet().quarantines().on_node(node_).at(0);
  EXPECT_EQ(record->cause, "xid");
  EXPECT_EQ(record->xid, 79);
  EXPECT_EQ(record->at, fault);
  EXPECT_EQ(status(node_), "degraded");
  EXPECT_EQ(ctl_.events().list(admin_, {.kind = "gpu.quarantined"}, 10).size(), 1u);
  // Moved at once, keeping its id, onto another GPU: the report that carried the fault ended run 1
  // and its billing.
  const auto& moved = get(hit.id);
  EXPECT_EQ(moved.run, 2);
  EXPECT_EQ(moved.state, InstanceState::kStarting);
  ASSERT_EQ(moved.gpus.size(), 1u);
  EXPECT_NE(moved.gpus[0], bad);
  const auto usage = ctl_.metering().usage(alice_.tenant_id);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0]->ended_at, fault);
  EXPECT_EQ(usage[0]->metered_until, fault);
  EXPECT_EQ(usage[0]->billed_seconds, 30);  // no minimum: the platform cut it short
  const auto downtime = ctl_.metering().downtime().of_instance(hit.id);
  ASSERT_EQ(downtime.size(), 1u);
  EXPECT_EQ(downtime[0]->cause, "gpu_quarantined");
  EXPECT_EQ(downtime[0]->start, fault);
  EXPECT_EQ(ctl_.events().list(alice_, {.object_id = hit.id, .kind = "instance.moved"}, 10).size(),
            1u);
  // The old run left the node's desired set (its agent stops it); the new one is there.
  const auto* workload = desired(moved.node_id, hit.id);
  ASSERT_NE(workload, nullptr);
  EXPECT_EQ(workload->run, 2);
  // The other tenant's work on a healthy GPU of the node runs on, untouched.
  EXPECT_EQ(get(spared.id).state, InstanceState::kRunning);
  EXPECT_EQ(get(spared.id).run, 1);
  EXPECT_EQ(get(spared.id).gpus, std::vector<std::string>{good});

  clock_.advance(Millis(5'000));
  report_desired(moved.node_id);  // run 2 starts: the downtime ends
  EXPECT_EQ(get(hit.id).state, InstanceState::kRunning);
  EXPECT_EQ(ctl_.metering().downtime().of_instance(hit.id)[0]->end, clock_.now());
  // Nothing new lands on the quarantined GPU, even when the node is otherwise full.
  for (int i = 0; i < 5; ++i) EXPECT_NE(get(launch(bob_, 1).id).gpus.at(0), bad);
  EXPECT_EQ(get(launch(bob_, 1).id).state, InstanceState::kPending);
  for (const auto& offer : ctl_.fleet().offers()) EXPECT_EQ(offer.total, 7);
  EXPECT_EQ(ctl_.accounts().ledger_total(), 0);
  ASSERT_TRUE(ctl_.check_invariants());
}

TEST_F(QuarantineTest, ApplicationXidsDoNotQuarantine) {
  const auto instance = launch(alice_, 1);
  report_desired(node_);
  const std::string gpu = get(instance.id).gpus.at(0);
  for (int64_t code : {13, 31, 43, 63, 92}) report_desired(node_, xid(gpu, code));
  EXPECT_TRUE(quarantined(node_).empty());
  EXPECT_EQ(status(node_), "ready");
  EXPECT_EQ(get(instance.id).run, 1);
  EXPECT_EQ(get(instance.id).state, InstanceState::kRunning);
}

TEST_F(QuarantineTest, ADoubleBitEccRiseQuarantinesAndTheFirstCountSeenIsTheBaseline) {
  report_desired(node_, dbe("GPU-a0", 0));
  report_desired(node_, dbe("GPU-a1", 3));  // already nonzero when first seen: the baseline
  report_desired(node_, dbe("GPU-a1", 3));
  EXPECT_TRUE(quarantined(node_).empty());
  report_desired(node_, dbe("GPU-a0", 0));
  EXPECT_TRUE(quarantined(node_).empty());
  report_desired(node_, dbe("GPU-a0", 2));
  EXPECT_EQ(quarantined(node_), std::vector<std::string>{"GPU-a0"});
  EXPECT_EQ(ctl_.fleet().quarantines().on_node(node_)[0]->cause, "ecc_dbe");
  // A rise within one batch counts as well.
  auto batch = dbe("GPU-a2", 1);
  batch.samples.push_back(batch.samples[0]);
  batch.samples[1].time_ms += 1'000;
  batch.samples[1].ecc_dbe_total = 4;
  report_desired(node_, batch);
  EXPECT_EQ(quarantined(node_), (std::vector<std::string>{"GPU-a0", "GPU-a2"}));
  EXPECT_EQ(status(node_), "degraded");
  EXPECT_EQ(ctl_.events().list(admin_, {.kind = "gpu.quarantined"}, 10).size(), 2u);
  // A GPU that is not the node's: no baseline, no quarantine, however its count moves.
  report_desired(node_, dbe("GPU-elsewhere", 1));
  report_desired(node_, dbe("GPU-elsewhere", 5));
  EXPECT_EQ(quarantined(node_), (std::vector<std::string>{"GPU-a0", "GPU-a2"}));
  EXPECT_FALSE((*ctl_.fleet().nodes().get(admin_, node_))->ecc_dbe_seen.contains("GPU-elsewhere"));
}

TEST_F(QuarantineTest, NeverRestartedWorkIsStoppedAndAGangMovesWhole) {
  const auto b = add_node("node-b", "h100-80g", 8, "GPU-b");
  const auto c = add_node("node-c", "h100-80g", 8, "GPU-c");
  auto never = spec(1);
  never.restart_policy = model::RestartPolicy::kNever;
  const auto lone = launch(alice_, never);
  model::JobSpec gang;
  gang.task = spec(8);
  gang.nodes = 2;
  const auto job = ctl_.create_job(alice_, gang, std::nullopt, "");
  ASSERT_TRUE(job);
  const auto members = job->job.tasks[0].members;
  for (const auto& node : {node_, b, c}) report_desired(node);
  ASSERT_EQ(get(lone.id).state, InstanceState::kRunning);
  ASSERT_EQ(get(members[0]).state, InstanceState::kRunning);
  ASSERT_EQ(get(members[1]).state, InstanceState::kRunning);

  const std::string lone_gpu = get(lone.id).gpus.at(0);
  report_desired(get(lone.id).node_id, xid(lone_gpu, 95));
  EXPECT_EQ(get(lone.id).state, InstanceState::kStopped);
  EXPECT_EQ(get(lone.id).run, 1);

  // A rank's GPU fails: that rank ends at once, the other is asked to stop, and the task is
  // placed again whole once it has.
  const std::string rank_gpu = get(members[1]).gpus.at(3);
  const std::string rank_node = get(members[1]).node_id;
  const std::string other_node = get(members[0]).node_id;
  report_desired(rank_node, xid(rank_gpu, 48));
  EXPECT_NE(get(members[1]).state, InstanceState::kRunning);
  EXPECT_EQ(get(members[0]).state, InstanceState::kStopping);
  report(other_node, {{members[0], 1, model::WorkloadPhase::kExited, 143, ""}});
  // No node has 8 healthy free GPUs for both ranks: the task waits, not failed.
  EXPECT_EQ(get(members[0]).state, InstanceState::kPending);
  EXPECT_EQ(get(members[1]).state, InstanceState::kPending);
  EXPECT_NE((*ctl_.jobs().get(alice_, job->job.id))->tasks[0].state, model::JobState::kFailed);
  EXPECT_EQ(ctl_.events().list(alice_, {.kind = "instance.moved"}, 10).size(), 2u);
  ASSERT_TRUE(ctl_.check_invariants());
}

TEST_F(QuarantineTest, OperatorsReleaseAGpuAndItTakesWorkAgain) {
  report_desired(node_, xid("GPU-a5", 79));
  ASSERT_EQ(status(node_), "degraded");
  ASSERT_TRUE(ctl_.manage_node(admin_, node_, NodeAction::kCordon));
  EXPECT_EQ(status(node_), "cordoned");  // degraded only while otherwise healthy
  ASSERT_TRUE(ctl_.manage_node(admin_, node_, NodeAction::kUncordon));

  EXPECT_EQ(ctl_.release_gpu(alice_, node_, 5).error().code, "forbidden");
  EXPECT_EQ(ctl_.release_gpu(admin_, "n-nope", 5).error().code, "node_not_found");
  EXPECT_EQ(ctl_.release_gpu(admin_, node_, 9).error().code, "gpu_not_found");
  EXPECT_EQ(ctl_.release_gpu(admin_, node_, 4).error().code, "gpu_not_quarantined");
  EXPECT_EQ(launch(alice_, 8).state, InstanceState::kPending);  // 7 healthy GPUs only

  const auto released = ctl_.release_gpu(admin_, node_, 5);
  ASSERT_TRUE(released) << released.error().message;
  EXPECT_EQ(released->released_at, clock_.now());
  EXPECT_EQ(released->released_by, admin_.key_id);
  EXPECT_TRUE(quarantined(node_).empty());
  EXPECT_EQ(status(node_), "ready");
  EXPECT_EQ(ctl_.events().list(admin_, {.kind = "gpu.released"}, 10).size(), 1u);
  EXPECT_EQ(ctl_.release_gpu(admin_, node_, 5).error().code, "gpu_not_quarantined");
  // The waiting 8-GPU instance was placed on the whole node at the release.
  const auto instances = ctl_.instances().list(alice_, {}, "", 10);
  ASSERT_EQ(instances->items.size(), 1u);
  EXPECT_EQ(instances->items[0]->state, InstanceState::kStarting);
  ASSERT_TRUE(ctl_.check_invariants());
}

TEST_F(QuarantineTest, AQuarantineSurvivesARestartThroughTheStore) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gpurent-quarantine-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto store = store::open_sqlite_store((dir / "db").string());
  ASSERT_TRUE(store) << store.error().message;
  report_desired(node_, xid("GPU-a2", 94));
  ASSERT_TRUE((*store)->commit(ctl_.take_changes()));

  const auto restart = [&] {
    auto snapshot = (*store)->load();
    EXPECT_TRUE(snapshot) << snapshot.error().message;
    auto restored = std::make_unique<Controller>(clock_, ControllerOptions{.seed = 7});
    EXPECT_TRUE(restored->restore(std::move(*snapshot)));
    return restored;
  };
  auto restored = restart();
  ASSERT_EQ(restored->fleet().quarantines().on_node(node_).size(), 1u);
  EXPECT_EQ(restored->fleet().quarantines().on_node(node_)[0]->xid, 94);
  EXPECT_EQ(restored->fleet().node_status(**restored->fleet().nodes().get(admin_, node_)),
            "degraded");
  auto whole_node = restored->create_instance(alice_, spec(8), std::nullopt, "");
  ASSERT_TRUE(whole_node);
  EXPECT_EQ(whole_node->instance.state, InstanceState::kPending);  // GPU 2 is still out
  ASSERT_TRUE(restored->release_gpu(admin_, node_, 2));
  EXPECT_EQ((*restored->instances().get(admin_, whole_node->instance.id))->state,
            InstanceState::kStarting);
  ASSERT_TRUE((*store)->commit(restored->take_changes()));

  auto again = restart();
  EXPECT_TRUE(again->fleet().quarantines().on_node(node_).empty());
  EXPECT_EQ(again->fleet().node_status(**again->fleet().nodes().get(admin_, node_)), "ready");
  ASSERT_TRUE(again->check_invariants());
  std::filesystem::remove_all(dir);
}

TEST_F(QuarantineTest, AnEccRiseWhileTheServerWasDownIsSeenAtTheFirstReportAfter) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gpurent-quarantine-ecc-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto store = store::open_sqlite_store((dir / "db").string());
  ASSERT_TRUE(store) << store.error().message;
  report_desired(node_, dbe("GPU-a3", 1));  // the baseline, persisted with the node
  ASSERT_TRUE((*store)->commit(ctl_.take_changes()));
  report_desired(node_, dbe("GPU-a3", 1));  // unchanged: the node's row is not rewritten
  EXPECT_TRUE(ctl_.take_changes().nodes.empty());

  // The server is down while the count rises from 1 to 2; the GPU is never reported at 1 again.
  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot) << snapshot.error().message;
  Controller restarted(clock_, ControllerOptions{.seed = 7});
  ASSERT_TRUE(restarted.restore(std::move(*snapshot)));
  clock_.advance(Millis(60'000));
  const auto desired = restarted.fleet().desired_state(node_);
  ASSERT_TRUE(desired);
  ASSERT_TRUE(restarted.apply_report(
      node_, {.applied_generation = desired->generation, .telemetry = dbe("GPU-a3", 2)}));
  const auto out = restarted.fleet().quarantines().on_node(node_);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->id, "GPU-a3");
  EXPECT_EQ(out[0]->cause, "ecc_dbe");
  EXPECT_EQ(out[0]->message, "double-bit ECC errors rose from 1 to 2");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpurent::controller
