// mbarrier arrive tokens and phase tests in one warp, as an H200 answers them (measured
// 2026-12-02, driver 580.159): the pending count a token holds is the count before the
// warp's arrivals (one value for all the lanes that arrive together), test_wait.parity P is
// true once the phase of parity P has completed (and for the phase before the current).
#include <cstdio>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("CUDA error: %s failed at %s:%d: %s\n", #x, __FILE__, __LINE__, cudaGetErrorString(e)); \
    return 2; } } while (0)

// mode 0: every thread arrives; 1: thread 0 expects 64 transaction bytes first (then a
// barrier), then every thread arrives; 2: thread 0 arrives with expect_tx, the others plainly
__global__ void tokens(unsigned* out, int count, int mode) {
    __shared__ unsigned long long mbar;
    int t = threadIdx.x;
    unsigned bar = (unsigned)__cvta_generic_to_shared(&mbar);
    if (t == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
    __syncthreads();
    if (mode == 1 && t == 0) asm volatile("mbarrier.expect_tx.shared.b64 [%0], %1;" :: "r"(bar), "r"(64) : "memory");
    if (mode == 1) __syncthreads();
    unsigned long long state;
    if (mode == 2 && t == 0)
        asm volatile("mbarrier.arrive.expect_tx.shared.b64 %0, [%1], %2;" : "=l"(state) : "r"(bar), "r"(64) : "memory");
    else
        asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(bar) : "memory");
    unsigned pending, done0, done1;
    asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(pending) : "l"(state));
    asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared.b64 p, [%1], 0;\n"
                 "selp.u32 %0, 1, 0, p; }" : "=r"(done0) : "r"(bar) : "memory");
    asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared.b64 p, [%1], 1;\n"
                 "selp.u32 %0, 1, 0, p; }" : "=r"(done1) : "r"(bar) : "memory");
    out[t] = pending;
    out[32 + t] = done0;
    out[64 + t] = done1;
}

int main() {
    unsigned *d, h[96];
    CHECK(cudaMalloc(&d, sizeof h));
    const int cases[][2] = {{32, 0}, {64, 0}, {32, 1}, {32, 2}, {40, 0}};
    int bad = 0;
    for (const auto& c : cases) {
        int count = c[0], mode = c[1];
        tokens<<<1, 32>>>(d, count, mode);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
        // the phase completes only when all its arrivals came and no transaction is pending
        unsigned complete = count == 32 && mode == 0;
        int wrong = 0;
        for (int t = 0; t < 32; ++t) {
            unsigned want = mode == 2 && t > 0 ? count - 1 : count;
            wrong += h[t] != want;
            wrong += h[32 + t] != complete;
            wrong += h[64 + t] != 1 - complete;
        }
        printf("count %d mode %d: %d wrong (lane 0: pending %u, parity 0 %u, parity 1 %u)\n",
               count, mode, wrong, h[0], h[32], h[64]);
        bad += wrong;
    }
    CHECK(cudaFree(d));
    printf("%s\n", bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
