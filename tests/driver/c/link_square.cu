// cuLink inputs (tests/driver/c/link.c): a kernel calling a device function that another
// module defines, built as PTX, fatbin, host object and library with -rdc=true.
extern __device__ unsigned square(unsigned x);

extern "C" __global__ void sq(unsigned* out)
{
    out[threadIdx.x] = square(threadIdx.x) + 1;
}
