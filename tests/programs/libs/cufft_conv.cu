// cuFFT as applications use it: a circular convolution of two complex signals by
// forward FFTs, a pointwise product kernel and an inverse FFT (batched 1D plan, in
// place), checked against a direct O(n^2) convolution; a 3D R2C/C2R round trip
// (out of place) that must give back N*x; a 2D Z2Z forward transform against a
// direct DFT at sample frequencies; plan misuse answers what NVIDIA's cuFFT answers.
#include <cufft.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA error %s at line %d\n", cudaGetErrorString(e), __LINE__); exit(2); } } while (0)
#define CF(x) do { cufftResult r_ = (x); if (r_ != CUFFT_SUCCESS) { printf("cuFFT error %d at line %d\n", (int)r_, __LINE__); exit(2); } } while (0)

static unsigned lcg = 777u;
static float rnd() { lcg = lcg * 1664525u + 1013904223u; return ((lcg >> 8) & 0xFFFF) / 32768.0f - 1.0f; }

__global__ void pointwise(cufftComplex* a, const cufftComplex* b, int n, float scale) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        cufftComplex x = a[i], y = b[i];
        a[i].x = (x.x * y.x - x.y * y.y) * scale;
        a[i].y = (x.x * y.y + x.y * y.x) * scale;
    }
}

