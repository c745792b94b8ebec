// wmma kernels for tests/vulkan/test_wmma.py: every shape and type cuport supports, a and b
// in both layouts, c and d in the layout `cd_col` says (a run-time choice: both forms are in
// each kernel), ld > the tile, and fragments changed element-wise between load and mma.
// Built with nvcc -ptx -arch=sm_80; run on the CPU and on Vulkan with the same inputs.
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;

// One tile per warp: warp w reads its a, b and c from element offsets w*warp_stride and
// writes its d there. An element-wise change of a and b between load and mma (x*2 for
// floats, x+1 for integers) must reach the products whatever the fragment layout.
#define TILE_BODY(ELEMWISE)                                                                      \
    int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;                                        \
    wmma::fragment<wmma::matrix_a, M, N, K, TA, AL> a;                                           \
    wmma::fragment<wmma::matrix_b, M, N, K, TA, BL> b;                                           \
    wmma::fragment<wmma::accumulator, M, N, K, TC> c;                                            \
    wmma::load_matrix_sync(a, A + w * stride, lda);                                              \
    wmma::load_matrix_sync(b, B + w * stride, ldb);                                              \
    wmma::load_matrix_sync(c, C + w * stride, ldc, cd_col ? wmma::mem_col_major : wmma::mem_row_major); \
    for (int i = 0; i < a.num_elements; i++) ELEMWISE(a.x[i]);                                   \
    for (int i = 0; i < b.num_elements; i++) ELEMWISE(b.x[i]);

#define TWICE(x) x = x * TS(2.0f)
#define PLUS1(x) x = x + 1

template <int M, int N, int K, typename TA, typename TS, typename TC, typename AL, typename BL>
__device__ __forceinline__ void mma_float(const TA* A, const TA* B, const TC* C, TC* D, int lda, int ldb,
                          int ldc, int stride, int cd_col)
{
    TILE_BODY(TWICE)
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(D + w * stride, c, ldc, cd_col ? wmma::mem_col_major : wmma::mem_row_major);
}

template <int M, int N, int K, typename AL, typename BL>
__device__ __forceinline__ void mma_tf32(const float* A, const float* B, const float* C, float* D, int lda,
                         int ldb, int ldc, int stride, int cd_col)
{
    typedef wmma::precision::tf32 TA;
    typedef float TC;
    int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    wmma::fragment<wmma::matrix_a, M, N, K, TA, AL> a;
    wmma::fragment<wmma::matrix_b, M, N, K, TA, BL> b;
    wmma::fragment<wmma::accumulator, M, N, K, TC> c;
    wmma::load_matrix_sync(a, A + w * stride, lda);
    wmma::load_matrix_sync(b, B + w * stride, ldb);
    wmma::load_matrix_sync(c, C + w * stride, ldc, cd_col ? wmma::mem_col_major : wmma::mem_row_major);
    for (int i = 0; i < a.num_elements; i++) a.x[i] = -a.x[i];  // tf32 inputs keep 19 bits
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(D + w * stride, c, ldc, cd_col ? wmma::mem_col_major : wmma::mem_row_major);
}

template <int M, int N, int K, typename TA, typename TS, typename TC, typename AL, typename BL, bool SAT>
__device__ __forceinline__ void mma_int(const TA* A, const TA* B, const TC* C, TC* D, int lda, int ldb, int ldc,
                        int stride, int cd_col)
{
    TILE_BODY(PLUS1)
    wmma::mma_sync(c, a, b, c, SAT);
    wmma::store_matrix_sync(D + w * stride, c, ldc, cd_col ? wmma::mem_col_major : wmma::mem_row_major);
}

// a from shared memory (wmma.load.shared), b through a generic pointer that may point to
// shared or global memory (`b_shared`), one tile per warp of the block
extern "C" __global__ void mma_shared(const half* A, const half* B, const float* C, float* D, int b_shared)
{
    __shared__ half sa[2][16 * 24];
    __shared__ half sb[2][16 * 16];
    int w = threadIdx.x / 32;
    for (int i = threadIdx.x % 32; i < 16 * 24; i += 32) sa[w][i] = A[w * 16 * 24 + i];
    for (int i = threadIdx.x % 32; i < 16 * 16; i += 32) sb[w][i] = B[w * 256 + i];
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::load_matrix_sync(a, sa[w], 24);
    wmma::load_matrix_sync(b, b_shared ? (const half*)sb[w] : B + w * 256, 16);
    wmma::fill_fragment(c, 0.5f);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(D + w * 256, c, 16, wmma::mem_row_major);
}

