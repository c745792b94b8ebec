/* Modules, libraries and launches through cuport's libcuda.so.1, as a C client does them.
 * `launch LIBRARY TEST PTX_FILE FATBIN_FILE`; run under the fake backend
 * (tests/driver/fake_backend.py), whose kernels are Python functions. */
#include "../../capi/c/harness.h"
#include <unistd.h>

#define API(X)                                                                             \
    X(cuInit) X(cuCtxCreate) X(cuCtxGetCurrent) X(cuMemsetD8) X(cuCtxSynchronize) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) \
    X(cuMemcpyDtoH) X(cuModuleLoad) X(cuModuleLoadData) X(cuModuleLoadDataEx)              \
    X(cuModuleUnload) X(cuModuleGetFunction) X(cuModuleGetGlobal) X(cuModuleGetLoadingMode) \
    X(cuLibraryLoadData) X(cuLibraryLoadFromFile) X(cuLibraryGetKernel) X(cuLibraryGetModule) \
    X(cuLibraryUnload) X(cuLibraryGetGlobal) X(cuKernelGetFunction) X(cuFuncGetAttribute)   \
    X(cuFuncSetAttribute) X(cuFuncGetName) X(cuLaunchKernel) X(cuLaunchKernelEx)            \
    X(cuEventCreate) X(cuEventQuery) X(cuEventSynchronize) X(cuStreamCreate)                \
    X(cuStreamSynchronize) X(cuOccupancyMaxActiveBlocksPerMultiprocessor)

#define DECL(fn) static __typeof__(fn) *p_##fn;
API(DECL)

static void load_all(void)
{
#define LOAD(fn) p_##fn = (__typeof__(fn) *)sym(XSTR(fn));
    API(LOAD)
}

static const char *ptx_path, *fatbin_path;

static char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) { printf("FAIL cannot open %s\n", path); exit(2); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc(n + 1);
    if (fread(data, 1, n, f) != (size_t)n) exit(2);
    data[n] = 0;
    fclose(f);
    if (size) *size = n;
    return data;
}

static void start(void)
{
    CUcontext ctx;
    OK(p_cuInit(0));
    OK(p_cuCtxCreate(&ctx, NULL, 0, 0));
}

enum { N = 1000 };
static float a[N], b[N], c[N];
static CUdeviceptr da, db, dc;

static void vectors(void)
{
    for (int i = 0; i < N; i++) { a[i] = (float)i; b[i] = 0.5f * i; c[i] = -1; }
    OK(p_cuMemAlloc(&da, sizeof a));
    OK(p_cuMemAlloc(&db, sizeof b));
    OK(p_cuMemAlloc(&dc, sizeof c));
    OK(p_cuMemcpyHtoD(da, a, sizeof a));
    OK(p_cuMemcpyHtoD(db, b, sizeof b));
    OK(p_cuMemcpyHtoD(dc, c, sizeof c));
}

static int vadd_correct(void)
{
    OK(p_cuMemcpyDtoH(c, dc, sizeof c));
    for (int i = 0; i < N; i++)
        if (c[i] != 1.5f * i) { printf("c[%d] = %g\n", i, c[i]); return 0; }
    return 1;
}

