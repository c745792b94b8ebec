"""cuBLASLt (libcublasLt.so.13): cublasLtMatmul with its descriptors, layouts and
preferences, as PyTorch, CuPy and the CUDA samples use them.

D = epilogue(alpha op(A) op(B) + beta C [+ bias]) for column- or row-major layouts,
strided batches, the types cublasGemmEx takes (f32, f64, complex, f16/bf16 with f32
compute, TF32 in full f32, int8 with int32 compute) and the epilogues DEFAULT, RELU,
BIAS, RELU_BIAS, GELU and GELU_BIAS (GELU's tanh form, as cuBLASLt documents it). The
heuristic query answers one algorithm that needs no workspace. Descriptor attributes
are kept as the bytes the program set and read back the same; attributes cuport does
not act on (scale pointers for FP8, aux outputs, grouped layouts) answer
CUBLAS_STATUS_NOT_SUPPORTED at cublasLtMatmul, naming the attribute.
"""

from __future__ import annotations

import ctypes
import struct

import numpy as np

from cuport.driver import handles
from cuport.libs import device, table
from cuport.libs.blas_common import op
from cuport.libs.device import Range
from cuport.libs.dtypes import cuda_type, from_compute, storage, to_compute
from cuport.libs.gemm_ex import COMPUTE, LEGACY_COMPUTE
from cuport.libs.registry import Status, Unsupported, implements

K = table.constants("cublasLt")
INVALID = "CUBLAS_STATUS_INVALID_VALUE"
NOT_INITIALIZED = "CUBLAS_STATUS_NOT_INITIALIZED"

# attribute -> struct format of its value (what Get writes back, what Set must be given)
DESC_ATTRS = {
    K["CUBLASLT_MATMUL_DESC_COMPUTE_TYPE"]: "<i", K["CUBLASLT_MATMUL_DESC_SCALE_TYPE"]: "<i",
    K["CUBLASLT_MATMUL_DESC_POINTER_MODE"]: "<i", K["CUBLASLT_MATMUL_DESC_TRANSA"]: "<i",
    K["CUBLASLT_MATMUL_DESC_TRANSB"]: "<i", K["CUBLASLT_MATMUL_DESC_TRANSC"]: "<i",
    K["CUBLASLT_MATMUL_DESC_FILL_MODE"]: "<i", K["CUBLASLT_MATMUL_DESC_EPILOGUE"]: "<I",
    K["CUBLASLT_MATMUL_DESC_BIAS_POINTER"]: "<Q", K["CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE"]: "<q",
    K["CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER"]: "<Q",
    K["CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD"]: "<q",
    K["CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE"]: "<q",
    K["CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE"]: "<q",
    K["CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET"]: "<i",
    K["CUBLASLT_MATMUL_DESC_A_SCALE_POINTER"]: "<Q", K["CUBLASLT_MATMUL_DESC_B_SCALE_POINTER"]: "<Q",
    K["CUBLASLT_MATMUL_DESC_C_SCALE_POINTER"]: "<Q", K["CUBLASLT_MATMUL_DESC_D_SCALE_POINTER"]: "<Q",
    K["CUBLASLT_MATMUL_DESC_AMAX_D_POINTER"]: "<Q",
    K["CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE"]: "<i",
    K["CUBLASLT_MATMUL_DESC_FAST_ACCUM"]: "<b", K["CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE"]: "<i",
}
LAYOUT_ATTRS = {
    K["CUBLASLT_MATRIX_LAYOUT_TYPE"]: "<I", K["CUBLASLT_MATRIX_LAYOUT_ORDER"]: "<i",
    K["CUBLASLT_MATRIX_LAYOUT_ROWS"]: "<Q", K["CUBLASLT_MATRIX_LAYOUT_COLS"]: "<Q",
    K["CUBLASLT_MATRIX_LAYOUT_LD"]: "<q", K["CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT"]: "<i",
    K["CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET"]: "<q",
    K["CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET"]: "<q",
}
PREF_ATTRS = {
    K["CUBLASLT_MATMUL_PREF_SEARCH_MODE"]: "<I", K["CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES"]: "<Q",
    K["CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK"]: "<I",
    K["CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES"]: "<I",
    K["CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES"]: "<I",
    K["CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES"]: "<I",
    K["CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES"]: "<I",
    K["CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT"]: "<f", K["CUBLASLT_MATMUL_PREF_IMPL_MASK"]: "<Q",
}
# attributes whose non-default value cuport does not carry out
UNSUPPORTED_DESC = {K[n]: n for n in (
    "CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER", "CUBLASLT_MATMUL_DESC_A_SCALE_POINTER",
    "CUBLASLT_MATMUL_DESC_B_SCALE_POINTER", "CUBLASLT_MATMUL_DESC_C_SCALE_POINTER",
    "CUBLASLT_MATMUL_DESC_D_SCALE_POINTER", "CUBLASLT_MATMUL_DESC_AMAX_D_POINTER")}
