"""cvt: conversions between integer and floating-point types (PTX ISA §9.7.9.21).

- integer → integer: truncate or extend by the source's signedness; `.sat` clamps to the
  destination's range.
- float → integer: `.rni/.rzi/.rmi/.rpi` round to an integer, out-of-range values clamp to
  the destination's range (`.sat` is implied), NaN gives 0 except when the source is f64 or
  the destination 64-bit, where it gives 1 << (width - 1) (the manual's rule). The manual
  makes the rounding modifier mandatory; legacy PTX without one gets C's truncation (.rzi).
- integer → float and float → narrower float: `.rn/.rz/.rm/.rp` round exactly (fprt), `.rna`
  (ties away) for tf32.
- float → same float with `.rni/.rzi/.rmi/.rpi`: round to an integral value.
- `.ftz` flushes f32 inputs and results, `.sat` clamps float results to [0, 1] (NaN → +0);
  for f16/bf16/tf32/fp8 destinations `.relu` clamps negative results to +0 (NaN stays NaN) and
  `.satfinite` turns overflow and infinities into the largest finite value.
- packed forms: `cvt.frnd.{f16x2,bf16x2}.f32 d, a, b` (a → upper half), `cvt.rn.satfinite
  .{e4m3x2,e5m2x2}.{f32,f16x2}` and `cvt.rn.f16x2.{e4m3x2,e5m2x2}` (upper half ↔ upper byte).
  e4m3 has no infinities: S.1111.111 is its NaN, 448 = S.1111.110 its largest value.
- cvt.rna.tf32.f32 is integer code in ptxas (no instruction rounds to tf32 with ties away):
  (bits + 0x1000) & 0xffffe000 for finite x, bits & 0xffffe000 for inf and NaN; `.satfinite`
  then steps a result with the top exponent down by 0x2000 (±inf → ±max, a NaN stays a NaN).
- `.ftz` on an f32 result flushes it when it is tiny after rounding (fprt.flush_tiny).
NaN results follow the instruction ptxas uses (fprt's docstring has the evidence): F2F with
f64 on either side (and FRND.F64) keeps the sign and the top of the payload, quieted; every
other conversion to f32/f16/bf16/tf32 gives the canonical NaN (F2F f16 <-> bf16, F2FP,
HADD2.F32, FRND, FADD.FTZ: 0x7fffffff, 0x7fff, tf32 0x7fffe000); cvt.f32.bf16 (a shift),
cvt.f32.f32 and cvt.f64.f64 without modifiers (moves) keep the bits; cvt.ftz.f64.f32 flushes
with FMUL.FTZ first, so its NaN is the canonical f32 NaN widened, 0x7fffffffe0000000. FRND,
the moves, FADD.FTZ, F2F.FTZ.F32.BF16 and cvt.ftz.f64.f32 are read off ptxas's code and wait
for recordings (the exact-nan probes in tests/isa/cases/convert.py).
"""

from __future__ import annotations

from ..ptx import ir
from ..ptx.ir import TYPE_BITS
from . import fprt
from .registry import lowers

_IRND = {"rni": "llvm.roundeven", "rzi": "llvm.trunc", "rmi": "llvm.floor", "rpi": "llvm.ceil"}
_FRND = ("rn", "rz", "rm", "rp", "rna")
_INTS = {"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64"}
_FLOATS = {"f16", "bf16", "f32", "f64"}
_FP8 = {"e4m3x2": "e4m3", "e5m2x2": "e5m2"}


def _types(em, ins: ir.Instr) -> tuple[str, str]:
    ts = [m for m in ins.mods if m in TYPE_BITS]
    if len(ts) != 2:
        raise em.error("cvt needs a destination and a source type")
    return ts[0], ts[1]


