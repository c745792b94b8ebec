// warp_vote: __ballot_sync/__any_sync/__all_sync and __popc of ballots,
// __activemask in a data-dependent branch (warp-aggregated atomic),
// __shfl_sync with half-warp masks and widths, __shfl_up/down_sync,
// __shfl_xor_sync butterflies, and ballots in a partial last warp.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                           \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "CUDA error: %s failed at %s:%d: %s\n", #call,    \
                    __FILE__, __LINE__, cudaGetErrorString(err_));            \
            exit(2);                                                          \
        }                                                                     \
    } while (0)

struct Lcg {
    unsigned state;
    unsigned next() { state = state * 1664525u + 1013904223u; return state; }
};

#define FULL 0xffffffffu
enum { BALLOT, ANY, ALL, POPC, ACTIVE, SUB_BALLOT, HALF, WIDTH8, UP16, DOWN, XSUM, XMAX, NF };
static const char* names[NF] = {"ballot", "any", "all", "popc", "activemask", "ballot(mask)",
                                "shfl(half mask)", "shfl(width 8)", "shfl_up(width 16)",
                                "shfl_down", "xor sum", "xor max"};

// blockDim.x is a multiple of 32. out holds NF ints per thread; slots[] gets
// a warp-aggregated atomic index for every thread with a positive value.
__global__ void warp_ops(const int* in, int* out, int* slots, int* counter) {
    const int gid = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    const int v = in[gid];
    const bool pred = v > 0;
    int* o = out + NF * gid;
    unsigned ballot = __ballot_sync(FULL, pred);
    o[BALLOT] = (int)ballot;
    o[ANY] = __any_sync(FULL, v % 7 == 0);
    o[ALL] = __all_sync(FULL, pred);
    o[POPC] = __popc(ballot);
    o[ACTIVE] = 0;
    o[SUB_BALLOT] = 0;
    slots[gid] = -1;
    __syncwarp();
    if (pred) {
        unsigned active = __activemask();
        o[ACTIVE] = (int)active;
        o[SUB_BALLOT] = (int)__ballot_sync(ballot, v & 1);
        // Warp-aggregated atomic: the lowest active lane reserves for all.
        int leader = __ffs(active) - 1;
        int base = 0;
        if (lane == leader) base = atomicAdd(counter, __popc(active));
        base = __shfl_sync(active, base, leader);
        slots[gid] = base + __popc(active & ((1u << lane) - 1u));
    }
    if (lane < 16)
        o[HALF] = __shfl_sync(0x0000ffffu, v, (lane + 5) & 15);
    else
        o[HALF] = __shfl_sync(0xffff0000u, v, 16 + ((lane + 3) & 15));
    o[WIDTH8] = __shfl_sync(FULL, v, 3, 8);
    o[UP16] = __shfl_up_sync(FULL, v, 2, 16);
    o[DOWN] = __shfl_down_sync(FULL, v, 5);
    int sum = v, mx = v;
    for (int m = 16; m >= 1; m >>= 1) {
        sum += __shfl_xor_sync(FULL, sum, m);
        mx = max(mx, __shfl_xor_sync(FULL, mx, m));
    }
    o[XSUM] = sum;
    o[XMAX] = mx;
}

// Any blockDim.x: the last warp may be partial, so masks name existing lanes only.
__global__ void partial_warp_ballot(const int* in, int n, unsigned* out) {
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    int warp_first = (threadIdx.x & ~31), lanes = min(32, (int)blockDim.x - warp_first);
    unsigned mask = lanes == 32 ? FULL : (1u << lanes) - 1u;
    int v = gid < n ? in[gid] : 0;
    unsigned b = __ballot_sync(mask, v > 0);
    out[gid] = b;
}

