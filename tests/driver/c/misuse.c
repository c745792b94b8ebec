/* Driver calls with handles of the wrong context, or of a destroyed one: each line is
 * `CASE CODE`, the CUresult the call returned. Built against cuda.h and linked with
 * -lcuda, it runs as is on an NVIDIA GPU (tests/driver/record_gpu.py records the codes)
 * and under `cuport run` (tests/driver/test_misuse.py compares).
 *   misuse PTX_FILE   (the PTX of tests/driver/c/kernels.cu: its kernel slow_fill)
 * Some of these calls are undefined behaviour, and NVIDIA's driver may crash on them (a
 * launch on a stream of a destroyed context segfaults on an H200): `begin CASE` is printed
 * before each call, so that the recorder knows which call crashed, and the cases named in
 * MISUSE_SKIP (comma-separated) print `CASE skipped` instead of being made. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SETUP(call)                                                                        \
    do {                                                                                   \
        CUresult r_ = (call);                                                              \
        if (r_ != CUDA_SUCCESS) {                                                          \
            printf("setup %s failed: %d\n", #call, (int)r_);                               \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)

static void report(const char *name, CUresult r)
{
    printf("%s %d\n", name, (int)r);
    fflush(stdout);
}

static int skipped(const char *name)
{
    const char *list = getenv("MISUSE_SKIP");
    size_t n = strlen(name);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

/* Make one call: announced first (a crash then names it), or skipped. */
#define CASE(name, call)                                                                   \
    do {                                                                                   \
        if (skipped(name)) {                                                               \
            printf("%s skipped\n", name);                                                  \
            fflush(stdout);                                                                \
        } else {                                                                           \
            printf("begin %s\n", name);                                                    \
            fflush(stdout);                                                                \
            report(name, call);                                                            \
        }                                                                                  \
    } while (0)

struct ctx_set {
    CUcontext ctx;
    CUmodule module;
    CUfunction fill;
    CUstream stream;
    CUevent event;
    CUdeviceptr mem;
};

static void make(struct ctx_set *s, CUdevice dev, const char *ptx)
{
    SETUP(cuCtxCreate(&s->ctx, NULL, 0, dev)); /* (pushed: current now) */
    SETUP(cuModuleLoadData(&s->module, ptx));
    SETUP(cuModuleGetFunction(&s->fill, s->module, "slow_fill"));
    SETUP(cuStreamCreate(&s->stream, CU_STREAM_NON_BLOCKING));
    SETUP(cuEventCreate(&s->event, CU_EVENT_DEFAULT));
    SETUP(cuMemAlloc(&s->mem, 256));
}

static CUresult launch(CUfunction f, CUstream stream, CUdeviceptr p)
{
    int value = 7;
    void *params[] = {&p, &value};
    return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, stream, params, NULL);
}

static CUcontext other_thread_ctx;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int stage;

static void advance(int to)
{
    pthread_mutex_lock(&lock);
    stage = to;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
}

static void wait_for(int at)
{
    pthread_mutex_lock(&lock);
    while (stage < at)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
}

static void *other_thread(void *arg)
{
    (void)arg;
    SETUP(cuCtxSetCurrent(other_thread_ctx));
    advance(1);
    wait_for(2); /* the main thread destroyed the context, still current here */
    CUdeviceptr p;
    CASE("alloc_in_context_destroyed_by_another_thread", cuMemAlloc(&p, 64));
    CASE("synchronize_context_destroyed_by_another_thread", cuCtxSynchronize());
    return NULL;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("cannot open %s\n", path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc(n + 1);
    if (fread(data, 1, n, f) != (size_t)n)
        exit(2);
    data[n] = 0;
    fclose(f);
    return data;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        printf("usage: misuse PTX_FILE\n");
        return 2;
    }
    char *ptx = read_file(argv[1]);
    int host[64] = {0};
    CUdevice dev;
    SETUP(cuInit(0));
    SETUP(cuDeviceGet(&dev, 0));
    struct ctx_set a, b;
    make(&a, dev, ptx);
    make(&b, dev, ptx); /* B is current, A below it */

    CASE("launch_own_function_on_own_stream", launch(b.fill, b.stream, b.mem));
    CASE("launch_function_of_other_context", launch(a.fill, 0, b.mem));
    CASE("launch_on_stream_of_other_context", launch(b.fill, a.stream, b.mem));
    CASE("launch_other_context_function_on_its_stream", launch(a.fill, a.stream, a.mem));
    CASE("memcpy_async_on_stream_of_other_context",
           cuMemcpyHtoDAsync(b.mem, host, 4, a.stream));
    CASE("event_record_on_stream_of_other_context", cuEventRecord(a.event, b.stream));
    CASE("stream_wait_event_of_other_context", cuStreamWaitEvent(b.stream, a.event, 0));
    CASE("stream_synchronize_of_other_context", cuStreamSynchronize(a.stream));
    CASE("memcpy_to_memory_of_other_context", cuMemcpyHtoD(a.mem, host, 4));
    CASE("context_synchronize", cuCtxSynchronize());

    CASE("destroy_current_context", cuCtxDestroy(b.ctx)); /* pops B: A is current */
    CUcontext now = NULL;
    cuCtxGetCurrent(&now);
    CASE("after_destroy_the_one_below_is_current", now == a.ctx ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN);
    CASE("memcpy_to_memory_of_destroyed_context", cuMemcpyHtoD(b.mem, host, 4));
    CASE("launch_function_of_destroyed_context", launch(b.fill, 0, a.mem));
    CASE("launch_on_stream_of_destroyed_context", launch(a.fill, b.stream, a.mem));
    CASE("event_record_of_destroyed_context", cuEventRecord(b.event, 0));

    CASE("destroy_last_context", cuCtxDestroy(a.ctx)); /* no context is current now */
    CASE("get_current_without_context", cuCtxGetCurrent(&now));
    CASE("get_current_without_context_is_null", now == NULL ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN);
    CASE("memcpy_after_destroy", cuMemcpyHtoD(a.mem, host, 4));
    CASE("memcpy_dtoh_after_destroy", cuMemcpyDtoH(host, a.mem, 4));
    CUdeviceptr p;
    CASE("alloc_without_context", cuMemAlloc(&p, 64));
    CASE("synchronize_without_context", cuCtxSynchronize());
    CASE("destroy_destroyed_context", cuCtxDestroy(a.ctx));
    CASE("push_destroyed_context", cuCtxPushCurrent(a.ctx));
    CASE("set_current_destroyed_context", cuCtxSetCurrent(a.ctx));
    cuCtxSetCurrent(NULL);

    /* a context destroyed by one thread while current to another */
    CUcontext c;
    SETUP(cuCtxCreate(&c, NULL, 0, dev));
    other_thread_ctx = c;
    pthread_t t;
    pthread_create(&t, NULL, other_thread, NULL);
    wait_for(1);
    CASE("destroy_context_current_to_another_thread", cuCtxDestroy(c));
    advance(2);
    pthread_join(t, NULL);
    printf("done\n");
    return 0;
}