@lowers("cvt")
def lower_cvt(em, ins: ir.Instr) -> None:
    if "pack" in ins.mods:
        return _pack_ints(em, ins)
    dt, st = _types(em, ins)
    irnd = next((m for m in ins.mods if m in _IRND), None)
    frnd = next((m for m in ins.mods if m in _FRND), None)
    if "rs" in ins.mods:
        raise em.error("cvt.rs (stochastic rounding, sm_100a) is not supported")
    if dt in ("f16x2", "bf16x2") and st == "f32":
        return _pack_pair(em, ins, dt[:-2], frnd)
    if dt in _FP8:
        return _to_fp8(em, ins, _FP8[dt], st)
    if st in _FP8:
        return _from_fp8(em, ins, _FP8[st], dt)
    if dt == "tf32" and st == "f32":
        return _to_tf32(em, ins, frnd)
    if dt in _INTS and st in _INTS:
        return _int_to_int(em, ins, dt, st)
    if dt in _INTS and st in _FLOATS:
        return _float_to_int(em, ins, dt, st, irnd)
    if dt in _FLOATS and st in _INTS:
        return _int_to_float(em, ins, dt, st, frnd or "rn")
    if dt in _FLOATS and st in _FLOATS:
        return _float_to_float(em, ins, dt, st, irnd, frnd)
    raise em.error(f"cvt from .{st} to .{dt} is not supported")


# ---------------------------------------------------------------- reading and writing floats
def read_float(em, ins: ir.Instr, op, st: str):
    """A float operand as an exact f32 (f16, bf16, f32) or f64 value; .ftz flushes f32."""
    if st in ("f16", "bf16"):
        return fprt.to_f32(em, em.read_bits(op, "b16"), st)
    v = em.read(op, st)
    return fprt.flush(em, v, st) if st == "f32" and "ftz" in ins.mods else v


def _f32_of(em, x):
    """An f32 carrying what a narrow rounding needs: x itself, or f64 x rounded to odd."""
    if x.type == em.ty("f32"):
        return x
    return fprt.f64_to_f32(em, x, None, "ro")


def _narrow(em, ins: ir.Instr, x, elem: str, mode: str):
    """x (f32 or f64 value) to f16/bf16 bits with the instruction's .sat/.relu/.satfinite."""
    t = "f32" if x.type == em.ty("f32") else "f64"
    if "sat" in ins.mods:
        x = fprt.saturate(em, x, t)
    kw = {}
    if "relu" in ins.mods:
        kw["relu"] = True
    if "satfinite" in ins.mods:
        kw["satfinite"] = True
    return fprt.from_f32(em, _f32_of(em, x), elem, mode, **kw)


def _finish_f32(em, ins: ir.Instr, v, nan_bits=None) -> None:
    """.ftz, .sat, then a NaN result: `nan_bits` (i32) where given, else the canonical NaN."""
    if "ftz" in ins.mods:
        v = fprt.flush(em, v, "f32")
    if "sat" in ins.mods:
        v = fprt.saturate(em, v, "f32")
    if nan_bits is None:
        return em.write(ins.args[0], "f32", fprt.canon_nan(em, v, "f32"))
    em.write(ins.args[0], "f32", em.b.select(fprt.is_nan(em, v), nan_bits, em.to_bits(v, "f32")))


def _finish_f64(em, ins: ir.Instr, v, nan_bits=None) -> None:
    if "sat" in ins.mods:
        v = fprt.saturate(em, v, "f64")
    if nan_bits is not None:
        v = em.b.select(fprt.is_nan(em, v), nan_bits, em.to_bits(v, "f64"))
    em.write(ins.args[0], "f64", v)


