/* cuLink*: linking device code at run time through cuport's libcuda.so.1, as numba-cuda,
 * CuPy and cuda.core do without nvJitLink. `link LIBRARY TEST [FILES...]`.
 * The codes and logs of `errors` are what an H200 (driver 580) answered to the same calls. */
#include "../../capi/c/harness.h"

#define API(X)                                                                                 \
    X(cuInit) X(cuCtxCreate) X(cuCtxSynchronize) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyDtoH)   \
    X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuLaunchKernel)           \
    X(cuLaunchCooperativeKernel)                                                               \
    X(cuLinkCreate) X(cuLinkAddData) X(cuLinkAddFile) X(cuLinkComplete) X(cuLinkDestroy)

#define DECL(fn) static __typeof__(fn) *p_##fn;
API(DECL)

/* k(out): out[i] = twice(i), twice defined in another module */
static const char *A =
    ".version 7.5\n.target sm_75\n.address_size 64\n"
    ".extern .func (.param .b32 r) twice(.param .b32 x);\n"
    ".visible .entry k(.param .u64 out) {\n .reg .b32 %r<4>; .reg .b64 %rd<3>;\n"
    " ld.param.u64 %rd1, [out]; cvta.to.global.u64 %rd2, %rd1; mov.u32 %r1, %tid.x;\n"
    " { .param .b32 p; .param .b32 q; st.param.b32 [p], %r1;\n"
    "   call.uni (q), twice, (p); ld.param.b32 %r2, [q]; }\n"
    " mul.wide.u32 %rd1, %r1, 4; add.s64 %rd2, %rd2, %rd1; st.global.u32 [%rd2], %r2; ret; }\n";
static const char *B =
    ".version 7.5\n.target sm_75\n.address_size 64\n"
    ".visible .func (.param .b32 r) twice(.param .b32 x) {\n .reg .b32 %r<3>;\n"
    " ld.param.b32 %r1, [x]; add.s32 %r2, %r1, %r1; add.s32 %r2, %r2, 7;\n"
    " st.param.b32 [r], %r2; ret; }\n";
/* g(out): numba-cuda's cuda.cg.this_grid().sync(), linked with libcudadevrt: out[i] =
 * 1000 * (grid handle != 0) + cudaCGSynchronize's answer */
static const char *G =
    ".version 7.5\n.target sm_75\n.address_size 64\n"
    ".extern .func (.param .b64 r) cudaCGGetIntrinsicHandle(.param .b32 s);\n"
    ".extern .func (.param .b32 r) cudaCGSynchronize(.param .b64 h, .param .b32 f);\n"
    ".visible .entry g(.param .u64 out) {\n .reg .pred %p1; .reg .b32 %r<8>; .reg .b64 %rd<6>;\n"
    " ld.param.u64 %rd1, [out]; cvta.to.global.u64 %rd2, %rd1; mov.u32 %r1, %tid.x;\n"
    " mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mad.lo.s32 %r4, %r2, %r3, %r1;\n"
    " { .param .b32 s; .param .b64 h; st.param.b32 [s], 1;\n"
    "   call.uni (h), cudaCGGetIntrinsicHandle, (s); ld.param.b64 %rd3, [h]; }\n"
    " { .param .b64 h; .param .b32 f; .param .b32 e; st.param.b64 [h], %rd3; st.param.b32 [f], 0;\n"
    "   call.uni (e), cudaCGSynchronize, (h, f); ld.param.b32 %r5, [e]; }\n"
    " setp.ne.u64 %p1, %rd3, 0; selp.u32 %r6, 1000, 0, %p1; add.s32 %r7, %r6, %r5;\n"
    " mul.wide.u32 %rd4, %r4, 4; add.s64 %rd5, %rd2, %rd4; st.global.u32 [%rd5], %r7; ret; }\n";
static const char *BAD = ".version 7.5\n.target sm_75\n.address_size 64\n.visible .entry z( {\n";

static int real_driver; /* LINK_REAL_DRIVER=1: checking the test itself on NVIDIA's driver */
static char elog[4096], ilog[4096];
static CUjit_option opts[5] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                               CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                               CU_JIT_WALL_TIME};
static void *vals[5];

static CUlinkState state(void)
{
    CUlinkState s = NULL;
    vals[0] = elog;
    vals[1] = (void *)(size_t)sizeof elog;
    vals[2] = ilog;
    vals[3] = (void *)(size_t)sizeof ilog;
    vals[4] = 0;
    elog[0] = ilog[0] = 0;
    OK(p_cuLinkCreate(5, opts, vals, &s));
    return s;
}

