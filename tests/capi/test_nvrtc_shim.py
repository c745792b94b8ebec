"""cuport's NVRTC shim (cuport/shims/nvrtc.c): cubin requests compiled to PTX.

Under `cuport run` the program's libnvrtc.so.13 is cuport's shim (preloaded), which
forwards to NVIDIA's NVRTC; a real architecture (-arch=sm_90) becomes the matching
virtual one and the "cubin" is the PTX, which cuport's driver loads. CuPy asks for
cubins this way unless CUPY_COMPILE_WITH_PTX=1, cuda.core's Program.compile("cubin").
"""

from __future__ import annotations

import importlib.util
import os
import sys
import textwrap

import pytest
from capi_support import clean_env, cuport_command, library, run

from cuport.shims import nvrtc

REAL = nvrtc.find_real()
pytestmark = pytest.mark.skipif(REAL is None, reason="NVIDIA's NVRTC (nvidia-cuda-nvrtc) "
                                                     "is not installed")

NVRTC_SCRIPT = """
    import ctypes, sys
    import numpy as np
    from cuda.bindings import driver as cu

    nv = ctypes.CDLL("libnvrtc.so.13")  # what a program finds: cuport's shim
    real = ctypes.CDLL(sys.argv[1])     # NVIDIA's, to compare with
    SRC = b'extern "C" __global__ void twice(int *p) { p[threadIdx.x] = 2 * threadIdx.x + 1; }'

    def compile(lib, *options):
        prog = ctypes.c_void_p()
        assert lib.nvrtcCreateProgram(ctypes.byref(prog), SRC, b"k.cu", 0, None, None) == 0
        opts = (ctypes.c_char_p * len(options))(*options)
        assert lib.nvrtcCompileProgram(prog, len(options), opts) == 0
        return prog

    def read(lib, prog, what):
        size = ctypes.c_size_t()
        code = getattr(lib, f"nvrtcGet{what}Size")(prog, ctypes.byref(size))
        if code:
            return code
        buf = ctypes.create_string_buffer(size.value)
        assert getattr(lib, f"nvrtcGet{what}")(prog, buf) == 0
        return buf.raw

    for options, target in (([b"-arch=sm_90"], b"sm_90"),
                            ([b"--gpu-architecture", b"sm_90a"], b"sm_90a"),
                            ([b"--gpu-architecture=sm_80", b"-lineinfo"], b"sm_80")):
        cubin = read(nv, compile(nv, *options), "CUBIN")
        ptx = read(nv, compile(nv, *options), "PTX")
        print(options[0].decode(), cubin == ptx, cubin.startswith(b"// cuport:"),
              b".target " + target + b"\\n" in cubin)

    # PTX asked for as PTX: NVIDIA's text behind one comment line
    mine = read(nv, compile(nv, b"-arch=compute_90"), "PTX")
    theirs = read(real, compile(real, b"-arch=compute_90"), "PTX")
    print("ptx", mine.split(b"\\n", 1)[1] == theirs)
    # no cubin for a virtual architecture, as NVIDIA's says
    print("virtual cubin", read(nv, compile(nv, b"-arch=compute_90"), "CUBIN")
          == read(real, compile(real, b"-arch=compute_90"), "CUBIN"))

    # the cubin the shim answered runs
    def ok(r):
        assert r[0] == cu.CUresult.CUDA_SUCCESS, r
        return r[1] if len(r) == 2 else None
    ok(cu.cuInit(0))
    ctx = ok(cu.cuDevicePrimaryCtxRetain(ok(cu.cuDeviceGet(0))))
    ok(cu.cuCtxSetCurrent(ctx))
    image = read(nv, compile(nv, b"-arch=sm_90"), "CUBIN")
    fn = ok(cu.cuModuleGetFunction(ok(cu.cuModuleLoadData(image)), b"twice"))
    d = ok(cu.cuMemAlloc(32 * 4))
    arg = np.array([int(d)], dtype=np.uint64)
    args = np.array([arg.ctypes.data], dtype=np.uint64)
    ok(cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, 0, args.ctypes.data, 0))
    out = np.zeros(32, dtype=np.int32)
    ok(cu.cuMemcpyDtoH(out.ctypes.data, d, out.nbytes))
    print("launch", out.tolist() == [2 * i + 1 for i in range(32)])
"""


