// graphs: CUDA graphs built explicitly (memcpy, memset, kernel, host and child graph nodes
// with dependencies) and by stream capture of a fork/join pipeline over three streams.
// Each executable graph is instantiated once and launched many times, its parameters
// changed in place (cudaGraphExecKernelNodeSetParams, cudaGraphExecMemsetNodeSetParams)
// or taken from a re-captured graph (cudaGraphExecUpdate); a capture that breaks the
// rules (synchronising a capturing stream, cudaMalloc in global mode, an unjoined fork)
// fails the way the CUDA documentation says.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                           \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "CUDA error: %s failed at %s:%d: %s\n", #call,    \
                    __FILE__, __LINE__, cudaGetErrorString(err_));            \
            exit(2);                                                          \
        }                                                                     \
    } while (0)

static int failures = 0;
#define EXPECT(cond, ...)                                                     \
    do {                                                                      \
        if (!(cond)) {                                                        \
            if (failures++ < 10) {                                            \
                printf("FAIL: line %d: ", __LINE__);                          \
                printf(__VA_ARGS__);                                          \
                printf("\n");                                                 \
            }                                                                 \
        }                                                                     \
    } while (0)

typedef unsigned long long u64;

__global__ void scale(const int* in, int* out, int factor, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * factor;
}
__global__ void offset(const int* in, int* out, int add, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] + add;
}
__global__ void square(const int* in, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * in[i];
}
__global__ void combine(const int* x, const int* y, int* out, u64* acc, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = x[i] + y[i];
        atomicAdd(acc, (u64)(long long)out[i]);
    }
}
__global__ void axpy(int* y, const int* x, int a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}

const int N = 1000, BLOCK = 128, GRID = (N + BLOCK - 1) / BLOCK;

struct HostLog {
    const u64* acc;  // pinned host memory a memcpy node fills before the host node runs
    u64 seen[8];
    int calls;
};
void CUDART_CB log_acc(void* p) {
    HostLog* log = (HostLog*)p;
    if (log->calls < 8) log->seen[log->calls] = *log->acc;
    log->calls++;
}

static int input(int i, int round) { return (i * 7 + 3) % 101 - 50 + round; }

static cudaKernelNodeParams kernel_params(void* func, void** args) {
    cudaKernelNodeParams p = {};
    p.func = func;
    p.gridDim = dim3(GRID);
    p.blockDim = dim3(BLOCK);
    p.sharedMemBytes = 0;
    p.kernelParams = args;
    p.extra = NULL;
    return p;
}

static size_t count_nodes(cudaGraph_t g) {
    size_t n = 0;
    CHECK(cudaGraphGetNodes(g, NULL, &n));
    return n;
}
static size_t count_roots(cudaGraph_t g) {
    size_t n = 0;
    CHECK(cudaGraphGetRootNodes(g, NULL, &n));
    return n;
}
static size_t count_edges(cudaGraph_t g) {
    size_t n = 0;
    CHECK(cudaGraphGetEdges(g, NULL, NULL, NULL, &n));
    return n;
}

struct Buffers {
    int *in, *x, *y, *z, *out;
    u64* acc;
    int *h_in, *h_out;
    u64* h_acc;
};