# ---------------------------------------------------------------- integer sources and results
def _int_to_int(em, ins: ir.Instr, dt: str, st: str) -> None:
    b = em.b
    v = em.read_bits(ins.args[1], st)
    dn, sn = TYPE_BITS[dt], TYPE_BITS[st]
    ss, ds = st[0] == "s", dt[0] == "s"
    if "sat" in ins.mods:
        # clamp at the wider of the two widths (no odd widths: SPIR-V has only 8..64 bits),
        # comparing by the source's signedness and only against bounds inside its range
        w = max(dn, sn)
        x = v if w == sn else (b.sext(v, _ity(em, w)) if ss else b.zext(v, _ity(em, w)))
        lo = -(1 << (dn - 1)) if ds else 0
        hi = (1 << (dn - 1)) - 1 if ds else (1 << dn) - 1
        if ss and lo > -(1 << (sn - 1)):
            x = b.select(b.icmp_signed("<", x, em.const_int(w, lo)), em.const_int(w, lo), x)
        if hi < ((1 << (sn - 1)) - 1 if ss else (1 << sn) - 1):
            cmp = b.icmp_signed if ss else b.icmp_unsigned
            x = b.select(cmp(">", x, em.const_int(w, hi)), em.const_int(w, hi), x)
        v = x if w == dn else b.trunc(x, em.bty(dt))
    elif dn < sn:
        v = b.trunc(v, em.bty(dt))
    elif dn > sn:
        v = b.sext(v, em.bty(dt)) if ss else b.zext(v, em.bty(dt))
    em.write(ins.args[0], dt, v)


def _ity(em, width: int):
    from llvmlite import ir as ll

    t = ll.IntType(width)
    return ll.VectorType(t, 32) if em.vec else t


def _float_to_int(em, ins: ir.Instr, dt: str, st: str, irnd: str | None) -> None:
    b = em.b
    x = read_float(em, ins, ins.args[1], st)
    x = em.intrinsic(_IRND[irnd or "rzi"], [x])
    rt = em.bty(dt)
    name = "llvm.fptosi.sat" if dt[0] == "s" else "llvm.fptoui.sat"
    v = em.intrinsic(name, [x], overload=[rt, x.type], ret=rt)
    n = TYPE_BITS[dt]
    if st == "f64" or n == 64:
        v = b.select(fprt.is_nan(em, x), em.const_int(n, 1 << (n - 1)), v)
    em.write(ins.args[0], dt, v)


def _int_to_float(em, ins: ir.Instr, dt: str, st: str, mode: str) -> None:
    b = em.b
    v = em.read_bits(ins.args[1], st)
    signed, sn = st[0] == "s", TYPE_BITS[st]
    if mode == "rna":
        raise em.error("cvt.rna from an integer")
    if dt in ("f32", "f64") and mode == "rn":
        r = (b.sitofp if signed else b.uitofp)(v, em.ty(dt))
        return _finish_f32(em, ins, r) if dt == "f32" else _finish_f64(em, ins, r)
    s, e = fprt.int_to_f64_pair(em, v, signed, sn)
    if dt == "f64":
        return _finish_f64(em, ins, s if e is None else fprt.adjust_f64(em, s, e, mode))
    if dt == "f32":
        return _finish_f32(em, ins, fprt.f64_to_f32(em, s, e, mode))
    x = fprt.f64_to_f32(em, s, e, "ro")
    em.write(ins.args[0], "b16", _narrow(em, ins, x, dt, mode))


# ---------------------------------------------------------------- float to float
# (destination, source) pairs converted by F2F with f64 on one side, which carries NaN payloads
# across (F2F between f16 and bf16 gives the canonical NaN)
_F2F = {("f64", "f32"), ("f64", "f16"), ("f64", "bf16"), ("f32", "f64"), ("f16", "f64"), ("bf16", "f64")}
_FTZ_F32_NAN64 = 0x7FFFFFFFE0000000  # cvt.ftz.f64.f32: FMUL.FTZ's canonical NaN, widened by F2F


