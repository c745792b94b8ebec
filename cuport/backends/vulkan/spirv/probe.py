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
