// hello.cu: an unmodified CUDA program. Build it with nvcc and run it on the CPU:
//     nvcc -o hello examples/hello.cu && cuport run ./hello
// It prints the device cuport presents, copies a buffer there and back, runs a kernel
// on it and checks every element of the result on the host.
#include <cstdio>
#include <cuda_runtime.h>

// One thread per element, a grid-stride loop: y[i] = a * x[i] + i.
__global__ void axpi(float a, const float *x, float *y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = a * x[i] + i;
}

#define CHECK(call)                                                                 \
    do {                                                                            \
        cudaError_t err = (call);                                                   \
        if (err != cudaSuccess) {                                                   \
            printf("%s: %s\n", #call, cudaGetErrorString(err));                     \
            return 1;                                                               \
        }                                                                           \
    } while (0)

int main()
{
    int count = 0, driver = 0;
    CHECK(cudaGetDeviceCount(&count));
    CHECK(cudaDriverGetVersion(&driver));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("%d device: %s, compute capability %d.%d, %d multiprocessors, %.1f GiB, driver %d\n",
           count, prop.name, prop.major, prop.minor, prop.multiProcessorCount,
           prop.totalGlobalMem / 1073741824.0, driver);

    const int n = 1 << 20;
    static float host[n], back[n];
    for (int i = 0; i < n; i++)
        host[i] = 0.5f * i;
    float *dev;
    cudaStream_t stream;
    cudaEvent_t start, stop;
    CHECK(cudaMalloc(&dev, sizeof host));
    CHECK(cudaStreamCreate(&stream));
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    CHECK(cudaEventRecord(start, stream));
    CHECK(cudaMemcpyAsync(dev, host, sizeof host, cudaMemcpyHostToDevice, stream));
    CHECK(cudaMemcpyAsync(back, dev, sizeof back, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    for (int i = 0; i < n; i++)
        if (back[i] != host[i]) {
            printf("mismatch at %d\n", i);
            return 1;
        }
    printf("copied 2 x %zu MiB in %.2f ms\n", sizeof host >> 20, ms);

    float *out;
    CHECK(cudaMalloc(&out, sizeof host));
    CHECK(cudaMemset(out, 0, sizeof host));
    axpi<<<prop.multiProcessorCount * 4, 256, 0, stream>>>(2.0f, dev, out, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(back, out, sizeof back, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    for (int i = 0; i < n; i++)
        if (back[i] != 2.0f * host[i] + (float)i) {
            printf("kernel result mismatch at %d: %g, expected %g\n", i, back[i],
                   2.0f * host[i] + (float)i);
            return 1;
        }
    printf("kernel axpi<<<%d, 256>>> on %d elements: y[%d] = %g\n",
           prop.multiProcessorCount * 4, n, n - 1, back[n - 1]);
    CHECK(cudaFree(out));
    CHECK(cudaFree(dev));
    printf("PASS\n");
    return 0;
}
