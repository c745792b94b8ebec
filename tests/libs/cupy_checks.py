"""CuPy's library paths against numpy, run by tests/libs/test_cupy.py under `cuport run`
with no settings. One process for all checks (CuPy's import and its compiled kernels are
shared); each check prints `NAME OK` or `NAME FAIL why`, and a check that raises prints
its exception, so one failure does not hide the others."""

from __future__ import annotations

import sys
import traceback

import cupy as cp
import numpy as np

rng = np.random.default_rng(4)
CHECKS = {}


def check(fn):
    CHECKS[fn.__name__] = fn
    return fn


def close(got, want, tol) -> None:
    got, want = np.asarray(got, np.float64 if not np.iscomplexobj(got) else np.complex128), want
    err = np.abs(got - want).max()
    scale = max(1.0, float(np.abs(want).max()))
    assert err <= tol * scale, f"max error {err:.3g} > {tol:.1g} x {scale:.3g}"


@check
def matmul_f32():
    a, b = rng.standard_normal((70, 50), np.float32), rng.standard_normal((50, 30), np.float32)
    close(cp.asnumpy(cp.matmul(cp.asarray(a), cp.asarray(b))), a.astype(np.float64) @ b, 1e-5)


@check
def matmul_f64():
    a, b = rng.standard_normal((70, 50)), rng.standard_normal((50, 30))
    close(cp.asnumpy(cp.asarray(a) @ cp.asarray(b)), a @ b, 1e-13)


@check
def matmul_f16():
    a = rng.standard_normal((40, 32)).astype(np.float16)
    b = rng.standard_normal((32, 24)).astype(np.float16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    close(cp.asnumpy(cp.asarray(a) @ cp.asarray(b)).astype(np.float64), want, 1e-2)


@check
def matmul_batched():
    x, y = rng.standard_normal((4, 8, 6)), rng.standard_normal((4, 6, 5))
    close(cp.asnumpy(cp.asarray(x) @ cp.asarray(y)), x @ y, 1e-13)
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    close(cp.asnumpy(cp.matmul(cp.asarray(xf), cp.asarray(yf))), x @ y, 1e-5)


@check
def solve():
    m = rng.standard_normal((20, 20)) + 20 * np.eye(20)
    r = rng.standard_normal((20, 3))
    close(cp.asnumpy(cp.linalg.solve(cp.asarray(m), cp.asarray(r))), np.linalg.solve(m, r), 1e-12)


@check
def inv():
    m = rng.standard_normal((20, 20)) + 20 * np.eye(20)
    close(cp.asnumpy(cp.linalg.inv(cp.asarray(m))), np.linalg.inv(m), 1e-12)


@check
def inv_batched():
    """cuBLAS getrfBatched + getriBatched."""
    m = rng.standard_normal((4, 6, 6)) + 6 * np.eye(6)
    close(cp.asnumpy(cp.linalg.inv(cp.asarray(m))), np.linalg.inv(m), 1e-12)
    close(cp.asnumpy(cp.linalg.inv(cp.asarray(m.astype(np.float32)))), np.linalg.inv(m), 1e-5)


@check
def solve_batched():
    m = rng.standard_normal((3, 7, 7)) + 7 * np.eye(7)
    r = rng.standard_normal((3, 7, 2))
    close(cp.asnumpy(cp.linalg.solve(cp.asarray(m), cp.asarray(r))), np.linalg.solve(m, r), 1e-12)


@check
def svd():
    m = rng.standard_normal((30, 20))
    close(cp.asnumpy(cp.linalg.svd(cp.asarray(m), compute_uv=False)),
          np.linalg.svd(m, compute_uv=False), 1e-12)
    u, s, vt = (cp.asnumpy(v) for v in cp.linalg.svd(cp.asarray(m), full_matrices=False))
    close(u @ np.diag(s) @ vt, m, 1e-12)


@check
def fftn():
    z = rng.standard_normal((8, 16, 6)) + 1j * rng.standard_normal((8, 16, 6))
    close(cp.asnumpy(cp.fft.fftn(cp.asarray(z))), np.fft.fftn(z), 1e-12)


@check
def irfft():
    w = rng.standard_normal((6, 17)) + 1j * rng.standard_normal((6, 17))
    close(cp.asnumpy(cp.fft.irfft(cp.asarray(w))), np.fft.irfft(w), 1e-12)
    x = rng.standard_normal((5, 32))
    close(cp.asnumpy(cp.fft.rfft(cp.asarray(x))), np.fft.rfft(x), 1e-12)


@check
def random_state_normal():
    x = cp.asnumpy(cp.random.RandomState(5).standard_normal(200000, dtype=cp.float32))
    assert abs(x.mean()) < 6 / np.sqrt(x.size) and abs(x.var() - 1) < 0.02, (x.mean(), x.var())


@check
def default_rng_normal():
    x = cp.asnumpy(cp.random.default_rng(3).standard_normal(100000))
    assert x.dtype == np.float64 and len(np.unique(x)) > 99000
    assert abs(x.mean()) < 6 / np.sqrt(x.size) and abs(x.var() - 1) < 0.02, (x.mean(), x.var())


@check
def sparse_spmv():
    import cupyx.scipy.sparse as cps
    import scipy.sparse as sps

    a = sps.random(50, 40, density=0.1, format="csr", random_state=1, dtype=np.float64)
    x = rng.standard_normal(40)
    close(cp.asnumpy(cps.csr_matrix(a) @ cp.asarray(x)), a @ x, 1e-13)
    b = rng.standard_normal((40, 3))
    close(cp.asnumpy(cps.csr_matrix(a) @ cp.asarray(b)), a @ b, 1e-13)


if __name__ == "__main__":
    names = sys.argv[1:] or list(CHECKS)
    for name in names:
        try:
            CHECKS[name]()
            print(f"{name} OK", flush=True)
        except Exception as e:  # report and go on
            print(f"{name} FAIL {type(e).__name__}: {e}", flush=True)
            traceback.print_exc()
