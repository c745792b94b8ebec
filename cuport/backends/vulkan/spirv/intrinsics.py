"""The `llvm.*` intrinsics the isa layer emits, with LLVM's semantics: GLSL.std.450 where it
means the same, short sequences where it does not (GLSL's min/max are undefined on NaN,
its bit instructions take 32-bit operands only, it has no copysign, saturation or funnel
shifts). One function per intrinsic, registered by its name without the type suffixes."""

from __future__ import annotations

import re

from llvmlite import ir as ll

from . import fpmath, subnormal
from .module import GLSL, OP
from .translate import bool_type, is_float, scalar_width, splat

INTRINSICS: dict = {}
_SUFFIX = re.compile(r"^(i\d+|f\d+|bf16|v\d+(i|f)\d+|p\d+)$")


def intrinsic(*names):
    def deco(f):
        for n in names:
            assert n not in INTRINSICS, n
            INTRINSICS[n] = f
        return f
    return deco


def base_name(name: str) -> str:
    parts = name.split(".")
    while len(parts) > 2 and _SUFFIX.match(parts[-1]):
        parts.pop()
    return ".".join(parts)


def call(tr, ins, name: str) -> None:
    f = INTRINSICS.get(base_name(name))
    if f is None:
        raise tr.error(f"intrinsic @{name} not supported")
    r = f(tr, ins, list(ins.args))
    if r is not None:
        tr.define(ins, r)


# ---------------------------------------------------------------------- helpers
def fconst(tr, t: ll.Type, x: float) -> int:
    """A float constant of `t` (a vector: splatted)."""
    if isinstance(t, ll.VectorType):
        e = tr.const(ll.Constant(t.element, x))
        return tr.m.const_composite(tr.ty(t), [e] * t.count)
    return tr.const(ll.Constant(t, x))


def int_type_like(t: ll.Type) -> ll.Type:
    """The integer type of the same shape and width as float type `t`."""
    w = scalar_width(t)
    it = ll.IntType(w)
    return ll.VectorType(it, t.count) if isinstance(t, ll.VectorType) else it


def isnan(tr, t: ll.Type, x: int) -> int:
    return tr.op(OP.OpIsNan, bool_type(tr, t), x)


def select(tr, t: ll.Type, c: int, a: int, b: int) -> int:
    return tr.op(OP.OpSelect, tr.ty(t), c, a, b)


def _glsl(number: int, float_only: bool = False, f64: bool = True):
    def f(tr, ins, args):
        if not f64 and scalar_width(ins.type) == 64:
            raise tr.error(f"{ins.callee.name} on f64 (GLSL.std.450 has it for 16- and 32-bit floats only)")
        return tr.ext(tr.ty(ins.type), number, *(tr.val(a) for a in args))
    return f


for _name, _num in (("llvm.floor", GLSL.Floor), ("llvm.ceil", GLSL.Ceil),
                    ("llvm.trunc", GLSL.Trunc), ("llvm.rint", GLSL.RoundEven),
                    ("llvm.nearbyint", GLSL.RoundEven), ("llvm.roundeven", GLSL.RoundEven),
                    ("llvm.round", GLSL.Round)):
    INTRINSICS[_name] = _glsl(_num)


@intrinsic("llvm.fabs")
def _fabs(tr, ins, args):
    if subnormal.active(tr, ins.type):
        return subnormal.fabs(tr, ins.type, tr.val(args[0]))
    return tr.ext(tr.ty(ins.type), GLSL.FAbs, tr.val(args[0]))


@intrinsic("llvm.fmuladd")
def _fmuladd(tr, ins, args):
    """a * b + c, fused or not (LLVM leaves it open): the device's Fma."""
    t = ins.type
    a, b, c = (tr.val(x) for x in args)
    if subnormal.active(tr, t):
        if tr.float_modes.fused_fma:
            return subnormal.fma(tr, t, a, b, c)
        return subnormal.fadd(tr, t, subnormal.fmul(tr, t, a, b), c)
    if subnormal.fma_active(tr, t) and tr.float_modes.fused_fma:
        return subnormal.fma(tr, t, a, b, c)
    return tr.ext(tr.ty(t), GLSL.Fma, a, b, c)


