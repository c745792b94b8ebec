/* Start-up of cuport's libcuda.so.1, placed by capi/build.py ahead of the generated
 * entry points. It is compiled into the cffi embedding module, after cffi's own
 * embedding support (so cffi_start_python() is visible here).
 *
 * Why this exists instead of cffi's plain lazy start:
 * - A C program that dlopens us brings libpython in as a local dependency, and the
 *   extension modules Python imports later (cffi's backend, llvmlite, numpy) then
 *   miss the Py* symbols. Re-opening libpython RTLD_GLOBAL in a constructor fixes it.
 * - cffi's start imports _cffi_backend before any of our Python runs, and an
 *   embedded interpreter has only the base installation's sys.path. So we start
 *   Python ourselves (with the home it was built for), put cuport's environment on
 *   sys.path, and only then let cffi set up the module.
 * - If the Python side cannot start, cffi would answer 0 (CUDA_SUCCESS) from every
 *   entry point; instead every call fails with CUDA_ERROR_NOT_INITIALIZED.
 * - Driver calls keep coming after the interpreter is gone: thread-local destructors
 *   (cuda.core's context handles), the static CUDA runtime's exit handler (CLS delete,
 *   cuLibraryUnload) and C++ global destructors run after Py_FinalizeEx, and cffi's
 *   PyGILState_Ensure then crashes the process. Once the interpreter is finalising or
 *   gone, every entry answers CUDA_ERROR_DEINITIALIZED without touching Python, as
 *   NVIDIA's driver does while it is being torn down.
 * - In a child forked after cuInit, NVIDIA's driver answers CUDA_ERROR_NOT_INITIALIZED
 *   to every call but cuDriverGetVersion (numba-cuda's fork detection keys on it). The
 *   child's Python may not even be usable (a C fork() while a worker held the GIL), so
 *   that too is decided here.
 *
 * Build-time values come as macros: CUPORT_LIBPYTHON (soname), CUPORT_PYTHON_HOME,
 * CUPORT_SITE_DIRS (newline-separated site directories of the build environment).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUPORT_EXPORT __attribute__((visibility("default")))

/* Set to 1 by the Python side (cuport.capi.runtime.attach) once every entry point
 * has its implementation; read by the exported wrappers. */
static int cuport_attached = 0;
/* Set by the dispatcher when ^C reached a Python program inside a call (stream.py's
 * interrupted): the KeyboardInterrupt is raised again once the call has returned. */
static int cuport_interrupted = 0;

static void cuport_rearm_interrupt(void)
{
    cuport_interrupted = 0;
    PyErr_SetInterruptEx(SIGINT);
}
static int cuport_ready = 0;
static pthread_once_t cuport_boot_once = PTHREAD_ONCE_INIT;
/* The process had a running Python when the library was loaded (ctypes, cuda-python):
 * once that interpreter is gone, it must not be started again. */
static int cuport_loaded_into_python = 0;
/* cuInit succeeded in this process (set by cuInit's C entry). */
static int cuport_initialized = 0;
/* This process is a child forked after cuInit. */
static volatile int cuport_forked = 0;
/* What cuDriverGetVersion answers (set by runtime.attach): a child forked after cuInit
 * still gets it, as from NVIDIA's driver, whose version query needs no initialisation. */
static int cuport_driver_version = 0;
/* cuport closed its Vulkan devices at the end of the Python program (set by the Python side,
 * driver/device.py on_shut_down): the exit handlers of packages that run after that one (CuPy's
 * module releases) are answered as after the interpreter has ended, not on a closed device. */
static volatile int cuport_shut_down = 0;

#define CUPORT_NOT_STARTED 3    /* CUDA_ERROR_NOT_INITIALIZED */
#define CUPORT_DEINITIALIZED 4  /* CUDA_ERROR_DEINITIALIZED */

/* CUPORT_TRACE: calls answered here, without Python, are traced here too. */
static int cuport_tracing = 0;

/* After the interpreter has ended, the calls that release something answer success (the
 * process's exit releases it all: nothing can use it any more), and the context stack is
 * an empty one per thread kept here, so that cleanup code that saves, sets and restores
 * the current context around a release (cuda.core's) goes through. Every other call
 * answers CUDA_ERROR_DEINITIALIZED. capi/build.py decides which call gets which. */
static __thread void *cuport_teardown_current = NULL;

