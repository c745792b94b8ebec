/* A C client of cuport's libcuda.so.1: `client LIBRARY TEST [ARGS...]` runs one test
 * and prints "PASS" or FAIL lines (tests/capi/test_c_client.py runs each). */
#include "harness.h"

#define API(X)                                                                          \
    X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) \
    X(cuDeviceTotalMem) X(cuDeviceGetAttribute) X(cuDeviceGetUuid)                       \
    X(cuDeviceComputeCapability) X(cuDeviceGetProperties) X(cuDeviceGetPCIBusId)         \
    X(cuCtxCreate) X(cuCtxDestroy) X(cuCtxPushCurrent) X(cuCtxPopCurrent)                \
    X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxGetDevice) X(cuCtxSynchronize)          \
    X(cuCtxGetApiVersion) X(cuCtxGetId) X(cuCtxGetLimit) X(cuCtxSetLimit)                \
    X(cuCtxGetCacheConfig) X(cuCtxSetCacheConfig) X(cuCtxGetFlags)                       \
    X(cuCtxGetStreamPriorityRange) X(cuDevicePrimaryCtxRetain)                           \
    X(cuDevicePrimaryCtxRelease) X(cuDevicePrimaryCtxGetState)                           \
    X(cuDevicePrimaryCtxSetFlags) X(cuDevicePrimaryCtxReset)                             \
    X(cuMemAlloc) X(cuMemFree) X(cuMemAllocPitch) X(cuMemGetInfo) X(cuMemGetAddressRange) \
    X(cuMemAllocHost) X(cuMemFreeHost) X(cuMemHostAlloc) X(cuMemHostGetDevicePointer)    \
    X(cuMemHostGetFlags) X(cuMemHostRegister) X(cuMemHostUnregister) X(cuMemAllocManaged) \
    X(cuMemcpy) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD) X(cuMemcpyHtoDAsync)      \
    X(cuMemcpyDtoHAsync) X(cuMemcpy2D) X(cuMemcpy3D) X(cuMemcpyPeer)                     \
    X(cuMemcpyHtoA) X(cuMemcpyAtoH) X(cuMemcpyAtoA) X(cuMemcpyDtoA) X(cuMemcpyAtoD)      \
    X(cuMemsetD8) X(cuMemsetD16) X(cuMemsetD32) X(cuMemsetD2D8) X(cuMemsetD2D32)         \
    X(cuMemsetD8Async) X(cuMemsetD32Async) X(cuArrayCreate) X(cuArrayDestroy)            \
    X(cuArrayGetDescriptor) X(cuPointerGetAttribute) X(cuPointerGetAttributes)           \
    X(cuMemPrefetchAsync) X(cuMemAdvise) X(cuStreamCreate) X(cuStreamCreateWithPriority) \
    X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamQuery) X(cuStreamWaitEvent)      \
    X(cuStreamGetFlags) X(cuStreamGetPriority) X(cuStreamGetCtx) X(cuStreamIsCapturing)  \
    X(cuStreamAddCallback) X(cuLaunchHostFunc) X(cuEventCreate) X(cuEventRecord)         \
    X(cuEventSynchronize) X(cuEventQuery) X(cuEventElapsedTime) X(cuEventDestroy)        \
    X(cuGetErrorName) X(cuGetErrorString) X(cuGetProcAddress) X(cuGetExportTable)        \
    X(cuModuleLoad) X(cuModuleLoadData) X(cuModuleLoadDataEx) X(cuModuleUnload)          \
    X(cuModuleGetFunction) X(cuModuleGetGlobal) X(cuModuleGetLoadingMode)                \
    X(cuLibraryLoadData) X(cuLibraryGetKernel) X(cuLibraryGetModule) X(cuLibraryUnload)  \
    X(cuLibraryGetGlobal) X(cuKernelGetFunction) X(cuFuncGetAttribute)                   \
    X(cuFuncSetAttribute) X(cuFuncGetName) X(cuLaunchKernel) X(cuLaunchKernelEx)         \
    X(cuProfilerStart) X(cuProfilerStop)

#define DECL(fn) static __typeof__(fn) *p_##fn;
API(DECL)

static void load_all(void)
{
#define LOAD(fn) p_##fn = (__typeof__(fn) *)sym(XSTR(fn));
    API(LOAD)
}

static CUcontext ctx;

static void start(void)
{
    OK(p_cuInit(0));
    OK(p_cuCtxCreate(&ctx, NULL, 0, 0));
}

/* -- devices ------------------------------------------------------------------------ */

