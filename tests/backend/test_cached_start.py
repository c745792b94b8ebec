"""What a cached run of a CUDA program does and does not do at start-up (issue 9): it gives
the first run's output, compiles nothing, imports neither the compiler nor what only a
build or IPC needs, leaves Python's collector as it found it, and the launching thread does
not zero the workers' scratch."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE.parent / "programs"

#: loaded into the program's embedded Python through a .pth file on the path `cuport run`
#: hands it (as bench/startup.py's sampler is); writes what the run did when the program exits
REPORTER = textwrap.dedent("""
    import ctypes, gc, json, os, sys

    @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    def _report(_):
        from cuport.backends.cpu.backend import get_cpu_backend
        with open(os.environ["CUPORT_TEST_REPORT"], "w") as f:
            json.dump({"modules": sorted(sys.modules), "collecting": gc.isenabled(),
                       "compiles": get_cpu_backend().stats["compiles"]}, f)

    ctypes.CDLL("libc.so.6").__cxa_atexit(_report, None, None)
""")

#: imported by a run that compiles a kernel or builds a library, never by a cached run
NOT_IN_A_CACHED_RUN = ("cuport.backends.cpu.compiler", "cuport.backends.cpu.emit",
                       "cuport.passes.inline", "cuport.passes.yields", "subprocess", "socket",
                       "cuport.driver.ipc_channel")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc builds the program")
def test_a_cached_run_compiles_and_imports_nothing_it_does_not_need(tmp_path):
    exe = tmp_path / "vector_add"
    subprocess.run(["nvcc", "-O2", "-arch=sm_90", "-o", str(exe), str(PROGRAMS / "vector_add.cu")],
                   check=True)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "cuport_test_reporter.py").write_text(REPORTER)
    (hook / "cuport_test_reporter.pth").write_text("import cuport_test_reporter\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUPORT_")}
    env.update(CUPORT_DEVICE="cpu", CUPORT_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(hook), CUPORT_TEST_REPORT=str(tmp_path / "report.json"))

    def run() -> tuple[str, dict]:
        p = subprocess.run([sys.executable, "-m", "cuport.cli", "run", str(exe)], env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        return p.stdout, json.loads((tmp_path / "report.json").read_text())

    first, did = run()
    assert did["compiles"] > 0 and "cuport.backends.cpu.compiler" in did["modules"]
    again, did = run()
    assert again == first and "PASS" in again
    assert did["compiles"] == 0
    assert set(NOT_IN_A_CACHED_RUN).isdisjoint(did["modules"])
    assert did["collecting"]  # the collector was off while cuport started, on again after


@pytest.mark.parametrize("collecting", [True, False])
def test_the_collector_is_left_as_a_running_python_had_it(collecting):
    """Loaded into a running Python (ctypes), libcuda's start-up turns the collector off
    while it imports cuport and puts back what the program had."""
    from cuport.capi import build

    script = textwrap.dedent(f"""
        import ctypes, gc, sys
        if not {collecting}:
            gc.disable()
        lib = ctypes.CDLL(sys.argv[1])
        assert lib.cuInit(0) == 0
        print(gc.isenabled())
    """)
    p = subprocess.run([sys.executable, "-c", script, str(build.library_dir() / build.SONAME)],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "CUPORT_DEVICE": "cpu"})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str(collecting)


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_workers_scratch_is_not_zeroed_by_the_launching_thread():
    """The per-worker scratch is mapped, not written: its pages stay untouched until a
    worker uses them (16 workers zeroed 40 MB at once for a Thrust sort's 2.5 MB each), and
    read as zeros, aligned, once touched."""
    from cuport.backends.cpu.backend import HostBuffer, Scratch

    before = _resident_bytes()
    scratch = Scratch(16, 2_506_752)
    assert _resident_bytes() - before < 4 << 20  # 40 MB if zeroed here
    for b in scratch.buffers:
        assert b.address % 4096 == 0
        view = (ctypes.c_ubyte * b.size).from_address(b.address)
        assert not any(view[:: 4096])
        view[b.size - 1] = 7  # writable to its end
    big = HostBuffer(1 << 20, 1 << 16)  # an alignment above a page
    assert big.address % (1 << 16) == 0
    ctypes.memset(big.address, 1, big.size)
    small = HostBuffer(8, 8)
    assert ctypes.c_uint64.from_address(small.address).value == 0


def test_kernels_of_one_parameter_layout_share_a_packer():
    """A launch packs its parameters with code generated for the kernel's layout, made once
    per layout (a library's kernels share a few) and right for each kernel."""
    import struct

    from cuport.driver import launch

    # (start, end, size, name): a pointer, then an int at 8 and a float at 12
    one = ((0, 8, 8, "p"), (8, 12, 4, "n"), (12, 16, 4, "x"))
    other = ((0, 8, 8, "out"), (8, 12, 4, "count"), (12, 16, 4, "scale"))
    pack = launch._packer(one, 16)
    assert launch._packer(other, 16) is pack
    assert launch._packer(((0, 8, 8, "p"), (16, 20, 4, "n")), 24) is not pack
    values = [ctypes.c_uint64(0x1122334455667788), ctypes.c_int32(-5), ctypes.c_float(2.5)]
    kp = (ctypes.c_void_p * 3)(*(ctypes.addressof(v) for v in values))
    assert pack(ctypes.addressof(kp)) == struct.pack("<Qif", 0x1122334455667788, -5, 2.5)
    kp[1] = None
    assert pack(ctypes.addressof(kp)) is None  # a NULL argument pointer
