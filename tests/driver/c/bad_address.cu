// Kernels that load or store at address 0 or far out of bounds: each launch must fail with
// cudaErrorIllegalAddress (700). The program prints the buffer's address (the far cases
// store at buffer + 4 * 2^40) and the error.
//   bad_address CASE   CASE: store0 load0 param0 far1 far32 scatter
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

__global__ void store0(int* out)
{
    *(volatile int*)0 = 1;  // nvcc keeps it: st.volatile.u32 [0]
    out[threadIdx.x] = 2;   // never reached
}

__global__ void load0(int* out) { out[threadIdx.x] = *(volatile int*)0 + 1; }

__global__ void param0(int* p, int* out)
{
    p[threadIdx.x] = 5;  // p is NULL at run time
    out[threadIdx.x] = 2;
}

__global__ void far(float* p, long long first, long long stride, int* out)
{
    p[first + stride * threadIdx.x] = 1.0f;
    out[threadIdx.x] = 2;
}

int main(int argc, char** argv)
{
    int* out;
    float* buf;
    if (argc < 2 || cudaMalloc(&out, 4096) != cudaSuccess || cudaMalloc(&buf, 4096) != cudaSuccess ||
        cudaMemset(out, 0, 4096) != cudaSuccess) {
        printf("setup failed\n");
        return 2;
    }
    printf("buffer %p\n", (void*)buf);
    const char* c = argv[1];
    const long long far_index = 1ll << 40;
    if (!strcmp(c, "store0")) store0<<<1, 32>>>(out);
    else if (!strcmp(c, "load0")) load0<<<1, 32>>>(out);
    else if (!strcmp(c, "param0")) param0<<<1, 32>>>(nullptr, out);
    else if (!strcmp(c, "far1")) far<<<1, 1>>>(buf, far_index, 0, out);
    else if (!strcmp(c, "far32")) far<<<1, 32>>>(buf, far_index, 1, out);
    else if (!strcmp(c, "scatter")) far<<<1, 32>>>(buf, 0, far_index, out);
    else {
        printf("unknown case %s\n", c);
        return 2;
    }
    cudaError_t e = cudaDeviceSynchronize();
    printf("%s %d\n", cudaGetErrorName(e), (int)e);
    return 0;
}
