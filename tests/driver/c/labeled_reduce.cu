// cg::reduce over a labeled_partition and over tiles: nvcc (sm_80+) makes redux.sync whose
// member mask is a register, a different mask in each group of the warp; each lane must get
// its own group's result (cuda-samples warpAggregatedAtomicsCG: one maximum for every bucket).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cstdio>
namespace cg = cooperative_groups;

__global__ void group_max(const int *value, const int *label, int *out_max, int *out_sum,
                          unsigned *out_tile_or)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    cg::coalesced_group active = cg::coalesced_threads();
    auto group = cg::labeled_partition(active, label[i]);
    out_max[i] = cg::reduce(group, value[i], cg::greater<int>());
    out_sum[i] = cg::reduce(group, value[i], cg::plus<int>());
    auto tile = cg::tiled_partition<8>(cg::this_thread_block());
    out_tile_or[i] = cg::reduce(tile, 1u << (value[i] & 31), cg::bit_or<unsigned>());
}

int main()
{
    const int n = 256;
    int value[n], label[n], got_max[n], got_sum[n];
    unsigned got_or[n];
    for (int i = 0; i < n; i++) {
        value[i] = (i * 7919 + 13) % 1000 - 300;
        label[i] = (i * 31 / 7) % 5;
    }
    int *d_value, *d_label, *d_max, *d_sum;
    unsigned *d_or;
    cudaMalloc(&d_value, sizeof value);
    cudaMalloc(&d_label, sizeof label);
    cudaMalloc(&d_max, sizeof got_max);
    cudaMalloc(&d_sum, sizeof got_sum);
    cudaMalloc(&d_or, sizeof got_or);
    cudaMemcpy(d_value, value, sizeof value, cudaMemcpyHostToDevice);
    cudaMemcpy(d_label, label, sizeof label, cudaMemcpyHostToDevice);
    group_max<<<n / 64, 64>>>(d_value, d_label, d_max, d_sum, d_or);
    cudaError_t e = cudaMemcpy(got_max, d_max, sizeof got_max, cudaMemcpyDeviceToHost);
    cudaMemcpy(got_sum, d_sum, sizeof got_sum, cudaMemcpyDeviceToHost);
    cudaMemcpy(got_or, d_or, sizeof got_or, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) { printf("%s\n", cudaGetErrorName(e)); return 2; }
    int bad = 0;
    for (int i = 0; i < n; i++) {
        int warp = i / 32 * 32, want_max = -1000000, want_sum = 0;
        for (int j = warp; j < warp + 32; j++)
            if (label[j] == label[i]) {
                want_max = value[j] > want_max ? value[j] : want_max;
                want_sum += value[j];
            }
        unsigned want_or = 0;
        for (int j = i / 8 * 8; j < i / 8 * 8 + 8; j++) want_or |= 1u << (value[j] & 31);
        if (got_max[i] != want_max || got_sum[i] != want_sum || got_or[i] != want_or) {
            if (bad++ < 3)
                printf("FAIL: lane %d: max %d sum %d or %08x, want %d %d %08x\n", i, got_max[i],
                       got_sum[i], got_or[i], want_max, want_sum, want_or);
        }
    }
    if (bad) return 1;
    printf("PASS\n");
    return 0;
}