static void test_init_and_device(int argc, char **argv)
{
    int n = -1, v = 0, value;
    EXPECT(p_cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT(p_cuInit(1), CUDA_ERROR_INVALID_VALUE);
    OK(p_cuDriverGetVersion(&v));
    CHECK(v >= 13000);
    OK(p_cuInit(0));
    OK(p_cuDeviceGetCount(&n));
    CHECK(n == 1);
    CUdevice dev = -1;
    EXPECT(p_cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
    OK(p_cuDeviceGet(&dev, 0));
    CHECK(dev == 0);
    EXPECT(p_cuDeviceGetCount(NULL), CUDA_ERROR_INVALID_VALUE);
    char name[256] = {0};
    OK(p_cuDeviceGetName(name, sizeof name, 0));
    CHECK(strncmp(name, "cuport CPU", 10) == 0);
    char small[5];
    OK(p_cuDeviceGetName(small, sizeof small, 0));
    CHECK(strlen(small) == 4);
    size_t mem = 0;
    OK(p_cuDeviceTotalMem(&mem, 0));
    CHECK(mem > (1ull << 28));
    struct { CUdevice_attribute a; int want; } expected[] = {
        {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 48 * 1024},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 227 * 1024},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, atoi(argv[0])},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, atoi(argv[1])},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, atoi(argv[2])},
        {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
        {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
        {CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1},
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        OK(p_cuDeviceGetAttribute(&value, expected[i].a, 0));
        if (value != expected[i].want) {
            printf("FAIL attribute %d = %d, expected %d\n", expected[i].a, value, expected[i].want);
            failures++;
        }
    }
    for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; a++)
        OK(p_cuDeviceGetAttribute(&value, (CUdevice_attribute)a, 0));
    EXPECT(p_cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuDeviceGetAttribute(&value, (CUdevice_attribute)9999, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 3), CUDA_ERROR_INVALID_DEVICE);
    int major, minor;
    OK(p_cuDeviceComputeCapability(&major, &minor, 0));
    CHECK(major == atoi(argv[1]) && minor == atoi(argv[2]));
    CUdevprop prop;
    OK(p_cuDeviceGetProperties(&prop, 0));
    CHECK(prop.maxThreadsPerBlock == 1024 && prop.SIMDWidth == 32 && prop.maxThreadsDim[2] == 64);
    CUuuid a, b;
    OK(p_cuDeviceGetUuid(&a, 0));
    CUresult (*uuid_v1)(CUuuid *, CUdevice) = sym("cuDeviceGetUuid");
    OK(uuid_v1(&b, 0));
    CHECK(memcmp(a.bytes, b.bytes, 16) == 0);
    char bus[32];
    OK(p_cuDeviceGetPCIBusId(bus, sizeof bus, 0));
    CHECK(strcmp(bus, "0000:00:00.0") == 0);
}

/* -- contexts ----------------------------------------------------------------------- */

