"""Hard floating-point semantics as LLVM IR builder helpers: directed rounding, narrow formats,
canonical NaNs and the approximate functions of the special-function unit.

Everything here works on the values `em.read` gives (scalars in uniform mode, `<32 x T>`
vectors in vector mode) and is select-based, so LLVM vectorises it.

Directed rounding (.rz/.rm/.rp) without touching the host's rounding mode:
- f32 results are computed exactly in f64 as a pair `s + e` (s = the f64 result rounded to
  nearest, e = the exact remainder: a product of two f32 is exact in f64, a sum is exact as
  TwoSum's pair, a quotient or square root has an exact FMA residual), then `f64_to_f32`
  rounds the pair in the asked direction: round to nearest with `fptrunc`, compare back,
  step one ulp where the nearest value lies on the wrong side.
- f64 results have no wider format to lean on: the backend's `em.directed_f64` does them
  (the CPU backend switches the host FPU's rounding mode in a strictfp helper around LLVM's
  constrained intrinsic; the Vulkan backend emits the intrinsic alone, which its SPIR-V
  translator rounds exactly from the operands' significands: spirv/fpmath.py).
- Narrow formats (f16, bf16, tf32, e4m3, e5m2) are produced by `round_small` with integer
  operations on the f32 bits. Wider sources first go to f32 with round-to-odd, which keeps
  the information any later rounding to a format of at most 22 bits needs.

NaN results (the H200's recordings in tests/isa/gpu and ptxas's sm_90 code):
- f32, f16 and bf16 arithmetic (FADD/FMUL/FFMA/MUFU, HADD2/HFMA2, F2FP) returns a canonical
  NaN: 0x7fffffff, 0x7fff, 0x7fff, whatever the operands' payloads.
- f64 arithmetic propagates a NaN operand with its quiet bit (bit 51) set, sign and payload
  kept; only an invalid operation on non-NaN operands (inf - inf, 0 * inf, 0/0, sqrt(-1))
  generates 0xfff8000000000000. When several operands are NaN, DADD and DMUL return the one
  in their *second* source slot, then the first; DFMA returns b, then its addend c, then a
  (recorded: add(A, B) → B, add(B, A) → A, mul(B, A) → A, sub(A, C) → C, fma(A, B, C) → B,
  fma(1, B, C) → B, fma(1, 2, C) → C, fma(A, 2, C) → C, fma(C, 2, A) → A). A source modifier does not touch the NaN returned:
  sub(1, B) = DADD 1, -B gives B with its own sign, and neg/abs.f64 (DADD -RZ, -a / |a|)
  return a's NaN quieted. ptxas keeps PTX order for register operands; it moves an
  immediate or constant operand into the second slot (and folds sub's negation into a
  constant, flipping a NaN constant's sign), so for such operands the GPU's answer follows
  ptxas's placement, which cuport does not model. Sequences written by ptxas have their own
  order: div.f64 (every rounding mode) tests a, then b, and returns the NaN found with the quiet
  bit or-ed in; min/max.f64 of two NaNs return b quieted (DSETP.MIN/MAX). `NAN_ORDER_F64`
  is the table; `nan_f64` applies it on integer bits.
- Conversions: F2F with f64 on either side (f64 to or from f32, f16, bf16; FRND.F64) keeps
  the sign and the payload's top bits, quieted (0x7ff8000000000000 → f32 0x7fc00000, f16
  0x7e00, bf16 0x7fc0; 0xfff4000123456789 → f32 0xffe00009; bf16 0xff81 → 0xfff8200000000000).
  Every other conversion to f32, f16, bf16 or tf32 gives the canonical NaN: F2F between f16
  and bf16, F2FP (f32 → f16/bf16/tf32), HADD2.F32 (f16 → f32); tf32's is 0x7fffe000 (F2FP
  .TF32 writes the f32 canonical NaN with the low 13 bits cut). Plain moves keep the bits:
  cvt.f32.bf16 is a shift, cvt.f32.f32 and cvt.f64.f64 without modifiers are register moves,
  and cvt.rna.tf32.f32 is integer code. cvt.ftz.f64.f32 is FMUL.FTZ x, 1 then F2F, so a NaN
  comes out as the canonical f32 NaN widened: 0x7fffffffe0000000.
  (ptxas folds conversions of constants at compile time, and its folder makes a 16-bit NaN the
  canonical f32 NaN before widening: cvt.f64.f16/bf16 of a NaN constant is
  0x7fffffffe0000000, where the instruction at run time keeps the payload.)
"""

