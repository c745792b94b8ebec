// __ballot_sync / __any_sync / __all_sync whose member mask differs between lanes: the warp
// split into labeled groups (as cooperative groups' labeled_partition does, and HeCBench
// bscan's warp scans), each group's lanes calling with the group's mask, so each votes over
// its own group only. (Masks that differ within a group are undefined in CUDA: an H100 then
// answers otherwise, recorded 2026-12-06.)
#include <cstdio>

__global__ void votes(const int *x, const int *label, unsigned *ballot, int *any, int *all)
{
    unsigned group = __match_any_sync(0xffffffffu, label[threadIdx.x]);
    bool p = x[threadIdx.x] > 0;
    ballot[threadIdx.x] = __ballot_sync(group, p);
    any[threadIdx.x] = __any_sync(group, p);
    all[threadIdx.x] = __all_sync(group, p);
}

int main()
{
    const int n = 64;
    int x[n], label[n], any[n], all[n];
    unsigned ballot[n];
    for (int i = 0; i < n; i++) {
        x[i] = (i * 37 % 11) - 3 + (i > 40 ? 9 : 0) - (i < 3 ? 9 : 0);
        label[i] = i < 8 ? 0 : (i * 7 % 5);  // lanes 0-7 together, the rest scattered
    }
    int *d_x, *d_label, *d_any, *d_all;
    unsigned *d_ballot;
    cudaMalloc(&d_x, sizeof x);
    cudaMalloc(&d_label, sizeof label);
    cudaMalloc(&d_any, sizeof any);
    cudaMalloc(&d_all, sizeof all);
    cudaMalloc(&d_ballot, sizeof ballot);
    cudaMemcpy(d_x, x, sizeof x, cudaMemcpyHostToDevice);
    cudaMemcpy(d_label, label, sizeof label, cudaMemcpyHostToDevice);
    votes<<<1, n>>>(d_x, d_label, d_ballot, d_any, d_all);
    cudaError_t e = cudaMemcpy(ballot, d_ballot, sizeof ballot, cudaMemcpyDeviceToHost);
    cudaMemcpy(any, d_any, sizeof any, cudaMemcpyDeviceToHost);
    cudaMemcpy(all, d_all, sizeof all, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) { printf("%s\n", cudaGetErrorName(e)); return 2; }
    for (int i = 0; i < n; i++) {
        int warp = i / 32 * 32;
        unsigned want = 0;
        int want_any = 0, want_all = 1;
        for (int j = 0; j < 32; j++) {
            if (label[warp + j] != label[i]) continue;
            bool p = x[warp + j] > 0;
            if (p) want |= 1u << j;
            want_any |= p;
            want_all &= p;
        }
        if (ballot[i] != want || any[i] != want_any || all[i] != want_all) {
            printf("FAIL: thread %d: ballot %08x any %d all %d, want %08x %d %d\n", i, ballot[i],
                   any[i], all[i], want, want_any, want_all);
            return 1;
        }
    }
    printf("PASS\n");
    return 0;
}
