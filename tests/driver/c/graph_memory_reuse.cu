// Graph memory reuses a virtual address within a graph (issue 8, cuda-samples
// graphMemoryFootprint): an allocation made after the free of an earlier one of the
// same size gets its address; one whose lifetime overlaps gets another. The graph's
// kernels then use both buffers.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void iota(int* p, int n, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = i * k;
}
__global__ void sum_into(const int* p, int n, int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, p[i]);
}

static cudaGraphNode_t kernel(cudaGraph_t g, cudaGraphNode_t dep, void* fn, void** args, int n) {
    cudaKernelNodeParams k = {};
    k.func = fn;
    k.gridDim = dim3((n + 255) / 256);
    k.blockDim = dim3(256);
    k.kernelParams = args;
    cudaGraphNode_t node;
    if (cudaGraphAddKernelNode(&node, g, &dep, 1, &k) != cudaSuccess) return nullptr;
    return node;
}

int main() {
    const int n = 1 << 12;
    int* out;
    if (cudaMalloc(&out, sizeof(int)) || cudaMemset(out, 0, sizeof(int))) return 2;
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaMemAllocNodeParams ap = {};
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location.type = cudaMemLocationTypeDevice;
    ap.poolProps.location.id = 0;
    ap.bytesize = n * sizeof(int);

    cudaGraphNode_t alloc_a, free_a, alloc_b, free_b, alloc_c;
    if (cudaGraphAddMemAllocNode(&alloc_a, g, nullptr, 0, &ap)) return 2;
    int* a = (int*)ap.dptr;
    int k1 = 1, k2 = 3, nn = n;
    void* fill_a[] = {&a, &nn, &k1};
    void* sum_a[] = {&a, &nn, &out};
    cudaGraphNode_t t = kernel(g, kernel(g, alloc_a, (void*)iota, fill_a, n), (void*)sum_into, sum_a, n);
    if (cudaGraphAddMemFreeNode(&free_a, g, &t, 1, a)) return 2;
    // lives while a does: its own address
    if (cudaGraphAddMemAllocNode(&alloc_c, g, &alloc_a, 1, &ap)) return 2;
    int* c = (int*)ap.dptr;
    // after a's free: a's address
    cudaGraphNode_t after[] = {free_a, alloc_c};
    if (cudaGraphAddMemAllocNode(&alloc_b, g, after, 2, &ap)) return 2;
    int* b = (int*)ap.dptr;
    void* fill_b[] = {&b, &nn, &k2};
    void* sum_b[] = {&b, &nn, &out};
    t = kernel(g, kernel(g, alloc_b, (void*)iota, fill_b, n), (void*)sum_into, sum_b, n);
    if (cudaGraphAddMemFreeNode(&free_b, g, &t, 1, b)) return 2;
    cudaGraphNode_t free_c;
    if (cudaGraphAddMemFreeNode(&free_c, g, &free_b, 1, c)) return 2;
    printf("b reuses a's address: %s\n", a == b ? "yes" : "no");
    printf("c has its own: %s\n", c != a && c != b ? "yes" : "no");

    cudaGraphExec_t x;
    if (cudaGraphInstantiate(&x, g, 0)) return 2;
    for (int i = 0; i < 2; ++i)
        if (cudaGraphLaunch(x, 0)) return 2;
    if (cudaDeviceSynchronize()) return 2;
    int h;
    cudaMemcpy(&h, out, sizeof h, cudaMemcpyDeviceToHost);
    long long one = (long long)n * (n - 1) / 2;
    int want = (int)(2 * (one + 3 * one));
    puts(h == want ? "PASS" : "FAIL");
    return h != want;
}
