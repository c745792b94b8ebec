// cuRAND host API as applications use it: XORWOW and Philox generators filling device
// buffers (uniform, normal with mean/stddev, log-normal, doubles, raw 32-bit), checked by
// their moments (bounds 6 standard errors wide); offsets continue a sequence (two
// halves equal one whole); an odd count for normals answers
// CURAND_STATUS_LENGTH_NOT_MULTIPLE. With an argument it prints the first values of
// each stream instead (the H200 recording tests/libs/record_curand.sh keeps).
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

int main(int argc, char** argv) {
    const curandRngType_t types[] = {CURAND_RNG_PSEUDO_XORWOW, CURAND_RNG_PSEUDO_PHILOX4_32_10};
    const char* names[] = {"XORWOW", "PHILOX4_32_10"};
    if (argc > 1) {  // recording mode: first 64 raw values and 16 of each distribution
        for (int t = 0; t < 2; t++)
            for (unsigned long long seed : {0ULL, 1234ULL, 0xDEADBEEFCAFEULL})
                for (unsigned long long offset : {0ULL, 100ULL}) {
                    curandGenerator_t g;
                    CR(curandCreateGenerator(&g, types[t]));
                    CR(curandSetPseudoRandomGeneratorSeed(g, seed));
                    CR(curandSetGeneratorOffset(g, offset));
                    unsigned* d; CK(cudaMalloc(&d, 8 * 4096));
                    unsigned h[64];
                    CR(curandGenerate(g, d, 64)); CK(cudaMemcpy(h, d, 256, cudaMemcpyDeviceToHost));
                    printf("%s seed %llu offset %llu raw", names[t], seed, offset);
                    for (int i = 0; i < 64; i++) printf(" %u", h[i]);
                    printf("\n");
                    float f[16];
                    CR(curandGenerateUniform(g, (float*)d, 16)); CK(cudaMemcpy(f, d, 64, cudaMemcpyDeviceToHost));
                    printf("%s seed %llu offset %llu uniform", names[t], seed, offset);
                    for (int i = 0; i < 16; i++) printf(" %.9g", f[i]);
                    printf("\n");
                    CR(curandGenerateNormal(g, (float*)d, 16, 0.0f, 1.0f)); CK(cudaMemcpy(f, d, 64, cudaMemcpyDeviceToHost));
                    printf("%s seed %llu offset %llu normal", names[t], seed, offset);
                    for (int i = 0; i < 16; i++) printf(" %.9g", f[i]);
                    printf("\n");
                    double dd[16];
                    CR(curandGenerateUniformDouble(g, (double*)d, 16)); CK(cudaMemcpy(dd, d, 128, cudaMemcpyDeviceToHost));
                    printf("%s seed %llu offset %llu uniform_double", names[t], seed, offset);
                    for (int i = 0; i < 16; i++) printf(" %.17g", dd[i]);
                    printf("\n");
                    cudaFree(d);
                    CR(curandDestroyGenerator(g));
                }
        return 0;
    }
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
        curandStatus_t st = curandGenerateNormal(g, d, 7, 0.0f, 1.0f);
        printf("%-34s odd normal count answers %d\n", names[t], (int)st);
        if (st != CURAND_STATUS_LENGTH_NOT_MULTIPLE) failures++;
        CR(curandDestroyGenerator(g));
    }
    if (failures) { printf("FAIL: %d checks\n", failures); return 1; }
    printf("PASS\n");
    return 0;
}
