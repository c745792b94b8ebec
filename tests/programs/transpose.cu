// transpose: rectangular matrix transpose through a padded 32x33 shared tile
// (32x8 threads, 4 rows each), then transposed back; exact comparison.
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

#define TILE_DIM 32
#define BLOCK_ROWS 8

// in is rows x cols, out is cols x rows (row-major).
__global__ void transpose(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];  // +1: no bank conflicts on the column read
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < cols && y + j < rows)
            tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < rows && y + j < cols)
            out[(size_t)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

static void launch_transpose(const float* in, float* out, int rows, int cols) {
    dim3 block(TILE_DIM, BLOCK_ROWS);
    dim3 grid((cols + TILE_DIM - 1) / TILE_DIM, (rows + TILE_DIM - 1) / TILE_DIM);
    transpose<<<grid, block>>>(in, out, rows, cols);
    CHECK(cudaGetLastError());
}

int main() {
    const int rows = 333, cols = 517;
    const size_t count = (size_t)rows * cols;
    Lcg rng{31337};
    std::vector<float> a(count), t(count), back(count);
    for (auto& v : a) v = rng.uniform() * 1000.0f - 500.0f;

    float *da, *dt, *dback;
    CHECK(cudaMalloc(&da, count * sizeof(float)));
    CHECK(cudaMalloc(&dt, count * sizeof(float)));
    CHECK(cudaMalloc(&dback, count * sizeof(float)));
    CHECK(cudaMemcpy(da, a.data(), count * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dt, 0xff, count * sizeof(float)));
    CHECK(cudaMemset(dback, 0xff, count * sizeof(float)));

    launch_transpose(da, dt, rows, cols);     // 333 x 517 -> 517 x 333
    launch_transpose(dt, dback, cols, rows);  // and back
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(t.data(), dt, count * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(back.data(), dback, count * sizeof(float), cudaMemcpyDeviceToHost));

    for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < cols; ++c) {
            const float want = a[(size_t)r * cols + c];
            const float got = t[(size_t)c * rows + r];
            if (memcmp(&want, &got, sizeof(float)) != 0) {
                printf("FAIL: transposed[%d][%d] = %.9g, expected %.9g\n", c, r, got, want);
                return 1;
            }
        }
    }
    if (memcmp(a.data(), back.data(), count * sizeof(float)) != 0) {
        for (size_t i = 0; i < count; ++i)
            if (memcmp(&a[i], &back[i], sizeof(float)) != 0) {
                printf("FAIL: double transpose differs at [%zu][%zu]: %.9g vs %.9g\n",
                       i / cols, i % cols, back[i], a[i]);
                return 1;
            }
    }
    printf("transposed %d x %d and back\n", rows, cols);
    CHECK(cudaFree(da));
    CHECK(cudaFree(dt));
    CHECK(cudaFree(dback));
    printf("PASS\n");
    return 0;
}