int main() {
    const int blocks = 7, block = 128, n = blocks * block;
    Lcg rng{4242};
    std::vector<int> in(n);
    for (int i = 0; i < n; ++i) {
        int w = i / 32;
        if (w % 5 == 1) in[i] = 1 + (int)(rng.next() % 1000u);          // all positive
        else if (w % 5 == 3) in[i] = -(int)(rng.next() % 1000u);        // none positive
        else in[i] = (int)(rng.next() % 2001u) - 1000;                  // mixed
    }
    int *din, *dout, *dslots, *dcounter;
    CHECK(cudaMalloc(&din, n * sizeof(int)));
    CHECK(cudaMalloc(&dout, NF * n * sizeof(int)));
    CHECK(cudaMalloc(&dslots, n * sizeof(int)));
    CHECK(cudaMalloc(&dcounter, sizeof(int)));
    CHECK(cudaMemcpy(din, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dcounter, 0, sizeof(int)));
    warp_ops<<<blocks, block>>>(din, dout, dslots, dcounter);
    CHECK(cudaGetLastError());
    const int pblock = 48, pgrid = 5;  // warps of 32 and 16 lanes
    unsigned* dpart;
    CHECK(cudaMalloc(&dpart, pblock * pgrid * sizeof(unsigned)));
    partial_warp_ballot<<<pgrid, pblock>>>(din, n, dpart);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    std::vector<int> out(NF * n), slots(n);
    std::vector<unsigned> part(pblock * pgrid);
    int counter = 0;
    CHECK(cudaMemcpy(out.data(), dout, NF * n * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(slots.data(), dslots, n * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&counter, dcounter, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(part.data(), dpart, part.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));

    for (int w = 0; w < n / 32; ++w) {
        const int* v = &in[32 * w];
        unsigned ballot = 0, odd = 0;
        int any = 0, sum = 0, mx = v[0];
        for (int l = 0; l < 32; ++l) {
            if (v[l] > 0) ballot |= 1u << l;
            if (v[l] > 0 && (v[l] & 1)) odd |= 1u << l;
            if (v[l] % 7 == 0) any = 1;
            sum += v[l];
            mx = std::max(mx, v[l]);
        }
        for (int l = 0; l < 32; ++l) {
            int want[NF];
            want[BALLOT] = (int)ballot;
            want[ANY] = any;
            want[ALL] = ballot == FULL;
            want[POPC] = __builtin_popcount(ballot);
            want[ACTIVE] = v[l] > 0 ? (int)ballot : 0;
            want[SUB_BALLOT] = v[l] > 0 ? (int)odd : 0;
            want[HALF] = l < 16 ? v[(l + 5) & 15] : v[16 + ((l + 3) & 15)];
            want[WIDTH8] = v[(l & ~7) + 3];
            want[UP16] = (l % 16) >= 2 ? v[l - 2] : v[l];
            want[DOWN] = l + 5 < 32 ? v[l + 5] : v[l];
            want[XSUM] = sum;
            want[XMAX] = mx;
            for (int k = 0; k < NF; ++k) {
                int got = out[NF * (32 * w + l) + k];
                bool is_logical = (k == ANY || k == ALL);  // any non-zero means true
                if (is_logical ? ((got != 0) != (want[k] != 0)) : got != want[k]) {
                    printf("FAIL: %s in warp %d lane %d = 0x%08x, expected 0x%08x\n", names[k], w, l,
                           (unsigned)got, (unsigned)want[k]);
                    return 1;
                }
            }
        }
    }
    // Warp-aggregated atomic: every positive thread got a distinct slot in [0, count).
    int positives = 0;
    std::vector<int> seen;
    for (int i = 0; i < n; ++i) {
        if (in[i] > 0) { ++positives; seen.push_back(slots[i]); }
        else if (slots[i] != -1) { printf("FAIL: thread %d got a slot without a positive value\n", i); return 1; }
    }
    std::sort(seen.begin(), seen.end());
    for (int k = 0; k < positives; ++k)
        if (seen[k] != k) { printf("FAIL: aggregated atomic slots are not 0..%d (slot %d)\n", positives - 1, k); return 1; }
    if (counter != positives) { printf("FAIL: counter %d, expected %d\n", counter, positives); return 1; }
    for (int b = 0; b < pgrid; ++b)
        for (int t = 0; t < pblock; ++t) {
            int first = t & ~31, lanes = std::min(32, pblock - first);
            unsigned want = 0;
            for (int l = 0; l < lanes; ++l)
                if (in[b * pblock + first + l] > 0) want |= 1u << l;
            if (part[b * pblock + t] != want) {
                printf("FAIL: partial-warp ballot block %d thread %d = 0x%08x, expected 0x%08x\n", b, t,
                       part[b * pblock + t], want);
                return 1;
            }
        }
    printf("%d warps checked, %d positive values aggregated\n", n / 32, positives);
    CHECK(cudaFree(din));
    CHECK(cudaFree(dout));
    CHECK(cudaFree(dslots));
    CHECK(cudaFree(dcounter));
    CHECK(cudaFree(dpart));
    printf("PASS\n");
    return 0;
}
