// Float atomics on shared memory that fits the device's workgroup memory (its Workgroup
// array of 32-bit words: no 64-bit shared variable): a histogram of f32 sums, as numba-cuda's
// cuda.atomic.add on a cuda.shared.array and CUDA's atomicAdd(&shared[i], x) make.
#define BINS 64

extern "C" __global__ void shared_float_sums(const unsigned* keys, int n, float* out) {
    __shared__ float sums[BINS];
    const int t = threadIdx.x;
    if (t < BINS) sums[t] = 0.0f;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&sums[keys[i] % BINS], 0.5f);
    __syncthreads();
    if (t < BINS) atomicAdd(&out[t], sums[t]);
}
