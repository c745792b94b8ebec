"""Floating-point instructions on f32 and f64 (PTX ISA §9.7.3): add sub mul fma mad div rcp
sqrt rsqrt sin cos lg2 ex2 tanh neg abs min max copysign testp. The f16/bf16 forms of the
shared opcodes are handed to cuport.isa.half.

IEEE instructions round as `.rn/.rz/.rm/.rp` say (directed modes exactly, see fprt), `.ftz`
flushes f32 subnormal inputs, and results that are tiny after rounding (rounded to 24 bits
with an unbounded exponent, below 2^-126: FLT_MIN * (1 - 2^-24) → 0 although it rounds to
FLT_MIN in the subnormal range; see fprt.flush_tiny), to zero of the same sign (f64 never
flushes); `.sat` clamps to [0, 1] with NaN → +0. f32 results that are NaN are the GPU's
canonical NaN 0x7fffffff; f64 ones propagate a NaN operand quieted, b's before a's before c's
for add/sub/mul/fma (DADD/DMUL/DFMA return their second source's NaN first), a's before b's
for div (ptxas's code), b's for min/max; an invalid operation on numbers gives
0xfff8000000000000 (fprt's docstring has the rules and evidence).

A `mul` followed by an `add` is never fused. This is a deliberate difference from the GPU:
ptxas may contract `mul.f32` + `add.f32` without a rounding modifier into one FFMA (the
H200 answers fma(a, b, c) for the test case in tests/isa/cases/floating.py), but the PTX
ISA only permits, never requires, that contraction, and cuport keeps the two roundings the
program wrote so that results do not depend on an optimiser's choices.

Approximate instructions follow the GPU's special cases and stay within the documented error
(div.approx 2 ulp for |b| in [2^-126, 2^126], zero for larger |b| (NaN when a is infinite);
rcp.approx 1 ulp; sqrt.approx 2^-23 relative; rsqrt.approx 2^-22.9; ex2.approx 2 ulp;
lg2.approx 2^-22 absolute in (0.5, 2), relative elsewhere; sin/cos.approx 2^-20.5 absolute in
[-2pi, 2pi]; tanh.approx 2^-11 relative). Our values are closer to the exact ones than the
hardware's; sin/cos reproduce the hardware's argument reduction (x * 1/2pi rounded towards
zero in f32), so large arguments drift from the true sine exactly as they do on the GPU.
"""

from __future__ import annotations

from ..ptx import ir, ptxas_order
from ..ptx.ir import TYPE_BITS
from . import fprt, half
from .fprt import flush, saturate  # noqa: F401 (used by compare.py and others)
from .registry import lowers, type_suffix

_ROUND = ("rn", "rz", "rm", "rp")
_LLOP = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}


def rounding(ins: ir.Instr, default: str | None = "rn") -> str | None:
    return next((m for m in ins.mods if m in _ROUND), default)


def _check(em, ins: ir.Instr, t: str) -> None:
    if t not in ("f32", "f64"):
        raise em.error(f"`{ins.op}` on .{t} is not supported")
    if t == "f64" and "ftz" in ins.mods and "approx" not in ins.mods:
        raise em.error("`.ftz` on an f64 instruction")


def operands(em, ins: ir.Instr, t: str, n: int):
    vals = [em.read(ins.args[1 + i], t) for i in range(n)]
    if "ftz" in ins.mods:
        vals = [flush(em, v, t) for v in vals]
    return vals


def result_bits(em, v, t: str, srcs: list):
    """The bits to write for the result `v` of an operation on `srcs` (in the order in which
    their NaNs win, fprt.nan_order): the NaN rules. An f32 result whose canonical NaN the
    backend defers to the reads that show it (em.nan_deferred) keeps the host's."""
    if t == "f64":
        return fprt.nan_f64(em, v, srcs)
    if t == "f32" and em.nan_deferred(em.ins):
        return em.to_bits(v, t)
    return fprt.canon_nan(em, v, t)