/* cls_get's answers for the current context (a NULL context), kept per thread while
 * nothing that could change them has happened: every runtime call starts with a get (export
 * table CONTEXT_LOCAL_STORAGE), which would otherwise cost an entry into Python. The truth
 * stays in Python: it bumps cuport_cls_generation whenever any thread's context stack or any
 * context's storage changes (driver/context.py STACK_HOOKS), which voids every thread's memo.
 * Not used while tracing (each get is traced). */
static uint64_t cuport_cls_generation = 1;
static __thread struct {
    uint64_t generation;
    void *key;
    void *value;
} cuport_cls_memo;

/* cuCtxGetCurrent's answer, kept per thread on the same terms (the runtime asks at every
 * cudaDeviceSynchronize): the top of the thread's context stack changes only where
 * cuport_cls_generation moves. Not used while tracing. */
static __thread struct {
    uint64_t generation;
    void *value;
} cuport_current_memo;

/* Answer a call that cuport_enter() refused: trace it, return `answer`. */
static int cuport_refused(const char *name, int code, int answer)
{
    if (cuport_tracing)
        fprintf(stderr, "cuport trace: %s -> %s (%s; answered without Python)\n", name,
                answer == 0 ? "CUDA_SUCCESS"
                : answer == CUPORT_DEINITIALIZED ? "CUDA_ERROR_DEINITIALIZED"
                : "CUDA_ERROR_NOT_INITIALIZED",
                code == CUPORT_DEINITIALIZED ? (cuport_shut_down ? "cuport closed its devices at exit"
                                                : "the interpreter has ended")
                : "a child forked after cuInit");
    return answer;
}

static void cuport_after_fork_child(void)
{
    if (cuport_initialized)
        cuport_forked = 1;
}

