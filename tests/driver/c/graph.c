/* CUDA graphs and stream capture through cuport's libcuda.so.1, as a C client uses them.
 * `graph LIBRARY TEST PTX_FILE [DOT_FILE]`; the kernels (graph_kernels.cu) run on the real
 * CPU backend. Each test prints PASS or the checks that failed. */
#include "../../capi/c/harness.h"

#define API(X)                                                                                 \
    X(cuInit) X(cuCtxCreate) X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxSynchronize) X(cuMemAlloc) \
    X(cuMemFree) \
    X(cuMemAllocHost) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemsetD32) X(cuMemsetD32Async)      \
    X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuModuleLoad) X(cuModuleUnload)               \
    X(cuModuleGetFunction) X(cuLaunchKernel) X(cuLaunchHostFunc) X(cuStreamAddCallback)       \
    X(cuEventCreate) X(cuEventRecord) X(cuEventRecordWithFlags) X(cuEventQuery)               \
    X(cuEventSynchronize) X(cuEventElapsedTime) X(cuStreamCreate) X(cuStreamDestroy)          \
    X(cuStreamSynchronize) X(cuStreamQuery) X(cuStreamWaitEvent) X(cuGraphCreate)             \
    X(cuGraphDestroy) X(cuGraphClone) X(cuGraphNodeFindInClone) X(cuGraphAddKernelNode)      \
    X(cuGraphAddMemcpyNode) X(cuGraphAddMemsetNode) X(cuGraphAddHostNode)                     \
    X(cuGraphAddChildGraphNode) X(cuGraphAddEmptyNode) X(cuGraphAddEventRecordNode)           \
    X(cuGraphAddEventWaitNode) X(cuGraphAddMemAllocNode) X(cuGraphAddMemFreeNode)             \
    X(cuGraphAddNode) X(cuGraphNodeSetParams) X(cuGraphDestroyNode) X(cuGraphAddDependencies) \
    X(cuGraphRemoveDependencies) X(cuGraphGetNodes) X(cuGraphGetRootNodes) X(cuGraphGetEdges) \
    X(cuGraphNodeGetType) X(cuGraphNodeGetDependencies) X(cuGraphNodeGetDependentNodes)       \
    X(cuGraphKernelNodeGetParams) X(cuGraphKernelNodeSetParams) X(cuGraphMemcpyNodeGetParams) \
    X(cuGraphMemsetNodeGetParams) X(cuGraphHostNodeGetParams) X(cuGraphChildGraphNodeGetGraph) \
    X(cuGraphEventRecordNodeGetEvent) X(cuGraphMemAllocNodeGetParams)                         \
    X(cuGraphMemFreeNodeGetParams) X(cuGraphInstantiate) X(cuGraphInstantiateWithParams)      \
    X(cuGraphExecDestroy) X(cuGraphLaunch) X(cuGraphUpload) X(cuGraphExecUpdate)              \
    X(cuGraphExecKernelNodeSetParams) X(cuGraphExecMemsetNodeSetParams)                       \
    X(cuGraphExecMemcpyNodeSetParams)                                                          \
    X(cuGraphExecHostNodeSetParams) X(cuGraphExecEventRecordNodeSetEvent)                     \
    X(cuGraphNodeSetEnabled) X(cuGraphNodeGetEnabled) X(cuGraphExecGetFlags)                  \
    X(cuGraphDebugDotPrint) X(cuGraphConditionalHandleCreate) X(cuDeviceGetGraphMemAttribute) \
    X(cuUserObjectCreate) X(cuUserObjectRetain) X(cuUserObjectRelease)                        \
    X(cuGraphRetainUserObject) X(cuGraphReleaseUserObject) X(cuStreamBeginCapture)            \
    X(cuStreamBeginCaptureToGraph) X(cuStreamEndCapture) X(cuStreamIsCapturing)               \
    X(cuStreamGetCaptureInfo) X(cuStreamUpdateCaptureDependencies)                            \
    X(cuThreadExchangeStreamCaptureMode) X(cuMemcpy2DAsync) X(cuGraphKernelNodeSetAttribute)    \
    X(cuGraphKernelNodeGetAttribute)

#define DECL(fn) static __typeof__(fn) *p_##fn;
API(DECL)

/* older ABI variants, called by their exported names */
static CUresult (*p_instantiate_v2)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);
static CUresult (*p_add_kernel_v1)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                   const CUDA_KERNEL_NODE_PARAMS_v1 *);
static CUresult (*p_get_edges_v1)(CUgraph, CUgraphNode *, CUgraphNode *, size_t *);
static CUresult (*p_exec_update_v1)(CUgraphExec, CUgraph, CUgraphNode *, CUgraphExecUpdateResult *);
static CUresult (*p_capture_info_v1)(CUstream, CUstreamCaptureStatus *, cuuint64_t *);
static CUresult (*p_capture_info_v2)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *,
                                     const CUgraphNode **, size_t *);

static void load_all(void)
{
#define LOAD(fn) p_##fn = (__typeof__(fn) *)sym(XSTR(fn));
    API(LOAD)
    p_instantiate_v2 = sym("cuGraphInstantiate_v2");
    p_add_kernel_v1 = sym("cuGraphAddKernelNode");
    p_get_edges_v1 = sym("cuGraphGetEdges");
    p_exec_update_v1 = sym("cuGraphExecUpdate");
    p_capture_info_v1 = sym("cuStreamGetCaptureInfo");
    p_capture_info_v2 = sym("cuStreamGetCaptureInfo_v2");
}

enum { N = 1000, BLOCK = 128, GRID = (N + BLOCK - 1) / BLOCK };

static const char *ptx_path, *dot_path;
static CUcontext ctx;
static CUmodule mod;
static CUfunction f_vadd, f_axpy, f_append, f_trap;

static void start(void)
{
    OK(p_cuInit(0));
    OK(p_cuCtxCreate(&ctx, NULL, 0, 0));
    OK(p_cuModuleLoad(&mod, ptx_path));
    OK(p_cuModuleGetFunction(&f_vadd, mod, "vadd"));
    OK(p_cuModuleGetFunction(&f_axpy, mod, "axpy"));
    OK(p_cuModuleGetFunction(&f_append, mod, "append"));
    OK(p_cuModuleGetFunction(&f_trap, mod, "trap_kernel"));
}

static CUDA_KERNEL_NODE_PARAMS kparams(CUfunction f, unsigned grid, unsigned block, void **args)
{
    CUDA_KERNEL_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    p.func = f;
    p.gridDimX = grid;
    p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = block;
    p.blockDimY = p.blockDimZ = 1;
    p.kernelParams = args;
    return p;
}

static CUgraphNode kernel_node(CUgraph g, const CUgraphNode *deps, size_t n, CUfunction f,
                               unsigned grid, unsigned block, void **args)
{
    CUDA_KERNEL_NODE_PARAMS p = kparams(f, grid, block, args);
    CUgraphNode node = NULL;
    OK(p_cuGraphAddKernelNode(&node, g, deps, n, &p));
    return node;
}

/* a node appending value to the order log (kernel arguments are copied when the node is made) */
static CUgraphNode append_node(CUgraph g, const CUgraphNode *deps, size_t n, CUdeviceptr log,
                               int value)
{
    void *args[] = {&log, &value};
    return kernel_node(g, deps, n, f_append, 1, 1, args);
}

static CUDA_MEMCPY3D copy_1d(CUmemorytype dst_type, void *dst_host, CUdeviceptr dst_dev,
                             CUmemorytype src_type, const void *src_host, CUdeviceptr src_dev,
                             size_t bytes)
{
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    c.dstMemoryType = dst_type;
    c.dstHost = dst_host;
    c.dstDevice = dst_dev;
    c.srcMemoryType = src_type;
    c.srcHost = src_host;
    c.srcDevice = src_dev;
    c.WidthInBytes = bytes;
    c.Height = c.Depth = 1;
    return c;
}

static CUdeviceptr new_log(void)
{
    CUdeviceptr log;
    OK(p_cuMemAlloc(&log, 64 * sizeof(int)));
    OK(p_cuMemsetD32(log, 0, 64));
    return log;
}

static int read_log(CUdeviceptr log, int *out)
{
    int buf[64];
    OK(p_cuMemcpyDtoH(buf, log, sizeof buf));
    for (int i = 0; i < buf[0] && i < 63; i++)
        out[i] = buf[1 + i];
    return buf[0];
}

static int position(const int *log, int n, int value)
{
    for (int i = 0; i < n; i++)
        if (log[i] == value)
            return i;
    return -1;
}

static volatile int host_calls, host_seen;
static float *host_watch;
static void CUDA_CB count_call(void *p) { host_calls++; host_seen = p ? *(int *)p : 0; }
static void CUDA_CB watch_c0(void *p) { host_calls++; host_seen = (int)host_watch[0]; }
static void CUDA_CB sleep_ms(void *p) { usleep((useconds_t)(uintptr_t)p * 1000); }

