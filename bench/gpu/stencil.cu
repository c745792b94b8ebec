#include "common.h"
#include <vector>
#include <cmath>
#define B 16
// 5-point Jacobi sweep with a shared tile and a one-cell halo
__global__ void jacobi(const float* in, float* out, int n) {
  __shared__ float t[B + 2][B + 2];
  int x = blockIdx.x * B + threadIdx.x, y = blockIdx.y * B + threadIdx.y;
  int lx = threadIdx.x + 1, ly = threadIdx.y + 1;
  auto at = [&](int i, int j) { i = min(max(i, 0), n - 1); j = min(max(j, 0), n - 1); return in[j * n + i]; };
  t[ly][lx] = at(x, y);
  if (threadIdx.x == 0) t[ly][0] = at(x - 1, y);
  if (threadIdx.x == B - 1) t[ly][B + 1] = at(x + 1, y);
  if (threadIdx.y == 0) t[0][lx] = at(x, y - 1);
  if (threadIdx.y == B - 1) t[B + 1][lx] = at(x, y + 1);
  __syncthreads();
  out[y * n + x] = 0.5f * t[ly][lx] + 0.125f * (t[ly][lx - 1] + t[ly][lx + 1] + t[ly - 1][lx] + t[ly + 1][lx]);
}
int main() {
  const int n = 4096;
  std::vector<float> a(n * n), o(n * n);
  for (int i = 0; i < n * n; i++) a[i] = (i % 101) * 0.01f;
  float *din, *dout;
  CHECK(cudaMalloc(&din, n * n * 4)); CHECK(cudaMalloc(&dout, n * n * 4));
  CHECK(cudaMemcpy(din, a.data(), n * n * 4, cudaMemcpyHostToDevice));
  dim3 g(n / B, n / B), b(B, B);
  time_it("stencil", 20, [&] { jacobi<<<g, b>>>(din, dout, n); });
  CHECK(cudaMemcpy(o.data(), dout, n * n * 4, cudaMemcpyDeviceToHost));
  for (int t = 0; t < 1000; t++) {
    int x = (t * 7919) % n, y = (t * 104729) % n;
    auto at = [&](int i, int j) { i = std::min(std::max(i, 0), n - 1); j = std::min(std::max(j, 0), n - 1); return a[j * n + i]; };
    float ref = 0.5f * at(x, y) + 0.125f * (at(x - 1, y) + at(x + 1, y) + at(x, y - 1) + at(x, y + 1));
    if (std::fabs(ref - o[y * n + x]) > 1e-5f) { std::printf("FAIL %d %d\n", x, y); return 1; }
  }
  std::printf("PASS\n");
}
