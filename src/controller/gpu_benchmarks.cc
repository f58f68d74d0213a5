#include "controller/gpu_benchmarks.h"

#include <algorithm>
#include <utility>

#include "controller/internal.h"

namespace gpurent::controller {
namespace {

// The median of `values` (not empty): the middle one, or the mean of the two middle ones rounded
// down.
int64_t median_of(std::vector<int64_t> values) {
  std::ranges::sort(values);
  const size_t middle = values.size() / 2;
  if (values.size() % 2 == 1) return values[middle];
  return values[middle - 1] + (values[middle] - values[middle - 1]) / 2;
}

// The median of one figure over the runs that have it; 0 when none has.
template <class Figure>
int64_t median_figure(const std::vector<const model::BenchmarkRun*>& runs, Figure figure) {
  std::vector<int64_t> values;
  for (const auto* run : runs) {
    if (const std::optional<int64_t> value = figure(*run)) values.push_back(*value);
  }
  return values.empty() ? 0 : median_of(std::move(values));
}

// The judged figures of a run, by name: GEMM in each precision, and device memory.
std::vector<std::pair<std::string, int64_t>> judged_figures(const model::GpuBenchmark& figures) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& [precision, gflops] : figures.gemm_gflops) {
    out.emplace_back("gemm_" + precision, gflops);
  }
  out.emplace_back("memory", figures.memory_mbps);
  return out;
}

int64_t judged_median(const GpuBenchmarks::TypeFigures& type, std::string_view figure) {
  if (figure == "memory") return type.memory_mbps;
  const auto it =
      type.gemm_gflops.find(std::string(figure.substr(std::string_view("gemm_").size())));
  return it == type.gemm_gflops.end() ? 0 : it->second;
}

// Drops the oldest entries beyond model::kBenchmarkHistory.
template <class Run>
void keep_newest(std::vector<Run>& runs) {
  if (runs.size() > model::kBenchmarkHistory) {
    runs.erase(runs.begin(), runs.end() - static_cast<ptrdiff_t>(model::kBenchmarkHistory));
  }
}

// The GPU's history, made (and named) on its first run.
model::GpuBenchmarkHistory& history_of(
    std::map<std::string, model::GpuBenchmarkHistory, std::less<>>& by_gpu, const model::Node& node,
    const model::Gpu& gpu) {
  model::GpuBenchmarkHistory& history = by_gpu[gpu.uuid];
  history.id = gpu.uuid;
  history.node_id = node.id;
  history.gpu_type = gpu.type;
  history.gpu_index = gpu.index;
  return history;
}

bool same_shape(const model::TrainingRun& a, const model::TrainingRun& b) {
  return a.model == b.model && a.batch == b.batch && a.image_size == b.image_size;
}

// The type's training figures over its GPUs' newest training runs; none without any.
std::optional<GpuBenchmarks::TrainingFigures> training_figures(
    const std::vector<const model::TrainingRun*>& newest) {
  if (newest.empty()) return std::nullopt;
  const model::TrainingRun* shape =
      *std::ranges::max_element(newest, {}, [](const model::TrainingRun* run) { return run->at; });
  GpuBenchmarks::TrainingFigures figures{
      .model = shape->model, .batch = shape->batch, .image_size = shape->image_size};
  std::map<std::string, std::vector<int64_t>> values;
  for (const auto* run : newest) {
    if (!same_shape(*run, *shape)) continue;
    ++figures.gpus;
    for (const auto& [precision, images] : run->images_per_hour)
      values[precision].push_back(images);
  }
  for (auto& [precision, images] : values) {
    figures.images_per_hour.emplace(precision, median_of(std::move(images)));
  }
  return figures;
}

}  // namespace

void GpuBenchmarks::restore(Snapshot& snapshot) {
  for (auto& history : snapshot.gpu_benchmarks) {
    by_gpu_.insert_or_assign(history.id, std::move(history));
  }
  types_.clear();
  shortfalls_.clear();
}

std::vector<std::string> GpuBenchmarks::record(const model::Node& node,
                                               const model::BenchmarkRequest& request,
                                               const model::NodeBenchmark& result) {
  std::vector<std::string> recorded;
  for (const auto& measured : result.gpus) {
    const auto gpu = std::ranges::find(node.gpus, measured.uuid, &model::Gpu::uuid);
    if (gpu == node.gpus.end() ||
        std::ranges::find(request.gpus, gpu->uuid) == request.gpus.end()) {
      continue;
    }
    model::GpuBenchmarkHistory& history = history_of(by_gpu_, node, *gpu);
    model::BenchmarkRun run{.at = c_.clock.now(),
                            .reason = request.reason,
                            .simulated = result.simulated,
                            .figures = measured,
                            .peers = {}};
    run.figures.index = gpu->index;
    for (const auto& peer : result.peers) {
      if (peer.from == measured.index) run.peers.push_back(peer);
    }
    history.runs.push_back(std::move(run));
    keep_newest(history.runs);
    c_.changes.gpu_benchmarks.push_back(history);
    types_.erase(gpu->type);
    shortfalls_.clear();
    recorded.push_back(gpu->uuid);
  }
  return recorded;
}