for _name, _num in (("llvm.exp2", GLSL.Exp2), ("llvm.log2", GLSL.Log2), ("llvm.sin", GLSL.Sin),
                    ("llvm.cos", GLSL.Cos)):
    INTRINSICS[_name] = _glsl(_num, f64=False)


@intrinsic("llvm.sqrt")
def _sqrt(tr, ins, args):
    return fpmath.sqrt(tr, ins.type, tr.val(args[0]))


@intrinsic("llvm.fma")
def _fma(tr, ins, args):
    return fpmath.fma(tr, ins.type, *(tr.val(a) for a in args))


# constrained intrinsics: what fprt.strict emits for f64 in a directed rounding mode; the
# mode comes from the metadata argument, exceptions are ignored (GPUs raise none)
_MD_MODE = {"round.tonearest": "rn", "round.towardzero": "rz", "round.downward": "rm",
            "round.upward": "rp", "round.dynamic": "rn"}
_CONSTRAINED = {"fadd": 2, "fsub": 2, "fmul": 2, "fdiv": 2, "fma": 3, "sqrt": 1}


def _constrained(op: str):
    def f(tr, ins, args):
        n = _CONSTRAINED[op]
        vals, md = args[:n], args[n:]
        strings = [getattr(m, "string", None) for m in md]
        mode = _MD_MODE.get(strings[0]) if strings else None
        if mode is None:
            raise tr.error(f"{ins.callee.name}: rounding {strings[0] if strings else None!r} not supported")
        t = ins.type
        x = [tr.val(v) for v in vals]
        if op == "fsub":
            x[1] = (subnormal.fneg(tr, t, x[1]) if subnormal.active(tr, t)
                    else tr.no_contract(tr.op(OP.OpFNegate, tr.ty(t), x[1])))
        if op in ("fadd", "fsub"):
            return fpmath.add(tr, t, x[0], x[1], mode)
        if op == "fmul":
            return fpmath.mul(tr, t, x[0], x[1], mode)
        if op == "fdiv":
            return fpmath.div(tr, t, x[0], x[1], mode)
        if op == "sqrt":
            return fpmath.sqrt(tr, t, x[0], mode)
        return fpmath.fma(tr, t, x[0], x[1], x[2], mode)
    return f


for _op in _CONSTRAINED:
    INTRINSICS[f"llvm.experimental.constrained.{_op}"] = _constrained(_op)


@intrinsic("llvm.get.rounding")
def _get_rounding(tr, ins, args):
    """The rounding mode is always to nearest (1): constrained intrinsics carry their own."""
    return tr.cint(1)


@intrinsic("llvm.set.rounding")
def _set_rounding(tr, ins, args):
    """Nothing to set: the only instructions that round otherwise are the constrained
    intrinsics, whose metadata says how (fprt.strict brackets them with get/set)."""
    return None


@intrinsic("llvm.copysign")
def _copysign(tr, ins, args):
    t = ins.type
    it = int_type_like(t)
    ti = tr.ty(it)
    a, b = (tr.op(OP.OpBitcast, ti, tr.val(x)) for x in args)
    sign = 1 << (scalar_width(t) - 1)
    mag = tr.op(OP.OpBitwiseAnd, ti, a, splat(tr, it, sign - 1))
    sgn = tr.op(OP.OpBitwiseAnd, ti, b, splat(tr, it, sign))
    return tr.op(OP.OpBitcast, tr.ty(t), tr.op(OP.OpBitwiseOr, ti, mag, sgn))


