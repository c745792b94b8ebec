// Cooperative kernels for tests/vulkan/test_cooperative.py (nvcc -ptx at test time).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Every block publishes its id through shared memory reached by a generic pointer (so the
// PTX has cvta.shared), the grid syncs, then every block reads every other block's value:
// out[b] = sum of (ids + 1) written before the sync, for each of `rounds` rounds.
extern "C" __global__ void exchange(int* slots, long long* out, int rounds)
{
    cg::grid_group grid = cg::this_grid();
    __shared__ int mine[32];
    int* p = mine;
    asm volatile("" : "+l"(p));  // an opaque generic pointer (the PTX makes it with cvta.shared)
    for (int r = 0; r < rounds; r++) {
        if (threadIdx.x < 32) p[threadIdx.x] = blockIdx.x + 1 + r;
        __syncthreads();
        if (threadIdx.x == 0) slots[blockIdx.x] = p[5];
        grid.sync();
        if (threadIdx.x == 0) {
            long long s = 0;
            for (int b = 0; b < gridDim.x; b++) s += slots[b];
            out[r * gridDim.x + blockIdx.x] = s;
        }
        grid.sync();
    }
}

// A flag spin of one thread per block waiting for the previous block (a chain).
extern "C" __global__ void chain(volatile int* flags, int* order)
{
    if (threadIdx.x == 0) {
        if (blockIdx.x > 0)
            while (flags[blockIdx.x - 1] == 0) {}
        __threadfence();
        order[blockIdx.x] = atomicAdd(&order[gridDim.x], 1);
        flags[blockIdx.x] = 1;
    }
}

// numba-cuda's test_sync_at_matrix_row with cooperative groups' inline grid.sync(): each row
// written from the row before it (the mirror-image column, so from another block in a grid
// of several), a grid sync after each row. Its spin loop costs lavapipe a loop pass per sync
// even when it does not wait (loops.py).
extern "C" __global__ void rows(int* m, int nrows, int ncols)
{
    cg::grid_group grid = cg::this_grid();
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    for (int r = 1; r < nrows; r++) {
        m[r * ncols + col] = m[(r - 1) * ncols + (ncols - col - 1)] + 1;
        grid.sync();
    }
}
