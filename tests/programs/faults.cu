// A kernel that dereferences a bad pointer: the launch fails with cudaErrorIllegalAddress
// and, as on a GPU, the device stays unusable for the rest of the process (every later
// call that touches it returns the same error). Self-checking: one PASS/FAIL line.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void scale(float* p, int n, float k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] *= k;
}

static int failures = 0;

static void expect(const char* what, cudaError_t got, cudaError_t want)
{
    if (got != want) {
        printf("%s: %s, expected %s\n", what, cudaGetErrorName(got), cudaGetErrorName(want));
        failures++;
    }
}

int main()
{
    const int n = 1 << 12;
    float host[n];
    for (int i = 0; i < n; i++) host[i] = (float)i;
    float* good = nullptr;
    expect("cudaMalloc", cudaMalloc(&good, sizeof host), cudaSuccess);
    expect("cudaMemcpy HtoD", cudaMemcpy(good, host, sizeof host, cudaMemcpyHostToDevice), cudaSuccess);
    scale<<<n / 256, 256>>>(good, n, 2.0f);
    expect("good launch", cudaGetLastError(), cudaSuccess);
    expect("synchronize after the good launch", cudaDeviceSynchronize(), cudaSuccess);
    expect("cudaMemcpy DtoH", cudaMemcpy(host, good, sizeof host, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < n; i++)
        if (host[i] != 2.0f * i) {
            printf("host[%d] = %g, expected %g\n", i, host[i], 2.0f * i);
            failures++;
            break;
        }

    float* wild = reinterpret_cast<float*>(0x10);  // never allocated
    scale<<<n / 256, 256>>>(wild, n, 2.0f);
    expect("bad launch (launch itself)", cudaGetLastError(), cudaSuccess);
    expect("synchronize after the bad launch", cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    expect("synchronize again", cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    void* more = nullptr;
    expect("cudaMalloc afterwards", cudaMalloc(&more, 64), cudaErrorIllegalAddress);
    expect("cudaMemcpy afterwards", cudaMemcpy(host, good, sizeof host, cudaMemcpyDeviceToHost),
           cudaErrorIllegalAddress);
    scale<<<1, 32>>>(good, 32, 1.0f);
    expect("launch afterwards", cudaGetLastError(), cudaErrorIllegalAddress);
    int count = 0;
    expect("cudaGetDeviceCount afterwards", cudaGetDeviceCount(&count), cudaSuccess);

    printf(failures ? "FAIL\n" : "PASS\n");
    return failures ? 1 : 0;
}
