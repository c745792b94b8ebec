// atomics: every thread of 100003 hits the same words with atomicAdd (int,
// float, double, 64-bit), atomicSub, atomicExch, atomicMin/Max (signed,
// unsigned, 64-bit), atomicInc/Dec with wrap-around, atomicAnd/Or/Xor, CAS
// loops (float max, double add), and shared-memory atomics; exact checks.
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

struct Totals {
    int counter, sub, imin, imax, exch_slot, block_sum;
    unsigned umin, umax, inc, dec, and_bits, or_bits, xor_bits;
    float fsum, fmax;
    double dsum, dsum_cas;
    unsigned long long sum64, max64;
};

__device__ float atomic_max_float(float* addr, float value) {
    int* word = (int*)addr;
    int old = *word, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= value) break;
        old = atomicCAS(word, assumed, __float_as_int(value));
    } while (assumed != old);
    return __int_as_float(old);
}

__device__ double atomic_add_double_cas(double* addr, double value) {
    unsigned long long* word = (unsigned long long*)addr;
    unsigned long long old = *word, assumed;
    do {
        assumed = old;
        old = atomicCAS(word, assumed, __double_as_longlong(__longlong_as_double(assumed) + value));
    } while (assumed != old);
    return __longlong_as_double(old);
}

__global__ void hammer(const int* vals, int n, Totals* t, int* tickets, int* exch_old) {
    __shared__ int block_sum;
    __shared__ int block_max;
    if (threadIdx.x == 0) { block_sum = 0; block_max = -2147483647 - 1; }
    __syncthreads();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const int v = vals[i];
        const unsigned u = (unsigned)v * 2654435761u;
        tickets[i] = atomicAdd(&t->counter, 1);
        atomicSub(&t->sub, v);
        exch_old[i] = atomicExch(&t->exch_slot, i);
        atomicMin(&t->imin, v);
        atomicMax(&t->imax, v);
        atomicMin(&t->umin, u);
        atomicMax(&t->umax, u);
        atomicInc(&t->inc, 17u);
        atomicDec(&t->dec, 13u);
        atomicAnd(&t->and_bits, u | 0x00ff00ffu);
        atomicOr(&t->or_bits, u & 0x0f0f0f00u);
        atomicXor(&t->xor_bits, u);
        atomicAdd(&t->fsum, v * 0.25f);  // multiples of 1/4: every partial sum is exact
        atomic_max_float(&t->fmax, v * 0.5f);
        atomicAdd(&t->dsum, (double)v * 1024.0);
        atomic_add_double_cas(&t->dsum_cas, (double)(v + 3));
        atomicAdd(&t->sum64, (unsigned long long)u * 977ull);
        atomicMax(&t->max64, ((unsigned long long)u << 20) ^ (unsigned long long)i);
        atomicAdd(&block_sum, v);
        atomicMax(&block_max, v);
    }
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(&t->block_sum, block_sum - block_max);
}

