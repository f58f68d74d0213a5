// simulate: the scheduler on a cluster read from files, in-process, without a server. With
// --fill, the FGD paper's fill mode on the placement engine; without, a time-based replay through
// the real controller with simulated agents (sim/replay.h).
//
// Exit codes: 0 with the report on stdout; 2 for bad input (missing or malformed files, bad
// flags), with the file and line in the message; 1 when an invariant broke
// ("invariant_violated": a bug, reported loudly).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <CLI/App.hpp>
#include <memory>
#include <optional>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "sim/fill.h"
#include "sim/replay.h"

namespace gpurent::cli {
namespace {

struct SimulateFlags {
  std::string nodes;
  std::string workload;
  std::vector<std::string> alibaba;
  double fill = 0;
  bool fill_given = false;
  bool shuffle = false;
  uint64_t seed = 42;
  std::string policy = "binpack";
  double profile_coverage = sim::FillOptions{}.profile_coverage;
  bool no_timing = false;
};

// Bad input is the caller's to fix: the CLI's usage exit code, not an internal error.
Error input_error(Error error) {
  return error.kind == ErrorKind::kInternal ? std::move(error)
                                            : usage_error(std::move(error.message));
}

std::string pct_text(const std::optional<double>& value) {
  return value ? fmt::format("{:.2f}", *value) : "";
}

std::string report_view(const sim::SimReport& report, bool timing) {
  const auto gpus = static_cast<double>(report.gpu_milli_capacity) / sched::kMilliPerGpu;
  Fields fields = {
      {"Mode", report.fill
                   ? fmt::format("fill {}x{}, seed {}, policy {}", *report.fill,
                                 report.shuffle ? " (shuffled)" : "", report.seed, report.policy)
                   : fmt::format("replay, seed {}, policy {}", report.seed, report.policy)},
      {"Nodes", fmt::format("{} ({:g} GPUs)", report.nodes, gpus)},
      {"Work items",
       fmt::format("{} in the input, {} offered", report.work_items, report.decisions)},
      {"Profile shapes", std::to_string(report.profile_shapes)},
      {"Placed", std::to_string(report.placed)},
      {"Failed", std::to_string(report.failed)},
      {"Unallocated GPU % at 100%", pct_text(report.unallocated_gpu_pct_at_100)},
      {"Fragmented GPU % at 100%", pct_text(report.fragmented_gpu_pct)},
      {"GPU allocation % at end", pct_text(report.gpu_allocation_pct)},
      {"GPU allocation % over time", pct_text(report.gpu_allocation_pct_time_averaged)},
      {"Preempted", std::to_string(report.preempted)},
      {"Wait p50 / p99 (s)",
       report.wait_s ? fmt::format("{:.1f} / {:.1f}", report.wait_s->p50, report.wait_s->p99) : ""},
      {"Invariants", fmt::format("ok ({} checks)", report.invariant_checks)},
  };
  if (timing) {
    fields.emplace_back("Decisions/s", fmt::format("{:.0f}", report.decisions_per_sec));
    const auto micros = [](const std::optional<double>& us) {
      return us ? fmt::format("{:.2f}", *us) : std::string();
    };
    fields.emplace_back("Placed / refused (µs each)",
                        fmt::format("{} / {}", micros(report.placed_decision_us),
                                    micros(report.refused_decision_us)));
  }
  Table curve({"ARRIVED %", "ALLOCATED GPU %", "FRAGMENTED GPU %"});
  for (const sim::CurvePoint& point : report.curve) {
    if (point.arrived_pct % 10 != 0) continue;
    curve.add_row({std::to_string(point.arrived_pct),
                   fmt::format("{:.2f}", point.allocated_gpu_pct),
                   fmt::format("{:.2f}", point.fragmented_gpu_pct)});
  }
  return render_fields(fields) + "\n" + curve.render();
}

Status simulate(Context& ctx, const SimulateFlags& flags) {
  if (flags.alibaba.empty() && (flags.nodes.empty() || flags.workload.empty())) {
    return fail(usage_error("give --nodes and --workload, or --alibaba NODE_LIST POD_LIST"));
  }
  sched::Policy policy;
  if (!sched::parse_policy(flags.policy, &policy)) {
    return fail(usage_error(fmt::format("unknown policy '{}'", flags.policy)));
  }
  auto input = flags.alibaba.empty() ? sim::load_csv_input(flags.nodes, flags.workload)
                                     : sim::load_alibaba_input(flags.alibaba[0], flags.alibaba[1]);
  if (!input) return fail(input_error(std::move(input).error()));
  Result<sim::SimReport> report = fail(Error::internal("no mode ran"));
  if (flags.fill_given) {
    auto cluster = sim::make_cluster(input->nodes, policy);
    if (!cluster) return fail(input_error(std::move(cluster).error()));
    report = sim::run_fill(*cluster, input->work,
                           {.fill = flags.fill,
                            .shuffle = flags.shuffle,
                            .seed = flags.seed,
                            .profile_coverage = flags.profile_coverage});
  } else {
    // The controller logs what a server operator wants to read; here the report says it all,
    // and stdout must carry only the report.
    const auto level = spdlog::get_level();
    spdlog::set_level(spdlog::level::warn);
    report = sim::run_replay(*input, {.seed = flags.seed, .policy = policy});
    spdlog::set_level(level);
  }
  if (!report) return fail(input_error(std::move(report).error()));
  const bool timing = !flags.no_timing;
  ctx.out() << (ctx.output() == OutputFormat::kJson ? pretty_json(sim::to_json(*report, timing))
                                                    : report_view(*report, timing))
            << std::flush;
  return {};
}

}  // namespace

void add_simulate_commands(CLI::App& app, Context& ctx) {
  auto flags = std::make_shared<SimulateFlags>();
  auto* command = app.add_subcommand(
      "simulate", "Run the scheduler on a cluster and workload from files (no server)");
  command->group("Simulation");
  auto* nodes = command->add_option("--nodes", flags->nodes, "NODES.csv: the cluster");
  auto* workload = command->add_option("--workload", flags->workload, "WORK.csv: the requests");
  nodes->needs(workload);
  workload->needs(nodes);
  command->add_option("--alibaba", flags->alibaba, "the Alibaba GPU trace v2023: node and pod list")
      ->expected(2)
      ->type_name("NODE_LIST.csv POD_LIST.csv")
      ->excludes(nodes)
      ->excludes(workload);
  auto* fill = command->add_option(
      "--fill", flags->fill,
      "fill mode (the FGD paper's): duplicate work until this × GPU capacity is requested, place "
      "one by one, no departures");
  command->add_flag("--shuffle", flags->shuffle, "fill mode: shuffle the work first");
  command->add_option("--seed", flags->seed, "seed for duplication and shuffling")
      ->capture_default_str();
  command
      ->add_option("--policy", flags->policy,
                   "binpack, spread, or fgd (the FGD paper's measure, for comparison)")
      ->check(CLI::IsMember({"binpack", "spread", "fgd"}))
      ->capture_default_str();
  command
      ->add_option("--profile-coverage", flags->profile_coverage,
                   "fill mode: the share of GPU requests whose shapes form the scoring profile")
      ->capture_default_str();
  command->add_flag("--no-timing", flags->no_timing,
                    "leave out decisions_per_sec (wall clock), so output is byte-for-byte stable");
  command->callback([&ctx, flags, fill] {
    flags->fill_given = fill->count() > 0;
    ctx.set_command([&ctx, flags] { return simulate(ctx, *flags); });
  });
}

}  // namespace gpurent::cli