int main() {
    int failures = 0;
    const int n = 1000, batch = 3;
    std::vector<cufftComplex> a(n * batch), b(n * batch);
    for (auto& v : a) { v.x = rnd(); v.y = rnd(); }
    for (auto& v : b) { v.x = rnd(); v.y = rnd(); }
    cufftComplex *da, *db;
    CK(cudaMalloc(&da, n * batch * sizeof(cufftComplex))); CK(cudaMalloc(&db, n * batch * sizeof(cufftComplex)));
    CK(cudaMemcpy(da, a.data(), n * batch * sizeof(cufftComplex), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b.data(), n * batch * sizeof(cufftComplex), cudaMemcpyHostToDevice));
    cufftHandle plan;
    CF(cufftPlan1d(&plan, n, CUFFT_C2C, batch));
    cudaStream_t s; CK(cudaStreamCreate(&s)); CF(cufftSetStream(plan, s));
    CF(cufftExecC2C(plan, da, da, CUFFT_FORWARD));
    CF(cufftExecC2C(plan, db, db, CUFFT_FORWARD));
    pointwise<<<(n * batch + 255) / 256, 256, 0, s>>>(da, db, n * batch, 1.0f / n);
    CF(cufftExecC2C(plan, da, da, CUFFT_INVERSE));
    std::vector<cufftComplex> got(n * batch);
    CK(cudaMemcpyAsync(got.data(), da, n * batch * sizeof(cufftComplex), cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    double worst = 0;
    for (int k = 0; k < batch; k++)
        for (int i = 0; i < n; i++) {
            double re = 0, im = 0;
            for (int j = 0; j < n; j++) {
                cufftComplex x = a[k * n + j], y = b[k * n + (i - j + n) % n];
                re += (double)x.x * y.x - (double)x.y * y.y; im += (double)x.x * y.y + (double)x.y * y.x;
            }
            worst = fmax(worst, fmax(fabs(got[k * n + i].x - re), fabs(got[k * n + i].y - im)));
        }
    printf("convolution by FFT: worst error %.3g (bound 1e-3)\n", worst);
    if (!(worst < 1e-3)) failures++;
    CF(cufftDestroy(plan));

    // 3D R2C then C2R, out of place: x -> N x
    const int nx = 12, ny = 10, nz = 18, N = nx * ny * nz, nc = nx * ny * (nz / 2 + 1);
    std::vector<float> x(N);
    for (auto& v : x) v = rnd();
    float *dx, *dy; cufftComplex* dc;
    CK(cudaMalloc(&dx, N * 4)); CK(cudaMalloc(&dy, N * 4)); CK(cudaMalloc(&dc, nc * sizeof(cufftComplex)));
    CK(cudaMemcpy(dx, x.data(), N * 4, cudaMemcpyHostToDevice));
    cufftHandle f3, b3;
    CF(cufftPlan3d(&f3, nx, ny, nz, CUFFT_R2C)); CF(cufftPlan3d(&b3, nx, ny, nz, CUFFT_C2R));
    CF(cufftExecR2C(f3, dx, dc));
    // read the R2C output now: an out-of-place C2R may overwrite its input (cuFFT's
    // documentation; the H200's does)
    std::vector<float> y(N); std::vector<cufftComplex> c(nc);
    CK(cudaMemcpy(c.data(), dc, nc * sizeof(cufftComplex), cudaMemcpyDeviceToHost));
    CF(cufftExecC2R(b3, dc, dy));
    CK(cudaMemcpy(y.data(), dy, N * 4, cudaMemcpyDeviceToHost));
    worst = 0;
    for (int i = 0; i < N; i++) worst = fmax(worst, fabs(y[i] / N - x[i]));
    printf("3D R2C/C2R round trip: worst error %.3g (bound 1e-5)\n", worst);
    if (!(worst < 1e-5)) failures++;
    // the DC term of the R2C output is the sum
    double sum = 0; for (int i = 0; i < N; i++) sum += x[i];
    printf("3D R2C DC term %.6f, sum %.6f\n", c[0].x, sum);
    if (!(fabs(c[0].x - sum) < 1e-3 && fabs(c[0].y) < 1e-3)) failures++;

    // 2D Z2Z forward against a direct DFT at a few frequencies
    const int r = 9, q = 14;
    std::vector<cufftDoubleComplex> z(r * q), Z(r * q);
    for (auto& v : z) { v.x = rnd(); v.y = rnd(); }
    cufftDoubleComplex* dz; CK(cudaMalloc(&dz, r * q * sizeof(cufftDoubleComplex)));
    CK(cudaMemcpy(dz, z.data(), r * q * sizeof(cufftDoubleComplex), cudaMemcpyHostToDevice));
    cufftHandle p2; CF(cufftPlan2d(&p2, r, q, CUFFT_Z2Z));
    CF(cufftExecZ2Z(p2, dz, dz, CUFFT_FORWARD));
    CK(cudaMemcpy(Z.data(), dz, r * q * sizeof(cufftDoubleComplex), cudaMemcpyDeviceToHost));
    worst = 0;
    for (int k1 = 0; k1 < r; k1 += 4)
        for (int k2 = 0; k2 < q; k2 += 3) {
            double re = 0, im = 0;
            for (int j1 = 0; j1 < r; j1++)
                for (int j2 = 0; j2 < q; j2++) {
                    double ang = -2 * M_PI * ((double)k1 * j1 / r + (double)k2 * j2 / q);
                    re += z[j1 * q + j2].x * cos(ang) - z[j1 * q + j2].y * sin(ang);
                    im += z[j1 * q + j2].x * sin(ang) + z[j1 * q + j2].y * cos(ang);
                }
            worst = fmax(worst, fmax(fabs(Z[k1 * q + k2].x - re), fabs(Z[k1 * q + k2].y - im)));
        }
    printf("2D Z2Z against a direct DFT: worst error %.3g (bound 1e-10)\n", worst);
    if (!(worst < 1e-10)) failures++;

    // misuse: an Exec function of another type than the plan's. NVIDIA's cuFFT does not
    // check it (the H200 answers CUFFT_SUCCESS to R2C on a Z2Z plan): the plan decides,
    // so dz, holding Z, must then hold the forward 2D transform of Z.
    cufftResult rr = cufftExecR2C(p2, (cufftReal*)dz, (cufftComplex*)dz);
    printf("R2C on a Z2Z plan answers %d (want %d)\n", (int)rr, (int)CUFFT_SUCCESS);
    if (rr != CUFFT_SUCCESS) failures++;
    else {
        std::vector<cufftDoubleComplex> W(r * q);
        CK(cudaMemcpy(W.data(), dz, r * q * sizeof(cufftDoubleComplex), cudaMemcpyDeviceToHost));
        worst = 0;
        for (int k1 = 0; k1 < r; k1 += 2)
            for (int k2 = 0; k2 < q; k2 += 5) {
                double re = 0, im = 0;
                for (int j1 = 0; j1 < r; j1++)
                    for (int j2 = 0; j2 < q; j2++) {
                        double ang = -2 * M_PI * ((double)k1 * j1 / r + (double)k2 * j2 / q);
                        re += Z[j1 * q + j2].x * cos(ang) - Z[j1 * q + j2].y * sin(ang);
                        im += Z[j1 * q + j2].x * sin(ang) + Z[j1 * q + j2].y * cos(ang);
                    }
                worst = fmax(worst, fmax(fabs(W[k1 * q + k2].x - re), fabs(W[k1 * q + k2].y - im)));
            }
        printf("  and ran the plan's forward Z2Z in place: worst error %.3g (bound 1e-9)\n", worst);
        if (!(worst < 1e-9)) failures++;
    }
    CF(cufftDestroy(p2));
    rr = cufftExecZ2Z(p2, dz, dz, CUFFT_FORWARD);
    printf("a destroyed plan answers %d (want %d)\n", (int)rr, (int)CUFFT_INVALID_PLAN);
    if (rr != CUFFT_INVALID_PLAN) failures++;
    if (failures) { printf("FAIL: %d checks\n", failures); return 1; }
    printf("PASS\n");
    return 0;
}
