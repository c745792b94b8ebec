// Kernels for the driver's launch tests. Under the fake backend (tests/driver/
// fake_backend.py) each runs as a Python function of the same name; the PTX that
// nvcc makes from this file gives the driver real entry names and parameter layouts.
extern "C" __global__ void vadd(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

__device__ int counter = 7;

extern "C" __global__ void uses_shared(float *out)
{
    __shared__ float buf[256];
    buf[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = buf[255 - threadIdx.x] + counter;
}

struct S { double d; char c; int x[3]; };

extern "C" __global__ void structs(S s, char c, short h, double *out)
{
    out[0] = s.d + s.c + s.x[2] + c + h;
}

extern "C" __global__ void slow_fill(int *p, int value) { p[threadIdx.x] = value; }
extern "C" __global__ void trap(int *p) { if (p) __trap(); }
extern "C" __global__ void crash(int *p) { p[0] = 1; }