# ---------------------------------------------------------------------- min and max
def _num_pick(tr, t, a, b, lower: bool) -> int:
    """The smaller (larger) of two numbers, neither NaN; -0 below +0 when they are equal
    (the bits of equal values ORed for the minimum, ANDed for the maximum)."""
    it = int_type_like(t)
    ti = tr.ty(it)
    if subnormal.order_active(tr, t):
        m, eq = subnormal.pick(tr, t, a, b, lower)
    else:
        m = tr.ext(tr.ty(t), GLSL.FMin if lower else GLSL.FMax, a, b)
        eq = tr.op(OP.OpFOrdEqual, bool_type(tr, t), a, b)
    ab = tr.op(OP.OpBitwiseOr if lower else OP.OpBitwiseAnd, ti, tr.op(OP.OpBitcast, ti, a), tr.op(OP.OpBitcast, ti, b))
    return select(tr, t, eq, tr.op(OP.OpBitcast, tr.ty(t), ab), m)


def _minmax(lower: bool, nan_wins: bool, zero_order: bool):
    """minnum/maxnum (a NaN loses, zeros unordered), minimum/maximum (a NaN wins, -0 < +0),
    minimumnum/maximumnum (a NaN loses, -0 < +0)."""
    def f(tr, ins, args):
        t = ins.type
        a, b = tr.val(args[0]), tr.val(args[1])
        na, nb = isnan(tr, t, a), isnan(tr, t, b)
        if zero_order:
            r = _num_pick(tr, t, a, b, lower)
        elif subnormal.order_active(tr, t):
            r = subnormal.pick(tr, t, a, b, lower)[0]
        else:
            r = tr.ext(tr.ty(t), GLSL.FMin if lower else GLSL.FMax, a, b)
        if nan_wins:
            quiet = tr.no_contract(tr.op(OP.OpFAdd, tr.ty(t), a, b))  # a NaN operand, quieted
            return select(tr, t, tr.op(OP.OpLogicalOr, bool_type(tr, t), na, nb), quiet, r)
        r = select(tr, t, nb, a, r)
        both = tr.op(OP.OpLogicalAnd, bool_type(tr, t), na, nb)
        r = select(tr, t, na, b, r)
        return select(tr, t, both, tr.no_contract(tr.op(OP.OpFAdd, tr.ty(t), a, b)), r)
    return f


INTRINSICS["llvm.minnum"] = _minmax(True, False, False)
INTRINSICS["llvm.maxnum"] = _minmax(False, False, False)
INTRINSICS["llvm.minimum"] = _minmax(True, True, True)
INTRINSICS["llvm.maximum"] = _minmax(False, True, True)
INTRINSICS["llvm.minimumnum"] = _minmax(True, False, True)
INTRINSICS["llvm.maximumnum"] = _minmax(False, False, True)


def _int_pick(code: int):
    def f(tr, ins, args):
        t = ins.type
        a, b = tr.val(args[0]), tr.val(args[1])
        return select(tr, t, tr.op(code, bool_type(tr, t), a, b), a, b)
    return f


INTRINSICS["llvm.smin"] = _int_pick(OP.OpSLessThan)
INTRINSICS["llvm.smax"] = _int_pick(OP.OpSGreaterThan)
INTRINSICS["llvm.umin"] = _int_pick(OP.OpULessThan)
INTRINSICS["llvm.umax"] = _int_pick(OP.OpUGreaterThan)


@intrinsic("llvm.abs")
def _abs(tr, ins, args):
    t = ins.type
    a = tr.val(args[0])
    neg = tr.op(OP.OpSNegate, tr.ty(t), a)
    return select(tr, t, tr.op(OP.OpSLessThan, bool_type(tr, t), a, splat(tr, t, 0)), neg, a)


# ---------------------------------------------------------------------- saturation
def _smax_min(t: ll.Type) -> tuple[int, int]:
    w = scalar_width(t)
    return (1 << (w - 1)) - 1, -(1 << (w - 1))


