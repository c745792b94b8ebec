// Kernels for the kernel-level tests (tests/kernels/test_kernels.py): compiled with
// `nvcc -ptx`, launched through cuport's Python API, checked against NumPy.
#include <cstdint>

#define TILE 16
extern "C" __global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float As[TILE][TILE], Bs[TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (col < N && k0 + ty < K) ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}

extern "C" __global__ void reduce_sum(const int* x, int n, unsigned long long* total, int* block_sums) {
  __shared__ int warp_sums[32];
  int sum = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) sum += x[i];
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, o);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < (blockDim.x + 31) / 32 ? warp_sums[lane] : 0;
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, o);
    if (lane == 0) { block_sums[blockIdx.x] = sum; atomicAdd(total, (unsigned long long)(long long)sum); }
  }
}

extern "C" __global__ void histogram256(const unsigned char* data, int n, unsigned int* hist) {
  __shared__ unsigned int local[256];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) local[i] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  for (int i = threadIdx.x; i < 256; i += blockDim.x) if (local[i]) atomicAdd(&hist[i], local[i]);
}

// multi-block inclusive scan: per-block scan + block totals, then add scanned totals
extern "C" __global__ void scan_blocks(const int* in, int* out, int* totals, int n) {
  extern __shared__ int buf[];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  buf[t] = i < n ? in[i] : 0;
  __syncthreads();
  for (int off = 1; off < blockDim.x; off <<= 1) {
    int v = t >= off ? buf[t - off] : 0;
    __syncthreads();
    buf[t] += v;
    __syncthreads();
  }
  if (i < n) out[i] = buf[t];
  if (t == blockDim.x - 1) totals[blockIdx.x] = buf[t];
}
extern "C" __global__ void scan_add(int* out, const int* scanned_totals, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (blockIdx.x > 0 && i < n) out[i] += scanned_totals[blockIdx.x - 1];
}

// 5-point stencil with a shared-memory halo (2D blocks of 16x16)
extern "C" __global__ void stencil2d(const float* in, float* out, int w, int h) {
  __shared__ float tile[18][18];
  int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
  int lx = threadIdx.x + 1, ly = threadIdx.y + 1;
  auto at = [&](int xx, int yy) { xx = min(max(xx, 0), w - 1); yy = min(max(yy, 0), h - 1); return in[yy * w + xx]; };
  tile[ly][lx] = at(x, y);
  if (threadIdx.x == 0) tile[ly][0] = at(x - 1, y);
  if (threadIdx.x == 15) tile[ly][17] = at(x + 1, y);
  if (threadIdx.y == 0) tile[0][lx] = at(x, y - 1);
  if (threadIdx.y == 15) tile[17][lx] = at(x, y + 1);
  __syncthreads();
  if (x < w && y < h)
    out[y * w + x] = 0.5f * tile[ly][lx] + 0.125f * (tile[ly][lx - 1] + tile[ly][lx + 1] + tile[ly - 1][lx] + tile[ly + 1][lx]);
}

// a barrier inside a loop whose trip count differs per thread
extern "C" __global__ void barrier_in_loop(const int* trips, int* out) {
  __shared__ int s[256];
  int t = threadIdx.x;
  s[t] = t * 3 + 1;
  __syncthreads();
  int acc = 0;
  for (int i = 0; i < trips[blockIdx.x * blockDim.x + t]; i++) {
    acc += s[(t + i) % blockDim.x];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + t] = acc;
}

// barriers in code every warp runs whole but not every warp reaches (PTX counts arrivals at
// barrier 0 whichever bar.sync a warp executes): even warps meet at an extra barrier first
extern "C" __global__ void warps_at_different_barriers(int* out) {
  __shared__ int s[256];
  int t = threadIdx.x;
  s[t] = t;
  if (((t / 32) & 1) == 0) {
    __syncthreads();
    s[t] += s[t ^ 32] * 1000;  // the odd partner's slot, which it never writes again
  }
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = s[t];
}

// __syncthreads_count / _or / _and in a loop, and whole warps that exit before the barriers
extern "C" __global__ void barrier_reductions(const int* x, const int* live, int* out, int rounds) {
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  if (t >= live[blockIdx.x]) return;
  int acc = 0;
  for (int r = 0; r < rounds; r++) acc += __syncthreads_count(x[i] > r);
  acc += 1000 * __syncthreads_or(x[i] == 3) + 10000 * __syncthreads_and(x[i] >= 1);
  out[i] = acc;
}

// a per-thread local array, indexed dynamically, live across barriers
extern "C" __global__ void local_across_barrier(const int* in, int* out, int k) {
  __shared__ int s[128];
  int vals[12];
  int t = threadIdx.x;
  for (int j = 0; j < 12; j++) vals[j] = in[t] * (j + 1);
  s[t] = vals[(t + k) % 12];
  __syncthreads();
  int r = s[(t + 1) % blockDim.x];
  __syncthreads();
  s[t] = vals[(t * 7 + k) % 12] + r;
  __syncthreads();
  out[t] = s[(t + 5) % blockDim.x] + vals[k % 12];
}

