// barrier_loop: __syncthreads inside loops whose trip count is uniform over a
// block but known only at run time (read from memory; or decided by
// __syncthreads_or until nothing changes), plus __syncthreads_count/_and.
// The block size (200) is not a multiple of the warp size.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                           \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "CUDA error: %s failed at %s:%d: %s\n", #call,    \
                    __FILE__, __LINE__, cudaGetErrorString(err_));            \
            exit(2);                                                          \
        }                                                                     \
    } while (0)

struct Lcg {
    unsigned state;
    unsigned next() { state = state * 1664525u + 1013904223u; return state; }
};

#define MAX_BLOCK 256

// Cyclic smoothing in shared memory, ping-ponging two buffers; the number
// of rounds of block b is rounds[b].
__global__ void smooth_rounds(const unsigned* in, unsigned* out, const int* rounds) {
    __shared__ unsigned buf[2][MAX_BLOCK];
    const int tid = threadIdx.x, n = blockDim.x;
    unsigned* cur = buf[0];
    unsigned* nxt = buf[1];
    cur[tid] = in[blockIdx.x * n + tid];
    __syncthreads();
    const int r_count = rounds[blockIdx.x];
    for (int r = 0; r < r_count; ++r) {
        unsigned left = cur[(tid + n - 1) % n], right = cur[(tid + 1) % n];
        nxt[tid] = (left + 2u * cur[tid] + right) ^ (unsigned)r;
        __syncthreads();
        unsigned* t = cur; cur = nxt; nxt = t;
    }
    out[blockIdx.x * n + tid] = cur[tid];
}

// Spread the block maximum to every thread one neighbour per step, until no
// value changes. stats per block: iterations, threads changed in the first
// step, __syncthreads_and(initial value >= 0), __syncthreads_and(all equal).
__global__ void propagate_max(const int* in, int* out, int* stats) {
    __shared__ int s[MAX_BLOCK];
    const int tid = threadIdx.x, n = blockDim.x;
    int v = in[blockIdx.x * n + tid];
    int all_nonneg = __syncthreads_and(v >= 0);
    s[tid] = v;
    int iters = 0, first_count = -1;
    bool changed = true;
    while (__syncthreads_or(changed)) {  // also orders the previous step's writes
        int l = tid > 0 ? s[tid - 1] : v;
        int r = tid < n - 1 ? s[tid + 1] : v;
        int nv = max(v, max(l, r));
        changed = nv != v;
        int count = __syncthreads_count(changed);  // every thread has read s
        if (iters == 0) first_count = count;
        s[tid] = nv;
        v = nv;
        ++iters;
    }
    int all_equal = __syncthreads_and(v == s[0]);
    out[blockIdx.x * n + tid] = v;
    if (tid == 0) {
        stats[4 * blockIdx.x + 0] = iters;
        stats[4 * blockIdx.x + 1] = first_count;
        stats[4 * blockIdx.x + 2] = all_nonneg != 0;
        stats[4 * blockIdx.x + 3] = all_equal != 0;
    }
}

int main() {
    const int blocks = 40, n = 200, total = blocks * n;
    Lcg rng{1001};
    std::vector<unsigned> uin(total), uout(total);
    std::vector<int> rounds(blocks), vin(total), vout(total), stats(4 * blocks);
    for (auto& v : uin) v = rng.next();
    for (int b = 0; b < blocks; ++b) rounds[b] = (int)(rng.next() % 37u);  // 0 .. 36
    for (int b = 0; b < blocks; ++b) {
        const int peak = (int)(rng.next() % n);
        for (int t = 0; t < n; ++t) {
            int v = (int)(rng.next() % 100000u);
            if (b % 3 == 0 && t % 17 == 5) v = -1 - v;  // every third block has negatives
            vin[b * n + t] = t == peak ? 200000 + b : v;
        }
    }
    unsigned *duin, *duout;
    int *drounds, *dvin, *dvout, *dstats;
    CHECK(cudaMalloc(&duin, total * sizeof(unsigned)));
    CHECK(cudaMalloc(&duout, total * sizeof(unsigned)));
    CHECK(cudaMalloc(&drounds, blocks * sizeof(int)));
    CHECK(cudaMalloc(&dvin, total * sizeof(int)));
    CHECK(cudaMalloc(&dvout, total * sizeof(int)));
    CHECK(cudaMalloc(&dstats, 4 * blocks * sizeof(int)));
    CHECK(cudaMemcpy(duin, uin.data(), total * sizeof(unsigned), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(drounds, rounds.data(), blocks * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dvin, vin.data(), total * sizeof(int), cudaMemcpyHostToDevice));
    smooth_rounds<<<blocks, n>>>(duin, duout, drounds);
    CHECK(cudaGetLastError());
    propagate_max<<<blocks, n>>>(dvin, dvout, dstats);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(uout.data(), duout, total * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(vout.data(), dvout, total * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(stats.data(), dstats, 4 * blocks * sizeof(int), cudaMemcpyDeviceToHost));

    for (int b = 0; b < blocks; ++b) {
        std::vector<unsigned> cur(uin.begin() + b * n, uin.begin() + (b + 1) * n), nxt(n);
        for (int r = 0; r < rounds[b]; ++r) {
            for (int t = 0; t < n; ++t)
                nxt[t] = (cur[(t + n - 1) % n] + 2u * cur[t] + cur[(t + 1) % n]) ^ (unsigned)r;
            std::swap(cur, nxt);
        }
        for (int t = 0; t < n; ++t)
            if (uout[b * n + t] != cur[t]) {
                printf("FAIL: smooth_rounds block %d (%d rounds) thread %d = %u, expected %u\n", b,
                       rounds[b], t, uout[b * n + t], cur[t]);
                return 1;
            }

        std::vector<int> v(vin.begin() + b * n, vin.begin() + (b + 1) * n), nv(n);
        int want_nonneg = 1;
        for (int t = 0; t < n; ++t) want_nonneg &= v[t] >= 0;
        int iters = 0, first_count = -1;
        bool any_changed = true;
        while (any_changed) {
            int count = 0;
            for (int t = 0; t < n; ++t) {
                int l = t > 0 ? v[t - 1] : v[t], r = t < n - 1 ? v[t + 1] : v[t];
                nv[t] = std::max(v[t], std::max(l, r));
                count += nv[t] != v[t];
            }
            if (iters == 0) first_count = count;
            any_changed = count > 0;
            v.swap(nv);
            ++iters;
        }
        const int want[4] = {iters, first_count, want_nonneg, 1};
        const char* what[4] = {"iterations", "__syncthreads_count", "__syncthreads_and(>= 0)",
                               "__syncthreads_and(equal)"};
        for (int k = 0; k < 4; ++k)
            if (stats[4 * b + k] != want[k]) {
                printf("FAIL: propagate_max block %d: %s = %d, expected %d\n", b, what[k], stats[4 * b + k], want[k]);
                return 1;
            }
        for (int t = 0; t < n; ++t)
            if (vout[b * n + t] != v[t]) {
                printf("FAIL: propagate_max block %d thread %d = %d, expected %d\n", b, t, vout[b * n + t], v[t]);
                return 1;
            }
    }
    printf("block 0: %d smoothing rounds, max spread in %d steps\n", rounds[0], stats[0]);
    CHECK(cudaFree(duin));
    CHECK(cudaFree(duout));
    CHECK(cudaFree(drounds));
    CHECK(cudaFree(dvin));
    CHECK(cudaFree(dvout));
    CHECK(cudaFree(dstats));
    printf("PASS\n");
    return 0;
}