from __future__ import annotations

from dataclasses import dataclass

MODES = ("rn", "rz", "rm", "rp")
#: the rounding metadata of LLVM's constrained intrinsics (llvm.experimental.constrained.*)
CONSTRAINED_ROUNDING = {"rn": "round.tonearest", "rz": "round.towardzero", "rp": "round.upward",
                        "rm": "round.downward"}
CANON_NAN = {"f32": 0x7FFFFFFF, "f64": 0xFFF8000000000000, "f16": 0x7FFF, "bf16": 0x7FFF}
DEFAULT_NAN64 = 0xFFF8000000000000  # what an invalid f64 operation generates (CUDART_NAN)
QUIET64 = 1 << 51
#: f64 operation → its operands (PTX indices) in the order in which a NaN among them is the
#: result (the module docstring has the evidence); min/max pass b, a themselves
NAN_ORDER_F64 = {"fadd": (1, 0), "fsub": (1, 0), "fmul": (1, 0), "fma": (1, 2, 0), "fdiv": (0, 1)}
#: (width, mantissa bits) of the formats whose NaN payloads F2F carries across
NAN_LAYOUT = {"f64": (64, 52), "f32": (32, 23), "f16": (16, 10), "bf16": (16, 7)}
F32_MAX_BITS = 0x7F7FFFFF



# ---------------------------------------------------------------- small helpers
def ci(em, width: int, v: int):
    return em.const_int(width, v)


def is_nan(em, v):
    return em.b.fcmp_unordered("uno", v, v)


def canon_nan(em, v, t: str):
    """The bits of `v` (integer type), a NaN replaced by the GPU's canonical NaN of `t` (f32:
    0x7fffffff, f16/bf16: 0x7fff; for f64, 0xfff8000000000000 is only what an invalid
    operation generates: f64 operations with operands use nan_f64). Done on the integer bits
    and last, right before the write: LLVM treats NaN payloads as unspecified (its constant
    folder and the host FPU disagree on them) and folds float-typed selects."""
    bits = em.to_bits(v, t)
    if t not in CANON_NAN:
        return bits
    w = {"f32": 32, "f64": 64, "f16": 16, "bf16": 16}[t]
    return em.b.select(is_nan(em, v), ci(em, w, CANON_NAN[t]), bits)


def nan_f64(em, v, srcs: list):
    """The bits of the f64 result `v` with the GPU's NaN rule: the first NaN among `srcs`
    (values, in order of precedence: see `nan_order`) quieted, else 0xfff8000000000000. Done
    on integer bits: LLVM leaves NaN payloads unspecified (constant folding, commuted
    operands). One fcmp and one select per operand and one `or` for the quiet bit (the
    default NaN has it already): cheap next to the operation it follows."""
    b = em.b
    out = ci(em, 64, DEFAULT_NAN64)
    for s in reversed(srcs):
        out = b.select(is_nan(em, s), em.to_bits(s, "f64"), out)
    return b.select(is_nan(em, v), b.or_(out, ci(em, 64, QUIET64)), em.to_bits(v, "f64"))


def nan_order(op: str, args: list) -> list:
    """`args` of the f64 operation `op` (fadd fsub fmul fma fdiv) in the order in which
    their NaNs win (NAN_ORDER_F64): b, a for DADD/DMUL, b, c, a for DFMA (measured on an
    H200), a, b for div."""
    return [args[i] for i in NAN_ORDER_F64[op]]


def nan_convert(em, bits, src: str, dst: str):
    """A NaN's bit pattern (integer of `src`'s width) converted the way F2F does: sign kept,
    payload truncated or extended at its top, quiet bit set."""
    b = em.b
    sw, sm = NAN_LAYOUT[src]
    dw, dm = NAN_LAYOUT[dst]
    sign = b.lshr(bits, ci(em, sw, sw - 1))
    mant = b.and_(bits, ci(em, sw, (1 << sm) - 1))
    if dw < sw:
        sign, mant = b.trunc(sign, em.bty(f"b{dw}")), b.trunc(b.lshr(mant, ci(em, sw, sm - dm)), em.bty(f"b{dw}"))
    elif dw > sw:
        sign, mant = b.zext(sign, em.bty(f"b{dw}")), b.shl(b.zext(mant, em.bty(f"b{dw}")), ci(em, dw, dm - sm))
    elif dm != sm:  # f16 <-> bf16
        mant = b.shl(mant, ci(em, dw, dm - sm)) if dm > sm else b.lshr(mant, ci(em, dw, sm - dm))
    top = ((1 << (dw - dm - 1)) - 1) << dm | 1 << (dm - 1)  # exponent all ones, quiet bit
    return b.or_(b.or_(b.shl(sign, ci(em, dw, dw - 1)), mant), ci(em, dw, top))


