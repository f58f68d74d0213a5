#include "cli/views.h"

#include <gtest/gtest.h>

namespace gpurent::cli {
namespace {

const Timestamp kNow = *parse_rfc3339("2026-11-30T15:30:00.000Z");

TEST(CliViewsTest, Instances) {
  const Json items = Json::parse(R"([
    {"id": "i-1", "name": "train-1", "state": "running", "gpu_type": "h100-80g", "gpu_count": 2,
     "node_id": "n-1", "price_per_gpu_hour_micros": 18000000, "currency": "CNY",
     "created_at": "2026-11-30T15:25:00.000Z"},
    {"id": "i-2", "name": "", "state": "pending", "gpu_type": "a100-80g", "gpu_count": 1,
     "node_id": null, "price_per_gpu_hour_micros": 9500000, "currency": "CNY",
     "created_at": "2026-11-30T12:30:00.000Z"}
  ])");
  EXPECT_EQ(instances_view(items, kNow),
            "ID    NAME      STATE     GPUS          NODE   PRICE         CREATED\n"
            "i-1   train-1   running   2x h100-80g   n-1    CNY 36.00/h   5m ago\n"
            "i-2   -         pending   1x a100-80g   -      CNY 9.50/h    3h ago\n");
}

TEST(CliViewsTest, InstancesShowAPriceOnlyWhileTheyHoldOrWaitForGpus) {
  const Json items = Json::parse(R"([
    {"id": "i-3", "name": "i-3", "state": "stopped", "gpu_type": "h100-80g", "gpu_count": 1,
     "node_id": null, "price_per_gpu_hour_micros": 18000000, "currency": "CNY",
     "created_at": "2026-11-30T15:25:00.000Z"}])");
  EXPECT_EQ(instances_view(items, kNow),
            "ID    NAME   STATE     GPUS          NODE   PRICE   CREATED\n"
            "i-3   -      stopped   1x h100-80g   -      -       5m ago\n");
}

TEST(CliViewsTest, InstanceDetails) {
  const Json instance = Json::parse(R"(
    {"id": "i-1", "name": "train-1", "tenant_id": "t-1", "state": "failed", "gpu_type": "h100-80g",
     "gpu_count": 2, "cpu": 16, "memory_gb": 128,
     "command": ["python3", "train.py", "--lr", "1e-3"], "env": {"EPOCHS": "3"},
     "pricing": "on_demand", "node_id": "n-1",
     "volumes": [{"volume_id": "v-1", "mount_path": "/data"},
                 {"volume_id": "v-2", "mount_path": "/mnt/x"}],
     "gpus": ["GPU-a", "GPU-b"], "run": 1, "created_at": "2026-11-30T15:25:00.000Z",
     "started_at": null, "ended_at": null, "exit_code": 1, "reason": "exited with status 1",
     "price_per_gpu_hour_micros": 18000000, "currency": "CNY"})");
  const std::string text = instance_view(instance, kNow);
  EXPECT_NE(text.find("State:      failed\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Reason:     exited with status 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Command:    python3 train.py --lr 1e-3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Price:      CNY 36.00/h (CNY 18.00/h per GPU)\n"), std::string::npos);
  EXPECT_NE(text.find("Created:    2026-11-30T15:25:00.000Z (5m ago)\n"), std::string::npos);
  EXPECT_NE(text.find("Started:    -\n"), std::string::npos);
  EXPECT_NE(text.find("Exit code:  1\n"), std::string::npos);
  EXPECT_NE(text.find("Volumes:    v-1:/data, v-2:/mnt/x\n"), std::string::npos) << text;
}

