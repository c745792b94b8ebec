"""f32 arithmetic with subnormals kept, on a device that flushes them (FloatModes.flush32).

NVIDIA's Vulkan driver (580, H200) has no DenormPreserve mode for f32, and without it every
f32 arithmetic instruction flushes subnormal operands and results to zero: add, sub, mul,
fma, div, sqrt, negate, abs, min/max, the comparisons and the f32->f64 conversion
(measured by tests/vulkan/denormal_probe.py; f64 and f16 keep them, and so do loads, stores,
selects, floor/ceil/trunc/rint, f64->f32 and integer conversions). CUDA keeps them unless
an instruction says .ftz. The emulation, per operation, where its result would differ:

- add/sub: the hardware's sum is right unless both operands are below 2^-100 in
  magnitude (then a sum can be subnormal; otherwise a subnormal operand is below half an
  ulp of the other, and flushing it changes nothing). That rare case is a branch to a
  helper that adds the operands scaled by 2^64 (exactly: subnormals through the integer
  conversion of their significand) and scales the sum back (a subnormal sum is exact).
- mul and fma: the hardware's result is right unless an operand is subnormal or the
  result is at most 2^-126 in magnitude with nonzero factors (a flushed tiny result);
  then a branch to an exact helper (fpmath's, whose significands never go subnormal).
  The hot test leaves out "nonzero factors" (a rarely taken branch tests it: _guarded).
- negate, abs: bit operations (as LLVM defines them).
- comparisons: on the integers that order floats (sign and magnitude made two's
  complement, so that -0 == +0), NaN tested from the bits (always: NVIDIA's compiler
  turns a comparison and a select of its operands into a flushing min/max).
- min/max: the same order, selecting an operand's bits.
- f32 -> f64: a subnormal converted from its significand.
div and sqrt (fpmath) split their operands with the integer conversion and test zeros on
the bits (fpmath._F.ftz).
"""

from __future__ import annotations

from llvmlite import ir as ll

from .module import GLSL, OP

_MAG = 0x7FFFFFFF
_SIGN = 0x80000000
_MIN_NORMAL = 0x00800000
_SMALL_SUM = 0x0D800000  # 2^-100
_INF = 0x7F800000


def active(tr, t: ll.Type) -> bool:
    """Whether f32 (or a vector of f32) type t needs the emulation on this device."""
    e = t.element if isinstance(t, ll.VectorType) else t
    return tr.float_modes.flush32 and isinstance(e, ll.FloatType)


def fma_active(tr, t: ll.Type) -> bool:
    """Whether f32 fma of type t is made exact here (FloatModes.fma32): under the emulation,
    and where DenormPreserve is declared but the device's Fma flushes all the same."""
    e = t.element if isinstance(t, ll.VectorType) else t
    return bool(tr.float_modes.fma32 or tr.float_modes.flush32) and isinstance(e, ll.FloatType)


def order_active(tr, t: ll.Type) -> bool:
    """Whether comparisons and min/max of type t go through the integer order of floats: under
    the emulation, and on a device whose min/max flush though its arithmetic keeps subnormals
    (FloatModes.int_order32; comparisons too: NVIDIA's compiler turns a comparison and a
    select of its operands into a min/max)."""
    e = t.element if isinstance(t, ll.VectorType) else t
    return (tr.float_modes.flush32 or tr.float_modes.int_order32) and isinstance(e, ll.FloatType)


class _U:
    """u32 operations on ids (scalar, or vectors of n)."""

    def __init__(self, tr, n: int | None = None):
        self.tr = tr
        m = tr.m
        self.n = n
        self.ut = tr.t_i32 if n is None else m.t_vector(tr.t_i32, n)
        self.bt = tr.t_bool if n is None else m.t_vector(tr.t_bool, n)
        self.ft = m.t_float(32) if n is None else m.t_vector(m.t_float(32), n)

    def c(self, v: int) -> int:
        e = self.tr.cint(v & 0xFFFFFFFF)
        return e if self.n is None else self.tr.m.const_composite(self.ut, [e] * self.n)

    def op(self, code, *args):
        return self.tr.op(code, self.ut, *args)

    def cmp(self, code, *args):
        return self.tr.op(code, self.bt, *args)

    def bits(self, x):
        return self.tr.op(OP.OpBitcast, self.ut, x)

    def flt(self, x):
        return self.tr.op(OP.OpBitcast, self.ft, x)

    def mag(self, x):
        return self.op(OP.OpBitwiseAnd, self.bits(x), self.c(_MAG))

    def lor(self, a, b):
        return self.cmp(OP.OpLogicalOr, a, b)

    def land(self, a, b):
        return self.cmp(OP.OpLogicalAnd, a, b)

    def below(self, x, limit: int):
        """x - 1 < limit, unsigned: 0 < x <= limit."""
        return self.cmp(OP.OpULessThan, self.op(OP.OpISub, x, self.c(1)), self.c(limit))

    def umin(self, a, b):
        return self.tr.ext(self.ut, GLSL.UMin, a, b)

    def umax(self, a, b):
        return self.tr.ext(self.ut, GLSL.UMax, a, b)


