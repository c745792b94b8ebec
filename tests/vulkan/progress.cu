// Loops that read what other threads of the block wrote, for test_progress.py.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// threadFenceReduction's reduceBlock (cuda-samples): thread 0 sums the warps' partial sums
// from volatile shared memory; its loop runs blockDim.x / 32 trips whatever they hold
extern "C" __global__ void block_total(const float* in, float* out) {
    extern __shared__ float smem[];
    volatile float* sdata = smem;
    cg::thread_block cta = cg::this_thread_block();
    cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
    unsigned tid = threadIdx.x;
    float beta = in[blockIdx.x * blockDim.x + tid];
    sdata[tid] = beta;
    cg::sync(tile32);
    for (int i = 16; i > 0; i >>= 1) {
        if ((tid & 31) < i) {
            beta += sdata[tid + i];
            sdata[tid] = beta;
        }
        cg::sync(tile32);
    }
    cg::sync(cta);
    if (cta.thread_rank() == 0) {
        beta = 0;
        for (int i = 0; i < blockDim.x; i += 32) beta += sdata[i];
        sdata[0] = beta;
    }
    cg::sync(cta);
    if (tid == 1) out[blockIdx.x] = sdata[0];
}

// thread 0 waits for thread 32 to raise a flag in shared memory, which it does in a branch
// of its own: a loop whose trips depend on what another thread writes meanwhile (refused
// where a workgroup runs in lock step: the branch that waits would run first, for ever)
extern "C" __global__ void wait_for_flag(int* out) {
    __shared__ volatile int flag;
    if (threadIdx.x == 0) flag = 0;
    __syncthreads();
    if (threadIdx.x == 0) {
        while (flag == 0) {}
        out[0] = flag;
    } else if (threadIdx.x == 32) {
        flag = 7;
    }
    out[1 + threadIdx.x] = threadIdx.x;
}