// warp-synchronous code under divergence: shuffles with partial masks
extern "C" __global__ void warp_divergent(const int* in, int* out) {
  int t = threadIdx.x, lane = t & 31;
  int v = in[t];
  int r = -1;
  if (lane < 16) {
    int s = v;
    for (int o = 8; o > 0; o >>= 1) s += __shfl_xor_sync(0x0000ffffu, s, o);
    r = s;
  } else if (lane % 2 == 0) {
    r = __shfl_sync(0x55550000u, v, 16 + ((lane + 2) & 15));  // an even lane in 16..30
  } else {
    unsigned b = __ballot_sync(0xaaaa0000u, v > 50);
    r = __popc(b) * 1000 + __shfl_down_sync(0xaaaa0000u, v, 2);
  }
  out[t] = r;
}

__device__ __noinline__ int ackermann_like(int depth, int x) {
  if (depth == 0) return x + 1;
  return ackermann_like(depth - 1, x * 2 + depth) + (x & 3);
}
__device__ __noinline__ unsigned long long fib_rec(int n) { return n < 2 ? n : fib_rec(n - 1) + fib_rec(n - 2); }
extern "C" __global__ void recursion(int* out, unsigned long long* fibs) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  out[t] = ackermann_like(t % 9, t);
  fibs[t] = fib_rec(t % 18);
}

extern "C" __global__ void traps(int* out, int bad) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  out[t] = t;
  if (t == bad) __trap();
}

// shfl whose source lane does not take part (measured on an H200: such a lane reads 0;
// a source out of range reads the lane's own value)
extern "C" __global__ void shfl_nonparticipants(int* out, int mode) {
  int lane = threadIdx.x & 31;
  int v = 1000 + threadIdx.x;
  int r = -7;
  if (mode == 0) {
    if (lane < 8) r = __shfl_down_sync(0xffu, v, 16);
  } else if (mode == 1) {
    if (lane < 8) r = __shfl_down_sync(0xffffffffu, v, 16);
    else r = __shfl_down_sync(0xffffffffu, v, 1);
  } else if (mode == 2) {
    if (lane >= 16) return;
    r = __shfl_down_sync(0xffffu, v, 20);
  } else if (mode == 3) {
    if (lane % 2 == 0) r = __shfl_sync(0x55555555u, v, lane + 1);
  } else if (mode == 4) {
    r = __shfl_down_sync(0xfffffu, v, 16);
  } else if (mode == 5) {
    if (lane >= 8) r = __shfl_up_sync(0xffffff00u, v, 8);
    if (lane < 4) r = __shfl_xor_sync(0xfu, v, 8);
  }
  out[threadIdx.x] = r;
}

// a warp spins until another warp of its block sets a flag (no barrier between them)
extern "C" __global__ void spin_on_other_warp(int* out) {
  __shared__ volatile int flag;
  __shared__ int value;
  if (threadIdx.x == 0) flag = 0;
  __syncthreads();
  if (threadIdx.x / 32 == 0) {            // warp 0 waits ...
    while (flag == 0) { }
    out[blockIdx.x * blockDim.x + threadIdx.x] = value + threadIdx.x;
  } else if (threadIdx.x == 32) {         // ... for warp 1
    value = 1000 + blockIdx.x;
    __threadfence_block();
    flag = 1;
  }
}

// decoupled look-back: each block takes a ticket, then waits for the block before it
extern "C" __global__ void chained_tickets(unsigned* ticket, volatile int* ready, int* prefix, const int* x) {
  __shared__ unsigned tile;

  if (threadIdx.x == 0) tile = atomicAdd(ticket, 1u);
  __syncthreads();
  int v = x[tile * blockDim.x + threadIdx.x];
  __shared__ int sum;
  if (threadIdx.x == 0) sum = 0;
  __syncthreads();
  atomicAdd(&sum, v);
  __syncthreads();
  if (threadIdx.x == 0) {
    int before = 0;
    if (tile > 0) {
      while (ready[tile - 1] == 0) { }
      before = prefix[tile - 1];
    }
    prefix[tile] = before + sum;
    __threadfence();
    ready[tile] = 1;

  }
  __syncthreads();
}

// Hillis-Steele block scan with the shared array at the start of shared memory: lane 0's
// `buf[t - off]` (not executed) is below address 0 of the window
extern "C" __global__ void hillis_steele(const int* in, int* out) {
  __shared__ int buf[2][256];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  int p = 0;
  buf[0][t] = in[i];
  __syncthreads();
  for (int off = 1; off < blockDim.x; off <<= 1) {
    buf[1 - p][t] = buf[p][t] + (t >= off ? buf[p][t - off] : 0);
    p = 1 - p;
    __syncthreads();
  }
  out[i] = buf[p][t];
}

// Lane indices that wrap around 2^32 inside a warp (unsigned arithmetic is modular): only
// the lanes whose index wrapped to a small value store, each to its own element
extern "C" __global__ void index_wraps(unsigned* out, unsigned off, unsigned n) {
  unsigned i = threadIdx.x + off;
  if (i < n) out[i] = threadIdx.x;
}
