// The controller's monitoring: ingestion, query scoping, the alert lifecycle under a manual clock,
// heartbeat loss, idle auto-stop, and rollups, rules, history and acknowledgements through a store
// round trip.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "controller/controller_test_fixture.h"
#include "store/store.h"

namespace gpurent::controller {
namespace {

using monitor::AlertState;
using monitor::Metric;

class MonitoringTest : public ControllerTest {
 protected:
  void sample(const std::string& uuid, Metric metric, double value) {
    const GpuSamples gpu{uuid, {{metric, to_unix_ms(clock_.now()), value}}};
    ASSERT_TRUE(ctl_.fleet().ingest_gpu_samples(node_, std::span(&gpu, 1)));
  }
  // A GPU temperature, with the utilisation the agent reports alongside (else gpu_missing fires).
  void temperature(const std::string& uuid, double value) {
    const int64_t t = to_unix_ms(clock_.now());
    const GpuSamples gpu{uuid, {{Metric::kGpuTemp, t, value}, {Metric::kGpuUtil, t, 50}}};
    ASSERT_TRUE(ctl_.fleet().ingest_gpu_samples(node_, std::span(&gpu, 1)));
  }
  // Seconds one at a time: `each` (reports and samples), then a tick.
  void seconds(int count, const std::function<void()>& each) {
    for (int i = 0; i < count; ++i) {
      clock_.advance(Millis(1'000));
      each();
      ctl_.tick();
    }
  }
  std::vector<const model::Event*> events(const Principal& who, const std::string& kind) {
    return ctl_.events().list(who, {.kind = kind}, 100);
  }
  monitor::Rule hot_rule() {
    return {.name = "hot",
            .signal = {monitor::SignalKind::kGpuMetric, Metric::kGpuTemp},
            .comparison = monitor::Comparison::kGt,
            .threshold = 80,
            .for_ms = 10'000,
            .severity = monitor::Severity::kCritical};
  }
};

TEST_F(MonitoringTest, QueriesAreScopedToTheCallersInstances) {
  const auto instance = launch(alice_, 1);
  run(instance.id);
  const std::string gpu = get(instance.id).gpus.at(0);
  const std::string other = gpu == "GPU-a0" ? "GPU-a1" : "GPU-a0";
  for (int i = 0; i < 5; ++i) {
    sample(gpu, Metric::kGpuUtil, 10.0 * i);
    sample(other, Metric::kGpuUtil, 99);
    clock_.advance(Millis(1'000));
  }
  // A GPU that is not the node's is skipped and counted.
  const GpuSamples foreign{"GPU-elsewhere", {{Metric::kGpuUtil, to_unix_ms(clock_.now()), 1}}};
  ASSERT_TRUE(ctl_.fleet().ingest_gpu_samples(node_, std::span(&foreign, 1)));
  EXPECT_EQ(ctl_.fleet().platform_stats().samples_accepted, 10u);
  EXPECT_EQ(ctl_.fleet().platform_stats().samples_refused, 1u);
  EXPECT_FALSE(ctl_.fleet().ingest_gpu_samples("n-unknown", std::span(&foreign, 1)));

  MetricsQuery query{.instance = instance.id, .step_ms = 60'000, .resolution = {}};
  query.aggregation = monitor::Aggregation::kMax;
  auto mine = ctl_.fleet().query_metrics(alice_, query);
  ASSERT_TRUE(mine) << mine.error().message;
  EXPECT_EQ(mine->gpus, std::vector<std::string>{gpu});
  ASSERT_FALSE(mine->result.points.empty());
  double max = 0;
  for (const auto& point : mine->result.points) max = std::max(max, point.value);
  EXPECT_EQ(max, 40);

  EXPECT_EQ(ctl_.fleet().query_metrics(bob_, query).error().kind, ErrorKind::kNotFound);
  query.instance.reset();
  query.gpu = gpu;
  EXPECT_TRUE(ctl_.fleet().query_metrics(alice_, query));
  EXPECT_EQ(ctl_.fleet().query_metrics(bob_, query).error().kind, ErrorKind::kNotFound);
  query.gpu = other;  // on alice's node, but not hers
  EXPECT_EQ(ctl_.fleet().query_metrics(alice_, query).error().kind, ErrorKind::kNotFound);
  query.gpu.reset();
  query.node = node_;
  EXPECT_EQ(ctl_.fleet().query_metrics(alice_, query).error().kind, ErrorKind::kNotFound);
  auto fleet = ctl_.fleet().query_metrics(admin_, query);
  ASSERT_TRUE(fleet);
  EXPECT_EQ(fleet->gpus.size(), 8u);
}

TEST_F(MonitoringTest, AnAlertGoesPendingFiringResolvedWithEventsHistoryAndAcknowledgement) {
  ASSERT_TRUE(ctl_.fleet().monitor().put_rule(admin_, hot_rule()));
  EXPECT_EQ(ctl_.fleet().monitor().put_rule(alice_, hot_rule()).error().kind,
            ErrorKind::kPermissionDenied);
  auto builtin = hot_rule();
  builtin.name = "gpu_temperature_high";
  EXPECT_EQ(ctl_.fleet().monitor().put_rule(admin_, builtin).error().code, "rule_not_editable");

  const auto heartbeat = [&] { report(node_, {}); };
  seconds(6, [&] {
    heartbeat();
    temperature("GPU-a3", 83);
  });
  auto list = ctl_.fleet().monitor().alerts(admin_, 100);
  ASSERT_EQ(list.active.size(), 1u);
  EXPECT_EQ(list.active[0].state, AlertState::kPending);
  EXPECT_TRUE(events(admin_, "alert.firing").empty());

  seconds(10, [&] {
    heartbeat();
    temperature("GPU-a3", 84);
  });
  list = ctl_.fleet().monitor().alerts(admin_, 100);
  ASSERT_EQ(list.active.size(), 1u);
  EXPECT_EQ(list.active[0].state, AlertState::kFiring);
  ASSERT_EQ(events(admin_, "alert.firing").size(), 1u);
  EXPECT_EQ(events(admin_, "alert.firing")[0]->object_id, "GPU-a3");
  EXPECT_EQ(events(admin_, "alert.firing")[0]->tenant_id, "");
  EXPECT_EQ(ctl_.fleet().platform_stats().alerts_firing.at("critical"), 1);
  // A platform alert is not a tenant's.
  EXPECT_TRUE(ctl_.fleet().monitor().alerts(alice_, 100).active.empty());
  EXPECT_EQ(ctl_.fleet().monitor().acknowledge(alice_, "hot:GPU-a3").error().code,
            "alert_not_found");
  ASSERT_TRUE(ctl_.fleet().monitor().acknowledge(admin_, FleetMonitor::alert_id("hot", "GPU-a3")));
  EXPECT_TRUE(ctl_.fleet().monitor().alerts(admin_, 100).active[0].acknowledged);
  EXPECT_EQ(ctl_.fleet().monitor().acknowledge(admin_, "hot:GPU-a4").error().code,
            "alert_not_found");

  seconds(6, [&] {
    heartbeat();
    temperature("GPU-a3", 60);
  });
  list = ctl_.fleet().monitor().alerts(admin_, 100);
  EXPECT_TRUE(list.active.empty());
  ASSERT_EQ(events(admin_, "alert.resolved").size(), 1u);
  ASSERT_EQ(list.history.size(), 3u);
  EXPECT_EQ(list.history[0]->transition.to, AlertState::kPending);
  EXPECT_EQ(list.history[1]->transition.to, AlertState::kFiring);
  EXPECT_EQ(list.history[2]->transition.to, AlertState::kResolved);
  EXPECT_EQ(ctl_.take_changes().monitoring_changes.alert_history.size(), 3u);
}

TEST_F(MonitoringTest, ANodeThatGoesDownFiresHeartbeatLostFromItsState) {
  seconds(5, [&] { report(node_, {}); });
  EXPECT_TRUE(ctl_.fleet().monitor().alerts(admin_, 100).active.empty());
  seconds(20, [] {});
  ASSERT_EQ((*ctl_.fleet().nodes().get(admin_, node_))->state, model::NodeState::kDown);
  const auto fired = events(admin_, "alert.firing");
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0]->object_id, node_);
  EXPECT_NE(fired[0]->message.find("node_heartbeat_lost"), std::string::npos);
  EXPECT_EQ(ctl_.fleet().platform_stats().nodes_by_status.at("down"), 1);
  seconds(6, [&] { report(node_, {}); });
  EXPECT_EQ(events(admin_, "alert.resolved").size(), 1u);
}

TEST_F(MonitoringTest, AnIdleInstanceIsReportedToItsTenantAndStoppedByItsPolicy) {
  const auto instance = launch(alice_, 1);
  run(instance.id);
  const std::string gpu = get(instance.id).gpus.at(0);
  EXPECT_EQ(ctl_.fleet().set_idle_alert(bob_, instance.id, 10, 60'000, true).error().kind,
            ErrorKind::kNotFound);
  ASSERT_TRUE(ctl_.fleet().set_idle_alert(alice_, instance.id, 10, 60'000, true));
  seconds(70, [&] {
    run(instance.id);
    sample(gpu, Metric::kGpuUtil, 1);
  });
  EXPECT_EQ(get(instance.id).state, InstanceState::kStopping);
  const auto fired = events(alice_, "alert.firing");
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0]->tenant_id, alice_.tenant_id);
  EXPECT_NE(fired[0]->message.find("instance_idle." + instance.id), std::string::npos);
  EXPECT_TRUE(events(bob_, "alert.firing").empty());
  // Stopping, it is no longer observed: the alert resolved; its history is alice's alone.
  const auto history = ctl_.fleet().monitor().alerts(alice_, 100).history;
  ASSERT_FALSE(history.empty());
  EXPECT_TRUE(std::any_of(history.begin(), history.end(), [](const AlertRecord* r) {
    return r->transition.to == AlertState::kFiring && r->transition.auto_stop;
  }));
  EXPECT_TRUE(ctl_.fleet().monitor().alerts(bob_, 100).history.empty());
}

TEST_F(MonitoringTest, GpusNameTheirFirstHolderAndInstancesAverageTheirGpus) {
  // Rules that hold for every observation, so that each one is an alert to look at.
  monitor::Rule warm = hot_rule();
  warm.name = "warm";
  warm.threshold = 0;
  warm.for_ms = 0;
  ASSERT_TRUE(ctl_.fleet().monitor().put_rule(admin_, warm));
  ASSERT_TRUE(
      ctl_.fleet().monitor().put_rule(admin_, {.name = "busy",
                                               .signal = {monitor::SignalKind::kInstanceGpuUtil},
                                               .comparison = monitor::Comparison::kGt,
                                               .threshold = 0,
                                               .severity = monitor::Severity::kInfo}));
  const auto pair = launch(alice_, 2);
  auto half = spec(1);
  half.gpu_milli = 500;
  const auto first_half = launch(bob_, half);
  const auto second_half = launch(bob_, half);
  ASSERT_EQ(get(first_half.id).gpus, get(second_half.id).gpus);  // packed on one GPU
  run(pair.id);
  run(first_half.id);
  run(second_half.id);
  // GPU-a<i> runs at 10 (i + 1) %.
  const auto util = [](const std::string& uuid) { return 10.0 * (std::stoi(uuid.substr(5)) + 1); };
  for (int i = 0; i < 8; ++i) {
    const std::string uuid = "GPU-a" + std::to_string(i);
    const int64_t t = to_unix_ms(clock_.now());
    const GpuSamples gpu{uuid, {{Metric::kGpuTemp, t, 50}, {Metric::kGpuUtil, t, util(uuid)}}};
    ASSERT_TRUE(ctl_.fleet().ingest_gpu_samples(node_, std::span(&gpu, 1)));
  }
  clock_.advance(kAlertEvaluationInterval);
  run(pair.id);  // a report of all three running
  ctl_.tick();

  std::map<std::string, monitor::Observation> warm_gpus, busy_instances;
  for (const auto& alert : ctl_.fleet().monitor().alerts(admin_, 0).active) {
    if (alert.rule == "warm") warm_gpus[alert.subject.subject] = alert.subject;
    if (alert.rule == "busy") busy_instances[alert.subject.subject] = alert.subject;
  }
  EXPECT_EQ(warm_gpus.size(), 8u);  // every GPU, held or not
  const std::string shared = get(first_half.id).gpus.at(0);
  const std::string first_bob = std::min(first_half.id, second_half.id);
  for (const auto& [uuid, observed] : warm_gpus) {
    const auto& pair_gpus = get(pair.id).gpus;
    const bool alices = std::find(pair_gpus.begin(), pair_gpus.end(), uuid) != pair_gpus.end();
    EXPECT_EQ(observed.instance, alices ? pair.id : uuid == shared ? first_bob : "") << uuid;
    EXPECT_EQ(observed.tenant, alices           ? alice_.tenant_id
                               : uuid == shared ? bob_.tenant_id
                                                : "")
        << uuid;
    EXPECT_EQ(observed.node, node_);
    EXPECT_EQ(observed.gpu_type, "h100-80g");
  }
  ASSERT_EQ(busy_instances.size(), 3u);
  const auto& pair_gpus = get(pair.id).gpus;
  EXPECT_DOUBLE_EQ(*busy_instances.at(pair.id).value,
                   (util(pair_gpus.at(0)) + util(pair_gpus.at(1))) / 2);
  EXPECT_EQ(busy_instances.at(pair.id).tenant, alice_.tenant_id);
  EXPECT_EQ(busy_instances.at(pair.id).gpu_type, "h100-80g");
  // A shared GPU counts for each instance on it.
  EXPECT_DOUBLE_EQ(*busy_instances.at(first_half.id).value, util(shared));
  EXPECT_DOUBLE_EQ(*busy_instances.at(second_half.id).value, util(shared));
}

TEST_F(MonitoringTest, RollupsRulesAndHistorySurviveAStoreRoundTrip) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gpurent-monitoring-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto store = store::open_sqlite_store((dir / "db").string());
  ASSERT_TRUE(store) << store.error().message;
  auto first = (*store)->commit(ctl_.take_changes());
  ASSERT_TRUE(first) << first.error().message;

  ASSERT_TRUE(ctl_.fleet().monitor().put_rule(admin_, hot_rule()));
  // Three minutes of samples, then quiet past the seal: three closed minutes.
  seconds(180, [&] {
    report(node_, {});
    temperature("GPU-a0", 90);
  });
  seconds(15 * 60, [&] { report(node_, {}); });
  auto changes = ctl_.take_changes();
  EXPECT_GE(changes.monitoring_changes.rollups.size(), 3u);
  auto committed = (*store)->commit(changes);
  ASSERT_TRUE(committed) << committed.error().message;
  MetricsQuery query{.node = node_,
                     .from_ms = to_unix_ms(clock_.now()) - 30 * 60'000,
                     .resolution = monitor::Resolution::kMinute};
  auto before = ctl_.fleet().query_metrics(admin_, query);
  ASSERT_TRUE(before);
  EXPECT_GE(before->result.points.size(), 3u);
  const auto history_before = ctl_.fleet().monitor().alerts(admin_, 100).history.size();
  EXPECT_GE(history_before, 3u);  // pending, firing, resolved (the samples stopped)

  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot) << snapshot.error().message;
  Controller restored(clock_, {.seed = 7});
  ASSERT_TRUE(restored.restore(std::move(*snapshot)));
  auto after = restored.fleet().query_metrics(admin_, query);
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->result.points, before->result.points);
  const auto rules = restored.fleet().monitor().rules(admin_);
  ASSERT_TRUE(rules);
  EXPECT_TRUE(std::any_of(rules->begin(), rules->end(),
                          [](const monitor::Rule& r) { return r.name == "hot"; }));
  EXPECT_EQ(restored.fleet().monitor().alerts(admin_, 100).history.size(), history_before);
  // GPU-a0 is known from its rollups alone, with no sample since the restart: it is observed, and
  // missing. The GPUs that never reported are not.
  for (int i = 0; i < 6; ++i) {
    clock_.advance(Millis(1'000));
    ASSERT_TRUE(
        restored.apply_report(node_, {restored.fleet().desired_state(node_)->generation, {}}));
    restored.tick();
  }
  std::vector<std::string> missing;
  for (const auto& alert : restored.fleet().monitor().alerts(admin_, 0).active) {
    if (alert.rule == "gpu_missing") missing.push_back(alert.subject.subject);
  }
  EXPECT_EQ(missing, std::vector<std::string>{"GPU-a0"});
  std::filesystem::remove_all(dir);
}

// A real GPU passed through to a VM leaves the host's driver, and its telemetry stops: that is
// no fault. The same silence from a GPU a process holds is. What the guest reports is watched.
TEST_F(MonitoringTest, ARealGpuInsideAVmIsNotMissing) {
  model::NodeRegistration registration{
      .name = "node-real",
      .cpu_count = 64,
      .memory_mb = 512 * 1024,
      .simulated = false,
      .vm = model::VmCapability{.accelerator = "kvm", .gpu_passthrough = true},
      .agent_version = "test"};
  for (int i = 0; i < 2; ++i) {
    registration.gpus.push_back({"GPU-r" + std::to_string(i), i, "a100-80g", "A100", 81920});
  }
  const auto node = ctl_.register_node(hash_secret("join"), registration, "cred-node-real",
                                       hash_secret("cred-node-real"));
  ASSERT_TRUE(node) << node.error().message;
  model::InstanceSpec in_vm = spec(1);
  in_vm.gpu_types = {"a100-80g"};
  in_vm.vm = true;
  model::InstanceSpec in_process = in_vm;
  in_process.vm = false;
  const auto vm = launch(alice_, in_vm);
  const auto process = launch(alice_, in_process);
  run(vm.id);
  run(process.id);
  ASSERT_EQ(get(vm.id).node_id, node->node_id);
  ASSERT_EQ(get(process.id).node_id, node->node_id);
  const std::string vm_gpu = get(vm.id).gpus.at(0);
  const std::string process_gpu = get(process.id).gpus.at(0);
  // Both report, then neither does (the VM's GPU went to vfio-pci; the other fell silent).
  const auto report_node = [&] {
    ASSERT_TRUE(ctl_.apply_report(
        node->node_id, {ctl_.fleet().desired_state(node->node_id)->generation,
                        {{vm.id, get(vm.id).run, model::WorkloadPhase::kRunning},
                         {process.id, get(process.id).run, model::WorkloadPhase::kRunning}}}));
  };
  seconds(3, [&] {
    report_node();
    for (const auto& uuid : {vm_gpu, process_gpu}) {
      const GpuSamples gpu{uuid, {{Metric::kGpuUtil, to_unix_ms(clock_.now()), 50}}};
      ASSERT_TRUE(ctl_.fleet().ingest_gpu_samples(node->node_id, std::span(&gpu, 1)));
    }
  });
  seconds(120, report_node);
  const auto active = [&](std::string_view rule) {
    std::vector<std::string> subjects;
    for (const auto& alert : ctl_.fleet().monitor().alerts(admin_, 0).active) {
      if (alert.rule == rule) subjects.push_back(alert.subject.subject);
    }
    return subjects;
  };
  EXPECT_EQ(active("gpu_missing"), std::vector<std::string>{process_gpu});

  // Once its guest reports it (agent/vm/guest_gpu_report.h), it is watched as any GPU.
  ASSERT_TRUE(ctl_.fleet().monitor().put_rule(admin_, hot_rule()));
  seconds(15, [&] {
    report_node();
    const int64_t now = to_unix_ms(clock_.now());
    const GpuSamples gpu{vm_gpu, {{Metric::kGpuUtil, now, 90}, {Metric::kGpuTemp, now, 95}}};
    ASSERT_TRUE(ctl_.fleet().ingest_gpu_samples(node->node_id, std::span(&gpu, 1)));
  });
  EXPECT_EQ(active("hot"), std::vector<std::string>{vm_gpu});
  EXPECT_EQ(active("gpu_missing"), std::vector<std::string>{process_gpu});
}

TEST_F(MonitoringTest, AnAcknowledgementSurvivesARestartThroughTheStore) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gpurent-monitoring-ack-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto store = store::open_sqlite_store((dir / "db").string());
  ASSERT_TRUE(store) << store.error().message;
  ASSERT_TRUE(ctl_.fleet().monitor().put_rule(admin_, hot_rule()));
  const auto hot = [&](Controller& c, int count) {
    for (int i = 0; i < count; ++i) {
      clock_.advance(Millis(1'000));
      const int64_t generation = c.fleet().desired_state(node_)->generation;
      ASSERT_TRUE(c.apply_report(node_, {generation, {}}));
      const int64_t t = to_unix_ms(clock_.now());
      const GpuSamples gpu{"GPU-a3", {{Metric::kGpuTemp, t, 90}, {Metric::kGpuUtil, t, 50}}};
      ASSERT_TRUE(c.fleet().ingest_gpu_samples(node_, std::span(&gpu, 1)));
      c.tick();
    }
  };
  const auto hot_alert = [&](const Controller& c) -> std::optional<monitor::Alert> {
    for (auto& alert : c.fleet().monitor().alerts(admin_, 100).active) {
      if (alert.rule == "hot") return alert;
    }
    return std::nullopt;
  };
  // Acknowledged while pending: the ack goes with it to firing.
  hot(ctl_, 6);
  ASSERT_TRUE(hot_alert(ctl_));
  const int64_t acked_at = to_unix_ms(clock_.now());
  ASSERT_TRUE(ctl_.fleet().monitor().acknowledge(admin_, FleetMonitor::alert_id("hot", "GPU-a3")));
  hot(ctl_, 10);
  ASSERT_EQ(hot_alert(ctl_)->state, AlertState::kFiring);
  auto list = ctl_.fleet().monitor().alerts(admin_, 100);
  ASSERT_EQ(list.history.back()->transition.to, AlertState::kFiring);
  ASSERT_TRUE(list.history.back()->ack);
  EXPECT_EQ(list.history.back()->ack->by, admin_.key_id);
  auto committed = (*store)->commit(ctl_.take_changes());
  ASSERT_TRUE(committed) << committed.error().message;
  // Acknowledging again changes nothing.
  ASSERT_TRUE(ctl_.fleet().monitor().acknowledge(admin_, FleetMonitor::alert_id("hot", "GPU-a3")));
  EXPECT_TRUE(ctl_.take_changes().monitoring_changes.acknowledged.empty());

  // A restart: the alert comes back from new samples, acknowledged as before.
  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot) << snapshot.error().message;
  Controller restored(clock_, {.seed = 7});
  ASSERT_TRUE(restored.restore(std::move(*snapshot)));
  hot(restored, 20);
  auto again = hot_alert(restored);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->state, AlertState::kFiring);
  EXPECT_TRUE(again->acknowledged);
  EXPECT_EQ(again->acknowledged_by, admin_.key_id);
  EXPECT_EQ(again->acknowledged_at_ms, acked_at);
  // ... and its new records carry it, so that a second restart keeps it too.
  list = restored.fleet().monitor().alerts(admin_, 100);
  ASSERT_EQ(list.history.back()->transition.rule, "hot");
  ASSERT_TRUE(list.history.back()->ack);
  committed = (*store)->commit(restored.take_changes());
  ASSERT_TRUE(committed) << committed.error().message;
  snapshot = (*store)->load();
  ASSERT_TRUE(snapshot);
  const auto& last = snapshot->monitoring.alert_history.back();
  EXPECT_EQ(last.transition.to, AlertState::kFiring);
  ASSERT_TRUE(last.ack);
  EXPECT_EQ(last.ack->at_ms, acked_at);

  // An alert that does not come back within the window loses its ack: when it fires later it is
  // a new alert.
  Controller later(clock_, {.seed = 8});
  ASSERT_TRUE(later.restore(std::move(*snapshot)));
  for (int i = 0; i < 11 * 60; ++i) {
    clock_.advance(Millis(1'000));
    ASSERT_TRUE(later.apply_report(node_, {later.fleet().desired_state(node_)->generation, {}}));
    later.tick();
  }
  hot(later, 6);
  ASSERT_TRUE(hot_alert(later));
  EXPECT_FALSE(hot_alert(later)->acknowledged);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpurent::controller
