// Cooperative launch with grid-wide synchronisation (cooperative_groups::this_grid().sync()):
// a multi-phase computation where every phase reads what all blocks wrote in the phase
// before — a grid-wide sum, then each element normalised by it, then a grid-wide scan of
// block totals — with the grid sized by the occupancy calculator, as NVIDIA's samples do.
// Also: a grid too large for a cooperative launch is refused. One PASS/FAIL line.
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
namespace cg = cooperative_groups;

__global__ void phases(const int* in, int n, int* block_sums, long long* total, int* out,
                       int* scanned, int rounds)
{
    cg::grid_group grid = cg::this_grid();
    __shared__ int partial[256];
    for (int r = 0; r < rounds; r++) {
        // phase 1: block sums of the input (grid-stride)
        int s = 0;
        for (int i = grid.thread_rank(); i < n; i += grid.size()) s += in[i] + r;
        partial[threadIdx.x] = s;
        __syncthreads();
        for (int w = blockDim.x / 2; w > 0; w /= 2) {
            if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
            __syncthreads();
        }
        if (threadIdx.x == 0) block_sums[blockIdx.x] = partial[0];
        grid.sync();
        // phase 2: block 0 adds the block sums; the others wait for it
        if (grid.thread_rank() == 0) {
            long long t = 0;
            for (int b = 0; b < gridDim.x; b++) t += block_sums[b];
            total[r] = t;
        }
        grid.sync();
        // phase 3: every element scaled by the total, read by all blocks
        for (int i = grid.thread_rank(); i < n; i += grid.size())
            out[r * n + i] = (int)(((long long)(in[i] + r) * 1000000) / total[r]);
        // phase 4: exclusive scan of the block sums, each block its own entry
        if (threadIdx.x == 0) {
            int acc = 0;
            for (int b = 0; b < blockIdx.x; b++) acc += block_sums[b];
            scanned[r * gridDim.x + blockIdx.x] = acc;
        }
        grid.sync();  // block_sums is rewritten next round
    }
}

int main()
{
    int dev = 0, supported = 0, sms = 0, per_sm = 0;
    cudaDeviceGetAttribute(&supported, cudaDevAttrCooperativeLaunch, dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (!supported) { printf("FAIL: cooperative launch not supported\n"); return 1; }
    const int threads = 256;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, phases, threads, 0);
    int blocks = per_sm * sms;
    if (blocks > 64) blocks = 64;  // enough to test, and the same on every machine size
    const int n = 100003, rounds = 3;
    std::vector<int> in(n);
    for (int i = 0; i < n; i++) in[i] = (i * 7919) % 1000;
    int *d_in, *d_sums, *d_out, *d_scan;
    long long* d_total;
    cudaMalloc(&d_in, n * sizeof(int));
    cudaMalloc(&d_sums, blocks * sizeof(int));
    cudaMalloc(&d_out, rounds * n * sizeof(int));
    cudaMalloc(&d_scan, rounds * blocks * sizeof(int));
    cudaMalloc(&d_total, rounds * sizeof(long long));
    cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice);
    int nn = n, rr = rounds;
    void* args[] = {&d_in, &nn, &d_sums, &d_total, &d_out, &d_scan, &rr};
    cudaError_t e = cudaLaunchCooperativeKernel((void*)phases, blocks, threads, args, 0, 0);
    cudaError_t s = cudaDeviceSynchronize();
    int bad = 0;
    if (e != cudaSuccess || s != cudaSuccess) {
        printf("launch: %s, synchronize: %s\n", cudaGetErrorString(e), cudaGetErrorString(s));
        bad++;
    }
    std::vector<long long> total(rounds);
    std::vector<int> out(rounds * n), scan(rounds * blocks);
    cudaMemcpy(total.data(), d_total, rounds * sizeof(long long), cudaMemcpyDeviceToHost);
    cudaMemcpy(out.data(), d_out, rounds * n * sizeof(int), cudaMemcpyDeviceToHost);
    cudaMemcpy(scan.data(), d_scan, rounds * blocks * sizeof(int), cudaMemcpyDeviceToHost);
    for (int r = 0; r < rounds && !bad; r++) {
        long long want = 0;
        for (int i = 0; i < n; i++) want += in[i] + r;
        if (total[r] != want) { printf("round %d: total %lld, expected %lld\n", r, total[r], want); bad++; }
        for (int i = 0; i < n; i++) {
            int w = (int)(((long long)(in[i] + r) * 1000000) / want);
            if (out[r * n + i] != w) { printf("round %d: out[%d] = %d, expected %d\n", r, i, out[r * n + i], w); bad++; break; }
        }
        // the block sums depend on which elements each block took: check the scan's end
        long long last = scan[r * blocks + blocks - 1];
        if (last < 0 || last > want) { printf("round %d: scan end %lld\n", r, last); bad++; }
        for (int b = 1; b < blocks; b++)
            if (scan[r * blocks + b] < scan[r * blocks + b - 1]) { printf("round %d: scan not monotone at %d\n", r, b); bad++; break; }
    }
    // a grid larger than can be resident at once is refused
    e = cudaLaunchCooperativeKernel((void*)phases, per_sm * sms + 1, threads, args, 0, 0);
    if (e != cudaErrorCooperativeLaunchTooLarge) { printf("too large a grid: %s\n", cudaGetErrorName(e)); bad++; }
    cudaGetLastError();
    printf("%d blocks of %d threads, %d rounds\n", blocks, threads, rounds);
    printf(bad ? "FAIL\n" : "PASS\n");
    return bad ? 1 : 0;
}
