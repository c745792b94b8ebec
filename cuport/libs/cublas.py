"""cuBLAS (libcublas.so.13/.12) on OpenBLAS.

A handle holds its stream, pointer mode, math mode, atomics mode and workspace. Every
BLAS call checks its arguments as cuBLAS does (CUBLAS_STATUS_INVALID_VALUE for a
negative size, a leading dimension too small, an unknown operation), reads host-mode
scalars at the call and enqueues the work on the handle's stream (libs/device.py);
calls that return a result to host memory (dot, nrm2, amax in host pointer mode) wait
for it, as cuBLAS does. Matrices are column-major, cuBLAS's layout and CBLAS's
CblasColMajor, so arguments pass to OpenBLAS unchanged. The families are built from
tables of type letters (S, D, C, Z) below; GemmEx and the f16/bf16/int8 forms convert
to the compute type with numpy (libs/gemm_ex.py).
"""

from __future__ import annotations

import numpy as np

from cuport.driver import handles
from cuport.libs import device, openblas, table
from cuport.libs.blas_common import (
    HOST,
    Scalar,
    mat_bytes,
    matrix,
    op,
    result_target,
    strided_bytes,
    vec_bytes,
)
from cuport.libs.device import Range
from cuport.libs.dtypes import LETTERS, REAL_OF
from cuport.libs.registry import Status, Unsupported, implements, lookup

INVALID = "CUBLAS_STATUS_INVALID_VALUE"
NOT_INITIALIZED = "CUBLAS_STATUS_NOT_INITIALIZED"
COL = openblas.COL_MAJOR
K = table.constants("cublas")
VERSION = K["CUBLAS_VER_MAJOR"] * 10000 + K["CUBLAS_VER_MINOR"] * 100 + K["CUBLAS_VER_PATCH"]


class Handle:
    def __init__(self) -> None:
        self.context = device.ensure_context()
        self.stream = 0
        self.pointer_mode = HOST
        self.math_mode = K["CUBLAS_DEFAULT_MATH"]
        self.atomics = 0
        self.workspace = (0, 0)
        self.sm_count = 0
        self.handle = handles.new(self)


def get(handle: int) -> Handle:
    return lookup(handle, Handle, NOT_INITIALIZED, "a cuBLAS handle (cublasCreate makes one)")


def launch(h: Handle, what: str, fn, ranges, wait: bool = False) -> None:
    device.launch(h.stream, what, fn, ranges, INVALID, wait)


def check_op(trans: int, name: str = "trans") -> None:
    if trans not in (0, 1, 2):
        raise Status(INVALID, f"{name} {trans} is not a cublasOperation_t (N=0, T=1, C=2)")


def check_enum(value: int, allowed: tuple[int, ...], name: str) -> None:
    if value not in allowed:
        raise Status(INVALID, f"{name} {value} is not one of {allowed}")


def check_sizes(**sizes: int) -> None:
    for name, v in sizes.items():
        if v < 0:
            raise Status(INVALID, f"{name} = {v} < 0")


def check_ld(name: str, ld: int, rows: int) -> None:
    if ld < max(1, rows):
        raise Status(INVALID, f"{name} = {ld} < max(1, {rows})")


def check_inc(name: str, inc: int) -> None:
    if inc == 0:
        raise Status(INVALID, f"{name} = 0")


# -- handles and modes --------------------------------------------------------------------

@implements("cublasCreate_v2")
def create() -> int:
    return Handle().handle


@implements("cublasDestroy_v2")
def destroy(handle: int) -> None:
    h = get(handle)
    device.synchronize(h.stream) if h.stream in (0, 1, 2) or handles.peek(h.stream) else None
    handles.drop(handle)


@implements("cublasGetVersion_v2")
def get_version(handle: int) -> int:
    if handle:
        get(handle)
    return VERSION


@implements("cublasGetProperty")
def get_property(kind: int) -> int:
    values = (K["CUBLAS_VER_MAJOR"], K["CUBLAS_VER_MINOR"], K["CUBLAS_VER_PATCH"])
    if kind not in (0, 1, 2):
        raise Status(INVALID, f"libraryPropertyType {kind}")
    return values[kind]


@implements("cublasGetCudartVersion")
def get_cudart_version() -> int:
    return 13000


@implements("cublasSetStream_v2")
def set_stream(handle: int, stream: int) -> None:
    h = get(handle)
    device.resolve_stream(stream)
    h.stream = stream


@implements("cublasGetStream_v2")
def get_stream(handle: int) -> int:
    return get(handle).stream


@implements("cublasSetPointerMode_v2")
def set_pointer_mode(handle: int, mode: int) -> None:
    check_enum(mode, (0, 1), "mode")
    get(handle).pointer_mode = mode


@implements("cublasGetPointerMode_v2")
def get_pointer_mode(handle: int) -> int:
    return get(handle).pointer_mode


@implements("cublasSetMathMode")
def set_math_mode(handle: int, mode: int) -> None:
    if mode & 0xF not in (0, 1, 2, 3):
        raise Status(INVALID, f"math mode {mode:#x}")
    get(handle).math_mode = mode


@implements("cublasGetMathMode")
def get_math_mode(handle: int) -> int:
    return get(handle).math_mode


@implements("cublasSetAtomicsMode")
def set_atomics_mode(handle: int, mode: int) -> None:
    check_enum(mode, (0, 1), "mode")
    get(handle).atomics = mode


