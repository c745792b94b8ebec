"""Integer arithmetic: add, sub, mul, mad, mul24, mad24, sad, div, rem, min, max, abs, neg,
the carry chain (add.cc, sub.cc, mad.cc, addc, subc, madc) and the dot products dp4a, dp2a.

PTX ISA §9.7.1 (Integer Arithmetic Instructions) and §9.7.2 (Extended-Precision Integer
Arithmetic Instructions). Results wrap modulo 2^n unless `.sat` asks for clamping;
`.lo/.hi/.wide` pick the half of the double-width product. `.u16x2/.s16x2` work on the two
halves of a 32-bit register independently.

Where the manual leaves the result to the hardware, cuport gives what ptxas makes an NVIDIA
GPU compute (read from the SASS it emits for sm_90):
- division by zero gives all ones, for div and rem, every width, signed or not;
- INT_MIN / -1 gives INT_MIN and INT_MIN % -1 gives 0 (the quotient wraps);
- the carry flag is the adder's carry-out. A subtraction is done as a + ~b + 1, so after
  sub.cc the flag is 1 when there was *no* borrow, and subc computes a + ~b + CF, i.e.
  a - b - (1 - CF). Chains of sub.cc/subc therefore behave as the manual says; mixing add and
  sub carries (addc after sub.cc) gives what the GPU gives.
LLVM never sees a division by zero or an overflowing signed division (x86 would trap, LLVM
calls it undefined): the divisor is replaced by 1 first and the result chosen afterwards.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ..ptx import ir
from ..ptx.ir import TYPE_BITS
from .operands import CARRY
from .registry import lowers, type_suffix

LANES = 32  # lanes of a warp: the width of a varying value

#: Packed half-word types: element PTX type and signedness.
PAIRS = {"u16x2": False, "s16x2": True}


# ---------------------------------------------------------------- helpers shared by bits/video


def ity(em, bits: int) -> ll.Type:
    """The integer type of `bits` in the current mode (vectorised when varying)."""
    t = ll.IntType(bits)
    return ll.VectorType(t, LANES) if em.vec else t


def intrinsic(em, name: str, args: list):
    """`em.intrinsic` with the overload of the first argument, reusing a declaration that the
    builder's own helpers (`b.ctpop`, used by the emitter for masks) already put in the module
    under the same name (declaring it twice would be an error)."""
    full = name + "." + _mangle(args[0].type)
    fn = em.b.module.globals.get(full)
    if fn is not None:
        return em.b.call(fn, args)
    return em.intrinsic(name, args)


def _mangle(t: ll.Type) -> str:
    if isinstance(t, ll.VectorType):
        return f"v{t.count}{_mangle(t.element)}"
    return f"i{t.width}"


def width(v) -> int:
    t = v.type
    return (t.element if isinstance(t, ll.VectorType) else t).width


def resize(em, v, bits: int, signed: bool):
    """`v` truncated or sign/zero-extended to `bits`."""
    have = width(v)
    if have == bits:
        return v
    if have > bits:
        return em.b.trunc(v, ity(em, bits))
    return em.b.sext(v, ity(em, bits)) if signed else em.b.zext(v, ity(em, bits))


def signed(t: str) -> bool:
    return t[0] == "s"


def lt(em, sgn: bool, a, c):
    return em.b.icmp_signed("<", a, c) if sgn else em.b.icmp_unsigned("<", a, c)


def field(em, v, pos: int, bits: int, sgn: bool, out: int = 32):
    """Bits pos..pos+bits-1 of `v`, sign- or zero-extended to `out` bits."""
    b = em.b
    n = width(v)
    if sgn:
        x = b.shl(v, em.const_int(n, n - pos - bits)) if n - pos - bits else v
        x = b.ashr(x, em.const_int(n, n - bits))
    else:
        x = b.lshr(v, em.const_int(n, pos)) if pos else v
        x = b.and_(x, em.const_int(n, (1 << bits) - 1))
    return resize(em, x, out, sgn)


def pair_type(ins: ir.Instr) -> str | None:
    return next((m for m in ins.mods if m in PAIRS), None)


def as_halves(em, v):
    """An i32 (or <32 x i32>) seen as its two 16-bit halves, low half first."""
    n = 2 * LANES if em.vec else 2
    return em.b.bitcast(v, ll.VectorType(ll.IntType(16), n))


def from_halves(em, v):
    return em.b.bitcast(v, ity(em, 32))


def _pairwise(em, ins: ir.Instr, fn) -> None:
    """Apply fn(a, c, signed) to both halves of the packed .u16x2/.s16x2 operands."""
    sgn = PAIRS[pair_type(ins)]
    a = as_halves(em, em.read_bits(ins.args[1], "b32"))
    c = as_halves(em, em.read_bits(ins.args[2], "b32"))
    em.write(ins.args[0], "b32", from_halves(em, fn(a, c, sgn)))


# ---------------------------------------------------------------- add, sub and the carry chain


def _add_carry(em, a, c, cin):
    """a + c + cin and the carry out of the whole sum (`cin` an i1 value or None)."""
    b = em.b
    s = b.add(a, c)
    cout = b.icmp_unsigned("<", s, a)
    if cin is not None:
        s2 = b.add(s, b.zext(cin, s.type))
        cout = b.or_(cout, b.icmp_unsigned("<", s2, s))
        s = s2
    return s, cout


def _carry_op(em, ins: ir.Instr, a, c, sub: bool, carry_in: bool):
    """a ± c through the adder, reading CF if `carry_in`, writing it back under `.cc`."""
    b = em.b
    if carry_in:
        cin = em.read_bits(CARRY, "pred")
    else:
        cin = em.const("pred", 1) if sub else None
    if sub:
        c = b.not_(c)
    s, cout = _add_carry(em, a, c, cin)
    if "cc" in ins.mods:
        em.write(CARRY, "pred", cout)
    return s


@lowers("add", "sub", kind="int")
def lower_add_sub(em, ins: ir.Instr) -> None:
    b = em.b
    sub = ins.op == "sub"
    if pair_type(ins):
        if sub or "sat" in ins.mods or "cc" in ins.mods:  # PTX has only the plain add on halves
            raise em.error(f"{'.'.join((ins.op, *ins.mods))} does not exist")
        _pairwise(em, ins, lambda x, y, _s: b.add(x, y))
        return
    t = type_suffix(ins)
    a = em.read_bits(ins.args[1], t)
    c = em.read_bits(ins.args[2], t)
    if "cc" in ins.mods:
        v = _carry_op(em, ins, a, c, sub, carry_in=False)
    elif "sat" in ins.mods:
        if t != "s32":
            raise em.error(f"`.sat` applies only to {ins.op}.s32")
        v = intrinsic(em, "llvm.ssub.sat" if sub else "llvm.sadd.sat", [a, c])
    else:
        v = b.sub(a, c) if sub else b.add(a, c)
    em.write(ins.args[0], t, v)


@lowers("addc", "subc")
def lower_addc_subc(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    a = em.read_bits(ins.args[1], t)
    c = em.read_bits(ins.args[2], t)
    em.write(ins.args[0], t, _carry_op(em, ins, a, c, ins.op == "subc", carry_in=True))


# ---------------------------------------------------------------- products


def _mode(ins: ir.Instr) -> str:
    return next((m for m in ins.mods if m in ("hi", "lo", "wide")), "lo")


def _product(em, ins: ir.Instr, t: str, a, c):
    """a * c with .lo/.hi/.wide; returns (value, PTX type of the value)."""
    b = em.b
    n = TYPE_BITS[t]
    sgn = signed(t)
    mode = _mode(ins)
    if mode == "lo":
        return b.mul(a, c), t
    if mode == "wide" and n > 32:
        raise em.error(f"{ins.op}.wide exists only for 16- and 32-bit types")
    if n == 64 and not getattr(em, "has_i128", True):
        return mul_hi64(em, a, c, sgn), t
    p = b.mul(resize(em, a, 2 * n, sgn), resize(em, c, 2 * n, sgn))
    if mode == "wide":
        return p, ("s" if sgn else "u") + str(2 * n)
    return b.trunc(b.lshr(p, em.const_int(2 * n, n)), ity(em, n)), t


def mul_hi64(em, a, c, sgn: bool):
    """The high 64 bits of the 128-bit product of 64-bit a and c, from 32-bit halves (for
    backends without 128-bit integers): hi = a1*c1 + (a0*c1 >> 32) + (a1*c0 >> 32) + carries
    of the middle column; the signed high half subtracts c where a < 0 and a where c < 0."""
    b = em.b
    m32 = em.const_int(64, 0xFFFFFFFF)
    s32 = em.const_int(64, 32)
    a0, a1 = b.and_(a, m32), b.lshr(a, s32)
    c0, c1 = b.and_(c, m32), b.lshr(c, s32)
    p00, p01, p10, p11 = b.mul(a0, c0), b.mul(a0, c1), b.mul(a1, c0), b.mul(a1, c1)
    mid = b.add(b.add(b.lshr(p00, s32), b.and_(p01, m32)), b.and_(p10, m32))
    hi = b.add(b.add(p11, b.lshr(p01, s32)), b.add(b.lshr(p10, s32), b.lshr(mid, s32)))
    if sgn:
        zero = em.const_int(64, 0)
        hi = b.sub(hi, b.select(b.icmp_signed("<", a, zero), c, zero))
        hi = b.sub(hi, b.select(b.icmp_signed("<", c, zero), a, zero))
    return hi


@lowers("mul", kind="int")
def lower_mul(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    v, rt = _product(em, ins, t, em.read_bits(ins.args[1], t), em.read_bits(ins.args[2], t))
    em.write(ins.args[0], rt, v)


def _mad(em, ins: ir.Instr, carry_in: bool) -> None:
    t = type_suffix(ins)
    p, rt = _product(em, ins, t, em.read_bits(ins.args[1], t), em.read_bits(ins.args[2], t))
    d = em.read_bits(ins.args[3], rt)
    if "cc" in ins.mods or carry_in:
        v = _carry_op(em, ins, p, d, sub=False, carry_in=carry_in)
    elif "sat" in ins.mods:
        if not (t == "s32" and _mode(ins) == "hi"):
            raise em.error("`.sat` applies only to mad.hi.s32")
        v = intrinsic(em, "llvm.sadd.sat", [p, d])
    else:
        v = em.b.add(p, d)
    em.write(ins.args[0], rt, v)


@lowers("mad", kind="int")
def lower_mad(em, ins: ir.Instr) -> None:
    _mad(em, ins, carry_in=False)


@lowers("madc")
def lower_madc(em, ins: ir.Instr) -> None:
    _mad(em, ins, carry_in=True)


def _product24(em, ins: ir.Instr, t: str):
    """The 48-bit product of the low 24 bits of a and b, its .lo or .hi 32 bits."""
    b = em.b
    sgn = signed(t)
    a = field(em, em.read_bits(ins.args[1], t), 0, 24, sgn, 64)
    c = field(em, em.read_bits(ins.args[2], t), 0, 24, sgn, 64)
    p = b.mul(a, c)
    if _mode(ins) == "hi":
        p = b.lshr(p, em.const_int(64, 16))
    return b.trunc(p, ity(em, 32))


@lowers("mul24")
def lower_mul24(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    em.write(ins.args[0], t, _product24(em, ins, t))


@lowers("mad24")
def lower_mad24(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    p = _product24(em, ins, t)
    d = em.read_bits(ins.args[3], t)
    if "sat" in ins.mods:
        if not (t == "s32" and _mode(ins) == "hi"):
            raise em.error("`.sat` applies only to mad24.hi.s32")
        v = intrinsic(em, "llvm.sadd.sat", [p, d])
    else:
        v = em.b.add(p, d)
    em.write(ins.args[0], t, v)


@lowers("sad")
def lower_sad(em, ins: ir.Instr) -> None:
    """d = c + |a - b| (the difference taken in the type's signedness, the sum wrapping)."""
    t = type_suffix(ins)
    b = em.b
    a = em.read_bits(ins.args[1], t)
    c = em.read_bits(ins.args[2], t)
    diff = b.select(lt(em, signed(t), a, c), b.sub(c, a), b.sub(a, c))
    em.write(ins.args[0], t, b.add(em.read_bits(ins.args[3], t), diff))


# ---------------------------------------------------------------- division


@lowers("div", "rem", kind="int")
def lower_div_rem(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    n = TYPE_BITS[t]
    b = em.b
    sgn = signed(t)
    a = em.read_bits(ins.args[1], t)
    c = em.read_bits(ins.args[2], t)
    zero = b.icmp_unsigned("==", c, em.const_int(n, 0))
    bad = zero
    if sgn:  # INT_MIN / -1: dividing by 1 instead gives the GPU's INT_MIN and 0
        ovf = b.and_(b.icmp_unsigned("==", a, em.const_int(n, 1 << (n - 1))),
                     b.icmp_unsigned("==", c, em.const_int(n, -1)))
        bad = b.or_(zero, ovf)
    safe = b.select(bad, em.const_int(n, 1), c)
    if em.vec and n <= 32 and not isinstance(ins.args[2], ir.Imm):
        q = _vector_divide(em, ins.op, a, safe, sgn)
    elif ins.op == "div":
        q = b.sdiv(a, safe) if sgn else b.udiv(a, safe)
    else:
        q = b.srem(a, safe) if sgn else b.urem(a, safe)
    em.write(ins.args[0], t, b.select(zero, em.const_int(n, -1), q))


def _vector_divide(em, op: str, a, c, sgn: bool):
    """div/rem of up to 32-bit lanes through f64, which x86 divides 4 or 8 lanes at a time
    (integer vector division is 32 scalar divisions).

    Exact: for |a| < 2^53 the rounding error of a/c is below 1/|c|, the smallest distance from
    a non-integer quotient to the next integer, so truncating the rounded quotient gives the
    integer quotient. (A constant divisor keeps the integer form, which LLVM turns into a
    multiplication.)
    """
    b = em.b
    f64 = ll.VectorType(ll.DoubleType(), LANES)
    if sgn:
        q = b.fptosi(b.fdiv(b.sitofp(a, f64), b.sitofp(c, f64)), a.type)
    else:
        q = b.fptoui(b.fdiv(b.uitofp(a, f64), b.uitofp(c, f64)), a.type)
    return q if op == "div" else b.sub(a, b.mul(q, c))


# ---------------------------------------------------------------- min, max, abs, neg


@lowers("min", "max", kind="int")
def lower_min_max(em, ins: ir.Instr) -> None:
    if len(ins.args) != 3:
        raise em.error(f"integer {ins.op} takes two sources")
    relu = "relu" in ins.mods
    pair = pair_type(ins)
    t = "b32" if pair else type_suffix(ins)
    if relu and pair != "s16x2" and t != "s32":
        raise em.error("`.relu` applies only to .s32 and .s16x2")
    sgn = PAIRS[pair] if pair else signed(t)
    name = f"llvm.{'s' if sgn else 'u'}{ins.op}"
    a = em.read_bits(ins.args[1], t)
    c = em.read_bits(ins.args[2], t)
    if pair:
        a, c = as_halves(em, a), as_halves(em, c)
    v = intrinsic(em, name, [a, c])
    if relu:
        v = intrinsic(em, "llvm.smax", [v, ll.Constant(v.type, None)])
    em.write(ins.args[0], t, from_halves(em, v) if pair else v)


@lowers("abs", kind="int")
def lower_abs(em, ins: ir.Instr) -> None:
    """|a|; abs(INT_MIN) is INT_MIN, as two's complement negation gives."""
    t = type_suffix(ins)
    b = em.b
    a = em.read_bits(ins.args[1], t)
    zero = em.const_int(TYPE_BITS[t], 0)
    em.write(ins.args[0], t, b.select(b.icmp_signed("<", a, zero), b.sub(zero, a), a))


@lowers("neg", kind="int")
def lower_neg(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    em.write(ins.args[0], t, em.b.sub(em.const_int(TYPE_BITS[t], 0), em.read_bits(ins.args[1], t)))


# ---------------------------------------------------------------- dot products


def _dot_types(em, ins: ir.Instr) -> tuple[bool, bool]:
    ts = [m for m in ins.mods if m in ("u32", "s32")]
    if len(ts) != 2:
        raise em.error(f"{ins.op} needs two types (.atype.btype)")
    return signed(ts[0]), signed(ts[1])


@lowers("dp4a")
def lower_dp4a(em, ins: ir.Instr) -> None:
    """d = c + the four products of the bytes of a and b (each byte extended by its type)."""
    b = em.b
    sa, sb = _dot_types(em, ins)
    a = em.read_bits(ins.args[1], "b32")
    c = em.read_bits(ins.args[2], "b32")
    acc = em.read_bits(ins.args[3], "b32")
    for i in range(4):
        acc = b.add(acc, b.mul(field(em, a, 8 * i, 8, sa), field(em, c, 8 * i, 8, sb)))
    em.write(ins.args[0], "b32", acc)


@lowers("dp2a")
def lower_dp2a(em, ins: ir.Instr) -> None:
    """d = c + the two products of the half-words of a with bytes 0,1 (.lo) or 2,3 (.hi) of b."""
    b = em.b
    sa, sb = _dot_types(em, ins)
    mode = _mode(ins)
    if mode == "wide":
        raise em.error("dp2a takes .lo or .hi")
    first = 2 if mode == "hi" else 0
    a = em.read_bits(ins.args[1], "b32")
    c = em.read_bits(ins.args[2], "b32")
    acc = em.read_bits(ins.args[3], "b32")
    for i in range(2):
        acc = b.add(acc, b.mul(field(em, a, 16 * i, 16, sa), field(em, c, 8 * (first + i), 8, sb)))
    em.write(ins.args[0], "b32", acc)
