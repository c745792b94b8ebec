// Cooperative groups through libcudadevrt (built -rdc=true, linked with -lcudadevrt), the way
// numba-cuda's cuda.cg.this_grid() and g.sync() call it: cudaCGGetIntrinsicHandle(
// cudaCGScopeGrid) and cudaCGSynchronize(handle, 0) from every thread. libcudadevrt's
// cudaCG* functions call __cuda_syscall_CGS_*, which the driver supplies.
// - rows: numba-cuda's test_sync_at_matrix_row, each row written from the row before it (the
//   mirror-image column, so from another block), a grid sync after each row;
// - shape: cudaCGGetSize / cudaCGGetRank in a 2-D grid of 2-D blocks against the grid's shape;
// - phases: cudaCGSynchronizeGrid (one thread per block arrives) between a grid-wide sum and
//   its use, three rounds;
// - a plain (not cooperative) launch: the handle is 0 and the calls answer cudaErrorUnknown.
// Arguments: the number of rows (200), and `rows-only` to leave out cudaCGSynchronizeGrid,
// whose barriers lie in code only thread 0 runs (a device whose barriers need the whole
// workgroup cannot compile that). Prints what it checked; PASS or FAIL last.
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <vector>

__global__ void rows(int *m, int nrows, int ncols)
{
    unsigned long long g = cudaCGGetIntrinsicHandle(cudaCGScopeGrid);
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    for (int r = 1; r < nrows; r++) {
        m[r * ncols + col] = m[(r - 1) * ncols + (ncols - col - 1)] + 1;
        cudaCGSynchronize(g, 0);
    }
}

__global__ void shape(unsigned *out)
{
    unsigned long long g = cudaCGGetIntrinsicHandle(cudaCGScopeGrid);
    unsigned threads = 0, grids = 0, rank = 0, grid_rank = 7;
    cudaError_t e1 = cudaCGGetSize(&threads, &grids, g);
    cudaError_t e2 = cudaCGGetRank(&rank, &grid_rank, g);
    unsigned block = blockIdx.y * gridDim.x + blockIdx.x;
    unsigned t = block * blockDim.x * blockDim.y + threadIdx.y * blockDim.x + threadIdx.x;
    out[4 * t] = threads;
    out[4 * t + 1] = grids;
    out[4 * t + 2] = rank;
    out[4 * t + 3] = grid_rank + 1000 * e1 + 100000 * e2;
}

__global__ void phases(const int *in, int n, long long *total, int *out, int rounds)
{
    unsigned long long g = cudaCGGetIntrinsicHandle(cudaCGScopeGrid);
    int stride = gridDim.x * blockDim.x;
    for (int r = 0; r < rounds; r++) {
        if (blockIdx.x == 0 && threadIdx.x == 0) total[r] = 0;
        cudaCGSynchronizeGrid(g, 0);
        long long s = 0;
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) s += in[i] * (r + 1);
        atomicAdd((unsigned long long *)&total[r], (unsigned long long)s);
        cudaCGSynchronizeGrid(g, 0);
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
            out[r * n + i] = (int)(total[r] % 1000003) - in[i];
    }
}

__global__ void plain(unsigned *out)
{
    unsigned long long g = cudaCGGetIntrinsicHandle(cudaCGScopeGrid);
    unsigned threads = 5, grids = 5, rank = 5, grid_rank = 5;
    out[0] = g == 0;
    out[1] = cudaCGSynchronize(g, 0);
    out[2] = cudaCGGetSize(&threads, &grids, g);
    out[3] = threads * 10 + grids;
    out[4] = cudaCGGetRank(&rank, &grid_rank, g);
    out[5] = rank * 10 + grid_rank;
}

static int bad = 0;
#define EXPECT(cond, ...) do { if (!(cond)) { printf(__VA_ARGS__); bad++; } } while (0)

static int cooperative_blocks(const void *kernel, int threads)
{
    int sms = 0, per_sm = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0);
    return per_sm * sms;
}

static void launch(const void *kernel, dim3 grid, dim3 block, void **args, const char *what)
{
    cudaError_t e = cudaLaunchCooperativeKernel(kernel, grid, block, args, 0, 0);
    cudaError_t s = cudaDeviceSynchronize();
    EXPECT(e == cudaSuccess && s == cudaSuccess, "%s: launch %s, synchronize %s\n", what,
           cudaGetErrorName(e), cudaGetErrorName(s));
}

