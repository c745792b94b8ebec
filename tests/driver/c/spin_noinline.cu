// Blocks that wait for a block started after them, the wait inside device functions that are
// not inlined (__noinline__: a `.func` the kernel calls). On the CPU backend a block runs on
// a worker until it ends or steps aside, so a spin loop needs a yield point; in a called
// function it had none, and the wait never ended. Every block's thread 0 takes a ticket;
// the last block's then sets a flag, which block 0's thread 0 waits for before it takes its
// own, so block 0's ticket comes after the last block's:
// - in_callee: the spin loop is inside the __noinline__ function (while (*flag == 0) {});
// - through_call: the kernel's loop spins on a __noinline__ function that reads the flag;
// - grid_sync: cooperative groups' grid.sync() inside a __noinline__ function, between
//   every block writing its slot and every block reading all of them (a cooperative launch).
// Argument: the number of blocks of the first two (default 64). Prints what it checked, then
// PASS or FAIL; a wait that never ends is killed by SIGALRM after 2 minutes.
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <vector>
namespace cg = cooperative_groups;

__device__ __noinline__ void wait_for(volatile int *flag)
{
    while (*flag == 0) {}
}

__device__ __noinline__ int read_flag(volatile int *flag) { return *flag; }

__device__ void finish(int *flag, int *tickets, int *next)
{
    if (threadIdx.x == 0) {
        tickets[blockIdx.x] = atomicAdd(next, 1);
        if (blockIdx.x == gridDim.x - 1) {
            __threadfence();
            *(volatile int *)flag = 1;
        }
    }
}

__global__ void in_callee(int *flag, int *tickets, int *next)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) wait_for(flag);
    finish(flag, tickets, next);
}

__global__ void through_call(int *flag, int *tickets, int *next)
{
    if (blockIdx.x == 0 && threadIdx.x == 0)
        while (read_flag(flag) == 0) {}
    finish(flag, tickets, next);
}

__device__ __noinline__ void sync_grid() { cg::this_grid().sync(); }

__global__ void grid_sync(int *slots, long long *sums)
{
    if (threadIdx.x == 0) slots[blockIdx.x] = blockIdx.x + 1;
    sync_grid();
    if (threadIdx.x == 0) {
        long long s = 0;
        for (int b = 0; b < gridDim.x; b++) s += slots[b];
        sums[blockIdx.x] = s;
    }
}

static int bad = 0;

static void waits(void (*kernel)(int *, int *, int *), const char *name, int blocks)
{
    int *flag, *tickets, *next;
    cudaMalloc(&flag, sizeof(int));
    cudaMalloc(&next, sizeof(int));
    cudaMalloc(&tickets, blocks * sizeof(int));
    cudaMemset(flag, 0, sizeof(int));
    cudaMemset(next, 0, sizeof(int));
    kernel<<<blocks, 64>>>(flag, tickets, next);
    cudaError_t e = cudaDeviceSynchronize();
    std::vector<int> t(blocks);
    cudaMemcpy(t.data(), tickets, blocks * sizeof(int), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess || t[0] <= t[blocks - 1]) {
        printf("%s: %s, block 0 has ticket %d, block %d %d\n", name, cudaGetErrorName(e), t[0],
               blocks - 1, t[blocks - 1]);
        bad++;
    } else {
        printf("%s: block 0 waited for block %d\n", name, blocks - 1);
    }
    cudaFree(flag);
    cudaFree(tickets);
    cudaFree(next);
}

int main(int argc, char **argv)
{
    alarm(120);  // a wait that never ends kills the program (SIGALRM), not the test machine
    int blocks = argc > 1 ? atoi(argv[1]) : 64;
    waits(in_callee, "in_callee", blocks);
    waits(through_call, "through_call", blocks);

    int sms = 0, per_sm = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_sync, 64, 0);
    int nb = per_sm * sms > 8 ? 8 : per_sm * sms;
    int *slots;
    long long *sums;
    cudaMalloc(&slots, nb * sizeof(int));
    cudaMalloc(&sums, nb * sizeof(long long));
    void *args[] = {&slots, &sums};
    cudaError_t e = cudaLaunchCooperativeKernel((const void *)grid_sync, nb, 64, args, 0, 0);
    cudaError_t s = cudaDeviceSynchronize();
    std::vector<long long> got(nb);
    cudaMemcpy(got.data(), sums, nb * sizeof(long long), cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int b = 0; b < nb; b++) wrong += got[b] != (long long)nb * (nb + 1) / 2;
    if (e != cudaSuccess || s != cudaSuccess || wrong) {
        printf("grid_sync: launch %s, synchronize %s, %d of %d sums wrong\n", cudaGetErrorName(e),
               cudaGetErrorName(s), wrong, nb);
        bad++;
    } else {
        printf("grid_sync: every block read the others' slots\n");
    }
    printf(bad ? "FAIL\n" : "PASS\n");
    return bad ? 1 : 0;
}
