"""CuPy under `cuport run`, with no extra settings: its cuBLAS, cuFFT and cuRAND calls
reach cuport's stand-ins (preloaded by `cuport run`, so they win over NVIDIA's wheels)
and give numpy's answers. Paths that also need CuPy's run-time compiled kernels
(cp.linalg.solve's pivot checks, irfft's copies) are skipped while CuPy's NVRTC
kernels cannot run under cuport in this environment, saying so."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import libs_support  # noqa: F401 - puts tests/capi on sys.path
import pytest
from capi_support import clean_env, cuport_command

pytest.importorskip("cupy")


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([*cuport_command(), "run", sys.executable, "-c", textwrap.dedent(code)],
                          env=clean_env(), capture_output=True, text=True, timeout=900)


def _ok(r: subprocess.CompletedProcess) -> None:
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr[-3000:]


@pytest.fixture(scope="module")
def kernels_run() -> bool:
    r = _run("import cupy as cp; print(int((cp.arange(4) + 1).sum()))")
    return r.returncode == 0 and r.stdout.strip() == "10"


def test_matmul_f32_f64_f16():
    _ok(_run("""
        import numpy as np, cupy as cp
        rng = np.random.default_rng(1)
        for dt, tol in ((np.float32, 1e-5), (np.float64, 1e-12), (np.float16, 2e-2)):
            a = rng.standard_normal((70, 50)).astype(dt); b = rng.standard_normal((50, 30)).astype(dt)
            got = cp.asnumpy(cp.matmul(cp.asarray(a), cp.asarray(b))).astype(np.float64)
            want = a.astype(np.float64) @ b.astype(np.float64)
            assert np.abs(got - want).max() <= tol * np.abs(a).max() * np.abs(b).max() * 50, dt
        print("OK")
    """))


def test_fftn():
    _ok(_run("""
        import numpy as np, cupy as cp
        z = np.random.default_rng(2).standard_normal((8, 16, 6)) + 1j
        assert np.abs(cp.asnumpy(cp.fft.fftn(cp.asarray(z))) - np.fft.fftn(z)).max() < 1e-10
        print("OK")
    """))


def test_random_state_standard_normal_moments():
    _ok(_run("""
        import numpy as np, cupy as cp
        x = cp.asnumpy(cp.random.RandomState(5).standard_normal(200000, dtype=cp.float32))
        assert abs(x.mean()) < 6 / np.sqrt(x.size) and abs(x.var() - 1) < 0.02, (x.mean(), x.var())
        print("OK")
    """))


@pytest.mark.parametrize("what", ["solve", "inv", "svd", "irfft", "default_rng", "batched"])
def test_paths_with_cupy_kernels(kernels_run, what):
    if not kernels_run:
        pytest.skip("CuPy's NVRTC-compiled kernels do not run under cuport here yet "
                    "(helper pyusers' NVRTC work)")
    body = {
        "solve": "m = rng.standard_normal((20, 20)) + 20 * np.eye(20); r = rng.standard_normal((20, 3))\n"
                 "assert np.abs(cp.asnumpy(cp.linalg.solve(cp.asarray(m), cp.asarray(r))) - np.linalg.solve(m, r)).max() < 1e-10",
        "inv": "m = rng.standard_normal((20, 20)) + 20 * np.eye(20)\n"
               "assert np.abs(cp.asnumpy(cp.linalg.inv(cp.asarray(m))) - np.linalg.inv(m)).max() < 1e-10",
        "svd": "m = rng.standard_normal((30, 20))\n"
               "assert np.abs(cp.asnumpy(cp.linalg.svd(cp.asarray(m), compute_uv=False)) - np.linalg.svd(m, compute_uv=False)).max() < 1e-10",
        "irfft": "w = rng.standard_normal((6, 17)) + 1j * rng.standard_normal((6, 17))\n"
                 "assert np.abs(cp.asnumpy(cp.fft.irfft(cp.asarray(w))) - np.fft.irfft(w)).max() < 1e-10",
        "batched": "x = rng.standard_normal((4, 8, 6)); y = rng.standard_normal((4, 6, 5))\n"
                   "assert np.abs(cp.asnumpy(cp.asarray(x) @ cp.asarray(y)) - x @ y).max() < 1e-12",
        "default_rng": "x = cp.asnumpy(cp.random.default_rng(3).standard_normal(100000))\n"
                       "assert abs(x.mean()) < 0.02 and abs(x.var() - 1) < 0.02",
    }[what]
    _ok(_run("import numpy as np, cupy as cp\nrng = np.random.default_rng(4)\n" + body + "\nprint('OK')"))
