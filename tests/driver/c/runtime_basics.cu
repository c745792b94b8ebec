#include <cstdio>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s failed: %s (%d)\n", #x, cudaGetErrorString(e), (int)e); return 1; } } while (0)
int main() {
    int n = 0; CK(cudaGetDeviceCount(&n)); printf("devices %d\n", n);
    cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
    printf("name %s cc %d.%d sms %d warp %d smem %zu\n", p.name, p.major, p.minor, p.multiProcessorCount, p.warpSize, p.sharedMemPerBlock);
    int *d; CK(cudaMalloc(&d, 1024 * sizeof(int)));
    int h[1024], g[1024]; for (int i = 0; i < 1024; i++) h[i] = i * 3;
    CK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(g, d, sizeof g, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 1024; i++) if (g[i] != h[i]) { printf("mismatch %d\n", i); return 1; }
    CK(cudaMemset(d, 0x7f, sizeof h));
    CK(cudaMemcpy(g, d, sizeof g, cudaMemcpyDeviceToHost));
    if (g[5] != 0x7f7f7f7f) { printf("memset wrong %x\n", g[5]); return 1; }
    cudaStream_t s; CK(cudaStreamCreate(&s));
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    CK(cudaEventRecord(a, s)); CK(cudaMemsetAsync(d, 0, sizeof h, s)); CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b)); float ms; CK(cudaEventElapsedTime(&ms, a, b));
    CK(cudaStreamDestroy(s)); CK(cudaFree(d)); CK(cudaDeviceSynchronize());
    printf("PASS\n");
    return 0;
}
