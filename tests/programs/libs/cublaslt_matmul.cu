// cuBLASLt as applications use it (the CUDA samples' LtSgemm, PyTorch's addmm): a matmul
// descriptor, matrix layouts, a preference with a workspace limit, the heuristic query's
// algorithm, then cublasLtMatmul. Cases: f32 with transposes, f16 in/out with f32
// compute, bf16 in with f32 out, TF32, int8 in with int32 compute and out, row-major
// layouts, strided batches, the BIAS/RELU_BIAS/GELU epilogues, device pointer mode.
// Each result is checked against a double-precision reference; prints PASS at the end. A case
// the heuristic answers NOT_SUPPORTED for is reported as skipped.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA error %s at line %d\n", cudaGetErrorString(e), __LINE__); exit(2); } } while (0)
#define CB(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { printf("cuBLASLt status %d at line %d\n", (int)s_, __LINE__); exit(2); } } while (0)

static int failures = 0, skipped = 0;
static cublasLtHandle_t lt;

static double lcg(unsigned* s) { *s = *s * 1664525u + 1013904223u; return ((*s >> 8) & 0xFFFF) / 32768.0 - 1.0; }

struct Case {
    const char* name;
    cudaDataType_t ab, cd;
    cublasComputeType_t compute;
    cudaDataType_t scale;
    cublasOperation_t ta, tb;
    cublasLtOrder_t order;
    cublasLtEpilogue_t epilogue;
    int m, n, k, batch;
    bool device_scalars;
    double tol;
};

static size_t esize(cudaDataType_t t) {
    switch (t) { case CUDA_R_32F: case CUDA_R_32I: return 4; case CUDA_R_16F: case CUDA_R_16BF: return 2; case CUDA_R_8I: return 1; default: return 8; }
}
static void store(cudaDataType_t t, void* p, size_t i, double v) {
    switch (t) {
    case CUDA_R_32F: ((float*)p)[i] = (float)v; break;
    case CUDA_R_64F: ((double*)p)[i] = v; break;
    case CUDA_R_16F: ((__half*)p)[i] = __float2half((float)v); break;
    case CUDA_R_16BF: ((__nv_bfloat16*)p)[i] = __float2bfloat16((float)v); break;
    case CUDA_R_8I: ((signed char*)p)[i] = (signed char)v; break;
    case CUDA_R_32I: ((int*)p)[i] = (int)v; break;
    default: break;
    }
}
static double load(cudaDataType_t t, const void* p, size_t i) {
    switch (t) {
    case CUDA_R_32F: return ((const float*)p)[i];
    case CUDA_R_64F: return ((const double*)p)[i];
    case CUDA_R_16F: return __half2float(((const __half*)p)[i]);
    case CUDA_R_16BF: return __bfloat162float(((const __nv_bfloat16*)p)[i]);
    case CUDA_R_8I: return ((const signed char*)p)[i];
    case CUDA_R_32I: return ((const int*)p)[i];
    default: return 0;
    }
}

// element (r, c) of a rows x cols matrix with leading dimension ld in the given order
static size_t at(cublasLtOrder_t o, int r, int c, int ld) { return o == CUBLASLT_ORDER_COL ? (size_t)c * ld + r : (size_t)r * ld + c; }

