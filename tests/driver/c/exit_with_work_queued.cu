// A program that returns from main with launches and event records still queued (no
// synchronisation): it ends quietly, with its status, whichever threads of cuport's (a Vulkan
// stream's submitter and watcher) were busy when the exit handlers ran.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void add_one(int* c) { atomicAdd(c, 1); }

int main()
{
    int* d;
    cudaEvent_t ev;
    if (cudaMalloc(&d, sizeof(int)) != cudaSuccess || cudaEventCreate(&ev) != cudaSuccess)
        return 1;
    for (int i = 0; i < 2000; i++) {
        add_one<<<64, 64>>>(d);
        if (i % 10 == 0) cudaEventRecord(ev, 0);
    }
    printf("exiting with work queued\n");
    return 0;
}
