// cuRAND's device API as kernels use it (curand_kernel.h): each generator initialised with
// curand_init at several (seed, subsequence, offset) triples, then its raw 32-bit outputs
// and its distributions; MTGP32 with curandMakeMTGP32KernelState over two blocks; Sobol
// 32/64 (plain and with a scramble constant) from curandGetDirectionVectors32/64.
// Prints one line per stream: name, parameters, then the values (floats as their bits in
// hex, so the lines compare exactly). tests/libs/test_curand.py checks the lines against
// cuport's generators; tests/libs/record_gpu.sh keeps the H200's output of it.
#include <curand.h>
#include <curand_kernel.h>
#include <curand_mtgp32_host.h>
#include <curand_mtgp32dc_p_11213.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA error %s at line %d\n", cudaGetErrorString(e), __LINE__); exit(2); } } while (0)
#define CR(x) do { curandStatus_t s_ = (x); if (s_ != CURAND_STATUS_SUCCESS) { printf("cuRAND status %d at line %d\n", (int)s_, __LINE__); exit(2); } } while (0)

struct Triple { unsigned long long seed, sub, off; };
static const Triple TRIPLES[] = {
    {0ull, 0ull, 0ull}, {1234ull, 0ull, 0ull}, {1234ull, 1ull, 0ull}, {1234ull, 4095ull, 7ull},
    {0x123456789abcdefull, 3ull, 1000003ull}, {777ull, 100000ull, 1ull << 40},
};
enum { NT = sizeof(TRIPLES) / sizeof(TRIPLES[0]) };
// per stream: 16 raw, 8 uniform, 8 uniform double, 8 normal, 8 normal double,
// 8 log-normal, 8 log-normal double, 4 Poisson for each of 4 lambdas (fresh state each)
enum { RAW = 16, U = 8, P = 4, SLOTS = RAW + 6 * U + 4 * P };
__device__ __constant__ double LAMBDAS[4] = {0.5, 10.0, 100.0, 5000.0};
static const double HOST_LAMBDAS[4] = {0.5, 10.0, 100.0, 5000.0};

// One small kernel per generator and kind (thread i runs TRIPLES[i]), so that each
// compiles quickly; curand_init is a function of its own, not inlined into each.
template <typename S>
__device__ __noinline__ void init(const Triple* t, S* s) { curand_init(t->seed, t->sub, t->off, s); }

enum Kind { K_RAW, K_UNIFORM, K_UNIFORM_DOUBLE, K_NORMAL, K_NORMAL_DOUBLE, K_LOG_NORMAL,
            K_LOG_NORMAL_DOUBLE, K_POISSON };

template <typename S, int KIND>
__global__ void streams(const Triple* t, unsigned long long* out) {
    int i = threadIdx.x;
    unsigned long long* o = out + (size_t)i * SLOTS;
    S s;
    if (KIND == K_POISSON) {
        o += RAW + 6 * U;
#pragma unroll 1
        for (int l = 0; l < 4; l++) {
            init(&t[i], &s);
#pragma unroll 1
            for (int k = 0; k < P; k++) *o++ = curand_poisson(&s, LAMBDAS[l]);
        }
        return;
    }
    init(&t[i], &s);
    o += KIND == K_RAW ? 0 : RAW + (KIND - 1) * U;
#pragma unroll 1
    for (int k = 0; k < (KIND == K_RAW ? RAW : U); k++) {
        switch (KIND) {
        case K_RAW: *o++ = curand(&s); break;
        case K_UNIFORM: *o++ = __float_as_uint(curand_uniform(&s)); break;
        case K_UNIFORM_DOUBLE: *o++ = __double_as_longlong(curand_uniform_double(&s)); break;
        case K_NORMAL: *o++ = __float_as_uint(curand_normal(&s)); break;
        case K_NORMAL_DOUBLE: *o++ = __double_as_longlong(curand_normal_double(&s)); break;
        case K_LOG_NORMAL: *o++ = __float_as_uint(curand_log_normal(&s, 0.5f, 0.75f)); break;
        case K_LOG_NORMAL_DOUBLE: *o++ = __double_as_longlong(curand_log_normal_double(&s, 0.5, 0.75)); break;
        }
    }
}