def _float_to_float(em, ins: ir.Instr, dt: str, st: str, irnd: str | None, frnd: str | None) -> None:
    b = em.b
    x = read_float(em, ins, ins.args[1], st)
    src_bits = em.read_bits(ins.args[1], st)
    nan = fprt.nan_convert(em, src_bits, st, dt) if (dt, st) in _F2F else None
    if irnd is not None:
        if dt != st:
            raise em.error("integer rounding between float types of different sizes")
        x = em.intrinsic(_IRND[irnd], [x])
    ftz = "ftz" in ins.mods
    # cvt.f32.f32 / cvt.f64.f64 without modifiers: a register move
    move = dt == st and irnd is None and not ftz and "sat" not in ins.mods
    if dt == "f64":
        if st == "f64":  # FRND.F64: a NaN comes back quieted, as from any f64 operation
            nan = src_bits if move else b.or_(src_bits, em.const_int(64, 1 << 51))
        elif st == "f32" and ftz:  # FMUL.FTZ x, 1 before the F2F: the canonical f32 NaN
            nan = em.const_int(64, _FTZ_F32_NAN64)
        return _finish_f64(em, ins, x if x.type == em.ty("f64") else b.fpext(x, em.ty("f64")), nan)
    if dt == "f32":
        if move or (st == "bf16" and not ftz):  # a shift or a move: the NaN's bits unchanged
            nan = src_bits if move else b.shl(b.zext(src_bits, em.bty("b32")), em.const_int(32, 16))
        if x.type == em.ty("f64"):
            mode = frnd or "rn"
            r = b.fptrunc(x, em.ty("f32")) if mode == "rn" else fprt.f64_to_f32(em, x, None, mode)
            if ftz:  # tiny after rounding: round x * 2^32 (exact) the same way
                xs = b.fmul(x, em.const("f64", 2.0 ** 32))
                t = b.fptrunc(xs, em.ty("f32")) if mode == "rn" else fprt.f64_to_f32(em, xs, None, mode)
                r = fprt.flush_tiny(em, r, t, 32)
            x = r
        return _finish_f32(em, ins, x, nan)
    # f16 / bf16 destinations (exact when the source is the same type)
    mode = frnd or "rn"
    if mode == "rna":
        raise em.error(f"cvt.rna to .{dt}")
    h = _narrow(em, ins, x, dt, mode)
    if "ftz" in ins.mods and dt == "f16" and st == "f16":
        h = fprt.flush_bits(em, h, "f16")
    if nan is not None and "sat" not in ins.mods:
        h = b.select(fprt.is_nan(em, x), nan, h)
    em.write(ins.args[0], "b16", h)


# ---------------------------------------------------------------- packed and special formats
_PACK_BITS = {"u2": 2, "s2": 2, "u4": 4, "s4": 4, "u8": 8, "s8": 8, "u16": 16, "s16": 16}


def _pack_ints(em, ins: ir.Instr) -> None:
    """cvt.pack.sat.{u16,s16}.s32 d, a, b and cvt.pack.sat.{u8,s8,u4,s4,u2,s2}.s32.b32 d, a, b, c
    (PTX ISA §9.7.9.22): a and b saturated to the narrow type, a above b in the low bits of
    d; the remaining upper bits of d come from the low bits of c."""
    conv = next((m for m in ins.mods if m in _PACK_BITS), None)
    if conv is None or "sat" not in ins.mods:
        raise em.error("cvt.pack needs .sat and a destination type (u2 s2 u4 s4 u8 s8 u16 s16)")
    b = em.b
    n = _PACK_BITS[conv]
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if conv[0] == "s" else (0, (1 << n) - 1)

    def sat(op):
        x = em.read_bits(op, "s32")
        x = b.select(b.icmp_signed("<", x, em.const_int(32, lo)), em.const_int(32, lo), x)
        x = b.select(b.icmp_signed(">", x, em.const_int(32, hi)), em.const_int(32, hi), x)
        return b.and_(x, em.const_int(32, (1 << n) - 1))

    d = b.or_(b.shl(sat(ins.args[1]), em.const_int(32, n)), sat(ins.args[2]))
    if n < 16:
        d = b.or_(d, b.shl(em.read_bits(ins.args[3], "b32"), em.const_int(32, 2 * n)))
    em.write(ins.args[0], "u32", d)


def _pack_pair(em, ins: ir.Instr, elem: str, frnd: str | None) -> None:
    """cvt.frnd.{f16x2,bf16x2}.f32 d, a, b: a goes to the upper half, b to the lower."""
    mode = frnd or "rn"
    if mode not in ("rn", "rz"):
        raise em.error(f"cvt.{mode} to .{elem}x2")
    hi = _narrow(em, ins, em.read(ins.args[1], "f32"), elem, mode)
    lo = _narrow(em, ins, em.read(ins.args[2], "f32"), elem, mode)
    b = em.b
    v = b.or_(b.shl(b.zext(hi, em.bty("b32")), em.const_int(32, 16)), b.zext(lo, em.bty("b32")))
    em.write(ins.args[0], "b32", v)