@intrinsic("llvm.uadd.sat")
def _uadd_sat(tr, ins, args):
    t = ins.type
    a, b = tr.val(args[0]), tr.val(args[1])
    r = tr.op(OP.OpIAdd, tr.ty(t), a, b)
    return select(tr, t, tr.op(OP.OpULessThan, bool_type(tr, t), r, a), splat(tr, t, -1), r)


@intrinsic("llvm.usub.sat")
def _usub_sat(tr, ins, args):
    t = ins.type
    a, b = tr.val(args[0]), tr.val(args[1])
    r = tr.op(OP.OpISub, tr.ty(t), a, b)
    return select(tr, t, tr.op(OP.OpULessThan, bool_type(tr, t), a, b), splat(tr, t, 0), r)


def _ssat(sub: bool):
    def f(tr, ins, args):
        t = ins.type
        ti = tr.ty(t)
        a, b = tr.val(args[0]), tr.val(args[1])
        r = tr.op(OP.OpISub if sub else OP.OpIAdd, ti, a, b)
        # overflow: the result's sign differs from a's, and b's sign says it should not
        x = tr.op(OP.OpBitwiseXor, ti, a, r)
        y = tr.op(OP.OpBitwiseXor, ti, a, b) if sub else tr.op(OP.OpBitwiseXor, ti, b, r)
        ovf = tr.op(OP.OpSLessThan, bool_type(tr, t), tr.op(OP.OpBitwiseAnd, ti, x, y), splat(tr, t, 0))
        hi, lo = _smax_min(t)
        neg = tr.op(OP.OpSLessThan, bool_type(tr, t), a, splat(tr, t, 0))
        return select(tr, t, ovf, select(tr, t, neg, splat(tr, t, lo), splat(tr, t, hi)), r)
    return f


INTRINSICS["llvm.sadd.sat"] = _ssat(False)
INTRINSICS["llvm.ssub.sat"] = _ssat(True)


def _fpto_sat(signed: bool):
    def f(tr, ins, args):
        t = ins.type
        ft = args[0].type
        w = scalar_width(t)
        x = tr.val(args[0])
        bt = bool_type(tr, ft)
        if signed:
            hi, lo = (1 << (w - 1)) - 1, -(1 << (w - 1))
            r = tr.op(OP.OpConvertFToS, tr.ty(t), x)
            r = select(tr, t, tr.op(OP.OpFOrdLessThan, bt, x, fconst(tr, ft, float(lo))), splat(tr, t, lo), r)
            r = select(tr, t, tr.op(OP.OpFOrdGreaterThanEqual, bt, x, fconst(tr, ft, 2.0 ** (w - 1))), splat(tr, t, hi), r)
        else:
            r = tr.op(OP.OpConvertFToU, tr.ty(t), x)
            r = select(tr, t, tr.op(OP.OpFOrdLessThan, bt, x, fconst(tr, ft, 0.0)), splat(tr, t, 0), r)
            r = select(tr, t, tr.op(OP.OpFOrdGreaterThanEqual, bt, x, fconst(tr, ft, 2.0 ** w)), splat(tr, t, -1), r)
        return select(tr, t, isnan(tr, ft, x), splat(tr, t, 0), r)
    return f


INTRINSICS["llvm.fptosi.sat"] = _fpto_sat(True)
INTRINSICS["llvm.fptoui.sat"] = _fpto_sat(False)


def _with_overflow(code: int, signed: bool):
    def f(tr, ins, args):
        t = args[0].type
        ti = tr.ty(t)
        a, b = tr.val(args[0]), tr.val(args[1])
        r = tr.op(code, ti, a, b)
        bt = bool_type(tr, t)
        if not signed:
            ovf = tr.op(OP.OpULessThan, bt, r, a) if code == OP.OpIAdd else tr.op(OP.OpULessThan, bt, a, b)
        else:
            x = tr.op(OP.OpBitwiseXor, ti, a, r)
            y = tr.op(OP.OpBitwiseXor, ti, a, b) if code == OP.OpISub else tr.op(OP.OpBitwiseXor, ti, b, r)
            ovf = tr.op(OP.OpSLessThan, bt, tr.op(OP.OpBitwiseAnd, ti, x, y), splat(tr, t, 0))
        return (r, ovf)
    return f


