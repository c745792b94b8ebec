"""The library loaded into a running Python: it must use that interpreter.

ctypes and NVIDIA's cuda-python (cuda.bindings, which dlopens libcuda.so.1 and finds
every function through cuGetProcAddress) load cuport's libcuda.so.1 into their own
process; the Python side must then run in that interpreter, sharing its modules.
Also tried: a `python3` executable with libpython linked in statically (Debian's), and
a Python of another version, which the library must refuse cleanly.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from capi_support import clean_env, library, run

CTYPES_SCRIPT = textwrap.dedent("""
    import ctypes, sys
    lib = ctypes.CDLL(sys.argv[1])
    c_size = ctypes.c_size_t
    version, count, ctx, d = ctypes.c_int(), ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
    src = (ctypes.c_char * 64)(*b"hello cuport".ljust(64, b"."))
    dst = (ctypes.c_char * 64)()
    codes = [lib.cuInit(0), lib.cuDriverGetVersion(ctypes.byref(version)),
             lib.cuDeviceGetCount(ctypes.byref(count)), lib.cuCtxCreate_v2(ctypes.byref(ctx), 0, 0),
             lib.cuMemAlloc_v2(ctypes.byref(d), c_size(64)),
             lib.cuMemcpyHtoD_v2(d, src, c_size(64)), lib.cuMemcpyDtoH_v2(dst, d, c_size(64)),
             lib.cuMemFree_v2(d)]
    import cuport.driver.device as device
    print(codes, version.value, count.value, bytes(dst) == bytes(src))
    print("same interpreter:", device.initialized(), "_cuport_libcuda" in sys.modules)
""")


def run_ctypes(python: str):
    return run([python, "-c", CTYPES_SCRIPT, str(library())])


def test_ctypes_in_this_python():
    result = run_ctypes(sys.executable)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "[0, 0, 0, 0, 0, 0, 0, 0] 13050 1 True", "same interpreter: True True"]


def _static_python() -> str | None:
    """A python3 of our version whose executable has libpython linked in (no libpython.so)."""
    for candidate in ("/usr/bin/python3", shutil.which("python3")):
        if not candidate or not Path(candidate).exists():
            continue
        probe = run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        if probe.stdout.strip() != "{}.{}".format(*sys.version_info[:2]):
            continue
        ldd = subprocess.run(["ldd", candidate], capture_output=True, text=True)
        if "libpython" not in ldd.stdout:
            return candidate
    return None


def test_ctypes_in_a_statically_linked_python():
    python = _static_python()
    if python is None:
        pytest.skip("no python3 of this version with a statically linked libpython here")
    result = run_ctypes(python)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "same interpreter: True True"


def _other_pythons() -> list[str]:
    """Interpreters of another minor version that actually run here."""
    ours = "{}.{}".format(*sys.version_info[:2])
    candidates = [shutil.which(f"python{v}") for v in ("3.10", "3.12", "3.13")]
    candidates += sorted(map(str, (Path.home() / ".pyenv" / "versions").glob("3.1*/bin/python3")))
    found = []
    for python in filter(None, candidates):
        probe = run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        if probe.returncode == 0 and probe.stdout.strip() not in (ours, ""):
            found.append(python)
    return found


def test_other_python_version_is_refused():
    others = _other_pythons()
    if not others:
        pytest.skip("no Python of another version to load the library into")
    result = run([others[0], "-c",
                  "import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).cuInit(0))", str(library())])
    assert result.stdout.strip() == "3", result.stderr  # CUDA_ERROR_NOT_INITIALIZED, no crash
    assert "was built for Python" in result.stderr


CUDA_PYTHON_SCRIPT = textwrap.dedent("""
    import numpy as np
    from cuda.bindings import driver as cu

    def ok(r):
        err, *rest = r
        assert err == cu.CUresult.CUDA_SUCCESS, err
        return rest[0] if len(rest) == 1 else rest

    ok(cu.cuInit(0))
    print("version", ok(cu.cuDriverGetVersion()))
    print("count", ok(cu.cuDeviceGetCount()))
    dev = ok(cu.cuDeviceGet(0))
    print("name", ok(cu.cuDeviceGetName(64, dev)).split(b"\\0")[0].decode()[:10])
    print("warp", ok(cu.cuDeviceGetAttribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev)))
    ctx = ok(cu.cuDevicePrimaryCtxRetain(dev))
    ok(cu.cuCtxSetCurrent(ctx))
    a = np.arange(1000, dtype=np.float32)
    b = np.zeros_like(a)
    d = ok(cu.cuMemAlloc(a.nbytes))
    ok(cu.cuMemcpyHtoD(d, a, a.nbytes))
    ok(cu.cuMemcpyDtoH(b, d, a.nbytes))
    print("roundtrip", bool((a == b).all()))
    s = ok(cu.cuStreamCreate(0))
    ok(cu.cuMemsetD32Async(d, 0x3F800000, 1000, s))
    ok(cu.cuMemcpyDtoHAsync(b, d, a.nbytes, s))
    ok(cu.cuStreamSynchronize(s))
    print("memset", bool((b == 1.0).all()))
    ok(cu.cuMemFree(d))
    print("double free", cu.cuMemFree(d)[0].name)
""")


def test_cuda_python():
    pytest.importorskip("cuda.bindings.driver", reason="pip install cuda-bindings (in '.[test]')")
    env = clean_env(LD_LIBRARY_PATH=str(library().parent))
    result = run([sys.executable, "-c", CUDA_PYTHON_SCRIPT], env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        "version 13050", "count 1", "name cuport CPU", "warp 32", "roundtrip True",
        "memset True", "double free CUDA_ERROR_INVALID_VALUE"]
    assert "double free" in result.stderr  # the misuse is reported, naming the call


PROBE_SCRIPT = textwrap.dedent("""
    import ctypes, sys
    lib = ctypes.CDLL(sys.argv[1])
    dev = ctypes.c_int()
    print(lib.cuInit(0), lib.cuCtxGetDevice_v2(ctypes.byref(dev), None),
          lib.cuCtxGetDevice_v2(ctypes.byref(dev), ctypes.c_void_p(0x7C0DE0FFFFC0)), flush=True)
""")


def test_context_probes_are_quiet():
    """Asking for the current context's device with none current (cuCtxGetDevice_v2 with a
    NULL context: cuda.core and CuPy do at start-up) is an answer, not a misuse: no report;
    the same call naming a context that does not exist is reported. (The context arrives in
    Python as an address: its NULL is 0.)"""
    result = run([sys.executable, "-c", PROBE_SCRIPT, str(library())])
    assert result.stdout.split() == ["0", "201", "201"], result.stdout + result.stderr
    reports = [line for line in result.stderr.splitlines() if line.startswith("cuport:")]
    assert len(reports) == 1 and "cuCtxGetDevice_v2" in reports[0], result.stderr
