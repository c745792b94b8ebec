// Built with `nvcc --default-stream per-thread`: the runtime calls the driver's _ptds/_ptsz
// entry points, where stream 0 is the calling thread's own default stream (the dispatcher
// marks the call: capi/dispatch.py). Each thread's stream 0 is its own, not the legacy
// stream; a memset, a launch and a copy on it run in order (the copy is done at once only
// once the launch has run: driver/stream.py settled).
#include <cstdio>
#include <thread>

__global__ void inc(int* p) { *p += 1; }

int main()
{
    unsigned long long mine = 0, other = 0, legacy = 0;
    cudaStreamGetId(0, &mine);
    cudaStreamGetId(cudaStreamLegacy, &legacy);
    std::thread t([&] { cudaStreamGetId(0, &other); });
    t.join();
    int* d;
    int h = 0;
    cudaMalloc(&d, sizeof(int));
    cudaMemset(d, 0, sizeof(int));
    for (int i = 0; i < 100; i++) inc<<<1, 1>>>(d);
    cudaError_t e = cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost);
    printf("own stream: %d, another thread's: %d; %s %d\n", mine != legacy, other != mine,
           cudaGetErrorName(e), h);
    return 0;
}
