// L2 persistence and access-policy windows (issue 8, cuda-samples simpleAttributes):
// the device reports an L2 and a persisting-L2 size, and the window is accepted as
// a stream attribute, a launch attribute and a kernel-node attribute, read back as
// set; a window with a hit ratio over 1 is refused as on the GPU.
#include <cstdio>
#include <cuda_runtime.h>

#define CHECK(call)                                                                \
    do {                                                                           \
        cudaError_t e_ = (call);                                                   \
        if (e_ != cudaSuccess) {                                                   \
            printf("%s: %s\n", #call, cudaGetErrorName(e_));                       \
            return 2;                                                              \
        }                                                                          \
    } while (0)

__global__ void scale(int* data, int n, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] *= k;
}

int main() {
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    int bad = 0;
    if (p.l2CacheSize <= 0) { puts("l2CacheSize is 0"); bad++; }
    if (p.persistingL2CacheMaxSize <= 0 || p.persistingL2CacheMaxSize > p.l2CacheSize) {
        printf("persistingL2CacheMaxSize %d (L2 %d)\n", p.persistingL2CacheMaxSize, p.l2CacheSize);
        bad++;
    }
    if (p.accessPolicyMaxWindowSize <= 0) { puts("accessPolicyMaxWindowSize is 0"); bad++; }
    CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, p.persistingL2CacheMaxSize));
    size_t limit = 0;
    CHECK(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
    if (limit == 0 || limit > (size_t)p.persistingL2CacheMaxSize) { printf("limit %zu\n", limit); bad++; }

    const int n = 1 << 16;
    int* d;
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    int h[n];
    for (int i = 0; i < n; ++i) h[i] = i;
    CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));

    cudaStreamAttrValue v = {};
    v.accessPolicyWindow.base_ptr = d;
    v.accessPolicyWindow.num_bytes = n * sizeof(int);
    v.accessPolicyWindow.hitRatio = 0.6f;
    v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    CHECK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v));
    cudaStreamAttrValue got = {};
    CHECK(cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &got));
    if (got.accessPolicyWindow.base_ptr != d || got.accessPolicyWindow.num_bytes != n * sizeof(int) ||
        got.accessPolicyWindow.hitRatio != 0.6f ||
        got.accessPolicyWindow.hitProp != cudaAccessPropertyPersisting ||
        got.accessPolicyWindow.missProp != cudaAccessPropertyStreaming) {
        puts("stream window read back differs");
        bad++;
    }
    cudaStreamAttrValue wrong = v;
    wrong.accessPolicyWindow.hitRatio = 1.5f;
    cudaError_t e = cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &wrong);
    printf("hitRatio 1.5: %s\n", cudaGetErrorName(e));
    cudaGetLastError();
    scale<<<n / 256, 256, 0, s>>>(d, n, 3);
    CHECK(cudaCtxResetPersistingL2Cache());

    // the window as a launch attribute
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeAccessPolicyWindow;
    attr.val.accessPolicyWindow = v.accessPolicyWindow;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(n / 256);
    cfg.blockDim = dim3(256);
    cfg.stream = s;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    CHECK(cudaLaunchKernelEx(&cfg, scale, d, n, 5));

    // and as a kernel-node attribute of a captured graph
    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    scale<<<n / 256, 256, 0, s>>>(d, n, 7);
    CHECK(cudaStreamEndCapture(s, &g));
    cudaGraphNode_t nodes[1];
    size_t count = 1;
    CHECK(cudaGraphGetNodes(g, nodes, &count));
    cudaKernelNodeAttrValue kv = {};
    kv.accessPolicyWindow = v.accessPolicyWindow;
    CHECK(cudaGraphKernelNodeSetAttribute(nodes[0], cudaKernelNodeAttributeAccessPolicyWindow, &kv));
    cudaKernelNodeAttrValue kgot = {};
    CHECK(cudaGraphKernelNodeGetAttribute(nodes[0], cudaKernelNodeAttributeAccessPolicyWindow, &kgot));
    if (kgot.accessPolicyWindow.num_bytes != n * sizeof(int) || kgot.accessPolicyWindow.hitRatio != 0.6f) {
        puts("kernel node window read back differs");
        bad++;
    }
    cudaGraphExec_t ge;
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    CHECK(cudaGraphLaunch(ge, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) bad += h[i] != i * 105;
    puts(bad ? "FAIL" : "PASS");
    return bad != 0;
}
