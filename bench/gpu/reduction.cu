#include "common.h"
#include <vector>
// sum of floats: a shared-memory tree to 32 values, then shuffles, one atomic per block
__global__ void reduce(const float* x, float* out, int n) {
  __shared__ float s[256];
  int t = threadIdx.x;
  float v = 0;
  for (int i = blockIdx.x * 256 + t; i < n; i += gridDim.x * 256) v += x[i];
  s[t] = v;
  __syncthreads();
  for (int k = 128; k >= 32; k >>= 1) { if (t < k) s[t] += s[t + k]; __syncthreads(); }
  if (t < 32) {
    v = s[t];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if (t == 0) atomicAdd(out, v);
  }
}
int main() {
  const int n = 1 << 26;
  std::vector<float> x(n);
  for (int i = 0; i < n; i++) x[i] = (i % 3) - 1.0f;  // sums to an exact small integer
  float *dx, *dout;
  CHECK(cudaMalloc(&dx, (size_t)n * 4)); CHECK(cudaMalloc(&dout, 4));
  CHECK(cudaMemcpy(dx, x.data(), (size_t)n * 4, cudaMemcpyHostToDevice));
  int blocks = 1024;
  time_it("reduction", 20, [&] { cudaMemsetAsync(dout, 0, 4); reduce<<<blocks, 256>>>(dx, dout, n); });
  float got;
  CHECK(cudaMemcpy(&got, dout, 4, cudaMemcpyDeviceToHost));
  double ref = 0;
  for (int i = 0; i < n; i++) ref += x[i];
  if (got != (float)ref) { std::printf("FAIL %f %f\n", got, ref); return 1; }
  std::printf("PASS\n");
}