def flush_tiny(em, r, t, scale: int):
    """.ftz on the f32 result `r`: zero of r's sign when the result is tiny *after rounding*
    (IEEE 754's tininess: rounded to 24 bits with an unbounded exponent, below 2^-126).
    `t` is that rounding, computed on operands scaled by 2^scale so that it stays normal.

    The H200 flushes a product that rounds to FLT_MIN only from below (FLT_MIN * (1 - 2^-24)
    → 0, the recordings), and cvt.rn.ftz.f32.f64 keeps 2^-126 * (1 - 2^-30), which rounds
    up to FLT_MIN at 24 bits: tininess after rounding, not before. ptxas's div.rn.ftz.f32
    slow path likewise rounds the scaled quotient and flushes when its exponent is too small.
    """
    b = em.b
    tiny = b.fcmp_ordered("<", em.intrinsic("llvm.fabs", [t]), em.const("f32", 2.0 ** (scale - 126)))
    zero = em.to_value(b.and_(em.to_bits(r, "f32"), ci(em, 32, 1 << 31)), "f32")
    return flush(em, b.select(tiny, zero, r), "f32")


def flush(em, v, t: str):
    """Subnormal → zero of the same sign (the .ftz rule); f32 and f16 values only."""
    if t not in ("f32", "f16"):
        return v
    b = em.b
    w, expmask = (32, 0x7F800000) if t == "f32" else (16, 0x7C00)
    bits = em.to_bits(v, t)
    sub = b.icmp_unsigned("==", b.and_(bits, ci(em, w, expmask)), ci(em, w, 0))
    return em.to_value(b.select(sub, b.and_(bits, ci(em, w, 1 << (w - 1))), bits), t)


def flush_bits(em, bits, fmt: str):
    """.ftz on the bit pattern of a narrow format (f16/bf16 in i16)."""
    b = em.b
    expmask = {"f16": 0x7C00, "bf16": 0x7F80}[fmt]
    sub = b.icmp_unsigned("==", b.and_(bits, ci(em, 16, expmask)), ci(em, 16, 0))
    return b.select(sub, b.and_(bits, ci(em, 16, 0x8000)), bits)


def saturate(em, v, t: str):
    """Clamp to [0.0, 1.0]; NaN and -0.0 give +0.0."""
    b = em.b
    zero, one = em.const(t, 0.0), em.const(t, 1.0)
    v = b.select(b.fcmp_ordered(">", v, zero), v, zero)  # NaN, negatives and -0.0 → +0.0
    return b.select(b.fcmp_ordered(">", v, one), one, v)


def fpext(em, v, t: str = "f64"):
    return em.b.fpext(v, em.ty(t))


def two_sum(em, a, c):
    """Knuth's TwoSum: s = RN(a + c) and the exact error e = (a + c) - s."""
    b = em.b
    s = b.fadd(a, c)
    cc = b.fsub(s, a)
    e = b.fadd(b.fsub(a, b.fsub(s, cc)), b.fsub(c, cc))
    return s, e


def signbit(em, v, t: str):
    w = {"f32": 32, "f64": 64}[t]
    return em.b.icmp_signed("<", em.to_bits(v, t), ci(em, w, 0))


def next_up(em, v, t: str):
    """The next value towards +inf (bits ± 1); +inf and NaN are not stepped by callers."""
    b = em.b
    w = {"f32": 32, "f64": 64}[t]
    x = em.to_bits(v, t)
    neg = b.icmp_signed("<", x, ci(em, w, 0))
    negzero = b.icmp_unsigned("==", x, ci(em, w, 1 << (w - 1)))
    down = b.select(negzero, ci(em, w, 1), b.sub(x, ci(em, w, 1)))
    return em.to_value(b.select(neg, down, b.add(x, ci(em, w, 1))), t)


