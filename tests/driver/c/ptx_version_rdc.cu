// cudaFuncAttributes.ptxVersion of a -rdc program built for compute_90 PTX only: the device
// link adds libcudadevrt's PTX (for sm_121 in CUDA 13) to the program's, and cuport
// answered 121 for every kernel; CUB, which picks its policies and kernels from it, failed
// with cudaErrorInvalidDeviceFunction (cuda-samples radixSortThrust). The H200 answers 90.
#include <cstdio>

__global__ void scale(float *x, float a)
{
    x[threadIdx.x] *= a;
}

int main()
{
    cudaFuncAttributes attr;
    cudaError_t e = cudaFuncGetAttributes(&attr, scale);
    if (e != cudaSuccess) { printf("%s\n", cudaGetErrorName(e)); return 2; }
    printf("ptxVersion %d\n", attr.ptxVersion);
    float h[32], *x;
    for (int i = 0; i < 32; i++) h[i] = i;
    cudaMalloc(&x, sizeof h);
    cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
    scale<<<1, 32>>>(x, 2.0f);
    e = cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) { printf("%s\n", cudaGetErrorName(e)); return 2; }
    for (int i = 0; i < 32; i++)
        if (h[i] != 2.0f * i) { printf("FAIL: x[%d] = %g\n", i, h[i]); return 1; }
    printf("PASS\n");
    return 0;
}
