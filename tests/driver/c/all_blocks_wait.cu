// Every block waits for every other: each block's thread 0 announces it has started, then all
// of its threads spin (volatile reads, as HeCBench's mis does between its blocks' decisions)
// until every block of the grid has. A GPU holds such a small grid all at once, so this ends
// there; a runtime that runs a block to its end before starting others never ends it.
// Argument: the number of blocks (default 24, of 256 threads). Prints what it checked, then
// PASS or FAIL; a wait that never ends is killed by SIGALRM after 60 s.
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

__global__ void all_wait(volatile int *started, int *seen, int nblocks)
{
    if (threadIdx.x == 0) {
        __threadfence();
        started[blockIdx.x] = 1;
    }
    int count;
    do {
        count = 0;
        for (int b = 0; b < nblocks; b++) count += started[b];
    } while (count < nblocks);
    atomicAdd(&seen[blockIdx.x], count == nblocks);
}

int main(int argc, char **argv)
{
    int nblocks = argc > 1 ? atoi(argv[1]) : 24, threads = 256;
    alarm(60);
    int *started, *seen;
    if (cudaMalloc(&started, nblocks * sizeof(int)) != cudaSuccess ||
        cudaMalloc(&seen, nblocks * sizeof(int)) != cudaSuccess) {
        printf("FAIL: cudaMalloc\n");
        return 1;
    }
    cudaMemset(started, 0, nblocks * sizeof(int));
    cudaMemset(seen, 0, nblocks * sizeof(int));
    all_wait<<<nblocks, threads>>>(started, seen, nblocks);
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
        printf("FAIL: %s\n", cudaGetErrorString(err));
        return 1;
    }
    int *h = (int *)malloc(nblocks * sizeof(int));
    cudaMemcpy(h, seen, nblocks * sizeof(int), cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int b = 0; b < nblocks; b++) bad += h[b] != threads;
    printf("%d blocks each saw all %d start\n", nblocks - bad, nblocks);
    printf(bad ? "FAIL\n" : "PASS\n");
    return bad != 0;
}
