"""LLVM types for PTX types, and small constant helpers.

Registers are stored as integer bit containers of their declared width (`.f32` → i32,
`.pred` → i1); an instruction that computes in floating point bitcasts on the way in and
out, which LLVM folds away. Values of a warp are `<32 x T>` vectors; uniform values are
plain scalars.
"""

from __future__ import annotations

import struct

from llvmlite import ir as ll

from ..ptx.ir import TYPE_BITS

#: threads of a PTX warp: the width of a varying value on the CPU backend, a subgroup on a GPU
WARP = 32

I1 = ll.IntType(1)
I8 = ll.IntType(8)
I16 = ll.IntType(16)
I32 = ll.IntType(32)
I64 = ll.IntType(64)
I128 = ll.IntType(128)
F16 = ll.HalfType()
F32 = ll.FloatType()
F64 = ll.DoubleType()
PTR = ll.PointerType()
VOID = ll.VoidType()


def int_type(bits: int) -> ll.IntType:
    return ll.IntType(bits)


def vec(t: ll.Type, n: int = WARP) -> ll.VectorType:
    return ll.VectorType(t, n)


_VECTOR_CONSTANTS: dict[tuple, ll.Constant] = {}
_VECTOR_CONSTANTS_KEPT = 1 << 14


def vector_constant(elem: ll.Type, values, n: int = WARP) -> ll.Constant:
    """ll.Constant(vec(elem, n), values) (a list of n numbers, None for zeros, ll.Undefined),
    one object per distinct constant: llvmlite writes a constant's text once per object, and
    the CPU backend's lane vectors and splats, made anew at every use, took 2.3 s of the 2.4
    that writing HeCBench quicksort's lqsort_kernel (144,000 lines of IR) cost."""
    if values is None or values is ll.Undefined:
        vkey = values
    elif isinstance(elem, ll.IntType):
        vkey = tuple(values)
    else:  # (by bits: -0.0 == 0.0)
        vkey = tuple(struct.pack("<d", v) if isinstance(v, float) else v for v in values)
    key = (str(elem), n, vkey)
    c = _VECTOR_CONSTANTS.get(key)
    if c is None:
        if len(_VECTOR_CONSTANTS) >= _VECTOR_CONSTANTS_KEPT:
            _VECTOR_CONSTANTS.clear()
        c = _VECTOR_CONSTANTS[key] = ll.Constant(ll.VectorType(elem, n), values)
    return c


def bits_type(ptype: str) -> ll.Type:
    """The integer container that holds a value of PTX type `ptype`."""
    return ll.IntType(TYPE_BITS[ptype])


def value_type(ptype: str) -> ll.Type:
    """The LLVM type arithmetic on `ptype` is done in."""
    if ptype == "f32":
        return F32
    if ptype == "f64":
        return F64
    if ptype == "f16":
        return F16
    return ll.IntType(TYPE_BITS[ptype])


def scalar_of(t: ll.Type) -> ll.Type:
    return t.element if isinstance(t, ll.VectorType) else t


def is_vector(v) -> bool:
    return isinstance(v.type, ll.VectorType)


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def f16_bits_from_f64(x: float) -> int:
    """Round a double to half precision (IEEE round-to-nearest-even), as cvt.rn.f16 does."""
    import numpy as np

    return int(np.array([x], dtype=np.float64).astype(np.float16).view(np.uint16)[0])


def mangle(t: ll.Type) -> str:
    """LLVM's overloaded-intrinsic suffix for a type (`<32 x float>` → `v32f32`)."""
    if isinstance(t, ll.VectorType):
        return f"v{t.count}{mangle(t.element)}"
    if isinstance(t, ll.IntType):
        return f"i{t.width}"
    if isinstance(t, ll.FloatType):
        return "f32"
    if isinstance(t, ll.DoubleType):
        return "f64"
    if isinstance(t, ll.HalfType):
        return "f16"
    if isinstance(t, ll.PointerType):
        return "p0"
    raise TypeError(f"cannot mangle {t}")


def opaque_alloca(b: ll.IRBuilder, t: ll.Type, name: str = "", align: int = 0) -> ll.Value:
    """An alloca used as untyped memory (byte offsets through GEP on i8)."""
    a = b.alloca(t, name=name)
    if align:
        a.align = align
    a.type = PTR
    return a
