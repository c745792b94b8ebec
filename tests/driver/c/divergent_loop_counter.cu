// A loop whose counter is the same in every running lane but whose exit is divergent
// (a per-thread break), the counter widened to 64 bits inside the loop: the CPU lane-forms
// pass gave the widened value a form whose source it does not keep (differential d07_k030:
// "internal: the lane form of %rd47 does not hold here (cvt.u64.u32 ...)").
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

__global__ void __launch_bounds__(1024) smallest(const uint64_t* in, const uint16_t* keys,
                                                 uint64_t* out, uint16_t stop) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    uint64_t m = in[t];
    uint16_t k = keys[t];
    for (unsigned i = 0; i < 3u; ++i) {
        m = m < (uint64_t)i ? m : (uint64_t)i;
        if (k == stop) break;
    }
    out[t] = m + ((uint64_t)k << 32);
}

int main() {
    const int n = 256;
    uint64_t h_in[n], h_out[n];
    uint16_t h_keys[n];
    for (int i = 0; i < n; ++i) {
        h_in[i] = (i % 5 == 0) ? 0 : 1000 + i;
        h_keys[i] = (uint16_t)(i % 7);
    }
    uint64_t *d_in, *d_out;
    uint16_t* d_keys;
    cudaMalloc(&d_in, sizeof h_in);
    cudaMalloc(&d_out, sizeof h_out);
    cudaMalloc(&d_keys, sizeof h_keys);
    cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice);
    cudaMemcpy(d_keys, h_keys, sizeof h_keys, cudaMemcpyHostToDevice);
    smallest<<<n / 64, 64>>>(d_in, d_keys, d_out, 3);
    cudaError_t err = cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost);
    if (err != cudaSuccess) {
        printf("FAIL: %s\n", cudaGetErrorString(err));
        return 1;
    }
    for (int i = 0; i < n; ++i) {
        uint64_t m = h_in[i];
        for (unsigned j = 0; j < 3u; ++j) {
            m = m < j ? m : j;
            if (h_keys[i] == 3) break;
        }
        uint64_t want = m + ((uint64_t)h_keys[i] << 32);
        if (h_out[i] != want) {
            printf("FAIL: out[%d] = %llu, expected %llu\n", i, (unsigned long long)h_out[i],
                   (unsigned long long)want);
            return 1;
        }
    }
    printf("PASS\n");
    return 0;
}
