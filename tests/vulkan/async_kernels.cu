// Kernels for tests/vulkan/test_async_copy.py (nvcc -ptx -arch=sm_90 at test time): waits
// on cuda::barrier (mbarrier try_wait loops) in blocks of one 8-thread subgroup, and the
// per-thread cuda::pipeline (cp.async with commit/wait groups).
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#pragma nv_diag_suppress static_var_with_dynamic_init

// every thread writes its slot, arrive_and_wait, sums the slots; three phases, the last
// thread drops out after the first
extern "C" __global__ void phases(int* out) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    __shared__ int slot[8];
    int t = threadIdx.x;
    if (t == 0) init(&bar, blockDim.x);
    __syncthreads();
    int total = 0;
    for (int phase = 0; phase < 3; ++phase) {
        slot[t] = (phase + 1) * (t + 1);
        if (t == 7 && phase == 0) {
            bar.arrive_and_drop();
            break;
        }
        bar.arrive_and_wait();
        int sum = 0;
        for (int w = 0; w < 8; ++w) sum += slot[w];
        total += sum;
        bar.arrive_and_wait();
    }
    out[blockIdx.x * blockDim.x + t] = total;
}

// a bulk copy into shared memory completing on a barrier (cp.async.bulk + expect_tx)
extern "C" __global__ void bulk(const int* in, int* out) {
    __shared__ alignas(16) int s[64];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    if (threadIdx.x == 0) init(&bar, blockDim.x);
    __syncthreads();
    cuda::memcpy_async(s, in + blockIdx.x * 64, cuda::aligned_size_t<16>(sizeof(int) * 64), bar);
    bar.arrive_and_wait();
    for (int k = threadIdx.x; k < 64; k += blockDim.x) out[blockIdx.x * 64 + k] = s[63 - k] + 1;
}

// a per-thread two-stage pipeline: each thread copies its own 16-byte chunks ahead
extern "C" __global__ void staged(const float4* in, int n, float* out) {
    __shared__ alignas(16) float4 buf[2][64];
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    int t = threadIdx.x;
    float acc = 0.0f;
    pipe.producer_acquire();
    cuda::memcpy_async(&buf[0][t], &in[t], sizeof(float4), pipe);
    pipe.producer_commit();
    for (int i = 0; i < n; ++i) {
        if (i + 1 < n) {
            pipe.producer_acquire();
            cuda::memcpy_async(&buf[(i + 1) & 1][t], &in[(i + 1) * blockDim.x + t], sizeof(float4), pipe);
            pipe.producer_commit();
        }
        cuda::pipeline_consumer_wait_prior<1>(pipe);
        float4 v = buf[i & 1][t];
        acc += v.x + v.y + v.z + v.w;
        pipe.consumer_release();
    }
    out[t] = acc;
}
