#include "agent/sim_workloads.h"

#include <gtest/gtest.h>

namespace gpurent::agent {
namespace {

using model::WorkloadPhase;
using std::chrono::milliseconds;
using std::chrono::seconds;

model::WorkloadSpec spec(std::string instance_id, std::map<std::string, std::string> env = {},
                         bool should_run = true) {
  return {.instance_id = std::move(instance_id),
          .run = 1,
          .should_run = should_run,
          .command = {"sleep", "600"},
          .env = std::move(env)};
}

model::DesiredState desired(int64_t generation, std::vector<model::WorkloadSpec> workloads) {
  return {"n-1", generation, std::move(workloads)};
}

class SimWorkloadsTest : public ::testing::Test {
 protected:
  // The status sync() would report for the instance's run 1, after sending the logs it owes.
  std::optional<model::WorkloadStatus> synced(std::string_view instance_id) {
    for (const auto& key : workloads_.unsent_logs()) workloads_.log_sent(key);
    const auto report = workloads_.report();
    workloads_.reported(report);
    for (const auto& status : report.workloads) {
      if (status.instance_id == instance_id) return status;
    }
    return std::nullopt;
  }

  SimWorkloads workloads_;
  const SimWorkloads::Time t0_{};
};

TEST_F(SimWorkloadsTest, ADesiredRunIsRunningAtOnceAndItsLogIsOneLine) {
  EXPECT_TRUE(workloads_.converge(desired(1, {spec("i-a")}), t0_));
  auto report = workloads_.report();
  EXPECT_EQ(report.applied_generation, 1);
  ASSERT_EQ(report.workloads.size(), 1u);
  EXPECT_EQ(report.workloads[0].phase, WorkloadPhase::kRunning);
  // The start is reported first; the log is due once the server has taken that report.
  EXPECT_TRUE(workloads_.unsent_logs().empty());
  workloads_.reported(report);
  EXPECT_EQ(workloads_.unsent_logs(), (std::vector<WorkloadKey>{{"i-a", 1}}));
  EXPECT_FALSE(workloads_.next_exit());
  EXPECT_TRUE(kSimLogLine.ends_with("\n"));

  // The same desired state again changes nothing.
  EXPECT_FALSE(workloads_.converge(desired(1, {spec("i-a")}), t0_ + seconds(5)));
  EXPECT_FALSE(workloads_.advance(t0_ + seconds(3600)));
  EXPECT_EQ(synced("i-a")->phase, WorkloadPhase::kRunning);
}

TEST_F(SimWorkloadsTest, ARunWithADurationExitsWithZeroWhenItEnds) {
  workloads_.converge(desired(1, {spec("i-a", {{"GPURENT_SIM_DURATION_S", "2.5"}})}), t0_);
  EXPECT_EQ(workloads_.next_exit(), t0_ + milliseconds(2500));
  EXPECT_FALSE(workloads_.advance(t0_ + seconds(2)));
  EXPECT_TRUE(workloads_.advance(t0_ + milliseconds(2500)));
  EXPECT_FALSE(workloads_.next_exit());

  // Until its log is on the server, the exit is not reported; an exited run's log is due even
  // if its start was never reported.
  EXPECT_EQ(workloads_.report().workloads[0].phase, WorkloadPhase::kRunning);
  EXPECT_EQ(workloads_.unsent_logs(), (std::vector<WorkloadKey>{{"i-a", 1}}));
  const auto status = synced("i-a");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->phase, WorkloadPhase::kExited);
  EXPECT_EQ(status->exit_code, 0);
  // Still desired: kept (and never restarted) until the server drops it.
  EXPECT_FALSE(workloads_.converge(desired(1, {spec("i-a", {{"GPURENT_SIM_DURATION_S", "2.5"}})}),
                                   t0_ + seconds(3)));
  EXPECT_EQ(synced("i-a")->phase, WorkloadPhase::kExited);
  workloads_.converge(desired(2, {}), t0_ + seconds(4));
  EXPECT_EQ(workloads_.size(), 0u);
}

TEST_F(SimWorkloadsTest, AStopEndsTheRunWith143AndItIsForgottenOnceReported) {
  workloads_.converge(desired(1, {spec("i-a"), spec("i-b")}), t0_);
  synced("i-a");
  EXPECT_TRUE(workloads_.converge(desired(2, {spec("i-a", {}, false), spec("i-b")}), t0_));
  auto status = synced("i-a");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->phase, WorkloadPhase::kExited);
  EXPECT_EQ(status->exit_code, kSimStopExitCode);

  // No longer listed at all: stopped, then gone once the server has seen the exit.
  EXPECT_TRUE(workloads_.converge(desired(3, {}), t0_));
  EXPECT_EQ(workloads_.size(), 1u);  // i-b's exit is not reported yet
  status = synced("i-b");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->exit_code, kSimStopExitCode);
  EXPECT_EQ(workloads_.size(), 0u);
  EXPECT_TRUE(workloads_.report().workloads.empty());
  EXPECT_EQ(workloads_.report().applied_generation, 3);
}

TEST_F(SimWorkloadsTest, ARunStoppedBeforeItStartedIsNeverTracked) {
  EXPECT_TRUE(workloads_.converge(desired(4, {spec("i-a", {}, false)}), t0_));
  EXPECT_EQ(workloads_.size(), 0u);
  EXPECT_EQ(workloads_.report().applied_generation, 4);
}