# ---------------------------------------------------------------------- negate, abs
def fneg(tr, t: ll.Type, a: int) -> int:
    u = _U(tr, _count(t))
    return u.flt(u.op(OP.OpBitwiseXor, u.bits(a), u.c(_SIGN)))


def fabs(tr, t: ll.Type, a: int) -> int:
    u = _U(tr, _count(t))
    return u.flt(u.mag(a))


def _count(t: ll.Type) -> int | None:
    return t.count if isinstance(t, ll.VectorType) else None


# ---------------------------------------------------------------------- comparisons
def order_key(u: _U, x: int) -> int:
    """A signed integer that orders finite floats and infinities as the floats do, with
    -0 == +0: the magnitude, negated for a negative sign."""
    b = u.bits(x)
    s = u.op(OP.OpShiftRightArithmetic, b, u.c(31))
    return u.op(OP.OpISub, u.op(OP.OpBitwiseXor, u.op(OP.OpBitwiseAnd, b, u.c(_MAG)), s), s)


def is_nan(u: _U, x: int) -> int:
    return u.cmp(OP.OpUGreaterThan, u.mag(x), u.c(_INF))


_ICMP = {"eq": OP.OpIEqual, "ne": OP.OpINotEqual, "lt": OP.OpSLessThan, "le": OP.OpSLessThanEqual,
         "gt": OP.OpSGreaterThan, "ge": OP.OpSGreaterThanEqual}


def fcmp(tr, pred: str, ta: ll.Type, a_ll, b_ll) -> int:
    """An ordered (o..) or unordered (u..) comparison of f32 values. Even against a normal
    constant the device's own comparison is not used: NVIDIA's compiler fuses a comparison
    and a select of the compared values into a min/max, which flushes (__saturatef of a
    subnormal gave 0 on the H200)."""
    u = _U(tr, _count(ta))
    a, b = tr.val(a_ll), tr.val(b_ll)
    rel = u.cmp(_ICMP[pred[1:]], order_key(u, a), order_key(u, b))
    nan = u.lor(is_nan(u, a), is_nan(u, b))
    if pred[0] == "o":
        return u.land(u.cmp(OP.OpLogicalNot, nan), rel)
    return u.lor(nan, rel)


def pick(tr, t: ll.Type, a: int, b: int, lower: bool) -> tuple[int, int]:
    """(the smaller (larger) of a and b by value, neither NaN; whether they are equal) in
    the integer order (GLSL's FMin/FMax flush)."""
    u = _U(tr, _count(t))
    ka, kb = order_key(u, a), order_key(u, b)
    first = u.cmp(OP.OpSLessThan if lower else OP.OpSGreaterThan, ka, kb)
    return tr.op(OP.OpSelect, tr.ty(t), first, a, b), u.cmp(OP.OpIEqual, ka, kb)


# ---------------------------------------------------------------------- conversion
def fpext(tr, a: int, dst: int) -> int:
    """f32 -> f64 (dst: the f64 type id) with subnormals converted exactly."""
    u = _U(tr)
    m = u.mag(a)
    native = tr.op(OP.OpFConvert, dst, a)
    f64 = tr.m.t_float(64)
    scale = tr.op(OP.OpSelect, f64, u.cmp(OP.OpINotEqual, u.op(OP.OpBitwiseAnd, u.bits(a), u.c(_SIGN)), u.c(0)),
                  tr.const(ll.Constant(ll.DoubleType(), -(2.0 ** -149))), tr.const(ll.Constant(ll.DoubleType(), 2.0 ** -149)))
    sub = tr.no_contract(tr.op(OP.OpFMul, f64, tr.op(OP.OpConvertUToF, f64, m), scale))
    return tr.op(OP.OpSelect, f64, u.below(m, _MIN_NORMAL - 1), sub, native)


# ---------------------------------------------------------------------- add, mul, fma
def _scalarised(tr, t: ll.Type, args: tuple[int, ...], scalar) -> int:
    if not isinstance(t, ll.VectorType):
        return scalar(*args)
    et = tr.ty(t.element)
    parts = [scalar(*(tr.op(OP.OpCompositeExtract, et, x, i) for x in args)) for i in range(t.count)]
    return tr.op(OP.OpCompositeConstruct, tr.ty(t), *parts)


