// struct_params: kernels taking structs by value (mixed int/float/pointer/
// double members with alignment padding, a nested struct, an array member, a
// 4-byte struct, a float4), and a kernel with 16 scalar parameters of every
// size; each field is echoed back and used in a computation checked exactly.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
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

struct Inner { float x, y; };
struct Params {
    char tag;            // 7 bytes of padding follow
    double offset;
    int n;
    const float* in;     // 4 bytes of padding before
    float scale;
    short shift;
    float* out;
    unsigned char flags;
    long long seed;
    int coeffs[3];
    Inner inner;
};
struct Small { char a; short b; };  // 4 bytes, 1 of padding

__host__ __device__ float apply_one(const Params& p, Small s, float4 v, float x, int i) {
    float r = fmaf(x, p.scale, (float)p.offset);
    r = fmaf((float)p.coeffs[i % 3], p.inner.x, r);
    r = fmaf(p.inner.y, (float)((i >> p.shift) & 7), r);
    const float lane[4] = {v.x, v.y, v.z, v.w};
    return fmaf(lane[i & 3], (float)(s.a + s.b), r) + ((p.flags & 1) ? 1.0f : 0.0f);
}

__global__ void struct_kernel(Params p, Small s, float4 v, long long* echo) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) p.out[i] = apply_one(p, s, v, p.in[i], i);
    if (i == 0) {
        long long e[16] = {p.tag, 0, p.n, (long long)p.in, p.shift, (long long)p.out, p.flags, p.seed,
                           p.coeffs[0], p.coeffs[1], p.coeffs[2], s.a, s.b, 0, 0, 0};
        memcpy(&e[1], &p.offset, 8);
        memcpy(&e[13], &p.scale, 4);
        memcpy(&e[14], &p.inner, 8);
        memcpy(&e[15], &v.w, 4);
        for (int k = 0; k < 16; ++k) echo[k] = e[k];
    }
}

__global__ void many_params(char c, unsigned char uc, short s, unsigned short us, int i32, unsigned u32,
                            long long i64, float f, unsigned long long u64, double d, bool flag,
                            const int* src, char c2, long long* out, int n, double d2) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    long long x = src[k];
    long long r = x * c + uc - x * s + us + (x ^ i32) + (long long)(u32 >> (k & 7)) + i64 / (x | 1);
    r += (long long)(f * 8.0f) * x + (long long)(u64 % 1000003ull) + (long long)(d * 16.0) + (flag ? 7 : -7);
    r += c2 * (long long)(k % 5) + (long long)(d2 * 2.0);
    out[k] = r;
}

int main() {
    const int n = 5003, block = 96, grid = (n + block - 1) / block;
    std::vector<float> in(n), out(n);
    std::vector<int> src(n);
    unsigned state = 17;
    for (int i = 0; i < n; ++i) {
        state = state * 1664525u + 1013904223u;
        in[i] = (float)((int)(state >> 8) % 20001 - 10000) / 64.0f;
        src[i] = (int)(state >> 9) % 100001 - 50000;
    }
    float *din, *dout;
    int* dsrc;
    long long *decho, *dlong;
    CHECK(cudaMalloc(&din, n * sizeof(float)));
    CHECK(cudaMalloc(&dout, n * sizeof(float)));
    CHECK(cudaMalloc(&dsrc, n * sizeof(int)));
    CHECK(cudaMalloc(&decho, 16 * sizeof(long long)));
    CHECK(cudaMalloc(&dlong, n * sizeof(long long)));
    CHECK(cudaMemcpy(din, in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dsrc, src.data(), n * sizeof(int), cudaMemcpyHostToDevice));

    Params p;
    memset(&p, 0, sizeof(p));
    p.tag = -5; p.offset = 0.375; p.n = n; p.in = din; p.scale = 1.25f; p.shift = 3; p.out = dout;
    p.flags = 0xa5; p.seed = -1234567890123ll; p.coeffs[0] = 3; p.coeffs[1] = -7; p.coeffs[2] = 11;
    p.inner = Inner{0.5f, -2.25f};
    const Small s = {-3, 1000};
    const float4 v = make_float4(0.125f, -1.5f, 3.0f, 0.0625f);
    struct_kernel<<<grid, block>>>(p, s, v, decho);
    CHECK(cudaGetLastError());
    const char c = -100; const unsigned char uc = 200; const short sh = -30000; const unsigned short us = 60000;
    const int i32 = -123456789; const unsigned u32 = 3000000000u; const long long i64 = -9000000000000ll;
    const float f = 2.625f; const unsigned long long u64 = 18000000000000000000ull; const double d = -1.5e3;
    const bool flag = true; const char c2 = 77; const double d2 = 4.5;
    many_params<<<grid, block>>>(c, uc, sh, us, i32, u32, i64, f, u64, d, flag, dsrc, c2, dlong, n, d2);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    long long echo[16];
    std::vector<long long> got_long(n);
    CHECK(cudaMemcpy(out.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(echo, decho, sizeof(echo), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(got_long.data(), dlong, n * sizeof(long long), cudaMemcpyDeviceToHost));

    long long want_echo[16] = {p.tag, 0, p.n, (long long)p.in, p.shift, (long long)p.out, p.flags, p.seed,
                               p.coeffs[0], p.coeffs[1], p.coeffs[2], s.a, s.b, 0, 0, 0};
    memcpy(&want_echo[1], &p.offset, 8);
    memcpy(&want_echo[13], &p.scale, 4);
    memcpy(&want_echo[14], &p.inner, 8);
    memcpy(&want_echo[15], &v.w, 4);
    const char* fields[16] = {"tag", "offset", "n", "in", "shift", "out", "flags", "seed", "coeffs[0]",
                              "coeffs[1]", "coeffs[2]", "Small.a", "Small.b", "scale", "inner", "float4.w"};
    for (int k = 0; k < 16; ++k)
        if (echo[k] != want_echo[k]) {
            printf("FAIL: struct field %s read as 0x%llx, expected 0x%llx\n", fields[k], echo[k], want_echo[k]);
            return 1;
        }
    for (int i = 0; i < n; ++i) {
        float want = apply_one(p, s, v, in[i], i);
        if (memcmp(&want, &out[i], 4) != 0) {
            printf("FAIL: struct_kernel out[%d] = %.9g, expected %.9g\n", i, out[i], want);
            return 1;
        }
        long long x = src[i];
        long long r = x * c + uc - x * sh + us + (x ^ i32) + (long long)(u32 >> (i & 7)) + i64 / (x | 1);
        r += (long long)(f * 8.0f) * x + (long long)(u64 % 1000003ull) + (long long)(d * 16.0) + (flag ? 7 : -7);
        r += c2 * (long long)(i % 5) + (long long)(d2 * 2.0);
        if (got_long[i] != r) {
            printf("FAIL: many_params out[%d] = %lld, expected %lld\n", i, got_long[i], r);
            return 1;
        }
    }
    printf("sizeof(Params) = %zu, out[1] = %g, many[1] = %lld\n", sizeof(Params), out[1], got_long[1]);
    CHECK(cudaFree(din));
    CHECK(cudaFree(dout));
    CHECK(cudaFree(dsrc));
    CHECK(cudaFree(decho));
    CHECK(cudaFree(dlong));
    printf("PASS\n");
    return 0;
}
