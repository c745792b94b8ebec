// Segmented inclusive scan, the barrier- and shared-memory-heavy pattern: each block
// scans 1024 ints in shared memory (Hillis-Steele, __syncthreads inside the loop).
__global__ void block_scan(const int* __restrict__ in, int* __restrict__ out, int n) {
  __shared__ int buf[2][1024];
  int t = threadIdx.x, i = blockIdx.x * 1024 + t;
  int p = 0;
  buf[0][t] = i < n ? in[i] : 0;
  __syncthreads();
  for (int off = 1; off < 1024; off <<= 1) {
    buf[1 - p][t] = buf[p][t] + (t >= off ? buf[p][t - off] : 0);
    p = 1 - p;
    __syncthreads();
  }
  if (i < n) out[i] = buf[p][t];
}