static void test_module_launch(void)
{
    start();
    vectors();
    CUmodule mod;
    CUfunction vadd, shared, missing;
    int mode = 0;
    OK(p_cuModuleGetLoadingMode((CUmoduleLoadingMode *)&mode));
    CHECK(mode == 1);
    OK(p_cuModuleLoad(&mod, ptx_path));
    OK(p_cuModuleGetFunction(&vadd, mod, "vadd"));
    EXPECT(p_cuModuleGetFunction(&missing, mod, "nope"), CUDA_ERROR_NOT_FOUND);
    int n = N;
    void *args[] = {&da, &db, &dc, &n};
    OK(p_cuLaunchKernel(vadd, (N + 255) / 256, 1, 1, 256, 1, 1, 0, 0, args, NULL));
    OK(p_cuCtxSynchronize());
    CHECK(vadd_correct());

    /* the same launch with the packed buffer form */
    struct { CUdeviceptr a, b, c; int n; } packed = {da, db, dc, N};
    size_t size = sizeof packed;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    OK(p_cuMemcpyHtoD(dc, c, 4 * 10)); /* leave the rest as it is */
    float zero[N] = {0};
    OK(p_cuMemcpyHtoD(dc, zero, sizeof zero));
    OK(p_cuLaunchKernel(vadd, 4, 1, 1, 256, 1, 1, 0, 0, NULL, extra));
    OK(p_cuCtxSynchronize());
    CHECK(vadd_correct());
    size_t small = 8;
    void *short_extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE,
                           &small, CU_LAUNCH_PARAM_END};
    EXPECT(p_cuLaunchKernel(vadd, 4, 1, 1, 256, 1, 1, 0, 0, NULL, short_extra), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuLaunchKernel(vadd, 4, 1, 1, 256, 1, 1, 0, 0, args, extra), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuLaunchKernel(vadd, 4, 1, 1, 256, 1, 1, 0, 0, NULL, NULL), CUDA_ERROR_INVALID_VALUE);

    /* geometry and shared memory checks */
    EXPECT(p_cuLaunchKernel(vadd, 1, 1, 1, 1025, 1, 1, 0, 0, args, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuLaunchKernel(vadd, 1, 1, 1, 32, 32, 2, 0, 0, args, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuLaunchKernel(vadd, 1, 1, 1, 1, 1, 65, 0, 0, args, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuLaunchKernel(vadd, 0, 1, 1, 32, 1, 1, 0, 0, args, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuLaunchKernel(vadd, 1, 65536, 1, 32, 1, 1, 0, 0, args, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuLaunchKernel(vadd, 1, 1, 1, 32, 1, 1, 96 * 1024, 0, args, NULL), CUDA_ERROR_INVALID_VALUE);
    int value = 0;
    OK(p_cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, vadd));
    CHECK(value == 48 * 1024);
    OK(p_cuFuncSetAttribute(vadd, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100 * 1024));
    OK(p_cuLaunchKernel(vadd, 4, 1, 1, 256, 1, 1, 96 * 1024, 0, args, NULL));
    EXPECT(p_cuFuncSetAttribute(vadd, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 228 * 1024),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuLaunchKernel((CUfunction)(uintptr_t)0x1234, 1, 1, 1, 1, 1, 1, 0, 0, args, NULL),
           CUDA_ERROR_INVALID_HANDLE);
    EXPECT(p_cuLaunchKernel(vadd, 1, 1, 1, 1, 1, 1, 0, (CUstream)(uintptr_t)0x1234, args, NULL),
           CUDA_ERROR_INVALID_HANDLE);

    /* attributes, names, static shared memory, globals */
    OK(p_cuModuleGetFunction(&shared, mod, "uses_shared"));
    OK(p_cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, shared));
    CHECK(value == 1024);
    OK(p_cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, shared));
    CHECK(value == 1024);
    OK(p_cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_PTX_VERSION, shared));
    CHECK(value == 75);  // the PTX virtual architecture (nvcc 13 defaults to compute_75), as on a GPU
    EXPECT(p_cuFuncGetAttribute(&value, (CUfunction_attribute)99, shared), CUDA_ERROR_INVALID_VALUE);
    const char *name = NULL;
    OK(p_cuFuncGetName(&name, shared));
    CHECK(name && strcmp(name, "uses_shared") == 0);
    int blocks = 0;
    OK(p_cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, shared, 256, 0));
    CHECK(blocks >= 1 && blocks <= 8);
    CUdeviceptr counter;
    size_t bytes;
    int cv = 0;
    OK(p_cuModuleGetGlobal(&counter, &bytes, mod, "counter"));
    CHECK(bytes == 4);
    OK(p_cuMemcpyDtoH(&cv, counter, 4));
    CHECK(cv == 7);
    cv = 100;
    OK(p_cuMemcpyHtoD(counter, &cv, 4));
    EXPECT(p_cuMemcpyHtoD(counter, &cv, 8), CUDA_ERROR_INVALID_VALUE); /* past the variable */
    EXPECT(p_cuModuleGetGlobal(&counter, &bytes, mod, "nothing"), CUDA_ERROR_NOT_FOUND);
    void *sargs[] = {&dc};
    OK(p_cuLaunchKernel(shared, 1, 1, 1, 256, 1, 1, 0, 0, sargs, NULL));
    OK(p_cuMemcpyDtoH(c, dc, 256 * 4));
    CHECK(c[0] == 355.0f && c[255] == 100.0f);

    /* parameters at the offsets the kernel's layout gives (a by-value struct, small ints) */
    CUfunction fs;
    OK(p_cuModuleGetFunction(&fs, mod, "structs"));
    struct { double d; char c; int x[3]; } s = {1.5, 2, {0, 0, 40}};
    char ch = 3;
    short sh = 500;
    CUdeviceptr dout;
    double out = 0;
    OK(p_cuMemAlloc(&dout, 8));
    void *stargs[] = {&s, &ch, &sh, &dout};
    OK(p_cuLaunchKernel(fs, 1, 1, 1, 1, 1, 1, 0, 0, stargs, NULL));
    OK(p_cuMemcpyDtoH(&out, dout, 8));
    CHECK(out == 1.5 + 2 + 40 + 3 + 500);

    /* unloaded: the module and its functions are gone */
    OK(p_cuModuleUnload(mod));
    EXPECT(p_cuLaunchKernel(vadd, 1, 1, 1, 1, 1, 1, 0, 0, args, NULL), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(p_cuModuleGetFunction(&vadd, mod, "vadd"), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(p_cuModuleUnload(mod), CUDA_ERROR_INVALID_HANDLE);

    /* loading from memory: PTX text, a fatbin; a bad image names the problem in the log */
    char *text = read_file(ptx_path, NULL);
    OK(p_cuModuleLoadData(&mod, text));
    OK(p_cuModuleUnload(mod));
    char *fatbin = read_file(fatbin_path, NULL);
    OK(p_cuModuleLoadData(&mod, fatbin));
    OK(p_cuModuleGetFunction(&vadd, mod, "vadd"));
    OK(p_cuModuleUnload(mod));
    char log[256] = {0};
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[] = {log, (void *)(uintptr_t)sizeof log};
    CHECK(p_cuModuleLoadDataEx(&mod, "this is not an image", 2, opts, vals) != CUDA_SUCCESS);
    CHECK(strlen(log) > 10 && (uintptr_t)vals[1] == strlen(log)); /* as cuLink* on an H200 */
    printf("log: %s\n", log);
    EXPECT(p_cuModuleLoad(&mod, "/nonexistent/kernels.ptx"), CUDA_ERROR_FILE_NOT_FOUND);
}

static void test_library_kernel(void)
{
    start();
    vectors();
    size_t size;
    char *fatbin = read_file(fatbin_path, &size);
    CUlibraryOption lopt[] = {CU_LIBRARY_BINARY_IS_PRESERVED};
    void *lval[] = {(void *)1};
    CUlibrary library;
    CUkernel kernel;
    CUfunction f;
    CUmodule mod;
    OK(p_cuLibraryLoadData(&library, fatbin, NULL, NULL, 0, lopt, lval, 1));
    OK(p_cuLibraryGetKernel(&kernel, library, "vadd"));
    EXPECT(p_cuLibraryGetKernel(&kernel, library, "nope"), CUDA_ERROR_NOT_FOUND);
    OK(p_cuLibraryGetKernel(&kernel, library, "vadd"));
    int n = N;
    void *args[] = {&da, &db, &dc, &n};
    /* CUDA 13's runtime passes the CUkernel where a CUfunction goes */
    OK(p_cuLaunchKernel((CUfunction)kernel, 4, 1, 1, 256, 1, 1, 0, 0, args, NULL));
    OK(p_cuCtxSynchronize());
    CHECK(vadd_correct());
    int value = 0;
    OK(p_cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, (CUfunction)kernel));
    CHECK(value == 1024);
    OK(p_cuKernelGetFunction(&f, kernel));
    OK(p_cuLibraryGetModule(&mod, library));
    CUfunction g;
    OK(p_cuModuleGetFunction(&g, mod, "vadd"));
    CHECK(f == g);
    CUdeviceptr counter;
    size_t bytes;
    OK(p_cuLibraryGetGlobal(&counter, &bytes, library, "counter"));
    CHECK(bytes == 4);
    EXPECT(p_cuModuleUnload(mod), CUDA_ERROR_INVALID_HANDLE); /* it belongs to the library */
    OK(p_cuLibraryUnload(library));
    EXPECT(p_cuLaunchKernel((CUfunction)kernel, 4, 1, 1, 256, 1, 1, 0, 0, args, NULL),
           CUDA_ERROR_INVALID_HANDLE);
    OK(p_cuLibraryLoadFromFile(&library, ptx_path, NULL, NULL, 0, NULL, NULL, 0));
    OK(p_cuLibraryGetKernel(&kernel, library, "vadd"));
    OK(p_cuLibraryUnload(library));
}