static void print_streams(const char* name, unsigned long long* h) {
    static const char* kinds[] = {"raw", "uniform", "uniform_double", "normal", "normal_double",
                                  "log_normal", "log_normal_double"};
    for (int i = 0; i < NT; i++) {
        unsigned long long* o = h + (size_t)i * SLOTS;
        for (int k = 0; k < 7; k++) {
            int n = k == 0 ? RAW : U;
            printf("%s %llu %llu %llu %s", name, TRIPLES[i].seed, TRIPLES[i].sub, TRIPLES[i].off, kinds[k]);
            for (int j = 0; j < n; j++) printf(" %llx", *o++);
            printf("\n");
        }
        for (int l = 0; l < 4; l++) {
            printf("%s %llu %llu %llu poisson %g", name, TRIPLES[i].seed, TRIPLES[i].sub, TRIPLES[i].off, HOST_LAMBDAS[l]);
            for (int j = 0; j < P; j++) printf(" %llu", *o++);
            printf("\n");
        }
    }
}

template <typename S>
static void run_streams(const char* name, Triple* dt, unsigned long long* dout) {
    static unsigned long long h[NT * SLOTS];
    streams<S, K_RAW><<<1, NT>>>(dt, dout);
    streams<S, K_UNIFORM><<<1, NT>>>(dt, dout);
    streams<S, K_UNIFORM_DOUBLE><<<1, NT>>>(dt, dout);
    streams<S, K_NORMAL><<<1, NT>>>(dt, dout);
    streams<S, K_NORMAL_DOUBLE><<<1, NT>>>(dt, dout);
    streams<S, K_LOG_NORMAL><<<1, NT>>>(dt, dout);
    streams<S, K_LOG_NORMAL_DOUBLE><<<1, NT>>>(dt, dout);
    streams<S, K_POISSON><<<1, NT>>>(dt, dout);
    CK(cudaGetLastError());
    CK(cudaMemcpy(h, dout, sizeof(h), cudaMemcpyDeviceToHost));
    print_streams(name, h);
}

enum { MT_BLOCKS = 2, MT_ROUNDS = 3 };
__global__ void mtgp(curandStateMtgp32_t* s, unsigned* out, float* uni) {
    for (int r = 0; r < MT_ROUNDS; r++)
        out[blockIdx.x * MT_ROUNDS * 256 + r * 256 + threadIdx.x] = curand(&s[blockIdx.x]);
    uni[blockIdx.x * 256 + threadIdx.x] = curand_uniform(&s[blockIdx.x]);
}

// Sobol: thread i runs dimension dim[i]; 8 points from offset `off`, plain then scrambled
__global__ void sobol32(curandDirectionVectors32_t* v, const int* dim, unsigned scramble,
                        unsigned off, unsigned* out) {
    int i = threadIdx.x;
    curandStateSobol32_t s;
    curand_init(v[dim[i]], off, &s);
    for (int k = 0; k < 8; k++) out[i * 16 + k] = curand(&s);
    curandStateScrambledSobol32_t c;
    curand_init(v[dim[i]], scramble, off, &c);
    for (int k = 0; k < 8; k++) out[i * 16 + 8 + k] = curand(&c);
}

__global__ void sobol64(curandDirectionVectors64_t* v, const int* dim, unsigned long long scramble,
                        unsigned long long off, unsigned long long* out) {
    int i = threadIdx.x;
    curandStateSobol64_t s;
    curand_init(v[dim[i]], off, &s);
    for (int k = 0; k < 8; k++) out[i * 16 + k] = curand(&s);
    curandStateScrambledSobol64_t c;
    curand_init(v[dim[i]], scramble, off, &c);
    for (int k = 0; k < 8; k++) out[i * 16 + 8 + k] = curand(&c);
}

