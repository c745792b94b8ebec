// Device-side assert (issue 8, cuda-samples simpleAssert): every failing thread prints
// `file:line: function: block: [x,y,z], thread: [x,y,z] Assertion `expr` failed.`
// with the kernels' printf output, and the launch fails with cudaErrorAssert.
#include <cassert>
#include <cstdio>
#include <cuda_runtime.h>

__global__ void check_limit(const int* v, int limit) {
    int i = blockIdx.x * 64 + threadIdx.y * 16 + threadIdx.x;
    assert(v[i] < limit);
}

int main() {
    const int n = 128;
    int h[n], *d;
    for (int i = 0; i < n; ++i) h[i] = (i == 70 || i == 75 || i == 77) ? 1000 : i;
    cudaMalloc(&d, sizeof h);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    check_limit<<<dim3(2, 1, 1), dim3(16, 4, 1)>>>(d, 500);
    printf("-- begin\n");
    fflush(stdout);
    cudaError_t e = cudaDeviceSynchronize();
    printf("-- end\n%s\n", cudaGetErrorName(e));
    return 0;
}