int main(int argc, char **argv)
{
    int nrows = argc > 1 ? atoi(argv[1]) : 200;
    bool one_thread_sync = !(argc > 2 && strcmp(argv[2], "rows-only") == 0);
    // rows: numba-cuda's 32-thread blocks, as many as may run at once (at most 8)
    int nb = cooperative_blocks((const void *)rows, 32);
    if (nb > 8) nb = 8;
    int ncols = nb * 32;
    int *d_m;
    cudaMalloc(&d_m, nrows * ncols * sizeof(int));
    cudaMemset(d_m, 0, nrows * ncols * sizeof(int));
    void *rargs[] = {&d_m, &nrows, &ncols};
    launch((const void *)rows, nb, 32, rargs, "rows");
    std::vector<int> m(nrows * ncols);
    cudaMemcpy(m.data(), d_m, m.size() * sizeof(int), cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int r = 0; r < nrows; r++)
        for (int c = 0; c < ncols; c++) wrong += m[r * ncols + c] != r;
    EXPECT(wrong == 0, "rows: %d of %d elements differ from their row number\n", wrong, nrows * ncols);
    printf("rows: %d rows of %d columns\n", nrows, ncols);

    // shape: a 2-D grid of 2-D blocks (16 x 2 threads), 2 x (blocks / 2) or 1 x 1
    int sb = cooperative_blocks((const void *)shape, 32);
    dim3 sgrid = sb >= 2 ? dim3(2, sb / 2 > 2 ? 2 : sb / 2) : dim3(1, 1), sblock(16, 2);
    unsigned nthreads = sgrid.x * sgrid.y * 32;
    unsigned *d_s;
    cudaMalloc(&d_s, 4 * nthreads * sizeof(unsigned));
    void *sargs[] = {&d_s};
    launch((const void *)shape, sgrid, sblock, sargs, "shape");
    std::vector<unsigned> s(4 * nthreads);
    cudaMemcpy(s.data(), d_s, s.size() * sizeof(unsigned), cudaMemcpyDeviceToHost);
    for (unsigned t = 0; t < nthreads; t++) {
        EXPECT(s[4 * t] == nthreads && s[4 * t + 1] == 1 && s[4 * t + 2] == t && s[4 * t + 3] == 1,
               "shape: thread %u: size %u, grids %u, rank %u, grid rank + errors %u\n", t,
               s[4 * t], s[4 * t + 1], s[4 * t + 2], s[4 * t + 3]);
        if (bad) break;
    }
    printf("shape: %u threads, ranks 0..%u\n", nthreads, nthreads - 1);

    // phases: cudaCGSynchronizeGrid between a grid-wide sum and its use
    if (one_thread_sync) {
    int pb = cooperative_blocks((const void *)phases, 64);
    if (pb > 8) pb = 8;
    int n = 10007, rounds = 3;
    std::vector<int> in(n);
    for (int i = 0; i < n; i++) in[i] = (i * 7919) % 1000 - 300;
    int *d_in, *d_out;
    long long *d_total;
    cudaMalloc(&d_in, n * sizeof(int));
    cudaMalloc(&d_out, rounds * n * sizeof(int));
    cudaMalloc(&d_total, rounds * sizeof(long long));
    cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice);
    void *pargs[] = {&d_in, &n, &d_total, &d_out, &rounds};
    launch((const void *)phases, pb, 64, pargs, "phases");
    std::vector<int> out(rounds * n);
    cudaMemcpy(out.data(), d_out, out.size() * sizeof(int), cudaMemcpyDeviceToHost);
    long long sum = 0;
    for (int i = 0; i < n; i++) sum += in[i];
    wrong = 0;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < n; i++) wrong += out[r * n + i] != (int)(sum * (r + 1) % 1000003) - in[i];
    EXPECT(wrong == 0, "phases: %d of %d elements wrong\n", wrong, rounds * n);
    printf("phases: %d rounds over %d elements\n", rounds, n);
    }

    // a plain launch: no grid to synchronise
    unsigned *d_p, p[6];
    cudaMalloc(&d_p, sizeof p);
    plain<<<1, 32>>>(d_p);
    cudaError_t e = cudaDeviceSynchronize();
    cudaMemcpy(p, d_p, sizeof p, cudaMemcpyDeviceToHost);
    printf("plain launch: %s, handle 0: %u, sync %u, size %u (%u), rank %u (%u)\n",
           cudaGetErrorName(e), p[0], p[1], p[2], p[3], p[4], p[5]);

    printf(bad ? "FAIL\n" : "PASS\n");
    return bad ? 1 : 0;
}
