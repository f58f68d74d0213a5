// gpurent-gpubench: measures this machine's GPUs for the node benchmark (agent/bench/gpu_bench.h
// reads its output). Per GPU: dense GEMM TFLOPS through cuBLAS in FP32, TF32, FP16 and BF16 (FP32
// accumulate; BF16 from compute capability 8.0, TF32 likewise) and through cuBLASLt in FP8 (E4M3
// operands, FP32 accumulate, BF16 result; from compute capability 8.9), device memory bandwidth (a
// device-to-device copy: read and write), pinned host-to-device and device-to-host bandwidth; per
// ordered pair of GPUs that reach each other directly (NVLink, PCIe peer-to-peer), the peer copy
// bandwidth. Prints one JSON object on stdout; on failure {"error": "..."} and exit status 2.
//
// Usage: gpurent-gpubench [--quick]   (--quick: small sizes and few repetitions, for tests)
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct Sizes {
  int gemm_n;           // square GEMM side
  int gemm_iterations;  // timed, after two warm-up runs
  size_t copy_bytes;    // device, host and peer copies
  int copy_iterations;
};
constexpr Sizes kFull{8192, 20, size_t{1} << 30, 20};
constexpr Sizes kQuick{1024, 3, size_t{1} << 24, 3};

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(status));
  }
}

// Memory from `allocate`, given back with `release` when it goes out of scope.
template <cudaError_t (*allocate)(void**, size_t), cudaError_t (*release)(void*)>
struct Buffer {
  void* data = nullptr;
  explicit Buffer(size_t bytes) { check(allocate(&data, bytes), "allocating a buffer"); }
  ~Buffer() { release(data); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};
cudaError_t device_malloc(void** data, size_t bytes) { return cudaMalloc(data, bytes); }
using DeviceBuffer = Buffer<device_malloc, cudaFree>;
using HostBuffer = Buffer<cudaMallocHost, cudaFreeHost>;  // pinned

// Times `body` run `iterations` times on the current device's default stream, in seconds.
template <class Body>
double timed(int iterations, Body body) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  check(cudaEventRecord(start), "cudaEventRecord");
  for (int i = 0; i < iterations; ++i) body();
  check(cudaEventRecord(stop), "cudaEventRecord");
  check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / 1000.0;
}

template <class T>
__device__ T from_float(float value);
template <>
__device__ float from_float<float>(float value) { return value; }
template <>
__device__ __half from_float<__half>(float value) { return __float2half(value); }
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float value) { return __float2bfloat16(value); }
template <>
__device__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float value) { return __nv_fp8_e4m3(value); }

// Values in [-1, 1) from a hash of the position: random-looking operands draw the power (and so
// the clocks) of real work, where zeros would not.
template <class T>
__global__ void fill(T* data, size_t count) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    unsigned x = static_cast<unsigned>(i) * 2654435761u;
    x ^= x >> 16;
    data[i] = from_float<T>(static_cast<float>(x & 0xffff) / 32768.0f - 1.0f);
  }
}

template <class T>
void fill_random(void* data, size_t count) {
  fill<T><<<1024, 256>>>(static_cast<T*>(data), count);
  check(cudaGetLastError(), "fill");
}

