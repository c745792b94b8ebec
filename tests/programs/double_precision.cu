// double_precision: f64 arithmetic and math library. Correctly rounded
// operations (sqrt, division, fma, conversions, error-free transformations)
// must match the host bit for bit; exp/log/sin/cos/pow within 1e-12 relative.
#include <cmath>
#include <cstdio>
#include <cstdlib>
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

struct Lcg {
    unsigned long long state;
    unsigned long long next() { state = state * 6364136223846793005ull + 1442695040888963407ull; return state; }
    double uniform() { return (next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1), 53 bits
};

enum { SQRT, DIV, FMA, TWOSUM_S, TWOSUM_E, TWOPROD_E, TO_FLOAT, TO_LL, FROM_LL,  // exact
       EXP, LOG, SIN, COS, POW, NOUT };
static const char* names[NOUT] = {"sqrt", "div", "fma", "twosum.s", "twosum.e", "twoprod.e",
                                  "(float)", "llrint", "(double)ll", "exp", "log", "sin", "cos", "pow"};
static const int first_approx = EXP;

__host__ __device__ void compute(const double* in, double* r) {
    double a = in[0], b = in[1], c = in[2], x = in[3];
    r[SQRT] = sqrt(fabs(a));
    r[DIV] = a / b;
    r[FMA] = fma(a, b, c);
    double s = a + c, bb = s - a;  // Knuth's TwoSum: s + e == a + c exactly
    r[TWOSUM_S] = s;
    r[TWOSUM_E] = (a - (s - bb)) + (c - bb);
    double p = a * b;
    r[TWOPROD_E] = fma(a, b, -p);  // the rounding error of a * b
    r[TO_FLOAT] = (double)(float)a;
    long long ll = llrint(a * 1e6);
    r[TO_LL] = (double)(ll & 0xffffffll);
    r[FROM_LL] = (double)(ll * 1000003ll);  // beyond 2^53: rounds
    r[EXP] = exp(x);
    r[LOG] = log(fabs(a) + 1e-3);
    r[SIN] = sin(x);
    r[COS] = cos(x);
    r[POW] = pow(fabs(b) + 0.5, x * 0.25);
}

__global__ void math_f64(const double* in, double* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double r[NOUT];
    compute(in + 4 * i, r);
    for (int k = 0; k < NOUT; ++k) out[(size_t)k * n + i] = r[k];
}

int main() {
    const int n = 100003, block = 192;
    Lcg rng{2718281828ull};
    std::vector<double> in(4 * n), out((size_t)NOUT * n);
    for (int i = 0; i < n; ++i) {
        double* v = &in[4 * i];
        double scale = ldexp(1.0, (int)(rng.next() % 41) - 20);  // 2^-20 .. 2^20
        v[0] = (rng.uniform() * 2.0 - 1.0) * scale;
        v[1] = (rng.uniform() * 2.0 - 1.0) * 1000.0 + 1e-9;
        v[2] = (rng.uniform() * 2.0 - 1.0) * scale * 0.001;
        v[3] = rng.uniform() * 40.0 - 20.0;
    }
    double *din, *dout;
    CHECK(cudaMalloc(&din, in.size() * sizeof(double)));
    CHECK(cudaMalloc(&dout, out.size() * sizeof(double)));
    CHECK(cudaMemcpy(din, in.data(), in.size() * sizeof(double), cudaMemcpyHostToDevice));
    math_f64<<<(n + block - 1) / block, block>>>(din, dout, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(out.data(), dout, out.size() * sizeof(double), cudaMemcpyDeviceToHost));

    double worst[NOUT] = {0};
    for (int i = 0; i < n; ++i) {
        double want[NOUT];
        compute(&in[4 * i], want);  // the host's libm and IEEE arithmetic
        for (int k = 0; k < NOUT; ++k) {
            double got = out[(size_t)k * n + i];
            bool ok;
            if (k < first_approx) {
                ok = memcmp(&got, &want[k], sizeof(double)) == 0;
            } else {
                double rel = fabs(got - want[k]) / fmax(fabs(want[k]), 1e-300);
                ok = rel <= 1e-12;
                worst[k] = fmax(worst[k], rel);
            }
            if (!ok) {
                printf("FAIL: %s for inputs (%.17g, %.17g, %.17g, %.17g) = %.17g, expected %.17g\n",
                       names[k], in[4 * i], in[4 * i + 1], in[4 * i + 2], in[4 * i + 3], got, want[k]);
                return 1;
            }
        }
    }
    for (int k = first_approx; k < NOUT; ++k) printf("%s: worst relative error %.3g\n", names[k], worst[k]);
    CHECK(cudaFree(din));
    CHECK(cudaFree(dout));
    printf("PASS\n");
    return 0;
}
