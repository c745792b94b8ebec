// binomial_tree: European call options priced on a binomial tree, one option per block
// of 128 threads, in the shape of HeCBench's binomial and cuda-samples' binomialOptions:
// each thread holds 16 nodes of the tree in registers (set by max(payoff, 0)), and at each
// step the block trades its edge nodes through shared memory between two __syncthreads()
// and the threads whose part of the tree is still alive step their nodes (a condition
// that differs between the lanes of a warp). The leaves' payoffs come from the host, so
// every step is a multiply and an fma: the host runs the same steps with fmaf in the same
// order and the roots must match bit for bit; with 2048 steps (the whole tree) they are
// also the plain backward induction over the 2049 leaves. 333 steps (not a multiple of
// nvcc's unrolling) leave most threads' parts untouched; they run on the leaves mirrored
// too (the calls' first leaves are all worthless).
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
    unsigned state;
    unsigned next() { state = state * 1664525u + 1013904223u; return state; }
    float uniform(float lo, float hi) { return lo + (hi - lo) * ((next() >> 8) * (1.0f / 16777216.0f)); }
};

#define THREADS 128
#define ELEMS 16
#define LEAVES (THREADS * ELEMS + 1)  // 2049: a tree of 2048 steps

__global__ void tree(const float* leaves, const float* pu, const float* pd, float* roots, int steps) {
    __shared__ float edge[THREADS + 1];
    const int t = threadIdx.x;
    const float* x = leaves + blockIdx.x * LEAVES;
    const float up = pu[blockIdx.x], down = pd[blockIdx.x];
    float v[ELEMS + 1];
#pragma unroll
    for (int j = 0; j < ELEMS; j++) v[j] = fmaxf(x[t * ELEMS + j], 0.0f);
    if (t == 0) edge[THREADS] = fmaxf(x[THREADS * ELEMS], 0.0f);
    const int last = max(0, t * ELEMS - 1);
#pragma unroll 16
    for (int i = steps; i > 0; --i) {
        edge[t] = v[0];
        __syncthreads();
        v[ELEMS] = edge[t + 1];
        __syncthreads();
        if (i > last) {
#pragma unroll
            for (int j = 0; j < ELEMS; j++) v[j] = __fmaf_rn(up, v[j + 1], __fmul_rn(down, v[j]));
        }
    }
    if (t == 0) roots[blockIdx.x] = v[0];
}

// The kernel's steps on the host, thread by thread.
static float host_tree(const float* x, float up, float down, int steps) {
    static float v[THREADS][ELEMS + 1];
    float edge[THREADS + 1];
    for (int t = 0; t < THREADS; t++)
        for (int j = 0; j < ELEMS; j++) v[t][j] = fmaxf(x[t * ELEMS + j], 0.0f);
    edge[THREADS] = fmaxf(x[THREADS * ELEMS], 0.0f);
    for (int i = steps; i > 0; --i) {
        for (int t = 0; t < THREADS; t++) edge[t] = v[t][0];
        for (int t = 0; t < THREADS; t++) {
            v[t][ELEMS] = edge[t + 1];
            int last = t * ELEMS - 1 > 0 ? t * ELEMS - 1 : 0;
            if (i > last)
                for (int j = 0; j < ELEMS; j++) {
                    volatile float p = down * v[t][j];  // (rounded on its own, as __fmul_rn)
                    v[t][j] = fmaf(up, v[t][j + 1], p);
                }
        }
    }
    return v[0][0];
}

// Backward induction over all the leaves.
static float host_induction(const float* x, float up, float down) {
    std::vector<float> c(LEAVES);
    for (int k = 0; k < LEAVES; k++) c[k] = fmaxf(x[k], 0.0f);
    for (int n = LEAVES - 1; n > 0; n--)
        for (int k = 0; k < n; k++) {
            volatile float p = down * c[k];
            c[k] = fmaf(up, c[k + 1], p);
        }
    return c[0];
}

int main() {
    const int options = 24;
    Lcg rng{20261206u};
    std::vector<float> leaves((size_t)options * LEAVES), pu(options), pd(options);
    for (int o = 0; o < options; o++) {
        float S = rng.uniform(5.0f, 30.0f), X = rng.uniform(1.0f, 100.0f), T = rng.uniform(0.25f, 10.0f);
        double dt = T / 2048.0, vdt = 0.10 * sqrt(dt), rdt = 0.06 * dt;
        double u = exp(vdt), d = exp(-vdt), p = (exp(rdt) - d) / (u - d), df = exp(-rdt);
        pu[o] = (float)(p * df);
        pd[o] = (float)((1.0 - p) * df);
        for (int k = 0; k < LEAVES; k++)
            leaves[(size_t)o * LEAVES + k] = S * expf((float)(vdt * (2.0 * k - 2048.0))) - X;
    }
    float *d_leaves, *d_pu, *d_pd, *d_roots;
    CHECK(cudaMalloc(&d_leaves, leaves.size() * sizeof(float)));
    CHECK(cudaMalloc(&d_pu, options * sizeof(float)));
    CHECK(cudaMalloc(&d_pd, options * sizeof(float)));
    CHECK(cudaMalloc(&d_roots, options * sizeof(float)));
    CHECK(cudaMemcpy(d_pu, pu.data(), options * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_pd, pd.data(), options * sizeof(float), cudaMemcpyHostToDevice));
    std::vector<float> mirrored(leaves.size());
    for (int o = 0; o < options; o++)
        for (int k = 0; k < LEAVES; k++)
            mirrored[(size_t)o * LEAVES + k] = leaves[(size_t)o * LEAVES + LEAVES - 1 - k];
    int bad = 0;
    for (int run = 0; run < 4; run++) {
        const int steps = run < 2 ? 2048 : 333;
        const std::vector<float>& set = run % 2 ? mirrored : leaves;
        CHECK(cudaMemcpy(d_leaves, set.data(), set.size() * sizeof(float), cudaMemcpyHostToDevice));
        std::vector<float> roots(options);
        tree<<<options, THREADS>>>(d_leaves, d_pu, d_pd, d_roots, steps);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(roots.data(), d_roots, options * sizeof(float), cudaMemcpyDeviceToHost));
        double sum = 0;
        for (int o = 0; o < options; o++) {
            const float* x = &set[(size_t)o * LEAVES];
            float want = host_tree(x, pu[o], pd[o], steps);
            float plain = steps == 2048 ? host_induction(x, pu[o], pd[o]) : want;
            if (memcmp(&want, &plain, 4) != 0) {
                printf("FAIL: the host's tree and induction differ for option %d\n", o);
                return 1;
            }
            if (memcmp(&roots[o], &want, 4) != 0 && bad++ < 5)
                printf("steps %d option %d: %.9g, expected %.9g\n", steps, o, roots[o], want);
            sum += roots[o];
        }
        printf("%d steps, %s leaves: %d options, sum of roots %.6f\n", steps, run % 2 ? "mirrored" : "call",
               options, sum);
    }
    CHECK(cudaFree(d_leaves));
    CHECK(cudaFree(d_pu));
    CHECK(cudaFree(d_pd));
    CHECK(cudaFree(d_roots));
    if (bad) {
        printf("FAIL: %d roots differ\n", bad);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
