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
from collections.abc import Callable

from llvmlite import ir as ll

from .translate import FloatModes, Shader, translate

# (1 + 2^-12)^2 - (1 + 2^-11) = 2^-24 exactly; rounded first, the product is 1 + 2^-11
_F32 = (1 + 2**-12, 1 + 2**-12, -(1 + 2**-11))
# (1 + 2^-27)^2 - (1 + 2^-26) = 2^-54 exactly; rounded first, the product is 1 + 2^-26
_F64 = (1 + 2**-27, 1 + 2**-27, -(1 + 2**-26))


i32, i64, f32, f64 = ll.IntType(32), ll.IntType(64), ll.FloatType(), ll.DoubleType()


def _probe_function(name: str) -> tuple[ll.Module, ll.IRBuilder, Callable[[ll.Type, int], ll.Value], ll.Value]:
    """A probe's module and the builder of its one function `name`, with the reader of a
    push constant (its type, its byte offset) and the output address (push constant 0)."""
    m = ll.Module()
    fn = ll.Function(m, ll.FunctionType(ll.VoidType(), []), name)
    b = ll.IRBuilder(fn.append_basic_block())

    def push(t: ll.Type, off: int) -> ll.Value:
        f = m.globals.get(f"spv.push.{t}") or ll.Function(m, ll.FunctionType(t, [i32]), f"spv.push.{t}")
        return b.call(f, [ll.Constant(i32, off)])

    return m, b, push, b.inttoptr(push(i64, 0), ll.PointerType())


def fma_probe_shader() -> Shader:
    m, b, push, out = _probe_function("fma_probe")
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
# a converted to f64, then min(a, c) and max(a, -c). A device that keeps subnormals gives
# SUBNORMAL_EXPECTED and MINMAX_EXPECTED.
_SUB_IN = (2.0 ** -140, 1.5, 1.5 * 2.0 ** -126, -(2.0 ** -126))
SUBNORMAL_EXPECTED = (0x00000400, 0x00000300, 0x00000500, 0x00400000, 1, 0x80000200, 0x3730000000000000)
MINMAX_EXPECTED = (0x00000400, 0x00000400)


def subnormal_probe_shader(preserve: bool = False) -> Shader:
    """The probe, translated with no emulation (so what it measures is the device's own f32
    arithmetic), and with the DenormPreserve mode for f32 where `preserve` (NVIDIA's driver
    does not advertise the mode for f32 but honours it: measured on an H100, driver 580)."""
    m, b, push, out = _probe_function("subnormal_probe")
    a, x, c, d = (push(f32, 8 + 4 * k) for k in range(4))
    words = [b.fadd(a, a), b.fmul(a, x), _native_fma(m, b, f32, [a, x, a]), b.fadd(c, d),
             b.zext(b.fcmp_ordered(">", a, ll.Constant(f32, 0.0)), i32), b.fneg(a)]
    for k, w in enumerate(words):
        v = w if w.type == i32 else b.bitcast(w, i32)
        b.store(v, b.gep(out, [ll.Constant(i32, k)], source_etype=i32)).align = 4
    b.store(b.bitcast(b.fpext(a, f64), i64), b.gep(out, [ll.Constant(i32, 4)], source_etype=i64)).align = 8
    for k, (name, y) in enumerate((("minnum", c), ("maxnum", b.fneg(c)))):
        f = ll.Function(m, ll.FunctionType(f32, [f32, f32]), f"llvm.{name}.f32")
        r = b.bitcast(b.call(f, [a, y]), i32)
        b.store(r, b.gep(out, [ll.Constant(i32, 10 + k)], source_etype=i32)).align = 4
    b.ret_void()
    modes = FloatModes(fused_fma=True, signed_zero_inf_nan=(), denorm_preserve=(32,) if preserve else ())
    return translate(m, "subnormal_probe", (1, 1, 1), modes)


def subnormal_probe_push(out_address: int) -> bytes:
    return struct.pack("<Q4f", out_address, *_SUB_IN)