def next_down(em, v, t: str):
    b = em.b
    w = {"f32": 32, "f64": 64}[t]
    x = em.to_bits(v, t)
    neg = b.icmp_signed("<", x, ci(em, w, 0))
    zero = b.icmp_unsigned("==", x, ci(em, w, 0))
    up = b.select(zero, ci(em, w, (1 << (w - 1)) | 1), b.sub(x, ci(em, w, 1)))
    return em.to_value(b.select(neg, b.add(x, ci(em, w, 1)), up), t)


def toward_zero(em, v, t: str):
    """One ulp closer to zero (v is not zero)."""
    w = {"f32": 32, "f64": 64}[t]
    return em.to_value(em.b.sub(em.to_bits(v, t), ci(em, w, 1)), t)


# ---------------------------------------------------------------- directed rounding
def f64_to_f32(em, s, e, mode: str):
    """Round the exact value `s + e` (s an f64 rounded to nearest, e its exact error or None
    when s is exact) to f32 in `mode`: rn (only with e None), rz, rm, rp, or ro (round to
    odd: truncate, and set the last bit when inexact)."""
    b = em.b
    r = b.fptrunc(s, em.ty("f32"))
    if mode == "rn":
        if e is not None:
            raise ValueError("f64_to_f32: .rn of an inexact pair")
        return r
    back = fpext(em, r)
    zero = em.const("f64", 0.0)
    if mode == "rm":
        below = b.fcmp_ordered("<", s, back)
        if e is not None:
            below = b.or_(below, b.and_(b.fcmp_ordered("==", s, back), b.fcmp_ordered("<", e, zero)))
        return b.select(below, next_down(em, r, "f32"), r)
    if mode == "rp":
        above = b.fcmp_ordered(">", s, back)
        if e is not None:
            above = b.or_(above, b.and_(b.fcmp_ordered("==", s, back), b.fcmp_ordered(">", e, zero)))
        return b.select(above, next_up(em, r, "f32"), r)
    # rz / ro: too far from zero when |r| > |s|, or r == s and e points towards zero
    fabs_s = em.intrinsic("llvm.fabs", [s])
    over = b.fcmp_ordered(">", em.intrinsic("llvm.fabs", [back]), fabs_s)
    if e is not None:
        over = b.or_(over, b.and_(b.fcmp_ordered("==", s, back), _opposite(em, e, s)))
    rz = b.select(over, toward_zero(em, r, "f32"), r)
    if mode == "rz":
        return rz
    if mode != "ro":
        raise ValueError(mode)
    inexact = b.fcmp_ordered("!=", fpext(em, rz), s)
    if e is not None:
        inexact = b.or_(inexact, b.fcmp_ordered("!=", e, zero))
    bits = em.to_bits(rz, "f32")
    return em.to_value(b.select(inexact, b.or_(bits, ci(em, 32, 1)), bits), "f32")


def adjust_f64(em, s, e, mode: str):
    """Round `s + e` to f64 in a directed mode, s being the value rounded to nearest."""
    b = em.b
    zero = em.const("f64", 0.0)
    if mode == "rm":
        return b.select(b.fcmp_ordered("<", e, zero), next_down(em, s, "f64"), s)
    if mode == "rp":
        return b.select(b.fcmp_ordered(">", e, zero), next_up(em, s, "f64"), s)
    if mode == "rz":
        return b.select(_opposite(em, e, s), toward_zero(em, s, "f64"), s)
    return s


def _opposite(em, e, s):
    """e is non-zero and of the other sign than s (the exact value lies towards zero)."""
    b = em.b
    nonzero = b.fcmp_ordered("!=", e, em.const("f64", 0.0))
    return b.and_(nonzero, b.xor(signbit(em, e, "f64"), signbit(em, s, "f64")))


def rm_zero_sign(em, r, s, *addends):
    """In round-down mode an exact zero sum is -0 unless every addend is +0 (IEEE 754 §6.3).
    `r` is the f32 result, `s` the f64 sum (zero exactly when the exact sum is), the addends
    are f64."""
    b = em.b
    neg = None
    for a in addends:
        sb = signbit(em, a, "f64")
        neg = sb if neg is None else b.or_(neg, sb)
    is_zero = b.fcmp_ordered("==", s, em.const("f64", 0.0))
    return b.select(b.and_(is_zero, neg), em.const_bits("f32", 0x80000000), r)


