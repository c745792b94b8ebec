// Stream-ordered allocation: cudaMallocAsync/cudaFreeAsync on two streams in a loop
// (buffers used by kernels queued after the allocation, freed after the kernels that
// use them), a pool of its own with attributes (release threshold, used-memory figures
// and their high-water mark, reset), cudaDeviceGetDefaultMemPool/SetMemPool, and a
// stream capture of allocate-compute-free that becomes graph memory nodes, launched
// three times. One PASS/FAIL line.
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

__global__ void fill(int* p, int n, int v) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] = v + i; }
__global__ void add(const int* a, const int* b, int* out, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = a[i] + b[i]; }

static int failures = 0;
#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("line %d: %s: %s\n", __LINE__, #x, cudaGetErrorString(e_)); failures++; } } while (0)
#define EXPECT(c) do { if (!(c)) { printf("line %d: %s\n", __LINE__, #c); failures++; } } while (0)

int main()
{
    int supported = 0;
    CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0));
    EXPECT(supported == 1);
    const int n = 10000;
    std::vector<int> host(n);
    int* result;
    CHECK(cudaMalloc(&result, n * sizeof(int)));
    cudaStream_t s[2];
    for (auto& x : s) CHECK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));

    // 1. a loop of allocate / compute / free on two streams
    long long total = 0;
    for (int it = 0; it < 8; it++) {
        cudaStream_t st = s[it % 2];
        int *a, *b, *c;
        CHECK(cudaMallocAsync(&a, n * sizeof(int), st));
        CHECK(cudaMallocAsync(&b, n * sizeof(int), st));
        CHECK(cudaMallocAsync(&c, n * sizeof(int), st));
        fill<<<(n + 255) / 256, 256, 0, st>>>(a, n, it);
        fill<<<(n + 255) / 256, 256, 0, st>>>(b, n, 100 * it);
        add<<<(n + 255) / 256, 256, 0, st>>>(a, b, c, n);
        CHECK(cudaFreeAsync(a, st));
        CHECK(cudaFreeAsync(b, st));
        CHECK(cudaMemcpyAsync(host.data(), c, n * sizeof(int), cudaMemcpyDeviceToHost, st));
        CHECK(cudaFreeAsync(c, st));
        CHECK(cudaStreamSynchronize(st));
        for (int i = 0; i < n; i++) {
            if (host[i] != 101 * it + 2 * i) { printf("iteration %d: c[%d] = %d\n", it, i, host[i]); failures++; break; }
            total += host[i];
        }
    }

    // 2. a pool of our own, its attributes and figures
    cudaMemPool_t def = nullptr, cur = nullptr, pool = nullptr;
    CHECK(cudaDeviceGetDefaultMemPool(&def, 0));
    CHECK(cudaDeviceGetMemPool(&cur, 0));
    EXPECT(def == cur && def != nullptr);
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    CHECK(cudaMemPoolCreate(&pool, &props));
    unsigned long long threshold = 1 << 20, got = 0;
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &got));
    EXPECT(got == threshold);
    int* p1; int* p2;
    CHECK(cudaMallocFromPoolAsync(&p1, 1 << 16, pool, s[0]));
    CHECK(cudaMallocFromPoolAsync(&p2, 1 << 17, pool, s[0]));
    CHECK(cudaStreamSynchronize(s[0]));
    unsigned long long used = 0, high = 0;
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
    EXPECT(used >= (1 << 16) + (1 << 17));
    CHECK(cudaFreeAsync(p1, s[0]));
    CHECK(cudaStreamSynchronize(s[0]));
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high));
    EXPECT(used >= (1 << 17) && used < (1 << 16) + (1 << 17));
    EXPECT(high >= (1 << 16) + (1 << 17));
    unsigned long long zero = 0;
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high));
    EXPECT(high == used);
    CHECK(cudaDeviceSetMemPool(0, pool));
    CHECK(cudaDeviceGetMemPool(&cur, 0));
    EXPECT(cur == pool);
    int* p3;
    CHECK(cudaMallocAsync(&p3, 4096, s[1]));  // from the device's current pool: ours
    CHECK(cudaStreamSynchronize(s[1]));
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
    EXPECT(used >= (1 << 17) + 4096);
    CHECK(cudaFreeAsync(p3, s[1]));
    CHECK(cudaFreeAsync(p2, s[1]));
    CHECK(cudaStreamSynchronize(s[1]));
    CHECK(cudaDeviceSetMemPool(0, def));
    CHECK(cudaMemPoolTrimTo(pool, 0));
    CHECK(cudaMemPoolDestroy(pool));

    // 3. captured into a graph: graph memory nodes
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CHECK(cudaStreamBeginCapture(s[0], cudaStreamCaptureModeGlobal));
    int* t;
    cudaMallocAsync(&t, n * sizeof(int), s[0]);
    fill<<<(n + 255) / 256, 256, 0, s[0]>>>(t, n, 7);
    add<<<(n + 255) / 256, 256, 0, s[0]>>>(t, t, result, n);
    cudaFreeAsync(t, s[0]);
    CHECK(cudaStreamEndCapture(s[0], &g));
    size_t count = 0;
    CHECK(cudaGraphGetNodes(g, nullptr, &count));
    EXPECT(count == 4);
    std::vector<cudaGraphNode_t> nodes(count);
    CHECK(cudaGraphGetNodes(g, nodes.data(), &count));
    int allocs = 0, frees = 0;
    for (auto nd : nodes) {
        cudaGraphNodeType ty;
        CHECK(cudaGraphNodeGetType(nd, &ty));
        allocs += ty == cudaGraphNodeTypeMemAlloc;
        frees += ty == cudaGraphNodeTypeMemFree;
    }
    EXPECT(allocs == 1 && frees == 1);
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    for (int r = 0; r < 3; r++) CHECK(cudaGraphLaunch(ge, s[0]));
    CHECK(cudaStreamSynchronize(s[0]));
    CHECK(cudaMemcpy(host.data(), result, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (host[i] != 2 * (7 + i)) { printf("graph: result[%d] = %d\n", i, host[i]); failures++; break; }
    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));

    printf("8 rounds (sum %lld), pool figures, graph of %zu nodes\n", total, count);
    printf(failures ? "FAIL\n" : "PASS\n");
    return failures ? 1 : 0;
}