static size_t err_len(void) { return (size_t)vals[1]; }

static CUresult add(CUlinkState s, const char *ptx, const char *name)
{
    return p_cuLinkAddData(s, CU_JIT_INPUT_PTX, (void *)ptx, strlen(ptx) + 1, name, 0, NULL, NULL);
}

/* load the linked image, run `kernel` on 32 threads, check out[i] == want(i) */
static void run_linked(void *image, const char *kernel, unsigned (*want)(unsigned))
{
    CUmodule m = NULL;
    CUfunction f = NULL;
    CUdeviceptr out = 0;
    unsigned h[32] = {0};
    OK(p_cuModuleLoadData(&m, image));
    OK(p_cuModuleGetFunction(&f, m, kernel));
    OK(p_cuMemAlloc(&out, sizeof h));
    void *args[] = {&out};
    OK(p_cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    OK(p_cuCtxSynchronize());
    OK(p_cuMemcpyDtoH(h, out, sizeof h));
    for (unsigned i = 0; i < 32; i++)
        if (h[i] != want(i)) {
            printf("FAIL %s: out[%u] = %u, expected %u\n", kernel, i, h[i], want(i));
            failures++;
            break;
        }
    OK(p_cuMemFree(out));
    OK(p_cuModuleUnload(m));
}

static unsigned twice_plus_7(unsigned i) { return 2 * i + 7; }
static unsigned square_plus_1(unsigned i) { return i * i + 1; }

static void test_link(char **files)
{
    (void)files;
    CUlinkState s = state();
    void *image = NULL;
    size_t size = 0;
    OK(add(s, A, "a.ptx"));
    OK(add(s, B, "b.ptx"));
    OK(p_cuLinkComplete(s, &image, &size));
    CHECK(image != NULL && size > 0);
    CHECK(err_len() == 0 && elog[0] == 0);
    run_linked(image, "k", twice_plus_7);
    /* the image is self-contained: a copy loads after the link state is gone */
    char *copy = malloc(size);
    memcpy(copy, image, size);
    OK(p_cuLinkDestroy(s));
    run_linked(copy, "k", twice_plus_7);
    free(copy);
}

/* numba-cuda's link of a cooperative kernel: PTX and libcudadevrt.a (files[0]), whose
 * cudaCG* functions call the driver's __cuda_syscall_CGS_* (and whose other functions name
 * the rest of the driver's device runtime): the link succeeds and the kernel synchronises
 * its grid in a cooperative launch; in a plain one the handle is 0 and the sync fails */
static void test_devrt(char **files)
{
    CUlinkState s = state();
    void *image = NULL;
    size_t size = 0;
    CUmodule m = NULL;
    CUfunction f = NULL;
    CUdeviceptr out = 0;
    unsigned h[64] = {0};
    OK(add(s, G, "g.ptx"));
    OK(p_cuLinkAddFile(s, CU_JIT_INPUT_LIBRARY, files[0], 0, NULL, NULL));
    OK(p_cuLinkComplete(s, &image, &size));
    CHECK(err_len() == 0 && elog[0] == 0);
    OK(p_cuModuleLoadData(&m, image));
    OK(p_cuLinkDestroy(s));
    OK(p_cuModuleGetFunction(&f, m, "g"));
    OK(p_cuMemAlloc(&out, sizeof h));
    void *args[] = {&out};
    for (int cooperative = 1; cooperative >= 0; cooperative--) {
        if (cooperative)
            OK(p_cuLaunchCooperativeKernel(f, 2, 1, 1, 32, 1, 1, 0, NULL, args));
        else
            OK(p_cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
        OK(p_cuCtxSynchronize());
        OK(p_cuMemcpyDtoH(h, out, sizeof h));
        for (unsigned i = 0; i < 64; i++)
            if (h[i] != (cooperative ? 1000u : 999u)) {
                printf("FAIL %s launch: out[%u] = %u\n", cooperative ? "cooperative" : "plain", i, h[i]);
                failures++;
                break;
            }
    }
    OK(p_cuMemFree(out));
    OK(p_cuModuleUnload(m));
}

static void test_errors(char **files)
{
    (void)files;
    void *image = NULL;
    size_t size = 0;
    CUlinkState s = state();
    OK(add(s, A, "a.ptx"));
    EXPECT(p_cuLinkComplete(s, &image, &size), CUDA_ERROR_INVALID_SOURCE);
    CHECK(strcmp(elog, "error   : Undefined reference to 'twice' in 'a.ptx'") == 0);
    CHECK(err_len() == strlen(elog));
    OK(p_cuLinkDestroy(s));

    s = state();
    OK(add(s, B, "b.ptx"));
    EXPECT(add(s, B, "b2.ptx"), CUDA_ERROR_INVALID_SOURCE);
    CHECK(strcmp(elog, "error   : Multiple definition of 'twice' in 'b2.ptx', "
                       "first defined in 'b.ptx'") == 0);
    EXPECT(p_cuLinkComplete(s, &image, &size), CUDA_ERROR_INVALID_SOURCE);
    OK(p_cuLinkDestroy(s));

    s = state(); /* a module that does not assemble is left out of the link */
    EXPECT(add(s, BAD, "bad.ptx"), CUDA_ERROR_INVALID_PTX);
    CHECK(err_len() > 0);
    OK(add(s, A, "a.ptx"));
    OK(add(s, B, "b.ptx"));
    OK(p_cuLinkComplete(s, &image, &size));
    run_linked(image, "k", twice_plus_7);
    OK(p_cuLinkDestroy(s));

    s = state();
    OK(p_cuLinkComplete(s, &image, &size)); /* an empty link completes */
    OK(p_cuLinkDestroy(s));

    s = state();
    EXPECT(p_cuLinkAddFile(s, CU_JIT_INPUT_PTX, "/nonexistent/x.ptx", 0, NULL, NULL),
           CUDA_ERROR_FILE_NOT_FOUND);
    EXPECT(p_cuLinkAddData(s, (CUjitInputType)9, (void *)B, strlen(B) + 1, "b", 0, NULL, NULL),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuLinkAddData(s, CU_JIT_INPUT_PTX, NULL, 10, "n", 0, NULL, NULL),
           CUDA_ERROR_INVALID_VALUE);
    if (!real_driver) /* cuport links PTX only; NVIDIA's driver crashes on a stale handle */
        EXPECT(p_cuLinkAddData(s, CU_JIT_INPUT_NVVM, (void *)B, strlen(B), "lto", 0, NULL, NULL),
               CUDA_ERROR_NOT_SUPPORTED);
    OK(p_cuLinkDestroy(s));
    if (!real_driver)
        EXPECT(p_cuLinkDestroy(s), CUDA_ERROR_INVALID_HANDLE);
    CUlinkState t = NULL;
    EXPECT(p_cuLinkCreate(2, NULL, NULL, &t), CUDA_ERROR_INVALID_VALUE);
}

/* files: PTX, fatbin (-rdc), host object (-dc) and library (-lib) of link_square.cu, whose
 * kernel `sq` calls `square` from link_square_dev.cu, given as PTX. */
static void test_inputs(char **files)
{
    static const CUjitInputType kinds[] = {CU_JIT_INPUT_PTX, CU_JIT_INPUT_FATBINARY,
                                           CU_JIT_INPUT_OBJECT, CU_JIT_INPUT_LIBRARY};
    for (int i = 0; i < 4; i++) {
        CUlinkState s = state();
        void *image = NULL;
        size_t size = 0;
        OK(p_cuLinkAddFile(s, kinds[i], files[i], 0, NULL, NULL));
        OK(p_cuLinkAddFile(s, CU_JIT_INPUT_PTX, files[4], 0, NULL, NULL));
        OK(p_cuLinkComplete(s, &image, &size));
        if (failures) {
            printf("input %d (%s): %s\n", i, files[i], elog);
            return;
        }
        run_linked(image, "sq", square_plus_1);
        OK(p_cuLinkDestroy(s));
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s LIBRARY TEST [FILES...]\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    real_driver = getenv("LINK_REAL_DRIVER") != NULL;
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) { printf("FAIL dlopen: %s\n", dlerror()); return 2; }
#define LOAD(fn) p_##fn = (__typeof__(fn) *)sym(XSTR(fn));
    API(LOAD)
    CUcontext ctx;
    OK(p_cuInit(0));
    OK(p_cuCtxCreate(&ctx, NULL, 0, 0));
    struct { const char *name; void (*fn)(char **); } tests[] = {
        {"link", test_link}, {"errors", test_errors}, {"inputs", test_inputs},
        {"devrt", test_devrt},
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (strcmp(tests[i].name, argv[2]) == 0) {
            tests[i].fn(argv + 3);
            printf(failures ? "FAILED %d\n" : "PASS\n", failures);
            return failures ? 1 : 0;
        }
    printf("no test %s\n", argv[2]);
    return 2;
}
