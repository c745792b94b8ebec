#include "common.h"
#include <vector>
// per-block inclusive Hillis-Steele scan of 1024 ints in shared memory
__global__ void scan(const int* in, int* out) {
  __shared__ int s[2][1024];
  int t = threadIdx.x, base = blockIdx.x * 1024;
  int p = 0;
  s[0][t] = in[base + t];
  __syncthreads();
  for (int d = 1; d < 1024; d <<= 1) {
    s[1 - p][t] = s[p][t] + (t >= d ? s[p][t - d] : 0);
    p = 1 - p;
    __syncthreads();
  }
  out[base + t] = s[p][t];
}
int main() {
  const int blocks = 16384, n = blocks * 1024;
  std::vector<int> in(n), out(n);
  for (int i = 0; i < n; i++) in[i] = (i * 7) % 11 - 5;
  int *din, *dout;
  CHECK(cudaMalloc(&din, n * 4)); CHECK(cudaMalloc(&dout, n * 4));
  CHECK(cudaMemcpy(din, in.data(), n * 4, cudaMemcpyHostToDevice));
  time_it("scan", 20, [&] { scan<<<blocks, 1024>>>(din, dout); });
  CHECK(cudaMemcpy(out.data(), dout, n * 4, cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; b += 997) {
    int acc = 0;
    for (int t = 0; t < 1024; t++) { acc += in[b * 1024 + t]; if (out[b * 1024 + t] != acc) { std::printf("FAIL %d %d\n", b, t); return 1; } }
  }
  std::printf("PASS\n");
}