int main() {
    Triple* dt; unsigned long long* dout;
    CK(cudaMalloc(&dt, sizeof(TRIPLES)));
    CK(cudaMemcpy(dt, TRIPLES, sizeof(TRIPLES), cudaMemcpyHostToDevice));
    CK(cudaMalloc(&dout, sizeof(unsigned long long) * NT * SLOTS));
    run_streams<curandStateXORWOW_t>("XORWOW", dt, dout);
    run_streams<curandStateMRG32k3a_t>("MRG32K3A", dt, dout);
    run_streams<curandStatePhilox4_32_10_t>("PHILOX4_32_10", dt, dout);

    // MTGP32: two blocks of 256 threads, NVIDIA's parameter sets 0 and 1
    for (unsigned long long seed : {1234ull, 0x123456789abcdefull}) {
        curandStateMtgp32_t* states; mtgp32_kernel_params_t* kp; unsigned* dmt; float* duni;
        CK(cudaMalloc(&states, MT_BLOCKS * sizeof(curandStateMtgp32_t)));
        CK(cudaMalloc(&kp, sizeof(mtgp32_kernel_params_t)));
        CK(cudaMalloc(&dmt, MT_BLOCKS * MT_ROUNDS * 256 * 4));
        CK(cudaMalloc(&duni, MT_BLOCKS * 256 * 4));
        CR(curandMakeMTGP32Constants(mtgp32dc_params_fast_11213, kp));
        CR(curandMakeMTGP32KernelState(states, mtgp32dc_params_fast_11213, kp, MT_BLOCKS, seed));
        mtgp<<<MT_BLOCKS, 256>>>(states, dmt, duni);
        CK(cudaGetLastError());
        static unsigned hmt[MT_BLOCKS * MT_ROUNDS * 256];
        static float huni[MT_BLOCKS * 256];
        CK(cudaMemcpy(hmt, dmt, sizeof(hmt), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(huni, duni, sizeof(huni), cudaMemcpyDeviceToHost));
        for (int b = 0; b < MT_BLOCKS; b++) {
            printf("MTGP32 %llu %d raw", seed, b);
            for (int j = 0; j < MT_ROUNDS * 256; j++) printf(" %x", hmt[b * MT_ROUNDS * 256 + j]);
            printf("\nMTGP32 %llu %d uniform", seed, b);
            for (int j = 0; j < 256; j++) { unsigned u; memcpy(&u, &huni[b * 256 + j], 4); printf(" %x", u); }
            printf("\n");
        }
        CK(cudaFree(states)); CK(cudaFree(kp)); CK(cudaFree(dmt)); CK(cudaFree(duni));
    }

    // Sobol: dimensions 0, 1, 5, 19999 at two offsets, plain and scrambled
    const int dims[4] = {0, 1, 5, 19999};
    int* ddim; CK(cudaMalloc(&ddim, sizeof(dims)));
    CK(cudaMemcpy(ddim, dims, sizeof(dims), cudaMemcpyHostToDevice));
    curandDirectionVectors32_t* v32; curandDirectionVectors64_t* v64;
    CR(curandGetDirectionVectors32(&v32, CURAND_DIRECTION_VECTORS_32_JOEKUO6));
    CR(curandGetDirectionVectors64(&v64, CURAND_DIRECTION_VECTORS_64_JOEKUO6));
    curandDirectionVectors32_t* dv32; curandDirectionVectors64_t* dv64;
    CK(cudaMalloc(&dv32, 20000 * sizeof(curandDirectionVectors32_t)));
    CK(cudaMalloc(&dv64, 20000 * sizeof(curandDirectionVectors64_t)));
    CK(cudaMemcpy(dv32, v32, 20000 * sizeof(curandDirectionVectors32_t), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dv64, v64, 20000 * sizeof(curandDirectionVectors64_t), cudaMemcpyHostToDevice));
    unsigned* d32; unsigned long long* d64;
    CK(cudaMalloc(&d32, 4 * 16 * 4)); CK(cudaMalloc(&d64, 4 * 16 * 8));
    for (unsigned long long off : {0ull, 1000ull, 123456789ull}) {
        unsigned h32[64]; unsigned long long h64[64];
        sobol32<<<1, 4>>>(dv32, ddim, 0x9e3779b9u, (unsigned)off, d32);
        sobol64<<<1, 4>>>(dv64, ddim, 0x9e3779b97f4a7c15ull, off, d64);
        CK(cudaGetLastError());
        CK(cudaMemcpy(h32, d32, sizeof(h32), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(h64, d64, sizeof(h64), cudaMemcpyDeviceToHost));
        for (int i = 0; i < 4; i++) {
            printf("SOBOL32 %d %llu plain", dims[i], off);
            for (int k = 0; k < 8; k++) printf(" %x", h32[i * 16 + k]);
            printf("\nSOBOL32 %d %llu scrambled", dims[i], off);
            for (int k = 8; k < 16; k++) printf(" %x", h32[i * 16 + k]);
            printf("\nSOBOL64 %d %llu plain", dims[i], off);
            for (int k = 0; k < 8; k++) printf(" %llx", h64[i * 16 + k]);
            printf("\nSOBOL64 %d %llu scrambled", dims[i], off);
            for (int k = 8; k < 16; k++) printf(" %llx", h64[i * 16 + k]);
            printf("\n");
        }
    }
    printf("END\n");
    return 0;
}