// ---- 1. an explicit graph, instantiated once, launched with changed parameters ----------
static void explicit_graph(const Buffers& b, cudaStream_t s) {
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t m_in, set_acc, k_scale, k_offset, k_combine, m_out, m_acc, host;
    CHECK(cudaGraphAddMemcpyNode1D(&m_in, g, NULL, 0, b.in, b.h_in, N * sizeof(int),
                                   cudaMemcpyHostToDevice));
    cudaMemsetParams mp = {};
    mp.dst = b.acc;
    mp.value = 0;
    mp.elementSize = 4;
    mp.width = 2;  // the two 32-bit halves of the 64-bit accumulator
    mp.height = 1;
    CHECK(cudaGraphAddMemsetNode(&set_acc, g, NULL, 0, &mp));
    int factor = 1, add = 0, n = N;
    void* scale_args[] = {(void*)&b.in, (void*)&b.x, &factor, &n};
    void* offset_args[] = {(void*)&b.in, (void*)&b.y, &add, &n};
    void* combine_args[] = {(void*)&b.x, (void*)&b.y, (void*)&b.out, (void*)&b.acc, &n};
    cudaKernelNodeParams kp = kernel_params((void*)scale, scale_args);
    CHECK(cudaGraphAddKernelNode(&k_scale, g, &m_in, 1, &kp));
    kp = kernel_params((void*)offset, offset_args);
    CHECK(cudaGraphAddKernelNode(&k_offset, g, &m_in, 1, &kp));
    cudaGraphNode_t before_combine[] = {k_scale, k_offset};
    kp = kernel_params((void*)combine, combine_args);
    CHECK(cudaGraphAddKernelNode(&k_combine, g, before_combine, 2, &kp));
    CHECK(cudaGraphAddDependencies(g, &set_acc, &k_combine, NULL, 1));
    CHECK(cudaGraphAddMemcpyNode1D(&m_out, g, &k_combine, 1, b.h_out, b.out, N * sizeof(int),
                                   cudaMemcpyDeviceToHost));
    CHECK(cudaGraphAddMemcpyNode1D(&m_acc, g, &k_combine, 1, b.h_acc, b.acc, sizeof(u64),
                                   cudaMemcpyDeviceToHost));
    static HostLog log;
    log.acc = b.h_acc;
    log.calls = 0;
    cudaHostNodeParams hp = {log_acc, &log};
    cudaGraphNode_t before_host[] = {m_out, m_acc};
    CHECK(cudaGraphAddHostNode(&host, g, before_host, 2, &hp));

    // the structure, as the graph reports it
    EXPECT(count_nodes(g) == 8, "explicit graph has %zu nodes, expected 8", count_nodes(g));
    EXPECT(count_roots(g) == 2, "explicit graph has %zu root nodes, expected 2", count_roots(g));
    EXPECT(count_edges(g) == 9, "explicit graph has %zu edges, expected 9", count_edges(g));
    cudaGraphNodeType type;
    CHECK(cudaGraphNodeGetType(k_combine, &type));
    EXPECT(type == cudaGraphNodeTypeKernel, "combine node type %d", (int)type);
    CHECK(cudaGraphNodeGetType(set_acc, &type));
    EXPECT(type == cudaGraphNodeTypeMemset, "memset node type %d", (int)type);
    CHECK(cudaGraphNodeGetType(host, &type));
    EXPECT(type == cudaGraphNodeTypeHost, "host node type %d", (int)type);
    size_t deps = 0;
    CHECK(cudaGraphNodeGetDependencies(k_combine, NULL, NULL, &deps));
    EXPECT(deps == 3, "combine has %zu dependencies, expected 3", deps);
    size_t dependents = 0;
    CHECK(cudaGraphNodeGetDependentNodes(m_in, NULL, NULL, &dependents));
    EXPECT(dependents == 2, "the input copy has %zu dependents, expected 2", dependents);
    cudaKernelNodeParams got = {};
    CHECK(cudaGraphKernelNodeGetParams(k_offset, &got));
    EXPECT(got.gridDim.x == GRID && got.blockDim.x == BLOCK && got.sharedMemBytes == 0,
           "kernel node params: grid %u block %u", got.gridDim.x, got.blockDim.x);
    EXPECT(got.kernelParams && *(int*)got.kernelParams[3] == N,
           "kernel node params: n reads back as %d", got.kernelParams ? *(int*)got.kernelParams[3] : -1);

    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    for (int round = 0; round < 5; ++round) {
        for (int i = 0; i < N; ++i) b.h_in[i] = input(i, round);  // the copy node reads it at launch
        factor = round + 2;
        add = 10 * round - 7;
        kp = kernel_params((void*)scale, scale_args);
        CHECK(cudaGraphExecKernelNodeSetParams(exec, k_scale, &kp));
        kp = kernel_params((void*)offset, offset_args);
        CHECK(cudaGraphExecKernelNodeSetParams(exec, k_offset, &kp));
        mp.value = round;  // both halves start at `round`
        CHECK(cudaGraphExecMemsetNodeSetParams(exec, set_acc, &mp));
        CHECK(cudaGraphLaunch(exec, s));
        CHECK(cudaStreamSynchronize(s));
        u64 want_acc = ((u64)round << 32) + (u64)round;
        int bad = 0;
        for (int i = 0; i < N; ++i) {
            int v = input(i, round);
            int want = v * factor + v + add;
            want_acc += (u64)(long long)want;
            if (b.h_out[i] != want && bad++ < 3)
                EXPECT(false, "explicit graph round %d: out[%d] = %d, expected %d", round, i,
                       b.h_out[i], want);
        }
        EXPECT(*b.h_acc == want_acc, "explicit graph round %d: acc %llu, expected %llu", round,
               *b.h_acc, want_acc);
        EXPECT(log.calls == round + 1 && log.seen[round] == want_acc,
               "host node round %d: %d calls, saw %llu", round, log.calls, log.seen[round]);
    }
    // the graph itself still has the parameters it was built with
    CHECK(cudaGraphKernelNodeGetParams(k_scale, &got));
    EXPECT(*(int*)got.kernelParams[2] == 1, "the graph's scale factor became %d",
           *(int*)got.kernelParams[2]);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));
}

