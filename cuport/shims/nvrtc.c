/* cuport's NVRTC shim: NVIDIA's libnvrtc.so.13 with cubin requests turned into PTX.
 *
 * Programs that compile CUDA C++ at run time often ask NVRTC for a cubin (SASS):
 * CuPy passes -arch=sm_XX unless CUPY_COMPILE_WITH_PTX=1, cuda.core's
 * Program.compile("cubin") does too. cuport runs PTX only. `cuport run` preloads this
 * library (LD_PRELOAD), which has NVIDIA's soname and symbol version, so it is the
 * NVRTC the program finds (cuda.pathfinder takes an already loaded libnvrtc.so.13,
 * dlopen("libnvrtc.so.13") matches the soname). Every call goes to NVIDIA's NVRTC
 * (CUPORT_NVRTC, set by `cuport run`), except that
 *  - nvrtcCompileProgram turns a real architecture (-arch=sm_90, --gpu-architecture
 *    sm_90a, ...) into the matching virtual one (compute_90, compute_90a), and
 *  - for such a program nvrtcGetCUBINSize/nvrtcGetCUBIN answer with the PTX.
 * Every PTX text handed out starts with a comment line saying so: it keeps the
 * program's kernel caches (CuPy keys its cache on PTX comment lines) apart from
 * those of a real GPU, whose cubins cuport could not run.
 *
 * Built by capi/build.py beside libcuda.so.1, with a version script giving every
 * nvrtc* symbol the version libnvrtc.so.13 (so it never answers for NVRTC 12).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;
enum { NVRTC_SUCCESS = 0, NVRTC_ERROR_OUT_OF_MEMORY = 1, NVRTC_ERROR_INVALID_INPUT = 3,
       NVRTC_ERROR_INTERNAL_ERROR = 11 };

static const char MARK[] =
    "// cuport: compiled through cuport's NVRTC shim (a request for sm_XX SASS is answered "
    "with compute_XX PTX)\n";
#define MARK_LEN (sizeof MARK - 1)

/* -- NVIDIA's library, found once ---------------------------------------------------- */

static void *real;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

static void open_real(void)
{
    const char *path = getenv("CUPORT_NVRTC");
    if (path == NULL || path[0] == '\0') {
        fprintf(stderr, "cuport: NVRTC shim: CUPORT_NVRTC does not name NVIDIA's "
                        "libnvrtc.so.13 (`cuport run` sets it; install nvidia-cuda-nvrtc)\n");
        return;
    }
    real = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (real == NULL)
        fprintf(stderr, "cuport: NVRTC shim: cannot load %s: %s\n", path, dlerror());
}

static void *real_symbol(const char *name)
{
    pthread_once(&real_once, open_real);
    if (real == NULL)
        return NULL;
    void *fn = dlsym(real, name);
    if (fn == NULL)
        fprintf(stderr, "cuport: NVRTC shim: NVIDIA's NVRTC has no %s\n", name);
    return fn;
}

