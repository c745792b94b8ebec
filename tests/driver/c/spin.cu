// Kernels that never end, for ^C: `spin` waits on a flag nobody sets (volatile loads: the
// loop has a yield point), `spin_alu` iterates arithmetic only (no memory access, no
// yield point). The program says "spinning" once the launch is queued, then waits.
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

__global__ void spin(volatile int* flag, int* out)
{
    int n = 0;
    while (*flag == 0) n++;
    out[threadIdx.x] = n;
}

__global__ void spin_alu(int* out, unsigned k)
{
    unsigned x = threadIdx.x;
    for (;;) {
        x = x * 1664525u + k;
        if (x == 0xdeadbeefu && k == 12345u) break;  // never, for the k passed
    }
    out[threadIdx.x] = x;
}

int main(int argc, char** argv)
{
    int *flag, *out;
    if (cudaMalloc(&flag, 4) != cudaSuccess || cudaMemset(flag, 0, 4) != cudaSuccess ||
        cudaMalloc(&out, 4096) != cudaSuccess) {
        printf("setup failed\n");
        return 2;
    }
    if (argc > 1 && !strcmp(argv[1], "alu"))
        spin_alu<<<4, 64>>>(out, 7u);
    else
        spin<<<4, 64>>>(flag, out);
    printf("spinning: %s\n", cudaGetErrorName(cudaGetLastError()));
    fflush(stdout);
    cudaError_t e = cudaDeviceSynchronize();
    printf("synchronize returned %s\n", cudaGetErrorName(e));
    return 1;
}