// ---- 2. stream capture of a fork/join pipeline over three streams ---------------------
static cudaGraph_t capture_pipeline(const Buffers& b, cudaStream_t s[3], cudaEvent_t ev[3]) {
    CHECK(cudaStreamBeginCapture(s[0], cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus status;
    CHECK(cudaStreamIsCapturing(s[0], &status));
    EXPECT(status == cudaStreamCaptureStatusActive, "s0 capture status %d", (int)status);
    CHECK(cudaStreamIsCapturing(s[1], &status));
    EXPECT(status == cudaStreamCaptureStatusNone, "s1 capturing before the fork (%d)", (int)status);
    CHECK(cudaMemcpyAsync(b.in, b.h_in, N * sizeof(int), cudaMemcpyHostToDevice, s[0]));
    scale<<<GRID, BLOCK, 0, s[0]>>>(b.in, b.x, 3, N);
    CHECK(cudaEventRecord(ev[0], s[0]));  // fork
    CHECK(cudaStreamWaitEvent(s[1], ev[0], 0));
    CHECK(cudaStreamWaitEvent(s[2], ev[0], 0));
    CHECK(cudaStreamIsCapturing(s[1], &status));
    EXPECT(status == cudaStreamCaptureStatusActive, "s1 not capturing after the fork (%d)",
           (int)status);
    unsigned long long id0 = 0, id1 = 0;
    CHECK(cudaStreamGetCaptureInfo(s[0], &status, &id0, NULL, NULL, NULL, NULL));
    CHECK(cudaStreamGetCaptureInfo(s[1], &status, &id1, NULL, NULL, NULL, NULL));
    EXPECT(id0 == id1 && id0 != 0, "capture ids %llu and %llu", id0, id1);
    offset<<<GRID, BLOCK, 0, s[1]>>>(b.x, b.y, 5, N);
    CHECK(cudaMemsetAsync(b.acc, 0, sizeof(u64), s[2]));
    square<<<GRID, BLOCK, 0, s[2]>>>(b.x, b.z, N);
    CHECK(cudaEventRecord(ev[1], s[1]));  // join
    CHECK(cudaEventRecord(ev[2], s[2]));
    CHECK(cudaStreamWaitEvent(s[0], ev[1], 0));
    CHECK(cudaStreamWaitEvent(s[0], ev[2], 0));
    combine<<<GRID, BLOCK, 0, s[0]>>>(b.y, b.z, b.out, b.acc, N);
    CHECK(cudaMemcpyAsync(b.h_out, b.out, N * sizeof(int), cudaMemcpyDeviceToHost, s[0]));
    CHECK(cudaMemcpyAsync(b.h_acc, b.acc, sizeof(u64), cudaMemcpyDeviceToHost, s[0]));
    cudaGraph_t g;
    CHECK(cudaStreamEndCapture(s[0], &g));
    CHECK(cudaStreamIsCapturing(s[1], &status));
    EXPECT(status == cudaStreamCaptureStatusNone, "s1 still capturing after the end (%d)",
           (int)status);
    return g;
}

static bool pipeline_correct(const Buffers& b, int round, const char* what) {
    u64 want_acc = 0;
    int bad = 0;
    for (int i = 0; i < N; ++i) {
        int x = input(i, round) * 3;
        int want = (x + 5) + x * x;
        want_acc += (u64)(long long)want;
        if (b.h_out[i] != want && bad++ < 3)
            EXPECT(false, "%s round %d: out[%d] = %d, expected %d", what, round, i, b.h_out[i], want);
    }
    EXPECT(*b.h_acc == want_acc, "%s round %d: acc %llu, expected %llu", what, round, *b.h_acc,
           want_acc);
    return bad == 0 && *b.h_acc == want_acc;
}

static void captured_pipeline(const Buffers& b, cudaStream_t s[3], cudaEvent_t ev[3]) {
    cudaGraph_t g = capture_pipeline(b, s, ev);
    // memcpy, scale, offset, memset, square, combine, memcpy, memcpy; the first copy is the root
    EXPECT(count_nodes(g) == 8, "captured graph has %zu nodes, expected 8", count_nodes(g));
    EXPECT(count_roots(g) == 1, "captured graph has %zu roots, expected 1", count_roots(g));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < N; ++i) b.h_in[i] = input(i, round);
        CHECK(cudaGraphLaunch(exec, s[1]));  // any stream will do
        CHECK(cudaStreamSynchronize(s[1]));
        pipeline_correct(b, round, "captured pipeline");
    }

    // the same graph as a child of another one, after an empty node, before a host node
    cudaGraph_t parent;
    CHECK(cudaGraphCreate(&parent, 0));
    cudaGraphNode_t start, child, host;
    CHECK(cudaGraphAddEmptyNode(&start, parent, NULL, 0));
    CHECK(cudaGraphAddChildGraphNode(&child, parent, &start, 1, g));
    static HostLog log;
    log.acc = b.h_acc;
    log.calls = 0;
    cudaHostNodeParams hp = {log_acc, &log};
    CHECK(cudaGraphAddHostNode(&host, parent, &child, 1, &hp));
    CHECK(cudaGraphDestroy(g));  // the child node holds its own copy
    cudaGraphExec_t parent_exec;
    CHECK(cudaGraphInstantiate(&parent_exec, parent, 0));
    for (int i = 0; i < N; ++i) b.h_in[i] = input(i, 7);
    CHECK(cudaGraphLaunch(parent_exec, s[0]));
    CHECK(cudaStreamSynchronize(s[0]));
    if (pipeline_correct(b, 7, "child graph"))
        EXPECT(log.calls == 1 && log.seen[0] == *b.h_acc, "host node after the child graph: %d "
               "calls, saw %llu", log.calls, log.seen[0]);
    CHECK(cudaGraphExecDestroy(parent_exec));
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(parent));
}

