// -rdc regression (issue 8): every kernel of a relocatable program lands in one linked
// PTX module, so module-scope __shared__ arrays of unrelated kernels sit side by side.
// Each kernel must count only the shared memory its own call graph names, as ptxas does.
// Static __shared__ arrays of template kernels are what nvcc puts at module scope (as
// `.weak .shared`), as Thrust's and CUB's are.
#include <cstdio>
#include <cuda_runtime.h>

template <int N> __device__ float stage_b(const float* in, int i);  // rdc_shared_b.cu: 24 KiB
extern template __device__ float stage_b<6144>(const float*, int);

template <int N> __global__ void kernel_a(const float* in, float* out) {
    __shared__ float tile[N];  // 40 KiB
    int t = threadIdx.x;
    for (int i = t; i < N; i += blockDim.x) tile[i] = in[i] * 2.0f;
    __syncthreads();
    out[t] = tile[N - 1 - t];
}

template <int N> __global__ void kernel_ab(const float* in, float* out) {
    __shared__ float part[N];  // 16 KiB, plus stage_b's 24 KiB
    int t = threadIdx.x;
    part[t] = in[t];
    __syncthreads();
    out[t] = part[(t + 1) % blockDim.x] + stage_b<6144>(in, t);
}

template <int N> __global__ void kernel_b(const float* in, float* out);  // rdc_shared_b.cu: 44 KiB
extern template __global__ void kernel_b<11264>(const float*, float*);

static int attrs(const void* f, const char* name) {
    cudaFuncAttributes a;
    if (cudaFuncGetAttributes(&a, f) != cudaSuccess) return 1;
    printf("%s shared %zu\n", name, a.sharedSizeBytes);
    return 0;
}

int main() {
    float *in, *out;
    if (cudaMalloc(&in, 16384 * sizeof(float)) || cudaMalloc(&out, 3 * 256 * sizeof(float))) return 2;
    float h[16384];
    for (int i = 0; i < 16384; ++i) h[i] = (float)i;
    cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice);
    if (attrs((const void*)kernel_a<10240>, "kernel_a") || attrs((const void*)kernel_ab<4096>, "kernel_ab") ||
        attrs((const void*)kernel_b<11264>, "kernel_b")) return 2;
    kernel_a<10240><<<1, 256>>>(in, out);
    kernel_ab<4096><<<1, 256>>>(in, out + 256);
    kernel_b<11264><<<1, 256>>>(in, out + 512);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) { printf("launch: %s\n", cudaGetErrorString(e)); return 2; }
    float r[768];
    cudaMemcpy(r, out, sizeof r, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int t = 0; t < 256; ++t) {
        bad += r[t] != 2.0f * (10239 - t);
        bad += r[256 + t] != (float)((t + 1) % 256) + 3.0f * t;
        bad += r[512 + t] != (float)(11263 - t) + 1.0f;
    }
    puts(bad ? "FAIL" : "PASS");
    return bad != 0;
}