static int contains(const CUgraphNode *nodes, size_t n, CUgraphNode node)
{
    for (size_t i = 0; i < n; i++)
        if (nodes[i] == node)
            return 1;
    return 0;
}

/* -- an explicit graph: nodes, edges, queries, clone, instantiate, launch ----------------- */

static void test_explicit(void)
{
    start();
    static float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) { a[i] = (float)i; b[i] = 0.5f * i; c[i] = -1; }
    CUdeviceptr da, db, dc;
    OK(p_cuMemAlloc(&da, sizeof a));
    OK(p_cuMemAlloc(&db, sizeof b));
    OK(p_cuMemAlloc(&dc, sizeof c));
    CUgraph g, other;
    OK(p_cuGraphCreate(&g, 0));
    EXPECT(p_cuGraphCreate(&other, 1), CUDA_ERROR_INVALID_VALUE);
    OK(p_cuGraphCreate(&other, 0));

    CUgraphNode ma, mb, ms, k, mc, h;
    CUDA_MEMCPY3D cpa = copy_1d(CU_MEMORYTYPE_DEVICE, NULL, da, CU_MEMORYTYPE_HOST, a, 0, sizeof a);
    CUDA_MEMCPY3D cpb = copy_1d(CU_MEMORYTYPE_DEVICE, NULL, db, CU_MEMORYTYPE_HOST, b, 0, sizeof b);
    OK(p_cuGraphAddMemcpyNode(&ma, g, NULL, 0, &cpa, ctx));
    OK(p_cuGraphAddMemcpyNode(&mb, g, NULL, 0, &cpb, ctx));
    CUDA_MEMSET_NODE_PARAMS msp = {dc, 0, 0x7fc00000u, 4, N, 1}; /* a NaN the kernel overwrites */
    OK(p_cuGraphAddMemsetNode(&ms, g, NULL, 0, &msp, ctx));
    int n = N;
    void *args[] = {&da, &db, &dc, &n};
    CUgraphNode kdeps[] = {ma, mb, ms};
    k = kernel_node(g, kdeps, 3, f_vadd, GRID, BLOCK, args);
    CUDA_MEMCPY3D cpc = copy_1d(CU_MEMORYTYPE_HOST, c, 0, CU_MEMORYTYPE_DEVICE, NULL, dc, sizeof c);
    OK(p_cuGraphAddMemcpyNode(&mc, g, &k, 1, &cpc, ctx));
    host_watch = c + 1;
    CUDA_HOST_NODE_PARAMS hp = {watch_c0, NULL};
    OK(p_cuGraphAddHostNode(&h, g, &mc, 1, &hp));

    /* nodes: NULL array -> count; a larger array -> NULL-padded; a smaller one -> truncated */
    CUgraphNode nodes[8];
    size_t count = 0;
    OK(p_cuGraphGetNodes(g, NULL, &count));
    CHECK(count == 6);
    count = 8;
    memset(nodes, 0xff, sizeof nodes);
    OK(p_cuGraphGetNodes(g, nodes, &count));
    CHECK(count == 6 && nodes[0] == ma && nodes[3] == k && nodes[5] == h && nodes[6] == NULL &&
          nodes[7] == NULL);
    count = 2;
    OK(p_cuGraphGetNodes(g, nodes, &count));
    CHECK(count == 2 && nodes[0] == ma && nodes[1] == mb);
    EXPECT(p_cuGraphGetNodes(g, nodes, NULL), CUDA_ERROR_INVALID_VALUE);
    count = 8;
    OK(p_cuGraphGetRootNodes(g, nodes, &count));
    CHECK(count == 3 && contains(nodes, 3, ma) && contains(nodes, 3, mb) && contains(nodes, 3, ms));

    /* edges, both ABI variants */
    CUgraphNode from[8], to[8];
    count = 0;
    OK(p_cuGraphGetEdges(g, NULL, NULL, NULL, &count));
    CHECK(count == 5);
    count = 8;
    OK(p_get_edges_v1(g, from, to, &count));
    CHECK(count == 5);
    int found = 0;
    for (size_t i = 0; i < count; i++)
        found += (from[i] == ma && to[i] == k) + (from[i] == mb && to[i] == k) +
                 (from[i] == ms && to[i] == k) + (from[i] == k && to[i] == mc) +
                 (from[i] == mc && to[i] == h);
    CHECK(found == 5);
    EXPECT(p_get_edges_v1(g, from, NULL, &count), CUDA_ERROR_INVALID_VALUE);

    CUgraphNodeType type;
    OK(p_cuGraphNodeGetType(k, &type));
    CHECK(type == CU_GRAPH_NODE_TYPE_KERNEL);
    OK(p_cuGraphNodeGetType(ms, &type));
    CHECK(type == CU_GRAPH_NODE_TYPE_MEMSET);
    OK(p_cuGraphNodeGetType(mc, &type));
    CHECK(type == CU_GRAPH_NODE_TYPE_MEMCPY);
    OK(p_cuGraphNodeGetType(h, &type));
    CHECK(type == CU_GRAPH_NODE_TYPE_HOST);
    count = 8;
    OK(p_cuGraphNodeGetDependencies(k, nodes, NULL, &count));
    CHECK(count == 3 && nodes[0] == ma && nodes[1] == mb && nodes[2] == ms);
    count = 8;
    OK(p_cuGraphNodeGetDependentNodes(k, nodes, NULL, &count));
    CHECK(count == 1 && nodes[0] == mc);

    /* parameters read back */
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof kp);
    OK(p_cuGraphKernelNodeGetParams(k, &kp));
    CHECK(kp.func == f_vadd && kp.gridDimX == GRID && kp.blockDimX == BLOCK && kp.gridDimY == 1 &&
          kp.ctx == ctx && kp.extra == NULL);
    CHECK(kp.kernelParams && *(CUdeviceptr *)kp.kernelParams[0] == da &&
          *(CUdeviceptr *)kp.kernelParams[2] == dc && *(int *)kp.kernelParams[3] == N);
    CUDA_MEMSET_NODE_PARAMS msq;
    OK(p_cuGraphMemsetNodeGetParams(ms, &msq));
    CHECK(msq.dst == dc && msq.value == 0x7fc00000u && msq.elementSize == 4 && msq.width == N &&
          msq.height == 1);
    CUDA_MEMCPY3D cq;
    OK(p_cuGraphMemcpyNodeGetParams(mc, &cq));
    CHECK(cq.dstHost == c && cq.srcDevice == dc && cq.WidthInBytes == sizeof c &&
          cq.srcMemoryType == CU_MEMORYTYPE_DEVICE);
    CUDA_HOST_NODE_PARAMS hq;
    OK(p_cuGraphHostNodeGetParams(h, &hq));
    CHECK(hq.fn == watch_c0 && hq.userData == NULL);
    EXPECT(p_cuGraphMemsetNodeGetParams(k, &msq), CUDA_ERROR_INVALID_VALUE); /* not a memset */

    /* edges that cannot be added or removed */
    EXPECT(p_cuGraphAddDependencies(g, &ma, &k, NULL, 1), CUDA_ERROR_INVALID_VALUE); /* exists */
    EXPECT(p_cuGraphAddDependencies(g, &k, &k, NULL, 1), CUDA_ERROR_INVALID_VALUE);  /* self */
    EXPECT(p_cuGraphRemoveDependencies(g, &ma, &mb, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    CUgraphNode foreign;
    OK(p_cuGraphAddEmptyNode(&foreign, other, NULL, 0));
    EXPECT(p_cuGraphAddDependencies(g, &foreign, &k, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuGraphAddEmptyNode(&foreign, g, &foreign, 1), CUDA_ERROR_INVALID_VALUE);
    CUgraphNode twice[] = {ma, ma};
    EXPECT(p_cuGraphAddEmptyNode(&foreign, g, twice, 2), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuGraphAddEmptyNode(&foreign, g, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    OK(p_cuGraphRemoveDependencies(g, &mc, &h, NULL, 1));
    count = 0;
    OK(p_cuGraphGetRootNodes(g, NULL, &count));
    CHECK(count == 4);
    OK(p_cuGraphAddDependencies(g, &mc, &h, NULL, 1));

    /* instantiate, launch, and the result */
    CUgraphExec exec;
    CUstream s;
    OK(p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(p_cuGraphInstantiate(&exec, g, 0));
    cuuint64_t flags = 1;
    OK(p_cuGraphExecGetFlags(exec, &flags));
    CHECK(flags == 0);
    OK(p_cuGraphUpload(exec, s));
    OK(p_cuGraphLaunch(exec, s));
    OK(p_cuStreamSynchronize(s));
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += c[i] != 1.5f * i;
    CHECK(bad == 0);
    CHECK(host_calls == 1 && host_seen == 1); /* the host node ran after the copy to c */

    /* the executable graph's copy can be pointed elsewhere; the graph keeps its own */
    static float c2[N];
    CUDA_MEMCPY3D cpc2 = copy_1d(CU_MEMORYTYPE_HOST, c2, 0, CU_MEMORYTYPE_DEVICE, NULL, dc,
                                 sizeof c2);
    OK(p_cuGraphExecMemcpyNodeSetParams(exec, mc, &cpc2, ctx));
    CUDA_MEMCPY3D to_device = copy_1d(CU_MEMORYTYPE_DEVICE, NULL, db, CU_MEMORYTYPE_DEVICE, NULL,
                                      dc, sizeof c2);
    EXPECT(p_cuGraphExecMemcpyNodeSetParams(exec, mc, &to_device, ctx), CUDA_ERROR_INVALID_VALUE);
    OK(p_cuGraphLaunch(exec, s));
    OK(p_cuStreamSynchronize(s));
    CHECK(c2[N - 1] == 1.5f * (N - 1));
    OK(p_cuGraphMemcpyNodeGetParams(mc, &cq));
    CHECK(cq.dstHost == c);

    /* a clone is independent; its nodes are found from the original's */
    CUgraph copy;
    CUgraphNode k2;
    OK(p_cuGraphClone(&copy, g));
    count = 0;
    OK(p_cuGraphGetNodes(copy, NULL, &count));
    CHECK(count == 6);
    OK(p_cuGraphNodeFindInClone(&k2, k, copy));
    CHECK(k2 != k);
    OK(p_cuGraphNodeGetType(k2, &type));
    CHECK(type == CU_GRAPH_NODE_TYPE_KERNEL);
    EXPECT(p_cuGraphNodeFindInClone(&k2, k, other), CUDA_ERROR_INVALID_VALUE);
    int half = N / 2;
    void *half_args[] = {&da, &db, &dc, &half};
    kp = kparams(f_vadd, GRID, BLOCK, half_args);
    OK(p_cuGraphKernelNodeSetParams(k2, &kp));
    OK(p_cuGraphKernelNodeGetParams(k, &kp));
    CHECK(*(int *)kp.kernelParams[3] == N); /* the original keeps its parameters */
    CUgraphExec exec2;
    OK(p_cuGraphInstantiate(&exec2, copy, 0));
    OK(p_cuGraphLaunch(exec2, s));
    OK(p_cuStreamSynchronize(s));
    CHECK(c[half - 1] == 1.5f * (half - 1) && c[half] != c[half]); /* the rest stays NaN */
    CHECK(host_calls == 3);

    /* nodes and graphs that are gone */
    OK(p_cuGraphDestroyNode(h));
    EXPECT(p_cuGraphNodeGetType(h, &type), CUDA_ERROR_INVALID_VALUE);
    count = 0;
    OK(p_cuGraphGetNodes(g, NULL, &count));
    CHECK(count == 5);
    OK(p_cuGraphExecDestroy(exec));
    OK(p_cuGraphExecDestroy(exec2));
    OK(p_cuGraphDestroy(copy));
    OK(p_cuGraphDestroy(g));
    EXPECT(p_cuGraphDestroy(g), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuGraphNodeGetType(k, &type), CUDA_ERROR_INVALID_VALUE);
    OK(p_cuGraphDestroy(other));
}

/* -- the order nodes run in; launches are asynchronous and ordered ---------------------- */

static void test_order(void)
{
    start();
    CUdeviceptr log = new_log();
    CUgraph g;
    OK(p_cuGraphCreate(&g, 0));
    /* a host node that sleeps 200 ms, then a diamond 1 -> {2, 3} -> 4, and 5 on its own */
    CUgraphNode sleepy, a, b, c, d;
    CUDA_HOST_NODE_PARAMS hp = {sleep_ms, (void *)(uintptr_t)200};
    OK(p_cuGraphAddHostNode(&sleepy, g, NULL, 0, &hp));
    a = append_node(g, &sleepy, 1, log, 1);
    b = append_node(g, &a, 1, log, 2);
    c = append_node(g, &a, 1, log, 3);
    CUgraphNode bc[] = {b, c};
    d = append_node(g, bc, 2, log, 4);
    append_node(g, NULL, 0, log, 5);
    (void)d;
    CUgraphExec exec;
    CUstream s;
    OK(p_cuStreamCreate(&s, 0));
    OK(p_cuGraphInstantiate(&exec, g, 0));
    double t0 = now_ms();
    for (int i = 0; i < 3; i++)
        OK(p_cuGraphLaunch(exec, s));
    CHECK(now_ms() - t0 < 150);                          /* launches are asynchronous */
    EXPECT(p_cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    OK(p_cuStreamSynchronize(s));
    CHECK(now_ms() - t0 >= 600);                         /* ... and one after the other */
    int order[64];
    int n = read_log(log, order);
    CHECK(n == 15);
    for (int launch = 0; launch < 3; launch++) {
        int *o = order + 5 * launch;                     /* each launch's five, together */
        int p1 = position(o, 5, 1), p2 = position(o, 5, 2), p3 = position(o, 5, 3),
            p4 = position(o, 5, 4), p5 = position(o, 5, 5);
        CHECK(p1 >= 0 && p2 >= 0 && p3 >= 0 && p4 >= 0 && p5 >= 0);
        CHECK(p1 < p2 && p1 < p3 && p2 < p4 && p3 < p4);
    }
    /* stream order: work queued after the launch waits for it */
    OK(p_cuMemsetD32(log, 0, 64));
    OK(p_cuGraphLaunch(exec, s));
    int value = 99;
    void *args[] = {&log, &value};
    OK(p_cuLaunchKernel(f_append, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
    OK(p_cuStreamSynchronize(s));
    n = read_log(log, order);
    CHECK(n == 6 && order[5] == 99);
    OK(p_cuGraphExecDestroy(exec));
    OK(p_cuGraphDestroy(g));
}

/* -- parameters of an instantiated graph: set per node, or updated from another graph ------ */

static int host_log[16], host_log_n;
static int *pinned_y;
static void CUDA_CB record_y1(void *p) { host_log[host_log_n++ & 15] = pinned_y[1]; }
static void CUDA_CB record_minus(void *p) { host_log[host_log_n++ & 15] = -pinned_y[1]; }

/* sleep -> memset y -> axpy(y, x, a) -> copy y to pinned_y -> record y[1] */
static CUgraph update_graph(CUdeviceptr y, CUdeviceptr x, int a, unsigned value,
                            CUgraphNode out[5], int with_memset)
{
    CUgraph g;
    OK(p_cuGraphCreate(&g, 0));
    CUDA_HOST_NODE_PARAMS sleep_p = {sleep_ms, (void *)(uintptr_t)100};
    OK(p_cuGraphAddHostNode(&out[0], g, NULL, 0, &sleep_p));
    if (with_memset) {
        CUDA_MEMSET_NODE_PARAMS mp = {y, 0, value, 4, N, 1};
        OK(p_cuGraphAddMemsetNode(&out[1], g, &out[0], 1, &mp, ctx));
    } else {
        OK(p_cuGraphAddEmptyNode(&out[1], g, &out[0], 1));
    }
    int n = N;
    void *args[] = {&y, &x, &a, &n};
    out[2] = kernel_node(g, &out[1], 1, f_axpy, GRID, BLOCK, args);
    CUDA_MEMCPY3D cp = copy_1d(CU_MEMORYTYPE_HOST, pinned_y, 0, CU_MEMORYTYPE_DEVICE, NULL, y,
                               N * sizeof(int));
    OK(p_cuGraphAddMemcpyNode(&out[3], g, &out[2], 1, &cp, ctx));
    CUDA_HOST_NODE_PARAMS rec = {record_y1, NULL};
    OK(p_cuGraphAddHostNode(&out[4], g, &out[3], 1, &rec));
    return g;
}

static void test_update(void)
{
    start();
    static int hx[N];
    for (int i = 0; i < N; i++) hx[i] = i - 7;  /* x[1] = -6 */
    CUdeviceptr x, y;
    OK(p_cuMemAlloc(&x, sizeof hx));
    OK(p_cuMemAlloc(&y, sizeof hx));
    OK(p_cuMemcpyHtoD(x, hx, sizeof hx));
    OK(p_cuMemAllocHost((void **)&pinned_y, sizeof hx));
    CUgraphNode nodes[5];
    CUgraph g = update_graph(y, x, 1, 0, nodes, 1);
    CUgraphExec exec;
    CUstream s;
    OK(p_cuStreamCreate(&s, 0));
    OK(p_cuGraphInstantiate(&exec, g, 0));

    /* a launch keeps the parameters it was queued with */
    OK(p_cuGraphLaunch(exec, s));
    int a = 3, n = N;
    void *args[] = {&y, &x, &a, &n};
    CUDA_KERNEL_NODE_PARAMS kp = kparams(f_axpy, GRID, BLOCK, args);
    OK(p_cuGraphExecKernelNodeSetParams(exec, nodes[2], &kp));
    OK(p_cuGraphLaunch(exec, s));
    CUDA_MEMSET_NODE_PARAMS mp = {y, 0, 10, 4, N, 1};
    OK(p_cuGraphExecMemsetNodeSetParams(exec, nodes[1], &mp, ctx));
    OK(p_cuGraphLaunch(exec, s));
    OK(p_cuStreamSynchronize(s));
    CHECK(host_log_n == 3 && host_log[0] == -6 && host_log[1] == -18 && host_log[2] == 10 - 18);
    /* the graph is unchanged */
    OK(p_cuGraphKernelNodeGetParams(nodes[2], &kp));
    CHECK(*(int *)kp.kernelParams[2] == 1);

    /* a 1D memset cannot become 2D in place; a node of another kind is no kernel */
    CUDA_MEMSET_NODE_PARAMS mp2 = {y, 256, 10, 4, 64, 2};
    EXPECT(p_cuGraphExecMemsetNodeSetParams(exec, nodes[1], &mp2, ctx), CUDA_ERROR_INVALID_VALUE);
    kp = kparams(f_axpy, GRID, BLOCK, args);
    EXPECT(p_cuGraphExecKernelNodeSetParams(exec, nodes[1], &kp), CUDA_ERROR_INVALID_VALUE);

    /* host nodes, and disabled nodes (a disabled kernel is skipped) */
    CUDA_HOST_NODE_PARAMS minus = {record_minus, NULL};
    OK(p_cuGraphExecHostNodeSetParams(exec, nodes[4], &minus));
    OK(p_cuGraphNodeSetEnabled(exec, nodes[2], 0));
    unsigned enabled = 1;
    OK(p_cuGraphNodeGetEnabled(exec, nodes[2], &enabled));
    CHECK(enabled == 0);
    EXPECT(p_cuGraphNodeSetEnabled(exec, nodes[4], 0), CUDA_ERROR_INVALID_VALUE);
    OK(p_cuGraphLaunch(exec, s));
    OK(p_cuStreamSynchronize(s));
    CHECK(host_log_n == 4 && host_log[3] == -10);
    OK(p_cuGraphNodeSetEnabled(exec, nodes[2], 1));

    /* cuGraphExecUpdate from a graph of the same shape */
    CUgraphNode other_nodes[5];
    CUgraph same = update_graph(y, x, 5, 0, other_nodes, 1);
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0xff, sizeof info);
    OK(p_cuGraphExecUpdate(exec, same, &info));
    CHECK(info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS && info.errorNode == NULL);
    OK(p_cuGraphLaunch(exec, s));
    OK(p_cuStreamSynchronize(s));
    CHECK(host_log_n == 5 && host_log[4] == -30);
    /* ... and nodes are still named by the graph it was instantiated from */
    a = 2;
    kp = kparams(f_axpy, GRID, BLOCK, args);
    OK(p_cuGraphExecKernelNodeSetParams(exec, nodes[2], &kp));
    EXPECT(p_cuGraphExecKernelNodeSetParams(exec, other_nodes[2], &kp), CUDA_ERROR_INVALID_VALUE);

    /* a node of another type; another topology; the v1 ABI */
    CUgraph retyped = update_graph(y, x, 5, 0, other_nodes, 0);
    EXPECT(p_cuGraphExecUpdate(exec, retyped, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    CHECK(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED &&
          info.errorNode == other_nodes[1]);
    CUgraphNode extra;
    OK(p_cuGraphAddEmptyNode(&extra, same, NULL, 0));
    EXPECT(p_cuGraphExecUpdate(exec, same, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    CHECK(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED && info.errorNode == NULL);
    CUgraphNode error_node = (CUgraphNode)1;
    CUgraphExecUpdateResult result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    EXPECT(p_exec_update_v1(exec, retyped, &error_node, &result),
           CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    CHECK(result == CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED && error_node == other_nodes[1]);
    /* after refused updates the executable graph is what it was */
    OK(p_cuGraphLaunch(exec, s));
    OK(p_cuStreamSynchronize(s));
    CHECK(host_log_n == 6 && host_log[5] == -12);

    OK(p_cuGraphExecDestroy(exec));
    EXPECT(p_cuGraphLaunch(exec, s), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuGraphExecDestroy(exec), CUDA_ERROR_INVALID_VALUE);
    OK(p_cuGraphDestroy(g));
    OK(p_cuGraphDestroy(same));
    OK(p_cuGraphDestroy(retyped));
}

/* -- calls that must fail, with NVIDIA's codes --------------------------------------------- */

static void test_misuse(void)
{
    start();
    CUdeviceptr log = new_log();
    CUgraph g;
    OK(p_cuGraphCreate(&g, 0));
    CUgraphNode a = append_node(g, NULL, 0, log, 1);
    CUgraphNode b = append_node(g, &a, 1, log, 2);
    CUgraphExec exec = NULL;

    /* a cycle is found when the graph is instantiated, with the node and a log */
    OK(p_cuGraphAddDependencies(g, &b, &a, NULL, 1));
    EXPECT(p_cuGraphInstantiate(&exec, g, 0), CUDA_ERROR_INVALID_VALUE);
    char text[128] = {0};
    CUgraphNode error_node = NULL;
    EXPECT(p_instantiate_v2(&exec, g, &error_node, text, sizeof text), CUDA_ERROR_INVALID_VALUE);
    CHECK((error_node == a || error_node == b) && strstr(text, "cycle") != NULL);
    printf("log: %s\n", text);
    CUDA_GRAPH_INSTANTIATE_PARAMS ip;
    memset(&ip, 0, sizeof ip);
    EXPECT(p_cuGraphInstantiateWithParams(&exec, g, &ip), CUDA_ERROR_INVALID_VALUE);
    CHECK(ip.result_out == CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE &&
          (ip.hErrNode_out == a || ip.hErrNode_out == b));
    OK(p_cuGraphRemoveDependencies(g, &b, &a, NULL, 1));
    OK(p_cuGraphInstantiateWithParams(&exec, g, &ip));
    CHECK(ip.result_out == CUDA_GRAPH_INSTANTIATE_SUCCESS && ip.hErrNode_out == NULL);
    OK(p_cuGraphExecDestroy(exec));
    EXPECT(p_cuGraphInstantiate(&exec, g, 0x100), CUDA_ERROR_INVALID_VALUE);

    /* nodes whose parameters are wrong are refused when they are added */
    CUgraphNode node;
    int value = 1;
    void *args[] = {&log, &value};
    CUDA_KERNEL_NODE_PARAMS kp = kparams(f_append, 1, 2048, args);
    EXPECT(p_cuGraphAddKernelNode(&node, g, NULL, 0, &kp), CUDA_ERROR_INVALID_VALUE);
    kp = kparams(NULL, 1, 1, args);
    EXPECT(p_cuGraphAddKernelNode(&node, g, NULL, 0, &kp), CUDA_ERROR_INVALID_VALUE);
    kp = kparams(f_append, 1, 1, NULL);
    EXPECT(p_cuGraphAddKernelNode(&node, g, NULL, 0, &kp), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuGraphAddKernelNode(&node, g, NULL, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    CUDA_MEMSET_NODE_PARAMS mp = {log, 0, 0, 3, 4, 1};
    EXPECT(p_cuGraphAddMemsetNode(&node, g, NULL, 0, &mp, ctx), CUDA_ERROR_INVALID_VALUE);
    static int host_buffer[16];
    CUDA_MEMSET_NODE_PARAMS not_device = {(CUdeviceptr)host_buffer, 0, 0, 4, 4, 1};
    EXPECT(p_cuGraphAddMemsetNode(&node, g, NULL, 0, &not_device, ctx), CUDA_ERROR_INVALID_VALUE);
    CUDA_MEMCPY3D too_far = copy_1d(CU_MEMORYTYPE_HOST, host_buffer, 0, CU_MEMORYTYPE_DEVICE,
                                    NULL, log, 65 * sizeof(int));
    EXPECT(p_cuGraphAddMemcpyNode(&node, g, NULL, 0, &too_far, ctx), CUDA_ERROR_INVALID_VALUE);
    CUDA_HOST_NODE_PARAMS no_fn = {NULL, NULL};
    EXPECT(p_cuGraphAddHostNode(&node, g, NULL, 0, &no_fn), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuGraphAddKernelNode(&node, (CUgraph)(uintptr_t)0x1234, NULL, 0, &kp),
           CUDA_ERROR_INVALID_VALUE);

    /* the v1 kernel node ABI */
    CUDA_KERNEL_NODE_PARAMS_v1 k1;
    memset(&k1, 0, sizeof k1);
    k1.func = f_append;
    k1.gridDimX = k1.gridDimY = k1.gridDimZ = k1.blockDimX = k1.blockDimY = k1.blockDimZ = 1;
    k1.kernelParams = args;
    OK(p_add_kernel_v1(&node, g, &b, 1, &k1));

    /* the packed-buffer (extra) form of the arguments */
    struct { CUdeviceptr log; int value; } packed = {log, 1};
    size_t packed_size = sizeof packed;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE,
                     &packed_size, CU_LAUNCH_PARAM_END};
    kp = kparams(f_append, 1, 1, NULL);
    kp.extra = extra;
    CUgraphNode from_extra;
    OK(p_cuGraphAddKernelNode(&from_extra, g, &node, 1, &kp));
    kp.kernelParams = args;
    EXPECT(p_cuGraphAddKernelNode(&node, g, NULL, 0, &kp), CUDA_ERROR_INVALID_VALUE); /* both */
    node = from_extra;

    /* the generic node API */
    CUgraphNodeParams np;
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL;
    EXPECT(p_cuGraphAddNode(&node, g, NULL, NULL, 0, &np), CUDA_ERROR_NOT_SUPPORTED);
    np.type = CU_GRAPH_NODE_TYPE_KERNEL;
    np.kernel.func = f_append;
    np.kernel.gridDimX = np.kernel.gridDimY = np.kernel.gridDimZ = 1;
    np.kernel.blockDimX = np.kernel.blockDimY = np.kernel.blockDimZ = 1;
    value = 3;
    np.kernel.kernelParams = args;
    CUgraphNode generic;
    OK(p_cuGraphAddNode(&generic, g, &node, NULL, 1, &np));
    np.type = CU_GRAPH_NODE_TYPE_EMPTY;
    EXPECT(p_cuGraphNodeSetParams(generic, &np), CUDA_ERROR_INVALID_VALUE);
    np.type = CU_GRAPH_NODE_TYPE_KERNEL;
    value = 4;
    OK(p_cuGraphNodeSetParams(generic, &np));
    static int copied_back[64];
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_MEMCPY;
    np.memcpy.copyCtx = ctx;
    np.memcpy.copyParams = copy_1d(CU_MEMORYTYPE_HOST, copied_back, 0, CU_MEMORYTYPE_DEVICE, NULL,
                                   log, sizeof copied_back);
    CUgraphNode generic_copy;
    OK(p_cuGraphAddNode(&generic_copy, g, &generic, NULL, 1, &np));
    np.type = CU_GRAPH_NODE_TYPE_KERNEL;

    /* kernel node attributes: kept and read back; what cuport cannot do is refused */
    CUkernelNodeAttrValue attr;
    memset(&attr, 0, sizeof attr);
    attr.priority = -1;
    OK(p_cuGraphKernelNodeSetAttribute(generic, CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &attr));
    memset(&attr, 0, sizeof attr);
    OK(p_cuGraphKernelNodeGetAttribute(generic, CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &attr));
    CHECK(attr.priority == -1);
    attr.cooperative = 1;
    EXPECT(p_cuGraphKernelNodeSetAttribute(generic, CU_KERNEL_NODE_ATTRIBUTE_COOPERATIVE, &attr),
           CUDA_ERROR_NOT_SUPPORTED);
    EXPECT(p_cuGraphKernelNodeSetAttribute(generic_copy, CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &attr),
           CUDA_ERROR_INVALID_VALUE);
    CUgraphConditionalHandle handle;
    OK(p_cuGraphConditionalHandleCreate(&handle, g, ctx, 0, 0));
    EXPECT(p_cuGraphConditionalHandleCreate(&handle, g, ctx, 0, 2), CUDA_ERROR_INVALID_VALUE);

    /* programmatic edges are kept, reported, and refused by the lossy v1 query */
    CUgraphNode p1 = append_node(g, NULL, 0, log, 10), p2 = append_node(g, NULL, 0, log, 11);
    CUgraphEdgeData edge;
    memset(&edge, 0, sizeof edge);
    edge.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
    edge.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
    OK(p_cuGraphAddDependencies(g, &p1, &p2, &edge, 1));
    CUgraphNode from[16], to[16];
    CUgraphEdgeData data[16];
    size_t count = 16;
    EXPECT(p_get_edges_v1(g, from, to, &count), CUDA_ERROR_LOSSY_QUERY);
    count = 16;
    OK(p_cuGraphGetEdges(g, from, to, data, &count));
    int programmatic = 0;
    for (size_t i = 0; i < count; i++)
        programmatic += from[i] == p1 && to[i] == p2 && data[i].type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
    CHECK(programmatic == 1);

    /* it all runs: 1, 2, the v1 node's 1, the extra node's 1, the generic node's 4, 10, 11 */
    CUstream s;
    OK(p_cuStreamCreate(&s, 0));
    OK(p_cuGraphInstantiate(&exec, g, 0));
    OK(p_cuGraphLaunch(exec, s));
    OK(p_cuStreamSynchronize(s));
    int order[64];
    int n = read_log(log, order);
    CHECK(n == 7 && position(order, n, 4) > position(order, n, 2) &&
          position(order, n, 11) > position(order, n, 10));
    CHECK(copied_back[0] >= 4 && position(copied_back + 1, copied_back[0], 4) >= 0);

    /* a child graph belongs to its node */
    CUgraph parent, inner;
    CUgraphNode child;
    OK(p_cuGraphCreate(&parent, 0));
    OK(p_cuGraphAddChildGraphNode(&child, parent, NULL, 0, g));
    OK(p_cuGraphChildGraphNodeGetGraph(child, &inner));
    CHECK(inner != g);
    EXPECT(p_cuGraphDestroy(inner), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuGraphAddChildGraphNode(&child, parent, NULL, 0, parent), CUDA_ERROR_INVALID_VALUE);

    /* a kernel unloaded after instantiation cannot be launched */
    OK(p_cuModuleUnload(mod));
    EXPECT(p_cuGraphLaunch(exec, s), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuGraphInstantiate(&exec, g, 0), CUDA_ERROR_INVALID_VALUE);
    OK(p_cuGraphDestroy(parent));
    OK(p_cuGraphDestroy(g));
}

/* -- stream capture ------------------------------------------------------------------------ */

static CUstream capture_stream;
static CUresult thread_result;
static void *end_capture_elsewhere(void *arg)
{
    CUgraph g;
    p_cuCtxSetCurrent(ctx);
    thread_result = p_cuStreamEndCapture(capture_stream, &g);
    return NULL;
}

static void *alloc_elsewhere(void *arg)
{
    CUdeviceptr d;
    p_cuCtxSetCurrent(ctx);
    thread_result = p_cuMemAlloc(&d, 64);
    if (thread_result == CUDA_SUCCESS)
        p_cuMemFree(d);
    return NULL;
}

static CUresult in_thread(void *(*fn)(void *))
{
    pthread_t t;
    pthread_create(&t, NULL, fn, NULL);
    pthread_join(t, NULL);
    return thread_result;
}

static void test_capture(void)
{
    start();
    CUdeviceptr log = new_log();
    CUstream s[3], legacy_user;
    for (int i = 0; i < 3; i++)
        OK(p_cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
    OK(p_cuStreamCreate(&legacy_user, 0)); /* a blocking stream */
    CUevent ev[3];
    for (int i = 0; i < 3; i++)
        OK(p_cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
    int value;
    void *args[] = {&log, &value};

    /* a fork/join over three streams; nothing runs until the graph is launched */
    CUstreamCaptureStatus status;
    OK(p_cuStreamBeginCapture(s[0], CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT(p_cuStreamBeginCapture(s[0], CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
    OK(p_cuStreamIsCapturing(s[0], &status));
    CHECK(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(p_cuMemsetD32Async(log, 0, 64, s[0]));
    value = 1;
    OK(p_cuLaunchKernel(f_append, 1, 1, 1, 1, 1, 1, 0, s[0], args, NULL));
    cuuint64_t id0 = 0, id1 = 0;
    CUgraph captured = NULL;
    const CUgraphNode *deps = NULL;
    const CUgraphEdgeData *edges = NULL;
    size_t ndeps = 0;
    OK(p_cuStreamGetCaptureInfo(s[0], &status, &id0, &captured, &deps, &edges, &ndeps));
    CHECK(status == CU_STREAM_CAPTURE_STATUS_ACTIVE && id0 != 0 && captured && ndeps == 1);
    CUgraphNodeType type = 99;
    if (ndeps == 1)
        OK(p_cuGraphNodeGetType(deps[0], &type));
    CHECK(type == CU_GRAPH_NODE_TYPE_KERNEL);
    OK(p_cuEventRecord(ev[0], s[0]));
    EXPECT(p_cuEventQuery(ev[0]), CUDA_ERROR_CAPTURED_EVENT);
    EXPECT(p_cuEventSynchronize(ev[0]), CUDA_ERROR_CAPTURED_EVENT);
    OK(p_cuStreamWaitEvent(s[1], ev[0], 0));
    OK(p_cuStreamWaitEvent(s[2], ev[0], 0));
    OK(p_cuStreamIsCapturing(s[1], &status));
    CHECK(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(p_capture_info_v1(s[1], &status, &id1));
    CHECK(id1 == id0);
    value = 2;
    OK(p_cuLaunchKernel(f_append, 1, 1, 1, 1, 1, 1, 0, s[1], args, NULL));
    value = 3;
    OK(p_cuLaunchKernel(f_append, 1, 1, 1, 1, 1, 1, 0, s[2], args, NULL));
    OK(p_cuLaunchHostFunc(s[2], count_call, NULL));
    OK(p_cuEventRecord(ev[1], s[1]));
    OK(p_cuEventRecord(ev[2], s[2]));
    OK(p_cuStreamWaitEvent(s[0], ev[1], 0));
    OK(p_cuStreamWaitEvent(s[0], ev[2], 0));
    OK(p_capture_info_v2(s[0], &status, NULL, NULL, &deps, &ndeps));
    CHECK(ndeps == 3); /* its own kernel (1), and the joined streams' last nodes */
    value = 4;
    OK(p_cuLaunchKernel(f_append, 1, 1, 1, 1, 1, 1, 0, s[0], args, NULL));
    static int copied[64];
    OK(p_cuMemcpyDtoHAsync(copied, log, sizeof copied, s[0]));
    EXPECT(p_cuStreamEndCapture(s[1], &captured), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    CHECK(captured == NULL);
    OK(p_cuStreamIsCapturing(s[0], &status));
    CHECK(status == CU_STREAM_CAPTURE_STATUS_INVALIDATED);  /* ending it elsewhere broke it */
    EXPECT(p_cuStreamEndCapture(s[0], &captured), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    OK(p_cuStreamIsCapturing(s[1], &status));
    CHECK(status == CU_STREAM_CAPTURE_STATUS_NONE);

    /* the same again, ended properly */
    OK(p_cuStreamBeginCapture(s[0], CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(p_cuMemsetD32Async(log, 0, 64, s[0]));
    value = 1;
    OK(p_cuLaunchKernel(f_append, 1, 1, 1, 1, 1, 1, 0, s[0], args, NULL));
    OK(p_cuEventRecord(ev[0], s[0]));
    OK(p_cuStreamWaitEvent(s[1], ev[0], 0));
    OK(p_cuStreamWaitEvent(s[2], ev[0], 0));
    value = 2;
    OK(p_cuLaunchKernel(f_append, 1, 1, 1, 1, 1, 1, 0, s[1], args, NULL));
    value = 3;
    OK(p_cuLaunchKernel(f_append, 1, 1, 1, 1, 1, 1, 0, s[2], args, NULL));
    OK(p_cuLaunchHostFunc(s[2], count_call, NULL));
    OK(p_cuEventRecord(ev[1], s[1]));
    OK(p_cuEventRecord(ev[2], s[2]));
    OK(p_cuStreamWaitEvent(s[0], ev[1], 0));
    OK(p_cuStreamWaitEvent(s[0], ev[2], 0));
    value = 4;
    OK(p_cuLaunchKernel(f_append, 1, 1, 1, 1, 1, 1, 0, s[0], args, NULL));
    OK(p_cuMemcpyDtoHAsync(copied, log, sizeof copied, s[0]));
    EXPECT(p_cuStreamAddCallback(s[0], NULL, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    static int rows[4][8];
    CUDA_MEMCPY2D c2;
    memset(&c2, 0, sizeof c2);
    c2.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c2.srcDevice = log;
    c2.srcPitch = 8;
    c2.dstMemoryType = CU_MEMORYTYPE_HOST;
    c2.dstHost = rows;
    c2.dstPitch = sizeof rows[0];
    c2.WidthInBytes = 8;
    c2.Height = 4;
    OK(p_cuMemcpy2DAsync(&c2, s[0]));
    OK(p_cuStreamEndCapture(s[0], &captured));
    CHECK(captured != NULL);
    OK(p_cuStreamIsCapturing(s[2], &status));
    CHECK(status == CU_STREAM_CAPTURE_STATUS_NONE);
    CHECK(host_calls == 0 && copied[0] == 0);
    size_t count = 0;
    OK(p_cuGraphGetNodes(captured, NULL, &count));
    CHECK(count == 8); /* memset, 1, 2, 3, host, 4, memcpy, 2D memcpy */
    CUgraphNode all[8];
    count = 8;
    OK(p_cuGraphGetNodes(captured, all, &count));
    CUDA_MEMCPY3D c3;
    memset(&c3, 0, sizeof c3);
    OK(p_cuGraphMemcpyNodeGetParams(all[7], &c3));
    CHECK(c3.Height == 4 && c3.Depth == 1 && c3.dstHost == rows && c3.dstPitch == sizeof rows[0] &&
          c3.srcDevice == log && c3.srcMemoryType == CU_MEMORYTYPE_DEVICE);
    count = 0;
    OK(p_cuGraphGetRootNodes(captured, NULL, &count));
    CHECK(count == 1);
    CUgraphExec exec;
    OK(p_cuGraphInstantiate(&exec, captured, 0));
    for (int round = 0; round < 2; round++) {
        memset(copied, 0, sizeof copied);
        OK(p_cuGraphLaunch(exec, s[1]));
        OK(p_cuStreamSynchronize(s[1]));
        CHECK(copied[0] == 4 && copied[1] == 1 && copied[4] == 4 &&
              ((copied[2] == 2 && copied[3] == 3) || (copied[2] == 3 && copied[3] == 2)));
        /* the 2D copy: rows of two ints from the log, 8 bytes apart */
        CHECK(rows[0][0] == 4 && rows[0][1] == 1 && rows[1][0] + rows[1][1] == 5 &&
              rows[2][0] == 4 && rows[2][1] == 0);
    }
    CHECK(host_calls == 2);

    /* a graph launched into a capturing stream becomes a child graph node */
    CUstream t = s[2];
    CUgraph outer;
    OK(p_cuStreamBeginCapture(t, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(p_cuGraphLaunch(exec, t));
    value = 5;
    OK(p_cuLaunchKernel(f_append, 1, 1, 1, 1, 1, 1, 0, t, args, NULL));
    OK(p_cuGraphDestroy(captured)); /* the node holds a copy of what the launch ran */
    OK(p_cuStreamEndCapture(t, &outer));
    CUgraphNode outer_nodes[2];
    count = 2;
    OK(p_cuGraphGetNodes(outer, outer_nodes, &count));
    CHECK(count == 2);
    OK(p_cuGraphNodeGetType(outer_nodes[0], &type));
    CHECK(type == CU_GRAPH_NODE_TYPE_GRAPH);
    CUgraphExec outer_exec;
    OK(p_cuGraphInstantiate(&outer_exec, outer, 0));
    OK(p_cuGraphLaunch(outer_exec, t));
    OK(p_cuStreamSynchronize(t));
    int order[64];
    int n = read_log(log, order);
    CHECK(copied[0] == 4 && n == 5 && order[4] == 5);
    OK(p_cuGraphExecDestroy(outer_exec));
    OK(p_cuGraphDestroy(outer));

    /* into an existing graph, after given nodes; dependencies changed by hand */
    CUgraph g;
    CUgraphNode first, second;
    OK(p_cuGraphCreate(&g, 0));
    OK(p_cuMemsetD32(log, 0, 64));
    first = append_node(g, NULL, 0, log, 7);
    OK(p_cuStreamBeginCaptureToGraph(s[0], g, &first, NULL, 1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    value = 8;
    OK(p_cuLaunchKernel(f_append, 1, 1, 1, 1, 1, 1, 0, s[0], args, NULL));
    second = append_node(g, NULL, 0, log, 9);
    OK(p_cuStreamUpdateCaptureDependencies(s[0], &second, NULL, 1,
                                           CU_STREAM_ADD_CAPTURE_DEPENDENCIES));
    OK(p_cuStreamGetCaptureInfo(s[0], &status, NULL, NULL, &deps, NULL, &ndeps));
    CHECK(ndeps == 2);
    OK(p_cuStreamUpdateCaptureDependencies(s[0], &second, NULL, 1,
                                           CU_STREAM_SET_CAPTURE_DEPENDENCIES));
    value = 10;
    OK(p_cuLaunchKernel(f_append, 1, 1, 1, 1, 1, 1, 0, s[0], args, NULL));
    EXPECT(p_cuGraphDestroy(g), CUDA_ERROR_INVALID_VALUE); /* it is being captured into */
    EXPECT(p_cuGraphInstantiate(&exec, g, 0), CUDA_ERROR_INVALID_VALUE);
    CUgraph same = NULL;
    OK(p_cuStreamEndCapture(s[0], &same));
    CHECK(same == g);
    EXPECT(p_cuStreamUpdateCaptureDependencies(s[0], &second, NULL, 1, 0), CUDA_ERROR_ILLEGAL_STATE);
    CUgraphExec gx;
    OK(p_cuGraphInstantiate(&gx, g, 0));
    OK(p_cuGraphLaunch(gx, s[0]));
    OK(p_cuStreamSynchronize(s[0]));
    n = read_log(log, order);
    CHECK(n == 4 && position(order, n, 7) < position(order, n, 8) &&
          position(order, n, 9) < position(order, n, 10));
    OK(p_cuGraphExecDestroy(gx));
    OK(p_cuGraphDestroy(g));

    /* what a capture forbids */
    CUgraph none = (CUgraph)1;
    OK(p_cuStreamBeginCapture(s[0], CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT(p_cuStreamSynchronize(s[0]), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT(p_cuLaunchKernel(f_append, 1, 1, 1, 1, 1, 1, 0, s[0], args, NULL),
           CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT(p_cuStreamEndCapture(s[0], &none), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CHECK(none == NULL);
    OK(p_cuStreamBeginCapture(s[0], CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT(p_cuStreamQuery(s[0]), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT(p_cuStreamEndCapture(s[0], &none), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    OK(p_cuStreamBeginCapture(s[0], CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT(p_cuStreamAddCallback(s[0], (CUstreamCallback)count_call, NULL, 0),
           CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT(p_cuStreamEndCapture(s[0], &none), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT(p_cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
           CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT(p_cuStreamEndCapture(s[0], &none), CUDA_ERROR_ILLEGAL_STATE);

    /* events recorded outside the capture, or in another capture */
    OK(p_cuEventRecord(ev[1], s[1]));
    OK(p_cuStreamBeginCapture(s[0], CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT(p_cuStreamWaitEvent(s[0], ev[1], 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
    EXPECT(p_cuStreamEndCapture(s[0], &none), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    OK(p_cuStreamBeginCapture(s[0], CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(p_cuStreamBeginCapture(s[1], CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(p_cuEventRecord(ev[1], s[1]));
    EXPECT(p_cuStreamWaitEvent(s[0], ev[1], 0), CUDA_ERROR_STREAM_CAPTURE_MERGE);
    EXPECT(p_cuStreamEndCapture(s[0], &none), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    OK(p_cuStreamEndCapture(s[1], &none));
    OK(p_cuGraphDestroy(none));

    /* a fork not joined back */
    OK(p_cuStreamBeginCapture(s[0], CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(p_cuEventRecord(ev[0], s[0]));
    OK(p_cuStreamWaitEvent(s[1], ev[0], 0));
    OK(p_cuLaunchKernel(f_append, 1, 1, 1, 1, 1, 1, 0, s[1], args, NULL));
    EXPECT(p_cuStreamEndCapture(s[0], &none), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
    OK(p_cuStreamIsCapturing(s[1], &status));
    CHECK(status == CU_STREAM_CAPTURE_STATUS_NONE);

    /* the legacy stream while a blocking stream captures */
    OK(p_cuStreamBeginCapture(legacy_user, CU_STREAM_CAPTURE_MODE_RELAXED));
    EXPECT(p_cuStreamIsCapturing(NULL, &status), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    OK(p_cuStreamIsCapturing(legacy_user, &status));
    CHECK(status == CU_STREAM_CAPTURE_STATUS_ACTIVE); /* a query does not invalidate it */
    EXPECT(p_cuLaunchKernel(f_append, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
           CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    EXPECT(p_cuStreamEndCapture(legacy_user, &none), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

    /* unsafe calls, by capture mode and by the thread's mode */
    CUdeviceptr d;
    OK(p_cuStreamBeginCapture(s[0], CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT(in_thread(alloc_elsewhere), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT(p_cuStreamEndCapture(s[0], &none), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    OK(p_cuStreamBeginCapture(s[0], CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    OK(p_cuThreadExchangeStreamCaptureMode(&mode));
    CHECK(mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
    OK(p_cuMemAlloc(&d, 64));
    OK(p_cuMemFree(d));
    OK(p_cuThreadExchangeStreamCaptureMode(&mode));
    CHECK(mode == CU_STREAM_CAPTURE_MODE_RELAXED);
    mode = (CUstreamCaptureMode)7;
    EXPECT(p_cuThreadExchangeStreamCaptureMode(&mode), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuMemcpyHtoD(log, copied, 4), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT(p_cuStreamEndCapture(s[0], &none), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    OK(p_cuStreamBeginCapture(s[0], CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    OK(in_thread(alloc_elsewhere)); /* other threads are not affected */
    EXPECT(p_cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT(p_cuStreamEndCapture(s[0], &none), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    OK(p_cuStreamBeginCapture(s[0], CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(p_cuMemAlloc(&d, 64));
    value = 6;
    OK(p_cuLaunchKernel(f_append, 1, 1, 1, 1, 1, 1, 0, s[0], args, NULL));
    OK(p_cuMemFree(d));
    OK(p_cuStreamEndCapture(s[0], &none));
    OK(p_cuGraphDestroy(none));

    /* only the thread that began a non-relaxed capture may end it */
    OK(p_cuStreamBeginCapture(s[0], CU_STREAM_CAPTURE_MODE_GLOBAL));
    capture_stream = s[0];
    EXPECT(in_thread(end_capture_elsewhere), CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
    OK(p_cuStreamEndCapture(s[0], &none));
    OK(p_cuGraphDestroy(none));
    OK(p_cuStreamBeginCapture(s[0], CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(in_thread(end_capture_elsewhere));

    /* a stream destroyed while capturing ends its capture */
    OK(p_cuStreamBeginCapture(s[2], CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(p_cuStreamDestroy(s[2]));
    OK(p_cuMemAlloc(&d, 64));  /* no capture is left to forbid it */
    OK(p_cuMemFree(d));
    OK(p_cuGraphExecDestroy(exec));
}

/* -- event record and wait nodes ------------------------------------------------------------ */

static void test_events(void)
{
    start();
    CUdeviceptr log = new_log();
    CUevent e, t0, t1;
    OK(p_cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    OK(p_cuEventCreate(&t0, 0));
    OK(p_cuEventCreate(&t1, 0));
    /* G1: 1 -> record e; G2: wait e -> 2. G1 is held back on its stream for 300 ms. */
    CUgraph g1, g2;
    CUgraphNode a, rec, wait;
    OK(p_cuGraphCreate(&g1, 0));
    OK(p_cuGraphCreate(&g2, 0));
    CUgraphNode start_rec;
    OK(p_cuGraphAddEventRecordNode(&start_rec, g1, NULL, 0, t0));
    a = append_node(g1, &start_rec, 1, log, 1);
    OK(p_cuGraphAddEventRecordNode(&rec, g1, &a, 1, e));
    CUgraphNode end_rec;
    OK(p_cuGraphAddEventRecordNode(&end_rec, g1, &rec, 1, t1));
    OK(p_cuGraphAddEventWaitNode(&wait, g2, NULL, 0, e));
    append_node(g2, &wait, 1, log, 2);
    CUevent got;
    OK(p_cuGraphEventRecordNodeGetEvent(rec, &got));
    CHECK(got == e);
    CUgraphNodeType type;
    OK(p_cuGraphNodeGetType(wait, &type));
    CHECK(type == CU_GRAPH_NODE_TYPE_WAIT_EVENT);
    CUgraphExec x1, x2;
    OK(p_cuGraphInstantiate(&x1, g1, 0));
    OK(p_cuGraphInstantiate(&x2, g2, 0));
    CUstream s1, s2;
    OK(p_cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    OK(p_cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    OK(p_cuLaunchHostFunc(s1, sleep_ms, (void *)(uintptr_t)300));
    OK(p_cuGraphLaunch(x1, s1));
    EXPECT(p_cuEventQuery(e), CUDA_ERROR_NOT_READY);
    OK(p_cuGraphLaunch(x2, s2));
    OK(p_cuStreamSynchronize(s2));
    int order[64];
    int n = read_log(log, order);
    CHECK(n == 2 && order[0] == 1 && order[1] == 2);
    OK(p_cuEventSynchronize(e));
    OK(p_cuStreamSynchronize(s1));
    float ms = -1;
    OK(p_cuEventElapsedTime(&ms, t0, t1));
    CHECK(ms >= 0 && ms < 1000);
    /* the executable graph's record node can record another event */
    CUevent e2;
    OK(p_cuEventCreate(&e2, 0));
    OK(p_cuGraphExecEventRecordNodeSetEvent(x1, rec, e2));
    OK(p_cuGraphLaunch(x1, s1));
    OK(p_cuEventSynchronize(e2));
    OK(p_cuEventQuery(e2));
    OK(p_cuStreamSynchronize(s1));
    OK(p_cuGraphExecDestroy(x1));
    OK(p_cuGraphExecDestroy(x2));
    OK(p_cuGraphDestroy(g1));
    OK(p_cuGraphDestroy(g2));

    /* cuEventRecordWithFlags(EXTERNAL) / cuStreamWaitEvent(EXTERNAL) in a capture become nodes */
    CUstream s;
    OK(p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    EXPECT(p_cuStreamWaitEvent(s, e, CU_EVENT_WAIT_EXTERNAL), CUDA_ERROR_INVALID_VALUE);
    OK(p_cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(p_cuStreamWaitEvent(s, e, CU_EVENT_WAIT_EXTERNAL));
    OK(p_cuEventRecordWithFlags(e2, s, CU_EVENT_RECORD_EXTERNAL));
    CUgraph g;
    OK(p_cuStreamEndCapture(s, &g));
    CUgraphNode nodes[2];
    size_t count = 2;
    OK(p_cuGraphGetNodes(g, nodes, &count));
    CHECK(count == 2);
    OK(p_cuGraphNodeGetType(nodes[0], &type));
    CHECK(type == CU_GRAPH_NODE_TYPE_WAIT_EVENT);
    OK(p_cuGraphNodeGetType(nodes[1], &type));
    CHECK(type == CU_GRAPH_NODE_TYPE_EVENT_RECORD);
    OK(p_cuGraphDestroy(g));
}

/* -- user objects ----------------------------------------------------------------------------- */

static volatile int destroyed;
static void CUDA_CB destroy_object(void *p) { __sync_fetch_and_add((int *)p, 1); }

static int wait_destroyed(int want)
{
    for (int i = 0; i < 200 && destroyed < want; i++)
        usleep(10000);
    return destroyed;
}

static void test_user_objects(void)
{
    start();
    CUuserObject object;
    EXPECT(p_cuUserObjectCreate(&object, (void *)&destroyed, destroy_object, 1, 0),
           CUDA_ERROR_INVALID_VALUE);
    OK(p_cuUserObjectCreate(&object, (void *)&destroyed, destroy_object, 1,
                            CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
    OK(p_cuUserObjectRetain(object, 2));
    OK(p_cuUserObjectRelease(object, 2));
    CUgraph g;
    OK(p_cuGraphCreate(&g, 0));
    CUgraphNode empty;
    OK(p_cuGraphAddEmptyNode(&empty, g, NULL, 0));
    OK(p_cuGraphRetainUserObject(g, object, 1, CU_GRAPH_USER_OBJECT_MOVE)); /* the graph's now */
    EXPECT(p_cuGraphReleaseUserObject(g, object, 2), CUDA_ERROR_INVALID_VALUE);
    OK(p_cuGraphRetainUserObject(g, object, 1, 0));
    OK(p_cuGraphReleaseUserObject(g, object, 1));
    CUgraph copy;
    OK(p_cuGraphClone(&copy, g)); /* a clone holds its own reference */
    CUgraphExec exec;
    OK(p_cuGraphInstantiate(&exec, g, 0));
    OK(p_cuGraphDestroy(g));
    OK(p_cuGraphDestroy(copy));
    usleep(50000);
    CHECK(destroyed == 0); /* the executable graph still holds one */
    CUstream s;
    OK(p_cuStreamCreate(&s, 0));
    OK(p_cuGraphLaunch(exec, s));
    OK(p_cuGraphExecDestroy(exec));
    CHECK(wait_destroyed(1) == 1);
    usleep(20000);
    CHECK(destroyed == 1);
    EXPECT(p_cuUserObjectRelease(object, 1), CUDA_ERROR_INVALID_VALUE);
}

/* -- graph memory, DOT output, failures inside a graph -------------------------------------- */

static void test_memory_nodes(void)
{
    start();
    CUgraph g;
    OK(p_cuGraphCreate(&g, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS ap;
    memset(&ap, 0, sizeof ap);
    ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ap.poolProps.location.id = 0;
    ap.bytesize = 64 * sizeof(int);
    CUgraphNode alloc, zero, a, b, copy, release;
    OK(p_cuGraphAddMemAllocNode(&alloc, g, NULL, 0, &ap));
    CHECK(ap.dptr != 0);
    CUdeviceptr log = ap.dptr;
    CUDA_MEMSET_NODE_PARAMS mp = {log, 0, 0, 4, 64, 1};
    OK(p_cuGraphAddMemsetNode(&zero, g, &alloc, 1, &mp, ctx));
    a = append_node(g, &zero, 1, log, 1);
    b = append_node(g, &a, 1, log, 2);
    static int out[64];
    CUDA_MEMCPY3D cp = copy_1d(CU_MEMORYTYPE_HOST, out, 0, CU_MEMORYTYPE_DEVICE, NULL, log,
                               sizeof out);
    OK(p_cuGraphAddMemcpyNode(&copy, g, &b, 1, &cp, ctx));
    OK(p_cuGraphAddMemFreeNode(&release, g, &copy, 1, log));
    CUdeviceptr freed = 0;
    OK(p_cuGraphMemFreeNodeGetParams(release, &freed));
    CHECK(freed == log);
    CUDA_MEM_ALLOC_NODE_PARAMS aq;
    OK(p_cuGraphMemAllocNodeGetParams(alloc, &aq));
    CHECK(aq.dptr == log && aq.bytesize == 64 * sizeof(int));
    static int not_graph_memory[4];
    EXPECT(p_cuGraphAddMemFreeNode(&release, g, NULL, 0, (CUdeviceptr)not_graph_memory),
           CUDA_ERROR_INVALID_VALUE);
    cuuint64_t used = 0;
    OK(p_cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used));
    CHECK(used >= 64 * sizeof(int));
    CUgraphExec exec;
    CUstream s;
    OK(p_cuStreamCreate(&s, 0));
    OK(p_cuGraphInstantiate(&exec, g, 0));
    OK(p_cuGraphLaunch(exec, s));
    OK(p_cuStreamSynchronize(s));
    CHECK(out[0] == 2 && out[1] == 1 && out[2] == 2);
    OK(p_cuGraphDebugDotPrint(g, dot_path, CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE));
    EXPECT(p_cuGraphDebugDotPrint(g, "/nonexistent/dir/g.dot", 0), CUDA_ERROR_OPERATING_SYSTEM);
    OK(p_cuGraphExecDestroy(exec));
    OK(p_cuGraphDestroy(g));
}

static void test_async_failure(void)
{
    start();
    CUdeviceptr log = new_log();
    CUgraph g;
    OK(p_cuGraphCreate(&g, 0));
    void *args[] = {&log};
    CUgraphNode trap = kernel_node(g, NULL, 0, f_trap, 1, 1, args);
    append_node(g, &trap, 1, log, 1);
    CUgraphExec exec;
    CUstream s;
    OK(p_cuStreamCreate(&s, 0));
    OK(p_cuGraphInstantiate(&exec, g, 0));
    OK(p_cuGraphLaunch(exec, s));
    EXPECT(p_cuStreamSynchronize(s), CUDA_ERROR_LAUNCH_FAILED);
    /* as on a GPU, a trap leaves the device unusable: calls that touch it keep failing */
    int order[64];
    EXPECT(p_cuMemcpyDtoH(order, log, sizeof order), CUDA_ERROR_LAUNCH_FAILED);
    EXPECT(p_cuGraphLaunch(exec, s), CUDA_ERROR_LAUNCH_FAILED);
    CUcontext current = NULL;
    OK(p_cuCtxGetCurrent(&current));
    CHECK(current == ctx);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s LIBRARY TEST PTX [DOT_FILE]\n", argv[0]);
        return 2;
    }
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) { printf("FAIL dlopen: %s\n", dlerror()); return 2; }
    load_all();
    ptx_path = argv[3];
    dot_path = argc > 4 ? argv[4] : "/dev/null";
    struct { const char *name; void (*fn)(void); } tests[] = {
        {"explicit", test_explicit}, {"order", test_order}, {"update", test_update},
        {"misuse", test_misuse}, {"capture", test_capture}, {"events", test_events},
        {"user_objects", test_user_objects}, {"memory_nodes", test_memory_nodes},
        {"async_failure", test_async_failure},
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (strcmp(tests[i].name, argv[2]) == 0) {
            tests[i].fn();
            printf(failures ? "FAILED %d\n" : "PASS\n", failures);
            return failures ? 1 : 0;
        }
    printf("no test %s\n", argv[2]);
    return 2;
}
