// bench: what a GPU type trains at. `gpurent bench resnet50 --gpu TYPE` runs the built-in
// resnet50-bench template (model/template.cc) on one GPU of the type, waits for it to finish, and
// reads its images a second from its log (docs/node-benchmark.md); with --record, an operator
// keeps them for the GPU type (POST /v1/training-benchmarks).
#include <fmt/format.h>

#include <CLI/App.hpp>
#include <memory>
#include <sstream>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/instance_wait.h"
#include "cli/output.h"
#include "model/benchmark.h"

namespace gpurent::cli {
namespace {

struct ResnetFlags {
  std::string gpu_type;
  int batch = 64;
  int steps = 30;
  int warmup = 5;
  int image_size = 224;
  std::string timeout = "30m";
  bool record = false;
};

std::string results_view(const Json& answer) {
  Table table({"PRECISION", "IMAGES/S", "BATCH", "IMAGE", "DEVICE"});
  for (const Json& result : answer["results"]) {
    table.add_row({sanitize(result.value("precision", "?")),
                   fmt::format("{:.1f}", result.value("images_per_s", 0.0)),
                   std::to_string(result.value("batch", 0)),
                   fmt::format("{0}x{0}", result.value("image_size", 0)),
                   sanitize(result.value("device", "?"))});
  }
  std::string recorded;
  if (answer.contains("recorded")) {
    recorded = fmt::format("Recorded against GPU {} of node {}.\n",
                           answer["recorded"].value("gpu_index", 0),
                           sanitize(answer["recorded"].value("node_id", "")));
  }
  return fmt::format("ResNet-50 training on one {} (instance {}):\n",
                     sanitize(answer.value("gpu_type", "")),
                     sanitize(answer.value("instance_id", ""))) +
         table.render() + recorded;
}

Status bench_resnet50(Context& ctx, const ResnetFlags& flags) {
  GPURENT_TRY(timeout, parse_duration_seconds(flags.timeout));
  GPURENT_TRY(api, ctx.api());
  model::InstanceSpec spec;
  spec.name = std::string(model::kResnet50Template);
  spec.template_name = model::kResnet50Template;
  spec.gpu_types = {flags.gpu_type};
  spec.gpu_count = 1;
  spec.restart_policy = model::RestartPolicy::kNever;
  spec.env = {{"BENCH_BATCH", std::to_string(flags.batch)},
              {"BENCH_STEPS", std::to_string(flags.steps)},
              {"BENCH_WARMUP", std::to_string(flags.warmup)},
              {"BENCH_IMAGE_SIZE", std::to_string(flags.image_size)}};
  GPURENT_TRY(created, api->instances().create(spec));
  const std::string id = created.value.id;
  ctx.err() << fmt::format("{}: ResNet-50 on one {}, batch {}, {} timed steps per precision\n",
                           sanitize(id), sanitize(flags.gpu_type), flags.batch, flags.steps)
            << std::flush;
  GPURENT_TRY(ended,
              wait_until(ctx, *api, std::move(created), kStopped, std::chrono::seconds(timeout)));
  std::string log;
  GPURENT_CHECK(api->instances().stream_logs(id, /*follow=*/false, [&](std::string_view chunk) {
    log.append(chunk);
    return true;
  }));
  auto report = model::resnet50_report(log);
  if (ended.value.exit_code != 0 || !report) {
    // The end of its log says why, line by line (each made safe for the terminal).
    std::istringstream tail(log.substr(log.size() > 2000 ? log.size() - 2000 : 0));
    for (std::string line; std::getline(tail, line);) ctx.err() << sanitize(line) << "\n";
    return fail(Error::unprocessable(
        "benchmark_failed",
        fmt::format("instance {} ended {} (exit code {}): {}; its log ends above", id,
                    model::to_string(ended.value.state),
                    ended.value.exit_code ? std::to_string(*ended.value.exit_code) : "none",
                    report ? "it failed after printing its results" : report.error().message)));
  }
  const model::TrainingRun& run = report->run;
  Json results = Json::array();
  for (const std::string_view precision : model::kTrainingPrecisions) {
    results.push_back({{"precision", precision},
                       {"images_per_s",
                        static_cast<double>(run.images_per_hour.at(std::string(precision))) / 3600},
                       {"batch", run.batch},
                       {"image_size", run.image_size},
                       {"device", run.device}});
  }
  Json answer = {{"instance_id", id},
                 {"gpu_type", ended.value.workload.gpu_type},
                 {"results", std::move(results)}};
  if (flags.record) {
    GPURENT_TRY(recorded, api->nodes().record_training(id));
    answer["recorded"] = Json(recorded.value);
  }
  return ctx.show(Result<Json>(std::move(answer)), results_view);
}

}  // namespace

void add_bench_commands(CLI::App& app, Context& ctx) {
  auto* bench = app.add_subcommand("bench", "Measure what GPUs train at")->group("Catalog");
  bench->require_subcommand(1);
  auto flags = std::make_shared<ResnetFlags>();
  auto* resnet = bench->add_subcommand(
      "resnet50", "ResNet-50 training images/s on one GPU of a type, FP32 and mixed precision");
  resnet->add_option("--gpu", flags->gpu_type, "GPU type (gpurent offers)")->required();
  // Batch normalisation needs two images a step.
  resnet->add_option("--batch", flags->batch, "images per step")->check(CLI::Range(2, 4096));
  resnet->add_option("--steps", flags->steps, "timed steps per precision")
      ->check(CLI::Range(1, 10000));
  resnet->add_option("--warmup", flags->warmup, "untimed steps first")->check(CLI::Range(0, 1000));
  resnet->add_option("--image-size", flags->image_size, "pixels a side (ImageNet: 224)")
      ->check(CLI::Range(32, 1024));
  resnet->add_option("--timeout", flags->timeout, "how long to wait for it (e.g. 30m)");
  resnet->add_flag("--record", flags->record,
                   "operators: keep the figures for the GPU type (offers, estimates)");
  resnet->callback(
      [&ctx, flags] { ctx.set_command([&ctx, flags] { return bench_resnet50(ctx, *flags); }); });
}

}  // namespace gpurent::cli
