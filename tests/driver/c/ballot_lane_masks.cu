// __ballot_sync / __any_sync / __all_sync whose member mask differs between lanes: lane i
// votes over the lanes up to it (as HeCBench bscan's warp scan counts the lanes below it),
// so each lane's result covers its own mask only. A mask must hold the calling lane: on an
// H100 __ballot_sync(lanemask_lt, p) is cudaErrorIllegalInstruction in lane 0.
#include <cstdio>

__global__ void votes(const int *x, unsigned *ballot, int *any, int *all)
{
    unsigned lane = threadIdx.x & 31, below = (1u << lane) - 1;
    bool p = x[threadIdx.x] > 0;
    unsigned mine = below | (1u << lane);  // the lanes up to and including this one
    ballot[threadIdx.x] = __ballot_sync(mine, p) & below;
    any[threadIdx.x] = __any_sync(mine, p);
    all[threadIdx.x] = __all_sync(mine, p);
}

int main()
{
    const int n = 64;
    int x[n], any[n], all[n];
    unsigned ballot[n];
    for (int i = 0; i < n; i++) x[i] = (i * 37 % 11) - 3 + (i > 40 ? 9 : 0) - (i < 3 ? 9 : 0);
    int *d_x, *d_any, *d_all;
    unsigned *d_ballot;
    cudaMalloc(&d_x, sizeof x);
    cudaMalloc(&d_any, sizeof any);
    cudaMalloc(&d_all, sizeof all);
    cudaMalloc(&d_ballot, sizeof ballot);
    cudaMemcpy(d_x, x, sizeof x, cudaMemcpyHostToDevice);
    votes<<<1, n>>>(d_x, d_ballot, d_any, d_all);
    cudaError_t e = cudaMemcpy(ballot, d_ballot, sizeof ballot, cudaMemcpyDeviceToHost);
    cudaMemcpy(any, d_any, sizeof any, cudaMemcpyDeviceToHost);
    cudaMemcpy(all, d_all, sizeof all, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) { printf("%s\n", cudaGetErrorName(e)); return 2; }
    for (int i = 0; i < n; i++) {
        int warp = i / 32 * 32, lane = i % 32;
        unsigned want = 0;
        int want_any = 0, want_all = 1;
        for (int j = 0; j <= lane; j++) {
            bool p = x[warp + j] > 0;
            if (j < lane && p) want |= 1u << j;
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
