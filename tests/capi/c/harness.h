/* Test harness for C clients of cuport's libcuda.so.1: the library is dlopen'ed and
 * every entry point taken with dlsym, as a program that loads the driver would.
 * API_FUNCS lists the plain names of cuda.h; cuda.h's #defines pick the symbol
 * (cuMemAlloc -> cuMemAlloc_v2), and each is called as p_<name>. */
#include <cuda.h>
#include <cudaProfiler.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STR(x) #x
#define XSTR(x) STR(x)

static void *lib;
static int failures;

#define EXPECT(call, want)                                                              \
    do {                                                                                \
        CUresult r_ = (call);                                                           \
        if (r_ != (CUresult)(want)) {                                                   \
            printf("FAIL line %d: %s = %d, expected %d\n", __LINE__, #call, (int)r_,    \
                   (int)(want));                                                        \
            failures++;                                                                 \
        }                                                                               \
    } while (0)
#define OK(call) EXPECT(call, CUDA_SUCCESS)
#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            printf("FAIL line %d: %s\n", __LINE__, #cond);                              \
            failures++;                                                                 \
        }                                                                               \
    } while (0)

static void *sym(const char *name)
{
    void *p = dlsym(lib, name);
    if (!p) {
        printf("FAIL: %s is not exported\n", name);
        exit(2);
    }
    return p;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
