// cuBLAS GEMM family as applications call it: SGEMM/DGEMM (all transposes, alpha/beta,
// padded leading dimensions), HGEMM and GemmEx f16->f32, batched and strided-batched
// SGEMM, pointer mode device, a stream. Host double-precision reference; tolerances
// are relative to sum |a||b| (what cuBLAS's error bound scales with).
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(2); } } while (0)
#define CB(x) do { cublasStatus_t st_ = (x); if (st_ != CUBLAS_STATUS_SUCCESS) { printf("cuBLAS status %d at %s:%d\n", (int)st_, __FILE__, __LINE__); exit(2); } } while (0)

static unsigned lcg = 12345u;
static float rnd() { lcg = lcg * 1664525u + 1013904223u; return ((lcg >> 8) & 0xFFFF) / 32768.0f - 1.0f; }
static int failures = 0;

template <typename T>
static void ref_gemm(int ta, int tb, int m, int n, int k, double alpha, const std::vector<T>& A, int lda,
                     const std::vector<T>& B, int ldb, double beta, const std::vector<T>& C0, int ldc,
                     std::vector<double>& out, std::vector<double>& mag) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0, a_ = 0;
            for (int l = 0; l < k; l++) {
                double a = ta ? (double)A[l + i * lda] : (double)A[i + l * lda];
                double b = tb ? (double)B[j + l * ldb] : (double)B[l + j * ldb];
                s += a * b; a_ += fabs(a * b);
            }
            out[i + j * ldc] = alpha * s + beta * (double)C0[i + j * ldc];
            mag[i + j * ldc] = fabs(alpha) * a_ + fabs(beta * (double)C0[i + j * ldc]) + 1e-30;
        }
}

template <typename T>
static void check(const char* what, const std::vector<T>& got, const std::vector<double>& want,
                  const std::vector<double>& mag, int m, int n, int ld, double tol) {
    double worst = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double e = fabs((double)got[i + j * ld] - want[i + j * ld]) / mag[i + j * ld];
            if (e > worst) worst = e;
        }
    printf("%-28s worst relative error %.3g (bound %.1g)\n", what, worst, tol);
    if (!(worst <= tol)) failures++;
}

template <typename T>
static void run_gemm(cublasHandle_t h, int ta, int tb, int m, int n, int k, double tol, const char* name) {
    int lda = (ta ? k : m) + 3, ldb = (tb ? n : k) + 1, ldc = m + 2;
    int ca = ta ? m : k, cb = tb ? k : n;
    std::vector<T> A(lda * ca), B(ldb * cb), C(ldc * n);
    for (auto& x : A) x = rnd();
    for (auto& x : B) x = rnd();
    for (auto& x : C) x = rnd();
    T alpha = (T)1.5, beta = (T)-0.5;
    T *dA, *dB, *dC;
    CK(cudaMalloc(&dA, A.size() * sizeof(T))); CK(cudaMalloc(&dB, B.size() * sizeof(T))); CK(cudaMalloc(&dC, C.size() * sizeof(T)));
    CK(cudaMemcpy(dA, A.data(), A.size() * sizeof(T), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dB, B.data(), B.size() * sizeof(T), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dC, C.data(), C.size() * sizeof(T), cudaMemcpyHostToDevice));
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (sizeof(T) == 4)
        CB(cublasSgemm(h, opa, opb, m, n, k, (const float*)&alpha, (const float*)dA, lda, (const float*)dB, ldb, (const float*)&beta, (float*)dC, ldc));
    else
        CB(cublasDgemm(h, opa, opb, m, n, k, (const double*)&alpha, (const double*)dA, lda, (const double*)dB, ldb, (const double*)&beta, (double*)dC, ldc));
    CK(cudaDeviceSynchronize());  // the handle's stream is non-blocking: cudaMemcpy would not wait
    std::vector<T> got(C.size());
    CK(cudaMemcpy(got.data(), dC, C.size() * sizeof(T), cudaMemcpyDeviceToHost));
    std::vector<double> want(C.size()), mag(C.size());
    ref_gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, want, mag);
    char what[64];
    snprintf(what, sizeof what, "%s %c%c %dx%dx%d", name, ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k);
    check(what, got, want, mag, m, n, ldc, tol);
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
}

