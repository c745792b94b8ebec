// int64_math: 64-bit integer arithmetic on edge values and random operands:
// mul, div/rem (signed, unsigned, by constants), shifts, rotates, popcount,
// clz, ffs, bit reverse, mulhi, widening 32x32->64 multiplies; exact.
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

typedef unsigned long long u64;
typedef long long s64;

struct Lcg {
    u64 state;
    u64 next() { state = state * 6364136223846793005ull + 1442695040888963407ull; return state; }
};

#define NOPS 24
static const char* names[NOPS] = {
    "mul", "udiv", "urem", "sdiv", "srem", "shl", "lshr", "ashr", "popc", "clz", "umulhi",
    "mulhi", "ffs", "brev", "smin", "umax", "mul.wide.s32", "mul.wide.u32", "rotl", "add-sub",
    "udiv10", "sdiv7", "srem7", "clz32hi"};

// The intrinsics differ by name only: the host spells them with builtins.
__host__ __device__ int popc64(u64 x) {
#ifdef __CUDA_ARCH__
    return __popcll(x);
#else
    return __builtin_popcountll(x);
#endif
}
__host__ __device__ int clz64(u64 x) {
#ifdef __CUDA_ARCH__
    return __clzll((s64)x);
#else
    return x ? __builtin_clzll(x) : 64;
#endif
}
__host__ __device__ int clz32(unsigned x) {
#ifdef __CUDA_ARCH__
    return __clz((int)x);
#else
    return x ? __builtin_clz(x) : 32;
#endif
}
__host__ __device__ int ffs64(s64 x) {
#ifdef __CUDA_ARCH__
    return __ffsll(x);
#else
    return __builtin_ffsll(x);
#endif
}
__host__ __device__ u64 umulhi64(u64 a, u64 b) {
#ifdef __CUDA_ARCH__
    return __umul64hi(a, b);
#else
    return (u64)(((unsigned __int128)a * b) >> 64);
#endif
}
__host__ __device__ s64 mulhi64(s64 a, s64 b) {
#ifdef __CUDA_ARCH__
    return __mul64hi(a, b);
#else
    return (s64)(((__int128)a * b) >> 64);
#endif
}
__host__ __device__ u64 brev64(u64 x) {
#ifdef __CUDA_ARCH__
    return __brevll(x);
#else
    u64 r = 0;
    for (int i = 0; i < 64; ++i) r |= ((x >> i) & 1ull) << (63 - i);
    return r;
#endif
}

__host__ __device__ void int64_ops(u64 ua, u64 ub, u64* r) {
    const s64 sa = (s64)ua, sb = (s64)ub;
    const s64 smin = (s64)0x8000000000000000ull;
    const unsigned sh = (unsigned)(ub & 63);
    r[0] = ua * ub;
    r[1] = ub ? ua / ub : ~0ull;
    r[2] = ub ? ua % ub : ~0ull;
    const bool sdiv_ok = sb != 0 && !(sa == smin && sb == -1);
    r[3] = sdiv_ok ? (u64)(sa / sb) : 0x1234ull;
    r[4] = sdiv_ok ? (u64)(sa % sb) : 0x5678ull;
    r[5] = ua << sh;
    r[6] = ua >> sh;
    r[7] = (u64)(sa >> sh);
    r[8] = (u64)popc64(ua);
    r[9] = (u64)clz64(ua);
    r[10] = umulhi64(ua, ub);
    r[11] = (u64)mulhi64(sa, sb);
    r[12] = (u64)ffs64(sa);
    r[13] = brev64(ua);
    r[14] = (u64)(sa < sb ? sa : sb);
    r[15] = ua > ub ? ua : ub;
    r[16] = (u64)((s64)(int)ua * (s64)(int)ub);
    r[17] = (u64)(unsigned)ua * (u64)(unsigned)(ub >> 32);
    r[18] = (ua << sh) | (ua >> ((64 - sh) & 63));
    r[19] = (ua + ub) ^ (ua - ub) ^ (0ull - ua);
    r[20] = ua / 10u;
    r[21] = (u64)(sa / 7);
    r[22] = (u64)(sa % 7);
    r[23] = (u64)clz32((unsigned)(ua >> 32));
}

__global__ void int64_kernel(const u64* a, const u64* b, u64* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) int64_ops(a[i], b[i], out + (size_t)NOPS * i);
}

int main() {
    const u64 edges[] = {0ull, 1ull, 2ull, 3ull, 7ull, 10ull, 0xffffffffull, 0x100000000ull,
                         0x7fffffffffffffffull, 0x8000000000000000ull, 0x8000000000000001ull,
                         0xffffffffffffffffull, 0xfffffffffffffffeull, 0x5555555555555555ull,
                         0xaaaaaaaaaaaaaaaaull, 0xfffffff9ull, 0xfffffffffffffff9ull};
    const int ne = sizeof(edges) / sizeof(edges[0]);
    const int n = 40009, block = 128;
    std::vector<u64> a(n), b(n), out((size_t)NOPS * n);
    Lcg rng{0xC0FFEEull};
    for (int i = 0; i < n; ++i) {
        if (i < ne * ne) {
            a[i] = edges[i / ne];
            b[i] = edges[i % ne];
        } else {  // random values of random width, either sign
            a[i] = rng.next() >> (rng.next() % 64);
            b[i] = rng.next() >> (rng.next() % 64);
            if (rng.next() & 1) a[i] = 0ull - a[i];
            if (rng.next() % 3 == 0) b[i] = 0ull - b[i];
        }
    }
    u64 *da, *db, *dout;
    CHECK(cudaMalloc(&da, n * sizeof(u64)));
    CHECK(cudaMalloc(&db, n * sizeof(u64)));
    CHECK(cudaMalloc(&dout, out.size() * sizeof(u64)));
    CHECK(cudaMemcpy(da, a.data(), n * sizeof(u64), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data(), n * sizeof(u64), cudaMemcpyHostToDevice));
    int64_kernel<<<(n + block - 1) / block, block>>>(da, db, dout, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(out.data(), dout, out.size() * sizeof(u64), cudaMemcpyDeviceToHost));

    for (int i = 0; i < n; ++i) {
        u64 want[NOPS];
        int64_ops(a[i], b[i], want);
        for (int k = 0; k < NOPS; ++k) {
            if (out[(size_t)NOPS * i + k] != want[k]) {
                printf("FAIL: %s(0x%016llx, 0x%016llx) = 0x%016llx, expected 0x%016llx\n", names[k],
                       a[i], b[i], out[(size_t)NOPS * i + k], want[k]);
                return 1;
            }
        }
    }
    printf("checked %d operations on %d operand pairs (%d edge pairs)\n", NOPS, n, ne * ne);
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dout));
    printf("PASS\n");
    return 0;
}