@implements("cublasGetAtomicsMode")
def get_atomics_mode(handle: int) -> int:
    return get(handle).atomics


@implements("cublasSetWorkspace_v2")
def set_workspace(handle: int, workspace: int, size: int) -> None:
    h = get(handle)
    if size and workspace == 0:
        raise Status(INVALID, "workspace is NULL with a non-zero size")
    h.workspace = (workspace, size)  # OpenBLAS needs none: kept for the program only


@implements("cublasSetSmCountTarget")
def set_sm_count(handle: int, count: int) -> None:
    if count < 0:
        raise Status(INVALID, f"smCountTarget {count} < 0")
    get(handle).sm_count = count


@implements("cublasGetSmCountTarget")
def get_sm_count(handle: int) -> int:
    return get(handle).sm_count


STATUS_TEXT = {
    "CUBLAS_STATUS_SUCCESS": "success",
    "CUBLAS_STATUS_NOT_INITIALIZED": "the library was not initialized",
    "CUBLAS_STATUS_ALLOC_FAILED": "the resource allocation failed",
    "CUBLAS_STATUS_INVALID_VALUE": "an invalid numeric value was used as an argument",
    "CUBLAS_STATUS_ARCH_MISMATCH": "an absent device architectural feature is required",
    "CUBLAS_STATUS_MAPPING_ERROR": "an access to GPU memory space failed",
    "CUBLAS_STATUS_EXECUTION_FAILED": "the GPU program failed to execute",
    "CUBLAS_STATUS_INTERNAL_ERROR": "an internal operation failed",
    "CUBLAS_STATUS_NOT_SUPPORTED": "the functionality requested is not supported",
    "CUBLAS_STATUS_LICENSE_ERROR": "the functionality requested requires some license",
}


@implements("cublasGetStatusName", "cublasLtGetStatusName")
def status_name(status: int) -> str:
    return table.status_names("cublas").get(status, "CUBLAS_STATUS_UNKNOWN")


@implements("cublasGetStatusString", "cublasLtGetStatusString")
def status_string(status: int) -> str:
    return STATUS_TEXT.get(table.status_names("cublas").get(status, ""), "unknown error")


# -- host <-> device copies (cublasSetVector & co.) ------------------------------------------

def _copy_strided(src: int, src_inc: int, dst: int, dst_inc: int, n: int, size: int) -> None:
    s = np.lib.stride_tricks.as_strided(device.view(src, np.uint8, vec_bytes(n, src_inc, size)),
                                        shape=(n, size), strides=(src_inc * size, 1))
    d = np.lib.stride_tricks.as_strided(device.view(dst, np.uint8, vec_bytes(n, dst_inc, size)),
                                        shape=(n, size), strides=(dst_inc * size, 1))
    d[...] = s


def _copy_matrix(src: int, lds: int, dst: int, ldd: int, rows: int, cols: int, size: int):
    s = np.lib.stride_tricks.as_strided(device.view(src, np.uint8, mat_bytes(rows, cols, lds, size)),
                                        shape=(cols, rows * size), strides=(lds * size, 1))
    d = np.lib.stride_tricks.as_strided(device.view(dst, np.uint8, mat_bytes(rows, cols, ldd, size)),
                                        shape=(cols, rows * size), strides=(ldd * size, 1))
    d[...] = s


def _vector_copy(to_device: bool, n: int, size: int, x: int, incx: int, y: int, incy: int,
                 stream: int, wait: bool, what: str) -> None:
    if n < 0 or size <= 0 or incx <= 0 or incy <= 0:
        raise Status(INVALID, f"n={n}, elemSize={size}, incx={incx}, incy={incy}")
    if n == 0:
        return
    dev, inc = (y, incy) if to_device else (x, incx)
    rng = Range(dev, vec_bytes(n, inc, size), "w" if to_device else "r")
    if x == 0 or y == 0:
        raise Status(INVALID, "a vector pointer is NULL")

    def run(d):
        if to_device:
            _copy_strided(x, incx, d, incy, n, size)
        else:
            _copy_strided(d, incx, y, incy, n, size)
    device.launch(stream, what, run, [(rng, "devicePtr")], "CUBLAS_STATUS_MAPPING_ERROR", wait)


@implements("cublasSetVector", "cublasSetVector_64")
def set_vector(n, size, x, incx, y, incy):
    _vector_copy(True, n, size, x, incx, y, incy, 0, True, "cublasSetVector")


@implements("cublasGetVector", "cublasGetVector_64")
def get_vector(n, size, x, incx, y, incy):
    _vector_copy(False, n, size, x, incx, y, incy, 0, True, "cublasGetVector")


@implements("cublasSetVectorAsync", "cublasSetVectorAsync_64")
def set_vector_async(n, size, x, incx, y, incy, stream):
    _vector_copy(True, n, size, x, incx, y, incy, stream, False, "cublasSetVectorAsync")


@implements("cublasGetVectorAsync", "cublasGetVectorAsync_64")
def get_vector_async(n, size, x, incx, y, incy, stream):
    _vector_copy(False, n, size, x, incx, y, incy, stream, False, "cublasGetVectorAsync")