int main() {
    cublasHandle_t h;
    CB(cublasCreate(&h));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CB(cublasSetStream(h, s));
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            run_gemm<float>(h, ta, tb, 67, 45, 129, 1e-5, "SGEMM");
            run_gemm<double>(h, ta, tb, 37, 53, 71, 1e-13, "DGEMM");
        }

    // HGEMM (f16 in and out) and GemmEx f16 x f16 -> f32 with f32 compute
    {
        int m = 64, n = 48, k = 80;
        std::vector<__half> A(m * k), B(k * n), C(m * n);
        std::vector<float> Af(m * k), Bf(k * n);
        for (int i = 0; i < m * k; i++) { A[i] = __float2half(rnd()); Af[i] = __half2float(A[i]); }
        for (int i = 0; i < k * n; i++) { B[i] = __float2half(rnd()); Bf[i] = __half2float(B[i]); }
        __half *dA, *dB, *dC; float* dC32;
        CK(cudaMalloc(&dA, m * k * 2)); CK(cudaMalloc(&dB, k * n * 2)); CK(cudaMalloc(&dC, m * n * 2)); CK(cudaMalloc(&dC32, m * n * 4));
        CK(cudaMemcpy(dA, A.data(), m * k * 2, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dB, B.data(), k * n * 2, cudaMemcpyHostToDevice));
        __half ha = __float2half(1.0f), hb = __float2half(0.0f);
        CB(cublasHgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &ha, dA, m, dB, k, &hb, dC, m));
        float fa = 1.0f, fb = 0.0f;
        CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &fa, dA, CUDA_R_16F, m, dB, CUDA_R_16F, k, &fb, dC32, CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        CK(cudaStreamSynchronize(s));
        std::vector<__half> got(m * n); std::vector<float> got32(m * n);
        CK(cudaMemcpy(got.data(), dC, m * n * 2, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(got32.data(), dC32, m * n * 4, cudaMemcpyDeviceToHost));
        std::vector<double> want(m * n), mag(m * n); std::vector<float> zero(m * n, 0.0f), goth(m * n);
        ref_gemm(0, 0, m, n, k, 1.0, Af, m, Bf, k, 0.0, zero, m, want, mag);
        for (int i = 0; i < m * n; i++) goth[i] = __half2float(got[i]);
        check("HGEMM NN 64x48x80", goth, want, mag, m, n, m, 1e-2);
        check("GemmEx f16->f32 NN", got32, want, mag, m, n, m, 1e-5);
        cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dC32);
    }

    // strided-batched and pointer-array batched SGEMM, alpha/beta in device memory
    {
        int m = 33, n = 17, k = 25, batch = 7;
        long sa = m * k + 5, sb = k * n + 3, sc = m * n + 1;
        std::vector<float> A(sa * batch), B(sb * batch), C(sc * batch);
        for (auto& x : A) x = rnd();
        for (auto& x : B) x = rnd();
        for (auto& x : C) x = rnd();
        float *dA, *dB, *dC, *dC2, *dScal;
        CK(cudaMalloc(&dA, A.size() * 4)); CK(cudaMalloc(&dB, B.size() * 4)); CK(cudaMalloc(&dC, C.size() * 4)); CK(cudaMalloc(&dC2, C.size() * 4));
        CK(cudaMalloc(&dScal, 8));
        float scal[2] = {0.75f, 2.0f};
        CK(cudaMemcpy(dScal, scal, 8, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dA, A.data(), A.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dB, B.data(), B.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dC, C.data(), C.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dC2, C.data(), C.size() * 4, cudaMemcpyHostToDevice));
        CB(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
        CB(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, dScal, dA, m, sa, dB, k, sb, dScal + 1, dC, m, sc, batch));
        std::vector<float*> pa(batch), pb(batch), pc(batch);
        for (int i = 0; i < batch; i++) { pa[i] = dA + i * sa; pb[i] = dB + i * sb; pc[i] = dC2 + i * sc; }
        float **dpa, **dpb, **dpc;
        CK(cudaMalloc(&dpa, batch * 8)); CK(cudaMalloc(&dpb, batch * 8)); CK(cudaMalloc(&dpc, batch * 8));
        CK(cudaMemcpyAsync(dpa, pa.data(), batch * 8, cudaMemcpyHostToDevice, s));
        CK(cudaMemcpyAsync(dpb, pb.data(), batch * 8, cudaMemcpyHostToDevice, s));
        CK(cudaMemcpyAsync(dpc, pc.data(), batch * 8, cudaMemcpyHostToDevice, s));
        CB(cublasSgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, dScal, dpa, m, dpb, k, dScal + 1, dpc, m, batch));
        CB(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
        std::vector<float> got(C.size()), got2(C.size());
        CK(cudaMemcpyAsync(got.data(), dC, C.size() * 4, cudaMemcpyDeviceToHost, s));
        CK(cudaMemcpyAsync(got2.data(), dC2, C.size() * 4, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        double worst = 0;
        for (int b = 0; b < batch; b++) {
            std::vector<float> Ab(A.begin() + b * sa, A.begin() + b * sa + m * k), Bb(B.begin() + b * sb, B.begin() + b * sb + k * n), Cb(C.begin() + b * sc, C.begin() + b * sc + m * n);
            std::vector<double> want(m * n), mag(m * n);
            ref_gemm(0, 0, m, n, k, 0.75, Ab, m, Bb, k, 2.0, Cb, m, want, mag);
            for (int i = 0; i < m * n; i++) {
                double e1 = fabs(got[b * sc + i] - want[i]) / mag[i], e2 = fabs(got2[b * sc + i] - want[i]) / mag[i];
                worst = fmax(worst, fmax(e1, e2));
            }
        }
        printf("%-28s worst relative error %.3g (bound %.1g)\n", "S batched/strided x7", worst, 1e-5);
        if (!(worst <= 1e-5)) failures++;
        // the gaps between strided matrices are untouched
        if (got[m * n] != C[m * n]) { printf("strided batch wrote between matrices\n"); failures++; }
    }

    // argument checks as cuBLAS does them
    {
        float one = 1.0f;
        cublasStatus_t st = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, NULL, 3, NULL, 4, &one, NULL, 4);
        printf("lda < m answers %d\n", (int)st);
        if (st != CUBLAS_STATUS_INVALID_VALUE) failures++;
        st = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 4, 4, &one, NULL, 4, NULL, 4, &one, NULL, 4);
        printf("m < 0 answers %d\n", (int)st);
        if (st != CUBLAS_STATUS_INVALID_VALUE) failures++;
    }
    CB(cublasDestroy(h));
    CK(cudaStreamDestroy(s));
    if (failures) { printf("FAIL: %d checks\n", failures); return 1; }
    printf("PASS\n");
    return 0;
}