__attribute__((constructor)) static void cuport_promote_libpython(void)
{
    dlopen(CUPORT_LIBPYTHON, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    const char *trace = getenv("CUPORT_TRACE");
    cuport_tracing = trace != NULL && trace[0] != '\0' && strcmp(trace, "0") != 0;
    cuport_loaded_into_python = Py_IsInitialized();
    pthread_atfork(NULL, NULL, cuport_after_fork_child);
}

/* Whether Python may be entered: initialised and not finalising. */
static inline int cuport_python_alive(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsInitialized() && !Py_IsFinalizing();
#else
    return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

static const char cuport_path_setup[] =
    "def _cuport_path_setup():\n"
    "    import os, sys, site\n"
    "    own = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(sys._cuport_library))))\n"
    "    extra = [p for p in os.environ.get('CUPORT_PYTHONPATH', '').split(os.pathsep) if p]\n"
    "    dirs = [d for d in extra + [own] + sys._cuport_site_dirs.split('\\n') if d and os.path.isdir(d)]\n"
    "    if sys._cuport_embedded:\n"
    "        # Ahead of the base installation's site-packages, behind the standard library.\n"
    "        at = next((i for i, p in enumerate(sys.path) if p.endswith(('site-packages', 'dist-packages'))), len(sys.path))\n"
    "        sys.path[at:at] = [d for d in dirs if d not in sys.path]\n"
    "        for d in dirs:\n"
    "            site.addsitedir(d)\n"
    "    else:\n"
    "        # A running Python: add what it lacks behind its own path, never ahead of it.\n"
    "        for d in dirs:\n"
    "            if d not in sys.path:\n"
    "                site.addsitedir(d)\n"
    "    del sys._cuport_library, sys._cuport_site_dirs, sys._cuport_embedded\n"
    "_cuport_path_setup()\n"
    "del _cuport_path_setup\n";

/* The program's signal dispositions are its own: importing Python's `signal` module
 * installs a SIGINT handler (KeyboardInterrupt) even with install_signal_handlers = 0,
 * which made ^C raise inside cuport's calls instead of stopping the program. The module is
 * imported once here, at start-up, and the program's SIGINT action put back. */
static int cuport_start_interpreter(void)
{
    struct sigaction program_sigint;
    int restored = sigaction(SIGINT, NULL, &program_sigint) == 0;
    PyConfig config;
    PyStatus status;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;
    config.parse_argv = 0;
    /* The C streams are the program's: with PYTHONUNBUFFERED set, Python would make stdin
     * unbuffered, and glibc's setvbuf drops what stdin had read ahead from a pipe. */
    config.configure_c_stdio = 0;
    if (getenv("PYTHONHOME") == NULL && CUPORT_PYTHON_HOME[0] != '\0') {
        status = PyConfig_SetBytesString(&config, &config.home, CUPORT_PYTHON_HOME);
        if (PyStatus_Exception(status))
            goto fail;
    }
    status = Py_InitializeFromConfig(&config);
    if (PyStatus_Exception(status))
        goto fail;
    PyConfig_Clear(&config);
    if (restored && PyRun_SimpleString("import signal") == 0)
        sigaction(SIGINT, &program_sigint, NULL);
    return 0;
fail:
    PyConfig_Clear(&config);
    fprintf(stderr, "cuport: cannot start the embedded Python (%s): %s\n",
            CUPORT_PYTHON_HOME, status.err_msg ? status.err_msg : "unknown error");
    return -1;
}

/* Loaded into a process whose Python is another version (its symbols come first),
 * the compiled C side would misuse that interpreter: refuse instead. */
static int cuport_same_python(void)
{
    char expected[16];
    const char *running = Py_GetVersion();
    snprintf(expected, sizeof expected, "%d.%d.", PY_MAJOR_VERSION, PY_MINOR_VERSION);
    if (strncmp(running, expected, strlen(expected)) == 0)
        return 1;
    fprintf(stderr, "cuport: this libcuda.so.1 was built for Python %d.%d but the process runs "
                    "Python %.*s; install cuport with that Python and use its library\n",
            PY_MAJOR_VERSION, PY_MINOR_VERSION, (int)strcspn(running, " "), running);
    return 0;
}

static void cuport_boot(void)
{
    Dl_info info;
    int embedded;
    PyGILState_STATE gil = PyGILState_UNLOCKED;
    int ok;

    if (!cuport_same_python())
        return;
    embedded = !Py_IsInitialized();

    if (embedded) {
        if (cuport_start_interpreter() != 0)
            return;
    } else {
        gil = PyGILState_Ensure();
    }
    ok = dladdr((void *)&cuport_boot, &info) != 0 && info.dli_fname != NULL;
    if (ok) {
        PyObject *lib = PyUnicode_DecodeFSDefault(info.dli_fname);
        PyObject *sites = PyUnicode_DecodeFSDefault(CUPORT_SITE_DIRS);
        ok = lib && sites && PySys_SetObject("_cuport_library", lib) == 0
             && PySys_SetObject("_cuport_site_dirs", sites) == 0
             && PySys_SetObject("_cuport_embedded", embedded ? Py_True : Py_False) == 0
             && PyRun_SimpleString(cuport_path_setup) == 0;
        Py_XDECREF(lib);
        Py_XDECREF(sites);
    }
    if (embedded)
        PyEval_SaveThread();
    else
        PyGILState_Release(gil);
    if (!ok) {
        fprintf(stderr, "cuport: cannot set up sys.path for the embedded Python\n");
        return;
    }
    /* cffi: import _cffi_backend, create the module, run the init code (which
     * attaches the Python implementations and sets cuport_attached). */
    if (cffi_start_python() != 0 || !cuport_attached) {
        fprintf(stderr, "cuport: the Python side of libcuda.so.1 failed to start (see above); "
                        "every CUDA call will fail with CUDA_ERROR_NOT_INITIALIZED\n");
        return;
    }
    cuport_ready = 1;
}

/* Every exported entry point starts with this: 0 when the call may go on into Python,
 * else the CUresult to answer without touching it. */
static int cuport_enter_slow(void)
{
    if (cuport_forked)
        return CUPORT_NOT_STARTED;
    if (!cuport_ready && !(cuport_loaded_into_python && !cuport_python_alive())) {
        pthread_once(&cuport_boot_once, cuport_boot);
        if (!cuport_ready)
            return CUPORT_NOT_STARTED;  /* cuport_boot said why */
    }
    /* Never started (loaded into a Python that has ended since) or ended since. */
    return cuport_python_alive() && !cuport_shut_down ? 0 : CUPORT_DEINITIALIZED;
}

static inline int cuport_enter(void)
{
    if (__builtin_expect(cuport_ready && !cuport_forked && !cuport_shut_down && cuport_python_alive(), 1))
        return 0;
    return cuport_enter_slow();
}
