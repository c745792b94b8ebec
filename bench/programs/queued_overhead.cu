// Host time of operations a program queues without waiting (issue 7/9: "launches in
// microseconds"): N of one kind in a row on a stream of the program's own, then one
// synchronise, the whole timed; per operation, wall clock and the process's CPU time (all
// its threads: on a CPU Vulkan driver the kernels' own time is in it). Operations: an empty
// launch, a launch with 4 arguments, cudaMemsetAsync and cudaMemcpyAsync of 4 bytes
// (device to device, and host to device from pinned memory), the three together (pinned in,
// launch, pinned out), cudaEventRecord, and the same launches on the legacy default stream. Each line: name, microseconds per operation, CPU
// microseconds per operation. Run it several times: the figures are noisy.
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>

#include "host_clock.h"

__global__ void empty() {}
__global__ void four(float* a, const float* b, int n, float s) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && n < 0) a[0] = b[0] * s;
}

static double t0, c0, h0;
static void start() { t0 = now(); c0 = cpu(CLOCK_PROCESS_CPUTIME_ID); h0 = cpu(CLOCK_THREAD_CPUTIME_ID); }
static void report(const char* what, int reps) {
  printf("%s %.2f us (cpu %.2f us, calling thread %.2f us)\n", what, (now() - t0) / reps * 1e6,
         (cpu(CLOCK_PROCESS_CPUTIME_ID) - c0) / reps * 1e6,
         (cpu(CLOCK_THREAD_CPUTIME_ID) - h0) / reps * 1e6);
}

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("%s failed: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

int main(int argc, char** argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 2000;
  float *d, *h;
  cudaStream_t s;
  cudaEvent_t ev;
  CHECK(cudaMalloc(&d, 1 << 20));
  CHECK(cudaMallocHost(&h, 1024));
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  for (int i = 0; i < 20; i++) {
    empty<<<1, 32, 0, s>>>();
    four<<<1, 32, 0, s>>>(d, d, 1, 2.0f);
    empty<<<1, 32>>>();
    four<<<1, 32>>>(d, d, 1, 2.0f);
    CHECK(cudaMemsetAsync(d, 0, 4, s));
    CHECK(cudaMemcpyAsync(d + 1, d, 4, cudaMemcpyDeviceToDevice, s));
    CHECK(cudaMemcpyAsync(d + 2, h, 4, cudaMemcpyHostToDevice, s));
    CHECK(cudaEventRecord(ev, s));
  }
  CHECK(cudaDeviceSynchronize());

  start();
  for (int i = 0; i < reps; i++) empty<<<1, 32, 0, s>>>();
  CHECK(cudaStreamSynchronize(s));
  report("empty launch", reps);

  start();
  for (int i = 0; i < reps; i++) four<<<1, 32, 0, s>>>(d, d, i, 2.0f);
  CHECK(cudaStreamSynchronize(s));
  report("4-argument launch", reps);

  start();
  for (int i = 0; i < reps; i++) CHECK(cudaMemsetAsync(d, i & 255, 4, s));
  CHECK(cudaStreamSynchronize(s));
  report("4-byte memset", reps);

  start();
  for (int i = 0; i < reps; i++) CHECK(cudaMemcpyAsync(d + 1, d, 4, cudaMemcpyDeviceToDevice, s));
  CHECK(cudaStreamSynchronize(s));
  report("4-byte copy device to device", reps);

  start();
  for (int i = 0; i < reps; i++) CHECK(cudaMemcpyAsync(d + 2, h, 4, cudaMemcpyHostToDevice, s));
  CHECK(cudaStreamSynchronize(s));
  report("4-byte copy pinned to device", reps);

  start();
  for (int i = 0; i < reps; i++) {
    CHECK(cudaMemcpyAsync(d + 2, h, 4, cudaMemcpyHostToDevice, s));
    four<<<1, 32, 0, s>>>(d, d, i, 2.0f);
    CHECK(cudaMemcpyAsync(h + 4, d + 2, 4, cudaMemcpyDeviceToHost, s));
  }
  CHECK(cudaStreamSynchronize(s));
  report("pinned copy in + launch + pinned copy out", reps);

  start();
  for (int i = 0; i < reps; i++) CHECK(cudaEventRecord(ev, s));
  CHECK(cudaStreamSynchronize(s));
  report("event record", reps);

  start();
  for (int i = 0; i < reps; i++) {
    empty<<<1, 32, 0, s>>>();
    CHECK(cudaEventRecord(ev, s));
  }
  CHECK(cudaStreamSynchronize(s));
  report("launch + event record", reps);

  start();
  for (int i = 0; i < reps; i++) empty<<<1, 32>>>();
  CHECK(cudaDeviceSynchronize());
  report("empty launch, default stream", reps);

  start();
  for (int i = 0; i < reps; i++) four<<<1, 32>>>(d, d, i, 2.0f);
  CHECK(cudaDeviceSynchronize());
  report("4-argument launch, default stream", reps);
  return 0;
}