INTRINSICS["llvm.uadd.with.overflow"] = _with_overflow(OP.OpIAdd, False)
INTRINSICS["llvm.usub.with.overflow"] = _with_overflow(OP.OpISub, False)
INTRINSICS["llvm.sadd.with.overflow"] = _with_overflow(OP.OpIAdd, True)
INTRINSICS["llvm.ssub.with.overflow"] = _with_overflow(OP.OpISub, True)


# ---------------------------------------------------------------------- bit counting
def _check_scalar_int(tr, ins, t: ll.Type) -> int:
    if isinstance(t, ll.VectorType) and scalar_width(t) != 32:
        raise tr.error(f"{ins.callee.name} on vectors of i{scalar_width(t)} not supported")
    return scalar_width(t)


def _split64(tr, x: int) -> tuple[int, int]:
    lo = tr.op(OP.OpUConvert, tr.t_i32, x)
    hi = tr.op(OP.OpUConvert, tr.t_i32, tr.op(OP.OpShiftRightLogical, tr.t_i64, x, tr.cint(32, 64)))
    return lo, hi


def _to32(tr, x: int, w: int) -> int:
    return x if w == 32 else tr.op(OP.OpUConvert, tr.t_i32, x)


def _from32(tr, t: ll.Type, x: int, w: int) -> int:
    return x if w == 32 else tr.op(OP.OpUConvert, tr.ty(t), x)


def _i32(t: ll.Type) -> ll.Type:
    return ll.VectorType(ll.IntType(32), t.count) if isinstance(t, ll.VectorType) else ll.IntType(32)


@intrinsic("llvm.ctpop")
def _ctpop(tr, ins, args):
    t = ins.type
    w = _check_scalar_int(tr, ins, t)
    x = tr.val(args[0])
    t32 = tr.ty(_i32(t))
    if w == 64:
        lo, hi = _split64(tr, x)
        n = tr.op(OP.OpIAdd, tr.t_i32, tr.op(OP.OpBitCount, tr.t_i32, lo), tr.op(OP.OpBitCount, tr.t_i32, hi))
        return tr.op(OP.OpUConvert, tr.t_i64, n)
    return _from32(tr, t, tr.op(OP.OpBitCount, t32, _to32(tr, x, w)), w)


def _clz32(tr, t32: int, x: int, t: ll.Type) -> int:
    """Leading zeros of 32-bit x, 32 for 0 (FindUMsb(0) is -1)."""
    msb = tr.ext(t32, GLSL.FindUMsb, x)
    return tr.op(OP.OpISub, t32, splat(tr, _i32(t), 31), msb)


def _ctz32(tr, t32: int, x: int, t: ll.Type) -> int:
    """Trailing zeros of 32-bit x, 32 for 0 (FindILsb(0) is -1)."""
    lsb = tr.ext(t32, GLSL.FindILsb, x)
    zero = tr.op(OP.OpIEqual, bool_type(tr, _i32(t)), x, splat(tr, _i32(t), 0))
    return tr.op(OP.OpSelect, t32, zero, splat(tr, _i32(t), 32), lsb)


def _zeros64(tr, t32: int, t: ll.Type, x: int, leading: bool) -> int:
    """ctlz (`leading`) or cttz of 64-bit x from its 32-bit halves: the zeros of the half
    counted from (hi for leading, lo for trailing), or 32 plus the other's where it is 0."""
    lo, hi = _split64(tr, x)
    near, far, count32 = (hi, lo, _clz32) if leading else (lo, hi, _ctz32)
    znear = tr.op(OP.OpIEqual, tr.t_bool, near, tr.cint(0))
    n = tr.op(OP.OpSelect, tr.t_i32, znear, tr.op(OP.OpIAdd, tr.t_i32, tr.cint(32), count32(tr, t32, far, t)), count32(tr, t32, near, t))
    return tr.op(OP.OpUConvert, tr.t_i64, n)


