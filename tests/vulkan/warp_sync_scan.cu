// Pre-Volta warp-synchronous code (tests/vulkan/test_warp_sync_scan.py): the CUDA SDK's
// scanwarp, as HeCBench's radixsort has it. Each step reads another lane's word and stores
// its own through a volatile pointer, with no __syncwarp: the lanes of a warp must all store
// step k before any reads step k + 1, which ptxas's order of volatile accesses and a warp
// running in lock step give on a GPU.
#define WARP 32
__device__ unsigned scanwarp(unsigned val, volatile unsigned* s) {
  int idx = 2 * threadIdx.x - (threadIdx.x & (WARP - 1));
  s[idx] = 0;
  idx += WARP;
  unsigned t = s[idx] = val;
  s[idx] = t = t + s[idx - 1];
  s[idx] = t = t + s[idx - 2];
  s[idx] = t = t + s[idx - 4];
  s[idx] = t = t + s[idx - 8];
  s[idx] = t = t + s[idx - 16];
  return s[idx - 1];  // exclusive
}

__global__ void warp_scan(const unsigned* in, unsigned* scan) {
  __shared__ unsigned s[2 * 256];
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  scan[i] = scanwarp(in[i], s);
}

// The classic reduction's last warp (tid < 32 of a 256-thread block, a volatile pointer).
__global__ void warp_reduce(const unsigned* in, unsigned* sums) {
  __shared__ unsigned r[256];
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x, tid = threadIdx.x;
  r[tid] = in[i];
  __syncthreads();
  if (tid < 128) r[tid] += r[tid + 128];
  __syncthreads();
  if (tid < 64) r[tid] += r[tid + 64];
  __syncthreads();
  if (tid < 32) {
    volatile unsigned* v = r;
    v[tid] += v[tid + 32];
    v[tid] += v[tid + 16];
    v[tid] += v[tid + 8];
    v[tid] += v[tid + 4];
    v[tid] += v[tid + 2];
    v[tid] += v[tid + 1];
  }
  if (tid == 0) sums[blockIdx.x] = r[0];
}
