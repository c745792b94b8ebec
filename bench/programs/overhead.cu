// Per-operation overheads as a CUDA program sees them (runtime API, default stream):
// an empty launch, a launch with 4 arguments, a pair of 1 KiB copies (host to device and
// back), a 1 KiB memset, an event record + synchronise. Each is timed over many repetitions
// after a warm-up; the launches are followed by one synchronise, as a program queueing
// work would. Prints one line per operation: name, microseconds per operation.
#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void empty() {}
__global__ void four(float* a, const float* b, int n, float s) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && n < 0) a[0] = b[0] * s;
}

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
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

  double t = now();
  for (int i = 0; i < reps; i++) empty<<<1, 32>>>();
  CHECK(cudaDeviceSynchronize());
  printf("empty launch %.2f us\n", (now() - t) / reps * 1e6);

  t = now();
  for (int i = 0; i < reps; i++) four<<<1, 32>>>(d, d, i, 2.0f);
  CHECK(cudaDeviceSynchronize());
  printf("4-argument launch %.2f us\n", (now() - t) / reps * 1e6);

  t = now();
  for (int i = 0; i < reps; i++) {
    CHECK(cudaMemcpy(d, h, 1024, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(h, d, 1024, cudaMemcpyDeviceToHost));
  }
  printf("1 KiB copy pair %.2f us\n", (now() - t) / reps * 1e6);

  t = now();
  for (int i = 0; i < reps; i++) CHECK(cudaMemset(d, i & 255, 1024));
  printf("1 KiB memset %.2f us\n", (now() - t) / reps * 1e6);

  t = now();
  for (int i = 0; i < reps; i++) {
    CHECK(cudaEventRecord(ev, 0));
    CHECK(cudaEventSynchronize(ev));
  }
  printf("event record + synchronise %.2f us\n", (now() - t) / reps * 1e6);

  t = now();
  for (int i = 0; i < reps; i++) {
    empty<<<1, 32>>>();
    CHECK(cudaDeviceSynchronize());
  }
  printf("launch + synchronise %.2f us\n", (now() - t) / reps * 1e6);
  return 0;
}
