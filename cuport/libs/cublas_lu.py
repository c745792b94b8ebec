"""cuBLAS's batched LU family (getrfBatched, getrsBatched, getriBatched, matinvBatched):
each matrix of the batch through LAPACK's getrf/getrs/getri (OpenBLAS).

cuBLAS keeps pivots as int32 (1-based, as LAPACK's); a NULL pivot array means LU
without row exchanges (cusolver.py's _lu_no_pivot: LAPACK has no such routine). Per
matrix info: getrf's first zero pivot, getri's and matinv's singularity, as cuBLAS
reports them; getrsBatched's info is a host int for the parameters.
"""

from __future__ import annotations

import numpy as np

from cuport.libs import device, openblas
from cuport.libs.blas_common import mat_bytes, matrix
from cuport.libs.cublas import INVALID, get, launch, register
from cuport.libs.cusolver import _lu_no_pivot
from cuport.libs.device import Range
from cuport.libs.dtypes import LETTERS
from cuport.libs.registry import Status


def _i64(*values: int) -> list[np.ndarray]:
    return [np.array([v], np.int64) for v in values]


def _checks(n: int, lda: int, batch: int, **more: int) -> None:
    if n < 0:
        raise Status(INVALID, f"n = {n} < 0")
    if lda < max(1, n):
        raise Status(INVALID, f"lda = {lda} < max(1, {n})")
    if batch < 0:
        raise Status(INVALID, f"batchSize = {batch} < 0")
    for name, v in more.items():
        if v < max(1, n):
            raise Status(INVALID, f"{name} = {v} < max(1, {n})")


def _write_ints(address: int, index: int, values) -> None:
    values = np.asarray(values, np.int32)
    device.view(device.map_range(address + 4 * index, 4 * len(values), "w"), np.int32,
                len(values))[:] = values


def _lu(t: str, a: int, n: int, lda: int) -> tuple[np.ndarray, int]:
    """LAPACK getrf of the n x n matrix at host address a: (pivots as int64, info)."""
    nn, ld = _i64(n, lda)
    piv = np.zeros(max(1, n), np.int64)
    info = np.zeros(1, np.int64)
    openblas.lapack(f"{t.lower()}getrf")(nn.ctypes.data, nn.ctypes.data, a, ld.ctypes.data,
                                         piv.ctypes.data, info.ctypes.data)
    return piv, int(info[0])


def _inverse_in_place(t: str, c: int, n: int, ldc: int, piv: np.ndarray) -> int:
    """LAPACK getri: the inverse from the LU factors at c (in place)."""
    dt = np.dtype(LETTERS[t])
    nn, ld = _i64(n, ldc)
    info = np.zeros(1, np.int64)
    lwork = np.array([max(1, 64 * n)], np.int64)
    work = np.zeros(int(lwork[0]), dt)
    openblas.lapack(f"{t.lower()}getri")(nn.ctypes.data, c, ld.ctypes.data, piv.ctypes.data,
                                         work.ctypes.data, lwork.ctypes.data, info.ctypes.data)
    return int(info[0])


def _getrf_batched(t: str, name: str):
    dt = LETTERS[t]
    sz = np.dtype(dt).itemsize

    def impl(handle, n, Aarray, lda, P, info, batch):
        h = get(handle)
        _checks(n, lda, batch)
        if info == 0:
            raise Status(INVALID, "infoArray is NULL")
        if batch == 0:
            return

        def run(pa, inf):
            for i, a in enumerate(device.read_pointers(pa, batch)):
                a = device.map_range(a, mat_bytes(n, n, lda, sz), "rw")
                if P == 0:
                    code = _lu_no_pivot(matrix(a, dt, n, n, lda))
                else:
                    piv, code = _lu(t, a, n, lda)
                    _write_ints(P, i * n, piv[:n])
                device.view(inf, np.int32, batch)[i] = code
        launch(h, name, run, [(Range(Aarray, 8 * batch), "Aarray"),
                              (Range(info, 4 * batch, "w"), "infoArray")])
    return impl


def _pivots(P: int, i: int, n: int) -> np.ndarray:
    if P == 0:
        return np.arange(1, n + 1, dtype=np.int64)
    return device.view(device.map_range(P + 4 * i * n, 4 * n), np.int32, n).astype(np.int64)


