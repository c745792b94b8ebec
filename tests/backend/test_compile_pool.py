"""Kernels compiled ahead of their launches by worker processes (backends/cpu/compile_pool.py):
the kernels whose block shape the PTX declares are compiled while the program goes on, a
launch takes their result, and a launch of a kernel still queued compiles it at once."""

from __future__ import annotations

import numpy as np
import pytest

import cuport
from cuport.backends.cpu import compile_pool
from cuport.backends.cpu.backend import get_cpu_backend


def kernel(name: str, k: int) -> str:
    return f"""
.visible .entry {name}(.param .u64 p, .param .u32 n) .reqntid 64, 1, 1
{{
    .reg .pred %q;
    .reg .b32 %r<5>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %ctaid.x;
    mad.lo.u32 %r2, %r3, 64, %r2;
    setp.ge.u32 %q, %r2, %r1;
    @%q bra END;
    mul.wide.u32 %rd2, %r2, 4;
    add.u64 %rd3, %rd1, %rd2;
    ld.global.u32 %r4, [%rd3];
    mad.lo.u32 %r4, %r4, {k}, {k};
    st.global.u32 [%rd3], %r4;
END:
    ret;
}}
"""


def module_ptx(*ks: int) -> str:
    """A module of one kernel per k (each test its own, as the pool remembers modules)."""
    return ".version 7.0\n.target sm_70\n.address_size 64\n" + "".join(
        kernel(f"affine{k}", k) for k in ks)


@pytest.fixture()
def ahead(tmp_path, monkeypatch):
    monkeypatch.setenv("CUPORT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CUPORT_CACHE", "1")
    monkeypatch.setenv("CUPORT_COMPILE_WORKERS", "1")
    if compile_pool.python_executable() is None:
        pytest.skip("no Python interpreter to run compile workers")
    return compile_pool.get_compile_pool()


def launch(module, k: int) -> None:
    x = np.arange(1000, dtype=np.uint32)
    module.kernel(f"affine{k}")(16, 64, (x, 1000))
    assert (x == np.arange(1000, dtype=np.uint32) * k + k).all()


def test_declared_kernels_are_compiled_while_the_program_goes_on(ahead):
    be = get_cpu_backend()
    c0, h0 = be.stats["compiles"], be.stats["cache_hits"]
    module = cuport.Module(module_ptx(3, 5, 7))
    assert ahead.wait(300)
    assert be.stats["compiles"] == c0 + 3  # by the workers, before any launch
    for k in (3, 5, 7):
        launch(module, k)
    assert be.stats["compiles"] == c0 + 3
    assert be.stats["cache_hits"] == h0 + 3


def test_a_launch_does_not_wait_for_kernels_it_does_not_use(ahead):
    be = get_cpu_backend()
    c0 = be.stats["compiles"]
    module = cuport.Module(module_ptx(9, 11, 13))
    launch(module, 13)  # queued behind the others, or under way: compiled once either way
    assert ahead.wait(300)
    assert be.stats["compiles"] == c0 + 3
    launch(module, 9)
    launch(module, 11)
    assert be.stats["compiles"] == c0 + 3


def test_a_module_of_many_kernels_is_left_to_its_launches(ahead, monkeypatch):
    """A library module of hundreds of instantiations (CuPy's CUB) is not compiled ahead."""
    monkeypatch.setattr(compile_pool, "AHEAD_MAX_KERNELS", 2)
    be = get_cpu_backend()
    c0 = be.stats["compiles"]
    module = cuport.Module(module_ptx(19, 21, 23))
    assert ahead.wait(300)
    assert be.stats["compiles"] == c0
    launch(module, 21)
    assert be.stats["compiles"] == c0 + 1  # only the kernel launched


def test_later_runs_compile_ahead_only_what_earlier_runs_launched(ahead, monkeypatch, tmp_path):
    """The cache remembers which of a module's kernels were launched; a later load of the
    module compiles ahead only those (a library's others would take cores every run)."""
    be = get_cpu_backend()
    text = module_ptx(31, 33, 35)
    monkeypatch.setenv("CUPORT_COMPILE_WORKERS", "0")
    c0 = be.stats["compiles"]
    launch(cuport.Module(text), 33)  # the first run: no workers, one kernel launched
    assert be.stats["compiles"] == c0 + 1
    monkeypatch.setenv("CUPORT_COMPILE_WORKERS", "1")
    module = cuport.Module(text)  # a later run: 33 is cached, 31 and 35 were never launched
    assert ahead.wait(300)
    assert be.stats["compiles"] == c0 + 1
    launch(module, 35)  # compiled by its launch, and remembered
    assert be.stats["compiles"] == c0 + 2
    # evicted from the cache: the next load compiles both launched kernels ahead, not 31
    for entry in (tmp_path / "cache").glob("*.k"):
        if b"launched kernels" not in entry.read_bytes() and b"ptx module" not in entry.read_bytes():
            entry.unlink()
    module = cuport.Module(text)
    assert ahead.wait(300)
    assert be.stats["compiles"] == c0 + 4
    launch(module, 33)
    launch(module, 35)
    assert be.stats["compiles"] == c0 + 4


def test_no_workers_when_turned_off(ahead, monkeypatch):
    monkeypatch.setenv("CUPORT_COMPILE_WORKERS", "0")
    be = get_cpu_backend()
    c0 = be.stats["compiles"]
    module = cuport.Module(module_ptx(15, 17))
    assert be.stats["compiles"] == c0
    launch(module, 17)
    assert be.stats["compiles"] == c0 + 1  # only the kernel launched


def test_a_worker_ends_when_its_launching_process_is_gone(tmp_path):
    """A worker busy with a long compile reads no EOF; it must still end with its launcher
    (it holds the launcher's stderr open: `subprocess.run` on the program would wait)."""
    import os
    import subprocess
    import sys
    import time

    # the launcher starts a worker, hands the write end of the worker's stdin to a process
    # that outlives it (so no EOF comes, as while a compile runs) and exits
    launcher = (
        "import subprocess, sys\n"
        "from cuport.backends.cpu.compile_pool import _Worker\n"
        "w = _Worker(sys.executable).proc\n"
        "fd = w.stdin.fileno()\n"
        "subprocess.Popen(['sleep', '60'], pass_fds=[fd], stdout=subprocess.DEVNULL,"
        " stderr=subprocess.DEVNULL)\n"
        "print(w.pid, flush=True)\n"
        "import os; os._exit(0)\n")
    r = subprocess.run([sys.executable, "-c", launcher], capture_output=True, text=True,
                       timeout=60, cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                           os.path.abspath(__file__)))))
    assert r.returncode == 0, r.stderr
    pid = int(r.stdout.split()[0])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        with open(f"/proc/{pid}/stat") as f:  # a zombie (reaped by init soon) is gone too
            if f.read().split(") ", 1)[1].startswith("Z"):
                return
        time.sleep(0.1)
    os.kill(pid, 9)
    pytest.fail("the compile worker outlived its launching process by 20 s")