def directed_f32(em, op: str, args: list, mode: str):
    """f32 add/sub/mul/fma/div/sqrt in rz/rm/rp, exactly, via an f64 pair."""
    b = em.b
    xs = [fpext(em, a) for a in args]
    if op == "fmul":
        return f64_to_f32(em, b.fmul(xs[0], xs[1]), None, mode)
    if op in ("fadd", "fsub"):
        c = xs[1] if op == "fadd" else b.fneg(xs[1])
        s, e = two_sum(em, xs[0], c)
        r = f64_to_f32(em, s, e, mode)
        return rm_zero_sign(em, r, s, xs[0], c) if mode == "rm" else r
    if op == "fma":
        p = b.fmul(xs[0], xs[1])  # exact
        s, e = two_sum(em, p, xs[2])
        r = f64_to_f32(em, s, e, mode)
        return rm_zero_sign(em, r, s, p, xs[2]) if mode == "rm" else r
    if op == "fdiv":
        q = b.fdiv(xs[0], xs[1])
        rem = em.intrinsic("llvm.fma", [b.fneg(q), xs[1], xs[0]])  # exact: a - q*b
        return f64_to_f32(em, q, b.fmul(rem, xs[1]), mode)
    if op == "sqrt":
        s = em.intrinsic("llvm.sqrt", [xs[0]])
        rem = em.intrinsic("llvm.fma", [b.fneg(s), s, xs[0]])  # exact: a - s*s
        return f64_to_f32(em, s, rem, mode)
    raise ValueError(op)


# ---------------------------------------------------------------- narrow formats
@dataclass(frozen=True)
class Fmt:
    """A binary floating-point encoding narrower than f32."""

    bits: int  # width of the encoding, sign included
    ebits: int
    mbits: int
    has_inf: bool
    nan: int  # the canonical NaN this backend produces

    @property
    def max_finite(self) -> int:
        top = ((1 << self.ebits) - 1) << self.mbits
        # below the infinity; e4m3 has none: S.1111.111 is its only NaN, S.1111.110 = 448 the max
        return top - 1 if self.has_inf else (top | ((1 << self.mbits) - 1)) - 1

    @property
    def bias(self) -> int:
        return (1 << (self.ebits - 1)) - 1


FMTS = {
    "f16": Fmt(16, 5, 10, True, 0x7FFF),
    "bf16": Fmt(16, 8, 7, True, 0x7FFF),
    "tf32": Fmt(19, 8, 10, True, 0x3FFFF),
    "e4m3": Fmt(8, 4, 3, False, 0x7F),
    "e5m2": Fmt(8, 5, 2, True, 0x7F),
}