EPILOGUES = {K["CUBLASLT_EPILOGUE_DEFAULT"]: (False, None), K["CUBLASLT_EPILOGUE_RELU"]: (False, "relu"),
             K["CUBLASLT_EPILOGUE_BIAS"]: (True, None), K["CUBLASLT_EPILOGUE_RELU_BIAS"]: (True, "relu"),
             K["CUBLASLT_EPILOGUE_GELU"]: (False, "gelu"),
             K["CUBLASLT_EPILOGUE_GELU_BIAS"]: (True, "gelu")}
EPILOGUE_NAMES = {v: k for k, v in K.items() if k.startswith("CUBLASLT_EPILOGUE_")}
COL, ROW = K["CUBLASLT_ORDER_COL"], K["CUBLASLT_ORDER_ROW"]
HOST_POINTERS, DEVICE_POINTERS = K["CUBLASLT_POINTER_MODE_HOST"], K["CUBLASLT_POINTER_MODE_DEVICE"]
HEURISTIC_RESULT = "<8QQIf4i"  # cublasLtMatmulHeuristicResult_t: algo, workspace, state, waves


class LtHandle:
    def __init__(self) -> None:
        self.context = device.ensure_context()
        self.handle = handles.new(self)


class Attributes:
    """A descriptor: attribute -> the bytes set (formats says each one's size and type)."""

    def __init__(self, formats: dict[int, str], values: dict[int, object]) -> None:
        self.formats = formats
        self.raw = {a: struct.pack(formats[a], v) for a, v in values.items()}
        self.handle = handles.new(self)

    def value(self, attr: int, default=0):
        raw = self.raw.get(attr)
        return default if raw is None else struct.unpack(self.formats[attr], raw)[0]

    def set(self, attr: int, buf: int, size: int, what: str) -> None:
        fmt = self.formats.get(attr)
        if fmt is None:
            raise Unsupported(f"{what} attribute {attr}")
        need = struct.calcsize(fmt)
        if buf == 0 or size != need:
            raise Status(INVALID, f"{what} attribute {attr} takes {need} bytes, "
                                  f"{size} given" + (" (buf is NULL)" if buf == 0 else ""))
        self.raw[attr] = ctypes.string_at(buf, need)

    def get(self, attr: int, buf: int, size: int, what: str) -> int:
        fmt = self.formats.get(attr)
        if fmt is None:
            raise Unsupported(f"{what} attribute {attr}")
        need = struct.calcsize(fmt)
        if size == 0 and buf == 0:
            return need  # the size query
        if buf == 0 or size < need:
            raise Status(INVALID, f"{what} attribute {attr} needs {need} bytes, {size} given")
        ctypes.memmove(buf, self.raw.get(attr, b"\0" * need), need)
        return need


def _get(h: int, cls, name: str):
    obj = handles.peek(h) if h else None
    if not isinstance(obj, cls) or (cls is Attributes and obj.formats is not {
            "desc": DESC_ATTRS, "layout": LAYOUT_ATTRS, "pref": PREF_ATTRS}[name]):
        raise Status(INVALID if cls is Attributes else NOT_INITIALIZED,
                     f"{hex(h)} is not a cuBLASLt {name}")
    return obj


# -- handle -----------------------------------------------------------------------------

@implements("cublasLtCreate")
def create() -> int:
    return LtHandle().handle


@implements("cublasLtDestroy")
def destroy(handle: int) -> None:
    _get(handle, LtHandle, "handle")
    handles.drop(handle)


@implements("cublasLtGetVersion")
def get_version() -> int:
    return table.constants("cublas")["CUBLAS_VERSION"]


@implements("cublasLtGetCudartVersion")
def get_cudart_version() -> int:
    return 13000


@implements("cublasLtGetProperty")
def get_property(kind: int) -> int:
    c = table.constants("cublas")
    if kind not in (0, 1, 2):
        raise Status(INVALID, f"libraryPropertyType {kind}")
    return (c["CUBLAS_VER_MAJOR"], c["CUBLAS_VER_MINOR"], c["CUBLAS_VER_PATCH"])[kind]


