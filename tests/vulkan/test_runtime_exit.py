"""The end of a C program: once cuport's exit handler has run (runtime/device.py), no Vulkan
call reaches the driver, whose own exit handler may already have shut it down (on the H200
host the CUDA runtime's exit handler then freed memory through a dead driver: SIGSEGV
after PASS). Releases and waits do nothing; work is refused with VulkanUnavailable."""

from __future__ import annotations

import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import vkrt_support

SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, "tests/vulkan")
    import numpy as np
    import vkrt_support
    from cuport.backends.vulkan import runtime
    from cuport.backends.vulkan.runtime import device as vkdev
    dev = vkrt_support.device()
    buf = dev.alloc(4096)
    s = dev.stream()
    s.fill(buf.address, 7, 1024, 4)
    vkdev._on_exit()                      # what libc's exit() runs
    dev.free(buf)                         # the CUDA runtime's exit handler, after it
    s.synchronize()
    s.close()
    dev.synchronize()
    try:
        dev.alloc(64)
    except runtime.VulkanUnavailable as e:
        print("refused:", e)
    print("done")
""")


def test_after_the_exit_handler_releases_are_quiet_and_work_is_refused() -> None:
    vkrt_support.device()  # skips without a device
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert lines[-1] == "done", r.stdout + r.stderr
    assert any(ln.startswith("refused:") and "shut down" in ln for ln in lines), r.stdout


@pytest.mark.parametrize("argv", [[], ["python3", "prog.py"]])
def test_the_handler_is_registered_only_in_c_programs(monkeypatch, argv) -> None:
    from cuport.backends.vulkan.runtime import device as vkdev

    monkeypatch.setattr(sys, "orig_argv", argv)
    assert vkdev._in_c_program() is (not argv)


def test_a_c_programs_pipelines_reach_the_disk_cache(tmp_path) -> None:
    """A C program's interpreter is never finalised, so the driver's pipeline cache was
    saved only by Python programs: every run of a CUDA program made each pipeline anew in
    the driver (on NVIDIA's, compiling the SPIR-V again: bench/gpu's cached first launches
    14-22 ms on an H100). The exit handler saves it now; the next run reads it back."""
    vkrt_support.device()  # skips without a device
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "capi"))
    from capi_support import clean_env, cuport_command, need_nvcc, run

    exe = tmp_path / "printf_strings"
    r = run([need_nvcc(), "-o", str(exe), str(Path(__file__).resolve().parent / "printf_strings.cu")],
            timeout=600)
    assert r.returncode == 0, r.stderr
    cache = tmp_path / "cache"
    env = clean_env(CUPORT_DEVICE="vulkan", CUPORT_CACHE_DIR=str(cache))
    outs = []
    for _ in range(2):
        r = run([*cuport_command(), "run", str(exe)], env=env, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        outs.append(r.stdout)
        saved = list((cache / "vulkan").glob("pipelines-*.bin"))
        assert len(saved) == 1, sorted(p.name for p in cache.rglob("*"))
        st = saved[0].stat()
        assert st.st_size >= 32 and stat.S_IMODE(st.st_mode) == 0o600
    assert outs[0] == outs[1] and "cudaSuccess" in outs[0]


FORK_SCRIPT = textwrap.dedent("""
    import ctypes, os, sys
    sys.path.insert(0, "tests/vulkan")
    import numpy as np
    import vkrt_support
    from cuport.backends.vulkan.runtime import device as vkdev
    dev = vkrt_support.device()
    buf = dev.alloc(4096, "host")
    s = dev.stream()
    s.fill(buf.address, 7, 1024, 4)
    s.synchronize()
    saved = []
    dev.pipelines.save = lambda: saved.append(os.getpid())
    for t in list(dev._streams):
        t.quiesce = lambda: saved.append(("quiesce", os.getpid()))
    pid = os.fork()
    if pid == 0:                          # a child that calls exit(), as a C program's would
        vkdev._on_exit()
        os._exit(10 + len(saved))
    _, status = os.waitpid(pid, 0)
    print("child", os.waitstatus_to_exitcode(status))
    vkdev._shut_down = False
    del dev.pipelines.save
    s.fill(buf.address, 9, 1024, 4)       # the parent's device still works
    s.synchronize()
    host = np.ctypeslib.as_array((ctypes.c_uint32 * 2).from_address(buf.host_ptr))
    print("parent", host.tolist())
""")


def test_a_forked_childs_exit_leaves_the_parents_device_alone() -> None:
    """A forked child that calls exit() runs cuport's exit handler on its copy of the
    parent's device: it must not wait for the parent's stream threads (they are not in the
    child) nor write the parent's pipeline cache; it only stops its own Vulkan calls."""
    vkrt_support.device()  # skips without a device
    r = subprocess.run([sys.executable, "-c", FORK_SCRIPT], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("\n")[:2] == ["child 10", "parent [9, 9]"], r.stdout + r.stderr