def round_small(em, x, fmt: str, mode: str, satfinite: bool = False, relu: bool = False):
    """Round an f32 value (exact, or rounded to odd from a wider value) to a narrow format in
    mode rn/rna/rz/rm/rp. Returns the encoding as i32 (sign at bit fmt.bits - 1).

    `satfinite`: overflow and ±inf give ±max finite; `relu`: negative results give +0.
    NaN gives the format's canonical NaN."""
    F = FMTS[fmt]
    b = em.b

    def c(v: int):
        return ci(em, 32, v)

    bits = em.to_bits(x, "f32")
    sign = b.lshr(bits, c(31))
    mag = b.and_(bits, c(0x7FFFFFFF))
    e = b.lshr(mag, c(23))
    normal = b.icmp_unsigned("!=", e, c(0))
    sig = b.select(normal, b.or_(b.and_(mag, c(0x7FFFFF)), c(0x800000)), b.and_(mag, c(0x7FFFFF)))
    e = b.select(normal, e, c(1))
    emin = 1 - F.bias
    d = b.sub(e, c(127 + emin))  # exponent above the format's smallest normal one
    pos = b.icmp_signed(">", d, c(0))
    dpos = b.select(pos, d, c(0))
    under = b.select(pos, c(0), b.sub(c(0), d))
    shift = b.add(under, c(23 - F.mbits))
    shift = b.select(b.icmp_unsigned(">", shift, c(31)), c(31), shift)
    trunc = b.lshr(sig, shift)
    rem = b.and_(sig, b.sub(b.shl(c(1), shift), c(1)))
    half = b.shl(c(1), b.sub(shift, c(1)))
    base = b.add(b.shl(dpos, c(F.mbits)), trunc)
    neg = b.icmp_unsigned("!=", sign, c(0))
    inexact = b.icmp_unsigned("!=", rem, c(0))
    if mode == "rn":
        tie = b.and_(b.icmp_unsigned("==", rem, half), b.icmp_unsigned("!=", b.and_(trunc, c(1)), c(0)))
        inc = b.or_(b.icmp_unsigned(">", rem, half), tie)
    elif mode == "rna":
        inc = b.icmp_unsigned(">=", rem, half)
    elif mode == "rz":
        inc = None
    elif mode == "rm":
        inc = b.and_(neg, inexact)
    elif mode == "rp":
        inc = b.and_(b.not_(neg), inexact)
    else:
        raise ValueError(mode)
    res = base if inc is None else b.add(base, b.zext(inc, em.bty("u32")))
    mx = F.max_finite
    if satfinite:
        ovf_val = c(mx)
    elif not F.has_inf:
        ovf_val = c(F.nan)
    elif mode in ("rn", "rna"):
        ovf_val = c(mx + 1)
    elif mode == "rz":
        ovf_val = c(mx)
    else:  # rm: positive overflow stops at max, negative goes to -inf; rp the other way
        ovf_val = b.select(neg, c(mx + 1), c(mx)) if mode == "rm" else b.select(neg, c(mx), c(mx + 1))
    res = b.select(b.icmp_unsigned(">", res, c(mx)), ovf_val, res)
    is_inf = b.icmp_unsigned("==", mag, c(0x7F800000))
    inf_val = c(mx) if satfinite else c(mx + 1 if F.has_inf else F.nan)
    res = b.select(is_inf, inf_val, res)
    res = b.or_(res, b.shl(sign, c(F.bits - 1)))
    if relu:
        res = b.select(neg, c(0), res)
    return b.select(b.icmp_unsigned(">", mag, c(0x7F800000)), c(F.nan), res)


def small_to_f32(em, code, fmt: str):
    """Decode a narrow-format encoding (i32 holding `fmt.bits` bits) to an exact f32."""
    F = FMTS[fmt]
    b = em.b

    def c(v: int):
        return ci(em, 32, v)

    sign = b.shl(b.lshr(code, c(F.bits - 1)), c(31))
    mag = b.and_(code, c((1 << (F.bits - 1)) - 1))
    e = b.lshr(mag, c(F.mbits))
    m = b.and_(mag, c((1 << F.mbits) - 1))
    # normal: rebias the exponent; subnormal: m * 2^(emin - mbits), exact in f32
    normal = b.or_(b.shl(b.add(e, c(127 - F.bias)), c(23)), b.shl(m, c(23 - F.mbits)))
    scale = em.const_bits("f32", (127 + 1 - F.bias - F.mbits) << 23)
    sub = b.fmul(b.uitofp(m, em.ty("f32")), scale)
    v = b.select(b.icmp_unsigned("==", e, c(0)), em.to_bits(sub, "f32"), normal)
    top = (1 << F.ebits) - 1
    if F.has_inf:
        special = b.icmp_unsigned("==", e, c(top))
        inf_or_nan = b.select(b.icmp_unsigned("==", m, c(0)), c(0x7F800000), c(0x7FFFFFFF))
        v = b.select(special, inf_or_nan, v)
        v = b.or_(v, sign)
        return em.to_value(b.select(b.icmp_unsigned(">", mag, c(top << F.mbits)), c(0x7FFFFFFF), v), "f32")
    v = b.or_(v, sign)
    return em.to_value(b.select(b.icmp_unsigned("==", mag, c((1 << (F.bits - 1)) - 1)), c(0x7FFFFFFF), v), "f32")


def f16_to_f32(em, h16):
    """An f16 bit pattern (i16) as an exact f32 value."""
    return em.b.fpext(em.b.bitcast(h16, em.ty("f16")), em.ty("f32"))


def bf16_to_f32(em, h16):
    return em.to_value(em.b.shl(em.b.zext(h16, em.bty("u32")), ci(em, 32, 16)), "f32")


def to_f32(em, h16, elem: str):
    return f16_to_f32(em, h16) if elem == "f16" else bf16_to_f32(em, h16)