static void test_contexts(int argc, char **argv)
{
    CUcontext a, b, cur, popped;
    CUdeviceptr d;
    OK(p_cuInit(0));
    OK(p_cuCtxGetCurrent(&cur));
    CHECK(cur == NULL);
    EXPECT(p_cuMemAlloc(&d, 64), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(p_cuCtxPopCurrent(&popped), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(p_cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(p_cuCtxCreate(&a, NULL, 0x100, 0), CUDA_ERROR_INVALID_VALUE);
    OK(p_cuCtxCreate(&a, NULL, CU_CTX_SCHED_BLOCKING_SYNC, 0));
    OK(p_cuCtxCreate(&b, NULL, 0, 0));
    CHECK(a != b);
    OK(p_cuCtxGetCurrent(&cur));
    CHECK(cur == b);
    OK(p_cuCtxPopCurrent(&popped));
    CHECK(popped == b);
    OK(p_cuCtxGetCurrent(&cur));
    CHECK(cur == a);
    unsigned int flags;
    OK(p_cuCtxGetFlags(&flags));
    CHECK(flags == CU_CTX_SCHED_BLOCKING_SYNC);
    OK(p_cuCtxPushCurrent(b));
    CUdevice dev = -1;
    OK(p_cuCtxGetDevice(&dev));
    CHECK(dev == 0);
    unsigned int version = 0;
    OK(p_cuCtxGetApiVersion(b, &version));
    CHECK(version >= 3020);
    unsigned long long ida, idb;
    OK(p_cuCtxGetId(a, &ida));
    OK(p_cuCtxGetId(b, &idb));
    CHECK(ida != idb);
    size_t limit;
    OK(p_cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096));
    OK(p_cuCtxGetLimit(&limit, CU_LIMIT_STACK_SIZE));
    CHECK(limit == 4096);
    EXPECT(p_cuCtxGetLimit(&limit, (CUlimit)77), CUDA_ERROR_INVALID_VALUE);
    CUfunc_cache cache;
    OK(p_cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_SHARED));
    OK(p_cuCtxGetCacheConfig(&cache));
    CHECK(cache == CU_FUNC_CACHE_PREFER_SHARED);
    int least, greatest;
    OK(p_cuCtxGetStreamPriorityRange(&least, &greatest));
    CHECK(least == 0 && greatest < 0);
    /* memory of b, then b destroyed: the memory goes, b's handle is dead */
    OK(p_cuMemAlloc(&d, 64));
    OK(p_cuCtxDestroy(b));
    OK(p_cuCtxGetCurrent(&cur));
    CHECK(cur == a);
    EXPECT(p_cuCtxPushCurrent(b), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(p_cuCtxDestroy(b), CUDA_ERROR_CONTEXT_IS_DESTROYED); /* as an H200 answers (tests/driver/recorded) */
    EXPECT(p_cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuCtxSetCurrent((CUcontext)0x1234), CUDA_ERROR_INVALID_CONTEXT);
    /* the legacy (pre-_v2) symbols are the same functions */
    CUresult (*create_v1)(CUcontext *, unsigned int, CUdevice) = sym("cuCtxCreate");
    CUresult (*destroy_v1)(CUcontext) = sym("cuCtxDestroy");
    CUcontext c;
    OK(create_v1(&c, 0, 0));
    OK(destroy_v1(c));
    OK(p_cuCtxDestroy(a));
    OK(p_cuCtxGetCurrent(&cur));
    CHECK(cur == NULL);
}

static void test_primary_context(int argc, char **argv)
{
    unsigned int flags;
    int active;
    CUcontext p1, p2;
    CUdeviceptr d;
    OK(p_cuInit(0));
    OK(p_cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK(flags == 0 && active == 0);
    OK(p_cuDevicePrimaryCtxRetain(&p1, 0));
    OK(p_cuDevicePrimaryCtxRetain(&p2, 0));
    CHECK(p1 == p2);
    OK(p_cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK(active == 1);
    OK(p_cuDevicePrimaryCtxSetFlags(0, CU_CTX_SCHED_YIELD));
    CUresult (*set_flags_v1)(CUdevice, unsigned int) = sym("cuDevicePrimaryCtxSetFlags");
    EXPECT(set_flags_v1(0, 0), CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE);
    OK(p_cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK(flags == CU_CTX_SCHED_YIELD);
    EXPECT(p_cuCtxDestroy(p1), CUDA_ERROR_INVALID_CONTEXT);
    OK(p_cuCtxSetCurrent(p1));
    OK(p_cuMemAlloc(&d, 100));
    OK(p_cuDevicePrimaryCtxRelease(0));
    OK(p_cuDevicePrimaryCtxRelease(0)); /* last release: inactive, memory freed */
    EXPECT(p_cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
    OK(p_cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK(active == 0);
    EXPECT(p_cuMemAlloc(&d, 100), CUDA_ERROR_INVALID_CONTEXT); /* current, but inactive */
    OK(p_cuDevicePrimaryCtxRetain(&p2, 0));
    CHECK(p1 == p2);
    OK(p_cuMemAlloc(&d, 100));
    OK(p_cuDevicePrimaryCtxReset(0));
    OK(p_cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK(active == 0 && flags == 0);
}

/* -- memory ------------------------------------------------------------------------- */

static void test_memory(int argc, char **argv)
{
    start();
    enum { N = 4096 };
    static unsigned char h[N], g[N];
    for (int i = 0; i < N; i++)
        h[i] = (unsigned char)(i * 7 + 1);
    CUdeviceptr d, e, base;
    size_t size;
    OK(p_cuMemAlloc(&d, N));
    CHECK(d % 4096 == 0);
    OK(p_cuMemAlloc(&e, N));
    OK(p_cuMemcpyHtoD(d, h, N));
    OK(p_cuMemcpyDtoD(e, d, N));
    OK(p_cuMemcpyDtoH(g, e, N));
    CHECK(memcmp(h, g, N) == 0);
    OK(p_cuMemGetAddressRange(&base, &size, d + 100));
    CHECK(base == d && size == N);
    OK(p_cuMemGetAddressRange(NULL, &size, d + 100));
    EXPECT(p_cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)h), CUDA_ERROR_NOT_FOUND);
    size_t free_, total;
    OK(p_cuMemGetInfo(&free_, &total));
    CHECK(free_ > 0 && free_ <= total);
    /* memsets */
    OK(p_cuMemsetD8(d, 0xab, N));
    OK(p_cuMemcpyDtoH(g, d, N));
    CHECK(g[0] == 0xab && g[N - 1] == 0xab);
    OK(p_cuMemsetD16(d + 2, 0x1234, 10));
    OK(p_cuMemsetD32(d + 64, 0xdeadbeef, 4));
    OK(p_cuMemcpyDtoH(g, d, N));
    CHECK(((uint16_t *)g)[1] == 0x1234 && ((uint16_t *)g)[10] == 0x1234 && ((uint16_t *)g)[11] == 0xabab);
    CHECK(((uint32_t *)g)[16] == 0xdeadbeef && ((uint32_t *)g)[19] == 0xdeadbeef && ((uint32_t *)g)[20] == 0xabababab);
    /* 2D: a pitched allocation, a memset of a sub-rectangle, a 2D copy back */
    CUdeviceptr p;
    size_t pitch;
    OK(p_cuMemAllocPitch(&p, &pitch, 100, 8, 4));
    CHECK(pitch >= 100 && pitch % 256 == 0);
    OK(p_cuMemsetD2D8(p, pitch, 0, 100, 8));
    OK(p_cuMemsetD2D32(p + 4, pitch, 0x01020304, 2, 3));
    unsigned char rect[8][100];
    CUDA_MEMCPY2D c2 = {0};
    c2.srcMemoryType = CU_MEMORYTYPE_DEVICE; c2.srcDevice = p; c2.srcPitch = pitch;
    c2.dstMemoryType = CU_MEMORYTYPE_HOST; c2.dstHost = rect; c2.dstPitch = 100;
    c2.WidthInBytes = 100; c2.Height = 8;
    OK(p_cuMemcpy2D(&c2));
    CHECK(*(uint32_t *)&rect[2][4] == 0x01020304 && *(uint32_t *)&rect[2][8] == 0x01020304);
    CHECK(rect[3][4] == 0 && rect[0][3] == 0 && rect[2][12] == 0);
    c2.Height = 9; /* one row past the allocation */
    EXPECT(p_cuMemcpy2D(&c2), CUDA_ERROR_INVALID_VALUE);
    /* 3D: a 4x3x2 box of a 10x5x3 volume */
    CUdeviceptr vol;
    unsigned char box[2][3][4], back[3][5][10] = {{{0}}};
    for (int i = 0; i < 24; i++) ((unsigned char *)box)[i] = (unsigned char)(i + 1);
    OK(p_cuMemAlloc(&vol, 150));
    OK(p_cuMemsetD8(vol, 0, 150));
    CUDA_MEMCPY3D c3 = {0};
    c3.srcMemoryType = CU_MEMORYTYPE_HOST; c3.srcHost = box; c3.srcPitch = 4; c3.srcHeight = 3;
    c3.dstMemoryType = CU_MEMORYTYPE_DEVICE; c3.dstDevice = vol; c3.dstPitch = 10; c3.dstHeight = 5;
    c3.dstXInBytes = 1; c3.dstY = 1; c3.dstZ = 1;
    c3.WidthInBytes = 4; c3.Height = 3; c3.Depth = 2;
    OK(p_cuMemcpy3D(&c3));
    OK(p_cuMemcpyDtoH(back, vol, 150));
    CHECK(back[1][1][1] == 1 && back[1][1][4] == 4 && back[1][2][1] == 5 && back[2][3][4] == 24);
    CHECK(back[0][1][1] == 0 && back[1][1][0] == 0 && back[1][1][5] == 0);
    /* unified copy, and between "peers" */
    OK(p_cuMemcpy(e, (CUdeviceptr)(uintptr_t)h, 16));
    OK(p_cuMemcpyPeer(d, ctx, e, ctx, 16));
    OK(p_cuMemcpyDtoH(g, d, 16));
    CHECK(memcmp(g, h, 16) == 0);
    /* page-locked and registered host memory: the device sees them at the same address */
    void *ph;
    CUdeviceptr dp;
    unsigned int hflags;
    OK(p_cuMemHostAlloc(&ph, 1000, CU_MEMHOSTALLOC_DEVICEMAP));
    OK(p_cuMemHostGetDevicePointer(&dp, ph, 0));
    CHECK(dp == (CUdeviceptr)(uintptr_t)ph);
    OK(p_cuMemHostGetFlags(&hflags, ph));
    CHECK(hflags == CU_MEMHOSTALLOC_DEVICEMAP);
    OK(p_cuMemsetD8(dp, 9, 1000));
    CHECK(((unsigned char *)ph)[999] == 9);
    OK(p_cuMemFreeHost(ph));
    void *ph2;
    OK(p_cuMemAllocHost(&ph2, 64));
    OK(p_cuMemFreeHost(ph2));
    static char reg[8192];
    OK(p_cuMemHostRegister(reg, sizeof reg, 0));
    EXPECT(p_cuMemHostRegister(reg + 100, 10, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    OK(p_cuMemHostGetDevicePointer(&dp, reg + 8, 0));
    CHECK(dp == (CUdeviceptr)(uintptr_t)(reg + 8));
    OK(p_cuMemcpyDtoD(dp, d, 16));
    CHECK(memcmp(reg + 8, h, 16) == 0);
    OK(p_cuMemHostUnregister(reg));
    EXPECT(p_cuMemHostUnregister(reg), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    /* managed memory and its hints */
    CUdeviceptr m;
    OK(p_cuMemAllocManaged(&m, 256, CU_MEM_ATTACH_GLOBAL));
    ((int *)(uintptr_t)m)[3] = 42;
    int three;
    OK(p_cuMemcpyDtoH(&three, m + 12, 4));
    CHECK(three == 42);
    CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    OK(p_cuMemPrefetchAsync(m, 256, loc, 0, 0));
    OK(p_cuMemAdvise(m, 256, CU_MEM_ADVISE_SET_READ_MOSTLY, loc));
    EXPECT(p_cuMemAllocManaged(&m, 256, 0), CUDA_ERROR_INVALID_VALUE);
    /* pointer attributes */
    unsigned int type = 0, managed = 1;
    CUcontext owner;
    OK(p_cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 5));
    CHECK(type == CU_MEMORYTYPE_DEVICE);
    OK(p_cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, d));
    CHECK(owner == ctx);
    OK(p_cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m));
    CHECK(managed == 1);
    CUdeviceptr start_;
    OK(p_cuPointerGetAttribute(&start_, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d + 77));
    CHECK(start_ == d);
    int local;
    EXPECT(p_cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)&local),
           CUDA_ERROR_INVALID_VALUE);
    CUpointer_attribute attrs[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_CONTEXT,
                                    CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    unsigned int t2 = 7;
    CUcontext c2x = (CUcontext)1;
    size_t rsize = 7;
    void *data[3] = {&t2, &c2x, &rsize};
    OK(p_cuPointerGetAttributes(3, attrs, data, (CUdeviceptr)(uintptr_t)&local));
    CHECK(t2 == 0 && c2x == NULL && rsize == 0);
    OK(p_cuPointerGetAttributes(3, attrs, data, d + 1));
    CHECK(t2 == CU_MEMORYTYPE_DEVICE && c2x == ctx && rsize == N);
    /* arrays */
    CUDA_ARRAY_DESCRIPTOR desc = {16, 4, CU_AD_FORMAT_FLOAT, 2}, got;
    CUarray arr, arr2;
    OK(p_cuArrayCreate(&arr, &desc));
    OK(p_cuArrayCreate(&arr2, &desc));
    OK(p_cuArrayGetDescriptor(&got, arr));
    CHECK(got.Width == 16 && got.Height == 4 && got.NumChannels == 2);
    OK(p_cuMemcpyHtoA(arr, 8, h, 500));
    OK(p_cuMemcpyAtoA(arr2, 0, arr, 0, 512));
    OK(p_cuMemcpyAtoH(g, arr2, 8, 500));
    CHECK(memcmp(g, h, 500) == 0);
    OK(p_cuMemcpyAtoD(d, arr2, 8, 100));
    OK(p_cuMemcpyDtoA(arr, 400, d, 24));
    EXPECT(p_cuMemcpyHtoA(arr, 500, h, 13), CUDA_ERROR_INVALID_VALUE); /* array is 512 bytes */
    OK(p_cuArrayDestroy(arr));
    EXPECT(p_cuArrayDestroy(arr), CUDA_ERROR_INVALID_HANDLE);
    OK(p_cuMemFree(d));
    OK(p_cuMemFree(e));
    OK(p_cuMemFree(p));
    OK(p_cuMemFree(vol));
    OK(p_cuMemFree(m));
}

static void test_memory_misuse(int argc, char **argv)
{
    start();
    CUdeviceptr d;
    char h[256];
    EXPECT(p_cuMemAlloc(&d, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuMemAlloc(NULL, 16), CUDA_ERROR_INVALID_VALUE);
    OK(p_cuMemAlloc(&d, 100));
    EXPECT(p_cuMemcpyHtoD(d, h, 101), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuMemcpyDtoH(h, d + 50, 51), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuMemcpyDtoD(d, d + 1, 100), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuMemsetD32(d + 1, 0, 4), CUDA_ERROR_INVALID_VALUE);   /* misaligned */
    EXPECT(p_cuMemsetD32(d + 96, 0, 2), CUDA_ERROR_INVALID_VALUE);  /* past the end */
    EXPECT(p_cuMemcpyHtoD((CUdeviceptr)(uintptr_t)h, h + 128, 16), CUDA_ERROR_INVALID_VALUE); /* not device memory */
    EXPECT(p_cuMemcpyHtoD(d, NULL, 16), CUDA_ERROR_INVALID_VALUE);
    OK(p_cuMemcpyHtoD(d, NULL, 0));
    void *host = malloc(64);
    EXPECT(p_cuMemFree((CUdeviceptr)(uintptr_t)host), CUDA_ERROR_INVALID_VALUE); /* a host pointer */
    EXPECT(p_cuMemFree(d + 8), CUDA_ERROR_INVALID_VALUE); /* not the start */
    EXPECT(p_cuMemFreeHost((void *)(uintptr_t)d), CUDA_ERROR_INVALID_VALUE); /* device memory */
    void *ph;
    OK(p_cuMemAllocHost(&ph, 64));
    EXPECT(p_cuMemFree((CUdeviceptr)(uintptr_t)ph), CUDA_ERROR_INVALID_VALUE); /* page-locked host memory */
    OK(p_cuMemFreeHost(ph));
    OK(p_cuMemFree(d));
    EXPECT(p_cuMemFree(d), CUDA_ERROR_INVALID_VALUE); /* double free */
    EXPECT(p_cuMemcpyHtoD(d, h, 16), CUDA_ERROR_INVALID_VALUE); /* use after free */
    free(host);
}

/* -- streams and events --------------------------------------------------------------- */

struct slow { int delay_ms; volatile int *flag; int value; volatile int *seen; };

static void CUDA_CB slow_set(void *p)
{
    struct slow *s = p;
    usleep(s->delay_ms * 1000);
    *s->flag = s->value;
}

static void CUDA_CB read_flag(void *p)
{
    struct slow *s = p;
    *s->seen = *s->flag;
}

static volatile int callback_status = -1;
static void CUDA_CB stream_callback(CUstream s, CUresult status, void *user)
{
    callback_status = (int)status + *(int *)user;
}

static void test_streams_events(int argc, char **argv)
{
    start();
    CUstream s, s2, nb;
    unsigned int flags;
    int prio;
    CUcontext owner;
    OK(p_cuStreamCreate(&s, CU_STREAM_DEFAULT));
    OK(p_cuStreamCreateWithPriority(&s2, CU_STREAM_DEFAULT, -3));
    OK(p_cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    EXPECT(p_cuStreamCreate(&s, 0x10), CUDA_ERROR_INVALID_VALUE);
    OK(p_cuStreamGetFlags(nb, &flags));
    CHECK(flags == CU_STREAM_NON_BLOCKING);
    OK(p_cuStreamGetPriority(s2, &prio));
    CHECK(prio == -3);
    OK(p_cuStreamGetCtx(s, &owner));
    CHECK(owner == ctx);
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    OK(p_cuStreamIsCapturing(s, &cap));
    CHECK(cap == CU_STREAM_CAPTURE_STATUS_NONE);

    /* work on a stream runs in order, asynchronously with respect to the host */
    enum { N = 1 << 16 };
    CUdeviceptr d;
    static unsigned char host[N];
    OK(p_cuMemAlloc(&d, N));
    volatile int flag = 0, seen = -1;
    struct slow first = {500, &flag, 1, &seen};
    double t0 = now_ms();
    OK(p_cuLaunchHostFunc(s, slow_set, &first));
    OK(p_cuMemsetD8Async(d, 5, N, s));
    OK(p_cuMemsetD32Async(d, 0x07070707, 16, s));
    CHECK(now_ms() - t0 < 350); /* the host function sleeps 500 ms on the stream's thread */
    EXPECT(p_cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    OK(p_cuStreamSynchronize(s));
    CHECK(flag == 1);
    OK(p_cuStreamQuery(s));
    OK(p_cuMemcpyDtoH(host, d, N));
    CHECK(host[0] == 7 && host[63] == 7 && host[64] == 5 && host[N - 1] == 5);

    /* an asynchronous copy from pageable memory takes its bytes at the call */
    static unsigned char src[64], dst[64];
    memset(src, 1, sizeof src);
    flag = 0;
    OK(p_cuLaunchHostFunc(s, slow_set, &first));
    OK(p_cuMemcpyHtoDAsync(d, src, 64, s));
    memset(src, 2, sizeof src);
    OK(p_cuMemcpyDtoHAsync(dst, d, 64, s)); /* to pageable memory: done when it returns */
    CHECK(dst[0] == 1 && dst[63] == 1);

    /* events: timing, and another stream waiting for one */
    CUevent e0, e1, untimed, never;
    float ms = -1;
    OK(p_cuEventCreate(&e0, CU_EVENT_DEFAULT));
    OK(p_cuEventCreate(&e1, CU_EVENT_DEFAULT));
    OK(p_cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
    OK(p_cuEventCreate(&never, CU_EVENT_DEFAULT));
    OK(p_cuEventQuery(never));
    EXPECT(p_cuEventElapsedTime(&ms, e0, never), CUDA_ERROR_INVALID_HANDLE);
    flag = 0;
    seen = -1;
    struct slow slow200 = {200, &flag, 2, &seen};
    OK(p_cuEventRecord(e0, s));
    OK(p_cuLaunchHostFunc(s, slow_set, &slow200));
    OK(p_cuEventRecord(e1, s));
    OK(p_cuEventRecord(untimed, s));
    EXPECT(p_cuEventQuery(e1), CUDA_ERROR_NOT_READY);
    EXPECT(p_cuEventElapsedTime(&ms, e0, e1), CUDA_ERROR_NOT_READY);
    OK(p_cuStreamWaitEvent(s2, e1, 0));
    OK(p_cuLaunchHostFunc(s2, read_flag, &slow200));
    OK(p_cuStreamSynchronize(s2));
    CHECK(seen == 2);
    OK(p_cuEventSynchronize(e1));
    OK(p_cuEventElapsedTime(&ms, e0, e1));
    CHECK(ms >= 150 && ms < 5000);
    EXPECT(p_cuEventElapsedTime(&ms, e0, untimed), CUDA_ERROR_INVALID_HANDLE);

    /* the legacy default stream waits for blocking streams, not for non-blocking ones */
    flag = 0;
    seen = -1;
    struct slow blocking = {200, &flag, 3, &seen};
    OK(p_cuLaunchHostFunc(s, slow_set, &blocking));
    OK(p_cuLaunchHostFunc(CU_STREAM_LEGACY, read_flag, &blocking));
    OK(p_cuStreamSynchronize(0));
    CHECK(seen == 3);
    flag = 0;
    seen = -1;
    struct slow nonblocking = {300, &flag, 4, &seen};
    OK(p_cuLaunchHostFunc(nb, slow_set, &nonblocking));
    OK(p_cuLaunchHostFunc(0, read_flag, &nonblocking));
    OK(p_cuStreamSynchronize(0));
    CHECK(seen == 0);
    OK(p_cuStreamSynchronize(nb));
    CHECK(flag == 4);
    /* ... and a blocking stream's later work waits for the legacy stream */
    flag = 0;
    seen = -1;
    struct slow legacy_first = {200, &flag, 5, &seen};
    OK(p_cuLaunchHostFunc(0, slow_set, &legacy_first));
    OK(p_cuLaunchHostFunc(s2, read_flag, &legacy_first));
    OK(p_cuCtxSynchronize());
    CHECK(seen == 5);

    /* the per-thread default stream, by handle and through a _ptsz symbol */
    CUresult (*memset_ptsz)(CUdeviceptr, unsigned char, size_t, CUstream) = sym("cuMemsetD8Async_ptsz");
    OK(memset_ptsz(d, 11, 32, 0));
    OK(p_cuStreamSynchronize(CU_STREAM_PER_THREAD));
    OK(p_cuMemcpyDtoH(host, d, 32));
    CHECK(host[31] == 11);

    int add = 100;
    OK(p_cuStreamAddCallback(s, stream_callback, &add, 0));
    OK(p_cuStreamSynchronize(s));
    CHECK(callback_status == 100);

    /* destroyed and bogus handles */
    OK(p_cuEventDestroy(never));
    EXPECT(p_cuEventRecord(never, s), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(p_cuEventQuery(never), CUDA_ERROR_INVALID_HANDLE);
    OK(p_cuStreamDestroy(s2));
    EXPECT(p_cuStreamSynchronize(s2), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(p_cuStreamQuery((CUstream)0x1234), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(p_cuMemsetD8Async(d, 0, 16, (CUstream)(uintptr_t)e0), CUDA_ERROR_INVALID_HANDLE);
    OK(p_cuStreamDestroy(s));
    OK(p_cuStreamDestroy(nb));
    OK(p_cuMemFree(d));
}

/* -- cuGetProcAddress ------------------------------------------------------------------ */

static void *lookup(const char *name, int version, cuuint64_t flags, CUresult want,
                    CUdriverProcAddressQueryResult want_status)
{
    void *pfn = (void *)1;
    CUdriverProcAddressQueryResult status = (CUdriverProcAddressQueryResult)99;
    CUresult r = p_cuGetProcAddress(name, &pfn, version, flags, &status);
    if (r != want || status != want_status) {
        printf("FAIL cuGetProcAddress(%s, %d, %llu) = %d status %d, expected %d status %d\n",
               name, version, (unsigned long long)flags, r, status, want, want_status);
        failures++;
    }
    return pfn;
}

static void expect_symbol(const char *name, int version, cuuint64_t flags, const char *symbol)
{
    void *pfn = lookup(name, version, flags, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS);
    if (pfn != sym(symbol)) {
        printf("FAIL cuGetProcAddress(%s, %d, %llu) is not %s\n", name, version,
               (unsigned long long)flags, symbol);
        failures++;
    }
}

static void test_proc_address(int argc, char **argv)
{
    CHECK(lookup("", 0, 0, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND) == NULL);
    CHECK(lookup("cuNoSuchFunction", 13000, 0, CUDA_ERROR_NOT_FOUND,
                 CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND) == NULL);
    CHECK(lookup("cuMemAllocAsync", 11000, 0, CUDA_ERROR_NOT_FOUND,
                 CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT) == NULL);
    expect_symbol("cuGetProcAddress", 13000, 0, "cuGetProcAddress_v2");
    expect_symbol("cuGetProcAddress", 11030, 0, "cuGetProcAddress");
    expect_symbol("cuInit", 2000, 0, "cuInit");
    expect_symbol("cuMemAlloc", 13000, 0, "cuMemAlloc_v2");
    expect_symbol("cuMemAlloc", 3000, 0, "cuMemAlloc");
    expect_symbol("cuCtxCreate", 12050, 0, "cuCtxCreate_v4");
    expect_symbol("cuCtxCreate", 11040, 0, "cuCtxCreate_v3");
    expect_symbol("cuCtxCreate", 3020, 0, "cuCtxCreate_v2");
    expect_symbol("cuDeviceGetUuid", 11040, 0, "cuDeviceGetUuid_v2");
    expect_symbol("cuDeviceGetUuid", 9020, 0, "cuDeviceGetUuid");
    expect_symbol("cuStreamGetCaptureInfo", 12030, 0, "cuStreamGetCaptureInfo_v3");
    expect_symbol("cuStreamGetCaptureInfo", 11030, 0, "cuStreamGetCaptureInfo_v2");
    expect_symbol("cuStreamGetCaptureInfo", 12030, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                  "cuStreamGetCaptureInfo_v3_ptsz");
    expect_symbol("cuMemcpyHtoD", 13000, 0, "cuMemcpyHtoD_v2");
    expect_symbol("cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                  "cuMemcpyHtoD_v2_ptds");
    expect_symbol("cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuMemcpyHtoD_v2");
    expect_symbol("cuLaunchKernel", 13000, 0, "cuLaunchKernel");
    expect_symbol("cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                  "cuLaunchKernel_ptsz");
    /* names with no per-thread variant answer the plain one */
    expect_symbol("cuMemAlloc", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemAlloc_v2");
    expect_symbol("cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2");
    expect_symbol("cuCtxGetDevice", 12090, 0, "cuCtxGetDevice");
    void *pfn;
    EXPECT(p_cuGetProcAddress("cuInit", &pfn, 13000, 8, NULL), CUDA_ERROR_INVALID_VALUE);
    OK(p_cuGetProcAddress("cuInit", &pfn, 13000, 0, NULL)); /* the status is optional */
    CUresult (*v1)(const char *, void **, int, cuuint64_t) = sym("cuGetProcAddress");
    OK(v1("cuMemFree", &pfn, 13000, 0));
    CHECK(pfn == sym("cuMemFree_v2"));
    EXPECT(v1("nothing", &pfn, 13000, 0), CUDA_ERROR_NOT_FOUND);
    CHECK(pfn == NULL);
}

/* -- export tables ------------------------------------------------------------------------ */

static const CUuuid ID_CUDART = {{(char)0x6b, (char)0xd5, (char)0xfb, 0x6c, 0x5b, (char)0xf4, (char)0xe7, 0x4a,
                                  (char)0x89, (char)0x87, (char)0xd9, 0x39, 0x12, (char)0xfd, (char)0x9d, (char)0xf9}};

static void uuid_from_hex(CUuuid *out, const char *hex)
{
    for (int i = 0; i < 16; i++) {
        unsigned int b;
        sscanf(hex + 2 * i, "%2x", &b);
        out->bytes[i] = (char)b;
    }
}

static void **table(const char *hex)
{
    CUuuid id;
    const void *t = NULL;
    uuid_from_hex(&id, hex);
    CUresult r = p_cuGetExportTable(&t, &id);
    if (r != CUDA_SUCCESS || t == NULL) {
        printf("FAIL export table %s: %d\n", hex, r);
        failures++;
        exit(1);
    }
    return (void **)t;
}

static int dtor_calls;
static CUcontext dtor_ctx;
static void *dtor_key, *dtor_value;
static void cls_dtor(CUcontext c, void *key, void *value)
{
    dtor_calls++;
    dtor_ctx = c;
    dtor_key = key;
    dtor_value = value;
}

static void test_export_tables(int argc, char **argv)
{
    const void *t = (void *)1;
    CUuuid unknown;
    uuid_from_hex(&unknown, "f8cff95121468b4eb9e2fb469e7c0dd9");
    EXPECT(p_cuGetExportTable(&t, &unknown), CUDA_ERROR_NOT_FOUND);
    const void *cudart = NULL;
    OK(p_cuGetExportTable(&cudart, &ID_CUDART)); /* before cuInit, as cudart asks */
    OK(p_cuInit(0));

    void **rt = table("6bd5fb6c5bf4e74a8987d93912fd9df9");
    CHECK(rt == cudart);
    CHECK((uintptr_t)rt[0] == 13 * 8);
    CUcontext primary = NULL, retained;
    OK(((CUresult (*)(CUcontext *, CUdevice))rt[2])(&primary, 0));
    OK(p_cuDevicePrimaryCtxRetain(&retained, 0));
    CHECK(primary != NULL && primary == retained);
    OK(((CUresult (*)(void))rt[12])());
    EXPECT(((CUresult (*)(void))rt[5])(), CUDA_ERROR_NOT_SUPPORTED); /* a slot nobody calls */

    void **hooks = table("a094798c2e742e7493f20800200c0a66");
    CHECK((uintptr_t)hooks[0] >= 56);
    uint32_t *flags = NULL;
    size_t count = 0;
    ((void (*)(void **, size_t *))hooks[2])((void **)&flags, &count);
    CHECK(count >= 567 && flags != NULL);
    for (size_t i = 0; i < count; i++)
        if (flags[i]) { CHECK(flags[i] == 0); break; }
    ((void (*)(void **, size_t *))hooks[6])((void **)&flags, &count);
    CHECK(count >= 14 && flags != NULL && flags[13] == 0);

    void **tls = table("42d85a8123f6cb478298f6e78a3aecdc");
    CHECK((uintptr_t)tls[0] == 4 * 8);
    void **unnamed = table("21318c60971432488ca641ff7324c8f2");
    CHECK((uintptr_t)unnamed[0] >= 52 * 8);
    EXPECT(((CUresult (*)(void))unnamed[39])(), CUDA_ERROR_NOT_SUPPORTED);

    void **checks = table("263e88607cd2614392f6bbd5006dfa7e");
    CHECK((uintptr_t)checks[0] == 4 * 8);
    uint32_t out = 7;
    OK(((CUresult (*)(CUcontext, uint32_t *, void **))checks[2])(primary, &out, NULL));
    CHECK(out == 0);
    CHECK(((uint32_t (*)(void))checks[3])() == 0);

    /* context-local storage: no size in slot 0, slot 3 NULL */
    void **cls = table("c693336e1121df11a8c368f355d89593");
    CHECK(cls[3] == NULL);
    CUresult (*put)(CUcontext, void *, void *, void (*)(CUcontext, void *, void *)) = cls[0];
    CUresult (*del)(CUcontext, void *) = cls[1];
    CUresult (*get)(void **, CUcontext, void *) = cls[2];
    CUcontext c;
    void *value = NULL;
    int key1, key2;
    OK(p_cuCtxCreate(&c, NULL, 0, 0));
    EXPECT(get(&value, NULL, &key1), CUDA_ERROR_INVALID_HANDLE);
    OK(put(NULL, &key1, (void *)0x1111, cls_dtor));
    OK(put(c, &key2, (void *)0x2222, NULL));
    OK(get(&value, c, &key1));
    CHECK(value == (void *)0x1111);
    OK(get(&value, NULL, &key2));
    CHECK(value == (void *)0x2222);
    OK(del(NULL, &key2));
    EXPECT(get(&value, c, &key2), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(del(c, &key2), CUDA_ERROR_INVALID_HANDLE);
    CHECK(dtor_calls == 0);
    OK(p_cuCtxDestroy(c));
    CHECK(dtor_calls == 1 && dtor_ctx == c && dtor_key == &key1 && dtor_value == (void *)0x1111);

    /* integrity check: constants for versions ending in 0 and 1, a digest otherwise */
    void **integrity = table("d4082055bde6704b8d34ba123c66e1f2");
    CHECK((uintptr_t)integrity[0] == 3 * 8);
    CUresult (*check)(uint32_t, uint64_t, uint64_t *) = integrity[1];
    uint64_t d[2];
    OK(check(13000, 1700000000, d));
    CHECK(d[0] == 0x3341181C03CB675CULL && d[1] == 0x8ED383AA1F4CD1E8ULL);
    OK(check(12091, 1700000000, d));
    CHECK(d[0] == 0x1841181C03CB675CULL && d[1] == 0x8ED383AA1F4CD1E8ULL);
    int driver;
    OK(p_cuDriverGetVersion(&driver));
    unsigned int versions[] = {13002, 12092, 13052};
    uint64_t seconds[] = {1700000000ULL, 1, 1800000123ULL};
    CUuuid uuid;
    int domain, bus, device;
    OK(p_cuDeviceGetUuid(&uuid, 0));
    OK(p_cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0));
    OK(p_cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0));
    OK(p_cuDeviceGetAttribute(&device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 0));
    for (int i = 0; i < 3; i++) {
        OK(check(versions[i], seconds[i], d));
        printf("DIGEST driver=%d version=%u pid=%d thread=%u cudart=%llu integrity=%llu "
               "slot=%llu seconds=%llu uuid=", driver, versions[i], (int)getpid(),
               (unsigned int)(uintptr_t)pthread_self(), (unsigned long long)(uintptr_t)rt,
               (unsigned long long)(uintptr_t)integrity,
               (unsigned long long)(uintptr_t)integrity[1], (unsigned long long)seconds[i]);
        for (int j = 0; j < 16; j++)
            printf("%02x", (unsigned char)uuid.bytes[j]);
        printf(" pci=%d,%d,%d out=%016llx%016llx\n", domain, bus, device,
               (unsigned long long)d[0], (unsigned long long)d[1]);
    }
}

/* -- errors and the rest ----------------------------------------------------------------- */

static void test_errors(int argc, char **argv)
{
    const char *s = (const char *)1;
    OK(p_cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &s));
    CHECK(strcmp(s, "CUDA_ERROR_INVALID_VALUE") == 0);
    OK(p_cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s));
    CHECK(strcmp(s, "invalid argument") == 0);
    OK(p_cuGetErrorName(CUDA_ERROR_NOT_SUPPORTED, &s));
    CHECK(strcmp(s, "CUDA_ERROR_NOT_SUPPORTED") == 0);
    EXPECT(p_cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
    CHECK(s == NULL);
    EXPECT(p_cuGetErrorString(CUDA_SUCCESS, NULL), CUDA_ERROR_INVALID_VALUE);
    start();
    OK(p_cuProfilerStart());
    OK(p_cuProfilerStop());
    /* a function cuport does not implement: 801, reported once */
    CUresult (*unregister)(void *) = sym("cuGraphicsUnregisterResource");
    EXPECT(unregister(NULL), CUDA_ERROR_NOT_SUPPORTED);
    EXPECT(unregister(NULL), CUDA_ERROR_NOT_SUPPORTED);
    /* one line names the failing call */
    CUdeviceptr d;
    OK(p_cuMemAlloc(&d, 16));
    OK(p_cuMemFree(d));
    EXPECT(p_cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
}

/* -- threads: contexts are per thread, the driver may be called from many at once --------- */

static CUdeviceptr shared_buf;
static void *worker(void *arg)
{
    CUcontext cur = (CUcontext)1;
    long i = (long)arg;
    OK(p_cuCtxGetCurrent(&cur));
    CHECK(cur == NULL); /* a new thread has no current context */
    OK(p_cuCtxSetCurrent(ctx));
    for (int k = 0; k < 50; k++) {
        unsigned int v = (unsigned int)(i * 1000 + k), back = 0;
        OK(p_cuMemcpyHtoD(shared_buf + 4 * i, &v, 4));
        OK(p_cuMemcpyDtoH(&back, shared_buf + 4 * i, 4));
        CHECK(back == v);
    }
    return NULL;
}

static void test_threads(int argc, char **argv)
{
    start();
    pthread_t t[8];
    OK(p_cuMemAlloc(&shared_buf, 64));
    for (long i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
}

struct test { const char *name; void (*fn)(int, char **); };
static const struct test tests[] = {
    {"init_and_device", test_init_and_device},
    {"contexts", test_contexts},
    {"primary_context", test_primary_context},
    {"memory", test_memory},
    {"memory_misuse", test_memory_misuse},
    {"streams_events", test_streams_events},
    {"proc_address", test_proc_address},
    {"export_tables", test_export_tables},
    {"errors", test_errors},
    {"threads", test_threads},
#ifdef EXTRA_TESTS
    EXTRA_TESTS
#endif
};

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s LIBRARY TEST [ARGS...]\n", argv[0]);
        return 2;
    }
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("FAIL dlopen: %s\n", dlerror());
        return 2;
    }
    load_all();
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (strcmp(tests[i].name, argv[2]) == 0) {
            tests[i].fn(argc - 3, argv + 3);
            printf(failures ? "FAILED %d\n" : "PASS\n", failures);
            fflush(stdout);
            return failures ? 1 : 0;
        }
    }
    printf("no test %s\n", argv[2]);
    return 2;
}