def fadd(tr, t: ll.Type, a: int, b: int, sub: bool = False) -> int:
    """a + b (a - b) with subnormals kept (see the module docstring)."""
    def one(x, y):
        u = _U(tr)
        fast = tr.no_contract(tr.op(OP.OpFSub if sub else OP.OpFAdd, u.ft, x, y))
        small = u.below(u.umax(u.mag(x), u.mag(y)), _SMALL_SUM - 1)

        def prepare(args):
            p, q = args
            return [p, fneg(tr, ll.FloatType(), q)] if sub else [p, q]
        return tr.slow_path(small, fast, u.ft, "cuport.subnormal.fadd", [x, y],
                            lambda p, q: small_add(tr, p, q, "rn"), prepare)
    return _scalarised(tr, t, (a, b), one)


def fmul(tr, t: ll.Type, a: int, b: int) -> int:
    """a * b with subnormals kept."""
    from . import fpmath

    def one(x, y):
        u = _U(tr)
        fast = tr.no_contract(tr.op(OP.OpFMul, u.ft, x, y))
        kx, ky = _key(u, x), _key(u, y)
        sub = u.cmp(OP.OpULessThan, u.umin(kx, ky), u.c(_SUB_KEY))

        def nonzero():  # x and y nonzero: a zero key is the largest
            return u.cmp(OP.OpINotEqual, u.umax(kx, ky), u.c(_ZERO_KEY))
        return _guarded(tr, u, sub, fast, nonzero, "cuport.subnormal.fmul", [x, y],
                        lambda p, q: fpmath.mul_exact32(tr, p, q))
    return _scalarised(tr, t, (a, b), one)


def fma(tr, t: ll.Type, a: int, b: int, c: int) -> int:
    """a * b + c rounded once, with subnormals kept: from the device's fused Fma and a guard
    (FloatModes.fma32 guard), or always in f64, rounded to odd (fma32 f64: no branch, about
    ten f64 and integer instructions, for devices with fast f64), or as a multiply and an
    add the driver fuses (fma32 contract: where the contraction probe saw it fuse them).

    Why the guard is exact. The device's Fma (NVIDIA's, even with DenormPreserve) is fused
    but flushes: it returns F = flush(RN(flush(a) * flush(b) + flush(c))), flushing a
    subnormal to a zero of its sign. Let R = RN(a * b + c) be CUDA's fma.rn.f32.
    (1) No operand subnormal and |F| > 2^-126 (or F NaN) imply F = R: the operands are
        the device's own, and R's rounding is the unbounded-exponent rounding of the same
        exact value wherever |R| >= 2^-126 (the grid below 2^-125 is 2^-149 in both formats),
        so RN gives R unless R is tiny; a tiny R (|R| < 2^-126) comes out of the device as a
        zero or, rounded up, as +-2^-126 (tininess after or before rounding alike), both
        |F| <= 2^-126. NaN and infinities are not flushed. So the device can be wrong
        only where an operand is subnormal or |F| <= 2^-126: the hot test (the minimum over
        the operands of the key 2|x| - 1, unsigned, below that of the smallest normal is
        exactly "an operand is subnormal", a zero's key wrapping to the largest; |F| <=
        2^-126 is a float comparison of the device's own, already flushed, result).
    (2) Inside that rare branch the exact helper runs unless no operand is subnormal (keys,
        exactly) and the exact value is a true zero: a * b = 0 (a factor 0) and c = 0. Then
        nothing was flushed and the device computed R itself, signs of zero included.
    So the fast result leaves the guard only where it is R. (Measured on an H100 and set
    aside, bench/gpu's sgemm, guard 5.86 ms: the operand tests as float comparisons 15.2 ms,
    zeros of the matrices taking the branch; leaving out the tests of operands known not to
    be subnormal, constants and earlier guarded results, 6.20 ms.)"""
    from . import fpmath

    if tr.float_modes.fma32 in ("contract", "contract-alone"):
        # a multiply and an add without NoContraction, which the driver fuses into its own
        # fma: one that keeps subnormals, unlike its GLSL Fma (the contraction probe,
        # probe.contract_probe_shader, saw it do so before this variant was chosen)
        def pair(x, y, z):
            ft = tr.m.t_float(32)
            tr.fma_pairs += 1
            return tr.op(OP.OpFAdd, ft, tr.op(OP.OpFMul, ft, x, y), z)
        return _scalarised(tr, t, (a, b, c), pair)
    if tr.float_modes.fma32 == "f64" and tr.float_modes.float64:
        return _scalarised(tr, t, (a, b, c), lambda x, y, z: fpmath.fma32_via_f64(tr, x, y, z))

    def one(x, y, z):
        u = _U(tr)
        fast = tr.ext(u.ft, GLSL.Fma, x, y, z)
        kx, ky, kz = _key(u, x), _key(u, y), _key(u, z)
        sub = u.cmp(OP.OpULessThan, u.umin(u.umin(kx, ky), kz), u.c(_SUB_KEY))

        def nonzero():  # (x and y nonzero) or z nonzero: a zero key is the largest
            return u.cmp(OP.OpINotEqual, u.umin(u.umax(kx, ky), kz), u.c(_ZERO_KEY))
        return _guarded(tr, u, sub, fast, nonzero, "cuport.subnormal.fma", [x, y, z],
                        lambda p, q, r: fpmath.fma_exact32(tr, p, q, r))
    return _scalarised(tr, t, (a, b, c), one)