@implements("cublasLtLoggerSetLevel", "cublasLtLoggerSetMask")
def logger_set(value: int) -> None:
    """cuport's cuBLASLt has nothing to log (CUPORT_TRACE traces the calls)."""


@implements("cublasLtLoggerForceDisable")
def logger_disable() -> None:
    pass


# -- descriptors --------------------------------------------------------------------------

@implements("cublasLtMatmulDescCreate")
def desc_create(compute: int, scale_type: int) -> int:
    compute = LEGACY_COMPUTE.get(compute, compute)
    if compute not in COMPUTE:
        raise Status(INVALID, f"computeType {compute} is not a cublasComputeType_t")
    try:
        cuda_type(scale_type)
    except KeyError:
        raise Status(INVALID, f"scaleType {scale_type} is not a cudaDataType") from None
    return Attributes(DESC_ATTRS, {
        K["CUBLASLT_MATMUL_DESC_COMPUTE_TYPE"]: compute,
        K["CUBLASLT_MATMUL_DESC_SCALE_TYPE"]: scale_type,
        K["CUBLASLT_MATMUL_DESC_POINTER_MODE"]: HOST_POINTERS,
        K["CUBLASLT_MATMUL_DESC_TRANSA"]: 0, K["CUBLASLT_MATMUL_DESC_TRANSB"]: 0,
        K["CUBLASLT_MATMUL_DESC_TRANSC"]: 0,
        K["CUBLASLT_MATMUL_DESC_EPILOGUE"]: K["CUBLASLT_EPILOGUE_DEFAULT"],
        K["CUBLASLT_MATMUL_DESC_BIAS_POINTER"]: 0,
        K["CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE"]: 0,
        K["CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE"]: -1}).handle


@implements("cublasLtMatrixLayoutCreate")
def layout_create(dtype: int, rows: int, cols: int, ld: int) -> int:
    try:
        cuda_type(dtype)
    except KeyError:
        raise Status(INVALID, f"type {dtype} is not a cudaDataType") from None
    return Attributes(LAYOUT_ATTRS, {
        K["CUBLASLT_MATRIX_LAYOUT_TYPE"]: dtype, K["CUBLASLT_MATRIX_LAYOUT_ORDER"]: COL,
        K["CUBLASLT_MATRIX_LAYOUT_ROWS"]: rows, K["CUBLASLT_MATRIX_LAYOUT_COLS"]: cols,
        K["CUBLASLT_MATRIX_LAYOUT_LD"]: ld, K["CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT"]: 1,
        K["CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET"]: 0}).handle


@implements("cublasLtMatmulPreferenceCreate")
def pref_create() -> int:
    return Attributes(PREF_ATTRS, {K["CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES"]: 0}).handle


def _destroy(kind: str):
    def fn(h: int) -> None:
        _get(h, Attributes, kind)
        handles.drop(h)
    return fn


implements("cublasLtMatmulDescDestroy")(_destroy("desc"))
implements("cublasLtMatrixLayoutDestroy")(_destroy("layout"))
implements("cublasLtMatmulPreferenceDestroy")(_destroy("pref"))


def _setter(kind: str, what: str):
    def fn(h: int, attr: int, buf: int, size: int) -> None:
        _get(h, Attributes, kind).set(attr, buf, size, what)
    return fn


def _getter(kind: str, what: str):
    def fn(h: int, attr: int, buf: int, size: int) -> int:
        return _get(h, Attributes, kind).get(attr, buf, size, what)
    return fn


implements("cublasLtMatmulDescSetAttribute")(_setter("desc", "cublasLtMatmulDesc"))
implements("cublasLtMatrixLayoutSetAttribute")(_setter("layout", "cublasLtMatrixLayout"))
implements("cublasLtMatmulPreferenceSetAttribute")(_setter("pref", "cublasLtMatmulPreference"))
implements("cublasLtMatmulDescGetAttribute", optional_outs=("sizeWritten",))(
    _getter("desc", "cublasLtMatmulDesc"))
implements("cublasLtMatrixLayoutGetAttribute", optional_outs=("sizeWritten",))(
    _getter("layout", "cublasLtMatrixLayout"))
implements("cublasLtMatmulPreferenceGetAttribute", optional_outs=("sizeWritten",))(
    _getter("pref", "cublasLtMatmulPreference"))


# -- the product --------------------------------------------------------------------------

