// An inclusive prefix sum in one pass by decoupled look-back, as CUB's DeviceScan and its
// onesweep radix sort do it: each block (a tile of 1024 elements) publishes its tile's
// aggregate as soon as it has it, then its warp 0 looks back over the tiles before it, 32 at
// a time, spinning while any of them has published nothing, adding aggregates until it meets
// an inclusive prefix; then it publishes its own inclusive prefix and the block writes its
// outputs. A tile's status and value are one 64-bit word (status in the high half).
// - static: the tile is blockIdx.x (DeviceScan);
// - tickets: the tile is a ticket taken by the block's first thread with atomicAdd (onesweep),
//   so tiles start in the order blocks do.
// On the CPU backend blocks that wait for earlier ones run on workers that may outnumber the
// cores; the waiting must neither hang nor leave a block's predecessors unrun. Argument: the
// element count (default 3 << 20 | 123: 3073 tiles, the last one partial). Prints what it
// checked, then PASS or FAIL; a wait that never ends is killed by SIGALRM after 2 minutes.
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <vector>

#define THREADS 256
#define ITEMS 4
#define TILE (THREADS * ITEMS)
enum : unsigned { EMPTY = 0, AGGREGATE = 1, PREFIX = 2 };

__device__ unsigned long long pack(unsigned status, unsigned value)
{
    return ((unsigned long long)status << 32) | value;
}

template <bool TICKETS>
__global__ void scan(const unsigned *in, unsigned *out, int n, volatile unsigned long long *state,
                     unsigned *ticket)
{
    __shared__ unsigned tile_s, warp_sums[THREADS / 32], exclusive_s;
    if (TICKETS) {
        if (threadIdx.x == 0) tile_s = atomicAdd(ticket, 1u);
        __syncthreads();
    }
    unsigned tile = TICKETS ? tile_s : blockIdx.x;
    int base = tile * TILE + threadIdx.x * ITEMS;
    unsigned v[ITEMS], own = 0;
    for (int i = 0; i < ITEMS; i++) {
        v[i] = base + i < n ? in[base + i] : 0;
        own += v[i];
    }
    // the block's scan of the threads' sums
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned incl = own;
    for (int d = 1; d < 32; d <<= 1) {
        unsigned t = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl += t;
    }
    if (lane == 31) warp_sums[warp] = incl;
    __syncthreads();
    unsigned before_warp = 0, aggregate = 0;
    for (int w = 0; w < THREADS / 32; w++) {
        before_warp += w < warp ? warp_sums[w] : 0;
        aggregate += warp_sums[w];
    }
    if (warp == 0) {
        unsigned exclusive = 0;
        if (tile == 0) {
            if (lane == 0) state[0] = pack(PREFIX, aggregate);
        } else {
            if (lane == 0) state[tile] = pack(AGGREGATE, aggregate);
            // look back: lane l reads tile `at - l`, the warp waits until all have published
            int at = (int)tile - 1;
            for (;;) {
                int t = at - lane;
                unsigned long long word;
                do {
                    word = t >= 0 ? state[t] : pack(PREFIX, 0);
                } while (__any_sync(0xffffffffu, (unsigned)(word >> 32) == EMPTY));
                unsigned status = (unsigned)(word >> 32), value = (unsigned)word;
                unsigned prefixes = __ballot_sync(0xffffffffu, status == PREFIX);
                int stop = prefixes ? __ffs(prefixes) - 1 : 32;  // the nearest prefix
                unsigned add = lane <= stop ? value : 0;
                for (int d = 16; d > 0; d >>= 1) add += __shfl_down_sync(0xffffffffu, add, d);
                exclusive += __shfl_sync(0xffffffffu, add, 0);
                if (prefixes) break;
                at -= 32;
            }
            if (lane == 0) {
                __threadfence();
                state[tile] = pack(PREFIX, exclusive + aggregate);
            }
        }
        if (lane == 0) exclusive_s = exclusive;
    }
    __syncthreads();
    unsigned run = exclusive_s + before_warp + incl - own;
    for (int i = 0; i < ITEMS; i++) {
        run += v[i];
        if (base + i < n) out[base + i] = run;
    }
}

static int bad = 0;

template <bool TICKETS>
static void check(const char *name, const unsigned *d_in, unsigned *d_out, int n,
                  const std::vector<unsigned> &ref)
{
    int tiles = (n + TILE - 1) / TILE;
    unsigned long long *state;
    unsigned *ticket;
    cudaMalloc(&state, tiles * sizeof(unsigned long long));
    cudaMalloc(&ticket, sizeof(unsigned));
    cudaMemset(state, 0, tiles * sizeof(unsigned long long));
    cudaMemset(ticket, 0, sizeof(unsigned));
    cudaMemset(d_out, 0, n * sizeof(unsigned));
    scan<TICKETS><<<tiles, THREADS>>>(d_in, d_out, n, state, ticket);
    cudaError_t e = cudaDeviceSynchronize();
    std::vector<unsigned> got(n);
    cudaMemcpy(got.data(), d_out, n * sizeof(unsigned), cudaMemcpyDeviceToHost);
    int first = -1;
    for (int i = 0; i < n && first < 0; i++)
        if (got[i] != ref[i]) first = i;
    if (e != cudaSuccess || first >= 0) {
        printf("%s: %s, first wrong element %d of %d\n", name, cudaGetErrorName(e), first, n);
        bad++;
    } else {
        printf("%s: %d tiles scanned\n", name, tiles);
    }
    cudaFree(state);
    cudaFree(ticket);
}

int main(int argc, char **argv)
{
    alarm(120);  // a wait that never ends kills the program (SIGALRM), not the test machine
    int n = argc > 1 ? atoi(argv[1]) : (3 << 20 | 123);
    std::vector<unsigned> h(n), ref(n);
    unsigned s = 12345, run = 0;
    for (int i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        h[i] = s >> 8;
        ref[i] = run += h[i];
    }
    unsigned *d_in, *d_out;
    cudaMalloc(&d_in, n * sizeof(unsigned));
    cudaMalloc(&d_out, n * sizeof(unsigned));
    cudaMemcpy(d_in, h.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice);
    check<false>("static", d_in, d_out, n, ref);
    check<true>("tickets", d_in, d_out, n, ref);
    printf(bad ? "FAIL\n" : "PASS\n");
    return bad ? 1 : 0;
}