// the mma only in the block's first warp, then code for the whole block: the mma is in code
// that part of the block skips (a warp that returned instead would not count)
extern "C" __global__ void mma_first_warp(const half* A, const half* B, float* D)
{
    if (threadIdx.x < 32) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
        wmma::load_matrix_sync(a, A, 16);
        wmma::load_matrix_sync(b, B, 16);
        wmma::fill_fragment(c, 0.0f);
        wmma::mma_sync(c, a, b, c);
        wmma::store_matrix_sync(D, c, 16, wmma::mem_row_major);
    }
    D[256 + threadIdx.x] = 1.0f;
}

// a warp staging values in shared memory for itself, in code that part of the block skips
extern "C" __global__ void sync_first_warp(const float* A, float* D)
{
    __shared__ float s[32];
    if (threadIdx.x < 32) {
        s[threadIdx.x] = A[threadIdx.x];
        __syncwarp();
        D[threadIdx.x] = s[31 - threadIdx.x];
    }
    D[32 + threadIdx.x] = 1.0f;
}

// a sub-byte shape: refused by name on both backends
extern "C" __global__ void mma_s4(const void* A, const void* B, int* D)
{
    using namespace wmma::experimental;
    wmma::fragment<wmma::matrix_a, 8, 8, 32, precision::s4, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 8, 8, 32, precision::s4, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 8, 8, 32, int> c;
    wmma::load_matrix_sync(a, A, 32);
    wmma::load_matrix_sync(b, B, 32);
    wmma::fill_fragment(c, 0);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(D, c, 8, wmma::mem_row_major);
}

typedef wmma::row_major R;
typedef wmma::col_major L;
typedef __nv_bfloat16 bf16;

// one kernel per case, named as tests/vulkan/test_wmma.py's table names it
#define ARGS(TA, TC) (const TA* A, const TA* B, const TC* C, TC* D, int lda, int ldb, int ldc, int stride, int cd_col)
#define PASS A, B, C, D, lda, ldb, ldc, stride, cd_col
#define FLOAT(NAME, M, N, K, TA, TC, AL, BL) \
    extern "C" __global__ void NAME ARGS(TA, TC) { mma_float<M, N, K, TA, TA, TC, AL, BL>(PASS); }
#define TF32(NAME, AL, BL) \
    extern "C" __global__ void NAME ARGS(float, float) { mma_tf32<16, 16, 8, AL, BL>(PASS); }
#define INT(NAME, M, N, K, TA, AL, BL, SAT) \
    extern "C" __global__ void NAME ARGS(TA, int) { mma_int<M, N, K, TA, int, int, AL, BL, SAT>(PASS); }

FLOAT(f16_16_rc, 16, 16, 16, half, float, R, L)
FLOAT(f16_16_cr, 16, 16, 16, half, float, L, R)
FLOAT(f16_32x8_rc, 32, 8, 16, half, float, R, L)
FLOAT(f16_32x8_cr, 32, 8, 16, half, float, L, R)
FLOAT(f16_8x32_rc, 8, 32, 16, half, float, R, L)
FLOAT(f16_8x32_cr, 8, 32, 16, half, float, L, R)
FLOAT(f16acc_16_rr, 16, 16, 16, half, half, R, R)
FLOAT(f16acc_32x8_cc, 32, 8, 16, half, half, L, L)
FLOAT(bf16_16_rc, 16, 16, 16, bf16, float, R, L)
FLOAT(bf16_32x8_cr, 32, 8, 16, bf16, float, L, R)
FLOAT(bf16_8x32_rr, 8, 32, 16, bf16, float, R, R)
FLOAT(f64_rc, 8, 8, 4, double, double, R, L)
FLOAT(f64_cr, 8, 8, 4, double, double, L, R)
TF32(tf32_rc, R, L)
TF32(tf32_cr, L, R)
INT(s8_16_rc, 16, 16, 16, signed char, R, L, false)
INT(s8_32x8_cr, 32, 8, 16, signed char, L, R, false)
INT(s8_8x32_rr_sat, 8, 32, 16, signed char, R, R, true)
INT(u8_16_cc_sat, 16, 16, 16, unsigned char, L, L, true)
INT(u8_32x8_rc, 32, 8, 16, unsigned char, R, L, false)