/* One forwarder per function: the real one, resolved on first use. */
#define FORWARD(ret, fail, name, params, args)                            \
    EXPORT ret name params                                                \
    {                                                                     \
        static ret (*fn) params;                                          \
        if (fn == NULL)                                                   \
            fn = (ret (*) params)real_symbol(#name);                      \
        return fn ? fn args : (fail);                                     \
    }

#define F(name, params, args) FORWARD(nvrtcResult, NVRTC_ERROR_INTERNAL_ERROR, name, params, args)
#define P nvrtcProgram prog

FORWARD(const char *, "NVRTC_ERROR_INTERNAL_ERROR (cuport's NVRTC shim found no NVRTC)",
        nvrtcGetErrorString, (nvrtcResult r), (r))
F(nvrtcVersion, (int *major, int *minor), (major, minor))
F(nvrtcGetNumSupportedArchs, (int *n), (n))
F(nvrtcGetSupportedArchs, (int *archs), (archs))
F(nvrtcCreateProgram, (nvrtcProgram *p, const char *src, const char *name, int n,
                       const char *const *headers, const char *const *names),
  (p, src, name, n, headers, names))
F(nvrtcGetLTOIRSize, (P, size_t *s), (prog, s))
F(nvrtcGetLTOIR, (P, char *out), (prog, out))
F(nvrtcGetOptiXIRSize, (P, size_t *s), (prog, s))
F(nvrtcGetOptiXIR, (P, char *out), (prog, out))
F(nvrtcGetProgramLogSize, (P, size_t *s), (prog, s))
F(nvrtcGetProgramLog, (P, char *out), (prog, out))
F(nvrtcAddNameExpression, (P, const char *expr), (prog, expr))
F(nvrtcGetLoweredName, (P, const char *expr, const char **lowered), (prog, expr, lowered))
F(nvrtcGetPCHHeapSize, (size_t *s), (s))
F(nvrtcSetPCHHeapSize, (size_t s), (s))
F(nvrtcGetPCHCreateStatus, (P), (prog))
F(nvrtcGetPCHHeapSizeRequired, (P, size_t *s), (prog, s))
F(nvrtcSetFlowCallback, (P, int (*cb)(void *, void *), void *payload), (prog, cb, payload))
F(nvrtcGetTileIRSize, (P, size_t *s), (prog, s))
F(nvrtcGetTileIR, (P, char *out), (prog, out))
F(nvrtcInstallBundledHeaders, (const char *path, unsigned flags, const char **log),
  (path, flags, log))
F(nvrtcGetBundledHeadersInfo, (void *info, const char **log), (info, log))
F(nvrtcRemoveBundledHeaders, (const char *path, const char **log), (path, log))

/* -- programs compiled for a virtual architecture in place of a real one ------------- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static nvrtcProgram *rewritten;
static size_t n_rewritten, cap_rewritten;

static int was_rewritten(nvrtcProgram prog)
{
    int found = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_rewritten && !found; i++)
        found = rewritten[i] == prog;
    pthread_mutex_unlock(&lock);
    return found;
}

static void set_rewritten(nvrtcProgram prog, int on)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_rewritten; i++)
        if (rewritten[i] == prog) {
            rewritten[i] = rewritten[--n_rewritten];
            break;
        }
    if (on) {
        if (n_rewritten == cap_rewritten) {
            size_t cap = cap_rewritten ? 2 * cap_rewritten : 16;
            nvrtcProgram *grown = realloc(rewritten, cap * sizeof *grown);
            if (grown == NULL) {
                pthread_mutex_unlock(&lock);
                return;
            }
            rewritten = grown;
            cap_rewritten = cap;
        }
        rewritten[n_rewritten++] = prog;
    }
    pthread_mutex_unlock(&lock);
}

/* "sm_90" -> "compute_90" (also sm_90a, sm_100f); NULL for anything else. */
static char *virtual_arch(const char *arch)
{
    if (strncmp(arch, "sm_", 3) != 0 || arch[3] < '0' || arch[3] > '9')
        return NULL;
    char *out = malloc(strlen(arch) + 6);
    if (out != NULL)
        sprintf(out, "compute_%s", arch + 3);
    return out;
}

EXPORT nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int n, const char *const *options)
{
    static nvrtcResult (*fn)(nvrtcProgram, int, const char *const *);
    if (fn == NULL)
        fn = (nvrtcResult (*)(nvrtcProgram, int, const char *const *))
            real_symbol("nvrtcCompileProgram");
    if (fn == NULL)
        return NVRTC_ERROR_INTERNAL_ERROR;
    if (n < 0 || (n > 0 && options == NULL))
        return fn(prog, n, options);
    const char **opts = malloc((n ? n : 1) * sizeof *opts);
    char **owned = calloc(n ? n : 1, sizeof *owned);
    if (opts == NULL || owned == NULL) {
        free(opts);
        free(owned);
        return NVRTC_ERROR_OUT_OF_MEMORY;
    }
    int changed = 0;
    for (int i = 0; i < n; i++) {
        const char *o = options[i];
        static const char *const joined[] = {"-arch=", "--gpu-architecture="};
        static const char *const split[] = {"-arch", "--gpu-architecture"};
        opts[i] = o;
        if (o == NULL)
            continue;
        for (size_t k = 0; k < 2; k++) {
            size_t len = strlen(joined[k]);
            char *v;
            if (strncmp(o, joined[k], len) == 0 && (v = virtual_arch(o + len)) != NULL) {
                owned[i] = malloc(len + strlen(v) + 1);
                if (owned[i] != NULL) {
                    sprintf(owned[i], "%s%s", joined[k], v);
                    opts[i] = owned[i];
                    changed = 1;
                }
                free(v);
            } else if (strcmp(o, split[k]) == 0 && i + 1 < n && options[i + 1] != NULL &&
                       (v = virtual_arch(options[i + 1])) != NULL) {
                opts[i + 1] = owned[i + 1] = v;
                changed = 1;
                i++;
                break;
            }
        }
    }
    nvrtcResult r = fn(prog, n, opts);
    set_rewritten(prog, changed);
    for (int i = 0; i < n; i++)
        free(owned[i]);
    free(owned);
    free(opts);
    return r;
}

