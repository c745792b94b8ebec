// Per-operation overheads as a CUDA program sees them (runtime API, default stream):
// a stream query of an idle stream (one driver call that does next to nothing: the price of
// a call into the driver itself), an empty launch, a launch with 4 arguments, a pair of 1 KiB copies (host to device and
// back), a 1 KiB memset, an event record + synchronise. Each is timed over many repetitions
// after a warm-up; the launches are followed by one synchronise, as a program queueing
// work would. Prints one line per operation: name, microseconds per operation (wall
// clock), and the process's CPU time per operation (all its threads; on a loaded machine
// the steadier figure).
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>

#include "host_clock.h"

__global__ void empty() {}
__global__ void four(float* a, const float* b, int n, float s) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && n < 0) a[0] = b[0] * s;
}

static double t0, c0;
static void start() { t0 = now(); c0 = cpu(CLOCK_PROCESS_CPUTIME_ID); }
static void report(const char* what, int reps) {
  printf("%s %.2f us (cpu %.2f us)\n", what, (now() - t0) / reps * 1e6, (cpu(CLOCK_PROCESS_CPUTIME_ID) - c0) / reps * 1e6);
}

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("%s failed: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

int main(int argc, char** argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 2000;
  float *d, *h;
  CHECK(cudaMalloc(&d, 1 << 20));
  CHECK(cudaMallocHost(&h, 1024));
  cudaEvent_t ev;
  CHECK(cudaEventCreate(&ev));
  for (int i = 0; i < 20; i++) { empty<<<1, 32>>>(); four<<<1, 32>>>(d, d, 1, 2.0f); }
  CHECK(cudaDeviceSynchronize());

  start();
  for (int i = 0; i < reps; i++) CHECK(cudaStreamQuery(0));
  report("idle stream query", reps);

  start();
  for (int i = 0; i < reps; i++) empty<<<1, 32>>>();
  CHECK(cudaDeviceSynchronize());
  report("empty launch", reps);

  start();
  for (int i = 0; i < reps; i++) four<<<1, 32>>>(d, d, i, 2.0f);
  CHECK(cudaDeviceSynchronize());
  report("4-argument launch", reps);

  start();
  for (int i = 0; i < reps; i++) {
    CHECK(cudaMemcpy(d, h, 1024, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(h, d, 1024, cudaMemcpyDeviceToHost));
  }
  report("1 KiB copy pair", reps);

  start();
  for (int i = 0; i < reps; i++) CHECK(cudaMemset(d, i & 255, 1024));
  report("1 KiB memset", reps);

  start();
  for (int i = 0; i < reps; i++) {
    CHECK(cudaEventRecord(ev, 0));
    CHECK(cudaEventSynchronize(ev));
  }
  report("event record + synchronise", reps);

  start();
  for (int i = 0; i < reps; i++) {
    empty<<<1, 32>>>();
    CHECK(cudaDeviceSynchronize());
  }
  report("launch + synchronise", reps);
  return 0;
}
