"""Types, constants and bit containers of PTX values: the part of an emitter that is the
same for every backend.

Registers hold integer bit containers of their declared width (`.f32` -> i32, `.pred` ->
i1); arithmetic bitcasts on the way in and out. In vector mode (`self.vec`, the CPU
backend's warp-wide code) a value is a `<32 x T>` vector; otherwise a scalar.
"""

from __future__ import annotations

import struct

from llvmlite import ir as ll

from ..ptx import ir
from ..ptx.errors import UnsupportedError
from ..ptx.ir import TYPE_BITS
from .types import I32, WARP, bits_type, f16_bits_from_f64, value_type, vec, vector_constant


class Values:
    """Mixin for emitters: needs `self.b` (IRBuilder), `self.vec` and `self.error`."""

    b: ll.IRBuilder
    vec: bool

    def nan_deferred(self, ins: ir.Instr) -> bool:
        """Whether the f32 result of `ins` may keep the host's NaN, the backend making it
        canonical where a read shows the payload (passes/nan_payloads.py). By default every
        NaN is made canonical where it is written."""
        return False

    def ty(self, ptype: str) -> ll.Type:
        """The value type of `ptype` in the current mode (vector of 32 when varying)."""
        t = value_type(ptype)
        return vec(t) if self.vec else t

    def bty(self, ptype: str) -> ll.Type:
        t = bits_type(ptype)
        return vec(t) if self.vec else t

    def splat(self, v: ll.Value, n: int = WARP) -> ll.Value:
        if isinstance(v, ll.Constant) and not isinstance(v.type, ll.VectorType):
            return vector_constant(v.type, [v.constant] * n, n) if v.constant is not None else self._splat_dyn(v, n)
        return self._splat_dyn(v, n)

    def _splat_dyn(self, v: ll.Value, n: int) -> ll.Value:
        b = self.b
        undef = vector_constant(v.type, ll.Undefined, n)
        ins = b.insert_element(undef, v, ll.Constant(I32, 0))
        return b.shuffle_vector(ins, undef, vector_constant(I32, [0] * n, n))

    def const(self, ptype: str, value) -> ll.Value:
        """A constant of PTX type `ptype` (int, or float for float types) in the current mode."""
        t = value_type(ptype)
        if isinstance(t, ll.IntType):
            c = ll.Constant(t, int(value) & ((1 << t.width) - 1) if t.width > 1 else int(bool(value)))
        else:
            c = ll.Constant(t, float(value))
        return vector_constant(t, [c.constant] * WARP) if self.vec else c

    def const_bits(self, ptype: str, bits: int) -> ll.Value:
        """A constant given by its bit pattern, as the value type."""
        t = bits_type(ptype)
        c = ll.Constant(t, bits & ((1 << t.width) - 1))
        if self.vec:
            c = vector_constant(t, [c.constant] * WARP)
        vt = value_type(ptype)
        return c if vt == t else self.b.bitcast(c, vec(vt) if self.vec else vt)

    def to_value(self, bits: ll.Value, ptype: str) -> ll.Value:
        vt = value_type(ptype)
        if vt == bits_type(ptype):
            return bits
        return self.b.bitcast(bits, vec(vt) if self.vec else vt)

    def to_bits(self, v: ll.Value, ptype: str) -> ll.Value:
        bt = bits_type(ptype)
        if isinstance(v.type, (ll.IntType,)) or (isinstance(v.type, ll.VectorType) and isinstance(v.type.element, ll.IntType)):
            return v
        return self.b.bitcast(v, vec(bt) if self.vec else bt)

    def const_int(self, width: int, value: int) -> ll.Value:
        t = ll.IntType(width)
        c = ll.Constant(t, value & ((1 << width) - 1))
        return vector_constant(t, [c.constant] * WARP) if self.vec else c

    def _resize(self, v: ll.Value, want: ll.IntType, signed: bool) -> ll.Value:
        have = v.type.element if isinstance(v.type, ll.VectorType) else v.type
        if have == want:
            return v
        tgt = vec(want, v.type.count) if isinstance(v.type, ll.VectorType) else want
        if not isinstance(have, ll.IntType):
            raise self.error("internal: resize of a non-integer value")
        if have.width > want.width:
            return self.b.trunc(v, tgt)
        return self.b.sext(v, tgt) if signed else self.b.zext(v, tgt)


def float_imm_bits(op: ir.FImm, ptype: str) -> int:
    """Bits of a floating-point immediate as an operand of type `ptype`."""
    bits = TYPE_BITS[ptype]
    if op.width == bits:
        return op.bits
    if bits == 32:
        return struct.unpack("<I", struct.pack("<f", op.value))[0]
    if bits == 64:
        return struct.unpack("<Q", struct.pack("<d", op.value))[0]
    if bits == 16:
        if ptype == "bf16":
            b32 = struct.unpack("<I", struct.pack("<f", op.value))[0]
            return ((b32 + 0x7FFF + ((b32 >> 16) & 1)) >> 16) & 0xFFFF
        return f16_bits_from_f64(op.value)
    raise UnsupportedError(f"a float immediate for type .{ptype}")
