// A vector load whose destinations differ in kind (issue 8, cuda-samples
// segmentationTreeThrust, CUB's scan-by-key): nvcc loads a pair from shared memory with
// one `ld.shared.v2.u32 {%a, %b}` and reuses %b as a loop-carried accumulator, so %b
// varies between lanes while %a, from a uniform address, would not. cuport refused the
// kernel ("internal: uniform register written in vector mode").
#include <cstdio>

__global__ void pair_sum(const int* in, int* out, int n) {
    __shared__ int2 s;
    if (threadIdx.x == 0) s = make_int2(in[0], in[1]);
    __syncthreads();
    int2 p = s;
    int acc = p.y;
    for (int i = threadIdx.x; i < n; i += 32) acc += in[i];
    out[threadIdx.x] = p.x + acc;
}

int main() {
    const int n = 50;
    int *in, *out, h[64], r[32];
    for (int i = 0; i < 64; ++i) h[i] = i * 3 + 1;
    if (cudaMalloc(&in, sizeof h) || cudaMalloc(&out, sizeof r)) return 2;
    cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice);
    pair_sum<<<1, 32>>>(in, out, n);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        printf("launch: %s\n", cudaGetErrorName(e));
        return 1;
    }
    cudaMemcpy(r, out, sizeof r, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int t = 0; t < 32; ++t) {
        int want = h[0] + h[1];
        for (int i = t; i < n; i += 32) want += h[i];
        bad += r[t] != want;
    }
    puts(bad ? "FAIL" : "PASS");
    return bad != 0;
}