def _matrix_copy(to_device: bool, rows, cols, size, a, lda, b, ldb, stream, wait, what):
    if rows < 0 or cols < 0 or size <= 0 or lda < max(1, rows) or ldb < max(1, rows):
        raise Status(INVALID, f"rows={rows}, cols={cols}, elemSize={size}, lda={lda}, ldb={ldb}")
    if rows == 0 or cols == 0:
        return
    dev, ld = (b, ldb) if to_device else (a, lda)
    rng = Range(dev, mat_bytes(rows, cols, ld, size), "w" if to_device else "r")

    def run(d):
        if to_device:
            _copy_matrix(a, lda, d, ldb, rows, cols, size)
        else:
            _copy_matrix(d, lda, b, ldb, rows, cols, size)
    device.launch(stream, what, run, [(rng, "devicePtr")], "CUBLAS_STATUS_MAPPING_ERROR", wait)


@implements("cublasSetMatrix", "cublasSetMatrix_64")
def set_matrix(rows, cols, size, a, lda, b, ldb):
    _matrix_copy(True, rows, cols, size, a, lda, b, ldb, 0, True, "cublasSetMatrix")


@implements("cublasGetMatrix", "cublasGetMatrix_64")
def get_matrix(rows, cols, size, a, lda, b, ldb):
    _matrix_copy(False, rows, cols, size, a, lda, b, ldb, 0, True, "cublasGetMatrix")


@implements("cublasSetMatrixAsync", "cublasSetMatrixAsync_64")
def set_matrix_async(rows, cols, size, a, lda, b, ldb, stream):
    _matrix_copy(True, rows, cols, size, a, lda, b, ldb, stream, False, "cublasSetMatrixAsync")


@implements("cublasGetMatrixAsync", "cublasGetMatrixAsync_64")
def get_matrix_async(rows, cols, size, a, lda, b, ldb, stream):
    _matrix_copy(False, rows, cols, size, a, lda, b, ldb, stream, False, "cublasGetMatrixAsync")


# -- registration helpers ----------------------------------------------------------------

def register(pattern: str, letters: str, make, **names) -> None:
    """Register make(letter) for cublas<L><pattern> (and its _64 form) for each letter."""
    for t in letters:
        name = pattern.replace("{t}", t).replace("{T}", t)
        symbols = [s for s in (name, f"{name}_64") if s in table.functions("cublas")]
        implements(*symbols)(make(t, name))


def itemsize(t: str) -> int:
    return np.dtype(LETTERS[t]).itemsize


# -- level 1 ---------------------------------------------------------------------------

def _axpy(t, name):
    f, dt = openblas.cblas(f"{t.lower()}axpy"), LETTERS[t]

    def impl(handle, n, alpha, x, incx, y, incy):
        h = get(handle)
        al = Scalar(h.pointer_mode, alpha, dt, "alpha", INVALID)
        if n <= 0:
            return
        sz = itemsize(t)
        launch(h, name, lambda xa, ya: f(n, al.arg(), xa, incx, ya, incy),
               [(Range(x, vec_bytes(n, incx, sz)), "x"), (Range(y, vec_bytes(n, incy, sz), "rw"), "y")])
    return impl


def _scal(t, name, alpha_t=None):
    lower = {"Cs": "cs", "Zd": "zd"}.get(t, t.lower())
    f = openblas.cblas(f"{lower}scal")
    xt = t[0]
    dt = LETTERS[alpha_t or xt]

    def impl(handle, n, alpha, x, incx):
        h = get(handle)
        al = Scalar(h.pointer_mode, alpha, dt, "alpha", INVALID)
        if n <= 0 or incx <= 0:
            return
        launch(h, name, lambda xa: f(n, al.arg(), xa, incx),
               [(Range(x, vec_bytes(n, incx, itemsize(xt)), "rw"), "x")])
    return impl


def _copy(t, name):
    f = openblas.cblas(f"{t.lower()}copy")

    def impl(handle, n, x, incx, y, incy):
        h = get(handle)
        if n <= 0:
            return
        sz = itemsize(t)
        launch(h, name, lambda xa, ya: f(n, xa, incx, ya, incy),
               [(Range(x, vec_bytes(n, incx, sz)), "x"), (Range(y, vec_bytes(n, incy, sz), "w"), "y")])
    return impl


def _swap(t, name):
    f = openblas.cblas(f"{t.lower()}swap")

    def impl(handle, n, x, incx, y, incy):
        h = get(handle)
        if n <= 0:
            return
        sz = itemsize(t)
        launch(h, name, lambda xa, ya: f(n, xa, incx, ya, incy),
               [(Range(x, vec_bytes(n, incx, sz), "rw"), "x"),
                (Range(y, vec_bytes(n, incy, sz), "rw"), "y")])
    return impl


def _reduction(h: Handle, name: str, result: int, rdtype, n: int, ranges, compute,
               empty=0) -> None:
    """A BLAS-1 call with one result (dot, nrm2, asum, amax) written where the mode says."""
    wait, write = result_target(h.pointer_mode, result, rdtype, "result", INVALID)
    if n <= 0:
        launch(h, name, lambda *a: write(empty), [], wait)
        return
    launch(h, name, lambda *a: write(compute(*a)), ranges, wait)


def _dot(t, name, conj: str = ""):
    dt = LETTERS[t]
    sz = itemsize(t)
    if t in "SD":
        f = openblas.cblas(f"{t.lower()}dot")
    else:
        f = openblas.cblas(f"{t.lower()}dot{conj}_sub")

    def impl(handle, n, x, incx, y, incy, result):
        h = get(handle)

        def compute(xa, ya):
            if t in "SD":
                return f(n, xa, incx, ya, incy)
            out = np.zeros(1, dt)
            f(n, xa, incx, ya, incy, out.ctypes.data)
            return out[0]
        _reduction(h, name, result, dt, n, [(Range(x, vec_bytes(n, incx, sz)), "x"),
                                            (Range(y, vec_bytes(n, incy, sz)), "y")], compute)
    return impl