// Dense C = A B (n x n) in the given types; TFLOPS over the timed runs.
template <class T>
double gemm_tflops(cublasHandle_t handle, cudaDataType_t type, cublasComputeType_t compute,
                   const Sizes& sizes) {
  const int n = sizes.gemm_n;
  const size_t count = size_t{static_cast<size_t>(n)} * n;
  DeviceBuffer a(count * sizeof(T)), b(count * sizeof(T)), c(count * sizeof(T));
  fill_random<T>(a.data, count);
  fill_random<T>(b.data, count);
  const float alpha = 1.0f, beta = 0.0f;
  const auto run = [&] {
    check(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.data, type, n, b.data,
                       type, n, &beta, c.data, type, n, compute, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  };
  run();
  run();
  const double seconds = timed(sizes.gemm_iterations, run);
  return 2.0 * n * double(n) * n * sizes.gemm_iterations / seconds / 1e12;
}

// Runs `release` when it goes out of scope (cuBLASLt's descriptors, on every way out).
template <class Release>
struct Releasing {
  Release release;
  ~Releasing() { release(); }
};
template <class Release>
Releasing(Release) -> Releasing<Release>;

// Dense D = A^T B (n x n) with FP8 E4M3 operands through cuBLASLt: FP8 GEMMs take A transposed
// ("TN"), accumulate in FP32 and here write BF16. TFLOPS over the timed runs.
double fp8_gemm_tflops(const Sizes& sizes) {
  const int n = sizes.gemm_n;
  const size_t count = size_t{static_cast<size_t>(n)} * n;
  constexpr size_t kWorkspaceBytes = size_t{32} << 20;
  DeviceBuffer a(count), b(count), d(count * sizeof(__nv_bfloat16)), workspace(kWorkspaceBytes);
  fill_random<__nv_fp8_e4m3>(a.data, count);
  fill_random<__nv_fp8_e4m3>(b.data, count);
  cublasLtHandle_t lt;
  check(cublasLtCreate(&lt), "cublasLtCreate");
  Releasing lt_released{[&] { cublasLtDestroy(lt); }};
  cublasLtMatmulDesc_t op;
  check(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  Releasing op_released{[&] { cublasLtMatmulDescDestroy(op); }};
  const cublasOperation_t transposed = CUBLAS_OP_T, plain = CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transposed,
                                       sizeof transposed),
        "CUBLASLT_MATMUL_DESC_TRANSA");
  check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &plain, sizeof plain),
        "CUBLASLT_MATMUL_DESC_TRANSB");
  cublasLtMatrixLayout_t operand, result;
  check(cublasLtMatrixLayoutCreate(&operand, CUDA_R_8F_E4M3, n, n, n), "cublasLtMatrixLayoutCreate");
  Releasing operand_released{[&] { cublasLtMatrixLayoutDestroy(operand); }};
  check(cublasLtMatrixLayoutCreate(&result, CUDA_R_16BF, n, n, n), "cublasLtMatrixLayoutCreate");
  Releasing result_released{[&] { cublasLtMatrixLayoutDestroy(result); }};
  cublasLtMatmulPreference_t preference;
  check(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  Releasing preference_released{[&] { cublasLtMatmulPreferenceDestroy(preference); }};
  check(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &kWorkspaceBytes, sizeof kWorkspaceBytes),
        "CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES");
  cublasLtMatmulHeuristicResult_t chosen{};
  int found = 0;
  check(cublasLtMatmulAlgoGetHeuristic(lt, op, operand, operand, result, result, preference, 1,
                                       &chosen, &found),
        "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) throw std::runtime_error("cuBLASLt has no FP8 GEMM for this GPU");
  const float alpha = 1.0f, beta = 0.0f;
  const auto run = [&] {
    check(cublasLtMatmul(lt, op, &alpha, a.data, operand, b.data, operand, &beta, d.data, result,
                         d.data, result, &chosen.algo, workspace.data, kWorkspaceBytes, nullptr),
          "cublasLtMatmul");
  };
  run();
  run();
  const double seconds = timed(sizes.gemm_iterations, run);
  return 2.0 * n * double(n) * n * sizes.gemm_iterations / seconds / 1e12;
}

std::string uuid_of(const cudaDeviceProp& props) {
  // As NVML writes it: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
  std::string out = "GPU-";
  for (int i = 0; i < 16; ++i) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(props.uuid.bytes[i]));
    out += hex;
    if (i == 3 || i == 5 || i == 7 || i == 9) out += '-';
  }
  return out;
}