// ---- 3. cudaGraphExecUpdate from re-captured graphs ---------------------------------------
static cudaGraph_t capture_axpy(cudaStream_t s, int* y, const int* x, int a, bool twice) {
    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    axpy<<<GRID, BLOCK, 0, s>>>(y, x, a, N);
    if (twice) axpy<<<GRID, BLOCK, 0, s>>>(y, x, a, N);
    CHECK(cudaStreamEndCapture(s, &g));
    return g;
}

static void exec_update(const Buffers& b, cudaStream_t s) {
    for (int i = 0; i < N; ++i) b.h_in[i] = i % 37 - 18;
    CHECK(cudaMemcpy(b.x, b.h_in, N * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(b.y, 0, N * sizeof(int)));
    cudaGraph_t g = capture_axpy(s, b.y, b.x, 1, false);
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    CHECK(cudaGraphDestroy(g));
    const int coefficients[] = {2, 5, -3, 11};
    int total = 0;
    for (int a : coefficients) {
        g = capture_axpy(s, b.y, b.x, a, false);
        cudaGraphExecUpdateResultInfo info;
        cudaError_t err = cudaGraphExecUpdate(exec, g, &info);
        EXPECT(err == cudaSuccess && info.result == cudaGraphExecUpdateSuccess,
               "cudaGraphExecUpdate with a = %d: %s, result %d", a, cudaGetErrorString(err),
               (int)info.result);
        CHECK(cudaGraphDestroy(g));
        CHECK(cudaGraphLaunch(exec, s));
        total += a;
    }
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpy(b.h_out, b.y, N * sizeof(int), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < N; ++i)
        if (b.h_out[i] != total * b.h_in[i] && bad++ < 3)
            EXPECT(false, "updated graph: y[%d] = %d, expected %d", i, b.h_out[i], total * b.h_in[i]);

    // a graph of another shape cannot update it: the caller re-instantiates
    g = capture_axpy(s, b.y, b.x, 1, true);
    cudaGraphExecUpdateResultInfo info;
    cudaError_t err = cudaGraphExecUpdate(exec, g, &info);
    EXPECT(err == cudaErrorGraphExecUpdateFailure &&
               info.result == cudaGraphExecUpdateErrorTopologyChanged,
           "update to another topology: %s, result %d", cudaGetErrorString(err), (int)info.result);
    (void)cudaGetLastError();
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpy(b.h_out, b.y, N * sizeof(int), cudaMemcpyDeviceToHost));
    bad = 0;
    for (int i = 0; i < N; ++i)
        if (b.h_out[i] != (total + 2) * b.h_in[i] && bad++ < 3)
            EXPECT(false, "re-instantiated graph: y[%d] = %d, expected %d", i, b.h_out[i],
                   (total + 2) * b.h_in[i]);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));
}

