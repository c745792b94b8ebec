// Two events on one stream are reached in their order, so the time between them is never
// negative (cuda-samples simpleMultiCopy printed "Memcpy host to device: -0.44 ms" on the
// Vulkan backend: the first event, recorded behind a kernel, was timed by the thread that
// watches the device, which could run after the host had already reached and timed the
// second one; an event recorded where its stream was done is timed at once).
// - start behind a kernel, an asynchronous copy from pinned memory, stop, on stream 0;
// - start behind a kernel, the stream synchronised, stop (timed at once);
// - start behind a kernel on a created stream, stop behind a second kernel there.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void busy(float* x, int n, int reps)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        for (int r = 0; r < reps; ++r) v = v * 0.999f + 0.5f;
        x[i] = v;
    }
}

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("%s: %s\n", #x, cudaGetErrorName(e)); return 1; } } while (0)

int main()
{
    const int n = 1 << 16, rounds = 20;
    float *d, *h;
    CHECK(cudaMalloc(&d, n * sizeof(float)));
    CHECK(cudaMallocHost(&h, n * sizeof(float)));
    for (int i = 0; i < n; ++i) h[i] = 1.0f;
    CHECK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    int negative[3] = {0, 0, 0};
    for (int r = 0; r < rounds; ++r) {
        float ms;
        busy<<<n / 256, 256>>>(d, n, 200);
        CHECK(cudaEventRecord(start, 0));
        CHECK(cudaMemcpyAsync(d, h, n * sizeof(float), cudaMemcpyHostToDevice, 0));
        CHECK(cudaEventRecord(stop, 0));
        CHECK(cudaEventSynchronize(stop));
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        negative[0] += ms < 0;

        busy<<<n / 256, 256>>>(d, n, 200);
        CHECK(cudaEventRecord(start, 0));
        CHECK(cudaStreamSynchronize(0));
        CHECK(cudaEventRecord(stop, 0));
        CHECK(cudaEventSynchronize(stop));
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        negative[1] += ms < 0;

        busy<<<n / 256, 256, 0, s>>>(d, n, 200);
        CHECK(cudaEventRecord(start, s));
        busy<<<n / 256, 256, 0, s>>>(d, n, 200);
        CHECK(cudaEventRecord(stop, s));
        CHECK(cudaEventSynchronize(stop));
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        negative[2] += ms < 0;
    }
    printf("copy between events: %d of %d negative\n", negative[0], rounds);
    printf("stream synchronised between events: %d of %d negative\n", negative[1], rounds);
    printf("kernel between events: %d of %d negative\n", negative[2], rounds);
    bool ok = !negative[0] && !negative[1] && !negative[2];
    printf(ok ? "PASS\n" : "FAIL\n");
    return ok ? 0 : 1;
}
