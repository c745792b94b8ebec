// Sum of n floats: each block of 256 threads adds a grid-stride slice, reduces it in shared
// memory as a tree down to one warp, then with shuffles; one partial sum per block.
__global__ void reduce(const float* __restrict__ in, float* __restrict__ partial, int n) {
  __shared__ float s[256];
  int t = threadIdx.x;
  float acc = 0.0f;
  for (int i = blockIdx.x * 256 + t; i < n; i += gridDim.x * 256) acc += in[i];
  s[t] = acc;
  __syncthreads();
  for (int w = 128; w >= 32; w >>= 1) {
    if (t < w) s[t] += s[t + w];
    __syncthreads();
  }
  if (t < 32) {
    float v = s[t];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (t == 0) partial[blockIdx.x] = v;
  }
}
