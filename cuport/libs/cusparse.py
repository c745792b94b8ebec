"""cuSPARSE's generic API (libcusparse.so.12): CSR/CSC/COO SpMV and SpMM on scipy.sparse.

Descriptors keep the device pointers and types they were created with; SpMV and SpMM
build scipy.sparse matrices over the device arrays (no copy of the values on the CPU
backend), multiply with scipy's compiled kernels and write alpha*op(A)*x + beta*y into
the output in the handle's stream. The buffer-size queries answer 0 bytes.
"""

from __future__ import annotations

import numpy as np

from cuport.driver import handles
from cuport.libs import device, table
from cuport.libs.blas_common import HOST, Scalar
from cuport.libs.dtypes import cuda_type, storage
from cuport.libs.registry import Status, Unsupported, implements, lookup

K = table.constants("cusparse")
INVALID = "CUSPARSE_STATUS_INVALID_VALUE"
INDEX = {K["CUSPARSE_INDEX_32I"]: np.int32, K["CUSPARSE_INDEX_64I"]: np.int64,
         K["CUSPARSE_INDEX_16U"]: np.uint16}
CSR, CSC, COO = K["CUSPARSE_FORMAT_CSR"], K["CUSPARSE_FORMAT_CSC"], K["CUSPARSE_FORMAT_COO"]
COL, ROW = K["CUSPARSE_ORDER_COL"], K["CUSPARSE_ORDER_ROW"]
VERSION = K.get("CUSPARSE_VERSION", 12000)


class Handle:
    def __init__(self) -> None:
        self.context = device.ensure_context()
        self.stream = 0
        self.pointer_mode = HOST
        self.handle = handles.new(self)


class SpMat:
    def __init__(self, fmt, rows, cols, nnz, p0, p1, values, i0, i1, base, vtype) -> None:
        self.fmt, self.rows, self.cols, self.nnz = fmt, rows, cols, nnz
        self.p0, self.p1, self.values = p0, p1, values  # offsets/rows, columns/indices, values
        self.i0, self.i1, self.base, self.vtype = i0, i1, base, vtype
        self.handle = handles.new(self)

    def scipy(self):
        """The matrix as scipy.sparse over host views of its arrays."""
        import scipy.sparse as sp

        vt = storage(cuda_type(self.vtype))
        vals = device.view(device.map_range(self.values, self.nnz * vt.itemsize), vt, self.nnz)
        it0, it1 = np.dtype(INDEX[self.i0]), np.dtype(INDEX[self.i1])
        if self.fmt == COO:
            r = device.view(device.map_range(self.p0, self.nnz * it0.itemsize), it0, self.nnz)
            c = device.view(device.map_range(self.p1, self.nnz * it1.itemsize), it1, self.nnz)
            return sp.coo_matrix((vals, (r - self.base, c - self.base)),
                                 shape=(self.rows, self.cols))
        major = self.rows if self.fmt == CSR else self.cols
        ptr = device.view(device.map_range(self.p0, (major + 1) * it0.itemsize), it0, major + 1)
        ind = device.view(device.map_range(self.p1, self.nnz * it1.itemsize), it1, self.nnz)
        if self.base:
            ptr, ind = ptr - self.base, ind - self.base
        cls = sp.csr_matrix if self.fmt == CSR else sp.csc_matrix
        return cls((vals, ind, ptr), shape=(self.rows, self.cols))


class DnVec:
    def __init__(self, size, values, vtype) -> None:
        self.size, self.values, self.vtype = size, values, vtype
        self.handle = handles.new(self)

    def array(self, mode: str = "r") -> np.ndarray:
        dt = storage(cuda_type(self.vtype))
        return device.view(device.map_range(self.values, self.size * dt.itemsize, mode), dt,
                           self.size)


