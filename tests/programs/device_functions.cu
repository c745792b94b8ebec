// device_functions: __noinline__ device functions (recursive Fibonacci and
// gcd, structs passed and returned by value), per-thread arrays indexed by
// data-dependent values (so they live in local memory), a forced-inline helper.
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

struct Vec3 { float x, y, z; };

__host__ __device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__host__ __device__ __noinline__ unsigned gcd(unsigned a, unsigned b) { return b == 0 ? a : gcd(b, a % b); }

__host__ __device__ __noinline__ Vec3 cross(Vec3 a, Vec3 b) {
    return Vec3{a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}

// Insertion sort into a local array, then the median: buf[j] moves with the data.
__host__ __device__ __noinline__ int median(const int* src, int count) {
    int buf[16];
    for (int i = 0; i < count; ++i) {
        int v = src[i], j = i;
        while (j > 0 && buf[j - 1] > v) { buf[j] = buf[j - 1]; --j; }
        buf[j] = v;
    }
    return buf[count / 2];
}

// Follow a permutation held in a per-thread array for `steps` hops.
__host__ __device__ __forceinline__ int walk(const unsigned char* perm_src, int start, int steps) {
    unsigned char perm[32];
    for (int i = 0; i < 32; ++i) perm[i] = perm_src[i];
    int j = start;
    for (int s = 0; s < steps; ++s) j = perm[j];
    return j;
}

struct Result { int fib, median, walk; unsigned gcd; Vec3 c; };

__global__ void run_all(const int* values, const unsigned char* perms, const Vec3* vecs,
                        const unsigned* pairs, Result* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Result r;
    r.fib = fib(i % 18);
    r.median = median(values + 16 * i, 9 + i % 8);
    r.walk = walk(perms + 32 * (i % 64), i % 32, 5 + i % 23);
    r.gcd = gcd(pairs[2 * i], pairs[2 * i + 1]);
    r.c = cross(vecs[2 * i], vecs[2 * i + 1]);
    out[i] = r;
}

int main() {
    const int n = 3001, block = 128;
    Lcg rng{123};
    std::vector<int> values(16 * n);
    std::vector<unsigned char> perms(32 * 64);
    std::vector<Vec3> vecs(2 * n);
    std::vector<unsigned> pairs(2 * n);
    for (auto& v : values) v = (int)(rng.next() % 20001u) - 10000;
    for (int p = 0; p < 64; ++p) {  // Fisher-Yates shuffles of 0..31
        unsigned char* q = &perms[32 * p];
        for (int i = 0; i < 32; ++i) q[i] = (unsigned char)i;
        for (int i = 31; i > 0; --i) {
            int j = (int)(rng.next() >> 8) % (i + 1);
            unsigned char t = q[i]; q[i] = q[j]; q[j] = t;
        }
    }
    // Small integer coordinates: products and differences are exact in float.
    for (auto& v : vecs)
        v = Vec3{(float)((int)(rng.next() % 201u) - 100), (float)((int)(rng.next() % 201u) - 100),
                 (float)((int)(rng.next() % 201u) - 100)};
    for (int i = 0; i < n; ++i) {
        unsigned g = 1 + rng.next() % 50u;
        pairs[2 * i] = g * (1 + rng.next() % 100000u);
        pairs[2 * i + 1] = g * (rng.next() % 100000u);  // may be 0: gcd(a, 0) = a
    }

    int* dvalues;
    unsigned char* dperms;
    Vec3* dvecs;
    unsigned* dpairs;
    Result* dout;
    CHECK(cudaMalloc(&dvalues, values.size() * sizeof(int)));
    CHECK(cudaMalloc(&dperms, perms.size()));
    CHECK(cudaMalloc(&dvecs, vecs.size() * sizeof(Vec3)));
    CHECK(cudaMalloc(&dpairs, pairs.size() * sizeof(unsigned)));
    CHECK(cudaMalloc(&dout, n * sizeof(Result)));
    CHECK(cudaMemcpy(dvalues, values.data(), values.size() * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dperms, perms.data(), perms.size(), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dvecs, vecs.data(), vecs.size() * sizeof(Vec3), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dpairs, pairs.data(), pairs.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
    // The recursion needs more stack than the default on some devices.
    CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 4096));
    run_all<<<(n + block - 1) / block, block>>>(dvalues, dperms, dvecs, dpairs, dout, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    std::vector<Result> out(n);
    CHECK(cudaMemcpy(out.data(), dout, n * sizeof(Result), cudaMemcpyDeviceToHost));

    for (int i = 0; i < n; ++i) {
        const Result& r = out[i];
        int f = fib(i % 18), m = median(&values[16 * i], 9 + i % 8);
        int w = walk(&perms[32 * (i % 64)], i % 32, 5 + i % 23);
        unsigned g = gcd(pairs[2 * i], pairs[2 * i + 1]);
        Vec3 c = cross(vecs[2 * i], vecs[2 * i + 1]);
        if (r.fib != f) { printf("FAIL: fib(%d) = %d, expected %d\n", i % 18, r.fib, f); return 1; }
        if (r.median != m) { printf("FAIL: median for thread %d = %d, expected %d\n", i, r.median, m); return 1; }
        if (r.walk != w) { printf("FAIL: walk for thread %d = %d, expected %d\n", i, r.walk, w); return 1; }
        if (r.gcd != g) {
            printf("FAIL: gcd(%u, %u) = %u, expected %u\n", pairs[2 * i], pairs[2 * i + 1], r.gcd, g);
            return 1;
        }
        if (r.c.x != c.x || r.c.y != c.y || r.c.z != c.z) {
            printf("FAIL: cross for thread %d = (%g, %g, %g), expected (%g, %g, %g)\n", i, r.c.x,
                   r.c.y, r.c.z, c.x, c.y, c.z);
            return 1;
        }
    }
    printf("fib(17) = %d, median[0] = %d, gcd[1] = %u\n", out[17].fib, out[0].median, out[1].gcd);
    CHECK(cudaFree(dvalues));
    CHECK(cudaFree(dperms));
    CHECK(cudaFree(dvecs));
    CHECK(cudaFree(dpairs));
    CHECK(cudaFree(dout));
    printf("PASS\n");
    return 0;
}
