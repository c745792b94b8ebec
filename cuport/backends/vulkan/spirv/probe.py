"""A probe of the device's floating point that the backend runs once per device: whether
GLSL's Fma rounds once (FloatModes.fused_fma). Vulkan allows it to round twice; lavapipe's
does, NVIDIA's does not.

    sh = fma_probe_shader()                 # push block: fma_probe_push(address of 16 bytes)
    ... dispatch one workgroup, read the 16 bytes back ...
    fused32, fused64 = fma_probe_fused(data)

The operands come from push constants, so no compiler can fold the Fma with its own rules.
"""

from __future__ import annotations

import struct

from llvmlite import ir as ll

from .translate import FloatModes, Shader, translate

# (1 + 2^-12)^2 - (1 + 2^-11) = 2^-24 exactly; rounded first, the product is 1 + 2^-11
_F32 = (1 + 2**-12, 1 + 2**-12, -(1 + 2**-11))
# (1 + 2^-27)^2 - (1 + 2^-26) = 2^-54 exactly; rounded first, the product is 1 + 2^-26
_F64 = (1 + 2**-27, 1 + 2**-27, -(1 + 2**-26))


def fma_probe_shader() -> Shader:
    m = ll.Module()
    fn = ll.Function(m, ll.FunctionType(ll.VoidType(), []), "fma_probe")
    b = ll.IRBuilder(fn.append_basic_block())
    i32, i64, f32, f64 = ll.IntType(32), ll.IntType(64), ll.FloatType(), ll.DoubleType()

    def push(t, off):
        f = m.globals.get(f"spv.push.{t}") or ll.Function(m, ll.FunctionType(t, [i32]), f"spv.push.{t}")
        return b.call(f, [ll.Constant(i32, off)])

    out = b.inttoptr(push(i64, 0), ll.PointerType())
    r32 = _native_fma(m, b, f32, [push(f32, 8), push(f32, 12), push(f32, 16)])
    r64 = _native_fma(m, b, f64, [push(f64, 24), push(f64, 32), push(f64, 40)])
    b.store(b.zext(b.bitcast(r32, i32), i64), out).align = 8
    b.store(b.bitcast(r64, i64), b.gep(out, [ll.Constant(i32, 1)], source_etype=i64)).align = 8
    b.ret_void()
    return translate(m, "fma_probe", (1, 1, 1), FloatModes(fused_fma=True))


def _native_fma(m, b, t, args):
    name = f"llvm.fma.{'f32' if isinstance(t, ll.FloatType) else 'f64'}"
    f = m.globals.get(name) or ll.Function(m, ll.FunctionType(t, [t] * 3), name)
    return b.call(f, args)


def fma_probe_push(out_address: int) -> bytes:
    return struct.pack("<Qfff4xddd", out_address, *_F32, *_F64)


def fma_probe_fused(data: bytes) -> tuple[bool, bool]:
    """(f32 Fma fused, f64 Fma fused) from the probe's 16 bytes of output."""
    r32, r64 = struct.unpack("<QQ", bytes(data[:16]))
    f32 = struct.unpack("<f", struct.pack("<I", r32 & 0xFFFFFFFF))[0]
    f64 = struct.unpack("<d", struct.pack("<Q", r64))[0]
    return f32 == 2.0**-24, f64 == 2.0**-54


# -- subnormals ----------------------------------------------------------------------------------
# f32 operations whose exact results involve subnormals, on operands from push constants:
# (a, b, c) = (2^-140, 1.5, 1.5 * 2^-126), d = -2^-126; the probe stores the bits of
# a + a, a * b, fma(a, b, a), c + d (a subnormal sum of normal numbers), a > 0, -a, and
# a converted to f64. A device that keeps subnormals gives SUBNORMAL_EXPECTED.
_SUB_IN = (2.0 ** -140, 1.5, 1.5 * 2.0 ** -126, -(2.0 ** -126))
SUBNORMAL_EXPECTED = (0x00000400, 0x00000300, 0x00000500, 0x00400000, 1, 0x80000200, 0x3730000000000000)


def subnormal_probe_shader() -> Shader:
    """The probe, translated with no emulation and no float-control modes (so what it
    measures is the device's own f32 arithmetic)."""
    m = ll.Module()
    fn = ll.Function(m, ll.FunctionType(ll.VoidType(), []), "subnormal_probe")
    b = ll.IRBuilder(fn.append_basic_block())
    i32, i64, f32, f64 = ll.IntType(32), ll.IntType(64), ll.FloatType(), ll.DoubleType()

    def push(t, off):
        f = m.globals.get(f"spv.push.{t}") or ll.Function(m, ll.FunctionType(t, [i32]), f"spv.push.{t}")
        return b.call(f, [ll.Constant(i32, off)])

    out = b.inttoptr(push(i64, 0), ll.PointerType())
    a, x, c, d = (push(f32, 8 + 4 * k) for k in range(4))
    words = [b.fadd(a, a), b.fmul(a, x), _native_fma(m, b, f32, [a, x, a]), b.fadd(c, d),
             b.zext(b.fcmp_ordered(">", a, ll.Constant(f32, 0.0)), i32), b.fneg(a)]
    for k, w in enumerate(words):
        v = w if w.type == i32 else b.bitcast(w, i32)
        b.store(v, b.gep(out, [ll.Constant(i32, k)], source_etype=i32)).align = 4
    b.store(b.bitcast(b.fpext(a, f64), i64), b.gep(out, [ll.Constant(i32, 4)], source_etype=i64)).align = 8
    b.ret_void()
    return translate(m, "subnormal_probe", (1, 1, 1), FloatModes(fused_fma=True, signed_zero_inf_nan=()))


def subnormal_probe_push(out_address: int) -> bytes:
    return struct.pack("<Q4f", out_address, *_SUB_IN)


def subnormal_probe_flushes(data: bytes) -> bool:
    """Whether the device's f32 arithmetic lost a subnormal (from the probe's 40 bytes)."""
    got = struct.unpack("<6I", bytes(data[:24])) + struct.unpack("<Q", bytes(data[32:40]))
    return tuple(got) != SUBNORMAL_EXPECTED
