// reduction: grid-stride accumulation, warp reduce with __shfl_down_sync,
// per-warp partials in shared memory, one atomicAdd per block; float and int.
#include <cmath>
#include <cstdio>
#include <cstdlib>
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
    float uniform() { return (next() >> 8) * (1.0f / 16777216.0f); }  // [0, 1)
};

template <typename T>
__device__ __forceinline__ T warp_reduce_sum(T v) {
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// blockDim.x must be a multiple of 32 (full-warp shuffles).
template <typename T>
__global__ void reduce_sum(const T* in, int n, T* total, T* block_partials) {
    __shared__ T warp_sums[32];
    T sum = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        sum += in[i];
    sum = warp_reduce_sum(sum);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = sum;
    __syncthreads();
    if (warp == 0) {
        int nwarps = blockDim.x / 32;
        sum = lane < nwarps ? warp_sums[lane] : T(0);
        sum = warp_reduce_sum(sum);
        if (lane == 0) {
            block_partials[blockIdx.x] = sum;
            atomicAdd(total, sum);
        }
    }
}

int main() {
    Lcg rng{7};
    // float: values in [0, 1), 128 blocks of 256 threads.
    const int nf = 1000001, gf = 128, bf = 256;
    std::vector<float> xf(nf);
    for (auto& v : xf) v = rng.uniform();
    // int: values in [-1000, 1000], 97 blocks of 160 threads (5 warps).
    const int ni = 777777, gi = 97, bi = 160;
    std::vector<int> xi(ni);
    for (auto& v : xi) v = (int)(rng.next() % 2001u) - 1000;

    float *dxf, *dtf, *dpf;
    int *dxi, *dti, *dpi;
    CHECK(cudaMalloc(&dxf, nf * sizeof(float)));
    CHECK(cudaMalloc(&dtf, sizeof(float)));
    CHECK(cudaMalloc(&dpf, gf * sizeof(float)));
    CHECK(cudaMalloc(&dxi, ni * sizeof(int)));
    CHECK(cudaMalloc(&dti, sizeof(int)));
    CHECK(cudaMalloc(&dpi, gi * sizeof(int)));
    CHECK(cudaMemcpy(dxf, xf.data(), nf * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dxi, xi.data(), ni * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dtf, 0, sizeof(float)));
    CHECK(cudaMemset(dti, 0, sizeof(int)));

    reduce_sum<float><<<gf, bf>>>(dxf, nf, dtf, dpf);
    CHECK(cudaGetLastError());
    reduce_sum<int><<<gi, bi>>>(dxi, ni, dti, dpi);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    float tf;
    int ti;
    std::vector<int> pi(gi);
    CHECK(cudaMemcpy(&tf, dtf, sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&ti, dti, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(pi.data(), dpi, gi * sizeof(int), cudaMemcpyDeviceToHost));

    double ref_f = 0.0;
    for (float v : xf) ref_f += v;
    // Each element passes through at most 31 + 5 + 3 + 128 rounded additions
    // (thread loop, warp, block, atomics) of non-negative values: the error is
    // at most 167 * 2^-24 = 9.95e-6 of the sum, in any order.
    double rel = fabs(tf - ref_f) / ref_f;
    printf("float sum %.8g, reference %.8g, relative error %.3g\n", tf, ref_f, rel);
    if (!(rel <= 1e-5)) {
        printf("FAIL: float sum %.9g, expected %.9g (relative error %.3g)\n", tf, ref_f, rel);
        return 1;
    }

    long long ref_i = 0;
    std::vector<int> ref_p(gi, 0);
    for (int i = 0; i < ni; ++i) {
        ref_i += xi[i];
        ref_p[(i / bi) % gi] += xi[i];  // element i belongs to block (i / bi) mod grid
    }
    for (int b = 0; b < gi; ++b) {
        if (pi[b] != ref_p[b]) {
            printf("FAIL: int partial of block %d = %d, expected %d\n", b, pi[b], ref_p[b]);
            return 1;
        }
    }
    printf("int sum %d, reference %lld\n", ti, ref_i);
    if (ti != ref_i) {
        printf("FAIL: int sum %d, expected %lld\n", ti, ref_i);
        return 1;
    }
    CHECK(cudaFree(dxf));
    CHECK(cudaFree(dtf));
    CHECK(cudaFree(dpf));
    CHECK(cudaFree(dxi));
    CHECK(cudaFree(dti));
    CHECK(cudaFree(dpi));
    printf("PASS\n");
    return 0;
}
