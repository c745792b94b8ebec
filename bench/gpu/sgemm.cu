#include "common.h"
#include <vector>
#include <cmath>
#define T 16
__global__ void sgemm(const float* A, const float* B, float* C, int n) {
  __shared__ float as[T][T], bs[T][T];
  int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0;
  for (int k0 = 0; k0 < n; k0 += T) {
    as[ty][tx] = A[row * n + k0 + tx];
    bs[ty][tx] = B[(k0 + ty) * n + col];
    __syncthreads();
    for (int k = 0; k < T; k++) acc += as[ty][k] * bs[k][tx];
    __syncthreads();
  }
  C[row * n + col] = acc;
}
int main() {
  const int n = 2048;
  std::vector<float> A(n * n), B(n * n), C(n * n);
  for (int i = 0; i < n * n; i++) { A[i] = (i % 17) * 0.125f - 1; B[i] = (i % 13) * 0.25f - 1.5f; }
  float *dA, *dB, *dC;
  CHECK(cudaMalloc(&dA, n * n * 4)); CHECK(cudaMalloc(&dB, n * n * 4)); CHECK(cudaMalloc(&dC, n * n * 4));
  CHECK(cudaMemcpy(dA, A.data(), n * n * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dB, B.data(), n * n * 4, cudaMemcpyHostToDevice));
  dim3 g(n / T, n / T), b(T, T);
  time_it("sgemm", 5, [&] { sgemm<<<g, b>>>(dA, dB, dC, n); });
  CHECK(cudaMemcpy(C.data(), dC, n * n * 4, cudaMemcpyDeviceToHost));
  for (int t = 0; t < 64; t++) {
    int r = (t * 977) % n, c = (t * 613) % n;
    double ref = 0;
    for (int k = 0; k < n; k++) ref += (double)A[r * n + k] * B[k * n + c];
    if (std::fabs(ref - C[r * n + c]) > 1e-3 * (1 + std::fabs(ref))) { std::printf("FAIL %d %d\n", r, c); return 1; }
  }
  std::printf("PASS\n");
}
