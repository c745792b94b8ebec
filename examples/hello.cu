// hello.cu: an unmodified CUDA program, no kernel yet. Build it with nvcc and run it
// on the CPU:   nvcc -o hello examples/hello.cu && cuport run ./hello
#include <cstdio>
#include <cuda_runtime.h>

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
    CHECK(cudaMemset(dev, 0, sizeof host));
    CHECK(cudaMemcpy(back, dev, sizeof back, cudaMemcpyDeviceToHost));
    printf("copied 2 x %zu MiB in %.2f ms, memset to %g\n", sizeof host >> 20, ms, back[n - 1]);
    CHECK(cudaFree(dev));
    printf("PASS\n");
    return 0;
}