TEST(CliViewsTest, OffersAndUnpricedTypes) {
  EXPECT_EQ(offers_view(Json::parse(R"([{"gpu_type": "h100-80g",
      "display_name": "NVIDIA H100 80GB", "memory_mb": 81920, "total": 8, "free": 6,
      "max_free_per_node": 6, "price_per_gpu_hour_micros": 18000000,
      "spot_price_per_gpu_hour_micros": null, "currency": "CNY", "measured": null}])")),
            "GPU TYPE   NAME               MEMORY   FREE   TOTAL   MAX/NODE   PRICE         SPOT   "
            "TFLOPS   TFLOPS PER UNIT-H\n"
            "h100-80g   NVIDIA H100 80GB   80 GiB   6      8       6          CNY 18.00/h   -      "
            "-        -\n");
  // Measured (here simulated): the training TFLOPS and what a currency unit buys an hour.
  const std::string measured = offers_view(Json::parse(R"([{"gpu_type": "h100-80g",
      "display_name": "NVIDIA H100 80GB", "memory_mb": 81920, "total": 8, "free": 6,
      "max_free_per_node": 6, "price_per_gpu_hour_micros": 18000000,
      "spot_price_per_gpu_hour_micros": 9000000, "currency": "CNY",
      "measured": {"gpus": 8, "simulated": true, "spread_percent": 0,
                   "figures": {"gemm_tflops": {"bf16": 692.65}, "training_tflops": 692.65,
                               "memory_gbps": 3015, "h2d_gbps": 51.2, "d2h_gbps": 51.2},
                   "perf_per_price": 38.48, "spot_perf_per_price": 76.96}}])"));
  EXPECT_NE(measured.find("CNY 18.00/h   CNY 9.00/h   693*     38.5\n"), std::string::npos)
      << measured;
  EXPECT_NE(measured.find("* simulated GPUs"), std::string::npos) << measured;
  EXPECT_EQ(measured.find("RESNET-50"), std::string::npos) << "no run recorded: no column";
  const std::string trained = offers_view(Json::parse(R"([{"gpu_type": "h100-80g",
      "display_name": "NVIDIA H100 80GB", "memory_mb": 81920, "total": 8, "free": 6,
      "max_free_per_node": 6, "price_per_gpu_hour_micros": 18000000,
      "spot_price_per_gpu_hour_micros": null, "currency": "CNY",
      "measured": {"gpus": 0, "simulated": false, "spread_percent": 0,
                   "figures": {"gemm_tflops": {}, "training_tflops": null,
                               "memory_gbps": 0, "h2d_gbps": 0, "d2h_gbps": 0},
                   "perf_per_price": null, "spot_perf_per_price": null,
                   "resnet50": {"gpus": 1, "model": "resnet50", "batch": 64, "image_size": 224,
                                "images_per_s": {"amp": 2950.4, "fp32": 812.2},
                                "images_per_price": 590080, "spot_images_per_price": null}}}])"));
  EXPECT_NE(trained.find("RESNET-50 IMG/S   IMAGES PER UNIT\n"), std::string::npos) << trained;
  EXPECT_NE(trained.find("-        -                   2950              590080\n"),
            std::string::npos)
      << trained;
  EXPECT_EQ(gpu_types_view(Json::parse(R"([{"slug": "x-1g", "display_name": "X",
      "memory_mb": 1024, "price_per_gpu_hour_micros": 0, "currency": "CNY", "total": 0,
      "free": 0}])")),
            "GPU TYPE   NAME   MEMORY   FREE   TOTAL   PRICE\n"
            "x-1g       X      1 GiB    0      0       -\n");
}

TEST(CliViewsTest, UsageWithTotal) {
  const Json usage = Json::parse(R"({"items": [{"instance_id": "i-1", "run": 1,
      "gpu_type": "h100-80g", "gpu_count": 1, "price_per_gpu_hour_micros": 18000000,
      "started_at": "2026-11-30T14:30:00.000Z", "ended_at": null, "seconds": 3600,
      "amount_micros": 18000000}], "total_micros": 18000000, "currency": "CNY"})");
  EXPECT_EQ(usage_view(usage, kNow),
            "INSTANCE   RUN   GPUS          PRICE         STARTED   DURATION   AMOUNT\n"
            "i-1        1     1x h100-80g   CNY 18.00/h   1h ago    1h00m      CNY 18.00\n"
            "\nTotal: CNY 18.00\n");
}

TEST(CliViewsTest, UsageSaysWhatOfARunsDurationIsItsMinimum) {
  const Json usage = Json::parse(R"({"items": [{"instance_id": "i-1", "run": 1,
      "gpu_type": "h100-80g", "gpu_count": 1, "price_per_gpu_hour_micros": 18000000,
      "started_at": "2026-11-30T15:29:00.000Z", "ended_at": "2026-11-30T15:29:01.000Z",
      "seconds": 60, "minimum_seconds": 59, "amount_micros": 300000}], "total_micros": 300000,
      "currency": "CNY"})");
  EXPECT_NE(usage_view(usage, kNow).find("1m00s (59s of it the minimum)"), std::string::npos)
      << usage_view(usage, kNow);
}

TEST(CliViewsTest, LedgerAmountsAreMoneyInTheLedgersCurrency) {
  // Tables show cents (-o json keeps the exact micros).
  const Json transfers = Json::parse(R"([{"id": "x-1", "at": "2026-11-30T15:29:00.000Z",
      "kind": "usage", "from_account": "tenant:t-1:cash", "to_account": "platform:revenue",
      "amount_micros": 5000, "currency": "CNY", "reference": "i-1"}])");
  EXPECT_EQ(transfers_view(transfers, kNow),
            "ID    TIME     KIND    FROM              TO                 AMOUNT     REFERENCE\n"
            "x-1   1m ago   usage   tenant:t-1:cash   platform:revenue   CNY 0.01   i-1\n");
}

TEST(CliViewsTest, NodesSummariseGpus) {
  const Json nodes = Json::parse(R"([{"id": "n-1", "name": "gpu01", "state": "ready",
      "gpu_count": 3, "free_gpus": 1, "gpus": [{"type": "a100-80g"}, {"type": "a100-80g"},
      {"type": "rtx4090-24g"}], "cpu_count": 64, "memory_mb": 524288, "simulated": true,
      "last_heartbeat": "2026-11-30T15:29:58.000Z"}])");
  EXPECT_EQ(nodes_view(nodes, kNow),
            "ID    NAME          STATE   GPUS                          FREE   CPU   MEMORY    "
            "LAST SEEN\n"
            "n-1   gpu01 (sim)   ready   2x a100-80g, 1x rtx4090-24g   1      64    512 GiB   "
            "2s ago\n");
  Json cordoned = nodes;
  cordoned[0]["cordoned"] = true;
  EXPECT_NE(nodes_view(cordoned, kNow).find("ready (cordoned)"), std::string::npos);
}