class DnMat:
    def __init__(self, rows, cols, ld, values, vtype, order) -> None:
        self.rows, self.cols, self.ld, self.values = rows, cols, ld, values
        self.vtype, self.order = vtype, order
        self.batch, self.stride = 1, 0
        self.handle = handles.new(self)

    def array(self, mode: str = "r") -> np.ndarray:
        dt = storage(cuda_type(self.vtype))
        outer, inner = (self.cols, self.rows) if self.order == COL else (self.rows, self.cols)
        count = (outer - 1) * self.ld + inner if outer and inner else 0
        flat = device.view(device.map_range(self.values, count * dt.itemsize, mode), dt, count)
        strides = (dt.itemsize, self.ld * dt.itemsize) if self.order == COL else \
            (self.ld * dt.itemsize, dt.itemsize)
        return np.lib.stride_tricks.as_strided(flat, shape=(self.rows, self.cols), strides=strides)


def _get(handle: int, kind, what: str):
    return lookup(handle, kind, "CUSPARSE_STATUS_NOT_INITIALIZED" if kind is Handle else INVALID,
                  f"a {what}")


@implements("cusparseCreate")
def create() -> int:
    return Handle().handle


@implements("cusparseDestroy")
def destroy(handle: int) -> None:
    _get(handle, Handle, "cuSPARSE handle")
    handles.drop(handle)


@implements("cusparseSetStream")
def set_stream(handle: int, stream: int) -> None:
    h = _get(handle, Handle, "cuSPARSE handle")
    device.resolve_stream(stream)
    h.stream = stream


@implements("cusparseGetStream")
def get_stream(handle: int) -> int:
    return _get(handle, Handle, "cuSPARSE handle").stream


@implements("cusparseSetPointerMode")
def set_pointer_mode(handle: int, mode: int) -> None:
    if mode not in (0, 1):
        raise Status(INVALID, f"pointer mode {mode}")
    _get(handle, Handle, "cuSPARSE handle").pointer_mode = mode


@implements("cusparseGetPointerMode")
def get_pointer_mode(handle: int) -> int:
    return _get(handle, Handle, "cuSPARSE handle").pointer_mode


@implements("cusparseGetVersion")
def get_version(handle: int) -> int:
    _get(handle, Handle, "cuSPARSE handle")
    return VERSION


@implements("cusparseGetProperty")
def get_property(kind: int) -> int:
    values = (K.get("CUSPARSE_VER_MAJOR", 12), K.get("CUSPARSE_VER_MINOR", 0),
              K.get("CUSPARSE_VER_PATCH", 0))
    if kind not in (0, 1, 2):
        raise Status(INVALID, f"libraryPropertyType {kind}")
    return values[kind]


@implements("cusparseGetErrorName")
def error_name(status: int) -> str:
    return table.status_names("cusparse").get(status, "CUSPARSE_STATUS_UNKNOWN")


@implements("cusparseGetErrorString")
def error_string(status: int) -> str:
    return error_name(status).removeprefix("CUSPARSE_STATUS_").replace("_", " ").lower()


def _check_types(idx: tuple[int, ...], vtype: int) -> None:
    for i in idx:
        if i not in INDEX:
            raise Status(INVALID, f"cusparseIndexType_t {i}")
    try:
        cuda_type(vtype)
    except KeyError:
        raise Status(INVALID, f"cudaDataType {vtype}") from None


@implements("cusparseCreateCsr", "cusparseCreateConstCsr")
def create_csr(rows, cols, nnz, offsets, columns, values, i0, i1, base, vtype) -> int:
    _check_types((i0, i1), vtype)
    if rows < 0 or cols < 0 or nnz < 0:
        raise Status(INVALID, f"rows={rows}, cols={cols}, nnz={nnz}")
    return SpMat(CSR, rows, cols, nnz, offsets, columns, values, i0, i1, base, vtype).handle


@implements("cusparseCreateCsc", "cusparseCreateConstCsc")
def create_csc(rows, cols, nnz, offsets, rows_ind, values, i0, i1, base, vtype) -> int:
    _check_types((i0, i1), vtype)
    return SpMat(CSC, rows, cols, nnz, offsets, rows_ind, values, i0, i1, base, vtype).handle


@implements("cusparseCreateCoo", "cusparseCreateConstCoo")
def create_coo(rows, cols, nnz, row_ind, col_ind, values, itype, base, vtype) -> int:
    _check_types((itype,), vtype)
    return SpMat(COO, rows, cols, nnz, row_ind, col_ind, values, itype, itype, base, vtype).handle


