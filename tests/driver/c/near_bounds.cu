// Reads just outside an allocation (issue 8, Rodinia srad_v2): a stencil that loads the
// row above and below every row unconditionally and uses them only inside the image.
// On a GPU such reads land in mapped memory (2 MiB pages, neighbouring allocations) and
// do not fault; cuport pads allocations the same way, and CUPORT_CHECK_BOUNDS=1 makes
// them fault (cudaErrorIllegalAddress) to find such reads.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void vertical_sum(const float* img, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y;
    if (c >= cols) return;
    const volatile float* v = img;  // volatile: the loads happen even where unused
    int i = r * cols + c;
    float up = v[i - cols];
    float down = v[i + cols];
    out[i] = v[i] + (r > 0 ? up : 0.0f) + (r < rows - 1 ? down : 0.0f);
}

// `near_bounds` alone: the image is the program's only buffer besides the result;
// `near_bounds neighbours`: buffers allocated before and after it, too.
int main(int argc, char** argv) {
    const int rows = 256, cols = 1024, n = rows * cols;
    float *before, *img, *after, *out;
    bool neighbours = argc > 1;
    if ((neighbours && cudaMalloc(&before, n * sizeof(float))) || cudaMalloc(&img, n * sizeof(float)) ||
        (neighbours && cudaMalloc(&after, n * sizeof(float))) || cudaMalloc(&out, n * sizeof(float))) return 2;
    static float h[rows * cols], r[rows * cols];
    for (int i = 0; i < n; ++i) h[i] = (float)(i % 977);
    cudaMemcpy(img, h, sizeof h, cudaMemcpyHostToDevice);
    vertical_sum<<<dim3(cols / 128, rows), 128>>>(img, out, rows, cols);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        printf("launch: %s\n", cudaGetErrorName(e));
        return 1;
    }
    cudaMemcpy(r, out, sizeof r, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int y = 0; y < rows; ++y)
        for (int x = 0; x < cols; ++x) {
            int i = y * cols + x;
            float want = h[i] + (y > 0 ? h[i - cols] : 0.0f) + (y < rows - 1 ? h[i + cols] : 0.0f);
            bad += r[i] != want;
        }
    puts(bad ? "FAIL" : "PASS");
    return bad != 0;
}