EXPORT nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog)
{
    static nvrtcResult (*fn)(nvrtcProgram *);
    if (fn == NULL)
        fn = (nvrtcResult (*)(nvrtcProgram *))real_symbol("nvrtcDestroyProgram");
    if (fn == NULL)
        return NVRTC_ERROR_INTERNAL_ERROR;
    if (prog != NULL)
        set_rewritten(*prog, 0);
    return fn(prog);
}

/* -- PTX, marked; and PTX for the cubin of a rewritten program ----------------------- */

static nvrtcResult ptx_size(nvrtcProgram prog, size_t *size)
{
    static nvrtcResult (*fn)(nvrtcProgram, size_t *);
    if (fn == NULL)
        fn = (nvrtcResult (*)(nvrtcProgram, size_t *))real_symbol("nvrtcGetPTXSize");
    if (fn == NULL)
        return NVRTC_ERROR_INTERNAL_ERROR;
    nvrtcResult r = fn(prog, size);
    if (r == NVRTC_SUCCESS && size != NULL)
        *size += MARK_LEN;
    return r;
}

static nvrtcResult ptx(nvrtcProgram prog, char *out)
{
    static nvrtcResult (*fn)(nvrtcProgram, char *);
    if (fn == NULL)
        fn = (nvrtcResult (*)(nvrtcProgram, char *))real_symbol("nvrtcGetPTX");
    if (fn == NULL)
        return NVRTC_ERROR_INTERNAL_ERROR;
    if (out == NULL)
        return fn(prog, out);
    nvrtcResult r = fn(prog, out + MARK_LEN);
    if (r == NVRTC_SUCCESS)
        memcpy(out, MARK, MARK_LEN);
    return r;
}

EXPORT nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t *size) { return ptx_size(prog, size); }
EXPORT nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char *out) { return ptx(prog, out); }

EXPORT nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t *size)
{
    static nvrtcResult (*fn)(nvrtcProgram, size_t *);
    if (was_rewritten(prog))
        return ptx_size(prog, size);
    if (fn == NULL)
        fn = (nvrtcResult (*)(nvrtcProgram, size_t *))real_symbol("nvrtcGetCUBINSize");
    return fn ? fn(prog, size) : NVRTC_ERROR_INTERNAL_ERROR;
}

EXPORT nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char *out)
{
    static nvrtcResult (*fn)(nvrtcProgram, char *);
    if (was_rewritten(prog))
        return ptx(prog, out);
    if (fn == NULL)
        fn = (nvrtcResult (*)(nvrtcProgram, char *))real_symbol("nvrtcGetCUBIN");
    return fn ? fn(prog, out) : NVRTC_ERROR_INTERNAL_ERROR;
}
