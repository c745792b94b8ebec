"""Regressions found by public CUDA programs (issue 8), each reduced to a small program
that nvcc builds and `cuport run` runs, checked against what an H200 prints.

- rdc_shared: in an `-rdc` build nvcc puts the static `__shared__` arrays of template
  kernels at module scope (`.weak .shared`), and the linked module holds every
  kernel's; each kernel must count only those its call graph names (radixSortThrust,
  segmentationTreeThrust: CUB sized a grid of 0 blocks from 564064 bytes).
- l2_attributes: an L2 and a persisting-L2 size, access-policy windows as stream,
  launch and kernel-node attributes (simpleAttributes waived).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "capi"))

from capi_support import clean_env, cuport_command, need_nvcc, run  # noqa: E402

C = HERE / "c"


def build(tmp_path: Path, name: str, sources: list[str], *flags: str) -> Path:
    exe = tmp_path / name
    r = run([need_nvcc(), "-o", str(exe), *(str(C / s) for s in sources), *flags], timeout=600)
    if r.returncode != 0:
        pytest.fail(f"nvcc failed for {name}:\n{r.stderr}")
    return exe


def cuport_run(exe: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 300):
    return run([*cuport_command(), "run", str(exe), *args], env=env or clean_env(),
               timeout=timeout)


def test_rdc_kernels_count_only_their_own_static_shared_memory(tmp_path):
    exe = build(tmp_path, "rdc_shared", ["rdc_shared_a.cu", "rdc_shared_b.cu"], "-rdc=true")
    r = cuport_run(exe)
    assert r.returncode == 0, r.stdout + r.stderr
    # what cudaFuncGetAttributes answers on the H200 (ptxas' counts)
    assert r.stdout.splitlines() == ["kernel_a shared 40960", "kernel_ab shared 40960",
                                     "kernel_b shared 45056", "PASS"], r.stdout


def test_l2_persistence_and_access_policy_windows(tmp_path):
    """simpleAttributes waived on `persistingL2CacheMaxSize == 0`; stream attributes were
    not implemented."""
    exe = build(tmp_path, "l2_attributes", ["l2_attributes.cu"])
    r = cuport_run(exe)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == ["hitRatio 1.5: cudaErrorInvalidValue", "PASS"], r.stdout