static void test_launch_ex(void)
{
    start();
    vectors();
    CUmodule mod;
    CUfunction vadd;
    CUevent done;
    CUstream s;
    OK(p_cuModuleLoad(&mod, ptx_path));
    OK(p_cuModuleGetFunction(&vadd, mod, "vadd"));
    OK(p_cuEventCreate(&done, 0));
    OK(p_cuStreamCreate(&s, 0));
    int n = N;
    void *args[] = {&da, &db, &dc, &n};
    CUlaunchAttribute attrs[2];
    memset(attrs, 0, sizeof attrs);
    attrs[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attrs[0].value.priority = -1;
    attrs[1].id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
    attrs[1].value.launchCompletionEvent.event = done;
    CUlaunchConfig config = {4, 1, 1, 256, 1, 1, 0, s, attrs, 2};
    OK(p_cuLaunchKernelEx(&config, vadd, args, NULL));
    OK(p_cuEventSynchronize(done));
    CHECK(vadd_correct());
    attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[0].value.clusterDim.x = 2;
    attrs[0].value.clusterDim.y = 1;
    attrs[0].value.clusterDim.z = 1;
    config.numAttrs = 1;
    EXPECT(p_cuLaunchKernelEx(&config, vadd, args, NULL), CUDA_ERROR_NOT_SUPPORTED);
    attrs[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[0].value.cooperative = 1;
    OK(p_cuLaunchKernelEx(&config, vadd, args, NULL)); /* 4 blocks can all be resident */
    OK(p_cuCtxSynchronize());
    CHECK(vadd_correct());
    config.gridDimX = 100000; /* more than the occupancy calculator allows at once */
    EXPECT(p_cuLaunchKernelEx(&config, vadd, args, NULL), CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    config.gridDimX = 4;
    config.blockDimX = 2048;
    config.numAttrs = 0;
    EXPECT(p_cuLaunchKernelEx(&config, vadd, args, NULL), CUDA_ERROR_INVALID_VALUE);
}

static void test_unload_waits(void)
{
    start();
    CUmodule mod;
    CUfunction slow;
    CUdeviceptr d;
    int host[64] = {0}, value = 42;
    OK(p_cuModuleLoad(&mod, ptx_path));
    OK(p_cuModuleGetFunction(&slow, mod, "slow_fill"));
    OK(p_cuMemAlloc(&d, sizeof host));
    void *args[] = {&d, &value};
    double t0 = now_ms();
    OK(p_cuLaunchKernel(slow, 1, 1, 1, 64, 1, 1, 0, 0, args, NULL));
    CHECK(now_ms() - t0 < 200); /* the launch is asynchronous */
    OK(p_cuModuleUnload(mod));  /* ... and unloading waits for it */
    CHECK(now_ms() - t0 >= 250);
    OK(p_cuMemcpyDtoH(host, d, sizeof host));
    CHECK(host[0] == 42 && host[63] == 42);
}

static void test_async_failure(void)
{
    start();
    CUmodule mod;
    CUfunction trap, crash;
    CUdeviceptr d;
    OK(p_cuModuleLoad(&mod, ptx_path));
    OK(p_cuModuleGetFunction(&trap, mod, "trap"));
    OK(p_cuModuleGetFunction(&crash, mod, "crash"));
    OK(p_cuMemAlloc(&d, 16));
    void *args[] = {&d};
    OK(p_cuLaunchKernel(crash, 1, 1, 1, 1, 1, 1, 0, 0, args, NULL));
    EXPECT(p_cuCtxSynchronize(), CUDA_ERROR_UNKNOWN);
    /* a Python failure on the synchronous path: CUDA_ERROR_UNKNOWN, with a traceback */
    CUmodule other;
    EXPECT(p_cuModuleLoadData(&other, ".version 9.0\n.target sm_75\n// CRASH_ON_LOAD\n.entry x() { ret; }\n"),
           CUDA_ERROR_UNKNOWN);
    /* cuport's own failures leave the device usable; a trap, as on a GPU, does not */
    OK(p_cuMemsetD8(d, 0, 16));
    /* a synchronous copy returns an asynchronous failure not yet returned, once, as
       cuMemcpy* "may also return error codes from previous, asynchronous launches" */
    OK(p_cuLaunchKernel(crash, 1, 1, 1, 1, 1, 1, 0, 0, args, NULL));
    unsigned char back[16];
    EXPECT(p_cuMemcpyDtoH(back, d, sizeof back), CUDA_ERROR_UNKNOWN);
    OK(p_cuMemcpyDtoH(back, d, sizeof back));
    OK(p_cuCtxSynchronize());
    OK(p_cuLaunchKernel(trap, 1, 1, 1, 1, 1, 1, 0, 0, args, NULL));
    /* let the kernel fail before the call that returns the failure: the same message as
       when that call waits for it (this used to race) */
    usleep(300000);
    EXPECT(p_cuCtxSynchronize(), CUDA_ERROR_LAUNCH_FAILED);
    EXPECT(p_cuCtxSynchronize(), CUDA_ERROR_LAUNCH_FAILED);
    EXPECT(p_cuMemsetD8(d, 0, 16), CUDA_ERROR_LAUNCH_FAILED);
    EXPECT(p_cuLaunchKernel(crash, 1, 1, 1, 1, 1, 1, 0, 0, args, NULL), CUDA_ERROR_LAUNCH_FAILED);
    CUcontext current = NULL;
    OK(p_cuCtxGetCurrent(&current));
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s LIBRARY TEST PTX FATBIN\n", argv[0]);
        return 2;
    }
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) { printf("FAIL dlopen: %s\n", dlerror()); return 2; }
    load_all();
    ptx_path = argv[3];
    fatbin_path = argv[4];
    struct { const char *name; void (*fn)(void); } tests[] = {
        {"module_launch", test_module_launch}, {"library_kernel", test_library_kernel},
        {"launch_ex", test_launch_ex}, {"unload_waits", test_unload_waits},
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