_FTZ_SCALE = 32  # 2^32 lifts every tiny f32 result into the normal range


def ftz(em, op: str, args: list, mode: str, v):
    """.ftz on the f32 result `v` of `op(args)` rounded in `mode`: zero when tiny after
    rounding. The test recomputes the operation on operands scaled by 2^32 (exact: an operand
    that large cannot take part in a tiny result, and overflowing to inf then leaves v alone)."""
    if op in ("fadd", "fsub", "sqrt"):  # a tiny sum is exact, a root of a normal number not tiny
        return flush(em, v, "f32")
    k = em.const("f32", 2.0 ** _FTZ_SCALE)
    xs = list(args)
    xs[0] = em.b.fmul(xs[0], k)
    if op == "fma":
        xs[2] = em.b.fmul(xs[2], k)
    return fprt.flush_tiny(em, v, compute(em, "f32", op, xs, mode), _FTZ_SCALE)


def finish(em, ins: ir.Instr, t: str, op: str, args: list, mode: str) -> None:
    """Compute `op(args)` in `mode`, then .ftz, .sat and the NaN rules; write the destination."""
    v = compute(em, t, op, args, mode)
    if "ftz" in ins.mods:
        v = ftz(em, op, args, mode, v)
    if "sat" in ins.mods:
        v = saturate(em, v, t)
    em.write(ins.args[0], t, result_bits(em, v, t, fprt.nan_order(op, _slots(em, ins, t, op, args))))


def _slots(em, ins: ir.Instr, t: str, op: str, args: list) -> list:
    """The operands in the order of ptxas's source slots: it may exchange an f64 add/sub/mul/
    fma's a and b (ptx/ptxas_order.py), and which NaN the GPU returns follows the slots."""
    if t == "f64" and op in ("fadd", "fsub", "fmul", "fma") and ptxas_order.swapped(em.fn, ins):
        return [args[1], args[0], *args[2:]]
    return args


def compute(em, t: str, op: str, args: list, mode: str):
    """fadd/fsub/fmul/fdiv/fma/sqrt of `args` rounded in `mode`."""
    if mode == "rn":
        if op == "fma":
            return em.intrinsic("llvm.fma", args)
        if op == "sqrt":
            return em.intrinsic("llvm.sqrt", args)
        return getattr(em.b, op)(*args)
    if t == "f32":
        return fprt.directed_f32(em, op, args, mode)
    return em.directed_f64(op, args, mode)


def _mixed(ins: ir.Instr) -> str | None:
    """The f16/bf16 operand type of a mixed-precision f32 instruction (`add.rn.f32.f16`)."""
    ts = [m for m in ins.mods if m in TYPE_BITS]
    return ts[1] if len(ts) == 2 and ts[0] == "f32" and ts[1] in ("f16", "bf16") else None


def _mixed_operands(em, ins: ir.Instr, low: str, n_low: int, n: int) -> list:
    """The first `n_low` operands converted exactly from f16/bf16, the rest f32."""
    vals = [fprt.to_f32(em, em.read_bits(ins.args[1 + i], "b16"), low) for i in range(n_low)]
    return vals + [em.read(ins.args[1 + i], "f32") for i in range(n_low, n)]


@lowers("add", "sub", "mul", kind="float")
def lower_add(em, ins: ir.Instr) -> None:
    """add/sub/mul; mixed precision `add/sub{.rnd}{.sat}.f32.{f16,bf16} d, a, c` (sm_100)
    converts a exactly and computes in f32."""
    low = _mixed(ins)
    if low is not None and ins.op != "mul":
        return finish(em, ins, "f32", _LLOP[ins.op], _mixed_operands(em, ins, low, 1, 2), rounding(ins))
    t = type_suffix(ins)
    if t in half.HALF:
        return half.lower_arith(em, ins)
    _check(em, ins, t)
    finish(em, ins, t, _LLOP[ins.op], operands(em, ins, t, 2), rounding(ins))