TEST_F(SimWorkloadsTest, ABadDurationFailsTheStartWithTheReason) {
  for (const char* bad : {"soon", "-1", "1e99", "nan", "2s", ""}) {
    SimWorkloads workloads;
    workloads.converge(desired(1, {spec("i-a", {{"GPURENT_SIM_DURATION_S", bad}})}), t0_);
    workloads.log_sent({"i-a", 1});
    const auto report = workloads.report();
    ASSERT_EQ(report.workloads.size(), 1u) << bad;
    EXPECT_EQ(report.workloads[0].phase, WorkloadPhase::kExited) << bad;
    EXPECT_EQ(report.workloads[0].exit_code, kStartFailedExitCode) << bad;
    EXPECT_NE(report.workloads[0].message.find("GPURENT_SIM_DURATION_S"), std::string::npos);
  }
}

TEST_F(SimWorkloadsTest, AZeroDurationEndsAtTheFirstAdvance) {
  workloads_.converge(desired(1, {spec("i-a", {{"GPURENT_SIM_DURATION_S", "0"}})}), t0_);
  EXPECT_TRUE(workloads_.advance(t0_));
  EXPECT_EQ(synced("i-a")->exit_code, 0);
}

TEST_F(SimWorkloadsTest, EndExitsARunWithItsCode) {
  workloads_.converge(desired(1, {spec("i-a"), spec("i-b")}), t0_);
  EXPECT_EQ(workloads_.running(), (std::vector<WorkloadKey>{{"i-a", 1}, {"i-b", 1}}));
  EXPECT_TRUE(workloads_.end({"i-b", 1}, 2));
  EXPECT_FALSE(workloads_.end({"i-b", 1}, 3));  // exited already
  EXPECT_FALSE(workloads_.end({"i-c", 1}, 3));  // never ran
  EXPECT_EQ(workloads_.running(), (std::vector<WorkloadKey>{{"i-a", 1}}));
  EXPECT_EQ(synced("i-b")->exit_code, 2);
  // A stop afterwards does not change how it ended.
  workloads_.converge(desired(2, {spec("i-a"), spec("i-b", {}, false)}), t0_);
  EXPECT_EQ(synced("i-b")->exit_code, 2);
}

// Without a server between them (a replay, the controller's simulations): one call converges and
// reports, and an exit is in the report at once, its log counted as taken.
TEST_F(SimWorkloadsTest, ConvergeAndReportNeedsNoServer) {
  const auto state = desired(1, {spec("i-a", {{"GPURENT_SIM_DURATION_S", "5"}}),
                                 spec("i-b", {{"GPURENT_SIM_DURATION_S", "5"}}), spec("i-c")});
  auto report = converge_and_report(workloads_, state, t0_);
  EXPECT_EQ(report.applied_generation, 1);
  ASSERT_EQ(report.workloads.size(), 3u);
  for (const auto& status : report.workloads) EXPECT_EQ(status.phase, WorkloadPhase::kRunning);
  EXPECT_EQ(workloads_.ends_at({"i-a", 1}), t0_ + seconds(5));
  EXPECT_FALSE(workloads_.ends_at({"i-c", 1}));

  // Exits one run at a time, though both end together.
  EXPECT_FALSE(workloads_.advance(t0_ + seconds(4), {"i-a", 1}));
  EXPECT_TRUE(workloads_.advance(t0_ + seconds(5), {"i-a", 1}));
  EXPECT_FALSE(workloads_.ends_at({"i-a", 1}));
  report = converge_and_report(workloads_, state, t0_ + seconds(5));
  EXPECT_EQ(report.workloads[0].phase, WorkloadPhase::kExited);
  EXPECT_EQ(report.workloads[0].exit_code, 0);
  EXPECT_EQ(report.workloads[1].phase, WorkloadPhase::kRunning);
  EXPECT_TRUE(workloads_.unsent_logs().empty());
}

TEST_F(SimWorkloadsTest, OptionsGiveTheDurationsAndTheBound) {
  const auto minutes_by_name = [](const model::WorkloadSpec& spec) -> SimWorkloads::Duration {
    if (spec.instance_id == "i-bad") return fail(Error::invalid("bad", "no such item"));
    return std::chrono::minutes(spec.instance_id.size());
  };
  std::vector<model::WorkloadSpec> many;
  for (size_t i = 0; i < kMaxWorkloads + 10; ++i) many.push_back(spec(fmt::format("i-{}", i)));
  many.push_back(spec("i-bad"));
  SimWorkloads unbounded({.duration_of = minutes_by_name, .max_runs = SIZE_MAX});
  converge_and_report(unbounded, desired(1, many), t0_);
  EXPECT_EQ(unbounded.size(), kMaxWorkloads + 11);
  EXPECT_EQ(unbounded.ends_at({"i-7", 1}), t0_ + std::chrono::minutes(3));
  const auto report = converge_and_report(unbounded, desired(1, many), t0_);
  EXPECT_EQ(report.workloads.back().exit_code, kStartFailedExitCode);
  EXPECT_EQ(report.workloads.back().message, "no such item");

  SimWorkloads bounded;  // a real agent's bound
  bounded.converge(desired(1, many), t0_);
  EXPECT_EQ(bounded.size(), kMaxWorkloads);
}

}  // namespace
}  // namespace gpurent::agent