TEST(CliViewsTest, JobsShowHowManyTasksEnded) {
  const Json jobs = Json::parse(R"([{"id": "j-1", "name": "sweep", "state": "running",
      "gpu_type": "h100-80g", "gpu_count": 1, "nodes": 1, "array": 4,
      "task_counts": {"queued": 1, "running": 1, "succeeded": 1, "failed": 1, "cancelled": 0,
                      "preempted": 0},
      "created_at": "2026-11-30T15:25:00.000Z"}])");
  EXPECT_EQ(jobs_view(jobs, kNow),
            "ID    NAME    STATE     GPUS          NODES   TASKS DONE   CREATED\n"
            "j-1   sweep   running   1x h100-80g   1       2/4          5m ago\n");
}

TEST(CliViewsTest, JobDetailsListTasksOrSayHowToGetThem) {
  Json job = Json::parse(R"({"id": "j-1", "name": "", "state": "failed", "gpu_type": "h100-80g",
      "gpu_count": 8, "nodes": 2, "array": 1, "retries": 2, "command": ["torchrun", "train.py"],
      "pricing": "on_demand", "max_runtime_s": 5400, "reason": "task 0 failed",
      "task_counts": {"queued": 0, "failed": 1},
      "tasks": [{"index": 0, "state": "failed", "attempts": 3, "exit_code": 7,
                 "instances": ["i-1", "i-2"]}],
      "created_at": "2026-11-30T15:25:00.000Z", "started_at": null, "ended_at": null})");
  std::string text = job_view(job, kNow);
  EXPECT_NE(text.find("GPUs:         8x h100-80g on each of 2 nodes\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Tasks:        1 (1 failed)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Max runtime:  1h30m\n"), std::string::npos) << text;
  EXPECT_NE(text.find("TASK   STATE    ATTEMPTS   EXIT   INSTANCES\n"
                      "0      failed   3          7      i-1, i-2\n"),
            std::string::npos)
      << text;

  job.erase("tasks");
  job["array"] = 5000;
  text = job_view(job, kNow);
  EXPECT_NE(text.find("5000 tasks: `gpurent job show j-1 --tasks` lists them.\n"),
            std::string::npos)
      << text;
}

TEST(CliViewsTest, ReservationsAndQuotas) {
  const Json reservations = Json::parse(R"([{"id": "r-1", "tenant_id": "t-1",
      "gpu_type": "h100-80g", "gpu_count": 8, "state": "booked",
      "start": "2026-12-01T15:30:00.000Z", "end": "2026-12-01T17:30:00.000Z",
      "total_micros": 288000000, "paid_micros": 144000000, "currency": "CNY",
      "price_per_gpu_hour_micros": 18000000, "discount_permille": 0, "payment": "upfront"}])");
  EXPECT_EQ(reservations_view(reservations, kNow),
            "ID    TENANT   GPUS          STATE    START    END      TOTAL        PAID\n"
            "r-1   t-1      8x h100-80g   booked   in 24h   in 26h   CNY 288.00   CNY 144.00\n");
  // No discount: none is mentioned; one is, as a percentage.
  Json reservation = reservations[0];
  EXPECT_NE(reservation_view(reservation, kNow).find("CNY 18.00/GPU-h\n"), std::string::npos)
      << reservation_view(reservation, kNow);
  reservation["discount_permille"] = 125;
  EXPECT_NE(reservation_view(reservation, kNow).find("CNY 18.00/GPU-h, 12.5 % off"),
            std::string::npos);
  EXPECT_EQ(reservation_quote_text(reservation),
            "Booking 8 h100-80g GPU(s) from 2026-12-01T15:30:00.000Z to 2026-12-01T17:30:00.000Z "
            "takes CNY 288.00 from your balance now (CNY 18.00/GPU-h, 12.5 % off). Book it?");
  EXPECT_EQ(quota_view(Json::parse(R"({"tenant_id": "t-1", "max_gpus_per_type":
      {"a100-80g": 4, "h100-80g": 2}, "max_instances": null, "max_queued": 50,
      "weight": 3})")),
            "Tenant:          t-1\n"
            "Max GPUs:        4 a100-80g, 2 h100-80g\n"
            "Max instances:   no limit\n"
            "Max queued:      50\n"
            "Max array:       no limit\n"
            "Max body bytes:  no limit\n"
            "Weight:          3\n");
}

// What a server of another version leaves out is the typed body's default (a state: pending); a
// time it does not send prints as "-".
TEST(CliViewsTest, ToleratesMissingFields) {
  EXPECT_EQ(instances_view(Json::parse(R"([{"id": "i-1"}, 7])"), kNow),
            "ID    NAME   STATE     GPUS   NODE   PRICE   CREATED\n"
            "i-1   -      pending   -      -      -       -\n"
            "      -      pending   -      -      -       -\n");
}

}  // namespace
}  // namespace gpurent::cli