@lowers("fma", "mad", kind="float")
def lower_fma(em, ins: ir.Instr) -> None:
    """fma.rnd and mad.rnd (the same instruction since sm_20); mad.f32 without a rounding
    modifier is legacy PTX that ptxas reads as mad.rn.f32."""
    low = _mixed(ins)
    if low is not None:  # fma.rnd{.sat}.f32.{f16,bf16} d, a, b, c (sm_100): a, b converted
        return finish(em, ins, "f32", "fma", _mixed_operands(em, ins, low, 2, 3), rounding(ins))
    t = type_suffix(ins)
    if t in half.HALF:
        return half.lower_fma(em, ins)
    _check(em, ins, t)
    finish(em, ins, t, "fma", operands(em, ins, t, 3), rounding(ins))


@lowers("div", kind="float")
def lower_div(em, ins: ir.Instr) -> None:
    """div.rnd (IEEE), div.full (2 ulp everywhere: the IEEE quotient), div.approx (a * 1/b).
    Legacy PTX (ISA < 1.4) without .approx/.full/.rnd meant div.approx.ftz.f32 / div.rn.f64;
    rcp, sqrt, rsqrt, sin, cos, lg2 and ex2 likewise default to their approximate .ftz form."""
    t = type_suffix(ins)
    _check(em, ins, t)
    b = em.b
    mode = rounding(ins, None)
    if t == "f64" or mode is not None:
        return finish(em, ins, t, "fdiv", operands(em, ins, t, 2), mode or "rn")
    flushing = "ftz" in ins.mods or mode is None and "full" not in ins.mods and "approx" not in ins.mods
    a, c = (em.read(x, t) for x in ins.args[1:3])
    if flushing:
        a, c = flush(em, a, t), flush(em, c, t)
    if "full" in ins.mods:
        v = b.fdiv(a, c)
        if flushing:
            v = ftz(em, "fdiv", [a, c], "rn", v)
    else:
        # d = a * (1/b); for |b| > 2^126 the reciprocal is below 2^-126 and the hardware's
        # flushes it: the quotient is a zero of the right sign (NaN when a is inf). Without
        # .ftz, ptxas first scales a and b by 2^24 when |b| < 2^-126 (FSETP.GEU |b|, FLT_MIN;
        # FMUL by 2^24), so a denormal b divides like a normal one (-0 / -denormal = +0, x / x = 1)
        if not flushing:
            tiny = b.fcmp_ordered("<", em.intrinsic("llvm.fabs", [c]), em.const(t, 2.0 ** -126))
            k = em.const(t, 2.0 ** 24)
            a, c = b.select(tiny, b.fmul(a, k), a), b.select(tiny, b.fmul(c, k), c)
        r = b.fdiv(em.const(t, 1.0), c)
        big = b.fcmp_ordered(">", em.intrinsic("llvm.fabs", [c]), em.const(t, 2.0 ** 126))
        r = b.select(big, em.to_value(b.and_(em.to_bits(r, t), em.const_int(32, 1 << 31)), t), r)
        v = b.fmul(a, r)
        if flushing:
            v = ftz(em, "fmul", [a, r], "rn", v)
    em.write(ins.args[0], t, fprt.canon_nan(em, v, t))