def test_cubin_requests_give_ptx_that_runs(tmp_path):
    script = tmp_path / "nvrtc_prog.py"
    script.write_text(textwrap.dedent(NVRTC_SCRIPT))
    r = run([*cuport_command(), "run", sys.executable, str(script), str(REAL)],
            env=clean_env(), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        "-arch=sm_90 True True True",
        "--gpu-architecture True True True",
        "--gpu-architecture=sm_80 True True True",
        "ptx True",
        "virtual cubin True",
        "launch True",
    ], r.stdout + r.stderr


def test_cuda_core_program_compiled_to_cubin(tmp_path):
    if importlib.util.find_spec("cuda.core") is None:
        pytest.skip("cuda.core is not installed")
    script = tmp_path / "core_cubin.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
        dev = Device(); dev.set_current(); s = dev.create_stream()
        src = 'extern "C" __global__ void inc(int *p, int n) { int i = threadIdx.x; if (i < n) p[i] += i; }'
        kernel = Program(src, code_type="c++", options=ProgramOptions(arch=f"sm_{dev.arch}")) \\
            .compile("cubin").get_kernel("inc")
        host = np.full(64, 5, dtype=np.int32)
        buf = dev.memory_resource.allocate(host.nbytes, stream=s)
        from cuda.bindings import driver
        driver.cuMemcpyHtoDAsync(int(buf.handle), host.ctypes.data, host.nbytes, s.handle)
        launch(s, LaunchConfig(grid=1, block=64), kernel, buf, np.int32(64))
        driver.cuMemcpyDtoHAsync(host.ctypes.data, int(buf.handle), host.nbytes, s.handle)
        s.sync()
        print("PASS" if host.tolist() == [5 + i for i in range(64)] else "FAIL")
    """))
    r = run([*cuport_command(), "run", sys.executable, str(script)], env=clean_env(), timeout=300)
    assert r.returncode == 0 and r.stdout.split() == ["PASS"], r.stdout + r.stderr


def test_without_nvidias_nvrtc_the_shim_says_so(tmp_path):
    shim = nvrtc.shim_path(library().parent)
    script = "import ctypes; v = ctypes.c_int(); print(ctypes.CDLL('libnvrtc.so.13')" \
             ".nvrtcVersion(ctypes.byref(v), ctypes.byref(v)))"
    r = run([sys.executable, "-c", script], env=clean_env(LD_PRELOAD=str(shim)))
    assert r.stdout.strip() == "11", r.stdout + r.stderr  # NVRTC_ERROR_INTERNAL_ERROR
    assert "CUPORT_NVRTC does not name NVIDIA's libnvrtc.so.13" in r.stderr


def test_shim_can_be_turned_off(tmp_path):
    script = "import os; print(os.environ.get('LD_PRELOAD', ''), os.environ.get('CUPORT_NVRTC'))"
    on = run([*cuport_command(), "run", sys.executable, "-c", script], env=clean_env())
    assert str(nvrtc.shim_path(library().parent)) in on.stdout and str(REAL) in on.stdout
    off = run([*cuport_command(), "run", sys.executable, "-c", script],
              env=clean_env(CUPORT_NVRTC_SHIM="0"))
    # (cuport's library placeholders stay preloaded: cli.py)
    assert off.stdout.split()[-1] == "None", off.stdout
    assert str(nvrtc.shim_path(library().parent)) not in off.stdout, off.stdout


def test_real_nvrtc_that_others_could_write_is_not_taken(tmp_path):
    lib = tmp_path / "site" / "nvidia" / f"cu{nvrtc.MAJOR}" / "lib"
    lib.mkdir(parents=True)
    (lib / nvrtc.SONAME).write_bytes(b"\x7fELF")
    os.chmod(tmp_path, 0o755)
    assert nvrtc.find_real([str(tmp_path / "site")]) in (lib / nvrtc.SONAME, REAL)
    os.chmod(lib / nvrtc.SONAME, 0o666)
    assert nvrtc.find_real([str(tmp_path / "site")]) != lib / nvrtc.SONAME