class Layout:
    """A matrix layout as numbers: type, order, shape, ld, batch."""

    def __init__(self, h: int, name: str) -> None:
        a = _get(h, Attributes, "layout")
        self.name = name
        self.code = a.value(K["CUBLASLT_MATRIX_LAYOUT_TYPE"])
        self.type = cuda_type(self.code)
        self.order = a.value(K["CUBLASLT_MATRIX_LAYOUT_ORDER"])
        self.rows = a.value(K["CUBLASLT_MATRIX_LAYOUT_ROWS"])
        self.cols = a.value(K["CUBLASLT_MATRIX_LAYOUT_COLS"])
        self.ld = a.value(K["CUBLASLT_MATRIX_LAYOUT_LD"])
        self.batch = a.value(K["CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT"], 1)
        self.stride = a.value(K["CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET"])
        if self.order not in (COL, ROW):
            raise Unsupported(f"{name}: the tiled order {self.order} (cuport has COL and ROW)")
        inner = self.rows if self.order == COL else self.cols
        if self.rows and self.cols and self.ld < inner:
            raise Status(INVALID, f"{name}: ld = {self.ld} < {inner}")

    @property
    def itemsize(self) -> int:
        return storage(self.type).itemsize

    def one_bytes(self) -> int:
        if not self.rows or not self.cols:
            return 0
        outer, inner = (self.cols, self.rows) if self.order == COL else (self.rows, self.cols)
        return ((outer - 1) * self.ld + inner) * self.itemsize

    def bytes(self) -> int:
        one = self.one_bytes()
        return 0 if one == 0 else one + (self.batch - 1) * abs(self.stride) * self.itemsize

    def view(self, address: int, b: int) -> np.ndarray:
        """Batch b as a (rows, cols) array over host memory."""
        dt = storage(self.type)
        base = address + b * self.stride * dt.itemsize
        flat = device.view(base, dt, self.one_bytes() // dt.itemsize)
        strides = (dt.itemsize, self.ld * dt.itemsize) if self.order == COL else \
            (self.ld * dt.itemsize, dt.itemsize)
        return np.lib.stride_tricks.as_strided(flat, shape=(self.rows, self.cols), strides=strides)


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


@implements("cublasLtMatmul")
def matmul(handle, desc_h, alpha, A, adesc, B, bdesc, beta, C, cdesc, D, ddesc, algo, workspace,
           workspace_size, stream):
    _get(handle, LtHandle, "handle")
    desc = _get(desc_h, Attributes, "desc")
    la, lb, lc, ld = (Layout(h, n) for h, n in ((adesc, "Adesc"), (bdesc, "Bdesc"),
                                                 (cdesc, "Cdesc"), (ddesc, "Ddesc")))
    for attr, name in UNSUPPORTED_DESC.items():
        if desc.value(attr):
            raise Unsupported(f"cublasLtMatmul with {name} set")
    ta = desc.value(K["CUBLASLT_MATMUL_DESC_TRANSA"])
    tb = desc.value(K["CUBLASLT_MATMUL_DESC_TRANSB"])
    if desc.value(K["CUBLASLT_MATMUL_DESC_TRANSC"]):
        raise Unsupported("cublasLtMatmul with TRANSC (cuBLASLt does not support it either)")
    m, k = (la.rows, la.cols) if ta == 0 else (la.cols, la.rows)
    kb, n = (lb.rows, lb.cols) if tb == 0 else (lb.cols, lb.rows)
    if k != kb or (lc.rows, lc.cols) != (m, n) or (ld.rows, ld.cols) != (m, n):
        raise Status(INVALID, f"shapes: op(A) {m}x{k}, op(B) {kb}x{n}, C {lc.rows}x{lc.cols}, "
                              f"D {ld.rows}x{ld.cols}")
    batch = ld.batch
    for lay in (la, lb, lc):
        if lay.batch not in (1, batch):
            raise Status(INVALID, f"{lay.name}: batch count {lay.batch}, D's is {batch}")
    compute = desc.value(K["CUBLASLT_MATMUL_DESC_COMPUTE_TYPE"])
    kind, _ = COMPUTE[compute]
    scale = storage(cuda_type(desc.value(K["CUBLASLT_MATMUL_DESC_SCALE_TYPE"])))
    epilogue = desc.value(K["CUBLASLT_MATMUL_DESC_EPILOGUE"])
    if epilogue not in EPILOGUES:
        raise Unsupported(f"the epilogue {EPILOGUE_NAMES.get(epilogue, epilogue)}")
    has_bias, activation = EPILOGUES[epilogue]
    bias = desc.value(K["CUBLASLT_MATMUL_DESC_BIAS_POINTER"])
    bias_code = desc.value(K["CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE"])
    bias_type = ld.type if bias_code in (-1, 0xFFFFFFFF) else cuda_type(bias_code)
    bias_stride = desc.value(K["CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE"])
    if has_bias and bias == 0:
        raise Status(INVALID, "a bias epilogue with BIAS_POINTER NULL")
    mode = desc.value(K["CUBLASLT_MATMUL_DESC_POINTER_MODE"])
    if mode not in (HOST_POINTERS, DEVICE_POINTERS):
        raise Unsupported(f"pointer mode {mode} (vectors of alpha)")
    if alpha == 0 or beta == 0:
        raise Status(INVALID, "alpha or beta is NULL")
    host_scalars = None
    if mode == HOST_POINTERS:
        host_scalars = (device.read_scalar(alpha, scale), device.read_scalar(beta, scale))
    work = {"f64": np.float64, "i32": np.float64, "f32": np.float32}[kind]
    if np.dtype(scale).kind == "c" or any(storage(t.type).kind == "c" for t in (la, lb, ld)):
        work = np.complex128 if kind == "f64" else np.complex64
    if batch == 0 or m == 0 or n == 0:
        return
    in_place = C == D

    def run(a, b, c, d, bias_address=None):
        av, bv = host_scalars if host_scalars is not None else (
            device.read_scalar(device.map_range(alpha, scale.itemsize), scale),
            device.read_scalar(device.map_range(beta, scale.itemsize), scale))
        for i in range(batch):
            am = to_compute(la.view(a, i if la.batch > 1 else 0), la.type, work)
            bm = to_compute(lb.view(b, i if lb.batch > 1 else 0), lb.type, work)
            res = (op(am, ta) @ op(bm, tb)) * work(av)
            if bv != 0:
                src = d if in_place else c
                res = res + work(bv) * to_compute(lc.view(src, i if lc.batch > 1 else 0),
                                                 lc.type, work)
            if has_bias:
                vec = device.view(bias_address + i * bias_stride * storage(bias_type).itemsize,
                                  storage(bias_type), m)
                res = res + to_compute(vec, bias_type, work)[:, None]
            if activation == "relu":
                res = np.maximum(res, 0)
            elif activation == "gelu":
                res = _gelu(res)
            ld.view(d, i)[...] = from_compute(res, ld.type)

    ranges = [(Range(A, la.bytes()), "A"), (Range(B, lb.bytes()), "B"),
              (Range(C, lc.bytes()), "C"), (Range(D, ld.bytes(), "rw"), "D")]
    if has_bias:
        ranges.append((Range(bias, (m + (batch - 1) * abs(bias_stride))
                             * storage(bias_type).itemsize), "bias"))
    device.launch(stream, "cublasLtMatmul", run, ranges, INVALID)


def _one_algorithm(handle, desc_h, layouts, results) -> None:
    _get(handle, LtHandle, "handle")
    _get(desc_h, Attributes, "desc")
    for h, n in zip(layouts, ("Adesc", "Bdesc", "Cdesc", "Ddesc"), strict=True):
        Layout(h, n)
    if results == 0:
        raise Status(INVALID, "the result array is NULL")
    ctypes.memmove(results, struct.pack(HEURISTIC_RESULT, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0,
                                        0, 0, 0, 0), struct.calcsize(HEURISTIC_RESULT))


@implements("cublasLtMatmulAlgoGetHeuristic")
def get_heuristic(handle, desc_h, adesc, bdesc, cdesc, ddesc, pref, requested, results) -> int:
    """One algorithm, needing no workspace: cuport's is the only one."""
    _get(pref, Attributes, "pref")
    if requested <= 0:
        raise Status(INVALID, f"requestedAlgoCount = {requested}")
    _one_algorithm(handle, desc_h, (adesc, bdesc, cdesc, ddesc), results)
    return 1


@implements("cublasLtMatmulAlgoCheck")
def algo_check(handle, desc_h, adesc, bdesc, cdesc, ddesc, algo, result) -> None:
    _one_algorithm(handle, desc_h, (adesc, bdesc, cdesc, ddesc), result)


@implements("cublasLtHeuristicsCacheGetCapacity")
def cache_capacity() -> int:
    return 0


@implements("cublasLtHeuristicsCacheSetCapacity")
def set_cache_capacity(capacity: int) -> None:
    pass

