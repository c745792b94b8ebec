// Kernels whose shared memory is more than lavapipe's 32 KiB of workgroup memory (and, for
// the 100 KiB one, NVIDIA's 48 KiB), which the Vulkan backend keeps in device memory
// (backends/vulkan/slices.py); test_big_shared.py builds them with nvcc -ptx.
#include <cstdint>

#define TILE 10240  // 40 KiB of floats
#define PER (TILE / 256)

__device__ unsigned linear_block() {
    return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

// 40 KiB of static shared memory: a block's tile, a stencil in place (read, barrier, write
// reversed, barrier), then reads of other threads' elements. Blocks of 256 threads.
extern "C" __global__ void tile40k(const float* in, float* out) {
    __shared__ float tile[TILE];
    const unsigned b = linear_block();
    const float* src = in + (size_t)b * TILE;
    for (int i = threadIdx.x; i < TILE; i += 256) tile[i] = src[i];
    __syncthreads();
    float v[PER];
    for (int k = 0; k < PER; ++k) {
        int i = threadIdx.x + 256 * k;
        v[k] = tile[i] * 2.0f + tile[(i + 1) % TILE] - tile[(i + TILE - 1) % TILE];
    }
    __syncthreads();
    for (int k = 0; k < PER; ++k) tile[TILE - 1 - (threadIdx.x + 256 * k)] = v[k];
    __syncthreads();
    for (int i = threadIdx.x; i < TILE; i += 256)
        out[(size_t)b * TILE + i] = tile[i] + tile[(i * 37) % TILE];
}

// 100 KiB of dynamic shared memory: atomics of every width on it (a 64 KiB histogram, 64-bit
// sums, float sums, 16-bit counters by compare-and-swap, min/max) and byte and half-word
// stores by neighbouring threads, read back by other threads after a barrier.
#define HIST 16384
#define HALVES 8192
#define BYTES 15360
#define FSUMS 512
#define BIGS 256
#define C16 64

extern "C" __global__ void atomics_bytes(const unsigned* keys, int n, unsigned* hist_out,
                                         unsigned long long* big_out, float* fsum_out,
                                         unsigned* c16_out, unsigned* minmax_out,
                                         unsigned char* bytes_out, unsigned short* halves_out) {
    extern __shared__ __align__(16) unsigned char smem[];
    unsigned* hist = (unsigned*)smem;                                    // 64 KiB
    unsigned short* halves = (unsigned short*)(smem + 4 * HIST);         // 16 KiB
    unsigned char* bytes = smem + 4 * HIST + 2 * HALVES;                 // 15 KiB
    float* fsum = (float*)(bytes + BYTES);                               // 2 KiB
    unsigned long long* big = (unsigned long long*)(fsum + FSUMS);       // 2 KiB
    unsigned short* c16 = (unsigned short*)(big + BIGS);                 // 128 bytes
    unsigned* minmax = (unsigned*)(c16 + C16);                           // 8 bytes: 101512 in all
    const int t = threadIdx.x, nt = blockDim.x;
    for (int i = t; i < HIST; i += nt) hist[i] = 0;
    for (int i = t; i < FSUMS; i += nt) fsum[i] = 0.0f;
    for (int i = t; i < BIGS; i += nt) big[i] = 0;
    for (int i = t; i < C16; i += nt) c16[i] = 0;
    if (t == 0) { minmax[0] = 0xFFFFFFFFu; minmax[1] = 0; }
    // neighbouring threads store neighbouring bytes and half-words
    for (int i = t; i < BYTES; i += nt) bytes[i] = (unsigned char)(i * 7 + blockIdx.x);
    for (int i = t; i < HALVES; i += nt) halves[i] = (unsigned short)(i * 3 + 1000 * blockIdx.x);
    __syncthreads();
    for (int i = blockIdx.x * nt + t; i < n; i += nt * gridDim.x) {
        unsigned k = keys[i];
        atomicAdd(&hist[k % HIST], 1u);
        atomicAdd(&big[k % BIGS], (unsigned long long)k << 8);
        atomicAdd(&fsum[k % FSUMS], 0.5f);
        atomicMin(&minmax[0], k);
        atomicMax(&minmax[1], k);
        unsigned short* c = &c16[k % C16];
        unsigned short old = *c, seen;
        do {
            seen = old;
            old = atomicCAS(c, seen, (unsigned short)(seen + 1));
        } while (old != seen);
    }
    __syncthreads();
    for (int i = t; i < HIST; i += nt)
        if (hist[i]) atomicAdd(&hist_out[i], hist[i]);
    for (int i = t; i < BIGS; i += nt) atomicAdd(&big_out[i], big[i]);
    for (int i = t; i < FSUMS; i += nt) atomicAdd(&fsum_out[i], fsum[i]);
    for (int i = t; i < C16; i += nt) atomicAdd(&c16_out[i], (unsigned)c16[i]);
    if (t == 0) { atomicMin(&minmax_out[0], minmax[0]); atomicMax(&minmax_out[1], minmax[1]); }
    // another thread's bytes and half-words
    for (int i = t; i < BYTES; i += nt) bytes_out[blockIdx.x * BYTES + i] = bytes[(i + 1) % BYTES];
    for (int i = t; i < HALVES; i += nt)
        halves_out[blockIdx.x * HALVES + i] = halves[(i + HALVES - 1) % HALVES];
}

// Generic pointers into 36 KiB of shared memory, chosen at run time (shared or global), so
// that their accesses test the address at run time; isspacep and cvta on them; a pointer
// kept in shared memory and read back. Blocks of 256 threads.
#define GEN 9216

extern "C" __global__ void generic_ptrs(float* g, int use_shared, unsigned* info, float* out) {
    __shared__ float sh[GEN];
    __shared__ float* kept;
    const unsigned b = blockIdx.x;
    float* p = use_shared ? sh : g + (size_t)b * GEN;
    if (threadIdx.x == 0) kept = p;
    for (int i = threadIdx.x; i < GEN; i += 256) p[i] = (float)(i + b);
    __syncthreads();
    float* q = kept;
    unsigned* mine = info + (b * 256 + threadIdx.x) * 4;
    mine[0] = __isShared(q + threadIdx.x);
    mine[1] = __isGlobal(q + threadIdx.x);
    if (use_shared) {
        size_t base = __cvta_generic_to_shared(q);
        size_t at = __cvta_generic_to_shared(q + threadIdx.x * 3);
        mine[2] = (unsigned)(at - base);
        float* back = (float*)__cvta_shared_to_generic(at);
        mine[3] = (unsigned)*back;  // i + b at i = 3 * threadIdx.x
    }
    __syncthreads();
    for (int i = threadIdx.x; i < GEN; i += 256) q[i] = q[i] * 2.0f + 1.0f;
    __syncthreads();
    for (int i = threadIdx.x; i < GEN; i += 256) out[(size_t)b * GEN + i] = q[GEN - 1 - i];
}

// Generic pointers that cuport's address-space inference finds to point into shared memory
// (made by cvta.shared; opaque to nvcc, which would otherwise use ld.shared): their window
// bits are dropped at the access. Blocks of 256 threads.
extern "C" __global__ void known_shared(unsigned* out) {
    __shared__ unsigned sh[GEN];
    unsigned* s = sh + threadIdx.x * (GEN / 256);
    asm volatile("" : "+l"(s));
    for (int k = 0; k < GEN / 256; ++k) s[k] = threadIdx.x * 5 + k + blockIdx.x;
    __syncthreads();
    unsigned* s2 = sh + GEN - 1 - threadIdx.x * (GEN / 256);
    asm volatile("" : "+l"(s2));
    out[blockIdx.x * 256 + threadIdx.x] = s2[0] + s2[-1] * 3;
}

// A shared index from the host: past the end of the block's shared memory when asked.
extern "C" __global__ void wild_shared(const int* index, float* out) {
    __shared__ float big[TILE];
    big[threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = big[index[threadIdx.x]];
}

// A shared tile that fits in any workgroup memory (8 KiB): tiled matrix product, 32x32 tiles,
// blocks of 32x8 threads (4 outputs each). For the cost of the device-memory path against
// workgroup memory (the same kernel, CUPORT_VK_WORKGROUP_MEMORY=0).
extern "C" __global__ void sgemm_tiles(const float* a, const float* b, float* c, int n) {
    __shared__ float as[32][32], bs[32][32];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * 32, col = blockIdx.x * 32;
    float acc[4] = {0, 0, 0, 0};
    for (int k0 = 0; k0 < n; k0 += 32) {
        for (int r = ty; r < 32; r += 8) {
            as[r][tx] = a[(size_t)(row + r) * n + k0 + tx];
            bs[r][tx] = b[(size_t)(k0 + r) * n + col + tx];
        }
        __syncthreads();
        for (int k = 0; k < 32; ++k)
            for (int j = 0; j < 4; ++j) acc[j] += as[ty + 8 * j][k] * bs[k][tx];
        __syncthreads();
    }
    for (int j = 0; j < 4; ++j) c[(size_t)(row + ty + 8 * j) * n + col + tx] = acc[j];
}

// Indices from the host into a small shared tile (workgroup memory everywhere) and a local
// array: past their ends when asked. On a CPU driver such an access must fail the launch,
// not reach memory outside the array (lavapipe's process crashed: HeCBench radixsort).
extern "C" __global__ void wild_workgroup(const int* index, float* out) {
    __shared__ float small[256];
    float loc[64];
    for (int i = 0; i < 64; ++i) loc[i] = (float)(i * threadIdx.x);
    small[threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    float v = small[index[threadIdx.x]];  // a load
    __syncthreads();
    small[index[32 + threadIdx.x]] = v;  // a store
    __syncthreads();
    out[threadIdx.x] = small[threadIdx.x] + loc[index[64 + threadIdx.x]];  // a local load
}
