// CUB's tile-status words (cub/agent/single_pass_scan_operators.cuh, the decoupled look-back
// of every Thrust/CUB scan): a tile's status and value are published with one vector store and
// read with one vector load (cub::detail::store_relaxed / load_relaxed, and the release /
// acquire forms on sm_70+), so a reader never sees a new status beside an old value. Block 0
// stores {k, k} for k = 1..rounds; every other block reads the word as often and counts the
// reads whose halves differ. On a GPU none do.
#include <cub/detail/strong_load.cuh>
#include <cub/detail/strong_store.cuh>

template <class W, bool Ordered>
__device__ void race(W* slot, int rounds, unsigned* torn) {
    using E = decltype(W{}.x);
    if (blockIdx.x == 0) {
        for (int k = 1; k <= rounds; k++) {
            W w{E(k), E(k)};
            if (Ordered) cub::detail::store_release(slot, w); else cub::detail::store_relaxed(slot, w);
        }
        return;
    }
    unsigned t = 0;
    for (int k = 0; k < rounds; k++) {
        W w = Ordered ? cub::detail::load_acquire(slot) : cub::detail::load_relaxed(slot);
        t += w.x != w.y;
    }
    atomicAdd(torn, t);
}

// uint2: the tile status of 4-byte values (int, float scans); ulonglong2: of 8-byte ones
extern "C" __global__ void race_u32x2(uint2* slot, int rounds, unsigned* torn) { race<uint2, false>(slot, rounds, torn); }
extern "C" __global__ void race_u64x2(ulonglong2* slot, int rounds, unsigned* torn) { race<ulonglong2, false>(slot, rounds, torn); }
extern "C" __global__ void race_u32x2_acq(uint2* slot, int rounds, unsigned* torn) { race<uint2, true>(slot, rounds, torn); }
extern "C" __global__ void race_u64x2_acq(ulonglong2* slot, int rounds, unsigned* torn) { race<ulonglong2, true>(slot, rounds, torn); }

// two halves of 4 bytes as inline PTX writes them (ld/st.relaxed.gpu.global.v2.u16): one
// access on a GPU as well
extern "C" __global__ void race_u16x2(unsigned* slot, int rounds, unsigned* torn) {
    if (blockIdx.x == 0) {
        for (int k = 1; k <= rounds; k++) {
            unsigned short e = (unsigned short)k;
            asm volatile("st.relaxed.gpu.global.v2.u16 [%0], {%1, %1};" :: "l"(slot), "h"(e) : "memory");
        }
        return;
    }
    unsigned t = 0;
    for (int k = 0; k < rounds; k++) {
        unsigned short x, y;
        asm volatile("ld.relaxed.gpu.global.v2.u16 {%0, %1}, [%2];" : "=h"(x), "=h"(y) : "l"(slot) : "memory");
        t += x != y;
    }
    atomicAdd(torn, t);
}

// volatile 16-byte loads in code part of the block skips (ld.volatile.global.v4.u32, as
// inline PTX writes it): no ordering, so on a driver that splits 16-byte accesses they go
// element by element
extern "C" __global__ void volatile_copy(const uint4* in, uint4* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && i % 3 != 0) {
        uint4 v;
        asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(in + i));
        out[i] = v;
    }
}