def _norm_like(kind: str):
    def make(t, name):
        prefix = {"S": "s", "D": "d", "Sc": "sc", "Dz": "dz"}[t]
        f = openblas.cblas(f"{prefix}{kind}")
        xt = {"Sc": "C", "Dz": "Z"}.get(t, t)
        rt = REAL_OF.get(LETTERS[xt], LETTERS[xt])

        def impl(handle, n, x, incx, result):
            h = get(handle)
            if incx <= 0:
                n = 0
            _reduction(h, name, result, rt, n, [(Range(x, vec_bytes(n, incx, itemsize(xt))), "x")],
                       lambda xa: f(n, xa, incx))
        return impl
    return make


def _register_iamax(kind: str) -> None:
    for t in "SDCZ":
        for suffix, rdt in (("_v2", np.int32), ("_v2_64", np.int64)):
            name = f"cublasI{t.lower()}{kind}{suffix}"
            if name not in table.functions("cublas"):
                continue
            f = openblas.cblas(f"i{t.lower()}{kind}")

            def impl(handle, n, x, incx, result, f=f, t=t, name=name, rdt=rdt):
                h = get(handle)
                if incx <= 0:
                    n = 0
                _reduction(h, name, result, rdt, n,
                           [(Range(x, vec_bytes(n, incx, itemsize(t))), "x")],
                           lambda xa: f(n, xa, incx) + 1)
            implements(name)(impl)


def _rot(t, name):
    f = openblas.cblas(f"{t.lower()}rot")
    dt = LETTERS[t]

    def impl(handle, n, x, incx, y, incy, c, s):
        h = get(handle)
        cs = Scalar(h.pointer_mode, c, dt, "c", INVALID)
        sn = Scalar(h.pointer_mode, s, dt, "s", INVALID)
        if n <= 0:
            return
        sz = itemsize(t)
        launch(h, name, lambda xa, ya: f(n, xa, incx, ya, incy, cs.arg(), sn.arg()),
               [(Range(x, vec_bytes(n, incx, sz), "rw"), "x"),
                (Range(y, vec_bytes(n, incy, sz), "rw"), "y")])
    return impl


register("cublas{t}axpy_v2", "SDCZ", _axpy)
register("cublas{t}scal_v2", "SDCZ", _scal)
register("cublas{t}copy_v2", "SDCZ", _copy)
register("cublas{t}swap_v2", "SDCZ", _swap)
register("cublas{t}dot_v2", "SD", _dot)
register("cublas{t}dotu_v2", "CZ", lambda t, n: _dot(t, n, "u"))
register("cublas{t}dotc_v2", "CZ", lambda t, n: _dot(t, n, "c"))
register("cublas{t}nrm2_v2", ("S", "D", "Sc", "Dz"), _norm_like("nrm2"))
register("cublas{t}asum_v2", ("S", "D", "Sc", "Dz"), _norm_like("asum"))
register("cublas{t}rot_v2", "SD", _rot)
for _kind in ("amax", "amin"):
    _register_iamax(_kind)
for _t, _a in (("Cs", "S"), ("Zd", "D")):
    _name = f"cublas{_t}scal_v2"
    implements(_name, f"{_name}_64")(_scal(_t, _name, _a))


# -- level 2 ---------------------------------------------------------------------------

def _gemv(t, name):
    f, dt = openblas.cblas(f"{t.lower()}gemv"), LETTERS[t]

    def impl(handle, trans, m, n, alpha, A, lda, x, incx, beta, y, incy):
        h = get(handle)
        check_op(trans)
        check_sizes(m=m, n=n)
        check_ld("lda", lda, m)
        check_inc("incx", incx)
        check_inc("incy", incy)
        al = Scalar(h.pointer_mode, alpha, dt, "alpha", INVALID)
        be = Scalar(h.pointer_mode, beta, dt, "beta", INVALID)
        if m == 0 or n == 0:
            return
        lx, ly = (n, m) if trans == 0 else (m, n)
        sz = itemsize(t)
        launch(h, name, lambda a, xa, ya: f(COL, openblas.TRANS[trans], m, n, al.arg(), a, lda,
                                            xa, incx, be.arg(), ya, incy),
               [(Range(A, mat_bytes(m, n, lda, sz)), "A"), (Range(x, vec_bytes(lx, incx, sz)), "x"),
                (Range(y, vec_bytes(ly, incy, sz), "rw"), "y")])
    return impl


def _ger(t, name, kind=""):
    f, dt = openblas.cblas(f"{t.lower()}ger{kind}"), LETTERS[t]

    def impl(handle, m, n, alpha, x, incx, y, incy, A, lda):
        h = get(handle)
        check_sizes(m=m, n=n)
        check_ld("lda", lda, m)
        check_inc("incx", incx)
        check_inc("incy", incy)
        al = Scalar(h.pointer_mode, alpha, dt, "alpha", INVALID)
        if m == 0 or n == 0:
            return
        sz = itemsize(t)
        launch(h, name, lambda xa, ya, a: f(COL, m, n, al.arg(), xa, incx, ya, incy, a, lda),
               [(Range(x, vec_bytes(m, incx, sz)), "x"), (Range(y, vec_bytes(n, incy, sz)), "y"),
                (Range(A, mat_bytes(m, n, lda, sz), "rw"), "A")])
    return impl


