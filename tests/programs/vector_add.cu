// vector_add: c = a + b with a grid-stride loop, on a length that is not a
// multiple of the block size and a grid too small to cover it in one pass.
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
    float uniform() { return (next() >> 8) * (1.0f / 16777216.0f); }  // [0, 1)
};

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        c[i] = a[i] + b[i];
}

__global__ void vector_add_double(const double* a, const double* b, double* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

int main() {
    const int n = 1000003;  // prime: the last block and the last pass are partial
    Lcg rng{42};
    std::vector<float> a(n), b(n), c(n, 0.0f);
    for (int i = 0; i < n; ++i) {
        a[i] = rng.uniform() * 200.0f - 100.0f;
        b[i] = rng.uniform() * 2.0f - 1.0f;
    }
    float *da, *db, *dc;
    CHECK(cudaMalloc(&da, n * sizeof(float)));
    CHECK(cudaMalloc(&db, n * sizeof(float)));
    CHECK(cudaMalloc(&dc, n * sizeof(float)));
    CHECK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dc, 0xff, n * sizeof(float)));  // NaN everywhere: unwritten elements show

    const int block = 256, grid = 120;  // 30720 threads, about 33 passes each
    vector_add<<<grid, block>>>(da, db, dc, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost));

    // A second launch in double precision, one thread per element, odd block size.
    const int m = 70001;
    std::vector<double> x(m), y(m), z(m);
    for (int i = 0; i < m; ++i) {
        x[i] = rng.uniform() * 1e6 - 5e5 + rng.uniform() * 1e-3;
        y[i] = (double)rng.next() / 4294967296.0;
    }
    double *dx, *dy, *dz;
    CHECK(cudaMalloc(&dx, m * sizeof(double)));
    CHECK(cudaMalloc(&dy, m * sizeof(double)));
    CHECK(cudaMalloc(&dz, m * sizeof(double)));
    CHECK(cudaMemcpy(dx, x.data(), m * sizeof(double), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dy, y.data(), m * sizeof(double), cudaMemcpyHostToDevice));
    const int block2 = 96;
    vector_add_double<<<(m + block2 - 1) / block2, block2>>>(dx, dy, dz, m);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(z.data(), dz, m * sizeof(double), cudaMemcpyDeviceToHost));

    // IEEE addition is correctly rounded on both sides: results match bit for bit.
    for (int i = 0; i < n; ++i) {
        float want = a[i] + b[i];
        if (memcmp(&want, &c[i], sizeof(float)) != 0) {
            printf("FAIL: float c[%d] = %.9g, expected %.9g\n", i, c[i], want);
            return 1;
        }
    }
    for (int i = 0; i < m; ++i) {
        double want = x[i] + y[i];
        if (memcmp(&want, &z[i], sizeof(double)) != 0) {
            printf("FAIL: double z[%d] = %.17g, expected %.17g\n", i, z[i], want);
            return 1;
        }
    }
    printf("checked %d float and %d double sums\n", n, m);
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
    CHECK(cudaFree(dz));
    printf("PASS\n");
    return 0;
}
