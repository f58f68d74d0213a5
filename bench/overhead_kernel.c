// The work bench/runtime_overhead.py runs bare, as a process instance and in a container, to
// compare what each runtime costs the workload: a dense FP32 matrix product (GFLOPS) and a
// memory copy (GB/s), on one thread so that the figure is the core's and not the scheduler's.
// Built static (the container image has nothing else). Prints one line:
//   GPURENT_OVERHEAD {"gemm_gflops": X, "memory_gbps": Y}
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kN = 512, kBlock = 64, kGemmRounds = 6, kCopyBytes = 64 << 20, kCopyRounds = 20 };

static double seconds_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// c += a * b, blocked so that the tiles stay in cache (the figure is the core's, not DRAM's).
static void gemm(const float* a, const float* b, float* c) {
  for (int ii = 0; ii < kN; ii += kBlock)
    for (int kk = 0; kk < kN; kk += kBlock)
      for (int jj = 0; jj < kN; jj += kBlock)
        for (int i = ii; i < ii + kBlock; ++i)
          for (int k = kk; k < kk + kBlock; ++k) {
            const float aik = a[i * kN + k];
            for (int j = jj; j < jj + kBlock; ++j) c[i * kN + j] += aik * b[k * kN + j];
          }
}

int main(void) {
  float* a = malloc(sizeof(float) * kN * kN);
  float* b = malloc(sizeof(float) * kN * kN);
  float* c = calloc((size_t)kN * kN, sizeof(float));
  char* from = malloc(kCopyBytes);
  char* to = malloc(kCopyBytes);
  if (!a || !b || !c || !from || !to) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  for (int i = 0; i < kN * kN; ++i) {
    a[i] = (float)(i % 7) * 0.5f;
    b[i] = (float)(i % 5) * 0.25f;
  }
  memset(from, 1, kCopyBytes);
  memset(to, 0, kCopyBytes);

  gemm(a, b, c);  // warm-up: page faults and caches
  double start = seconds_now();
  for (int r = 0; r < kGemmRounds; ++r) gemm(a, b, c);
  const double gemm_s = seconds_now() - start;

  memcpy(to, from, kCopyBytes);  // warm-up
  start = seconds_now();
  for (int r = 0; r < kCopyRounds; ++r) {
    from[r] = (char)r;  // a copy the compiler cannot drop
    memcpy(to, from, kCopyBytes);
  }
  const double copy_s = seconds_now() - start;

  // Read plus write, as the GPU benchmark counts a device-to-device copy.
  printf("GPURENT_OVERHEAD {\"gemm_gflops\": %.3f, \"memory_gbps\": %.3f, \"check\": %.1f}\n",
         2.0 * kN * kN * kN * kGemmRounds / gemm_s / 1e9,
         2.0 * kCopyBytes * (double)kCopyRounds / copy_s / 1e9, (double)c[kN + 1] + to[kCopyRounds]);
  return 0;
}
