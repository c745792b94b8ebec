"""Fixtures of the driver tests: kernels built with nvcc, the C launch client, runtimes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "capi"))

from capi_support import compile_c, need_nvcc, run  # noqa: E402

HERE = Path(__file__).resolve().parent
C = HERE / "c"


@pytest.fixture(scope="session")
def kernels(tmp_path_factory):
    """(PTX file, fatbin file) of tests/driver/c/kernels.cu."""
    nvcc = need_nvcc()
    out = tmp_path_factory.mktemp("kernels")
    ptx, fatbin = out / "kernels.ptx", out / "kernels.fatbin"
    for flag, target in (("-ptx", ptx), ("-fatbin", fatbin)):
        result = run([nvcc, flag, "-o", str(target), str(C / "kernels.cu")])
        assert result.returncode == 0, result.stderr
    return ptx, fatbin


@pytest.fixture(scope="session")
def launch_client(tmp_path_factory):
    return compile_c([C / "launch.c"], tmp_path_factory.mktemp("launch") / "launch")


@pytest.fixture(scope="session")
def fake_backend_env():
    """Environment that makes the driver use tests/driver/fake_backend.py."""
    return {"CUPORT_BACKEND": "fake_backend:FakeBackend", "CUPORT_PYTHONPATH": str(HERE)}
