// matmul_tiled: C = A * B with 16x16 shared-memory tiles and __syncthreads in
// the k loop; M, K and N are not multiples of the tile (bounds-checked loads).
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

#define TILE 16

// A is M x K, B is K x N, C is M x N, all row-major.
__global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int K, int N) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        int ak = t + threadIdx.x, bk = t + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ak < K) ? A[row * K + ak] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (bk < K && col < N) ? B[bk * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

int main() {
    const int M = 300, K = 203, N = 250;
    Lcg rng{2024};
    std::vector<float> A(M * K), B(K * N), C(M * N);
    for (auto& v : A) v = rng.uniform() * 2.0f - 1.0f;
    for (auto& v : B) v = rng.uniform() * 2.0f - 1.0f;

    float *dA, *dB, *dC;
    CHECK(cudaMalloc(&dA, A.size() * sizeof(float)));
    CHECK(cudaMalloc(&dB, B.size() * sizeof(float)));
    CHECK(cudaMalloc(&dC, C.size() * sizeof(float)));
    CHECK(cudaMemcpy(dA, A.data(), A.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dB, B.data(), B.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dC, 0xff, C.size() * sizeof(float)));

    dim3 block(TILE, TILE);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    matmul_tiled<<<grid, block>>>(dA, dB, dC, M, K, N);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(C.data(), dC, C.size() * sizeof(float), cudaMemcpyDeviceToHost));

    // Reference in double. A float dot product of K terms is off by at most
    // about K * 2^-24 * sum |a*b| (any order, with or without fma): 203 terms
    // give 1.2e-5, so 2e-5 is a bound a correct answer always meets.
    double worst = 0.0;
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
            double ref = 0.0, mag = 0.0;
            for (int k = 0; k < K; ++k) {
                double p = (double)A[i * K + k] * (double)B[k * N + j];
                ref += p;
                mag += fabs(p);
            }
            double got = C[i * N + j];
            double err = fabs(got - ref);
            double tol = 2e-5 * mag + 1e-6;
            if (!(err <= tol)) {
                printf("FAIL: C[%d][%d] = %.9g, expected %.9g (tolerance %.3g)\n", i, j, got, ref, tol);
                return 1;
            }
            if (err / (mag + 1e-30) > worst) worst = err / (mag + 1e-30);
        }
    }
    printf("%dx%dx%d matmul, worst error / sum|a*b| = %.3g\n", M, K, N, worst);
    CHECK(cudaFree(dA));
    CHECK(cudaFree(dB));
    CHECK(cudaFree(dC));
    printf("PASS\n");
    return 0;
}