def from_f32(em, x, elem: str, mode: str = "rn", **kw):
    """An f32 value (exact or rounded to odd) rounded to f16/bf16 bits (i16)."""
    b = em.b
    if elem == "f16" and mode == "rn" and not kw:
        h = b.bitcast(b.fptrunc(x, em.ty("f16")), em.bty("b16"))
        return b.select(is_nan(em, x), ci(em, 16, 0x7FFF), h)
    return b.trunc(round_small(em, x, elem, mode, **kw), em.bty("b16"))


# ---------------------------------------------------------------- integers as f64 pairs
def int_to_f64_pair(em, x, signed: bool, width: int):
    """An integer (iN bits) as s + e in f64 (e None when s is exact)."""
    b = em.b
    if width <= 32:
        x = b.sext(x, em.bty("s64")) if signed else b.zext(x, em.bty("u64"))
        return b.sitofp(x, em.ty("f64")), None
    lo = b.and_(x, ci(em, 64, 0xFFFFF))
    hi = b.sub(x, lo)  # at most 44 significant bits: exact in f64
    h = b.sitofp(hi, em.ty("f64")) if signed else b.uitofp(hi, em.ty("f64"))
    return two_sum(em, h, b.uitofp(lo, em.ty("f64")))


# ---------------------------------------------------------------- approximate functions
_LN2 = 0.6931471805599453
_INV_FACT = [1.0 / f for f in (1, 1, 2, 6, 24, 120, 720, 5040, 40320, 362880, 3628800, 39916800, 479001600)]


def horner(em, x, coeffs: list[float]):
    """c0 + x*(c1 + x*(c2 + ...)) in the type of x (f64 here)."""
    b = em.b
    acc = em.const("f64", coeffs[-1])
    for cf in reversed(coeffs[:-1]):
        acc = b.fadd(b.fmul(acc, x), em.const("f64", cf))
    return acc


def exp2_f64(em, x):
    """2^x for an f64 x: clamped to [-1100, 1100] first (NaN stays NaN); < 1e-15 relative."""
    b = em.b
    x = b.select(b.fcmp_ordered("<", x, em.const("f64", -1100.0)), em.const("f64", -1100.0), x)
    x = b.select(b.fcmp_ordered(">", x, em.const("f64", 1100.0)), em.const("f64", 1100.0), x)
    k = em.intrinsic("llvm.roundeven", [x])
    f = b.fsub(x, k)  # exact, |f| <= 0.5
    y = b.fmul(f, em.const("f64", _LN2))
    p = horner(em, y, _INV_FACT[:13])  # e^y, |y| <= 0.35: Taylor to y^12
    ki = b.fptosi(b.select(is_nan(em, k), em.const("f64", 0.0), k), em.bty("s64"))
    # 2^k as two factors (k may lie outside the normal exponent range)
    k1 = b.ashr(ki, ci(em, 64, 1))
    k2 = b.sub(ki, k1)
    s1 = em.to_value(b.shl(b.add(k1, ci(em, 64, 1023)), ci(em, 64, 52)), "f64")
    s2 = em.to_value(b.shl(b.add(k2, ci(em, 64, 1023)), ci(em, 64, 52)), "f64")
    return b.fmul(b.fmul(p, s1), s2)


def ex2_f32(em, x):
    """ex2.approx.f32: 2^x, correctly rounded up to the final rounding (GPU: 2 ulp)."""
    return em.b.fptrunc(exp2_f64(em, fpext(em, x)), em.ty("f32"))


def log2_f64(em, xd):
    """log2 of a positive normal f64 (callers handle zero, negative, inf, NaN)."""
    b = em.b
    bits = em.to_bits(xd, "f64")
    e = b.sub(b.lshr(bits, ci(em, 64, 52)), ci(em, 64, 1023))
    m = em.to_value(b.or_(b.and_(bits, ci(em, 64, (1 << 52) - 1)), ci(em, 64, 1023 << 52)), "f64")
    big = b.fcmp_ordered(">", m, em.const("f64", 1.4142135623730951))
    m = b.select(big, b.fmul(m, em.const("f64", 0.5)), m)
    e = b.select(big, b.add(e, ci(em, 64, 1)), e)
    f = b.fdiv(b.fsub(m, em.const("f64", 1.0)), b.fadd(m, em.const("f64", 1.0)))  # |f| <= 0.172
    f2 = b.fmul(f, f)
    series = horner(em, f2, [1.0 / (2 * i + 1) for i in range(9)])  # atanh(f)/f to f^16
    ln_m = b.fmul(b.fmul(em.const("f64", 2.0), f), series)
    return b.fadd(b.fmul(ln_m, em.const("f64", 1.0 / _LN2)), b.sitofp(e, em.ty("f64")))


