// CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES (issue 8, numba-cuda's get_const_mem_size): the
// user __constant__ memory a kernel needs, at least what it reads.
#include <cstdio>
#include <cuda_runtime.h>

__constant__ float table[256];
__constant__ int scale;

__global__ void lookup(const int* idx, float* out) {
    int i = threadIdx.x;
    out[i] = table[idx[i] & 255] * scale;
}
__global__ void scaled(float* out) { out[threadIdx.x] *= scale; }

int main() {
    cudaFuncAttributes a, b;
    if (cudaFuncGetAttributes(&a, lookup) || cudaFuncGetAttributes(&b, scaled)) return 2;
    printf("lookup const %zu\nscaled const %zu\n", a.constSizeBytes, b.constSizeBytes);
    return 0;
}