@lowers("rcp")
def lower_rcp(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    if t == "f64" and "approx" in ins.mods:
        return _upper_word_f64(em, ins, "rcp")
    _check(em, ins, t)
    mode = rounding(ins, None)
    if t == "f32" and mode is None:
        # rcp.approx.f32: 1 ulp; the correctly rounded reciprocal is within it
        (a,) = operands(em, ins, t, 1)
        if "approx" not in ins.mods:  # legacy rcp.f32 = rcp.approx.ftz.f32
            a = flush(em, a, t)
        one = em.const(t, 1.0)
        v = em.b.fdiv(one, a)
        if "ftz" in ins.mods or "approx" not in ins.mods:
            v = ftz(em, "fdiv", [one, a], "rn", v)
        em.write(ins.args[0], t, fprt.canon_nan(em, v, t))
        return
    (a,) = operands(em, ins, t, 1)
    finish(em, ins, t, "fdiv", [em.const(t, 1.0), a], mode or "rn")


@lowers("sqrt")
def lower_sqrt(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    _check(em, ins, t)
    mode = rounding(ins, None)
    legacy = t == "f32" and mode is None and "approx" not in ins.mods
    (a,) = operands(em, ins, t, 1)
    if legacy:
        a = flush(em, a, t)
    v = compute(em, t, "sqrt", [a], mode or "rn")  # sqrt.approx: 2^-23 relative, exact here
    if "ftz" in ins.mods or legacy:
        v = flush(em, v, t)
    em.write(ins.args[0], t, result_bits(em, v, t, [a]))


@lowers("rsqrt")
def lower_rsqrt(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    if t == "f64" and "ftz" in ins.mods:
        return _upper_word_f64(em, ins, "rsqrt")
    _check(em, ins, t)
    b = em.b
    (a,) = operands(em, ins, t, 1)
    legacy = t == "f32" and "approx" not in ins.mods
    if legacy:
        a = flush(em, a, t)
    # two correct roundings: within 2^-23 relative of 1/sqrt(a) (the GPU: 2^-22.9)
    v = b.fdiv(em.const(t, 1.0), em.intrinsic("llvm.sqrt", [a]))
    v = flush(em, v, t) if "ftz" in ins.mods or legacy else v
    em.write(ins.args[0], t, result_bits(em, v, t, [a]))  # f64: ptxas returns x + x for NaN


def _upper_word_f64(em, ins: ir.Instr, op: str) -> None:
    """rcp.approx.ftz.f64 / rsqrt.approx.ftz.f64: computed from the upper 32 bits of the
    operand (sign, exponent, 20 mantissa bits); the lower 32 result bits are zero; subnormal
    inputs and results flush; NaN gives 0x7fffffff00000000."""
    b = em.b
    hi_mask = em.const_int(64, 0xFFFFFFFF00000000)
    x = em.read_bits(ins.args[1], "b64")
    a = em.to_value(b.and_(x, hi_mask), "f64")
    a = _flush_f64(em, a)
    one = em.const("f64", 1.0)
    v = b.fdiv(one, a) if op == "rcp" else b.fdiv(one, em.intrinsic("llvm.sqrt", [a]))
    v = _flush_f64(em, v)
    bits = b.and_(em.to_bits(v, "f64"), hi_mask)
    bits = b.select(fprt.is_nan(em, v), em.const_int(64, 0x7FFFFFFF00000000), bits)
    em.write(ins.args[0], "f64", bits)


def _flush_f64(em, v):
    b = em.b
    bits = em.to_bits(v, "f64")
    sub = b.icmp_unsigned("==", b.and_(bits, em.const_int(64, 0x7FF0000000000000)), em.const_int(64, 0))
    return em.to_value(b.select(sub, b.and_(bits, em.const_int(64, 1 << 63)), bits), "f64")


_APPROX = {
    "sin": lambda em, x: fprt.sincos_f32(em, x, "sin"),
    "cos": lambda em, x: fprt.sincos_f32(em, x, "cos"),
    "lg2": fprt.lg2_f32,
    "ex2": fprt.ex2_f32,
    "tanh": fprt.tanh_f32,
}


@lowers("sin", "cos", "lg2", "ex2", "tanh")
def lower_approx(em, ins: ir.Instr) -> None:
    """The special-function-unit approximations (.approx; legacy PTX without it flushes)."""
    t = type_suffix(ins)
    if t in half.HALF and ins.op in ("ex2", "tanh"):
        return half.lower_approx(em, ins)
    if t != "f32":
        raise em.error(f"`{ins.op}` on .{t} is not supported")
    ftz = "ftz" in ins.mods or "approx" not in ins.mods
    x = em.read(ins.args[1], t)
    if ftz:
        x = flush(em, x, t)
    v = _APPROX[ins.op](em, x)
    em.write(ins.args[0], t, fprt.canon_nan(em, flush(em, v, t) if ftz else v, t))


@lowers("neg", "abs", kind="float")
def lower_neg(em, ins: ir.Instr) -> None:
    """Sign-bit operations. ptxas implements them as additions with operand modifiers (FADD
    -RZ, -a; DADD -RZ, |a|), so a NaN input is treated as by any addition: f32 gives the
    canonical NaN, f64 the input NaN quieted with its sign unchanged."""
    t = type_suffix(ins)
    if t in half.HALF:
        return half.lower_signop(em, ins)
    _check(em, ins, t)
    b = em.b
    (a,) = operands(em, ins, t, 1)
    w = 32 if t == "f32" else 64
    x = em.to_bits(a, t)
    sign = em.const_int(w, 1 << (w - 1))
    x = b.xor(x, sign) if ins.op == "neg" else b.and_(x, em.const_int(w, (1 << (w - 1)) - 1))
    if t == "f64":
        q = b.or_(em.to_bits(a, t), em.const_int(64, 1 << 51))
        return em.write(ins.args[0], t, b.select(fprt.is_nan(em, a), q, x))
    v = em.to_value(x, t)
    em.write(ins.args[0], t, fprt.canon_nan(em, flush(em, v, t) if "ftz" in ins.mods else v, t))


@lowers("min", "max", kind="float")
def lower_minmax(em, ins: ir.Instr) -> None:
    """PTX min/max: a NaN operand is ignored, -0 < +0; both NaN give f32's canonical NaN, and
    for f64 b quieted (ptxas: DSETP.MIN/MAX picks b's words and ors in the quiet bit); `.NaN`
    propagates NaN; `.abs` compares magnitudes, `.xorsign` then gives the result the XOR of
    the operands' signs; three operands (sm_100) chain the two-operand form."""
    t = type_suffix(ins)
    if _same_operands(ins, t):
        return _minmax_of_itself(em, ins, t)
    if t in half.HALF:
        return half.lower_minmax(em, ins)
    _check(em, ins, t)
    if "xorsign" in ins.mods and t != "f32":
        raise em.error("`.xorsign` on f64")
    n = len(ins.args) - 1
    vals = operands(em, ins, t, n)
    v = minmax_values(em, ins, t, vals)
    if "ftz" in ins.mods:
        v = flush(em, v, t)
    order = vals[::-1]  # two NaNs: b's (DSETP.MIN/MAX), b being the operand in ptxas's second slot
    if t == "f64" and n == 2 and ptxas_order.swapped(em.fn, ins):
        order = vals
    em.write(ins.args[0], t, result_bits(em, v, t, order))


def _same_operands(ins: ir.Instr, t: str) -> bool:
    """min/max.{f16,f32,f64} of one register with itself, which ptxas folds (see below)."""
    return (t in ("f16", "f32", "f64") and len(ins.args) == 3 and isinstance(ins.args[1], ir.Reg)
            and ins.args[1] == ins.args[2] and not {"NaN", "abs", "xorsign", "relu"} & set(ins.mods))


def _minmax_of_itself(em, ins: ir.Instr, t: str) -> None:
    """ptxas folds min/max(x, x) of f16, f32 and f64 into x itself, so a NaN keeps its bits
    (the H200: __hmax(x, x) of f16 0xfe01 is 0xfe01, where HMNMX2 would give 0x7fff); with
    .ftz it emits FADD.FTZ / HADD2.FTZ x, -0 (flushed, canonical NaN). f16x2, bf16, bf16x2
    and .NaN/.abs/.xorsign are computed (HMNMX2, FMNMX.NAN)."""
    if "ftz" not in ins.mods:
        bt = "b16" if t == "f16" else t
        return em.write(ins.args[0], bt, em.read_bits(ins.args[1], bt))
    if t == "f16":
        h = em.read_bits(ins.args[1], "b16")
        h = fprt.flush_bits(em, h, "f16")
        nan = em.b.icmp_unsigned(">", em.b.and_(h, em.const_int(16, 0x7FFF)), em.const_int(16, 0x7C00))
        return em.write(ins.args[0], "b16", em.b.select(nan, em.const_int(16, 0x7FFF), h))
    (a,) = operands(em, ins, t, 1)
    em.write(ins.args[0], t, fprt.canon_nan(em, a, t))


def minmax_values(em, ins: ir.Instr, t: str, vals: list, signs: list | None = None):
    """min/max of float values of type `t` (f32 or f64, f16/bf16 passed in as f32) with the
    instruction's modifiers (callers canonicalise a NaN result). `signs`: the operands' sign
    bits where `vals` may have lost a NaN's (a GPU's f16 -> f32 conversion makes NaNs
    canonical, so `.xorsign` reads the halves' own bits)."""
    b = em.b
    xorsign = None
    if "xorsign" in ins.mods:
        sa, sb = signs[:2] if signs is not None else (fprt.signbit(em, v, _bt(t)) for v in vals[:2])
        xorsign = b.xor(sa, sb)
    if "abs" in ins.mods:
        vals = [em.intrinsic("llvm.fabs", [v]) for v in vals]
    name = ("llvm.minimum" if ins.op == "min" else "llvm.maximum") if "NaN" in ins.mods else \
        ("llvm.minimumnum" if ins.op == "min" else "llvm.maximumnum")
    v = vals[0]
    for c in vals[1:]:
        v = em.intrinsic(name, [v, c])
    if xorsign is not None:
        neg = em.b.fneg(em.intrinsic("llvm.fabs", [v]))
        v = b.select(b.and_(xorsign, b.not_(fprt.is_nan(em, v))), neg, em.intrinsic("llvm.fabs", [v]))
        # `.abs` already made v non-negative; the sign is now the XOR of the inputs' signs
    return v


def _bt(t: str) -> str:
    return "f64" if t == "f64" else "f32"


@lowers("copysign")
def lower_copysign(em, ins: ir.Instr) -> None:
    """copysign d, a, b: b's magnitude with a's sign (note the operand order)."""
    t = type_suffix(ins)
    _check(em, ins, t)
    b = em.b
    w = 32 if t == "f32" else 64
    a = em.read_bits(ins.args[1], t)
    c = em.read_bits(ins.args[2], t)
    sign = em.const_int(w, 1 << (w - 1))
    em.write(ins.args[0], t, b.or_(b.and_(a, sign), b.and_(c, b.not_(sign))))


@lowers("testp")
def lower_testp(em, ins: ir.Instr) -> None:
    """testp.{finite,infinite,number,notanumber,normal,subnormal}; zero counts as normal."""
    t = type_suffix(ins)
    _check(em, ins, t)
    b = em.b
    w, expmask = (32, 0x7F800000) if t == "f32" else (64, 0x7FF0000000000000)
    x = em.read_bits(ins.args[1], t)
    mag = b.and_(x, em.const_int(w, (1 << (w - 1)) - 1))
    exp = b.and_(x, em.const_int(w, expmask))
    c = em.const_int

    def u(op, x, y):
        return b.icmp_unsigned(op, x, y)

    test = next(m for m in ins.mods if m in ("finite", "infinite", "number", "notanumber", "normal", "subnormal"))
    if test == "finite":
        p = u("!=", exp, c(w, expmask))
    elif test == "infinite":
        p = u("==", mag, c(w, expmask))
    elif test == "number":
        p = u("<=", mag, c(w, expmask))
    elif test == "notanumber":
        p = u(">", mag, c(w, expmask))
    elif test == "normal":
        p = b.and_(u("!=", exp, c(w, expmask)), b.or_(u("!=", exp, c(w, 0)), u("==", mag, c(w, 0))))
    else:
        p = b.and_(u("==", exp, c(w, 0)), u("!=", mag, c(w, 0)))
    em.write(ins.args[0], "pred", p)