def _guarded(tr, u: _U, sub: int, fast: int, nonzero, key: str, args: list[int], exact) -> int:
    """The device's `fast` product (or fma), or the exact helper's where an operand is
    subnormal (`sub`) or the result is tiny with a nonzero exact value. Two levels: the
    hot test is `sub` or |fast| <= 2^-126 alone, and only inside that rare branch does
    `nonzero()` tell a true zero (x * 0 + 0, common in matrices that hold zeros) from a
    flushed one, so that zeros cost a branch and not the exact helper."""
    def tiny_or_sub():
        return tr.slow_path(u.lor(sub, nonzero()), fast, u.ft, key, args, exact)
    return tr.rare(u.lor(sub, _tiny(tr, u, fast)), fast, u.ft, tiny_or_sub)


# The tests of mul and fma are per operation in the hottest loops (sgemm's), so they are
# written for few instructions: one key per operand (a shift and an add), minima and maxima
# of keys, and the result tested as a float (it is the device's, so already flushed).
_SUB_KEY = 2 * _MIN_NORMAL - 2  # key < this: a subnormal
_ZERO_KEY = 0xFFFFFFFF  # the key of +-0


def _key(u: _U, x: int) -> int:
    """2|x| - 1 as u32: 0 < key < _SUB_KEY for a subnormal, _ZERO_KEY for a zero (wrapped),
    larger than any subnormal's for anything else (the sign is shifted out)."""
    return u.op(OP.OpIAdd, u.op(OP.OpShiftLeftLogical, u.bits(x), u.c(1)), u.c(-1))


def _tiny(tr, u: _U, fast: int) -> int:
    """|fast| <= 2^-126: the device's result is zero, flushed, or the smallest normal (which
    a tiny exact value may have rounded up to)."""
    limit = tr.const(ll.Constant(ll.FloatType(), 2.0 ** -126))
    return u.cmp(OP.OpFOrdLessThanEqual, tr.ext(u.ft, GLSL.FAbs, fast), limit)


# ---------------------------------------------------------------------- the scaled sum
_UP = 2.0 ** 64


def scale_up(tr, x: int) -> int:
    """x * 2^64 exactly for |x| < 2^60 (a subnormal from its significand: M * 2^-85)."""
    u = _U(tr)
    m = u.mag(x)
    f32 = ll.FloatType()
    sub = tr.no_contract(tr.op(OP.OpFMul, u.ft, tr.op(OP.OpConvertUToF, u.ft, m), tr.const(ll.Constant(f32, 2.0 ** -85))))
    sub = u.flt(u.op(OP.OpBitwiseOr, u.bits(sub), u.op(OP.OpBitwiseAnd, u.bits(x), u.c(_SIGN))))
    big = tr.no_contract(tr.op(OP.OpFMul, u.ft, x, tr.const(ll.Constant(f32, _UP))))
    return tr.op(OP.OpSelect, u.ft, u.below(m, _MIN_NORMAL - 1), sub, big)


def scale_down(tr, x: int) -> int:
    """x * 2^-64 for an x that is a multiple of 2^-85: exactly (a subnormal result from its
    significand, which is then an integer)."""
    u = _U(tr)
    m = u.mag(x)
    f32 = ll.FloatType()
    normal = tr.no_contract(tr.op(OP.OpFMul, u.ft, x, tr.const(ll.Constant(f32, 1 / _UP))))
    absx = u.flt(m)
    k = tr.op(OP.OpConvertFToU, u.ut, tr.no_contract(tr.op(OP.OpFMul, u.ft, absx, tr.const(ll.Constant(f32, 2.0 ** 85)))))
    sub = u.flt(u.op(OP.OpBitwiseOr, k, u.op(OP.OpBitwiseAnd, u.bits(x), u.c(_SIGN))))
    return tr.op(OP.OpSelect, u.ft, u.cmp(OP.OpULessThan, m, u.c(0x20800000)), sub, normal)  # 2^-62


def small_add(tr, a: int, b: int, mode: str) -> int:
    """a + b rounded in `mode` for |a|, |b| < 2^60: on operands scaled by 2^64, where no
    value of the exact two-sum goes subnormal; a sum that is subnormal is exact, so
    scaling it back rounds nothing."""
    from . import fpmath

    s = fpmath.add_core(tr, scale_up(tr, a), scale_up(tr, b), mode)
    return scale_down(tr, s)
