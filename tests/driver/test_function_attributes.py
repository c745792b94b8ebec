"""cuFuncGetAttribute answers programs size launches by (driver/module.py function_attribute),
from nvcc's real output."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "capi"))

from capi_support import clean_env, cuport_command, need_nvcc, run  # noqa: E402


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_num_regs_follows_register_pressure_and_maxnreg(tmp_path, device):
    """numRegs was 32 for every kernel (numba-cuda's test_set_registers_no_max wants a heavy
    kernel above 57): now an estimate from the kernel's live registers, capped by
    __maxnreg__ (.maxnreg); the program's checks pass natively too (ptxas: 56, 40, 10)."""
    if device == "vulkan":
        from cuport.backends.vulkan import runtime

        if not runtime.devices():
            pytest.skip("no Vulkan device")
    exe = tmp_path / "num_regs"
    r = run([need_nvcc(), "-O3", "-arch=sm_90", "-o", str(exe), str(HERE / "c" / "num_regs.cu")], timeout=600)
    assert r.returncode == 0, r.stderr
    r = run([*cuport_command(), "run", str(exe)], env=clean_env(CUPORT_DEVICE=device), timeout=300)
    assert r.returncode == 0 and r.stdout.splitlines() == ["PASS"], r.stdout + r.stderr


def test_register_estimate_against_ptxas(tmp_path):
    """The estimate stays within a factor of two of ptxas -v for nvcc's kernels (it counts
    what is live at once, as a lower bound of what ptxas allocates)."""
    import re
    import subprocess

    from cuport.backends.facts import register_estimate
    from cuport.ptx.parser import parse

    ptx = tmp_path / "k.ptx"
    subprocess.run([need_nvcc(), "-O3", "-arch=sm_90", "-ptx", "-o", str(ptx), str(HERE / "c" / "num_regs.cu")],
                   check=True, capture_output=True)
    ptxas = Path(need_nvcc()).with_name("ptxas")
    out = subprocess.run([str(ptxas), "-arch=sm_90", "-v", str(ptx), "-o", "/dev/null"],
                         capture_output=True, text=True, check=True).stderr
    theirs = dict(re.findall(r"Compiling entry function '(\w+)'.*?Used (\d+) registers", out, re.S))
    module = parse(ptx.read_text())
    for name, n in theirs.items():
        ours = register_estimate(module.functions[name])
        assert int(n) / 2 <= ours <= int(n) * 2, (name, ours, n)
