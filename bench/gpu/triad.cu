#include "common.h"
#include <vector>
#include <cmath>
__global__ void triad(float* a, const float* b, const float* c, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = b[i] + s * c[i];
}
int main() {
  const int n = 1 << 25;
  std::vector<float> b(n), c(n), a(n);
  for (int i = 0; i < n; i++) { b[i] = i % 1000; c[i] = (i % 7) * 0.5f; }
  float *da, *db, *dc;
  CHECK(cudaMalloc(&da, n * 4)); CHECK(cudaMalloc(&db, n * 4)); CHECK(cudaMalloc(&dc, n * 4));
  CHECK(cudaMemcpy(db, b.data(), n * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dc, c.data(), n * 4, cudaMemcpyHostToDevice));
  time_it("triad", 20, [&] { triad<<<(n + 255) / 256, 256>>>(da, db, dc, 3.0f, n); });
  CHECK(cudaMemcpy(a.data(), da, n * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i += 9973) if (a[i] != b[i] + 3.0f * c[i]) { std::printf("FAIL at %d\n", i); return 1; }
  std::printf("PASS\n");
}
