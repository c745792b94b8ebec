"""cublasGemmEx and the mixed-precision GEMMs (f16, bf16, int8; Hgemm, SgemmEx).

Where the storage types and the compute type are one BLAS type (f32, f64, c64, c128)
the call goes to OpenBLAS unchanged. Otherwise the inputs are converted to the compute
type (f16/bf16 -> f32, int8 -> f64, whose sums are exact), multiplied by OpenBLAS in
that type, and the result is rounded to C's type (f16/bf16 round to nearest even, int32
saturates). TF32 and the "fast" compute types are computed in full f32, which is within
their tolerance. Scalars are of the compute type (half for CUBLAS_COMPUTE_16F).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuport.libs import device, openblas, table
from cuport.libs.blas_common import Scalar, mat_bytes, matrix, op, strided_bytes
from cuport.libs.cublas import COL, INVALID, gemm_checks, get, launch
from cuport.libs.device import Range
from cuport.libs.dtypes import BF16, cuda_type, from_compute, storage, to_compute, type_name
from cuport.libs.registry import Status, Unsupported, implements

K = table.constants("cublas")
NATIVE = {np.dtype(np.float32): "s", np.dtype(np.float64): "d", np.dtype(np.complex64): "c",
          np.dtype(np.complex128): "z"}

# cublasComputeType_t -> the numpy type arithmetic happens in and the scalars' type
COMPUTE = {
    K["CUBLAS_COMPUTE_16F"]: ("f32", np.float16), K["CUBLAS_COMPUTE_16F_PEDANTIC"]: ("f32", np.float16),
    K["CUBLAS_COMPUTE_32F"]: ("f32", np.float32), K["CUBLAS_COMPUTE_32F_PEDANTIC"]: ("f32", np.float32),
    K["CUBLAS_COMPUTE_32F_FAST_16F"]: ("f32", np.float32),
    K["CUBLAS_COMPUTE_32F_FAST_16BF"]: ("f32", np.float32),
    K["CUBLAS_COMPUTE_32F_FAST_TF32"]: ("f32", np.float32),
    K["CUBLAS_COMPUTE_64F"]: ("f64", np.float64), K["CUBLAS_COMPUTE_64F_PEDANTIC"]: ("f64", np.float64),
    K["CUBLAS_COMPUTE_32I"]: ("i32", np.int32), K["CUBLAS_COMPUTE_32I_PEDANTIC"]: ("i32", np.int32),
}
# computeType given as a cudaDataType_t (CUDA 10 programs): what cuBLAS migrates it to
LEGACY_COMPUTE = {0: K["CUBLAS_COMPUTE_32F"], 1: K["CUBLAS_COMPUTE_64F"],
                  2: K["CUBLAS_COMPUTE_16F"], 10: K["CUBLAS_COMPUTE_32I"],
                  4: K["CUBLAS_COMPUTE_32F"], 5: K["CUBLAS_COMPUTE_64F"]}


def _types(atype: int, btype: int, ctype: int, compute: int):
    try:
        ta, tb, tc = cuda_type(atype), cuda_type(btype), cuda_type(ctype)
    except KeyError as e:
        raise Status(INVALID, f"unknown cudaDataType {e.args[0]}") from None
    compute = LEGACY_COMPUTE.get(compute, compute)
    if compute not in COMPUTE:
        raise Status(INVALID, f"computeType {compute} is not a cublasComputeType_t")
    kind, scalar = COMPUTE[compute]
    complex_c = tc is not BF16 and np.dtype(tc).kind == "c"
    if complex_c:
        scalar = np.complex64 if kind == "f32" else np.complex128
    return ta, tb, tc, kind, np.dtype(scalar)


def _plan(ta, tb, tc, kind):
    """A native BLAS routine when the types allow, else the converting path."""
    same = ta is tb is tc or (ta is not BF16 and tb is not BF16 and tc is not BF16 and
                              np.dtype(ta) == np.dtype(tb) == np.dtype(tc))
    if same and ta is not BF16 and np.dtype(ta) in NATIVE:
        letter = NATIVE[np.dtype(ta)]
        if (letter in "sc" and kind == "f32") or (letter in "dz" and kind == "f64"):
            return openblas.cblas(f"{letter}gemm")
    supported = {("f16", "f32"), ("bf16", "f32"), ("i8", "i32"), ("f16", "f16"), ("bf16", "bf16"),
                 ("i8", "f32"), ("f32", "f32")}
    key_in = "bf16" if ta is BF16 else {"e": "f16", "b": "i8", "f": "f32"}.get(np.dtype(ta).char, "?")
    key_out = "bf16" if tc is BF16 else {"e": "f16", "i": "i32", "f": "f32"}.get(np.dtype(tc).char, "?")
    if (key_in, key_out) not in supported or ta is not tb:
        raise Unsupported(f"GEMM of {key_in} x {key_in} -> {key_out} with {kind} compute")
    return None


def _converted_gemm(ta, tb, tc, kind, transa, transb, m, n, k, av, a, lda, b, ldb, bv, c, ldc):
    ra, ca = (m, k) if transa == 0 else (k, m)
    rb, cb = (k, n) if transb == 0 else (n, k)
    work = np.float64 if kind in ("f64", "i32") else np.float32
    am = to_compute(matrix(a, storage(ta), ra, ca, lda), ta, work)
    bm = to_compute(matrix(b, storage(tb), rb, cb, ldb), tb, work)
    cm = matrix(c, storage(tc), m, n, ldc)
    res = np.asfortranarray(op(am, transa) @ op(bm, transb)) * work(av)
    if bv != 0:
        res += work(bv) * to_compute(cm, tc, work)
    cm[...] = from_compute(res, tc)


def _run_one(f, ta, tb, tc, kind, transa, transb, m, n, k, al, a, lda, b, ldb, be, c, ldc):
    if f is not None:
        f(COL, openblas.TRANS[transa], openblas.TRANS[transb], m, n, k, al.arg(), a, lda, b, ldb,
          be.arg(), c, ldc)
    else:
        _converted_gemm(ta, tb, tc, kind, transa, transb, m, n, k, al.get(), a, lda, b, ldb,
                        be.get(), c, ldc)


@dataclass(frozen=True)
class _Gemm:
    """A GEMM call's arguments once checked, and the bytes each matrix spans: what gemm_ex,
    strided_ex and batched_ex work out alike before they launch."""

    h: object  # the cuBLAS handle
    f: object  # the OpenBLAS routine, or None for the converting path (_plan)
    ta: object
    tb: object
    tc: object
    kind: str
    transa: int
    transb: int
    m: int
    n: int
    k: int
    al: Scalar
    be: Scalar
    lda: int
    ldb: int
    ldc: int
    a_bytes: int
    b_bytes: int
    c_bytes: int

    def run(self, a, b, c) -> None:
        """C = alpha op(A) op(B) + beta C for the matrices at host addresses a, b, c."""
        _run_one(self.f, self.ta, self.tb, self.tc, self.kind, self.transa, self.transb, self.m,
                 self.n, self.k, self.al, a, self.lda, b, self.ldb, self.be, c, self.ldc)


def _checked(handle, transa, transb, m, n, k, alpha, atype, lda, btype, ldb, beta, ctype, ldc,
             compute, batch: int = 1) -> _Gemm | None:
    """The call's arguments checked (in cuBLAS's order), or None where there is no work."""
    h = get(handle)
    ra, ca, rb, cb = gemm_checks(transa, transb, m, n, k, lda, ldb, ldc)
    if batch < 0:
        raise Status(INVALID, f"batchCount = {batch} < 0")
    ta, tb, tc, kind, sdt = _types(atype, btype, ctype, compute)
    al = Scalar(h.pointer_mode, alpha, sdt, "alpha", INVALID)
    be = Scalar(h.pointer_mode, beta, sdt, "beta", INVALID)
    f = _plan(ta, tb, tc, kind)
    if m == 0 or n == 0 or batch == 0:
        return None
    sa, sb, sc = storage(ta).itemsize, storage(tb).itemsize, storage(tc).itemsize
    return _Gemm(h, f, ta, tb, tc, kind, transa, transb, m, n, k, al, be, lda, ldb, ldc,
                 mat_bytes(ra, ca, lda, sa), mat_bytes(rb, cb, ldb, sb), mat_bytes(m, n, ldc, sc))


def gemm_ex(name, handle, transa, transb, m, n, k, alpha, A, atype, lda, B, btype, ldb, beta,
            C, ctype, ldc, compute):
    g = _checked(handle, transa, transb, m, n, k, alpha, atype, lda, btype, ldb, beta, ctype, ldc,
                 compute)
    if g is None:
        return
    launch(g.h, name, g.run, [(Range(A, g.a_bytes), "A"), (Range(B, g.b_bytes), "B"),
                              (Range(C, g.c_bytes, "rw"), "C")])


@implements("cublasGemmEx", "cublasGemmEx_64")
def cublas_gemm_ex(handle, transa, transb, m, n, k, alpha, A, atype, lda, B, btype, ldb, beta,
                   C, ctype, ldc, compute, algo):
    gemm_ex("cublasGemmEx", handle, transa, transb, m, n, k, alpha, A, atype, lda, B, btype, ldb,
            beta, C, ctype, ldc, compute)


@implements("cublasSgemmEx", "cublasSgemmEx_64")
def sgemm_ex(handle, transa, transb, m, n, k, alpha, A, atype, lda, B, btype, ldb, beta, C,
             ctype, ldc):
    gemm_ex("cublasSgemmEx", handle, transa, transb, m, n, k, alpha, A, atype, lda, B, btype,
            ldb, beta, C, ctype, ldc, K["CUBLAS_COMPUTE_32F"])


@implements("cublasHgemm", "cublasHgemm_64")
def hgemm(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc):
    gemm_ex("cublasHgemm", handle, transa, transb, m, n, k, alpha, A, 2, lda, B, 2, ldb, beta,
            C, 2, ldc, K["CUBLAS_COMPUTE_16F"])


def strided_ex(name, handle, transa, transb, m, n, k, alpha, A, atype, lda, sA, B, btype, ldb,
               sB, beta, C, ctype, ldc, sC, batch, compute):
    g = _checked(handle, transa, transb, m, n, k, alpha, atype, lda, btype, ldb, beta, ctype, ldc,
                 compute, batch)
    if g is None:
        return
    sa, sb, sc = storage(g.ta).itemsize, storage(g.tb).itemsize, storage(g.tc).itemsize

    def run(a, b, c):
        for i in range(batch):
            g.run(a + i * sA * sa, b + i * sB * sb, c + i * sC * sc)
    launch(g.h, name, run, [
        (Range(A, strided_bytes(g.a_bytes, sA, batch, sa)), "A"),
        (Range(B, strided_bytes(g.b_bytes, sB, batch, sb)), "B"),
        (Range(C, strided_bytes(g.c_bytes, sC, batch, sc), "rw"), "C")])


def batched_ex(name, handle, transa, transb, m, n, k, alpha, Aarray, atype, lda, Barray, btype,
               ldb, beta, Carray, ctype, ldc, batch, compute):
    g = _checked(handle, transa, transb, m, n, k, alpha, atype, lda, btype, ldb, beta, ctype, ldc,
                 compute, batch)
    if g is None:
        return

    def run(pa, pb, pc):
        for a, b, c in zip(device.read_pointers(pa, batch), device.read_pointers(pb, batch),
                           device.read_pointers(pc, batch), strict=True):
            g.run(device.map_range(a, g.a_bytes), device.map_range(b, g.b_bytes),
                  device.map_range(c, g.c_bytes, "rw"))
    launch(g.h, name, run, [(Range(Aarray, 8 * batch), "Aarray"), (Range(Barray, 8 * batch), "Barray"),
                            (Range(Carray, 8 * batch), "Carray")])


@implements("cublasGemmStridedBatchedEx", "cublasGemmStridedBatchedEx_64")
def gemm_strided_batched_ex(handle, transa, transb, m, n, k, alpha, A, atype, lda, sA, B, btype,
                            ldb, sB, beta, C, ctype, ldc, sC, batch, compute, algo):
    strided_ex("cublasGemmStridedBatchedEx", handle, transa, transb, m, n, k, alpha, A, atype,
               lda, sA, B, btype, ldb, sB, beta, C, ctype, ldc, sC, batch, compute)


@implements("cublasGemmBatchedEx", "cublasGemmBatchedEx_64")
def gemm_batched_ex(handle, transa, transb, m, n, k, alpha, Aarray, atype, lda, Barray, btype,
                    ldb, beta, Carray, ctype, ldc, batch, compute, algo):
    batched_ex("cublasGemmBatchedEx", handle, transa, transb, m, n, k, alpha, Aarray, atype, lda,
               Barray, btype, ldb, beta, Carray, ctype, ldc, batch, compute)


@implements("cublasHgemmStridedBatched", "cublasHgemmStridedBatched_64")
def hgemm_strided(handle, transa, transb, m, n, k, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc,
                  sC, batch):
    strided_ex("cublasHgemmStridedBatched", handle, transa, transb, m, n, k, alpha, A, 2, lda, sA,
               B, 2, ldb, sB, beta, C, 2, ldc, sC, batch, K["CUBLAS_COMPUTE_16F"])


@implements("cublasHgemmBatched", "cublasHgemmBatched_64")
def hgemm_batched(handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray,
                  ldc, batch):
    batched_ex("cublasHgemmBatched", handle, transa, transb, m, n, k, alpha, Aarray, 2, lda,
               Barray, 2, ldb, beta, Carray, 2, ldc, batch, K["CUBLAS_COMPUTE_16F"])


__all__ = ["gemm_ex", "type_name"]
