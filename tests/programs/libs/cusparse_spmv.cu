// cuSPARSE's generic API as applications use it: a CSR matrix (a 2D Laplacian with
// a few extra entries), y = alpha*A*x + beta*y with cusparseSpMV, C = alpha*A*B + beta*C
// with cusparseSpMM (column-major B and C), and A^T x; checked against a host CSR product.
#include <cusparse.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA error %s at line %d\n", cudaGetErrorString(e), __LINE__); exit(2); } } while (0)
#define CS(x) do { cusparseStatus_t s_ = (x); if (s_ != CUSPARSE_STATUS_SUCCESS) { printf("cuSPARSE status %d at line %d\n", (int)s_, __LINE__); exit(2); } } while (0)

int main() {
    const int g = 30, n = g * g, k = 5;
    std::vector<int> rowptr(n + 1, 0), col; std::vector<float> val;
    for (int i = 0; i < g; i++)
        for (int j = 0; j < g; j++) {
            int r = i * g + j;
            if (i > 0) { col.push_back(r - g); val.push_back(-1); }
            if (j > 0) { col.push_back(r - 1); val.push_back(-1); }
            col.push_back(r); val.push_back(4.0f + (r % 7) * 0.1f);
            if (j < g - 1) { col.push_back(r + 1); val.push_back(-1.5f); }
            if (i < g - 1) { col.push_back(r + g); val.push_back(-1); }
            rowptr[r + 1] = col.size();
        }
    int nnz = col.size();
    std::vector<float> x(n), y(n), B(n * k), C(n * k);
    for (int i = 0; i < n; i++) { x[i] = sinf(i * 0.37f); y[i] = cosf(i * 0.11f); }
    for (int i = 0; i < n * k; i++) { B[i] = ((i * 37) % 101) / 50.0f - 1; C[i] = ((i * 13) % 17) / 8.0f; }
    int *drow, *dcol; float *dval, *dx, *dy, *dB, *dC, *dt;
    CK(cudaMalloc(&drow, (n + 1) * 4)); CK(cudaMalloc(&dcol, nnz * 4)); CK(cudaMalloc(&dval, nnz * 4));
    CK(cudaMalloc(&dx, n * 4)); CK(cudaMalloc(&dy, n * 4)); CK(cudaMalloc(&dt, n * 4));
    CK(cudaMalloc(&dB, n * k * 4)); CK(cudaMalloc(&dC, n * k * 4));
    CK(cudaMemcpy(drow, rowptr.data(), (n + 1) * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dcol, col.data(), nnz * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dval, val.data(), nnz * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dx, x.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dy, y.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dB, B.data(), n * k * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dC, C.data(), n * k * 4, cudaMemcpyHostToDevice));
    cusparseHandle_t h; CS(cusparseCreate(&h));
    cusparseSpMatDescr_t A; cusparseDnVecDescr_t vx, vy, vt; cusparseDnMatDescr_t mB, mC;
    CS(cusparseCreateCsr(&A, n, n, nnz, drow, dcol, dval, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    CS(cusparseCreateDnVec(&vx, n, dx, CUDA_R_32F)); CS(cusparseCreateDnVec(&vy, n, dy, CUDA_R_32F)); CS(cusparseCreateDnVec(&vt, n, dt, CUDA_R_32F));
    CS(cusparseCreateDnMat(&mB, n, k, n, dB, CUDA_R_32F, CUSPARSE_ORDER_COL)); CS(cusparseCreateDnMat(&mC, n, k, n, dC, CUDA_R_32F, CUSPARSE_ORDER_COL));
    float alpha = 2.0f, beta = 0.5f, zero = 0.0f, one = 1.0f;
    size_t sz = 0; void* buf = NULL;
    CS(cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, vx, &beta, vy, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, &sz));
    if (sz) CK(cudaMalloc(&buf, sz));
    CS(cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, vx, &beta, vy, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, buf));
    CS(cusparseSpMV(h, CUSPARSE_OPERATION_TRANSPOSE, &one, A, vx, &zero, vt, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, buf));
    CS(cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, mB, &beta, mC, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, &sz));
    CS(cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, mB, &beta, mC, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, buf));
    std::vector<float> gy(n), gt(n), gC(n * k);
    CK(cudaMemcpy(gy.data(), dy, n * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(gt.data(), dt, n * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(gC.data(), dC, n * k * 4, cudaMemcpyDeviceToHost));
    double ey = 0, et = 0, ec = 0;
    std::vector<double> tr(n, 0.0);
    for (int r = 0; r < n; r++) {
        double s = 0;
        for (int p = rowptr[r]; p < rowptr[r + 1]; p++) { s += (double)val[p] * x[col[p]]; tr[col[p]] += (double)val[p] * x[r]; }
        ey = fmax(ey, fabs(gy[r] - (alpha * s + beta * y[r])));
        for (int c = 0; c < k; c++) {
            double sc = 0;
            for (int p = rowptr[r]; p < rowptr[r + 1]; p++) sc += (double)val[p] * B[c * n + col[p]];
            ec = fmax(ec, fabs(gC[c * n + r] - (alpha * sc + beta * C[c * n + r])));
        }
    }
    for (int r = 0; r < n; r++) et = fmax(et, fabs(gt[r] - tr[r]));
    printf("CSR SpMV: worst error %.3g, A^T x: %.3g, SpMM (%d columns): %.3g (bound 1e-4)\n", ey, et, k, ec);
    CS(cusparseDestroySpMat(A)); CS(cusparseDestroyDnVec(vx)); CS(cusparseDestroyDnVec(vy)); CS(cusparseDestroyDnVec(vt));
    CS(cusparseDestroyDnMat(mB)); CS(cusparseDestroyDnMat(mC)); CS(cusparseDestroy(h));
    if (!(ey < 1e-4 && et < 1e-4 && ec < 1e-4)) { printf("FAIL\n"); return 1; }
    printf("PASS\n");
    return 0;
}
