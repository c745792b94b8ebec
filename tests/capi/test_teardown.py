"""Driver calls after the interpreter has ended, and in forked children.

Programs keep calling the driver while they exit: cuda.core's thread-local destructors
(cuDevicePrimaryCtxRelease_v2, cuMemFreeAsync, cuStreamDestroy_v2 around a saved and
restored current context), the static CUDA runtime's exit handler (CLS delete,
cuLibraryUnload) and C++ global destructors run after Py_FinalizeEx. None of them may
crash the program (before the fix every numba-cuda, cuda.core and CuPy program exited
with SIGSEGV after printing its results), and releases then succeed, as they would on
NVIDIA's driver, which is still there at that point.

A child forked after cuInit gets CUDA_ERROR_NOT_INITIALIZED from every call but
cuDriverGetVersion, as from NVIDIA's driver (numba-cuda's fork detection keys on it;
tests/capi/gpu_answers.json); a child forked before cuInit can use CUDA as usual.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest
from capi_support import clean_env, compile_c, cuport_command, library, need_nvcc, run

HERE = Path(__file__).resolve().parent


def cuport_run(args: list[str], timeout: float = 600, **env: str):
    return run([*cuport_command(), "run", *args], env=clean_env(**env), timeout=timeout)


def python_program(tmp_path: Path, text: str, timeout: float = 600, **env: str):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(text))
    return cuport_run([sys.executable, str(script)], timeout=timeout, **env)


def assert_clean_exit(r, last: str = "PASS") -> None:
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    assert r.returncode == 0 and lines and lines[-1] == last, \
        f"exited {r.returncode}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"


def need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[test]')")


# -- numba-cuda and cuda.core programs exit 0 ----------------------------------------------

def test_numba_device_array_alone(tmp_path):
    need("numba_cuda")
    r = python_program(tmp_path, """
        from numba import cuda
        a = cuda.device_array(10)
        print("PASS" if a.shape == (10,) else "FAIL")
    """)
    assert_clean_exit(r)


def test_numba_program_cut_after_its_first_kernel(tmp_path):
    need("numba_cuda")
    r = python_program(tmp_path, """
        import numpy as np
        from numba import cuda

        @cuda.jit
        def add(a, b, c):
            i = cuda.grid(1)
            if i < c.size:
                c[i] = a[i] + b[i]

        a = np.arange(100, dtype=np.float32)
        d_c = cuda.device_array_like(a)
        add[1, 128](cuda.to_device(a), cuda.to_device(2 * a), d_c)
        print("PASS" if np.array_equal(d_c.copy_to_host(), 3 * a) else "FAIL")
    """)
    assert_clean_exit(r)


CUDA_CORE_PROGRAM = """
    import numpy as np
    from cuda.bindings import driver
    from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch

    dev = Device()
    dev.set_current()
    stream = dev.create_stream()
    src = r'''
    extern "C" __global__ void scale(float *x, float a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] = a * x[i] + i;
    }'''
    kernel = Program(src, code_type="c++", options=ProgramOptions(arch=f"sm_{dev.arch}")) \\
        .compile("ptx").get_kernel("scale")
    n = 1000
    buf = dev.memory_resource.allocate(n * 4, stream=stream)  # freed by a C++ destructor
    host = np.arange(n, dtype=np.float32)
    driver.cuMemcpyHtoDAsync(int(buf.handle), host.ctypes.data, n * 4, stream.handle)
    launch(stream, LaunchConfig(grid=(n + 127) // 128, block=128), kernel, buf,
           np.float32(3.0), np.int32(n))
    out = np.empty_like(host)
    driver.cuMemcpyDtoHAsync(out.ctypes.data, int(buf.handle), n * 4, stream.handle)
    stream.sync()
    print("PASS" if np.array_equal(out, 3 * host + np.arange(n, dtype=np.float32)) else "FAIL")
"""


def test_cuda_core_program(tmp_path):
    need("cuda.core")
    r = python_program(tmp_path, CUDA_CORE_PROGRAM, CUPORT_TRACE="1")
    assert_clean_exit(r)
    # its destructors ran after the interpreter and their releases went through
    assert "Warning:" not in r.stderr, r.stderr[-3000:]
    late = [ln for ln in r.stderr.splitlines() if "the interpreter has ended" in ln]
    assert any(ln.startswith("cuport trace: cuDevicePrimaryCtxRelease_v2 -> CUDA_SUCCESS")
               for ln in late), r.stderr[-3000:]


# -- the static CUDA runtime's exit path ---------------------------------------------------

EXIT_PROGRAM = r"""
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
__global__ void fill(int *p, int v) { p[threadIdx.x] = v + threadIdx.x; }
static int *g_buf = nullptr;
struct Holder {
    ~Holder() { std::printf("global destructor cudaFree: %d\n", (int)cudaFree(g_buf)); }
};
static Holder holder;
static void at_exit() {
    int *p = nullptr;
    cudaError_t a = cudaMalloc(&p, 16);
    std::printf("atexit cudaMalloc %d cudaFree %d\n", (int)a, (int)cudaFree(p));
}
int main() {
    std::atexit(at_exit);
    cudaError_t e = cudaFree(0);  // the usual way to create the runtime's context
    if (e != cudaSuccess) { std::printf("cudaFree(0): %s\n", cudaGetErrorString(e)); return 2; }
    cudaMalloc(&g_buf, 32 * sizeof(int));
    fill<<<1, 32>>>(g_buf, 5);
    int h[32];
    cudaMemcpy(h, g_buf, sizeof h, cudaMemcpyDeviceToHost);
    for (int i = 0; i < 32; i++)
        if (h[i] != 5 + i) { std::printf("FAIL\n"); return 1; }
    std::printf("PASS\n");
    return 0;
}
"""


@pytest.mark.parametrize("cudart", ["static", "shared"])
def test_runtime_calls_in_exit_handlers(tmp_path, cudart):
    nvcc = need_nvcc()
    src = tmp_path / "exit.cu"
    src.write_text(EXIT_PROGRAM)
    exe = tmp_path / "exit"
    r = run([nvcc, "-o", str(exe), str(src), "-cudart", cudart], timeout=300)
    assert r.returncode == 0, r.stderr
    r = cuport_run([str(exe)])
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and lines[0] == "PASS", r.stdout + r.stderr
    # the atexit handler runs before the runtime's own: its calls work
    assert lines[1] == "atexit cudaMalloc 0 cudaFree 0", r.stdout
    assert lines[2].startswith("global destructor cudaFree: "), r.stdout


STREAM_ONLY_PROGRAM = r"""
#include <cstdio>
#include <cuda_runtime.h>
int main() {
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return 3;
    std::printf("PASS\n");
    return 0;
}
"""


def test_exit_with_a_stream_and_no_kernel(tmp_path):
    """The runtime's exit handler releases the context, which waits for its streams: that
    used to build the CPU backend there (nothing had made it yet), whose start-up hashes
    with OpenSSL after OpenSSL's own exit handler had cleaned up: SIGSEGV after PASS."""
    nvcc = need_nvcc()
    src, exe = tmp_path / "stream.cu", tmp_path / "stream"
    src.write_text(STREAM_ONLY_PROGRAM)
    r = run([nvcc, "-o", str(exe), str(src)], timeout=300)
    assert r.returncode == 0, r.stderr
    r = cuport_run([str(exe)])
    assert r.returncode == 0 and r.stdout == "PASS\n", (r.returncode, r.stdout, r.stderr)


# -- a daemon thread calling into the driver while Python finalises -------------------------

def test_calls_racing_interpreter_shutdown():
    script = textwrap.dedent("""
        import ctypes, sys, threading
        lib = ctypes.CDLL(sys.argv[1])
        assert lib.cuInit(0) == 0
        n = ctypes.c_int()
        def spin():
            while True:
                lib.cuDeviceGetCount(ctypes.byref(n))
        for _ in range(4):
            threading.Thread(target=spin, daemon=True).start()
        print("PASS")
    """)
    for _ in range(5):
        r = run([sys.executable, "-c", script, str(library())], timeout=60)
        assert r.returncode == 0 and r.stdout.strip() == "PASS", r.stdout + r.stderr


# -- exit handlers that run after cuport closed its Vulkan device ---------------------------

LATE_KERNEL = r"""
extern "C" __global__ void fill(int *p, int v) { p[threadIdx.x] = v + threadIdx.x; }
"""

LATE_SCRIPT = """
    import atexit, ctypes, sys
    lib = ctypes.CDLL("libcuda.so.1")
    state = {}

    def late():
        # registered before cuport opened the device: Python runs it after cuport's own exit
        # handler closed the device, as CuPy's module releases ran after a failed sort
        buf, words = state["buf"], (ctypes.c_int * 4)()
        print("late", lib.cuModuleUnload(state["mod"]), lib.cuMemFree_v2(buf),
              lib.cuMemcpyDtoH_v2(words, buf, ctypes.c_size_t(16)))

    atexit.register(late)
    ctx, mod, fn, buf = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_uint64()
    assert lib.cuInit(0) == 0 and lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
    assert lib.cuCtxSetCurrent(ctx) == 0
    assert lib.cuModuleLoadData(ctypes.byref(mod), open(sys.argv[1], "rb").read() + b"\\0") == 0
    assert lib.cuModuleGetFunction(ctypes.byref(fn), mod, b"fill") == 0
    assert lib.cuMemAlloc_v2(ctypes.byref(buf), ctypes.c_size_t(128)) == 0
    args = (ctypes.c_void_p * 2)(ctypes.addressof(buf), ctypes.addressof(ctypes.c_int(5)))
    assert lib.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, None, args, None) == 0  # still in flight
    state.update(mod=mod, buf=buf.value)
    print("PASS")
"""


def test_exit_handlers_after_the_vulkan_device_closed(tmp_path):
    """A Python program's atexit handlers run in reverse order of registration, so those
    registered before cuport opened a Vulkan device run after cuport closed it. CuPy's
    module unloads there drained a launch still in flight and read its status ring from
    memory already unmapped: SIGSEGV (exit 139) after a refused CUB sort on lavapipe. Now
    every call after the close is answered as after the interpreter's end: releases
    succeed, anything else is CUDA_ERROR_DEINITIALIZED (4)."""
    from cuport.backends.vulkan import runtime

    if not runtime.devices():
        pytest.skip("no Vulkan device")
    nvcc = need_nvcc()
    (tmp_path / "fill.cu").write_text(LATE_KERNEL)
    r = run([nvcc, "-ptx", "-o", str(tmp_path / "fill.ptx"), str(tmp_path / "fill.cu")], timeout=300)
    assert r.returncode == 0, r.stderr
    script = tmp_path / "late.py"
    script.write_text(textwrap.dedent(LATE_SCRIPT))
    r = cuport_run([sys.executable, str(script), str(tmp_path / "fill.ptx")], CUPORT_DEVICE="vulkan")
    assert (r.returncode, r.stdout) == (0, "PASS\nlate 0 0 4\n"), r.stdout + r.stderr[-3000:]
    assert "cuport:" not in r.stderr, r.stderr[-3000:]


# -- fork -------------------------------------------------------------------------------------

FORK_SCRIPT = """
    import ctypes, os, sys
    lib = ctypes.CDLL(sys.argv[1])

    def codes():
        n, ctx, d = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
        return [lib.cuInit(0), lib.cuDeviceGetCount(ctypes.byref(n)),
                lib.cuCtxGetCurrent(ctypes.byref(ctx)), lib.cuDevicePrimaryCtxRetain(
                    ctypes.byref(ctx), 0), lib.cuCtxSetCurrent(ctx),
                lib.cuMemAlloc_v2(ctypes.byref(d), ctypes.c_size_t(64))]

    def in_child(label):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(w, repr(codes()).encode())
            os._exit(0)
        os.close(w)
        out = os.read(r, 1000).decode()
        os.waitpid(pid, 0)
        print(label, out)

    in_child("before cuInit:")
    print("parent:", codes())
    in_child("after cuInit:")
    print("parent again:", codes())
"""


def test_fork_after_init_is_refused(tmp_path):
    script = tmp_path / "fork.py"
    script.write_text(textwrap.dedent(FORK_SCRIPT))
    r = run([sys.executable, str(script), str(library())], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        "before cuInit: [0, 0, 0, 0, 0, 0]",
        "parent: [0, 0, 0, 0, 0, 0]",
        "after cuInit: [3, 3, 3, 3, 3, 3]",  # CUDA_ERROR_NOT_INITIALIZED
        "parent again: [0, 0, 0, 0, 0, 0]",
    ]


FORK_C = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>
typedef int (*fn_init)(unsigned);
typedef int (*fn_alloc)(uint64_t *, size_t);
typedef int (*fn_count)(int *);
typedef int (*fn_version)(int *);
int main(int argc, char **argv) {
    void *lib = dlopen(argv[1], RTLD_NOW);
    fn_init init = (fn_init)dlsym(lib, "cuInit");
    fn_count count = (fn_count)dlsym(lib, "cuDeviceGetCount");
    fn_alloc alloc = (fn_alloc)dlsym(lib, "cuMemAlloc_v2");
    fn_version version = (fn_version)dlsym(lib, "cuDriverGetVersion");
    int n = 0, v = 0, parent_v = 0;
    version(&parent_v);
    if (init(0) != 0 || count(&n) != 0 || n != 1) { printf("FAIL: init\n"); return 1; }
    pid_t pid = fork();
    if (pid == 0) {
        uint64_t d = 0;
        printf("child %d %d %d\n", init(0), count(&n), alloc(&d, 64));
        int got = version(&v), null = version(NULL);
        printf("child version %d %s %d\n", got, v == parent_v && v > 0 ? "same" : "differs", null);
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("parent %d\n", count(&n));
    printf(WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "PASS\n" : "FAIL\n");
    return 0;
}
"""


def test_fork_in_a_c_program(tmp_path):
    src = tmp_path / "fork.c"
    src.write_text(FORK_C)
    exe = compile_c([src], tmp_path / "fork")
    r = run([str(exe), str(library())], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == ["child 3 3 3", "child version 0 same 1",
                                    "parent 0", "PASS"], r.stdout + r.stderr
