"""IEEE operations that Vulkan does not promise: correctly rounded division and square root
(OpFDiv is only good to 2.5 ulp, Sqrt to about 3), and a fused multiply-add (GLSL's Fma may
round twice: lavapipe's does). Built from what Vulkan does promise: OpFAdd, OpFSub, OpFMul
and conversions correctly rounded to nearest, exact integer operations. (Subnormals need
the device to keep them: Vulkan may flush them unless the DenormPreserve mode is set.)

Division a/b and sqrt(a), for f32 and f64 alike, on operands that are finite and nonzero
(the special cases are selected at the end):
1. the operands are split into significands in [1, 2) and integer exponents (subnormals
   normalised first), so nothing below can overflow or underflow;
2. an estimate from the device's reciprocal (or reciprocal square root) is refined by
   Newton steps whose residuals are exact fused multiply-adds, to within an ulp;
3. one exact test moves it by at most an ulp to the correctly rounded significand: for
   division the remainder a - q*b (exact for such a q) is compared with half an ulp
   times b; for the root, Tuckerman's test compares a - q*next(q) with the square of
   half an ulp;
4. the exponent is put back by integer arithmetic; a subnormal quotient is rounded once,
   at its own precision, from the significand and the sign of the remainder.
The fused multiply-adds are the device's when `FloatModes.fused_fma` says its Fma is fused,
else emulated exactly: f32 in f64 (the product is exact, the sum rounded to odd), f64 (and
f32 without f64) by Dekker's product and Boldo and Melquiond's round-to-odd sum, on
operands scaled into [1, 2).
"""

from __future__ import annotations

from llvmlite import ir as ll

from .module import GLSL, OP