def subnormal_probe_flushes(data: bytes) -> tuple[bool, bool, bool]:
    """(whether the device's f32 arithmetic other than Fma lost a subnormal, whether its Fma
    did, whether its min/max did), from the probe's 48 bytes."""
    got = struct.unpack("<6I", bytes(data[:24])) + struct.unpack("<Q", bytes(data[32:40]))
    fma = 2  # (the word of fma(a, b, a))
    arith = any(g != w for k, (g, w) in enumerate(zip(got, SUBNORMAL_EXPECTED, strict=True)) if k != fma)
    return (arith, got[fma] != SUBNORMAL_EXPECTED[fma],
            struct.unpack("<2I", bytes(data[40:48])) != MINMAX_EXPECTED)


# -- contraction ---------------------------------------------------------------------------------
# fma.rn.f32 as the "contract" variants emit it (an OpFMul and an OpFAdd without NoContraction,
# which a driver may fuse: FloatModes.fma32), with f32 DenormPreserve declared. Five words, each
# right only where the pair is fused into one rounding that keeps subnormals:
#   0  pair(p, q, r), fma_probe's case: 2^-24 fused, 0 rounded twice;
#   1  pair(a, x, a) with a = 2^-140: subnormal operands and result;
#   2  a product's error as libdevice computes it, pair(p, p, -(p * p)) with p * p an OpFMul
#      with NoContraction: a driver that merges the pair's multiply with that identical rounded
#      one gives 0 (NVIDIA's 580 does: then only kernels without a rounded f32 product may use
#      pairs, "contract-alone", translate.rounded_f32_products);
#   3  pair(p, q, r2), a second pair of word 0's product (merged multiplies must still fuse);
#   4  acc = r, then twice acc = pair(p, q, acc) in a loop whose trip count is a push constant
#      (a multiply hoisted out of the loop must still fuse).
# p = q = 1 + 2^-12, r = -(1 + 2^-11), r2 = r - 2^-23.
_CONTRACT_IN = (*_F32, 2.0 ** -140, 1.5, -(1 + 2**-11) - 2**-23)
CONTRACT_EXPECTED = (0x33800000, 0x00000500, 0x33800000, 0xB3800000, 0x3F801001)


def contract_probe_shader() -> Shader:
    m, b, push, out = _probe_function("contract_probe")
    p, q, r, a, x, r2 = (push(f32, 8 + 4 * k) for k in range(6))
    trips = push(i32, 32)
    error = _native_fma(m, b, f32, [p, p, b.fneg(b.fmul(p, p))])
    words = [_native_fma(m, b, f32, [p, q, r]), _native_fma(m, b, f32, [a, x, a]), error,
             _native_fma(m, b, f32, [p, q, r2])]
    entry = b.block
    loop = b.append_basic_block("loop")
    done = b.append_basic_block("done")
    b.branch(loop)
    b.position_at_end(loop)
    acc = b.phi(f32)
    k = b.phi(i32)
    acc2 = _native_fma(m, b, f32, [p, q, acc])
    k2 = b.add(k, ll.Constant(i32, 1))
    acc.add_incoming(r, entry)
    acc.add_incoming(acc2, loop)
    k.add_incoming(ll.Constant(i32, 0), entry)
    k.add_incoming(k2, loop)
    b.cbranch(b.icmp_signed("<", k2, trips), loop, done)
    b.position_at_end(done)
    for j, w in enumerate((*words, acc2)):
        b.store(b.bitcast(w, i32), b.gep(out, [ll.Constant(i32, j)], source_etype=i32)).align = 4
    b.ret_void()
    modes = FloatModes(fused_fma=True, signed_zero_inf_nan=(), denorm_preserve=(32,), fma32="contract")
    return translate(m, "contract_probe", (1, 1, 1), modes)


def contract_probe_push(out_address: int) -> bytes:
    return struct.pack("<Q6fi", out_address, *_CONTRACT_IN, 2)


def contract_probe_variant(data: bytes) -> str:
    """FloatModes.fma32 from the probe's 20 bytes of output: "contract" where the driver
    fused every pair into one rounding that keeps subnormals, "contract-alone" where it did
    so except beside an identical rounded product (word 2), "" where it did not."""
    got = struct.unpack("<5I", bytes(data[:20]))
    if any(got[k] != CONTRACT_EXPECTED[k] for k in (0, 1, 3, 4)):
        return ""
    return "contract" if got[2] == CONTRACT_EXPECTED[2] else "contract-alone"