def _symv(t, name, kind="sy"):
    f, dt = openblas.cblas(f"{t.lower()}{kind}mv"), LETTERS[t]

    def impl(handle, uplo, n, alpha, A, lda, x, incx, beta, y, incy):
        h = get(handle)
        check_enum(uplo, (0, 1), "uplo")
        check_sizes(n=n)
        check_ld("lda", lda, n)
        al = Scalar(h.pointer_mode, alpha, dt, "alpha", INVALID)
        be = Scalar(h.pointer_mode, beta, dt, "beta", INVALID)
        if n == 0:
            return
        sz = itemsize(t)
        launch(h, name, lambda a, xa, ya: f(COL, openblas.UPLO[uplo], n, al.arg(), a, lda, xa, incx,
                                            be.arg(), ya, incy),
               [(Range(A, mat_bytes(n, n, lda, sz)), "A"), (Range(x, vec_bytes(n, incx, sz)), "x"),
                (Range(y, vec_bytes(n, incy, sz), "rw"), "y")])
    return impl


def _sbmv(t, name):
    dt = LETTERS[t]

    def impl(handle, uplo, n, k, alpha, A, lda, x, incx, beta, y, incy):
        h = get(handle)
        check_enum(uplo, (0, 1), "uplo")
        check_sizes(n=n, k=k)
        check_ld("lda", lda, k + 1)
        al = Scalar(h.pointer_mode, alpha, dt, "alpha", INVALID)
        be = Scalar(h.pointer_mode, beta, dt, "beta", INVALID)
        if n == 0:
            return
        sz = itemsize(t)

        def run(a, xa, ya):
            # the band matrix, made dense (small k in practice), then symv
            band = matrix(a, dt, k + 1, n, lda)
            full = np.zeros((n, n), dt)
            for j in range(n):
                for d in range(0, min(k, n - 1 - j if uplo == 0 else j) + 1):
                    if uplo == 0:  # lower: band[d, j] = A[j+d, j]
                        full[j + d, j] = full[j, j + d] = band[d, j]
                    else:  # upper: band[k-d, j] = A[j-d, j]
                        full[j - d, j] = full[j, j - d] = band[k - d, j]
            xv = np.lib.stride_tricks.as_strided(device.view(xa, dt, vec_bytes(n, incx, sz) // sz),
                                                 shape=(n,), strides=(incx * sz,))
            yv = np.lib.stride_tricks.as_strided(device.view(ya, dt, vec_bytes(n, incy, sz) // sz),
                                                 shape=(n,), strides=(incy * sz,))
            b = be.get()
            yv[...] = al.get() * (full @ xv) + (b * yv if b != 0 else 0)
        launch(h, name, run, [(Range(A, mat_bytes(k + 1, n, lda, sz)), "A"),
                              (Range(x, vec_bytes(n, incx, sz)), "x"),
                              (Range(y, vec_bytes(n, incy, sz), "rw"), "y")])
    return impl


def _trsv_like(kind: str):
    def make(t, name):
        f = openblas.cblas(f"{t.lower()}{kind}")

        def impl(handle, uplo, trans, diag, n, A, lda, x, incx):
            h = get(handle)
            check_enum(uplo, (0, 1), "uplo")
            check_op(trans)
            check_enum(diag, (0, 1), "diag")
            check_sizes(n=n)
            check_ld("lda", lda, n)
            check_inc("incx", incx)
            if n == 0:
                return
            sz = itemsize(t)
            launch(h, name, lambda a, xa: f(COL, openblas.UPLO[uplo], openblas.TRANS[trans],
                                            openblas.DIAG[diag], n, a, lda, xa, incx),
                   [(Range(A, mat_bytes(n, n, lda, sz)), "A"),
                    (Range(x, vec_bytes(n, incx, sz), "rw"), "x")])
        return impl
    return make


def _syr(t, name):
    f, dt = openblas.cblas(f"{t.lower()}syr"), LETTERS[t]

    def impl(handle, uplo, n, alpha, x, incx, A, lda):
        h = get(handle)
        check_enum(uplo, (0, 1), "uplo")
        check_sizes(n=n)
        check_ld("lda", lda, n)
        al = Scalar(h.pointer_mode, alpha, dt, "alpha", INVALID)
        if n == 0:
            return
        sz = itemsize(t)
        launch(h, name, lambda xa, a: f(COL, openblas.UPLO[uplo], n, al.arg(), xa, incx, a, lda),
               [(Range(x, vec_bytes(n, incx, sz)), "x"), (Range(A, mat_bytes(n, n, lda, sz), "rw"), "A")])
    return impl


register("cublas{t}gemv_v2", "SDCZ", _gemv)
register("cublas{t}ger_v2", "SD", _ger)
register("cublas{t}geru_v2", "CZ", lambda t, n: _ger(t, n, "u"))
register("cublas{t}gerc_v2", "CZ", lambda t, n: _ger(t, n, "c"))
register("cublas{t}symv_v2", "SD", _symv)
register("cublas{t}hemv_v2", "CZ", lambda t, n: _symv(t, n, "he"))
register("cublas{t}sbmv_v2", "SD", _sbmv)
register("cublas{t}trsv_v2", "SDCZ", _trsv_like("trsv"))
register("cublas{t}trmv_v2", "SDCZ", _trsv_like("trmv"))
register("cublas{t}syr_v2", "SD", _syr)


# -- level 3 ---------------------------------------------------------------------------

def gemm_checks(transa, transb, m, n, k, lda, ldb, ldc):
    check_op(transa, "transa")
    check_op(transb, "transb")
    check_sizes(m=m, n=n, k=k)
    ra, ca = (m, k) if transa == 0 else (k, m)
    rb, cb = (k, n) if transb == 0 else (n, k)
    check_ld("lda", lda, ra)
    check_ld("ldb", ldb, rb)
    check_ld("ldc", ldc, m)
    return ra, ca, rb, cb


def _gemm(t, name):
    f, dt = openblas.cblas(f"{t.lower()}gemm"), LETTERS[t]
    sz = itemsize(t)

    def impl(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc):
        h = get(handle)
        ra, ca, rb, cb = gemm_checks(transa, transb, m, n, k, lda, ldb, ldc)
        al = Scalar(h.pointer_mode, alpha, dt, "alpha", INVALID)
        be = Scalar(h.pointer_mode, beta, dt, "beta", INVALID)
        if m == 0 or n == 0:
            return
        ta, tb = openblas.TRANS[transa], openblas.TRANS[transb]
        launch(h, name, lambda a, b, c: f(COL, ta, tb, m, n, k, al.arg(), a, lda, b, ldb,
                                          be.arg(), c, ldc),
               [(Range(A, mat_bytes(ra, ca, lda, sz)), "A"), (Range(B, mat_bytes(rb, cb, ldb, sz)), "B"),
                (Range(C, mat_bytes(m, n, ldc, sz), "rw"), "C")])
    return impl


def _gemm_batched(t, name):
    f, dt = openblas.cblas(f"{t.lower()}gemm"), LETTERS[t]
    sz = itemsize(t)

    def impl(handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray,
             ldc, batch):
        h = get(handle)
        ra, ca, rb, cb = gemm_checks(transa, transb, m, n, k, lda, ldb, ldc)
        check_sizes(batchCount=batch)
        al = Scalar(h.pointer_mode, alpha, dt, "alpha", INVALID)
        be = Scalar(h.pointer_mode, beta, dt, "beta", INVALID)
        if m == 0 or n == 0 or batch == 0:
            return
        ta, tb = openblas.TRANS[transa], openblas.TRANS[transb]

        def run(pa, pb, pc):
            av, bv = al.arg(), be.arg()
            for a, b, c in zip(device.read_pointers(pa, batch), device.read_pointers(pb, batch),
                               device.read_pointers(pc, batch), strict=True):
                f(COL, ta, tb, m, n, k, av, device.map_range(a, mat_bytes(ra, ca, lda, sz)), lda,
                  device.map_range(b, mat_bytes(rb, cb, ldb, sz)), ldb, bv,
                  device.map_range(c, mat_bytes(m, n, ldc, sz), "rw"), ldc)
        launch(h, name, run, [(Range(Aarray, 8 * batch), "Aarray"), (Range(Barray, 8 * batch), "Barray"),
                              (Range(Carray, 8 * batch), "Carray")])
    return impl


def _gemm_strided(t, name):
    f, dt = openblas.cblas(f"{t.lower()}gemm"), LETTERS[t]
    sz = itemsize(t)

    def impl(handle, transa, transb, m, n, k, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC,
             batch):
        h = get(handle)
        ra, ca, rb, cb = gemm_checks(transa, transb, m, n, k, lda, ldb, ldc)
        check_sizes(batchCount=batch)
        al = Scalar(h.pointer_mode, alpha, dt, "alpha", INVALID)
        be = Scalar(h.pointer_mode, beta, dt, "beta", INVALID)
        if m == 0 or n == 0 or batch == 0:
            return
        ta, tb = openblas.TRANS[transa], openblas.TRANS[transb]

        def run(a, b, c):
            av, bv = al.arg(), be.arg()
            for i in range(batch):
                f(COL, ta, tb, m, n, k, av, a + i * sA * sz, lda, b + i * sB * sz, ldb, bv,
                  c + i * sC * sz, ldc)
        launch(h, name, run, [
            (Range(A, strided_bytes(mat_bytes(ra, ca, lda, sz), sA, batch, sz)), "A"),
            (Range(B, strided_bytes(mat_bytes(rb, cb, ldb, sz), sB, batch, sz)), "B"),
            (Range(C, strided_bytes(mat_bytes(m, n, ldc, sz), sC, batch, sz), "rw"), "C")])
    return impl


def _symm(t, name, kind="sy"):
    f, dt = openblas.cblas(f"{t.lower()}{kind}mm"), LETTERS[t]
    sz = itemsize(t)

    def impl(handle, side, uplo, m, n, alpha, A, lda, B, ldb, beta, C, ldc):
        h = get(handle)
        check_enum(side, (0, 1), "side")
        check_enum(uplo, (0, 1), "uplo")
        check_sizes(m=m, n=n)
        ka = m if side == 0 else n
        check_ld("lda", lda, ka)
        check_ld("ldb", ldb, m)
        check_ld("ldc", ldc, m)
        al = Scalar(h.pointer_mode, alpha, dt, "alpha", INVALID)
        be = Scalar(h.pointer_mode, beta, dt, "beta", INVALID)
        if m == 0 or n == 0:
            return
        launch(h, name, lambda a, b, c: f(COL, openblas.SIDE[side], openblas.UPLO[uplo], m, n,
                                          al.arg(), a, lda, b, ldb, be.arg(), c, ldc),
               [(Range(A, mat_bytes(ka, ka, lda, sz)), "A"), (Range(B, mat_bytes(m, n, ldb, sz)), "B"),
                (Range(C, mat_bytes(m, n, ldc, sz), "rw"), "C")])
    return impl


def _syrk(t, name, kind="sy", scalar_t=None):
    f = openblas.cblas(f"{t.lower()}{kind}rk")
    dt = LETTERS[scalar_t or t]
    sz = itemsize(t)

    def impl(handle, uplo, trans, n, k, alpha, A, lda, beta, C, ldc):
        h = get(handle)
        check_enum(uplo, (0, 1), "uplo")
        check_op(trans)
        check_sizes(n=n, k=k)
        ra, ca = (n, k) if trans == 0 else (k, n)
        check_ld("lda", lda, ra)
        check_ld("ldc", ldc, n)
        al = Scalar(h.pointer_mode, alpha, dt, "alpha", INVALID)
        be = Scalar(h.pointer_mode, beta, dt, "beta", INVALID)
        if n == 0:
            return
        launch(h, name, lambda a, c: f(COL, openblas.UPLO[uplo], openblas.TRANS[trans], n, k,
                                       al.arg(), a, lda, be.arg(), c, ldc),
               [(Range(A, mat_bytes(ra, ca, lda, sz)), "A"), (Range(C, mat_bytes(n, n, ldc, sz), "rw"), "C")])
    return impl


def _syr2k(t, name, kind="sy", beta_t=None):
    f = openblas.cblas(f"{t.lower()}{kind}r2k")
    dt = LETTERS[t]
    sz = itemsize(t)

    def impl(handle, uplo, trans, n, k, alpha, A, lda, B, ldb, beta, C, ldc):
        h = get(handle)
        check_enum(uplo, (0, 1), "uplo")
        check_op(trans)
        check_sizes(n=n, k=k)
        ra, ca = (n, k) if trans == 0 else (k, n)
        check_ld("lda", lda, ra)
        check_ld("ldb", ldb, ra)
        check_ld("ldc", ldc, n)
        al = Scalar(h.pointer_mode, alpha, dt, "alpha", INVALID)
        be = Scalar(h.pointer_mode, beta, LETTERS[beta_t or t], "beta", INVALID)
        if n == 0:
            return
        launch(h, name, lambda a, b, c: f(COL, openblas.UPLO[uplo], openblas.TRANS[trans], n, k,
                                          al.arg(), a, lda, b, ldb, be.arg(), c, ldc),
               [(Range(A, mat_bytes(ra, ca, lda, sz)), "A"), (Range(B, mat_bytes(ra, ca, ldb, sz)), "B"),
                (Range(C, mat_bytes(n, n, ldc, sz), "rw"), "C")])
    return impl


def trsm_checks(side, uplo, trans, diag, m, n, lda, ldb):
    check_enum(side, (0, 1), "side")
    check_enum(uplo, (0, 1), "uplo")
    check_op(trans)
    check_enum(diag, (0, 1), "diag")
    check_sizes(m=m, n=n)
    ka = m if side == 0 else n
    check_ld("lda", lda, ka)
    check_ld("ldb", ldb, m)
    return ka


def _trsm(t, name):
    f, dt = openblas.cblas(f"{t.lower()}trsm"), LETTERS[t]
    sz = itemsize(t)

    def impl(handle, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb):
        h = get(handle)
        ka = trsm_checks(side, uplo, trans, diag, m, n, lda, ldb)
        al = Scalar(h.pointer_mode, alpha, dt, "alpha", INVALID)
        if m == 0 or n == 0:
            return
        launch(h, name, lambda a, b: f(COL, openblas.SIDE[side], openblas.UPLO[uplo],
                                       openblas.TRANS[trans], openblas.DIAG[diag], m, n, al.arg(),
                                       a, lda, b, ldb),
               [(Range(A, mat_bytes(ka, ka, lda, sz)), "A"), (Range(B, mat_bytes(m, n, ldb, sz), "rw"), "B")])
    return impl


def _trsm_batched(t, name):
    f, dt = openblas.cblas(f"{t.lower()}trsm"), LETTERS[t]
    sz = itemsize(t)

    def impl(handle, side, uplo, trans, diag, m, n, alpha, Aarray, lda, Barray, ldb, batch):
        h = get(handle)
        ka = trsm_checks(side, uplo, trans, diag, m, n, lda, ldb)
        check_sizes(batchCount=batch)
        al = Scalar(h.pointer_mode, alpha, dt, "alpha", INVALID)
        if m == 0 or n == 0 or batch == 0:
            return

        def run(pa, pb):
            av = al.arg()
            for a, b in zip(device.read_pointers(pa, batch), device.read_pointers(pb, batch),
                            strict=True):
                f(COL, openblas.SIDE[side], openblas.UPLO[uplo], openblas.TRANS[trans],
                  openblas.DIAG[diag], m, n, av, device.map_range(a, mat_bytes(ka, ka, lda, sz)),
                  lda, device.map_range(b, mat_bytes(m, n, ldb, sz), "rw"), ldb)
        launch(h, name, run, [(Range(Aarray, 8 * batch), "Aarray"), (Range(Barray, 8 * batch), "Barray")])
    return impl


def _trmm(t, name):
    """cuBLAS's trmm is out of place (C = alpha op(A) B): copy B to C, then in place."""
    f, dt = openblas.cblas(f"{t.lower()}trmm"), LETTERS[t]
    sz = itemsize(t)

    def impl(handle, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb, C, ldc):
        h = get(handle)
        ka = trsm_checks(side, uplo, trans, diag, m, n, lda, ldb)
        check_ld("ldc", ldc, m)
        al = Scalar(h.pointer_mode, alpha, dt, "alpha", INVALID)
        if m == 0 or n == 0:
            return

        def run(a, b, c):
            if b != c or ldb != ldc:
                matrix(c, dt, m, n, ldc)[...] = matrix(b, dt, m, n, ldb)
            f(COL, openblas.SIDE[side], openblas.UPLO[uplo], openblas.TRANS[trans],
              openblas.DIAG[diag], m, n, al.arg(), a, lda, c, ldc)
        launch(h, name, run, [(Range(A, mat_bytes(ka, ka, lda, sz)), "A"),
                              (Range(B, mat_bytes(m, n, ldb, sz)), "B"),
                              (Range(C, mat_bytes(m, n, ldc, sz), "w"), "C")])
    return impl


def _geam(t, name):
    dt = LETTERS[t]
    sz = itemsize(t)

    def impl(handle, transa, transb, m, n, alpha, A, lda, beta, B, ldb, C, ldc):
        h = get(handle)
        check_op(transa, "transa")
        check_op(transb, "transb")
        check_sizes(m=m, n=n)
        ra, ca = (m, n) if transa == 0 else (n, m)
        rb, cb = (m, n) if transb == 0 else (n, m)
        al = Scalar(h.pointer_mode, alpha, dt, "alpha", INVALID)
        be = Scalar(h.pointer_mode, beta, dt, "beta", INVALID)
        check_ld("ldc", ldc, m)
        if m == 0 or n == 0:
            return
        a_used = A != 0 and (al.on_device or al.value != 0)
        b_used = B != 0 and (be.on_device or be.value != 0)
        if a_used:
            check_ld("lda", lda, ra)
        if b_used:
            check_ld("ldb", ldb, rb)

        def run(a, b, c):
            av, bv = al.get(), be.get()
            out = np.zeros((m, n), dt)
            if a_used and av != 0:
                out += av * op(matrix(a, dt, ra, ca, lda), transa)
            if b_used and bv != 0:
                out += bv * op(matrix(b, dt, rb, cb, ldb), transb)
            matrix(c, dt, m, n, ldc)[...] = out
        launch(h, name, run, [(Range(A, mat_bytes(ra, ca, lda, sz) if a_used else 0), "A"),
                              (Range(B, mat_bytes(rb, cb, ldb, sz) if b_used else 0), "B"),
                              (Range(C, mat_bytes(m, n, ldc, sz), "w"), "C")])
    return impl


def _dgmm(t, name):
    dt = LETTERS[t]
    sz = itemsize(t)

    def impl(handle, mode, m, n, A, lda, x, incx, C, ldc):
        h = get(handle)
        check_enum(mode, (0, 1), "mode")
        check_sizes(m=m, n=n)
        check_ld("lda", lda, m)
        check_ld("ldc", ldc, m)
        if m == 0 or n == 0:
            return
        lx = m if mode == 0 else n

        def run(a, xa, c):
            xv = np.lib.stride_tricks.as_strided(device.view(xa, dt, vec_bytes(lx, incx, sz) // sz),
                                                 shape=(lx,), strides=(abs(incx) * sz,))
            if incx < 0:
                xv = xv[::-1]
            am = matrix(a, dt, m, n, lda)
            res = am * (xv[:, None] if mode == 0 else xv[None, :])
            matrix(c, dt, m, n, ldc)[...] = res
        launch(h, name, run, [(Range(A, mat_bytes(m, n, lda, sz)), "A"),
                              (Range(x, vec_bytes(lx, incx, sz)), "x"),
                              (Range(C, mat_bytes(m, n, ldc, sz), "w"), "C")])
    return impl


register("cublas{t}gemm_v2", "SDCZ", _gemm)
register("cublas{t}gemm3m", "CZ", _gemm)
register("cublas{t}gemmBatched", "SDCZ", _gemm_batched)
register("cublas{t}gemm3mBatched", "C", _gemm_batched)
register("cublas{t}gemmStridedBatched", "SDCZ", _gemm_strided)
register("cublas{t}gemm3mStridedBatched", "C", _gemm_strided)
register("cublas{t}symm_v2", "SDCZ", _symm)
register("cublas{t}hemm_v2", "CZ", lambda t, n: _symm(t, n, "he"))
register("cublas{t}syrk_v2", "SDCZ", _syrk)
register("cublas{t}herk_v2", "CZ", lambda t, n: _syrk(t, n, "he", {"C": "S", "Z": "D"}[t]))
register("cublas{t}syr2k_v2", "SDCZ", _syr2k)
register("cublas{t}her2k_v2", "CZ", lambda t, n: _syr2k(t, n, "he", {"C": "S", "Z": "D"}[t]))
register("cublas{t}trsm_v2", "SDCZ", _trsm)
register("cublas{t}trsmBatched", "SDCZ", _trsm_batched)
register("cublas{t}trmm_v2", "SDCZ", _trmm)
register("cublas{t}geam", "SDCZ", _geam)
register("cublas{t}dgmm", "SDCZ", _dgmm)


def unsupported_math(h: Handle) -> None:
    if h.math_mode & 0xF not in (0, 1, 2, 3):
        raise Unsupported(f"math mode {h.math_mode:#x}")