def _to_tf32(em, ins: ir.Instr, frnd: str | None) -> None:
    """cvt.{rna,rn,rz}{.satfinite}{.relu}.tf32.f32: 10 mantissa bits, the low 13 bits zero.
    .rna is ptxas's integer sequence (see the module docstring), .rn/.rz the F2FP instruction,
    whose NaN is the canonical f32 NaN cut to tf32: 0x7fffe000 (FMTS["tf32"].nan)."""
    mode = frnd or "rna"
    if mode not in ("rna", "rn", "rz"):
        raise em.error(f"cvt.{mode}.tf32.f32")
    b = em.b
    if mode == "rna" and "relu" not in ins.mods:
        c = em.const_int
        bits = em.read_bits(ins.args[1], "b32")
        finite = b.icmp_unsigned("<", b.and_(bits, c(32, 0x7FFFFFFF)), c(32, 0x7F800000))
        v = b.and_(b.select(finite, b.add(bits, c(32, 0x1000)), bits), c(32, 0xFFFFE000))
        if "satfinite" in ins.mods:
            top = b.icmp_unsigned("==", b.and_(v, c(32, 0x7F800000)), c(32, 0x7F800000))
            v = b.select(top, b.sub(v, c(32, 0x2000)), v)
        return em.write(ins.args[0], "b32", v)
    x = em.read(ins.args[1], "f32")
    code = fprt.round_small(em, x, "tf32", mode, satfinite="satfinite" in ins.mods, relu="relu" in ins.mods)
    em.write(ins.args[0], "b32", b.shl(code, em.const_int(32, 13)))


def _to_fp8(em, ins: ir.Instr, fmt: str, st: str) -> None:
    """cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f32 d, a, b (a → upper byte) and
    cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.{f16x2,bf16x2} d, a (upper half → upper byte)."""
    b = em.b
    if next((m for m in ins.mods if m in _FRND), None) != "rn" or "satfinite" not in ins.mods:
        raise em.error("conversions to fp8 need .rn.satfinite")
    if st == "f32":
        xs = [em.read(ins.args[1], "f32"), em.read(ins.args[2], "f32")]
    elif st in ("f16x2", "bf16x2"):
        v = em.read_bits(ins.args[1], "b32")
        hs = [b.trunc(b.lshr(v, em.const_int(32, 16)), em.bty("b16")), b.trunc(v, em.bty("b16"))]
        xs = [fprt.to_f32(em, h, st[:-2]) for h in hs]
    else:
        raise em.error(f"cvt from .{st} to fp8")
    hi, lo = (fprt.round_small(em, x, fmt, "rn", satfinite=True, relu="relu" in ins.mods) for x in xs)
    v = b.or_(b.shl(hi, em.const_int(32, 8)), lo)
    em.write(ins.args[0], "b16", b.trunc(v, em.bty("b16")))


def _from_fp8(em, ins: ir.Instr, fmt: str, dt: str) -> None:
    """cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2} d, a: each byte exactly to f16, upper to upper."""
    if dt != "f16x2":
        raise em.error(f"cvt from fp8 to .{dt}")
    b = em.b
    a = b.zext(em.read_bits(ins.args[1], "b16"), em.bty("b32"))
    out = []
    for byte in (b.and_(a, em.const_int(32, 0xFF)), b.lshr(a, em.const_int(32, 8))):
        x = fprt.small_to_f32(em, byte, fmt)
        out.append(fprt.from_f32(em, x, "f16", "rn", **({"relu": True} if "relu" in ins.mods else {})))
    v = b.or_(b.zext(out[0], em.bty("b32")), b.shl(b.zext(out[1], em.bty("b32")), em.const_int(32, 16)))
    em.write(ins.args[0], "b32", v)

