// The node benchmark: a joining node's GPUs are measured before they take work, the figures are
// kept per GPU with each type's median, a GPU far below its type is flagged (and by policy
// quarantined), a released GPU is measured again, operators ask for a node's idle GPUs, an idle
// node with old figures is asked again, an unanswered request times out, and a pending request
// survives a restart. Operators record a finished ResNet-50 instance's images a second against its
// GPU, and each type's figure is the median of its GPUs' newest runs of one shape.
#include <gtest/gtest.h>

#include <algorithm>

#include "agent/bench/gpu_bench.h"
#include "agent/sim_workloads.h"
#include "controller/controller_test_fixture.h"
#include "model/template.h"

namespace gpurent::controller {
namespace {

constexpr ControllerOptions::Benchmarks kMeasure{.on_join_and_release = true,
                                                 .idle_interval = Millis(3'600'000),
                                                 .timeout = Millis(600'000),
                                                 .quarantine_slow = true};

class BenchmarkTest : public StoredControllerTest {
 protected:
  explicit BenchmarkTest(ControllerOptions::Benchmarks benchmarks = kMeasure)
      : StoredControllerTest({.seed = 7, .benchmarks = benchmarks}) {}

  const model::Node& node(const std::string& id) { return **ctl_.fleet().nodes().get(admin_, id); }

  // What the node's agent measures of the GPUs it is asked for: the simulated figures, with
  // `slow` (by UUID) at `fraction` of them.
  model::BenchmarkOutcome measured(const std::string& node_id,
                                   const std::map<std::string, double>& slow = {}) {
    const auto desired = ctl_.fleet().desired_state(node_id);
    EXPECT_TRUE(desired->benchmark);
    model::BenchmarkOutcome outcome{.request = desired->benchmark->id};
    const auto asked = agent::requested_gpus(*desired->benchmark, node(node_id).gpus);
    EXPECT_TRUE(asked);
    outcome.result = agent::simulated_benchmark(*asked);
    for (auto& gpu : outcome.result->gpus) {
      const auto it = slow.find(gpu.uuid);
      if (it == slow.end()) continue;
      for (auto& [precision, gflops] : gpu.gemm_gflops) {
        gflops = static_cast<int64_t>(static_cast<double>(gflops) * it->second);
      }
    }
    return outcome;
  }

  // The node's agent reports the outcome with every workload of its desired set running.
  void answer(const std::string& node_id,
              std::optional<model::BenchmarkOutcome> outcome = std::nullopt) {
    const auto desired = ctl_.fleet().desired_state(node_id);
    model::NodeReport report{.applied_generation = desired->generation};
    for (const auto& w : desired->workloads) {
      report.workloads.push_back(
          {w.instance_id, w.run, model::WorkloadPhase::kRunning, std::nullopt, ""});
    }
    report.benchmark = std::move(outcome);
    ASSERT_TRUE(ctl_.apply_report(node_id, report));
  }

  size_t events(std::string_view kind) {
    return ctl_.events().list(admin_, {.kind = std::string(kind)}, 100).size();
  }
};

TEST_F(BenchmarkTest, AJoiningNodesGpusAreMeasuredBeforeTheyTakeWork) {
  const model::Node& joined = node(node_);
  ASSERT_TRUE(joined.benchmark);
  EXPECT_EQ(joined.benchmark->gpus.size(), 8u);
  EXPECT_EQ(joined.benchmark->reason, model::BenchmarkReason::kJoin);
  const auto desired = ctl_.fleet().desired_state(node_);
  ASSERT_TRUE(desired->benchmark);
  EXPECT_EQ(desired->benchmark->id, joined.benchmark->id);
  // Nothing is placed on GPUs being measured.
  const auto waiting = launch(alice_, 1);
  EXPECT_EQ(get(waiting.id).state, InstanceState::kPending);

  // The simulated agent answers the desired state it is given, as the fleet's nodes do.
  agent::SimWorkloads agent;
  agent.answer_benchmarks(joined.gpus);
  const auto report = agent::converge_and_report(agent, *desired, agent::sim_time(clock_.now()));
  ASSERT_TRUE(report.benchmark);
  ASSERT_TRUE(ctl_.apply_report(node_, report));

  EXPECT_FALSE(node(node_).benchmark);
  EXPECT_FALSE(ctl_.fleet().desired_state(node_)->benchmark);
  EXPECT_EQ(get(waiting.id).state, InstanceState::kStarting);
  EXPECT_EQ(events("node.benchmarked"), 1u);
  const auto* history = ctl_.fleet().benchmarks().of_gpu("GPU-a3");
  ASSERT_NE(history, nullptr);
  ASSERT_EQ(history->runs.size(), 1u);
  EXPECT_TRUE(history->runs[0].simulated);
  EXPECT_EQ(history->runs[0].reason, model::BenchmarkReason::kJoin);
  EXPECT_EQ(history->runs[0].figures.gemm_gflops.at("bf16"), 692'650);
  // Peer copies within the node's NVLink domain are kept with the GPU they start from.
  const auto* type = ctl_.fleet().benchmarks().of_type("h100-80g");
  ASSERT_NE(type, nullptr);
  EXPECT_EQ(type->gpus, 8);
  EXPECT_TRUE(type->simulated);
  EXPECT_EQ(type->gemm_gflops.at("bf16"), 692'650);
  EXPECT_EQ(type->training_spread_percent, 0);
  // Durable with the report: a restart keeps the figures.
  commit(ctl_);
  const auto again = restarted(8);
  ASSERT_NE(again->fleet().benchmarks().of_gpu("GPU-a3"), nullptr);
  EXPECT_EQ(again->fleet().benchmarks().of_type("h100-80g")->gpus, 8);
  // An agent restarting with a lost identity registers again (a node without work): its measured
  // GPUs are not asked for again.
  const std::string other = add_node("node-b", "h100-80g", 8, "GPU-b");
  answer(other, measured(other));
  EXPECT_EQ(add_node("node-b", "h100-80g", 8, "GPU-b"), other);
  EXPECT_FALSE(node(other).benchmark) << "measured GPUs asked for again";
}

TEST_F(BenchmarkTest, AGpuFarBelowItsTypeIsFlaggedQuarantinedByPolicyAndMeasuredAgainOnRelease) {
  answer(node_, measured(node_, {{"GPU-a5", 0.8}}));
  const auto shortfall = ctl_.fleet().benchmarks().shortfall("GPU-a5");
  ASSERT_TRUE(shortfall);
  EXPECT_NEAR(shortfall->percent, 20, 0.01);
  EXPECT_EQ(shortfall->figure.substr(0, 5), "gemm_");
  EXPECT_EQ(ctl_.fleet().benchmarks().shortfall("GPU-a0")->percent, 0);
  EXPECT_EQ(events("gpu.slow"), 1u);
  EXPECT_TRUE(ctl_.fleet().quarantines().quarantined("GPU-a5"));
  EXPECT_EQ(ctl_.fleet().quarantines().on_node(node_)[0]->cause, "slow");
  // The alert rules observe it (gpu_benchmark_slow fires above 10 %).
  std::vector<monitor::ObservationRef> observed;
  ctl_.fleet().observe(observed, {});
  const auto slow = std::ranges::find_if(observed, [](const monitor::ObservationRef& o) {
    return o.signal.kind == monitor::SignalKind::kGpuBenchmarkShortfall && o.subject == "GPU-a5";
  });
  ASSERT_NE(slow, observed.end());
  EXPECT_NEAR(*slow->value, 20, 0.01);

  // Released after a fix: measured before it takes work, and now healthy.
  ASSERT_TRUE(ctl_.release_gpu(admin_, node_, 5));
  ASSERT_TRUE(node(node_).benchmark);
  EXPECT_EQ(node(node_).benchmark->gpus, std::vector<std::string>{"GPU-a5"});
  EXPECT_EQ(node(node_).benchmark->reason, model::BenchmarkReason::kReleased);
  const auto eight = launch(alice_, 8);
  EXPECT_EQ(get(eight.id).state, InstanceState::kPending);
  answer(node_, measured(node_));
  EXPECT_EQ(ctl_.fleet().benchmarks().shortfall("GPU-a5")->percent, 0);
  EXPECT_FALSE(ctl_.fleet().quarantines().quarantined("GPU-a5"));
  EXPECT_EQ(ctl_.fleet().benchmarks().of_gpu("GPU-a5")->runs.size(), 2u);
  EXPECT_EQ(get(eight.id).state, InstanceState::kStarting);
}

class FlagOnlyTest : public BenchmarkTest {
 protected:
  FlagOnlyTest()
      : BenchmarkTest({.on_join_and_release = true,
                       .idle_interval = Millis(0),
                       .timeout = Millis(600'000),
                       .quarantine_slow = false}) {}
};

TEST_F(FlagOnlyTest, WithoutThePolicyASlowGpuIsOnlyFlagged) {
  answer(node_, measured(node_, {{"GPU-a2", 0.85}}));
  EXPECT_EQ(events("gpu.slow"), 1u);
  EXPECT_FALSE(ctl_.fleet().quarantines().quarantined("GPU-a2"));
  // 5 % below is within the type's spread: not slow.
  const std::string other = add_node("node-b", "h100-80g", 8, "GPU-b");
  answer(other, measured(other, {{"GPU-b1", 0.95}}));
  EXPECT_NEAR(ctl_.fleet().benchmarks().shortfall("GPU-b1")->percent, 5, 0.01);
  EXPECT_EQ(events("gpu.slow"), 1u);
}

TEST_F(BenchmarkTest, FewerThanThreeGpusOfATypeAreNotJudged) {
  const std::string small = add_node("node-s", "a100-80g", 2, "GPU-s");
  answer(small, measured(small, {{"GPU-s1", 0.5}}));
  EXPECT_FALSE(ctl_.fleet().benchmarks().shortfall("GPU-s1"));
  EXPECT_FALSE(ctl_.fleet().quarantines().quarantined("GPU-s1"));
  // The median of two is their mean; the spread, their gap against it.
  const auto* type = ctl_.fleet().benchmarks().of_type("a100-80g");
  ASSERT_NE(type, nullptr);
  EXPECT_EQ(type->gpus, 2);
  EXPECT_NEAR(type->training_spread_percent, 100.0 * 0.5 / 0.75, 0.01);
}

TEST_F(BenchmarkTest, AFailedOrUnansweredBenchmarkLetsTheGpusTakeWorkAgain) {
  const auto waiting = launch(alice_, 1);
  answer(node_, model::BenchmarkOutcome{.request = node(node_).benchmark->id,
                                        .error = "cudaGetDeviceCount: no device"});
  EXPECT_FALSE(node(node_).benchmark);
  EXPECT_EQ(events("node.benchmark_failed"), 1u);
  EXPECT_EQ(get(waiting.id).state, InstanceState::kStarting);
  EXPECT_EQ(ctl_.fleet().benchmarks().of_gpu("GPU-a0"), nullptr);

  // A new node whose agent never answers: its GPUs take work once the request times out.
  const std::string silent = add_node("node-b", "h100-80g", 8, "GPU-b");
  ASSERT_TRUE(node(silent).benchmark);
  const auto next = launch(bob_, 8);
  EXPECT_EQ(get(next.id).state, InstanceState::kPending);
  clock_.advance(kMeasure.timeout + Millis(60'000));
  answer(silent);  // a report with no outcome keeps the node up
  ctl_.tick();
  EXPECT_FALSE(node(silent).benchmark);
  EXPECT_EQ(events("node.benchmark_failed"), 2u);
  EXPECT_EQ(get(next.id).state, InstanceState::kStarting);
}

TEST_F(BenchmarkTest, AnOutcomeForAnotherRequestIsIgnored) {
  const int64_t first = node(node_).benchmark->id;
  auto stale = measured(node_);
  ASSERT_TRUE(ctl_.benchmark_node(admin_, node_));  // merged into a new request
  EXPECT_GT(node(node_).benchmark->id, first);
  answer(node_, std::move(stale));
  EXPECT_TRUE(node(node_).benchmark);
  EXPECT_EQ(ctl_.fleet().benchmarks().of_gpu("GPU-a0"), nullptr);
}

class OperatorBenchmarkTest : public BenchmarkTest {
 protected:
  OperatorBenchmarkTest() : BenchmarkTest({}) {}
};

TEST_F(OperatorBenchmarkTest, OperatorsMeasureANodesIdleGpus) {
  EXPECT_FALSE(node(node_).benchmark) << "measured at join with the options off";
  const auto busy = launch(alice_, 2);
  ASSERT_EQ(get(busy.id).state, InstanceState::kStarting);
  const auto asked = ctl_.benchmark_node(admin_, node_);
  ASSERT_TRUE(asked) << asked.error().message;
  EXPECT_EQ(asked->gpus.size(), 6u);
  for (const auto& uuid : get(busy.id).gpus) {
    EXPECT_EQ(std::ranges::count(asked->gpus, uuid), 0) << uuid << " holds work";
  }
  EXPECT_EQ(asked->reason, model::BenchmarkReason::kOperator);
  EXPECT_EQ(ctl_.benchmark_node(alice_, node_).error().code, "forbidden");
  EXPECT_EQ(ctl_.benchmark_node(admin_, "n-nope").error().code, "node_not_found");
  answer(node_, measured(node_));
  EXPECT_EQ(ctl_.fleet().benchmarks().of_type("h100-80g")->gpus, 6);
  EXPECT_EQ(ctl_.fleet().benchmarks().of_gpu(get(busy.id).gpus[0]), nullptr);
  // Every GPU busy: nothing to measure.
  launch(bob_, 6);
  EXPECT_EQ(ctl_.benchmark_node(admin_, node_).error().code, "no_idle_gpus");
}

TEST_F(BenchmarkTest, AnIdleNodeIsMeasuredAgainOnceItsFiguresAreOld) {
  answer(node_, measured(node_));
  const std::string other = add_node("node-b", "h100-80g", 8, "GPU-b");
  answer(other, measured(other));
  const auto work = launch(alice_, 1);
  const std::string busy = get(work.id).node_id;
  const std::string idle = busy == node_ ? other : node_;
  clock_.advance(kMeasure.idle_interval - Millis(120'000));
  answer(node_);
  answer(other);
  ctl_.tick();
  EXPECT_FALSE(node(idle).benchmark) << "figures not old yet";
  clock_.advance(Millis(180'000));
  answer(node_);
  answer(other);
  ctl_.tick();
  ASSERT_TRUE(node(idle).benchmark);
  EXPECT_EQ(node(idle).benchmark->reason, model::BenchmarkReason::kIdle);
  EXPECT_EQ(node(idle).benchmark->gpus.size(), 8u);
  EXPECT_FALSE(node(busy).benchmark) << "a node with work is not disturbed";
}

TEST_F(BenchmarkTest, APendingRequestSurvivesARestartAndStillHoldsItsGpus) {
  commit(ctl_);
  const auto again = restarted(8);
  const auto* restored = *again->fleet().nodes().get(admin_, node_);
  ASSERT_TRUE(restored->benchmark);
  EXPECT_EQ(restored->benchmark->gpus.size(), 8u);
  EXPECT_TRUE(again->fleet().desired_state(node_)->benchmark);
  auto s = spec(1);
  const auto created = again->create_instance(alice_, std::move(s), std::nullopt, "");
  ASSERT_TRUE(created);
  EXPECT_EQ(created->instance.state, InstanceState::kPending);
}

// What the resnet50-bench template prints when it has run on `gpu`.
std::string resnet50_log(const std::string& gpu, double fp32, double amp, int batch = 64) {
  std::string log = "Downloading nothing\n";
  for (const auto& [precision, images] : {std::pair{"fp32", fp32}, std::pair{"amp", amp}}) {
    log += fmt::format(
        "GPURENT_RESNET50 {{\"precision\": \"{}\", \"images_per_s\": {}, \"batch\": {}, "
        "\"steps\": 30, \"image_size\": 224, \"device\": \"NVIDIA H100\", \"gpu\": \"{}\"}}\n",
        precision, images, batch, gpu);
  }
  return log;
}

class TrainingBenchmarkTest : public BenchmarkTest {
 protected:
  TrainingBenchmarkTest() : BenchmarkTest({}) {}

  // An instance made from the resnet50-bench template on one H100, running.
  model::Instance bench(const Principal& who) {
    model::InstanceSpec s = spec(1);
    s.restart_policy = model::RestartPolicy::kNever;
    const auto* t = *ctl_.templates().find(model::kResnet50Template);
    EXPECT_TRUE(model::apply_template(*t, model::RuntimeChoice::kProcess, {}, s));
    const auto instance = launch(who, std::move(s));
    run(instance.id);
    return get(instance.id);
  }
};

TEST_F(TrainingBenchmarkTest, AFinishedRunIsRecordedAgainstItsGpuOnceAndSurvivesARestart) {
  const auto instance = bench(alice_);
  const std::string gpu = instance.gpus.at(0);
  const std::string log = resnet50_log(gpu, 700.5, 2'500.25);
  EXPECT_EQ(ctl_.record_training_benchmark(admin_, instance.id, log).error().code,
            "benchmark_unfinished");
  run(instance.id, 0);
  ASSERT_EQ(get(instance.id).state, InstanceState::kStopped);
  EXPECT_EQ(ctl_.record_training_benchmark(alice_, instance.id, log).error().code, "forbidden");
  EXPECT_EQ(ctl_.record_training_benchmark(admin_, "i-nope", log).error().code,
            "instance_not_found");
  EXPECT_EQ(ctl_.record_training_benchmark(admin_, instance.id, "no results\n").error().code,
            "invalid_benchmark_log");
  EXPECT_EQ(ctl_.record_training_benchmark(admin_, instance.id, resnet50_log("GPU-nope", 1, 2))
                .error()
                .code,
            "invalid_benchmark_log");
  const auto changes_before = ctl_.take_changes(Controller::Form::kStoreRows);

  const auto recorded = ctl_.record_training_benchmark(admin_, instance.id, log);
  ASSERT_TRUE(recorded) << recorded.error().message;
  EXPECT_EQ(recorded->gpu, gpu);
  EXPECT_EQ(recorded->node_id, node_);
  EXPECT_EQ(recorded->gpu_type, "h100-80g");
  EXPECT_EQ(recorded->run.instance_id, instance.id);
  EXPECT_EQ(recorded->run.at, clock_.now());
  EXPECT_EQ(recorded->run.images_per_hour.at("fp32"), 2'521'800);  // 700.5 a second
  EXPECT_EQ(recorded->run.images_per_hour.at("amp"), 9'000'900);
  const auto* type = ctl_.fleet().benchmarks().of_type("h100-80g");
  ASSERT_TRUE(type && type->resnet50);
  EXPECT_EQ(type->gpus, 0) << "no node benchmark: only the training figure";
  EXPECT_EQ(type->resnet50->gpus, 1);
  EXPECT_EQ(type->resnet50->batch, 64);
  EXPECT_EQ(type->resnet50->images_per_hour.at("amp"), 9'000'900);

  clock_.advance(Millis(60'000));
  const auto again = ctl_.record_training_benchmark(admin_, instance.id, log);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->run.at, recorded->run.at) << "the run kept, not a second one";
  EXPECT_EQ(ctl_.fleet().benchmarks().of_gpu(gpu)->trainings.size(), 1u);

  commit(ctl_);
  const auto restored = restarted(8);
  const auto* kept = restored->fleet().benchmarks().of_type("h100-80g");
  ASSERT_TRUE(kept && kept->resnet50);
  EXPECT_EQ(kept->resnet50->images_per_hour.at("fp32"), 2'521'800);
}

TEST_F(TrainingBenchmarkTest, OnlyTheTemplatesOwnCommandIsABenchmark) {
  const auto plain = launch(alice_, 1);
  run(plain.id);
  const std::string gpu = get(plain.id).gpus.at(0);
  run(plain.id, 0);
  EXPECT_EQ(ctl_.record_training_benchmark(admin_, plain.id, resnet50_log(gpu, 1, 2)).error().code,
            "not_a_benchmark");
  // The template's name with the tenant's own command in its place is not the benchmark either.
  model::InstanceSpec s = spec(1);
  const auto* t = *ctl_.templates().find(model::kResnet50Template);
  ASSERT_TRUE(model::apply_template(*t, model::RuntimeChoice::kProcess,
                                    {.command = {"echo", "GPURENT_RESNET50"}}, s));
  const auto own = launch(alice_, std::move(s));
  run(own.id);
  const std::string own_gpu = get(own.id).gpus.at(0);
  run(own.id, 0);
  EXPECT_EQ(
      ctl_.record_training_benchmark(admin_, own.id, resnet50_log(own_gpu, 1, 2)).error().code,
      "not_a_benchmark");
  EXPECT_EQ(ctl_.fleet().benchmarks().of_type("h100-80g"), nullptr);
}

// The component alone, with a node of L4s.
class GpuBenchmarksTest : public testing::Test {
 protected:
  static model::Node l4_node(int gpus) {
    model::Node node{.id = "n-1"};
    for (int i = 0; i < gpus; ++i) {
      node.gpus.push_back({"GPU-" + std::to_string(i), i, "l4-24g", "L4", 24576});
    }
    return node;
  }

  ManualClock clock_{from_unix_ms(1'790'000'000'000)};
  ChangeSet changes_;
  GpuBenchmarks benchmarks_{{clock_, changes_}};
};

TEST_F(GpuBenchmarksTest, ATypesTrainingFigureIsTheMedianOfItsGpusNewestRunsOfTheNewestShape) {
  const model::Node node = l4_node(3);
  const auto run = [&](int gpu, int batch, int64_t amp) {
    clock_.advance(Millis(1000));
    return benchmarks_.record_training(
        node, node.gpus[gpu],
        {.instance_id = fmt::format("i-{}-{}", gpu, clock_.now().time_since_epoch().count()),
         .model = "resnet50",
         .batch = batch,
         .image_size = 224,
         .device = "L4",
         .images_per_hour = {{"amp", amp}, {"fp32", amp / 3}}});
  };
  run(0, 64, 1'000);
  run(1, 64, 3'000);
  EXPECT_EQ(benchmarks_.of_type("l4-24g")->resnet50->images_per_hour.at("amp"), 2'000);
  EXPECT_EQ(benchmarks_.of_type("l4-24g")->resnet50->gpus, 2);
  // A newer run at another batch: only runs of that shape are comparable with it.
  run(2, 32, 900);
  const auto* type = benchmarks_.of_type("l4-24g");
  EXPECT_EQ(type->resnet50->batch, 32);
  EXPECT_EQ(type->resnet50->gpus, 1);
  EXPECT_EQ(type->resnet50->images_per_hour.at("amp"), 900);
  run(0, 32, 1'100);
  EXPECT_EQ(benchmarks_.of_type("l4-24g")->resnet50->images_per_hour.at("amp"), 1'000);
  // The history keeps the newest runs; each record is durable.
  for (int i = 0; i < 25; ++i) run(1, 32, 5'000);
  EXPECT_EQ(benchmarks_.of_gpu("GPU-1")->trainings.size(), model::kBenchmarkHistory);
  EXPECT_EQ(changes_.gpu_benchmarks.size(), 29u);
  EXPECT_EQ(benchmarks_.of_type("l4-24g")->resnet50->images_per_hour.at("amp"), 1'100);
  EXPECT_FALSE(benchmarks_.shortfall("GPU-1")) << "training runs are not judged";
}

TEST_F(GpuBenchmarksTest, KeepsTheNewestRunsAndJudgesAgainstTheMedianOfEachGpusNewest) {
  const model::Node node = l4_node(4);
  const model::BenchmarkRequest request{.id = 1, .gpus = {"GPU-0", "GPU-1", "GPU-2", "GPU-3"}};
  const auto figures = [](int64_t bf16, int64_t memory) {
    std::vector<model::GpuBenchmark> gpus;
    for (int i = 0; i < 4; ++i) {
      gpus.push_back({.index = i,
                      .uuid = "GPU-" + std::to_string(i),
                      .gemm_gflops = {{"bf16", bf16 + i}, {"fp32", 30'000}},
                      .memory_mbps = memory});
    }
    return model::NodeBenchmark{.simulated = false, .gpus = gpus, .peers = {}};
  };
  for (int run = 0; run < 25; ++run) {
    EXPECT_EQ(benchmarks_.record(node, request, figures(100'000 + run, 300'000)).size(), 4u);
  }
  EXPECT_EQ(benchmarks_.of_gpu("GPU-0")->runs.size(), model::kBenchmarkHistory);
  EXPECT_EQ(benchmarks_.of_gpu("GPU-0")->runs.front().figures.gemm_gflops.at("bf16"), 100'005);
  EXPECT_EQ(changes_.gpu_benchmarks.size(), 100u);  // each record, durable
  // The newest runs: 100'024 + index; the median of four is the mean of the middle two.
  const auto* type = benchmarks_.of_type("l4-24g");
  ASSERT_NE(type, nullptr);
  EXPECT_EQ(type->gemm_gflops.at("bf16"), 100'025);
  EXPECT_EQ(type->gemm_gflops.at("fp32"), 30'000);
  EXPECT_FALSE(type->simulated);
  // One GPU's memory falls by a quarter: its worst figure.
  auto worse = figures(100'024, 300'000);
  worse.gpus[2].memory_mbps = 225'000;
  benchmarks_.record(node, {.id = 2, .gpus = {"GPU-2"}}, worse);
  EXPECT_EQ(benchmarks_.of_gpu("GPU-1")->runs.size(), model::kBenchmarkHistory)
      << "GPUs not asked for are not recorded";
  const auto shortfall = benchmarks_.shortfall("GPU-2");
  ASSERT_TRUE(shortfall);
  EXPECT_EQ(shortfall->figure, "memory");
  EXPECT_EQ(shortfall->median, 300'000);
  EXPECT_NEAR(shortfall->percent, 25, 1e-9);
  EXPECT_FALSE(benchmarks_.shortfall("GPU-9"));
  // A GPU the node does not have is ignored.
  auto stray = figures(1, 1);
  stray.gpus[0].uuid = "GPU-elsewhere";
  benchmarks_.record(node, {.id = 3, .gpus = {"GPU-elsewhere"}}, stray);
  EXPECT_EQ(benchmarks_.of_gpu("GPU-elsewhere"), nullptr);
}

}  // namespace
}  // namespace gpurent::controller