def _getri_batched(t: str, name: str):
    dt = LETTERS[t]
    sz = np.dtype(dt).itemsize

    def impl(handle, n, Aarray, lda, P, Carray, ldc, info, batch):
        h = get(handle)
        _checks(n, lda, batch, ldc=ldc)
        if info == 0:
            raise Status(INVALID, "infoArray is NULL")
        if batch == 0:
            return

        def run(pa, pc, inf):
            for i, (a, c) in enumerate(zip(device.read_pointers(pa, batch),
                                           device.read_pointers(pc, batch), strict=True)):
                lu = matrix(device.map_range(a, mat_bytes(n, n, lda, sz)), dt, n, n, lda)
                cm = matrix(device.map_range(c, mat_bytes(n, n, ldc, sz), "w"), dt, n, n, ldc)
                cm[...] = lu
                diag = np.diagonal(lu)
                zero = np.flatnonzero(diag == 0)
                if zero.size:  # singular: cuBLAS reports the first zero of U's diagonal
                    device.view(inf, np.int32, batch)[i] = int(zero[0]) + 1
                    continue
                device.view(inf, np.int32, batch)[i] = _inverse_in_place(
                    t, device.map_range(c, mat_bytes(n, n, ldc, sz), "rw"), n, ldc,
                    _pivots(P, i, n))
        launch(h, name, run, [(Range(Aarray, 8 * batch), "Aarray"),
                              (Range(Carray, 8 * batch), "Carray"),
                              (Range(info, 4 * batch, "w"), "infoArray")])
    return impl


def _getrs_batched(t: str, name: str):
    dt = LETTERS[t]
    sz = np.dtype(dt).itemsize

    def impl(handle, trans, n, nrhs, Aarray, lda, ipiv, Barray, ldb, info, batch):
        h = get(handle)
        if info == 0:
            raise Status(INVALID, "info is NULL")
        problem = next((-k for k, bad in ((1, trans not in (0, 1, 2)), (2, n < 0), (3, nrhs < 0),
                                          (5, lda < max(1, n)), (8, ldb < max(1, n)),
                                          (10, batch < 0)) if bad), 0)
        device.write_scalar(info, np.int32, problem)  # a host int, set at the call
        if problem:
            raise Status(INVALID, f"parameter {-problem} of {name} is out of range")
        if n == 0 or nrhs == 0 or batch == 0:
            return
        f = openblas.lapack(f"{t.lower()}getrs")
        tr = np.frombuffer(b"NTC"[trans:trans + 1], np.uint8).copy()

        def run(pa, pb):
            nn, nr, la, lb = _i64(n, nrhs, lda, ldb)
            out = np.zeros(1, np.int64)
            for i, (a, b) in enumerate(zip(device.read_pointers(pa, batch),
                                           device.read_pointers(pb, batch), strict=True)):
                piv = _pivots(ipiv, i, n)
                f(tr.ctypes.data, nn.ctypes.data, nr.ctypes.data,
                  device.map_range(a, mat_bytes(n, n, lda, sz)), la.ctypes.data, piv.ctypes.data,
                  device.map_range(b, mat_bytes(n, nrhs, ldb, sz), "rw"), lb.ctypes.data,
                  out.ctypes.data, 1)
        launch(h, name, run, [(Range(Aarray, 8 * batch), "Aarray"),
                              (Range(Barray, 8 * batch), "Barray")])
    return impl


def _matinv_batched(t: str, name: str):
    dt = LETTERS[t]
    sz = np.dtype(dt).itemsize

    def impl(handle, n, Aarray, lda, Ainv, lda_inv, info, batch):
        h = get(handle)
        _checks(n, lda, batch, lda_inv=lda_inv)
        if n > 32:
            raise Status(INVALID, f"n = {n} > 32 (matinvBatched is for small matrices)")
        if info == 0:
            raise Status(INVALID, "info is NULL")
        if batch == 0:
            return

        def run(pa, pc, inf):
            for i, (a, c) in enumerate(zip(device.read_pointers(pa, batch),
                                           device.read_pointers(pc, batch), strict=True)):
                am = matrix(device.map_range(a, mat_bytes(n, n, lda, sz)), dt, n, n, lda)
                caddr = device.map_range(c, mat_bytes(n, n, lda_inv, sz), "rw")
                matrix(caddr, dt, n, n, lda_inv)[...] = am
                piv, code = _lu(t, caddr, n, lda_inv)
                if code == 0:
                    code = _inverse_in_place(t, caddr, n, lda_inv, piv)
                device.view(inf, np.int32, batch)[i] = code
        launch(h, name, run, [(Range(Aarray, 8 * batch), "A"), (Range(Ainv, 8 * batch), "Ainv"),
                              (Range(info, 4 * batch, "w"), "info")])
    return impl


register("cublas{t}getrfBatched", "SDCZ", _getrf_batched)
register("cublas{t}getriBatched", "SDCZ", _getri_batched)
register("cublas{t}getrsBatched", "SDCZ", _getrs_batched)
register("cublas{t}matinvBatched", "SDCZ", _matinv_batched)