@implements("cusparseDestroySpMat")
def destroy_sp_mat(descr: int) -> None:
    _get(descr, SpMat, "sparse matrix descriptor")
    handles.drop(descr)


@implements("cusparseSpMatGetSize")
def sp_mat_get_size(descr: int) -> tuple[int, int, int]:
    m = _get(descr, SpMat, "sparse matrix descriptor")
    return m.rows, m.cols, m.nnz


@implements("cusparseSpMatGetFormat")
def sp_mat_get_format(descr: int) -> int:
    return _get(descr, SpMat, "sparse matrix descriptor").fmt


@implements("cusparseSpMatGetIndexBase")
def sp_mat_get_index_base(descr: int) -> int:
    return _get(descr, SpMat, "sparse matrix descriptor").base


@implements("cusparseSpMatGetValues")
def sp_mat_get_values(descr: int) -> int:
    return _get(descr, SpMat, "sparse matrix descriptor").values


@implements("cusparseSpMatSetValues")
def sp_mat_set_values(descr: int, values: int) -> None:
    _get(descr, SpMat, "sparse matrix descriptor").values = values


@implements("cusparseCsrGet")
def csr_get(descr: int):
    m = _get(descr, SpMat, "sparse matrix descriptor")
    return m.rows, m.cols, m.nnz, m.p0, m.p1, m.values, m.i0, m.i1, m.base, m.vtype


@implements("cusparseCsrSetPointers")
def csr_set_pointers(descr: int, offsets: int, columns: int, values: int) -> None:
    m = _get(descr, SpMat, "sparse matrix descriptor")
    m.p0, m.p1, m.values = offsets, columns, values


@implements("cusparseCreateDnVec", "cusparseCreateConstDnVec")
def create_dn_vec(size, values, vtype) -> int:
    _check_types((), vtype)
    return DnVec(size, values, vtype).handle


@implements("cusparseDestroyDnVec")
def destroy_dn_vec(descr: int) -> None:
    _get(descr, DnVec, "dense vector descriptor")
    handles.drop(descr)


@implements("cusparseDnVecGet")
def dn_vec_get(descr: int):
    v = _get(descr, DnVec, "dense vector descriptor")
    return v.size, v.values, v.vtype


@implements("cusparseDnVecGetValues")
def dn_vec_get_values(descr: int) -> int:
    return _get(descr, DnVec, "dense vector descriptor").values


@implements("cusparseDnVecSetValues")
def dn_vec_set_values(descr: int, values: int) -> None:
    _get(descr, DnVec, "dense vector descriptor").values = values


@implements("cusparseCreateDnMat", "cusparseCreateConstDnMat")
def create_dn_mat(rows, cols, ld, values, vtype, order) -> int:
    _check_types((), vtype)
    if order not in (COL, ROW):
        raise Status(INVALID, f"cusparseOrder_t {order}")
    if ld < max(1, rows if order == COL else cols):
        raise Status(INVALID, f"ld = {ld} too small")
    return DnMat(rows, cols, ld, values, vtype, order).handle


@implements("cusparseDestroyDnMat")
def destroy_dn_mat(descr: int) -> None:
    _get(descr, DnMat, "dense matrix descriptor")
    handles.drop(descr)


@implements("cusparseDnMatGet")
def dn_mat_get(descr: int):
    m = _get(descr, DnMat, "dense matrix descriptor")
    return m.rows, m.cols, m.ld, m.values, m.vtype, m.order


@implements("cusparseDnMatGetValues")
def dn_mat_get_values(descr: int) -> int:
    return _get(descr, DnMat, "dense matrix descriptor").values


@implements("cusparseDnMatSetValues")
def dn_mat_set_values(descr: int, values: int) -> None:
    _get(descr, DnMat, "dense matrix descriptor").values = values


def _op(m, op: int):
    if op == 0:
        return m
    return m.T if op == 1 else m.conj().T


def _zero_size(*args) -> int:
    return 0