def lg2_f32(em, x):
    """lg2.approx.f32 with its special cases: 0 → -inf, negative → NaN, +inf → +inf."""
    b = em.b
    xd = fpext(em, x)
    safe = b.select(b.fcmp_ordered(">", xd, em.const("f64", 0.0)), xd, em.const("f64", 1.0))
    r = log2_f64(em, safe)
    r = b.select(b.fcmp_ordered("==", xd, em.const("f64", 0.0)), em.const("f64", float("-inf")), r)
    r = b.select(b.fcmp_unordered("<", xd, em.const("f64", 0.0)), em.const("f64", float("nan")), r)
    r = b.select(b.fcmp_ordered("==", xd, em.const("f64", float("inf"))), xd, r)
    return b.fptrunc(r, em.ty("f32"))


_INV_2PI_F32 = 0x3E22F983  # 1/(2 pi) rounded to f32, the constant of FMUL.RZ before MUFU.SIN
_SIN = [0.0, 1.0, 0.0, -_INV_FACT[3], 0.0, _INV_FACT[5], 0.0, -_INV_FACT[7], 0.0, _INV_FACT[9],
        0.0, -_INV_FACT[11]]
_COS = [1.0, 0.0, -_INV_FACT[2], 0.0, _INV_FACT[4], 0.0, -_INV_FACT[6], 0.0, _INV_FACT[8], 0.0,
        -_INV_FACT[10], 0.0, _INV_FACT[12]]


def sincos_f32(em, x, want: str):
    """sin/cos.approx.f32 as the GPU computes them: the argument in turns is x * (1/2pi)
    rounded towards zero in f32 (what bounds the error for large |x|), then sin/cos of 2pi
    times that, here to about 1e-10 absolute."""
    b = em.b
    xd = fpext(em, x)
    t = f64_to_f32(em, b.fmul(xd, fpext(em, em.const_bits("f32", _INV_2PI_F32))), None, "rz")
    td = fpext(em, t)
    k4 = em.intrinsic("llvm.roundeven", [b.fmul(td, em.const("f64", 4.0))])
    f = b.fsub(td, b.fmul(k4, em.const("f64", 0.25)))  # exact, |f| <= 1/8
    y = b.fmul(f, em.const("f64", 6.283185307179586))
    q = b.fsub(k4, b.fmul(em.intrinsic("llvm.floor", [b.fmul(k4, em.const("f64", 0.25))]), em.const("f64", 4.0)))
    q = b.fptosi(b.select(is_nan(em, q), em.const("f64", 0.0), q), em.bty("s32"))
    if want == "cos":
        q = b.add(q, ci(em, 32, 1))  # cos(a) = sin(a + pi/2)
    y2 = b.fmul(y, y)
    s = b.fmul(y, horner(em, y2, _SIN[1::2]))
    c = horner(em, y2, _COS[0::2])
    odd = b.icmp_unsigned("!=", b.and_(q, ci(em, 32, 1)), ci(em, 32, 0))
    r = b.select(odd, c, s)
    r = b.select(b.icmp_unsigned("!=", b.and_(q, ci(em, 32, 2)), ci(em, 32, 0)), b.fneg(r), r)
    r = b.fptrunc(r, em.ty("f32"))
    if want == "sin":
        r = b.select(b.fcmp_ordered("==", x, em.const("f32", 0.0)), x, r)  # sin(-0) = -0
    return r


def tanh_f64(em, xd):
    """tanh of an f64, to about 1e-12 relative (|x| < 2^-13 gives x itself)."""
    b = em.b
    a = em.intrinsic("llvm.fabs", [xd])
    e = exp2_f64(em, b.fmul(a, em.const("f64", -2.0 / _LN2)))  # e^(-2|x|)
    t = b.fdiv(b.fsub(em.const("f64", 1.0), e), b.fadd(em.const("f64", 1.0), e))
    t = em.intrinsic("llvm.copysign", [t, xd])
    return b.select(b.fcmp_ordered("<", a, em.const("f64", 2.0 ** -13)), xd, t)


def tanh_f32(em, x):
    return em.b.fptrunc(tanh_f64(em, fpext(em, x)), em.ty("f32"))