const model::TrainingRun& GpuBenchmarks::record_training(const model::Node& node,
                                                         const model::Gpu& gpu,
                                                         model::TrainingRun run) {
  model::GpuBenchmarkHistory& history = history_of(by_gpu_, node, gpu);
  if (const auto kept =
          std::ranges::find(history.trainings, run.instance_id, &model::TrainingRun::instance_id);
      kept != history.trainings.end()) {
    return *kept;
  }
  run.at = c_.clock.now();
  history.trainings.push_back(std::move(run));
  keep_newest(history.trainings);
  c_.changes.gpu_benchmarks.push_back(history);
  types_.erase(gpu.type);
  return history.trainings.back();
}

const model::GpuBenchmarkHistory* GpuBenchmarks::of_gpu(std::string_view uuid) const {
  const auto it = by_gpu_.find(uuid);
  return it == by_gpu_.end() ? nullptr : &it->second;
}

const GpuBenchmarks::TypeFigures* GpuBenchmarks::of_type(std::string_view gpu_type) const {
  if (const auto cached = types_.find(gpu_type); cached != types_.end()) return &cached->second;
  std::vector<const model::BenchmarkRun*> newest;
  std::vector<const model::TrainingRun*> newest_trainings;
  bool simulated = true;
  for (const auto& [uuid, history] : by_gpu_) {
    if (history.gpu_type != gpu_type) continue;
    if (!history.trainings.empty()) newest_trainings.push_back(&history.trainings.back());
    if (history.runs.empty()) continue;
    newest.push_back(&history.runs.back());
    simulated = simulated && history.runs.back().simulated;
  }
  if (newest.empty() && newest_trainings.empty()) return nullptr;
  TypeFigures type{.gpus = static_cast<int>(newest.size()),
                   .simulated = simulated && !newest.empty(),
                   .resnet50 = training_figures(newest_trainings)};
  for (const std::string_view precision : model::kGemmPrecisions) {
    const std::string key(precision);
    const int64_t median =
        median_figure(newest, [&](const model::BenchmarkRun& run) -> std::optional<int64_t> {
          const auto it = run.figures.gemm_gflops.find(key);
          return it == run.figures.gemm_gflops.end() ? std::nullopt : std::optional(it->second);
        });
    if (median > 0) type.gemm_gflops.emplace(key, median);
  }
  const auto figure = [&](int64_t model::GpuBenchmark::*member) {
    return median_figure(newest, [&](const model::BenchmarkRun& run) -> std::optional<int64_t> {
      return run.figures.*member;
    });
  };
  type.memory_mbps = figure(&model::GpuBenchmark::memory_mbps);
  type.h2d_mbps = figure(&model::GpuBenchmark::h2d_mbps);
  type.d2h_mbps = figure(&model::GpuBenchmark::d2h_mbps);
  if (const auto median = model::training_gflops(type.gemm_gflops); median && *median > 0) {
    std::vector<int64_t> training;
    for (const auto* run : newest) {
      if (const auto value = model::training_gflops(run->figures.gemm_gflops)) {
        training.push_back(*value);
      }
    }
    const auto [low, high] = std::ranges::minmax(training);
    type.training_spread_percent =
        100.0 * static_cast<double>(high - low) / static_cast<double>(*median);
  }
  return &types_.emplace(std::string(gpu_type), std::move(type)).first->second;
}

std::optional<GpuBenchmarks::Shortfall> GpuBenchmarks::shortfall(std::string_view uuid) const {
  const model::GpuBenchmarkHistory* history = of_gpu(uuid);
  if (history == nullptr || history->runs.empty()) return std::nullopt;
  if (const auto known = shortfalls_.find(uuid); known != shortfalls_.end()) return known->second;
  const TypeFigures* type = of_type(history->gpu_type);
  if (type == nullptr || type->gpus < kMinGpusToJudge) {
    shortfalls_.emplace(std::string(uuid), std::nullopt);
    return std::nullopt;
  }
  Shortfall worst;
  for (const auto& [figure, measured] : judged_figures(history->runs.back().figures)) {
    const int64_t median = judged_median(*type, figure);
    if (median <= 0 || measured >= median) continue;
    const double percent =
        100.0 * static_cast<double>(median - measured) / static_cast<double>(median);
    if (percent > worst.percent) worst = {percent, figure, measured, median};
  }
  shortfalls_.emplace(std::string(uuid), worst);
  return worst;
}

std::vector<const model::GpuBenchmarkHistory*> GpuBenchmarks::on_node(
    const model::Node& node) const {
  std::vector<const model::GpuBenchmarkHistory*> out;
  for (const auto* gpu : gpus_by_index(node)) {
    if (const auto* history = of_gpu(gpu->uuid)) out.push_back(history);
  }
  return out;
}

}  // namespace gpurent::controller
