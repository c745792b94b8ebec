// cooperative_groups' generic sync() of a thread_group: a switch over the group's kind whose
// cluster case is barrier.cluster.arrive/wait (sm_90 PTX; cuda-samples simpleCooperativeGroups).
// The cluster case is not run by rotate (its groups are the thread block and tiles of 16);
// reverse_in_cluster runs it.
#include <cooperative_groups.h>
#include <cstdio>
namespace cg = cooperative_groups;

// Called with two kinds of group, so the kind is tested at run time (not inlined away).
__device__ __noinline__ int exchange(cg::thread_group g, int *x, int v)
{
    int rank = g.thread_rank();
    x[rank] = v;
    g.sync();
    int r = x[(rank + 5) % g.size()];
    g.sync();
    return r;
}

__global__ void rotate(const int *in, int *out)
{
    __shared__ int s[256];
    cg::thread_block block = cg::this_thread_block();
    int v = exchange(block, s, in[blockIdx.x * 256 + threadIdx.x]);
    cg::thread_block_tile<16> tile = cg::tiled_partition<16>(block);
    v = exchange(tile, s + threadIdx.x - tile.thread_rank(), v);
    out[blockIdx.x * 256 + threadIdx.x] = v;
}

// cluster.sync() run (barrier.cluster.arrive/wait): without a cluster launch each block is
// a cluster of one, so the cluster barrier is the block's.
__global__ void reverse_in_cluster(int *out)
{
    __shared__ int s[256];
    cg::cluster_group cluster = cg::this_cluster();
    s[threadIdx.x] = threadIdx.x * 3;
    cluster.sync();
    int v = s[255 - threadIdx.x];
    cluster.sync();
    s[threadIdx.x] = v + 1;
    cluster.sync();
    out[blockIdx.x * 256 + threadIdx.x] =
        s[(threadIdx.x + 1) % 256] + 1000 * (int)cluster.block_rank() + 10000 * (int)cluster.num_blocks();
}

// A kernel compiled for clusters of two blocks (.reqnctapercluster 2, 1, 1): cuport runs
// clusters of one block only, so it refuses the launch (CUDA_ERROR_NOT_SUPPORTED).
__global__ void __cluster_dims__(2, 1, 1) pairs(int *out)
{
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();
    out[blockIdx.x] = (int)cluster.block_rank() + 10 * (int)cluster.num_blocks();
}

int main(int argc, char **argv)
{
    if (argc > 1 && argv[1][0] == 'd') {  // "dims": the launch of pairs alone
        int *out, h[4];
        cudaMalloc(&out, sizeof h);
        pairs<<<4, 32>>>(out);
        cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess) e = cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
        if (e != cudaSuccess) { printf("%s\n", cudaGetErrorName(e)); return 2; }
        for (int i = 0; i < 4; i++) printf("%d ", h[i]);
        printf("\n");
        return 0;
    }
    bool rotate_too = argc < 2;  // "cluster": reverse_in_cluster alone
    const int n = 4 * 256;
    int h[n], *in, *out;
    for (int i = 0; i < n; i++) h[i] = i * 7 + 1;
    cudaMalloc(&in, n * sizeof(int));
    cudaMalloc(&out, n * sizeof(int));
    cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice);
    cudaError_t e;
    if (rotate_too) {
        rotate<<<4, 256>>>(in, out);
        e = cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
        if (e != cudaSuccess) { printf("%s\n", cudaGetErrorName(e)); return 2; }
    }
    for (int i = 0; rotate_too && i < n; i++) {
        int b = i / 256, t = i % 256, tile = t / 16 * 16;
        int src = (tile + (t % 16 + 5) % 16 + 5) % 256, want = (b * 256 + src) * 7 + 1;
        if (h[i] != want) { printf("FAIL: out[%d] = %d, want %d\n", i, h[i], want); return 1; }
    }
    reverse_in_cluster<<<4, 256>>>(out);
    e = cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) { printf("%s\n", cudaGetErrorName(e)); return 2; }
    for (int i = 0; i < n; i++) {
        int want = (255 - (i % 256 + 1) % 256) * 3 + 1 + 10000;
        if (h[i] != want) { printf("FAIL: cluster out[%d] = %d, want %d\n", i, h[i], want); return 1; }
    }
    printf("PASS\n");
    return 0;
}
