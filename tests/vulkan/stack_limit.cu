// tests/vulkan/test_recursion.py: the context's stack limit reaches the Vulkan backend's call
// stack. Usage: stack_limit LIMIT DEPTH (LIMIT 0 keeps the default). Prints the limit, the
// launch's error name and, when it ran, what two threads computed.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__device__ __noinline__ int deep(int n, volatile int* sink) {
    int pad[4];
    for (int i = 0; i < 4; ++i) pad[i] = n + i;
    if (n == 0) return 0;
    int r = deep(n - 1, sink) + 1;
    *sink = pad[n & 3];
    return r;
}

__global__ void depth(int n, int* out, int* sink) { out[threadIdx.x] = deep(n - threadIdx.x, sink); }

int main(int argc, char** argv) {
    if (argc != 3) return 2;
    size_t limit = strtoul(argv[1], nullptr, 10);
    int n = atoi(argv[2]);
    if (limit && cudaDeviceSetLimit(cudaLimitStackSize, limit) != cudaSuccess) return 3;
    size_t got = 0;
    cudaDeviceGetLimit(&got, cudaLimitStackSize);
    int *out, *sink;
    if (cudaMalloc(&out, 2 * sizeof(int)) != cudaSuccess || cudaMalloc(&sink, sizeof(int)) != cudaSuccess)
        return 4;
    depth<<<1, 2>>>(n, out, sink);
    cudaError_t e = cudaDeviceSynchronize();
    printf("limit %zu: %s\n", got, cudaGetErrorName(e));
    if (e == cudaSuccess) {
        int h[2];
        cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
        printf("%d %d\n", h[0], h[1]);
    }
    return 0;
}
