// STREAM triad, one element per thread: a[i] = b[i] + s * c[i]
__global__ void triad(float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ c,
                      float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = b[i] + s * c[i];
}
