#include "agent/bench/gpu_bench.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "model/gpu_catalog.h"

namespace gpurent::agent {
namespace {

Error invalid(std::string message) {
  return Error::invalid("invalid_benchmark", "the GPU benchmark's output: " + std::move(message));
}

// Thousands of the tool's unit, in the model's: TFLOPS to GFLOPS, GB/s to MB/s.
int64_t thousandths(double value) { return std::llround(value * 1000); }
double in_thousands(int64_t value) { return static_cast<double>(value) / 1000; }

// A figure that must be present, a number, and not negative; in the model's unit.
Result<int64_t> figure(const nlohmann::json& object, std::string_view key, std::string_view where) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) {
    return fail(invalid(fmt::format("{}: '{}' is missing or not a number", where, key)));
  }
  const double value = it->get<double>();
  if (!(value >= 0) || !std::isfinite(value)) {
    return fail(invalid(fmt::format("{}: '{}' is negative or not finite", where, key)));
  }
  return thousandths(value);
}

Result<GpuBenchmark> parse_gpu(const nlohmann::json& gpu) {
  if (!gpu.is_object() || !gpu.contains("index") || !gpu["index"].is_number_integer()) {
    return fail(invalid("a GPU without an integer 'index'"));
  }
  GpuBenchmark out;
  out.index = gpu["index"].get<int>();
  const std::string where = fmt::format("GPU {}", out.index);
  if (const auto uuid = gpu.find("uuid"); uuid != gpu.end()) {
    if (!uuid->is_string()) return fail(invalid(where + ": 'uuid' is not a string"));
    out.uuid = uuid->get<std::string>();
  }
  const auto gemm = gpu.find("gemm_tflops");
  if (gemm == gpu.end() || !gemm->is_object()) {
    return fail(invalid(where + ": 'gemm_tflops' is missing or not an object"));
  }
  for (const auto& [precision, value] : gemm->items()) {
    if (std::ranges::find(model::kGemmPrecisions, precision) == model::kGemmPrecisions.end()) {
      return fail(invalid(fmt::format("{}: unknown precision '{}'", where, precision)));
    }
    GPURENT_TRY(gflops, figure(*gemm, precision, where));
    out.gemm_gflops.emplace(precision, gflops);
  }
  GPURENT_TRY(memory, figure(gpu, "memory_gbps", where));
  GPURENT_TRY(h2d, figure(gpu, "h2d_gbps", where));
  GPURENT_TRY(d2h, figure(gpu, "d2h_gbps", where));
  out.memory_mbps = memory;
  out.h2d_mbps = h2d;
  out.d2h_mbps = d2h;
  return out;
}

}  // namespace

Result<NodeBenchmark> parse_gpubench(std::string_view output) {
  const auto json = nlohmann::json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) return fail(invalid("not a JSON object"));
  if (const auto error = json.find("error"); error != json.end()) {
    return fail(Error::unprocessable(
        "benchmark_failed",
        "the GPU benchmark failed: " + (error->is_string() ? error->get<std::string>() : "?")));
  }
  const auto gpus = json.find("gpus");
  if (gpus == json.end() || !gpus->is_array()) return fail(invalid("'gpus' is not an array"));
  NodeBenchmark out;
  out.simulated = json.value("simulated", false);
  for (const auto& gpu : *gpus) {
    GPURENT_TRY(parsed, parse_gpu(gpu));
    if (std::ranges::any_of(out.gpus,
                            [&](const auto& seen) { return seen.index == parsed.index; })) {
      return fail(invalid(fmt::format("GPU {} appears twice", parsed.index)));
    }
    out.gpus.push_back(std::move(parsed));
  }
  std::ranges::sort(out.gpus, {}, &GpuBenchmark::index);
  const auto measured = [&](int index) {
    return std::ranges::any_of(out.gpus, [&](const auto& gpu) { return gpu.index == index; });
  };
  if (const auto peers = json.find("peers"); peers != json.end()) {
    if (!peers->is_array()) return fail(invalid("'peers' is not an array"));
    for (const auto& peer : *peers) {
      if (!peer.is_object() || !peer.contains("from") || !peer["from"].is_number_integer() ||
          !peer.contains("to") || !peer["to"].is_number_integer()) {
        return fail(invalid("a peer without integer 'from' and 'to'"));
      }
      PeerBandwidth link{peer["from"].get<int>(), peer["to"].get<int>(), 0};
      if (!measured(link.from) || !measured(link.to) || link.from == link.to) {
        return fail(
            invalid(fmt::format("peer {} -> {} names a GPU not measured", link.from, link.to)));
      }
      GPURENT_TRY(mbps, figure(peer, "gbps", fmt::format("peer {} -> {}", link.from, link.to)));
      link.mbps = mbps;
      out.peers.push_back(link);
    }
  }
  return out;
}

