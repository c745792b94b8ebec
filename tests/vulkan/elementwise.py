"""Test support: one-instruction kernels over arrays. `apply(build, inputs, out_dtype)` makes a
kernel in which invocation i loads inputs[k][i], computes build(kernel, values) and stores
it to out[i]; it is translated, validated and run on the device."""

from __future__ import annotations

import numpy as np
from llvmlite import ir as ll
from spvrun import Ptr, on_device, run
from spvtools import F16, F32, F64, I8, I16, I32, I64, Kernel, translate_valid

LOCAL = 64

_LL = {np.dtype(np.int8): I8, np.dtype(np.uint8): I8, np.dtype(np.int16): I16, np.dtype(np.uint16): I16,
       np.dtype(np.int32): I32, np.dtype(np.uint32): I32, np.dtype(np.int64): I64,
       np.dtype(np.uint64): I64, np.dtype(np.float16): F16, np.dtype(np.float32): F32,
       np.dtype(np.float64): F64, np.dtype(np.bool_): I8}


def lltype(dtype) -> ll.Type:
    return _LL[np.dtype(dtype)]


def apply(build, inputs: list[np.ndarray], out_dtype, device_modes: bool = True, **translate_kw) -> np.ndarray:
    n = len(inputs[0])
    k = Kernel("ew")
    b = k.b
    ptrs = [k.push_ptr(8 * j) for j in range(len(inputs) + 1)]
    count = k.push(I32, 8 * (len(inputs) + 1))
    i = k.global_id(LOCAL)
    body, done = k.block("body"), k.block("done")
    b.cbranch(b.icmp_unsigned("<", i, count), body, done)
    b.position_at_end(body)
    vals = []
    for p, arr in zip(ptrs, inputs, strict=False):
        t = lltype(arr.dtype)
        vals.append(b.load(k.element(p, i, t), typ=t, align=arr.dtype.itemsize))
    r = build(k, vals)
    ot = lltype(out_dtype)
    if isinstance(r.type, ll.IntType) and r.type.width == 1:
        r = b.zext(r, ot)
    b.store(r, k.element(ptrs[-1], i, ot)).align = np.dtype(out_dtype).itemsize
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    if device_modes:  # the device's subnormal handling, as the backend would translate for it
        translate_kw["float_modes"] = on_device(translate_kw.get("float_modes"))
    sh = translate_valid(k, (LOCAL, 1, 1), **translate_kw)
    out = np.zeros(n, dtype=out_dtype)
    res = run(sh, ((n + LOCAL - 1) // LOCAL, 1, 1), [Ptr(a) for a in inputs] + [Ptr(out), ("I", n)])
    return res[-1]


def same_floats(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Elementwise: equal bits, or both NaN (payloads are not compared)."""
    ib = {2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
    return (got.view(ib) == want.view(ib)) | (np.isnan(got) & np.isnan(want))


def special_f32() -> np.ndarray:
    v = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.0, 1e-45, -1e-45, 1.17549435e-38, 1.1754942e-38,
         3.4028235e38, -3.4028235e38, np.inf, -np.inf, np.nan, 2**24, 2**24 + 2, 2**31, -(2**31),
         2**32, 0.1, 1 / 3, 16777215.0, 8388608.5, 1e10, -1e10]
    return np.array(v, dtype=np.float32)


def special_f64() -> np.ndarray:
    v = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 5e-324, -5e-324, 2.2250738585072014e-308,
         2.225073858507201e-308, 1.7976931348623157e308, -1.7976931348623157e308, np.inf,
         -np.inf, np.nan, 2**53, 2**53 + 2, 2**63, -(2**63), 2**64, 0.1, 1 / 3, 4503599627370495.5]
    return np.array(v, dtype=np.float64)


def pairs(values: np.ndarray, rng: np.random.Generator, extra: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of `values`, plus `extra` random pairs of the same dtype (random bits)."""
    a, b = np.meshgrid(values, values)
    ib = {2: np.uint16, 4: np.uint32, 8: np.uint64}[values.dtype.itemsize]
    ra = rng.integers(0, np.iinfo(ib).max, extra, dtype=ib, endpoint=True).view(values.dtype)
    rb = rng.integers(0, np.iinfo(ib).max, extra, dtype=ib, endpoint=True).view(values.dtype)
    return np.concatenate([a.ravel(), ra]), np.concatenate([b.ravel(), rb])