implements("cusparseSpMV_bufferSize")(_zero_size)
implements("cusparseSpMM_bufferSize")(_zero_size)


@implements("cusparseSpMM_preprocess", "cusparseSpMV_preprocess")
def _preprocess(*args) -> None:
    _get(args[0], Handle, "cuSPARSE handle")


def _scalars(h: Handle, alpha: int, beta: int, compute: int):
    try:
        ct = np.dtype(cuda_type(compute))
    except (KeyError, TypeError):
        raise Unsupported(f"compute type {compute}") from None
    return (Scalar(h.pointer_mode, alpha, ct, "alpha", INVALID),
            Scalar(h.pointer_mode, beta, ct, "beta", INVALID), ct)


@implements("cusparseSpMV")
def spmv(handle, op, alpha, matA, vecX, beta, vecY, compute, alg, buffer) -> None:
    h = _get(handle, Handle, "cuSPARSE handle")
    a = _get(matA, SpMat, "sparse matrix descriptor")
    x = _get(vecX, DnVec, "dense vector descriptor")
    y = _get(vecY, DnVec, "dense vector descriptor")
    if op not in (0, 1, 2):
        raise Status(INVALID, f"opA {op}")
    rows, cols = (a.rows, a.cols) if op == 0 else (a.cols, a.rows)
    if x.size != cols or y.size != rows:
        raise Status(INVALID, f"op(A) is {rows}x{cols}, x has {x.size}, y has {y.size}")
    al, be, ct = _scalars(h, alpha, beta, compute)

    def run():
        m = _op(a.scipy(), op)
        yv = y.array("rw")
        b = be.get()
        res = al.get() * (m @ x.array().astype(ct, copy=False))
        yv[:] = res + b * yv if b != 0 else res
    device.launch(h.stream, "cusparseSpMV", run, [], INVALID)


@implements("cusparseSpMM")
def spmm(handle, opA, opB, alpha, matA, matB, beta, matC, compute, alg, buffer) -> None:
    h = _get(handle, Handle, "cuSPARSE handle")
    a = _get(matA, SpMat, "sparse matrix descriptor")
    b = _get(matB, DnMat, "dense matrix descriptor")
    c = _get(matC, DnMat, "dense matrix descriptor")
    if opA not in (0, 1, 2) or opB not in (0, 1, 2):
        raise Status(INVALID, f"opA {opA}, opB {opB}")
    ar, ac = (a.rows, a.cols) if opA == 0 else (a.cols, a.rows)
    br, bc = (b.rows, b.cols) if opB == 0 else (b.cols, b.rows)
    if ac != br or c.rows != ar or c.cols != bc:
        raise Status(INVALID, f"op(A) {ar}x{ac}, op(B) {br}x{bc}, C {c.rows}x{c.cols}")
    al, be, ct = _scalars(h, alpha, beta, compute)

    def run():
        m = _op(a.scipy(), opA)
        cv = c.array("rw")
        bv = be.get()
        res = al.get() * np.asarray(m @ _op(b.array(), opB).astype(ct, copy=False))
        cv[...] = res + bv * cv if bv != 0 else res
    device.launch(h.stream, "cusparseSpMM", run, [], INVALID)


@implements("cusparseCreateMatDescr")
def create_mat_descr() -> int:
    return handles.new({"type": 0, "fill": 0, "diag": 0, "base": 0})


def _descr(d: int) -> dict:
    return lookup(d, dict, INVALID, "a matrix descriptor")


@implements("cusparseDestroyMatDescr")
def destroy_mat_descr(d: int) -> None:
    _descr(d)
    handles.drop(d)


for _field, _set, _getter in (("type", "cusparseSetMatType", "cusparseGetMatType"),
                              ("fill", "cusparseSetMatFillMode", "cusparseGetMatFillMode"),
                              ("diag", "cusparseSetMatDiagType", "cusparseGetMatDiagType"),
                              ("base", "cusparseSetMatIndexBase", "cusparseGetMatIndexBase")):
    implements(_set)(lambda d, v, f=_field: _descr(d).__setitem__(f, v))
    implements(_getter)(lambda d, f=_field: _descr(d)[f])