// ---- 4. what a capture does not allow ---------------------------------------------------
static void capture_errors(const Buffers& b, cudaStream_t s[3], cudaEvent_t ev[3]) {
    cudaGraph_t g = (cudaGraph_t)1;
    // synchronising a capturing stream fails and invalidates the capture
    CHECK(cudaStreamBeginCapture(s[0], cudaStreamCaptureModeGlobal));
    scale<<<GRID, BLOCK, 0, s[0]>>>(b.in, b.x, 2, N);
    cudaError_t err = cudaStreamSynchronize(s[0]);
    EXPECT(err == cudaErrorStreamCaptureUnsupported, "cudaStreamSynchronize while capturing: %s",
           cudaGetErrorString(err));
    cudaStreamCaptureStatus status;
    CHECK(cudaStreamIsCapturing(s[0], &status));
    EXPECT(status == cudaStreamCaptureStatusInvalidated, "status after the failed sync: %d",
           (int)status);
    err = cudaStreamEndCapture(s[0], &g);
    EXPECT(err == cudaErrorStreamCaptureInvalidated && g == NULL,
           "ending an invalidated capture: %s", cudaGetErrorString(err));
    (void)cudaGetLastError();

    // cudaMalloc is a potentially unsafe call: refused in global mode, allowed in relaxed mode
    int* extra = NULL;
    CHECK(cudaStreamBeginCapture(s[0], cudaStreamCaptureModeGlobal));
    err = cudaMalloc(&extra, 64);
    EXPECT(err == cudaErrorStreamCaptureUnsupported, "cudaMalloc in a global capture: %s",
           cudaGetErrorString(err));
    err = cudaStreamEndCapture(s[0], &g);
    EXPECT(err == cudaErrorStreamCaptureInvalidated, "ending after cudaMalloc: %s",
           cudaGetErrorString(err));
    (void)cudaGetLastError();
    CHECK(cudaStreamBeginCapture(s[0], cudaStreamCaptureModeRelaxed));
    CHECK(cudaMalloc(&extra, 64));
    scale<<<GRID, BLOCK, 0, s[0]>>>(b.in, b.x, 2, N);
    CHECK(cudaStreamEndCapture(s[0], &g));
    EXPECT(count_nodes(g) == 1, "relaxed capture has %zu nodes", count_nodes(g));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaFree(extra));

    // a fork that is not joined back
    CHECK(cudaStreamBeginCapture(s[0], cudaStreamCaptureModeGlobal));
    CHECK(cudaEventRecord(ev[0], s[0]));
    CHECK(cudaStreamWaitEvent(s[1], ev[0], 0));
    scale<<<GRID, BLOCK, 0, s[1]>>>(b.in, b.x, 2, N);
    err = cudaStreamEndCapture(s[0], &g);
    EXPECT(err == cudaErrorStreamCaptureUnjoined, "ending with an unjoined fork: %s",
           cudaGetErrorString(err));
    (void)cudaGetLastError();
}

int main() {
    Buffers b;
    CHECK(cudaMalloc(&b.in, N * sizeof(int)));
    CHECK(cudaMalloc(&b.x, N * sizeof(int)));
    CHECK(cudaMalloc(&b.y, N * sizeof(int)));
    CHECK(cudaMalloc(&b.z, N * sizeof(int)));
    CHECK(cudaMalloc(&b.out, N * sizeof(int)));
    CHECK(cudaMalloc(&b.acc, sizeof(u64)));
    CHECK(cudaMallocHost(&b.h_in, N * sizeof(int)));
    CHECK(cudaMallocHost(&b.h_out, N * sizeof(int)));
    CHECK(cudaMallocHost(&b.h_acc, sizeof(u64)));
    cudaStream_t s[3];
    cudaEvent_t ev[3];
    for (int i = 0; i < 3; ++i) {
        CHECK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
        CHECK(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming));
    }

    explicit_graph(b, s[0]);
    captured_pipeline(b, s, ev);
    exec_update(b, s[2]);
    capture_errors(b, s, ev);

    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < 3; ++i) {
        CHECK(cudaStreamDestroy(s[i]));
        CHECK(cudaEventDestroy(ev[i]));
    }
    CHECK(cudaFreeHost(b.h_in));
    CHECK(cudaFreeHost(b.h_out));
    CHECK(cudaFreeHost(b.h_acc));
    CHECK(cudaFree(b.in));
    CHECK(cudaFree(b.x));
    CHECK(cudaFree(b.y));
    CHECK(cudaFree(b.z));
    CHECK(cudaFree(b.out));
    CHECK(cudaFree(b.acc));
    if (failures) {
        printf("FAIL: %d checks failed\n", failures);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