class _F:
    """Scalar float arithmetic of one width on SPIR-V ids, with the integer view."""

    def __init__(self, tr, width: int):
        self.tr = tr
        self.w = width
        self.p = 24 if width == 32 else 53  # precision
        self.mant = self.p - 1
        self.bias = 127 if width == 32 else 1023
        self.emin = 1 - self.bias
        self.emax = self.bias
        self.ft = tr.m.t_float(width)
        self.it = tr.m.t_int(width)
        self.llt = ll.FloatType() if width == 32 else ll.DoubleType()
        tr.float_widths.add(width)
        self.b = tr.t_bool
        # the device flushes f32 subnormals (FloatModes.flush32): operands are split and
        # tested on their bits, never through an f32 instruction that would flush them
        self.ftz = width == 32 and tr.float_modes.flush32

    # -- constants
    def f(self, x: float) -> int:
        return self.tr.const(ll.Constant(self.llt, x))

    def i(self, v: int) -> int:
        return self.tr.m.const_int(self.it, v & ((1 << self.w) - 1), self.w)

    def pow2(self, k: int) -> int:
        return self.f(2.0 ** k)

    # -- float arithmetic (never contracted)
    def add(self, a, b):
        return self.tr.no_contract(self.tr.op(OP.OpFAdd, self.ft, a, b))

    def sub(self, a, b):
        return self.tr.no_contract(self.tr.op(OP.OpFSub, self.ft, a, b))

    def mul(self, a, b):
        return self.tr.no_contract(self.tr.op(OP.OpFMul, self.ft, a, b))

    def neg(self, a):
        return self.tr.no_contract(self.tr.op(OP.OpFNegate, self.ft, a))

    def native_div(self, a, b):
        return self.tr.op(OP.OpFDiv, self.ft, a, b)

    def ext(self, number, *args):
        return self.tr.ext(self.ft, number, *args)

    # -- comparisons and selection
    def cmp(self, code, a, b):
        return self.tr.op(code, self.b, a, b)

    def lt(self, a, b):
        return self.cmp(OP.OpFOrdLessThan, a, b)

    def gt(self, a, b):
        return self.cmp(OP.OpFOrdGreaterThan, a, b)

    def feq(self, a, b):
        return self.cmp(OP.OpFOrdEqual, a, b)

    def fne(self, a, b):
        return self.cmp(OP.OpFOrdNotEqual, a, b)

    def isnan(self, a):
        return self.tr.op(OP.OpIsNan, self.b, a)

    def isinf(self, a):
        return self.tr.op(OP.OpIsInf, self.b, a)

    def sel(self, c, a, b, t=None):
        return self.tr.op(OP.OpSelect, t if t is not None else self.ft, c, a, b)

    def isel(self, c, a, b):
        return self.sel(c, a, b, self.it)

    def lor(self, *xs):
        r = xs[0]
        for x in xs[1:]:
            r = self.tr.op(OP.OpLogicalOr, self.b, r, x)
        return r

    def land(self, *xs):
        r = xs[0]
        for x in xs[1:]:
            r = self.tr.op(OP.OpLogicalAnd, self.b, r, x)
        return r

    def lnot(self, a):
        return self.tr.op(OP.OpLogicalNot, self.b, a)

    # -- integer view
    def bits(self, a):
        return self.tr.op(OP.OpBitcast, self.it, a)

    def from_bits(self, a):
        return self.tr.op(OP.OpBitcast, self.ft, a)

    def iop(self, code, a, b):
        return self.tr.op(code, self.it, a, b)

    def iadd(self, a, b):
        return self.iop(OP.OpIAdd, a, b)

    def isub(self, a, b):
        return self.iop(OP.OpISub, a, b)

    def iand(self, a, b):
        return self.iop(OP.OpBitwiseAnd, a, b)

    def ior(self, a, b):
        return self.iop(OP.OpBitwiseOr, a, b)

    def ixor(self, a, b):
        return self.iop(OP.OpBitwiseXor, a, b)

    def shl(self, a, b):
        return self.iop(OP.OpShiftLeftLogical, a, b)

    def shr(self, a, b):
        return self.iop(OP.OpShiftRightLogical, a, b)

    def sar(self, a, b):
        return self.iop(OP.OpShiftRightArithmetic, a, b)

    def ieq(self, a, b):
        return self.cmp(OP.OpIEqual, a, b)

    def ine(self, a, b):
        return self.cmp(OP.OpINotEqual, a, b)

    def slt(self, a, b):
        return self.cmp(OP.OpSLessThan, a, b)

    def sgt(self, a, b):
        return self.cmp(OP.OpSGreaterThan, a, b)

    def ugt(self, a, b):
        return self.cmp(OP.OpUGreaterThan, a, b)

    def smax(self, a, b):
        return self.isel(self.sgt(a, b), a, b)

    def smin(self, a, b):
        return self.isel(self.slt(a, b), a, b)

    @property
    def sign_mask(self) -> int:
        return 1 << (self.w - 1)

    @property
    def inf_bits(self) -> int:
        return ((1 << (self.w - self.p)) - 1) << self.mant

    def abs(self, a):
        return self.from_bits(self.iand(self.bits(a), self.i(self.sign_mask - 1)))

    def next_up(self, a):
        """The next float away from zero of a positive finite a (bits + 1)."""
        return self.from_bits(self.iadd(self.bits(a), self.i(1)))

    def next_down(self, a):
        """The next float towards zero of a positive a (bits - 1)."""
        return self.from_bits(self.isub(self.bits(a), self.i(1)))

    def pow2_of(self, k):
        """2^k as a float, for an integer id k in [emin, emax]."""
        return self.from_bits(self.shl(self.iadd(k, self.i(self.bias)), self.i(self.mant)))

    # -- tests on the bits (what a flushing device cannot get wrong)
    def mag(self, a):
        return self.iand(self.bits(a), self.i(self.sign_mask - 1))

    def is_zero(self, a):
        return self.ieq(self.mag(a), self.i(0)) if self.ftz else self.feq(a, self.f(0.0))

    def is_neg(self, a):
        """a < 0 (a not NaN)."""
        if not self.ftz:
            return self.lt(a, self.f(0.0))
        return self.land(self.ine(self.iand(self.bits(a), self.i(self.sign_mask)), self.i(0)),
                         self.ine(self.mag(a), self.i(0)))

    def is_sub(self, a):
        """a is subnormal (nonzero)."""
        return self.tr.op(OP.OpULessThan, self.b, self.isub(self.mag(a), self.i(1)),
                          self.i((1 << self.mant) - 1))

    def stand_in(self, a):
        """a, or for a subnormal 1.0 of its sign: for the special cases (zeros, infinities,
        NaNs), where only a subnormal's sign and being nonzero matter."""
        if not self.ftz:
            return a
        one = self.ior(self.i(self.bias << self.mant), self.iand(self.bits(a), self.i(self.sign_mask)))
        return self.sel(self.is_sub(a), self.from_bits(one), a)

    def split(self, a):
        """(m, e) with |a| = m * 2^e, m in [1, 2), for a finite nonzero (subnormals too)."""
        x = self.abs(a)
        if self.ftz:  # a subnormal's significand as an integer, converted exactly
            sub = self.ieq(self.iand(self.bits(x), self.i(self.inf_bits)), self.i(0))
            x = self.sel(sub, self.tr.op(OP.OpConvertUToF, self.ft, self.bits(x)), x)
            shift = self.mant - self.emin  # 149: the integer M stands for M * 2^-149
        else:
            sub = self.lt(x, self.pow2(self.emin))
            x = self.sel(sub, self.mul(x, self.pow2(self.p)), x)
            shift = self.p
        xb = self.bits(x)
        e = self.isub(self.shr(xb, self.i(self.mant)), self.i(self.bias))
        e = self.isel(sub, self.isub(e, self.i(shift)), e)
        m = self.from_bits(self.ior(self.iand(xb, self.i((1 << self.mant) - 1)), self.i(self.bias << self.mant)))
        return m, e

    # -- exact building blocks (sums and products of operands near 1)
    def two_sum(self, a, b):
        s = self.add(a, b)
        bb = self.sub(s, a)
        err = self.add(self.sub(a, self.sub(s, bb)), self.sub(b, bb))
        return s, err

    def two_prod(self, a, b):
        """a*b = p + err exactly (Dekker; no overflow or underflow for operands near 1)."""
        p = self.mul(a, b)
        ah, al = self._veltkamp(a)
        bh, bl = self._veltkamp(b)
        err = self.add(self.add(self.add(self.sub(self.mul(ah, bh), p), self.mul(ah, bl)), self.mul(al, bh)),
                       self.mul(al, bl))
        return p, err

    def _veltkamp(self, a):
        c = self.mul(self.f(float(2 ** ((self.p + 1) // 2) + 1)), a)
        hi = self.sub(c, self.sub(c, a))
        return hi, self.sub(a, hi)

    def round_odd(self, s, err):
        """s + err (s = RN(s + err) of an exact two_sum) rounded to odd: when inexact and s
        has an even significand, the neighbour of s on err's side."""
        sb = self.bits(s)
        even = self.ieq(self.iand(sb, self.i(1)), self.i(0))
        inexact = self.fne(err, self.f(0.0))
        same_sign = self.lnot(self.tr.op(OP.OpLogicalNotEqual, self.b, self.lt(s, self.f(0.0)), self.lt(err, self.f(0.0))))
        step = self.isel(same_sign, self.i(1), self.i(-1))
        return self.from_bits(self.isel(self.land(even, inexact), self.iadd(sb, step), sb))

    def fma(self, a, b, c):
        """a*b + c rounded once (see the module docstring)."""
        tr = self.tr
        if tr.float_modes.fused_fma:
            return self.ext(GLSL.Fma, a, b, c)
        if self.w == 32 and tr.float_modes.float64:
            return fma32_via_f64(tr, a, b, c)
        return _fma_emulated(self, a, b, c)

    def fma_near_one(self, a, b, c):
        """a*b + c rounded once, for operands whose products and sums cannot overflow or
        underflow (the refinement steps): emulated without the general scaling."""
        if self.tr.float_modes.fused_fma:
            return self.ext(GLSL.Fma, a, b, c)
        if self.w == 32 and self.tr.float_modes.float64:
            return fma32_via_f64(self.tr, a, b, c)
        uh, ul = self.two_prod(a, b)
        th, tl = self.two_sum(c, uh)
        v = self.round_odd(*self.two_sum(tl, ul))
        return self.add(th, v)


# ---------------------------------------------------------------------- fma
def fma32_via_f64(tr, a, b, c):
    """f32 fma: the product of two f32 is exact in f64, their sum with c is rounded to odd
    (exact two_sum), then once to f32 (53 >= 24 + 2 bits: no double rounding). Infinities
    and NaNs come out of the f64 sum as they should; the product cannot overflow."""
    d = _F(tr, 64)
    A, B, C = (_fpext(tr, x, d.ft) for x in (a, b, c))
    p = d.mul(A, B)
    s, err = d.two_sum(p, C)
    return tr.op(OP.OpFConvert, tr.m.t_float(32), d.round_odd(s, err))


def _fpext(tr, x, f64: int):
    if tr.float_modes.flush32:
        from . import subnormal

        return subnormal.fpext(tr, x, f64)
    return tr.op(OP.OpFConvert, f64, x)


def fma_exact32(tr, a, b, c):
    """The f32 fma rounded once, subnormals and all, on a device that flushes them (the
    slow path of subnormal.fma)."""
    if tr.float_modes.float64:
        return fma32_via_f64(tr, a, b, c)
    return _fma_emulated(_F(tr, 32), a, b, c)


def mul_exact32(tr, a, b):
    """The f32 product rounded once, subnormals and all (the slow path of subnormal.fmul)."""
    return _mul_scalar(tr, ll.FloatType(), a, b, mode="rn")


def _fma_emulated(F: _F, a, b, c, mode: str = "rn"):
    """Exact fma of any finite or special operands, emulated (Boldo and Melquiond's
    algorithm on significands scaled into [1, 2), the scale put back with one rounding)."""
    zero = F.f(0.0)
    # special cases: an infinite c with finite a, b is c; other NaN/infinite operands, and
    # zero products, give what the unfused expression gives; a zero c leaves the product
    finite_ab = F.lnot(F.lor(F.isnan(a), F.isinf(a), F.isnan(b), F.isinf(b)))
    c_special = F.lor(F.isnan(c), F.isinf(c))
    unfused = F.add(F.mul(F.stand_in(a), F.stand_in(b)), F.stand_in(c))
    ab_zero = F.lor(F.is_zero(a), F.is_zero(b))
    c_zero = F.is_zero(c)
    ma, ea = F.split(a)
    mb, eb = F.split(b)
    mc, ec = F.split(c)
    e = F.iadd(ea, eb)
    d = F.isub(ec, e)
    sign_ab = F.iand(F.ixor(F.bits(a), F.bits(b)), F.i(F.sign_mask))
    sign_c = F.iand(F.bits(c), F.i(F.sign_mask))
    lim = 2 * F.p + 4
    # c scaled by 2^-e (within +-lim of 1), or a tiny sticky value of c's sign
    dd = F.smax(F.smin(d, F.i(lim)), F.i(-lim))
    cs = F.mul(mc, F.pow2_of(dd))
    tiny = F.pow2(-(3 * F.p + 20))
    cs = F.sel(F.slt(d, F.i(-lim)), tiny, cs)
    cs = F.from_bits(F.ior(F.bits(cs), sign_c))
    # the product of the significands, with its sign
    mab = F.from_bits(F.ior(F.bits(ma), sign_ab))
    uh, ul = F.two_prod(mab, mb)
    th, tl = F.two_sum(cs, uh)
    s2, e2 = F.two_sum(tl, ul)
    v = F.round_odd(s2, e2)
    rn, err = F.two_sum(th, v)
    # the side of rn the exact result lies on: th + v - rn, or when that is 0, the low
    # part's own rounding (tl + ul - v); as seen from rn's magnitude
    rem = F.sel(F.fne(err, zero), err, F.add(F.sub(s2, v), e2))
    rem = F.sel(F.lt(rn, zero), F.neg(rem), rem)
    # the scale put back: exactly when normal, rounded once at a subnormal's precision
    r = _assemble(F, F.abs(rn), e, rem, F.iand(F.bits(rn), F.i(F.sign_mask)), mode)
    exact_zero = F.from_bits(F.i(F.sign_mask)) if mode == "rm" else zero
    r = F.sel(F.feq(rn, zero), exact_zero, r)
    # c far above the product: c, or its neighbour on the product's side in a directed mode
    far = c
    if mode != "rn":
        away = _away(F, sign_c, mode)
        same = F.ieq(sign_ab, sign_c)
        step = F.isel(away, F.isel(same, F.i(1), F.i(0)), F.isel(same, F.i(0), F.i(-1)))
        far = F.from_bits(F.iadd(F.bits(c), step))
    r = F.sel(F.sgt(d, F.i(lim)), far, r)
    r = F.sel(c_zero, F.mul(a, b) if mode == "rn" and not F.ftz else _mul_core(F, a, b, mode), r)
    if mode == "rm":  # an exact zero sum rounds to -0 unless both addends are +0
        pos = F.land(F.ieq(sign_ab, F.i(0)), F.ieq(F.bits(c), F.i(0)))
        unfused = F.sel(F.land(F.feq(unfused, zero), F.lnot(pos)), F.from_bits(F.i(F.sign_mask)), unfused)
    # a zero product: c, or a zero of the sign the rules give (stand-ins kept c's sign)
    r = F.sel(ab_zero, F.sel(c_zero, unfused, c) if F.ftz else unfused, r)
    r = F.sel(F.lor(F.lnot(finite_ab), c_special), unfused, r)
    return F.sel(F.land(finite_ab, F.isinf(c)), c, r)


# ---------------------------------------------------------------------- division
MODES = ("rn", "rz", "rm", "rp")  # to nearest even, towards zero, down, up


def div(tr, t: ll.Type, a: int, b: int, mode: str = "rn") -> int:
    """Correctly rounded a / b (LLVM's fdiv) on f16, f32, f64 and vectors of them."""
    return _elementwise(tr, t, (a, b), _helper("fdiv", _div_scalar, mode))


def sqrt(tr, t: ll.Type, a: int, mode: str = "rn") -> int:
    """Correctly rounded square root (llvm.sqrt)."""
    return _elementwise(tr, t, (a,), _helper("sqrt", _sqrt_scalar, mode))


def fma(tr, t: ll.Type, a: int, b: int, c: int, mode: str = "rn") -> int:
    """Fused multiply-add (llvm.fma)."""
    if mode == "rn" and tr.float_modes.fused_fma and not isinstance(t, ll.HalfType):
        from . import subnormal

        if subnormal.fma_active(tr, t):
            return subnormal.fma(tr, t, a, b, c)
        return tr.ext(tr.ty(t), GLSL.Fma, a, b, c)
    return _elementwise(tr, t, (a, b, c), _helper("fma", _fma_scalar, mode))


def add(tr, t: ll.Type, a: int, b: int, mode: str) -> int:
    """a + b rounded in `mode` (rn is the plain OpFAdd)."""
    if mode == "rn":
        from . import subnormal

        if subnormal.active(tr, t):
            return subnormal.fadd(tr, t, a, b)
        return tr.no_contract(tr.op(OP.OpFAdd, tr.ty(t), a, b))
    return _elementwise(tr, t, (a, b), _helper("fadd", _add_scalar, mode))


def mul(tr, t: ll.Type, a: int, b: int, mode: str) -> int:
    """a * b rounded in `mode`."""
    if mode == "rn":
        from . import subnormal

        if subnormal.active(tr, t):
            return subnormal.fmul(tr, t, a, b)
        return tr.no_contract(tr.op(OP.OpFMul, tr.ty(t), a, b))
    return _elementwise(tr, t, (a, b), _helper("fmul", _mul_scalar, mode))


def _helper(name: str, scalar, mode: str):
    """`scalar` as a call of a helper function of the module (one per operation, mode and
    type)."""
    if mode not in MODES:
        raise ValueError(mode)

    def call(tr, t, *args):
        key = f"cuport.{name}.{mode}.{t}"
        return tr.call_helper(key, tr.ty(t), list(args), lambda *ps: scalar(tr, t, *ps, mode=mode))
    return call


def _elementwise(tr, t: ll.Type, args: tuple, scalar):
    if isinstance(t, ll.VectorType):
        et = tr.ty(t.element)
        parts = []
        for i in range(t.count):
            comps = [tr.op(OP.OpCompositeExtract, et, x, i) for x in args]
            parts.append(scalar(tr, t.element, *comps))
        return tr.op(OP.OpCompositeConstruct, tr.ty(t), *parts)
    return scalar(tr, t, *args)


def _via_f32(tr, f, *args, mode: str = "rn"):
    """An f16 operation done in f32 and rounded to f16 (24 >= 2 * 11 + 2 bits: the double
    rounding is innocuous for +, -, *, / and sqrt; fma is exact to odd first)."""
    if mode != "rn":
        raise tr.error(f"f16 arithmetic rounded {mode} is not supported")
    f32, f16 = tr.m.t_float(32), tr.m.t_float(16)
    wide = [tr.op(OP.OpFConvert, f32, x) for x in args]
    return tr.op(OP.OpFConvert, f16, f(tr, ll.FloatType(), *wide))


def _fma_scalar(tr, t, a, b, c, mode: str = "rn"):
    if mode != "rn":
        if isinstance(t, ll.HalfType):
            raise tr.error(f"f16 fma rounded {mode} is not supported")
        return _fma_emulated(_F(tr, 32 if isinstance(t, ll.FloatType) else 64), a, b, c, mode)
    if isinstance(t, ll.HalfType):
        # the f16 product is exact in f32; the sum rounded to odd, then to f16
        F = _F(tr, 32)
        f16 = tr.m.t_float(16)
        A, B, C = (tr.op(OP.OpFConvert, F.ft, x) for x in (a, b, c))
        s, err = F.two_sum(F.mul(A, B), C)
        return tr.op(OP.OpFConvert, f16, F.round_odd(s, err))
    return _F(tr, 32 if isinstance(t, ll.FloatType) else 64).fma(a, b, c)


def _div_scalar(tr, t, a, b, mode: str = "rn"):
    if isinstance(t, ll.HalfType):
        return _via_f32(tr, _div_scalar, a, b, mode=mode)
    F = _F(tr, 32 if isinstance(t, ll.FloatType) else 64)
    one = F.f(1.0)
    sign = F.iand(F.ixor(F.bits(a), F.bits(b)), F.i(F.sign_mask))
    ma, ea = F.split(a)
    mb, eb = F.split(b)
    # the quotient of the significands, in (1/2, 2), to within an ulp
    r = F.native_div(one, mb)
    r = F.fma_near_one(r, F.fma_near_one(F.neg(mb), r, one), r)
    q = F.mul(ma, r)
    q = F.fma_near_one(F.fma_near_one(F.neg(q), mb, ma), r, q)
    # then correctly rounded: the remainder against half an ulp on either side
    up, dn = F.next_up(q), F.next_down(q)
    rem = F.fma_near_one(F.neg(q), mb, ma)
    h_up = F.mul(F.sub(up, q), F.f(0.5))
    h_dn = F.mul(F.sub(q, dn), F.f(0.5))
    q = F.sel(F.gt(rem, F.mul(h_up, mb)), up, F.sel(F.lt(rem, F.neg(F.mul(h_dn, mb))), dn, q))
    rem = F.fma_near_one(F.neg(q), mb, ma)  # exact: its sign says where the true quotient lies
    res = _assemble(F, q, F.isub(ea, eb), rem, sign, mode)
    # special cases
    a0, b0 = F.is_zero(a), F.is_zero(b)
    nan = F.lor(F.isnan(a), F.isnan(b), F.land(a0, b0), F.land(F.isinf(a), F.isinf(b)))
    inf = F.lor(b0, F.isinf(a))
    zer = F.lor(a0, F.isinf(b))
    res = F.sel(zer, F.from_bits(sign), res)
    res = F.sel(inf, F.from_bits(F.ior(sign, F.i(F.inf_bits))), res)
    return F.sel(nan, F.add(F.add(a, b), F.f(float("nan"))), res)


def _away(F: _F, sign, mode: str):
    """For a directed mode, whether it rounds this sign's magnitudes up (None: to nearest)."""
    if mode == "rn":
        return None
    if mode == "rz":
        return F.tr.m.const_bool(False)
    neg = F.ine(sign, F.i(0))
    return F.lnot(neg) if mode == "rp" else neg


def _assemble(F: _F, q, e, rem, sign, mode: str = "rn"):
    """The float q * 2^e with `sign` (q > 0 normal and correctly rounded to nearest, rem of
    the sign of the true magnitude minus q), rounded in `mode`: the exponent added when
    normal (a directed mode steps an ulp where q is on the wrong side), infinity (or the
    largest float) past the largest; a subnormal rounded once at its own precision, rem
    telling the side of q the truth lies on (rounding q again would round twice)."""
    zero = F.f(0.0)
    one, none = F.i(1), F.i(0)
    qb = F.bits(q)
    eq = F.isub(F.shr(qb, F.i(F.mant)), F.i(F.bias))
    final = F.iadd(eq, e)
    normal = F.iadd(qb, F.shl(e, F.i(F.mant)))
    away = _away(F, sign, mode)
    over = F.i(F.inf_bits)
    if away is not None:
        step = F.isel(away, F.isel(F.gt(rem, zero), one, none), F.isel(F.lt(rem, zero), F.i(-1), none))
        normal = F.iadd(normal, step)
        over = F.isel(away, over, F.i(F.inf_bits - 1))
    normal = F.isel(F.sgt(final, F.i(F.emax)), over, normal)
    # subnormal: the significand with its leading bit, shifted right by emin - final
    m = F.ior(F.iand(qb, F.i((1 << F.mant) - 1)), F.i(1 << F.mant))
    s = F.smin(F.smax(F.isub(F.i(F.emin), final), one), F.i(F.p + 1))
    base = F.shr(m, s)
    low = F.iand(m, F.isub(F.shl(one, s), one))
    if away is None:
        half = F.shl(one, F.isub(s, one))
        odd = F.ieq(F.iand(base, one), one)
        up = F.lor(F.ugt(low, half),
                   F.land(F.ieq(low, half), F.lor(F.gt(rem, zero), F.land(F.feq(rem, zero), odd))))
        sub = F.iadd(base, F.isel(up, one, none))
    else:
        exact_grid = F.ieq(low, none)
        up = F.lor(F.lnot(exact_grid), F.gt(rem, zero))
        down = F.land(exact_grid, F.lt(rem, zero))
        sub = F.isel(away, F.iadd(base, F.isel(up, one, none)), F.isub(base, F.isel(down, one, none)))
    mag = F.isel(F.slt(final, F.i(F.emin)), sub, normal)
    return F.from_bits(F.ior(mag, sign))


# ---------------------------------------------------------------------- add, mul (directed)
def _add_scalar(tr, t, a, b, mode: str):
    if isinstance(t, ll.HalfType):
        return _via_f32(tr, _add_scalar, a, b, mode=mode)
    F = _F(tr, 32 if isinstance(t, ll.FloatType) else 64)
    if not F.ftz:
        return _add_directed(F, a, b, mode)
    # a flushing device: operands below 2^60 are added scaled by 2^64 (subnormal.small_add);
    # larger ones as they are, a subnormal among them standing in as 2^-126 of its sign (it
    # is below a quarter of the other's ulp: only its sign and being nonzero matter)
    from . import subnormal

    big = F.tr.op(OP.OpUGreaterThanEqual, F.b, F.tr.ext(F.it, GLSL.UMax, F.mag(a), F.mag(b)),
                  F.i(0x5D800000))  # 2^60
    tiny = [F.sel(F.is_sub(x), F.from_bits(F.ior(F.i(1 << F.mant), F.iand(F.bits(x), F.i(F.sign_mask)))), x)
            for x in (a, b)]
    return F.sel(big, _add_directed(F, *tiny, mode), subnormal.small_add(tr, a, b, mode))


def add_core(tr, a, b, mode: str):
    """f32 a + b rounded in `mode`, for operands and a result that are not subnormal."""
    F = _F(tr, 32)
    return F.add(a, b) if mode == "rn" else _add_directed(F, a, b, mode)


def _add_directed(F: _F, a, b, mode: str):
    """a + b in a directed mode: TwoSum's exact error says which neighbour of the rounded
    sum is wanted; an overflow from finite operands is the largest float unless rounding
    away; an exact zero sum is -0 rounding down (unless both operands are +0), +0 else."""
    zero = F.f(0.0)
    s, err = F.two_sum(a, b)
    sign = F.iand(F.bits(s), F.i(F.sign_mask))
    away = _away(F, sign, mode)
    rel = F.sel(F.ine(sign, F.i(0)), F.neg(err), err)  # err as seen from s's magnitude
    step = F.isel(away, F.isel(F.gt(rel, zero), F.i(1), F.i(0)), F.isel(F.lt(rel, zero), F.i(-1), F.i(0)))
    r = F.from_bits(F.iadd(F.bits(s), step))
    finite = F.lnot(F.lor(F.isnan(a), F.isinf(a), F.isnan(b), F.isinf(b)))
    overflow = F.land(finite, F.isinf(s))
    big = F.from_bits(F.ior(sign, F.isel(away, F.i(F.inf_bits), F.i(F.inf_bits - 1))))
    r = F.sel(overflow, big, r)
    r = F.sel(F.lnot(finite), s, r)
    if mode == "rm":
        both_pos = F.land(F.ieq(F.bits(a), F.i(0)), F.ieq(F.bits(b), F.i(0)))
        r = F.sel(F.land(F.feq(s, zero), F.lnot(both_pos)), F.from_bits(F.i(F.sign_mask)), r)
    return r


def _mul_scalar(tr, t, a, b, mode: str):
    """a * b in a directed mode: Dekker's exact product of the significands, assembled."""
    if isinstance(t, ll.HalfType):
        return _via_f32(tr, _mul_scalar, a, b, mode=mode)
    F = _F(tr, 32 if isinstance(t, ll.FloatType) else 64)
    plain = F.mul(F.stand_in(a), F.stand_in(b))  # exact for zeros, infinities and NaNs
    special = F.lor(F.is_zero(a), F.is_zero(b), F.isnan(a), F.isnan(b), F.isinf(a), F.isinf(b))
    return F.sel(special, plain, _mul_core(F, a, b, mode))


def _mul_core(F: _F, a, b, mode: str):
    sign = F.iand(F.ixor(F.bits(a), F.bits(b)), F.i(F.sign_mask))
    ma, ea = F.split(a)
    mb, eb = F.split(b)
    ph, pl = F.two_prod(ma, mb)
    return _assemble(F, ph, F.iadd(ea, eb), pl, sign, mode)


# ---------------------------------------------------------------------- square root
def _sqrt_scalar(tr, t, a, mode: str = "rn"):
    if isinstance(t, ll.HalfType):
        return _via_f32(tr, _sqrt_scalar, a, mode=mode)
    F = _F(tr, 32 if isinstance(t, ll.FloatType) else 64)
    half = F.f(0.5)
    m, e = F.split(a)
    odd = F.ieq(F.iand(e, F.i(1)), F.i(1))
    m = F.sel(odd, F.mul(m, F.f(2.0)), m)  # m in [1, 4), e even
    e = F.sar(F.isub(e, F.isel(odd, F.i(1), F.i(0))), F.i(1))
    # g ~ sqrt(m), h ~ 1/(2 sqrt(m)): coupled Newton steps from the device's estimate
    y = F.ext(GLSL.InverseSqrt, m)
    g = F.mul(m, y)
    h = F.mul(y, half)
    for _ in range(2):
        r = F.fma_near_one(F.neg(g), h, half)
        g = F.fma_near_one(g, r, g)
        h = F.fma_near_one(h, r, h)
    g = F.fma_near_one(F.fma_near_one(F.neg(g), g, m), h, g)
    # Tuckerman's test: m above (g + u/2)^2 = g*next(g) + (u/2)^2 rounds up, below
    # (g - d/2)^2 = g*prev(g) + (d/2)^2 rounds down
    up, dn = F.next_up(g), F.next_down(g)
    hu = F.mul(F.sub(up, g), half)
    hd = F.mul(F.sub(g, dn), half)
    g = F.sel(F.gt(F.fma_near_one(F.neg(g), up, m), F.mul(hu, hu)), up,
              F.sel(F.lt(F.fma_near_one(F.neg(g), dn, m), F.mul(hd, hd)), dn, g))
    if mode == "rn":
        res = F.from_bits(F.iadd(F.bits(g), F.shl(e, F.i(F.mant))))
    else:  # directed: the side of g the root lies on, from the exact residual m - g^2
        res = _assemble(F, g, e, F.fma_near_one(F.neg(g), g, m), F.i(0), mode)
    # special cases: -x and NaN give NaN, +-0 and +inf themselves
    res = F.sel(F.lor(F.is_zero(a), F.isinf(a)), a, res)
    return F.sel(F.lor(F.isnan(a), F.is_neg(a)), F.add(F.add(a, a), F.f(float("nan"))), res)
