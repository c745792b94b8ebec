"""The library stand-ins' mechanism: tables, the stubs' ABI, dispatch and status codes."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from libs_support import find_header, native_dir

from cuport.libs import catalog, table


def test_tables_parse_and_cover_what_cupy_imports():
    names = {f.symbol for f in table.all_functions()}
    # a sample of CuPy 14's imports (cupy_backends/cuda/libs/*.so, cupy/cuda/cufft.so)
    for symbol in ("cublasSgemm_v2", "cublasGemmStridedBatchedEx", "cublasDgetrfBatched",
                   "cublasHgemm", "cufftXtMakePlanMany", "cufftExecZ2D", "curandGeneratePoisson",
                   "cusparseSpMV", "cusolverDnDgesvdjBatched", "cusolverSpDcsrlsvqr"):
        assert symbol in names


def _readelf(*args: str) -> str:
    return subprocess.run(["readelf", *args], capture_output=True, text=True, check=True).stdout


def test_stubs_carry_the_soname_as_symbol_version_and_need_no_python():
    native = native_dir()
    for lib in catalog.LIBRARIES:
        for soname in lib.sonames:
            syms = _readelf("--dyn-syms", "-W", str(native / soname))
            some = next(iter(table.functions(lib.name)))
            assert f"{some}@@{soname}" in syms, (soname, some)
            assert "libpython" not in _readelf("-d", str(native / soname))


def _in_subprocess(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)


def test_unimplemented_answers_not_supported_and_says_so_once():
    lib = native_dir() / "libcublas.so.13"
    r = _in_subprocess(
        "import ctypes\n"
        f"l = ctypes.CDLL('{lib}')\n"
        "h = ctypes.c_void_p()\n"
        "print(l.cublasXtCreate(ctypes.byref(h)), l.cublasXtCreate(ctypes.byref(h)))\n")
    assert r.stdout.split() == ["15", "15"], r.stderr  # CUBLAS_STATUS_NOT_SUPPORTED
    assert r.stderr.count("cublasXtCreate is not implemented") == 1


def test_status_codes_for_misuse():
    lib = native_dir() / "libcublas.so.13"
    r = _in_subprocess(
        "import ctypes\n"
        f"l = ctypes.CDLL('{lib}')\n"
        "one = ctypes.c_float(1)\n"
        "print(l.cublasSgemm_v2(None, 0, 0, 2, 2, 2, ctypes.byref(one), None, 2, None, 2,"
        " ctypes.byref(one), None, 2))\n"
        "h = ctypes.c_void_p(); print(l.cublasCreate_v2(ctypes.byref(h)))\n"
        "print(l.cublasSgemm_v2(h, 0, 0, 4, 2, 2, ctypes.byref(one), None, 3, None, 2,"
        " ctypes.byref(one), None, 4))\n"
        "print(l.cublasSgemm_v2(h, 7, 0, 2, 2, 2, ctypes.byref(one), None, 2, None, 2,"
        " ctypes.byref(one), None, 2))\n"
        "print(l.cublasCreate_v2(None))\n")
    # NOT_INITIALIZED for a NULL handle, INVALID_VALUE for lda < m, a bad op, a NULL out
    assert r.stdout.split() == ["1", "0", "7", "7", "7"], r.stdout + r.stderr
    assert "lda = 3 < max(1, 4)" in r.stderr


def test_philox_matches_random123_known_answers():
    from cuport.libs import curand_engines

    zero = curand_engines.philox_blocks(0, np.zeros((1, 4), np.uint32))
    assert [int(v) for v in zero[0]] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    ones = curand_engines.philox_blocks(0xFFFFFFFFFFFFFFFF, np.full((1, 4), 0xFFFFFFFF, np.uint32))
    assert [int(v) for v in ones[0]] == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]


@pytest.mark.skipif(find_header("cublas_api.h") is None, reason="NVIDIA's headers not installed")
def test_generated_tables_are_current():
    from cuport.libs import gen_tables

    dirs = {find_header(h) for lib in catalog.LIBRARIES for h in lib.umbrella}
    if None in dirs:
        pytest.skip("not every library's headers are installed")
    from capi_support import cuda_home

    home = cuda_home()
    if home is None:
        pytest.skip("no CUDA toolkit headers")
    args = [a for d in sorted(map(str, dirs)) for a in ("--include", d)]
    assert gen_tables.main([*args, "--toolkit", str(home / "include"), "--check"]) == 0




def test_library_calls_are_captured_into_graphs():
    """Under stream capture a cuBLAS call becomes a graph node (a host node) that does
    the work each time the graph is launched, in order with the graph's copies."""
    from capi_support import clean_env, cuport_command

    code = (
        "import ctypes, numpy as np\n"
        "cu = ctypes.CDLL('libcuda.so.1'); bl = ctypes.CDLL('libcublas.so.13')\n"
        "assert cu.cuInit(0) == 0\n"
        "ctx = ctypes.c_void_p(); cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0)\n"
        "cu.cuCtxSetCurrent(ctx)\n"
        "n = 1000; x = np.arange(n, dtype=np.float32); y = np.ones(n, np.float32)\n"
        "dx, dy = ctypes.c_uint64(), ctypes.c_uint64()\n"
        "cu.cuMemAlloc_v2(ctypes.byref(dx), 4 * n); cu.cuMemAlloc_v2(ctypes.byref(dy), 4 * n)\n"
        "P = ctypes.c_void_p\n"
        "cu.cuMemcpyHtoD_v2(dx, P(x.ctypes.data), 4 * n); cu.cuMemcpyHtoD_v2(dy, P(y.ctypes.data), 4 * n)\n"
        "s = ctypes.c_void_p(); cu.cuStreamCreate(ctypes.byref(s), 1)\n"
        "h = ctypes.c_void_p(); bl.cublasCreate_v2(ctypes.byref(h)); bl.cublasSetStream_v2(h, s)\n"
        "a = ctypes.c_float(2.0)\n"
        "assert cu.cuStreamBeginCapture_v2(s, 0) == 0\n"
        "assert bl.cublasSaxpy_v2(h, n, ctypes.byref(a), dx, 1, dy, 1) == 0\n"
        "a.value = 100.0  # host scalars are read at the call, as cuBLAS reads them\n"
        "g = ctypes.c_void_p(); assert cu.cuStreamEndCapture(s, ctypes.byref(g)) == 0\n"
        "count = ctypes.c_size_t(0); cu.cuGraphGetNodes(g, None, ctypes.byref(count))\n"
        "nodes = (ctypes.c_void_p * count.value)(); cu.cuGraphGetNodes(g, nodes, ctypes.byref(count))\n"
        "t = ctypes.c_int(); cu.cuGraphNodeGetType(ctypes.c_void_p(nodes[0]), ctypes.byref(t))\n"
        "out = np.empty(n, np.float32); cu.cuMemcpyDtoH_v2(P(out.ctypes.data), dy, 4 * n)\n"
        "assert (out == 1).all(), 'the captured call ran at capture'\n"
        "ge = ctypes.c_void_p(); assert cu.cuGraphInstantiateWithFlags(ctypes.byref(ge), g, 0) == 0\n"
        "for _ in range(3): assert cu.cuGraphLaunch(ge, s) == 0\n"
        "cu.cuStreamSynchronize(s); cu.cuMemcpyDtoH_v2(P(out.ctypes.data), dy, 4 * n)\n"
        "print(count.value, t.value, float(np.abs(out - (1 + 3 * 2 * x)).max()))\n")
    r = subprocess.run([*cuport_command(), "run", sys.executable, "-c", code],
                       env=clean_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    assert r.stdout.split() == ["1", "3", "0.0"], r.stdout + r.stderr[-2000:]  # 3: a HOST node


def test_device_memory_the_host_cannot_touch_is_staged(monkeypatch):
    """Where device memory is not host memory (a discrete GPU's under the Vulkan backend)
    a call's ranges are copied to host buffers with the driver's copy primitive and the
    written ones back: here every allocation is treated so, and cuBLAS still computes."""
    import ctypes

    from cuport.driver import memory
    from cuport.libs import device

    moves = []
    real_move = memory.move
    monkeypatch.setattr(device, "_host_ok", lambda address: memory.TABLE.find(address) is None)
    monkeypatch.setattr(memory, "move", lambda d, s, n: (moves.append(n), real_move(d, s, n)))
    lib = ctypes.CDLL(str(native_dir() / "libcublas.so.13"))
    cu = ctypes.CDLL(str(native_dir() / "libcuda.so.1"))
    assert cu.cuInit(0) == 0
    ctx = ctypes.c_void_p()
    cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0)
    cu.cuCtxSetCurrent(ctx)
    n = 64
    a = np.random.default_rng(1).standard_normal((n, n)).astype(np.float32, order="F")
    b = np.random.default_rng(2).standard_normal((n, n)).astype(np.float32, order="F")
    ptrs = []
    for host in (a, b, np.zeros_like(a)):
        p = ctypes.c_uint64()
        assert cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(host.nbytes)) == 0
        cu.cuMemcpyHtoD_v2(p, ctypes.c_void_p(host.ctypes.data), ctypes.c_size_t(host.nbytes))
        ptrs.append(p)
    h = ctypes.c_void_p()
    assert lib.cublasCreate_v2(ctypes.byref(h)) == 0
    one, zero = ctypes.c_float(1), ctypes.c_float(0)
    moves.clear()
    assert lib.cublasSgemm_v2(h, 0, 0, n, n, n, ctypes.byref(one), ptrs[0], n, ptrs[1], n,
                              ctypes.byref(zero), ptrs[2], n) == 0
    assert cu.cuCtxSynchronize() == 0
    out = np.zeros_like(a)
    cu.cuMemcpyDtoH_v2(ctypes.c_void_p(out.ctypes.data), ptrs[2], ctypes.c_size_t(out.nbytes))
    assert np.abs(out - a @ b).max() < 1e-4
    assert moves[:4] == [4 * n * n] * 4  # A, B and C in, C back
    lib.cublasDestroy_v2(h)