int main() {
    const int n = 100003, block = 256, grid = (n + block - 1) / block;
    Lcg rng{55};
    std::vector<int> vals(n);
    for (auto& v : vals) v = (int)(rng.next() % 201u) - 100;
    vals[n / 2] = 12345;
    vals[n / 3] = -23456;

    Totals init = {};
    init.sub = 1000000;
    init.imin = 2147483647;
    init.imax = -2147483647 - 1;
    init.exch_slot = -1;
    init.umin = 0xffffffffu;
    init.dec = 5u;
    init.and_bits = 0xffffffffu;
    init.xor_bits = 0x13579bdfu;
    init.fmax = -1e30f;
    init.dsum = 0.5;
    int *dvals, *dtickets, *dexch;
    Totals* dt;
    CHECK(cudaMalloc(&dvals, n * sizeof(int)));
    CHECK(cudaMalloc(&dtickets, n * sizeof(int)));
    CHECK(cudaMalloc(&dexch, n * sizeof(int)));
    CHECK(cudaMalloc(&dt, sizeof(Totals)));
    CHECK(cudaMemcpy(dvals, vals.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dt, &init, sizeof(Totals), cudaMemcpyHostToDevice));
    hammer<<<grid, block>>>(dvals, n, dt, dtickets, dexch);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    Totals got;
    std::vector<int> tickets(n), exch(n);
    CHECK(cudaMemcpy(&got, dt, sizeof(Totals), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(tickets.data(), dtickets, n * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(exch.data(), dexch, n * sizeof(int), cudaMemcpyDeviceToHost));

    Totals w = init;  // every operation commutes, so one sequential pass is the reference
    for (int i = 0; i < n; ++i) {
        const int v = vals[i];
        const unsigned u = (unsigned)v * 2654435761u;
        w.counter += 1;
        w.sub -= v;
        w.imin = std::min(w.imin, v);
        w.imax = std::max(w.imax, v);
        w.umin = std::min(w.umin, u);
        w.umax = std::max(w.umax, u);
        w.inc = w.inc >= 17u ? 0u : w.inc + 1u;
        w.dec = (w.dec == 0u || w.dec > 13u) ? 13u : w.dec - 1u;
        w.and_bits &= u | 0x00ff00ffu;
        w.or_bits |= u & 0x0f0f0f00u;
        w.xor_bits ^= u;
        w.fsum += v * 0.25f;
        w.fmax = std::max(w.fmax, v * 0.5f);
        w.dsum += (double)v * 1024.0;
        w.dsum_cas += (double)(v + 3);
        w.sum64 += (unsigned long long)u * 977ull;
        w.max64 = std::max(w.max64, ((unsigned long long)u << 20) ^ (unsigned long long)i);
    }
    for (int b = 0; b < grid; ++b) {
        int s = 0, m = -2147483647 - 1;
        for (int i = b * block; i < std::min(n, (b + 1) * block); ++i) { s += vals[i]; m = std::max(m, vals[i]); }
        w.block_sum += s - m;
    }
#define EXPECT(field, fmt)                                                              \
    if (!(got.field == w.field)) {                                                      \
        printf("FAIL: " #field " = " fmt ", expected " fmt "\n", got.field, w.field);   \
        return 1;                                                                       \
    }
    EXPECT(counter, "%d") EXPECT(sub, "%d") EXPECT(imin, "%d") EXPECT(imax, "%d")
    EXPECT(umin, "%u") EXPECT(umax, "%u") EXPECT(inc, "%u") EXPECT(dec, "%u")
    EXPECT(and_bits, "0x%08x") EXPECT(or_bits, "0x%08x") EXPECT(xor_bits, "0x%08x")
    EXPECT(fsum, "%.9g") EXPECT(fmax, "%.9g") EXPECT(dsum, "%.17g") EXPECT(dsum_cas, "%.17g")
    EXPECT(sum64, "%llu") EXPECT(max64, "%llu") EXPECT(block_sum, "%d")

    // atomicAdd tickets are 0..n-1 once each; atomicExch hands each old value on once.
    std::vector<int> sorted(tickets);
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < n; ++i)
        if (sorted[i] != i) { printf("FAIL: atomicAdd tickets are not a permutation (at %d: %d)\n", i, sorted[i]); return 1; }
    sorted = exch;
    sorted.push_back(got.exch_slot);
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i <= n; ++i)
        if (sorted[i] != i - 1) { printf("FAIL: atomicExch lost or duplicated value %d\n", i - 1); return 1; }
    printf("inc %u, dec %u, fsum %g, dsum %.1f, sum64 %llu\n", got.inc, got.dec, got.fsum, got.dsum, got.sum64);
    CHECK(cudaFree(dvals));
    CHECK(cudaFree(dtickets));
    CHECK(cudaFree(dexch));
    CHECK(cudaFree(dt));
    printf("PASS\n");
    return 0;
}