static void run(const Case& t) {
    int ar = t.ta == CUBLAS_OP_N ? t.m : t.k, ac = t.ta == CUBLAS_OP_N ? t.k : t.m;
    int br = t.tb == CUBLAS_OP_N ? t.k : t.n, bc = t.tb == CUBLAS_OP_N ? t.n : t.k;
    int lda = t.order == CUBLASLT_ORDER_COL ? ar + 3 : ac + 1;
    int ldb = t.order == CUBLASLT_ORDER_COL ? br + 2 : bc;
    int ldc = t.order == CUBLASLT_ORDER_COL ? t.m + 1 : t.n + 2;
    long long sa = (long long)lda * (t.order == CUBLASLT_ORDER_COL ? ac : ar) + 5;
    long long sb = (long long)ldb * (t.order == CUBLASLT_ORDER_COL ? bc : br) + 1;
    long long sc = (long long)ldc * (t.order == CUBLASLT_ORDER_COL ? t.n : t.m) + 7;
    bool ints = t.ab == CUDA_R_8I;
    std::vector<char> ha(sa * t.batch * esize(t.ab)), hb(sb * t.batch * esize(t.ab));
    std::vector<char> hc(sc * t.batch * esize(t.cd)), hd(hc.size());
    std::vector<char> hbias(t.m * esize(t.cd));
    unsigned seed = 12345;
    for (size_t i = 0; i < ha.size() / esize(t.ab); i++) store(t.ab, ha.data(), i, ints ? (int)(lcg(&seed) * 100) : lcg(&seed));
    for (size_t i = 0; i < hb.size() / esize(t.ab); i++) store(t.ab, hb.data(), i, ints ? (int)(lcg(&seed) * 100) : lcg(&seed));
    for (size_t i = 0; i < hc.size() / esize(t.cd); i++) store(t.cd, hc.data(), i, ints ? (int)(lcg(&seed) * 1000) : lcg(&seed));
    for (int i = 0; i < t.m; i++) store(t.cd, hbias.data(), i, lcg(&seed));
    void *da, *db, *dc, *dd, *dbias, *dscal, *work;
    CK(cudaMalloc(&da, ha.size())); CK(cudaMalloc(&db, hb.size()));
    CK(cudaMalloc(&dc, hc.size())); CK(cudaMalloc(&dd, hd.size()));
    CK(cudaMalloc(&dbias, hbias.size())); CK(cudaMalloc(&dscal, 16)); CK(cudaMalloc(&work, 1 << 20));
    CK(cudaMemcpy(da, ha.data(), ha.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, hb.data(), hb.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dc, hc.data(), hc.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dbias, hbias.data(), hbias.size(), cudaMemcpyHostToDevice));
    char alpha[8], beta[8];
    double av = ints ? 2 : 0.75, bv = ints ? 1 : -0.5;
    if (t.scale == CUDA_R_32I) { int a = (int)av, b = (int)bv; memcpy(alpha, &a, 4); memcpy(beta, &b, 4); }
    else if (t.scale == CUDA_R_64F) { memcpy(alpha, &av, 8); memcpy(beta, &bv, 8); }
    else { float a = (float)av, b = (float)bv; memcpy(alpha, &a, 4); memcpy(beta, &b, 4); }

    cublasLtMatmulDesc_t op;
    CB(cublasLtMatmulDescCreate(&op, t.compute, t.scale));
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t.ta, sizeof(t.ta)));
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &t.tb, sizeof(t.tb)));
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &t.epilogue, sizeof(t.epilogue)));
    if (t.epilogue == CUBLASLT_EPILOGUE_BIAS || t.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS || t.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS)
        CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof(dbias)));
    const void *palpha = alpha, *pbeta = beta;
    if (t.device_scalars) {
        cublasLtPointerMode_t pm = CUBLASLT_POINTER_MODE_DEVICE;
        CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof(pm)));
        CK(cudaMemcpy(dscal, alpha, 8, cudaMemcpyHostToDevice));
        CK(cudaMemcpy((char*)dscal + 8, beta, 8, cudaMemcpyHostToDevice));
        palpha = dscal; pbeta = (char*)dscal + 8;
    }
    cublasLtEpilogue_t back; size_t written = 0;
    CB(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &back, sizeof(back), &written));
    if (back != t.epilogue || written != sizeof(back)) { printf("%s: epilogue read back %d (%zu bytes)\n", t.name, (int)back, written); failures++; }

    cublasLtMatrixLayout_t la, lb, lc, ldl;
    CB(cublasLtMatrixLayoutCreate(&la, t.ab, ar, ac, lda));
    CB(cublasLtMatrixLayoutCreate(&lb, t.ab, br, bc, ldb));
    CB(cublasLtMatrixLayoutCreate(&lc, t.cd, t.m, t.n, ldc));
    CB(cublasLtMatrixLayoutCreate(&ldl, t.cd, t.m, t.n, ldc));
    cublasLtMatrixLayout_t ls[4] = {la, lb, lc, ldl};
    long long strides[4] = {sa, sb, sc, sc};
    for (int i = 0; i < 4; i++) {
        CB(cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_ORDER, &t.order, sizeof(t.order)));
        if (t.batch > 1) {
            CB(cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &t.batch, sizeof(t.batch)));
            CB(cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i], sizeof(strides[i])));
        }
    }
    cublasLtMatmulPreference_t pref;
    CB(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = 1 << 20;
    CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    cublasLtMatmulHeuristicResult_t heur[4] = {};
    int found = 0;
    cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, ldl, pref, 4, heur, &found);
    if (hs == CUBLAS_STATUS_NOT_SUPPORTED) {
        // NVIDIA's cuBLASLt has no algorithm for some combinations (on the H200: bf16
        // row-major with the RELU_BIAS epilogue), as applications must expect: they fall
        // back. Reported, not a failure; cuport runs every case (test_lib_programs.py).
        printf("%-28s skipped: the heuristic answers CUBLAS_STATUS_NOT_SUPPORTED\n", t.name);
        skipped++;
        CB(cublasLtMatmulPreferenceDestroy(pref));
        for (int i = 0; i < 4; i++) CB(cublasLtMatrixLayoutDestroy(ls[i]));
        CB(cublasLtMatmulDescDestroy(op));
        CK(cudaFree(da)); CK(cudaFree(db)); CK(cudaFree(dc)); CK(cudaFree(dd)); CK(cudaFree(dbias)); CK(cudaFree(dscal)); CK(cudaFree(work));
        return;
    }
    CB(hs);
    if (found < 1 || heur[0].state != CUBLAS_STATUS_SUCCESS || heur[0].workspaceSize > ws) {
        printf("%s: heuristic found %d algorithms\n", t.name, found); failures++; return;
    }
    cudaStream_t stream; CK(cudaStreamCreate(&stream));
    CB(cublasLtMatmul(lt, op, palpha, da, la, db, lb, pbeta, dc, lc, dd, ldl, &heur[0].algo, work, ws, stream));
    CK(cudaStreamSynchronize(stream));
    CK(cudaMemcpy(hd.data(), dd, hd.size(), cudaMemcpyDeviceToHost));

    double worst = 0;
    for (int b = 0; b < t.batch; b++)
        for (int i = 0; i < t.m; i++)
            for (int j = 0; j < t.n; j++) {
                double s = 0;
                for (int p = 0; p < t.k; p++) {
                    double x = t.ta == CUBLAS_OP_N ? load(t.ab, ha.data(), b * sa + at(t.order, i, p, lda)) : load(t.ab, ha.data(), b * sa + at(t.order, p, i, lda));
                    double y = t.tb == CUBLAS_OP_N ? load(t.ab, hb.data(), b * sb + at(t.order, p, j, ldb)) : load(t.ab, hb.data(), b * sb + at(t.order, j, p, ldb));
                    s += x * y;
                }
                double want = av * s + bv * load(t.cd, hc.data(), b * sc + at(t.order, i, j, ldc));
                if (t.epilogue == CUBLASLT_EPILOGUE_BIAS || t.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS || t.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS)
                    want += load(t.cd, hbias.data(), i);
                if (t.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS || t.epilogue == CUBLASLT_EPILOGUE_RELU) want = want > 0 ? want : 0;
                if (t.epilogue == CUBLASLT_EPILOGUE_GELU || t.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS)
                    want = 0.5 * want * (1 + tanh(0.7978845608028654 * (want + 0.044715 * want * want * want)));
                double got = load(t.cd, hd.data(), b * sc + at(t.order, i, j, ldc));
                double err = fabs(got - want) / (1 + fabs(want));
                if (err > worst) worst = err;
            }
    bool ok = worst <= t.tol;
    printf("%-28s %dx%dx%d batch %d: max relative error %.2e %s\n", t.name, t.m, t.n, t.k, t.batch, worst, ok ? "ok" : "FAIL");
    if (!ok) failures++;
    CB(cublasLtMatmulPreferenceDestroy(pref));
    for (int i = 0; i < 4; i++) CB(cublasLtMatrixLayoutDestroy(ls[i]));
    CB(cublasLtMatmulDescDestroy(op));
    CK(cudaStreamDestroy(stream));
    CK(cudaFree(da)); CK(cudaFree(db)); CK(cudaFree(dc)); CK(cudaFree(dd)); CK(cudaFree(dbias)); CK(cudaFree(dscal)); CK(cudaFree(work));
}

