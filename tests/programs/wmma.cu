// Tensor-core matrix multiply with the wmma API: f16 inputs with f32 accumulation
// (m16n16k16, m32n8k16, m8n32k16; row- and column-major inputs; a scaled accumulator),
// f16 accumulation, and (at sm_80) bf16, tf32 and f64 (m8n8k4) and s8 -> s32. Inputs
// are small integers, so every product and partial sum is exact and the GPU's answer is
// the exact one whatever its summation order. One PASS/FAIL line.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;

static int failures = 0;

template <int M, int N, int K, typename ALayout, typename BLayout>
__global__ void gemm_f16(const half* A, const half* B, const float* C, float* D, int m, int n,
                         int k, float alpha, float beta)
{
    // one warp per M x N output tile; blockDim.x = 32 * warps
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int tiles_n = n / N;
    int tm = warp / tiles_n, tn = warp % tiles_n;
    if (tm * M >= m) return;
    wmma::fragment<wmma::matrix_a, M, N, K, half, ALayout> a;
    wmma::fragment<wmma::matrix_b, M, N, K, half, BLayout> b;
    wmma::fragment<wmma::accumulator, M, N, K, float> acc, c;
    wmma::fill_fragment(acc, 0.0f);
    bool a_row = std::is_same<ALayout, wmma::row_major>::value;
    bool b_row = std::is_same<BLayout, wmma::row_major>::value;
    for (int kk = 0; kk < k; kk += K) {
        const half* pa = a_row ? A + tm * M * k + kk : A + kk * m + tm * M;
        const half* pb = b_row ? B + kk * n + tn * N : B + tn * N * k + kk;
        wmma::load_matrix_sync(a, pa, a_row ? k : m);
        wmma::load_matrix_sync(b, pb, b_row ? n : k);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::load_matrix_sync(c, C + tm * M * n + tn * N, n, wmma::mem_row_major);
    for (int i = 0; i < acc.num_elements; i++) acc.x[i] = alpha * acc.x[i] + beta * c.x[i];
    wmma::store_matrix_sync(D + tm * M * n + tn * N, acc, n, wmma::mem_row_major);
}

__global__ void gemm_f16_acc16(const half* A, const half* B, half* D, int k)
{
    // one 16x16 tile, f16 accumulator, stored column-major
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, half> acc;
    wmma::fill_fragment(acc, __float2half(1.0f));
    for (int kk = 0; kk < k; kk += 16) {
        wmma::load_matrix_sync(a, A + kk, k);
        wmma::load_matrix_sync(b, B + kk * 16, 16);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(D, acc, 16, wmma::mem_col_major);
}

// bf16, tf32, f64 and s8 need sm_80 (s8 sm_72): the bodies are compiled there only
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define SM80_BODY 1
#endif
__global__ void gemm_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, float* D)
{
#ifdef SM80_BODY
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(a, A, 16);
    wmma::load_matrix_sync(b, B, 16);
    wmma::mma_sync(acc, a, b, acc);
    wmma::store_matrix_sync(D, acc, 16, wmma::mem_row_major);
#endif
}

__global__ void gemm_tf32(const float* A, const float* B, float* D)
{
#ifdef SM80_BODY
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int kk = 0; kk < 32; kk += 8) {
        wmma::load_matrix_sync(a, A + kk, 32);
        wmma::load_matrix_sync(b, B + kk * 16, 16);
        for (int i = 0; i < a.num_elements; i++) a.x[i] = wmma::__float_to_tf32(a.x[i]);
        for (int i = 0; i < b.num_elements; i++) b.x[i] = wmma::__float_to_tf32(b.x[i]);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(D, acc, 16, wmma::mem_row_major);
#endif
}

__global__ void gemm_f64(const double* A, const double* B, double* D)
{
#ifdef SM80_BODY
    wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 8, 8, 4, double> acc;
    wmma::fill_fragment(acc, 0.5);
    for (int kk = 0; kk < 16; kk += 4) {
        wmma::load_matrix_sync(a, A + kk, 16);
        wmma::load_matrix_sync(b, B + kk * 8, 8);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(D, acc, 8, wmma::mem_row_major);
#endif
}

__global__ void gemm_s8(const signed char* A, const signed char* B, int* D)
{
#ifdef SM80_BODY
    wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> acc;
    wmma::fill_fragment(acc, -3);
    wmma::load_matrix_sync(a, A, 16);
    wmma::load_matrix_sync(b, B, 16);
    wmma::mma_sync(acc, a, b, acc);
    wmma::store_matrix_sync(D, acc, 16, wmma::mem_row_major);
#endif
}

static int small(int i, int mod) { return (int)((i * 2654435761u) >> 7) % mod - mod / 2; }

template <int M, int N, int K, typename AL, typename BL>
static void run_f16(const char* name, int m, int n, int k)
{
    bool a_row = std::is_same<AL, wmma::row_major>::value;
    bool b_row = std::is_same<BL, wmma::row_major>::value;
    std::vector<float> a(m * k), b(k * n), c(m * n), d(m * n), ref(m * n);
    std::vector<half> ha(m * k), hb(k * n);
    for (int i = 0; i < m * k; i++) a[i] = (float)small(i, 7);
    for (int i = 0; i < k * n; i++) b[i] = (float)small(i + 99, 9);
    for (int i = 0; i < m * n; i++) c[i] = (float)small(i + 5, 11);
    for (int r = 0; r < m; r++)
        for (int q = 0; q < k; q++) ha[a_row ? r * k + q : q * m + r] = __float2half(a[r * k + q]);
    for (int q = 0; q < k; q++)
        for (int col = 0; col < n; col++) hb[b_row ? q * n + col : col * k + q] = __float2half(b[q * n + col]);
    for (int r = 0; r < m; r++)
        for (int col = 0; col < n; col++) {
            float s = 0;
            for (int q = 0; q < k; q++) s += a[r * k + q] * b[q * n + col];
            ref[r * n + col] = 2.0f * s + 0.5f * c[r * n + col];
        }
    half *dA, *dB; float *dC, *dD;
    cudaMalloc(&dA, m * k * 2); cudaMalloc(&dB, k * n * 2); cudaMalloc(&dC, m * n * 4); cudaMalloc(&dD, m * n * 4);
    cudaMemcpy(dA, ha.data(), m * k * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(dB, hb.data(), k * n * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(dC, c.data(), m * n * 4, cudaMemcpyHostToDevice);
    int warps = (m / M) * (n / N);
    gemm_f16<M, N, K, AL, BL><<<(warps + 3) / 4, 128>>>(dA, dB, dC, dD, m, n, k, 2.0f, 0.5f);
    cudaError_t e = cudaDeviceSynchronize();
    cudaMemcpy(d.data(), dD, m * n * 4, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < m * n; i++)
        if (d[i] != ref[i] && bad++ < 3) printf("%s: D[%d] = %g, expected %g\n", name, i, d[i], ref[i]);
    if (e != cudaSuccess) { printf("%s: %s\n", name, cudaGetErrorString(e)); bad++; }
    printf("%s: %s\n", name, bad ? "MISMATCH" : "ok");
    failures += bad != 0;
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dD);
}

int main()
{
    run_f16<16, 16, 16, wmma::row_major, wmma::row_major>("f16 m16n16k16 row/row", 64, 48, 64);
    run_f16<16, 16, 16, wmma::col_major, wmma::col_major>("f16 m16n16k16 col/col", 32, 32, 48);
    run_f16<32, 8, 16, wmma::row_major, wmma::col_major>("f16 m32n8k16 row/col", 64, 32, 32);
    run_f16<8, 32, 16, wmma::col_major, wmma::row_major>("f16 m8n32k16 col/row", 32, 64, 32);
    {   // f16 accumulator, column-major store
        const int k = 32;
        std::vector<half> a(16 * k), b(k * 16), d(256);
        std::vector<float> fa(16 * k), fb(k * 16);
        for (int i = 0; i < 16 * k; i++) { fa[i] = (float)small(i, 5); a[i] = __float2half(fa[i]); }
        for (int i = 0; i < k * 16; i++) { fb[i] = (float)small(i + 3, 5); b[i] = __float2half(fb[i]); }
        half *dA, *dB, *dD;
        cudaMalloc(&dA, a.size() * 2); cudaMalloc(&dB, b.size() * 2); cudaMalloc(&dD, 512);
        cudaMemcpy(dA, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
        cudaMemcpy(dB, b.data(), b.size() * 2, cudaMemcpyHostToDevice);
        gemm_f16_acc16<<<1, 32>>>(dA, dB, dD, k);
        cudaMemcpy(d.data(), dD, 512, cudaMemcpyDeviceToHost);
        int bad = 0;
        for (int r = 0; r < 16; r++)
            for (int c = 0; c < 16; c++) {
                float s = 1.0f;
                for (int q = 0; q < k; q++) s += fa[r * k + q] * fb[q * 16 + c];
                float got = __half2float(d[c * 16 + r]);
                if (got != s && bad++ < 3) printf("f16 acc: D[%d][%d] = %g, expected %g\n", r, c, got, s);
            }
        printf("f16 accumulator: %s\n", bad ? "MISMATCH" : "ok");
        failures += bad != 0;
    }
    cudaFuncAttributes attr;
    cudaFuncGetAttributes(&attr, gemm_bf16);
    if (attr.ptxVersion < 80)
        printf("bf16, tf32, f64, s8: not built (compute_%d; build with -arch=sm_80 for them)\n",
               attr.ptxVersion);
    else {
        std::vector<__nv_bfloat16> a(256), b(256);
        std::vector<float> fa(256), fb(256), d(256);
        for (int i = 0; i < 256; i++) { fa[i] = (float)small(i, 9); fb[i] = (float)small(i + 1, 9); a[i] = __float2bfloat16(fa[i]); b[i] = __float2bfloat16(fb[i]); }
        __nv_bfloat16 *dA, *dB; float* dD;
        cudaMalloc(&dA, 512); cudaMalloc(&dB, 512); cudaMalloc(&dD, 1024);
        cudaMemcpy(dA, a.data(), 512, cudaMemcpyHostToDevice);
        cudaMemcpy(dB, b.data(), 512, cudaMemcpyHostToDevice);
        gemm_bf16<<<1, 32>>>(dA, dB, dD);
        cudaMemcpy(d.data(), dD, 1024, cudaMemcpyDeviceToHost);
        int bad = 0;
        for (int r = 0; r < 16; r++)
            for (int c = 0; c < 16; c++) {
                float s = 0;
                for (int q = 0; q < 16; q++) s += fa[r * 16 + q] * fb[c * 16 + q];  // B col-major
                if (d[r * 16 + c] != s && bad++ < 3) printf("bf16: D[%d][%d] = %g, expected %g\n", r, c, d[r * 16 + c], s);
            }
        printf("bf16 m16n16k16: %s\n", bad ? "MISMATCH" : "ok");
        failures += bad != 0;

        std::vector<float> ta(16 * 32), tb(32 * 16), td(256);
        for (int i = 0; i < 16 * 32; i++) ta[i] = (float)small(i, 13) + 0.25f;
        for (int i = 0; i < 32 * 16; i++) tb[i] = (float)small(i + 7, 13);
        float *tA, *tB, *tD;
        cudaMalloc(&tA, ta.size() * 4); cudaMalloc(&tB, tb.size() * 4); cudaMalloc(&tD, 1024);
        cudaMemcpy(tA, ta.data(), ta.size() * 4, cudaMemcpyHostToDevice);
        cudaMemcpy(tB, tb.data(), tb.size() * 4, cudaMemcpyHostToDevice);
        gemm_tf32<<<1, 32>>>(tA, tB, tD);
        cudaMemcpy(td.data(), tD, 1024, cudaMemcpyDeviceToHost);
        bad = 0;
        for (int r = 0; r < 16; r++)
            for (int c = 0; c < 16; c++) {
                float s = 0;
                for (int q = 0; q < 32; q++) s += ta[r * 32 + q] * tb[q * 16 + c];
                if (td[r * 16 + c] != s && bad++ < 3) printf("tf32: D[%d][%d] = %g, expected %g\n", r, c, td[r * 16 + c], s);
            }
        printf("tf32 m16n16k8: %s\n", bad ? "MISMATCH" : "ok");
        failures += bad != 0;

        std::vector<double> da(8 * 16), db(16 * 8), dd(64);
        for (int i = 0; i < 128; i++) { da[i] = small(i, 17) / 4.0; db[i] = small(i + 3, 17) / 2.0; }
        double *gA, *gB, *gD;
        cudaMalloc(&gA, 1024); cudaMalloc(&gB, 1024); cudaMalloc(&gD, 512);
        cudaMemcpy(gA, da.data(), 1024, cudaMemcpyHostToDevice);
        cudaMemcpy(gB, db.data(), 1024, cudaMemcpyHostToDevice);
        gemm_f64<<<1, 32>>>(gA, gB, gD);
        cudaMemcpy(dd.data(), gD, 512, cudaMemcpyDeviceToHost);
        bad = 0;
        for (int r = 0; r < 8; r++)
            for (int c = 0; c < 8; c++) {
                double s = 0.5;
                for (int q = 0; q < 16; q++) s += da[r * 16 + q] * db[q * 8 + c];
                if (dd[r * 8 + c] != s && bad++ < 3) printf("f64: D[%d][%d] = %g, expected %g\n", r, c, dd[r * 8 + c], s);
            }
        printf("f64 m8n8k4: %s\n", bad ? "MISMATCH" : "ok");
        failures += bad != 0;

        std::vector<signed char> sa(256), sb(256);
        std::vector<int> sd(256);
        for (int i = 0; i < 256; i++) { sa[i] = (signed char)(small(i, 255)); sb[i] = (signed char)(small(i + 11, 255)); }
        signed char *iA, *iB; int* iD;
        cudaMalloc(&iA, 256); cudaMalloc(&iB, 256); cudaMalloc(&iD, 1024);
        cudaMemcpy(iA, sa.data(), 256, cudaMemcpyHostToDevice);
        cudaMemcpy(iB, sb.data(), 256, cudaMemcpyHostToDevice);
        gemm_s8<<<1, 32>>>(iA, iB, iD);
        cudaMemcpy(sd.data(), iD, 1024, cudaMemcpyDeviceToHost);
        bad = 0;
        for (int r = 0; r < 16; r++)
            for (int c = 0; c < 16; c++) {
                int s = -3;
                for (int q = 0; q < 16; q++) s += sa[r * 16 + q] * sb[q * 16 + c];
                if (sd[r * 16 + c] != s && bad++ < 3) printf("s8: D[%d][%d] = %d, expected %d\n", r, c, sd[r * 16 + c], s);
            }
        printf("s8 m16n16k16: %s\n", bad ? "MISMATCH" : "ok");
        failures += bad != 0;
    }
    printf(failures ? "FAIL\n" : "PASS\n");
    return failures ? 1 : 0;
}
