"""AVX2 code on an AVX-512 host (CUPORT_CPU_FEATURES=-avx512f): the code a laptop without
AVX-512 gets (lane masks as vectors, every predicated stretch jumped over, emit's
non-mask-register paths), checked here against the same host references as the AVX-512
code: the block-level address checks (stencil edges, 2^32 wraps, faults), predicated
stretches, sparse lanes and guarded loads test files run again in a child process with the
setting."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from nvcc_source import needs_nvcc

from cuport.backends.cpu import jit

HERE = Path(__file__).parent
pytestmark = needs_nvcc


def _child_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ, CUPORT_CPU_FEATURES="-avx512f", CUPORT_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("CUPORT_DEVICE", None)
    return env


def test_setting_turns_mask_registers_off(tmp_path):
    probe = "from cuport.backends.cpu import jit; print(jit.mask_registers(), jit.host_description())"
    out = subprocess.run([sys.executable, "-c", probe], env=_child_env(tmp_path), capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[0] == "False"
    assert out[1].endswith(",-avx512f")  # (in the cache key: AVX2 code is cached apart)


@pytest.mark.skipif(not jit.mask_registers(), reason="the host has no AVX-512: its code is AVX2's already")
def test_avx2_code_gives_the_same_results(tmp_path):
    files = ["test_block_checks.py", "test_predicate.py", "test_sparse_lanes.py", "test_guarded_loads.py"]
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", *files], cwd=HERE,
                       env=_child_env(tmp_path), capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " passed" in r.stdout and "failed" not in r.stdout