int main() {
    CB(cublasLtCreate(&lt));
    const cublasLtOrder_t COL = CUBLASLT_ORDER_COL, ROW = CUBLASLT_ORDER_ROW;
    const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
    const Case cases[] = {
        {"f32 NN", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F, N, N, COL, CUBLASLT_EPILOGUE_DEFAULT, 37, 29, 41, 1, false, 1e-5},
        {"f32 TN device scalars", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F, T, N, COL, CUBLASLT_EPILOGUE_DEFAULT, 33, 20, 17, 1, true, 1e-5},
        {"f64 NT batched", CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F, N, T, COL, CUBLASLT_EPILOGUE_DEFAULT, 16, 12, 9, 3, false, 1e-12},
        {"tf32 NN", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, N, N, COL, CUBLASLT_EPILOGUE_DEFAULT, 64, 32, 48, 1, false, 5e-3},
        {"f16 -> f16, f32 compute", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, T, N, COL, CUBLASLT_EPILOGUE_DEFAULT, 32, 24, 40, 1, false, 5e-3},
        {"bf16 row-major bias+relu", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, N, N, ROW, CUBLASLT_EPILOGUE_RELU_BIAS, 24, 16, 32, 1, false, 2e-2},
        {"f32 row-major batched gelu", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F, N, T, ROW, CUBLASLT_EPILOGUE_GELU_BIAS, 20, 18, 12, 2, false, 1e-5},
        {"f32 bias", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F, N, N, COL, CUBLASLT_EPILOGUE_BIAS, 19, 7, 5, 1, false, 1e-5},
        {"int8 -> int32", CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, CUDA_R_32I, T, N, COL, CUBLASLT_EPILOGUE_DEFAULT, 32, 16, 64, 1, false, 0},
    };
    for (const Case& c : cases) run(c);
    CB(cublasLtDestroy(lt));
    if (failures) { printf("FAIL (%d)\n", failures); return 1; }
    if (skipped) printf("%d of %d cases skipped\n", skipped, (int)(sizeof cases / sizeof cases[0]));
    printf("PASS\n");
    return 0;
}