std::string measure_gpu(int device, const Sizes& sizes) {
  check(cudaSetDevice(device), "cudaSetDevice");
  cudaDeviceProp props{};
  check(cudaGetDeviceProperties(&props, device), "cudaGetDeviceProperties");
  cublasHandle_t handle;
  check(cublasCreate(&handle), "cublasCreate");
  const bool ampere = props.major >= 8;
  std::string gemm = "\"fp32\":" + std::to_string(gemm_tflops<float>(handle, CUDA_R_32F,
                                                                      CUBLAS_COMPUTE_32F, sizes));
  if (ampere) {
    gemm += ",\"tf32\":" + std::to_string(gemm_tflops<float>(handle, CUDA_R_32F,
                                                            CUBLAS_COMPUTE_32F_FAST_TF32, sizes));
  }
  gemm += ",\"fp16\":" +
          std::to_string(gemm_tflops<__half>(handle, CUDA_R_16F, CUBLAS_COMPUTE_32F, sizes));
  if (ampere) {
    gemm += ",\"bf16\":" + std::to_string(gemm_tflops<__nv_bfloat16>(handle, CUDA_R_16BF,
                                                                    CUBLAS_COMPUTE_32F, sizes));
  }
  cublasDestroy(handle);
  // FP8 tensor cores: Ada (8.9) and Hopper (9.0) onwards.
  if (props.major * 10 + props.minor >= 89) {
    gemm += ",\"fp8\":" + std::to_string(fp8_gemm_tflops(sizes));
  }

  const size_t bytes = sizes.copy_bytes;
  DeviceBuffer from(bytes), to(bytes);
  HostBuffer host(bytes);
  std::memset(host.data, 1, bytes);
  const auto copy = [&](void* dst, const void* src, cudaMemcpyKind kind) {
    return [=] { check(cudaMemcpyAsync(dst, src, bytes, kind), "cudaMemcpyAsync"); };
  };
  const int k = sizes.copy_iterations;
  // A device copy reads and writes every byte.
  const double memory = 2.0 * bytes * k / timed(k, copy(to.data, from.data, cudaMemcpyDeviceToDevice)) / 1e9;
  const double h2d = double(bytes) * k / timed(k, copy(to.data, host.data, cudaMemcpyHostToDevice)) / 1e9;
  const double d2h = double(bytes) * k / timed(k, copy(host.data, from.data, cudaMemcpyDeviceToHost)) / 1e9;
  return "{\"index\":" + std::to_string(device) + ",\"uuid\":\"" + uuid_of(props) +
         "\",\"gemm_tflops\":{" + gemm + "},\"memory_gbps\":" + std::to_string(memory) +
         ",\"h2d_gbps\":" + std::to_string(h2d) + ",\"d2h_gbps\":" + std::to_string(d2h) + "}";
}

std::string measure_peers(int devices, const Sizes& sizes) {
  std::string out;
  for (int from = 0; from < devices; ++from) {
    for (int to = 0; to < devices; ++to) {
      int reachable = 0;
      if (from == to) continue;
      check(cudaDeviceCanAccessPeer(&reachable, from, to), "cudaDeviceCanAccessPeer");
      if (!reachable) continue;
      check(cudaSetDevice(from), "cudaSetDevice");
      const cudaError_t enabled = cudaDeviceEnablePeerAccess(to, 0);
      if (enabled != cudaErrorPeerAccessAlreadyEnabled) check(enabled, "cudaDeviceEnablePeerAccess");
      cudaGetLastError();  // clears an "already enabled"
      DeviceBuffer source(sizes.copy_bytes);
      check(cudaSetDevice(to), "cudaSetDevice");
      DeviceBuffer target(sizes.copy_bytes);
      check(cudaSetDevice(from), "cudaSetDevice");
      const double seconds = timed(sizes.copy_iterations, [&] {
        check(cudaMemcpyPeerAsync(target.data, to, source.data, from, sizes.copy_bytes),
              "cudaMemcpyPeerAsync");
      });
      if (!out.empty()) out += ",";
      out += "{\"from\":" + std::to_string(from) + ",\"to\":" + std::to_string(to) +
             ",\"gbps\":" +
             std::to_string(double(sizes.copy_bytes) * sizes.copy_iterations / seconds / 1e9) +
             "}";
    }
  }
  return out;
}

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c >= 0 && c < 0x20) ? ' ' : c;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const Sizes& sizes = quick ? kQuick : kFull;
  try {
    int devices = 0;
    check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    if (devices == 0) throw std::runtime_error("no CUDA device");
    std::string gpus;
    for (int device = 0; device < devices; ++device) {
      if (!gpus.empty()) gpus += ",";
      gpus += measure_gpu(device, sizes);
    }
    std::printf("{\"simulated\":false,\"gpus\":[%s],\"peers\":[%s]}\n", gpus.c_str(),
                measure_peers(devices, sizes).c_str());
    return 0;
  } catch (const std::exception& error) {
    std::printf("{\"error\":\"%s\"}\n", escaped(error.what()).c_str());
    return 2;
  }
}