@intrinsic("llvm.ctlz")
def _ctlz(tr, ins, args):
    t = ins.type
    w = _check_scalar_int(tr, ins, t)
    x = tr.val(args[0])
    t32 = tr.ty(_i32(t))
    if w == 64:
        return _zeros64(tr, t32, t, x, leading=True)
    n = _clz32(tr, t32, _to32(tr, x, w), t)
    if w != 32:
        n = tr.op(OP.OpISub, t32, n, tr.cint(32 - w))
    return _from32(tr, t, n, w)


@intrinsic("llvm.cttz")
def _cttz(tr, ins, args):
    t = ins.type
    w = _check_scalar_int(tr, ins, t)
    x = tr.val(args[0])
    t32 = tr.ty(_i32(t))
    if w == 64:
        return _zeros64(tr, t32, t, x, leading=False)
    x32 = _to32(tr, x, w)
    if w != 32:  # a bit above the value makes 0 count as w
        x32 = tr.op(OP.OpBitwiseOr, t32, x32, tr.cint(1 << w))
    return _from32(tr, t, _ctz32(tr, t32, x32, t), w)


@intrinsic("llvm.bitreverse")
def _bitreverse(tr, ins, args):
    t = ins.type
    w = _check_scalar_int(tr, ins, t)
    x = tr.val(args[0])
    t32 = tr.ty(_i32(t))
    if w == 64:
        lo, hi = _split64(tr, x)
        rlo = tr.op(OP.OpUConvert, tr.t_i64, tr.op(OP.OpBitReverse, tr.t_i32, lo))
        rhi = tr.op(OP.OpUConvert, tr.t_i64, tr.op(OP.OpBitReverse, tr.t_i32, hi))
        return tr.op(OP.OpBitwiseOr, tr.t_i64, tr.op(OP.OpShiftLeftLogical, tr.t_i64, rlo, tr.cint(32, 64)), rhi)
    r = tr.op(OP.OpBitReverse, t32, _to32(tr, x, w))
    if w != 32:
        r = tr.op(OP.OpShiftRightLogical, t32, r, tr.cint(32 - w))
    return _from32(tr, t, r, w)


def _funnel(left: bool):
    """fshl(a, b, s): the high half of (a:b) << (s mod w); fshr: the low half of (a:b) >> (s mod w)."""
    def f(tr, ins, args):
        t = ins.type
        ti = tr.ty(t)
        w = scalar_width(t)
        a, b, s = (tr.val(x) for x in args)
        s = tr.op(OP.OpBitwiseAnd, ti, s, splat(tr, t, w - 1))
        inv = tr.op(OP.OpISub, ti, splat(tr, t, w), s)
        if left:
            r = tr.op(OP.OpBitwiseOr, ti, tr.op(OP.OpShiftLeftLogical, ti, a, s), tr.op(OP.OpShiftRightLogical, ti, b, inv))
            keep = a
        else:
            r = tr.op(OP.OpBitwiseOr, ti, tr.op(OP.OpShiftRightLogical, ti, b, s), tr.op(OP.OpShiftLeftLogical, ti, a, inv))
            keep = b
        zero = tr.op(OP.OpIEqual, bool_type(tr, t), s, splat(tr, t, 0))
        return select(tr, t, zero, keep, r)  # a shift by w is undefined in SPIR-V
    return f


INTRINSICS["llvm.fshl"] = _funnel(True)
INTRINSICS["llvm.fshr"] = _funnel(False)


__all__ = ["INTRINSICS", "base_name", "call", "is_float"]
