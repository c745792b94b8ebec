// Timing helpers shared by the GPU bench programs (bench/gpu.py runs each natively and
// under cuport's Vulkan backend, and prints native time / cuport time).
#pragma once
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); std::exit(1); } } while (0)

static double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Times `launch` (one kernel launch): the first launch with synchronisation (compile time
// included under cuport), then `reps` launches between two events (BENCH_REPS overrides
// it: bench/gpu.py --reps, fewer figures dominated by one slow launch). Prints one line.
template <class F> void time_it(const char* name, int reps, F launch) {
  if (const char* r = std::getenv("BENCH_REPS")) reps = std::atoi(r) > 0 ? std::atoi(r) : reps;
  double t0 = now_s();
  launch();
  CHECK(cudaDeviceSynchronize());
  double first = now_s() - t0;
  for (int i = 0; i < 2; i++) launch();
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  CHECK(cudaEventRecord(a));
  for (int i = 0; i < reps; i++) launch();
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  std::printf("BENCH %s ms_per_launch=%.6f first_launch_s=%.4f\n", name, ms / reps, first);
}
