// The second translation unit of rdc_shared_a.cu.
template <int N> __device__ float stage_b(const float* in, int i) {
    __shared__ float scratch[N];  // 24 KiB, reached from kernel_ab only
    scratch[i] = 3.0f * in[i];
    __syncthreads();
    return scratch[i];
}
template __device__ float stage_b<6144>(const float*, int);

template <int N> __global__ void kernel_b(const float* in, float* out) {
    __shared__ float big[N];  // 44 KiB
    int t = threadIdx.x;
    for (int i = t; i < N; i += blockDim.x) big[i] = in[i] + 1.0f;
    __syncthreads();
    out[t] = big[N - 1 - t];
}
template __global__ void kernel_b<11264>(const float*, float*);