nlohmann::json to_json(const NodeBenchmark& benchmark) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& gpu : benchmark.gpus) {
    nlohmann::json gemm = nlohmann::json::object();
    for (const auto& [precision, gflops] : gpu.gemm_gflops) gemm[precision] = in_thousands(gflops);
    gpus.push_back({{"index", gpu.index},
                    {"uuid", gpu.uuid},
                    {"gemm_tflops", std::move(gemm)},
                    {"memory_gbps", in_thousands(gpu.memory_mbps)},
                    {"h2d_gbps", in_thousands(gpu.h2d_mbps)},
                    {"d2h_gbps", in_thousands(gpu.d2h_mbps)}});
  }
  nlohmann::json peers = nlohmann::json::array();
  for (const auto& peer : benchmark.peers) {
    peers.push_back({{"from", peer.from}, {"to", peer.to}, {"gbps", in_thousands(peer.mbps)}});
  }
  return {
      {"simulated", benchmark.simulated}, {"gpus", std::move(gpus)}, {"peers", std::move(peers)}};
}

Result<std::vector<model::Gpu>> requested_gpus(const model::BenchmarkRequest& request,
                                               const std::vector<model::Gpu>& node_gpus) {
  std::vector<model::Gpu> out;
  for (const auto& uuid : request.gpus) {
    const auto gpu = std::ranges::find(node_gpus, uuid, &model::Gpu::uuid);
    if (gpu == node_gpus.end()) {
      return fail(Error::invalid("unknown_gpu", fmt::format("GPU {} is not this node's", uuid)));
    }
    out.push_back(*gpu);
  }
  return out;
}

NodeBenchmark simulated_benchmark(const std::vector<model::Gpu>& gpus) {
  NodeBenchmark out{.simulated = true, .gpus = {}, .peers = {}};
  for (const auto& gpu : gpus) {
    GpuBenchmark measured{.index = gpu.index, .uuid = gpu.uuid};
    if (const model::GpuType* type = model::find_gpu_type(gpu.type)) {
      const model::PeakPerf& peak = type->peak;
      const std::array<double, model::kGemmPrecisions.size()> peaks = {
          peak.fp32_tflops, peak.tf32_tflops, peak.fp16_tflops, peak.bf16_tflops, peak.fp8_tflops};
      for (size_t i = 0; i < peaks.size(); ++i) {
        if (peaks[i] > 0) {
          measured.gemm_gflops.emplace(model::kGemmPrecisions[i],
                                       thousandths(peaks[i] * kSimGemmEfficiency));
        }
      }
      measured.memory_mbps = thousandths(peak.memory_gbps * kSimMemoryEfficiency);
      measured.h2d_mbps = measured.d2h_mbps = thousandths(peak.pcie_gbps * kSimLinkEfficiency);
    }
    out.gpus.push_back(std::move(measured));
  }
  std::ranges::sort(out.gpus, {}, &GpuBenchmark::index);
  for (const auto& from : gpus) {
    const model::GpuType* type = model::find_gpu_type(from.type);
    if (type == nullptr || type->peak.nvlink_gbps <= 0 || from.nvlink_domain < 0) continue;
    for (const auto& to : gpus) {
      if (to.index == from.index || to.nvlink_domain != from.nvlink_domain) continue;
      out.peers.push_back(
          {from.index, to.index, thousandths(type->peak.nvlink_gbps * kSimLinkEfficiency)});
    }
  }
  std::ranges::sort(out.peers, {}, [](const PeerBandwidth& p) { return std::pair(p.from, p.to); });
  return out;
}

}  // namespace gpurent::agent