def subnormal_modes(float_controls: dict, env: str, probe: Callable[[bool], tuple[bool, bool, bool]],
                    fma_env: str = "", contract: Callable[[], str] | None = None) -> dict:
    """The FloatModes (and DeviceCaps) subnormal fields for a device: DenormPreserve where it
    has the mode. For f32 without it, `probe(preserve)` (the subnormal probe run on the
    device, with or without the mode declared: (arithmetic other than fma flushes, Fma
    flushes, min/max flush)) asks whether the device flushes; where it does, whether it
    keeps them once the mode is declared anyway (NVIDIA's driver keeps them in add, mul,
    comparisons and conversions but not in GLSL's FMin/FMax, measured on an H100, driver
    580; and on an H100 the mode did not make its Fma keep them): then the mode is declared,
    comparisons and min/max go through the integer order of floats (int_order32) and,
    where Fma still flushes, fma alone is made exact (fma32); else all f32 arithmetic is
    emulated (flush32, subnormal.py: 3.5x slower in bench/gpu's sgemm on the H100).
    `env` is CUPORT_VK_FLUSH32: 1 emulates anyway, simulate also makes the device's f32
    instructions flush (tests: lavapipe behaving as NVIDIA's driver without the mode),
    simulate-preserve makes only Fma and min/max flush (as NVIDIA's driver with the mode
    declared: its mode on an H100), 0 never emulates (f32 subnormals are then the device's,
    not CUDA's). `fma_env` is CUPORT_VK_FMA32, how an emulated fma is made exact
    (fma32_variant); unset, where only Fma flushes, `contract()` (the contraction probe run
    on the device: contract_probe_variant) says whether the driver fuses a multiply and an
    add into an fma that keeps subnormals: then fma is that pair ("contract", or
    "contract-alone" where the driver merges the pair's multiply with an identical rounded
    one), else guarded."""
    preserve = tuple(w for w in (16, 32, 64) if float_controls.get(f"shaderDenormPreserveFloat{w}"))
    fma32 = fma32_variant(fma_env)
    modes = {"denorm_preserve": preserve, "flush32": False, "int_order32": False, "fma32": "",
             "simulate_flush32": env == "simulate", "simulate_fma32": env == "simulate-preserve"}
    if env == "simulate-preserve":
        return dict(modes, denorm_preserve=tuple(sorted({*preserve, 32})), int_order32=True, fma32=fma32)
    if 32 in preserve or env == "0":
        return modes
    if env in ("1", "simulate"):
        return dict(modes, flush32=True, fma32=fma32)
    arith, fma, minmax = probe(False)
    if arith or fma:
        arith, fma, minmax = probe(True)
        if arith:
            return dict(modes, flush32=True, fma32=fma32)
        preserve = tuple(sorted((*preserve, 32)))
    if fma and not fma_env and contract is not None and (variant := contract()):
        fma32 = variant
    return dict(modes, denorm_preserve=preserve, int_order32=minmax, fma32=fma32 if fma else "")


#: CUPORT_VK_FMA32's values: FloatModes.fma32, or "" (the device's own Fma)
FMA32_VARIANTS = {"": "guard", "guard": "guard", "f64": "f64", "contract": "contract",
                  "contract-alone": "contract-alone", "device": ""}


def fma32_variant(env: str) -> str:
    """FloatModes.fma32 for CUPORT_VK_FMA32 (subnormal.fma says how each is exact): guard
    (the default: the device's Fma, and a branch to an exact helper where an operand is
    subnormal or the result tiny, tested on integer keys); f64 (always through f64, rounded to odd, no branch);
    contract (a multiply and an add the driver may fuse: exact only where it fuses them into
    an fma that keeps subnormals, which the contraction probe checks before choosing it
    unasked); contract-alone (the same, except in kernels that also round an f32 product
    on its own: the guard there); device
    leaves fma to the device where the rest keeps subnormals (then fma alone flushes them:
    bench/gpu's sgemm 8.2 -> 2.5 ms on an H100, where f64 gives 10.1)."""
    if env not in FMA32_VARIANTS:
        raise ValueError(f"CUPORT_VK_FMA32={env!r}: expected one of {', '.join(v for v in FMA32_VARIANTS if v)}")
    return FMA32_VARIANTS[env]
