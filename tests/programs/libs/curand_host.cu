// cuRAND host API as applications use it: XORWOW and Philox generators filling device
// buffers (uniform, normal with mean/stddev, log-normal, doubles, raw 32-bit), checked by
// their moments (bounds 6 standard errors wide); offsets continue a sequence (two
// halves equal one whole); an odd count for normals answers what NVIDIA's library does,
// which depends on the generator (the H200): CURAND_STATUS_LENGTH_NOT_MULTIPLE for
// XORWOW, which makes normals in pairs; success for Philox, whose 7 normals are the first
// 7 of 8 from the same start. (tests/libs/curand_record.cu records the exact streams.)
#include <curand.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA error %s at line %d\n", cudaGetErrorString(e), __LINE__); exit(2); } } while (0)
#define CR(x) do { curandStatus_t s_ = (x); if (s_ != CURAND_STATUS_SUCCESS) { printf("cuRAND status %d at line %d\n", (int)s_, __LINE__); exit(2); } } while (0)

static int failures = 0;

static void moments(const char* what, const std::vector<double>& v, double mean, double var) {
    double m = 0, s = 0;
    for (double x : v) m += x;
    m /= v.size();
    for (double x : v) s += (x - m) * (x - m);
    s /= v.size() - 1;
    double se = sqrt(var / v.size());
    printf("%-34s mean %.5f (want %.5f)  variance %.5f (want %.5f)\n", what, m, mean, s, var);
    if (fabs(m - mean) > 6 * se || fabs(s - var) > 0.02 * var + 6 * sqrt(2.0 / v.size()) * var) failures++;
}

int main() {
    const curandRngType_t types[] = {CURAND_RNG_PSEUDO_XORWOW, CURAND_RNG_PSEUDO_PHILOX4_32_10};
    const char* names[] = {"XORWOW", "PHILOX4_32_10"};
    const size_t n = 1 << 20;
    float* d; double* dd; unsigned* du;
    CK(cudaMalloc(&d, n * 4)); CK(cudaMalloc(&dd, n * 8)); CK(cudaMalloc(&du, n * 4));
    std::vector<float> h(n); std::vector<double> hd(n), v(n); std::vector<unsigned> hu(n);
    for (int t = 0; t < 2; t++) {
        curandGenerator_t g;
        CR(curandCreateGenerator(&g, types[t]));
        CR(curandSetPseudoRandomGeneratorSeed(g, 42));
        char what[64];
        CR(curandGenerateUniform(g, d, n)); CK(cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++) { v[i] = h[i]; if (!(h[i] > 0.0f && h[i] <= 1.0f)) { failures++; break; } }
        snprintf(what, sizeof what, "%s uniform", names[t]); moments(what, v, 0.5, 1.0 / 12);
        CR(curandGenerateNormal(g, d, n, 2.0f, 3.0f)); CK(cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++) v[i] = h[i];
        snprintf(what, sizeof what, "%s normal(2, 3)", names[t]); moments(what, v, 2.0, 9.0);
        CR(curandGenerateLogNormal(g, d, n, 0.0f, 0.5f)); CK(cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++) v[i] = h[i];
        snprintf(what, sizeof what, "%s log-normal(0, 0.5)", names[t]);
        moments(what, v, exp(0.125), (exp(0.25) - 1) * exp(0.25));
        CR(curandGenerateUniformDouble(g, dd, n)); CK(cudaMemcpy(hd.data(), dd, n * 8, cudaMemcpyDeviceToHost));
        snprintf(what, sizeof what, "%s uniform double", names[t]); moments(what, hd, 0.5, 1.0 / 12);
        CR(curandGenerateNormalDouble(g, dd, n, -1.0, 0.5)); CK(cudaMemcpy(hd.data(), dd, n * 8, cudaMemcpyDeviceToHost));
        snprintf(what, sizeof what, "%s normal double(-1, 0.5)", names[t]); moments(what, hd, -1.0, 0.25);
        // raw bits: every bit set about half the time
        CR(curandGenerate(g, du, n)); CK(cudaMemcpy(hu.data(), du, n * 4, cudaMemcpyDeviceToHost));
        int worst_bit = 0; double worst = 0;
        for (int b = 0; b < 32; b++) {
            size_t c = 0; for (size_t i = 0; i < n; i++) c += (hu[i] >> b) & 1;
            double e = fabs((double)c / n - 0.5); if (e > worst) { worst = e; worst_bit = b; }
        }
        printf("%-34s worst bit %d off by %.5f\n", names[t], worst_bit, worst);
        if (worst > 6 * 0.5 / sqrt((double)n)) failures++;
        // offsets: [0, 2m) equals [0, m) followed by offset m's [0, m)
        const size_t m = 5000;
        std::vector<unsigned> whole(2 * m), part(2 * m);
        CR(curandSetPseudoRandomGeneratorSeed(g, 7)); CR(curandSetGeneratorOffset(g, 0));
        CR(curandGenerate(g, du, 2 * m)); CK(cudaMemcpy(whole.data(), du, 8 * m, cudaMemcpyDeviceToHost));
        CR(curandSetGeneratorOffset(g, m));
        CR(curandGenerate(g, du, m)); CK(cudaMemcpy(part.data(), du, 4 * m, cudaMemcpyDeviceToHost));
        if (memcmp(part.data(), whole.data() + m, 4 * m) != 0) { printf("%s: offset %zu does not continue the sequence\n", names[t], m); failures++; }
        CR(curandSetPseudoRandomGeneratorSeed(g, 7)); CR(curandSetGeneratorOffset(g, 0));
        curandStatus_t st = curandGenerateNormal(g, d, 7, 0.0f, 1.0f);
        curandStatus_t want = types[t] == CURAND_RNG_PSEUDO_PHILOX4_32_10 ? CURAND_STATUS_SUCCESS : CURAND_STATUS_LENGTH_NOT_MULTIPLE;
        printf("%-34s odd normal count answers %d (want %d)\n", names[t], (int)st, (int)want);
        if (st != want) failures++;
        if (st == CURAND_STATUS_SUCCESS) {
            float seven[7], eight[8];
            CK(cudaMemcpy(seven, d, sizeof seven, cudaMemcpyDeviceToHost));
            CR(curandSetPseudoRandomGeneratorSeed(g, 7)); CR(curandSetGeneratorOffset(g, 0));
            CR(curandGenerateNormal(g, d, 8, 0.0f, 1.0f));
            CK(cudaMemcpy(eight, d, sizeof eight, cudaMemcpyDeviceToHost));
            if (memcmp(seven, eight, sizeof seven) != 0) { printf("%s: 7 normals are not the first 7 of 8\n", names[t]); failures++; }
        }
        CR(curandDestroyGenerator(g));
    }
    if (failures) { printf("FAIL: %d checks\n", failures); return 1; }
    printf("PASS\n");
    return 0;
}
