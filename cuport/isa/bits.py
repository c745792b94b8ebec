"""Logic, shifts and bit manipulation: and, or, xor, not, cnot, lop3, shl, shr, shf, popc, clz,
brev, bfe, bfi, bfind, fns, bmsk, szext, prmt.

PTX ISA §9.7.8 (Logic and Shift Instructions) and §9.7.1 (the bit-manipulation members of the
integer family). PTX defines every out-of-range amount (shift by ≥ width, field positions and
lengths past the msb) where LLVM would give poison, so each lowering clamps or selects
explicitly before an LLVM shift sees the amount. The semantics are the manual's pseudo-code,
which ptxas's sm_90 expansions (SHF, SGXT, BMSK, FLO, PRMT) follow, except where the H200
recording (tests/isa/gpu/bitops.json) shows otherwise: 64-bit bfe/bfi saturate a position or
length above 255 instead of keeping its low byte, and fns with offset -2**31 answers 0.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ..ptx import ir
from ..ptx.ir import TYPE_BITS
from .integer import intrinsic, ity, resize
from .registry import lowers, type_suffix

_LOGIC = {"and": "and_", "or": "or_", "xor": "xor"}


@lowers("and", "or", "xor")
def lower_logic(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    a = em.read_bits(ins.args[1], t)
    c = em.read_bits(ins.args[2], t)
    em.write(ins.args[0], t, getattr(em.b, _LOGIC[ins.op])(a, c))


@lowers("not")
def lower_not(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    em.write(ins.args[0], t, em.b.not_(em.read_bits(ins.args[1], t)))


@lowers("cnot")
def lower_cnot(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    a = em.read_bits(ins.args[1], t)
    z = em.b.icmp_unsigned("==", a, em.const_int(TYPE_BITS[t], 0))
    em.write(ins.args[0], t, em.b.zext(z, em.bty(t)))


# ---------------------------------------------------------------- lop3


def _lut(em, lut: int, a, b_, c):
    """The function of a, b, c whose truth table is `lut` (bit a*4 + b*2 + c), as and/or/not.

    LLVM's instcombine reduces the sum of minterms to the plain operation (0xF8 → a | b & c).
    """
    b = em.b
    lut &= 0xFF
    n = b.not_
    invert = bin(lut).count("1") > 4  # build the complement when it has fewer minterms
    if invert:
        lut = ~lut & 0xFF
    out = None
    for i in range(8):
        if lut >> i & 1:
            x = (a if i & 4 else n(a), b_ if i & 2 else n(b_), c if i & 1 else n(c))
            term = b.and_(b.and_(x[0], x[1]), x[2])
            out = term if out is None else b.or_(out, term)
    if out is None:
        out = em.const_int(32, 0)
    return n(out) if invert else out


@lowers("lop3")
def lower_lop3(em, ins: ir.Instr) -> None:
    """lop3.b32 d, a, b, c, immLut; and lop3.{or,and}.b32 d|p, a, b, c, immLut, q."""
    if not isinstance(ins.args[4], ir.Imm):
        raise em.error("the lookup table of lop3 must be an immediate")
    a, b_, c = (em.read_bits(x, "b32") for x in ins.args[1:4])
    d = _lut(em, ins.args[4].value, a, b_, c)
    dst = ins.args[0]
    boolop = next((m for m in ins.mods if m in ("or", "and")), None)
    if boolop is None:
        em.write(dst, "b32", d)
        return
    if not isinstance(dst, ir.PredPair) or len(ins.args) != 6:
        raise em.error(f"lop3.{boolop} needs the form d|p, a, b, c, immLut, q")
    nz = em.b.icmp_unsigned("!=", d, em.const_int(32, 0))
    q = em.read_bits(ins.args[5], "pred")
    em.write(dst.p, "b32", d)
    em.write(dst.q, "pred", em.b.or_(nz, q) if boolop == "or" else em.b.and_(nz, q))


# ---------------------------------------------------------------- shifts


def _amount(em, v, n: int, limit: int):
    """An unsigned u32 amount as an n-bit value, clamped to `limit` (so no shift is poison)."""
    big = em.b.icmp_unsigned(">", v, em.const_int(32, limit))
    return resize(em, em.b.select(big, em.const_int(32, limit), v), n, False)


@lowers("shl", "shr")
def lower_shift(em, ins: ir.Instr) -> None:
    """Amounts ≥ the width give 0, or all sign bits for shr.s."""
    t = type_suffix(ins)
    n = TYPE_BITS[t]
    b = em.b
    a = em.read_bits(ins.args[1], t)
    amt32 = em.read_bits(ins.args[2], "u32")
    big = b.icmp_unsigned(">=", amt32, em.const_int(32, n))
    amt = _amount(em, amt32, n, n - 1)
    if ins.op == "shr" and t[0] == "s":
        v = b.ashr(a, amt)
    else:
        v = b.select(big, em.const_int(n, 0), b.shl(a, amt) if ins.op == "shl" else b.lshr(a, amt))
    em.write(ins.args[0], t, v)


@lowers("shf")
def lower_shf(em, ins: ir.Instr) -> None:
    """Funnel shift of the 64-bit b:a by c (.wrap: c mod 32; .clamp: min(c, 32))."""
    b = em.b
    a = em.read_bits(ins.args[1], "b32")
    hi = em.read_bits(ins.args[2], "b32")
    c = em.read_bits(ins.args[3], "u32")
    left = "l" in ins.mods
    if "l" not in ins.mods and "r" not in ins.mods:
        raise em.error("shf needs .l or .r")
    n = b.and_(c, em.const_int(32, 31))
    v = intrinsic(em, "llvm.fshl" if left else "llvm.fshr", [hi, a, n])
    if "clamp" in ins.mods:  # a shift by 32 moves one word entirely into the other
        full = b.icmp_unsigned(">=", c, em.const_int(32, 32))
        v = b.select(full, a if left else hi, v)
    elif "wrap" not in ins.mods:
        raise em.error("shf needs .wrap or .clamp")
    em.write(ins.args[0], "b32", v)


# ---------------------------------------------------------------- counting


def _count(em, ins: ir.Instr, name: str, *extra) -> None:
    t = type_suffix(ins)
    a = em.read_bits(ins.args[1], t)
    v = intrinsic(em, name, [a, *extra])
    em.write(ins.args[0], "u32", resize(em, v, 32, False))


@lowers("popc")
def lower_popc(em, ins: ir.Instr) -> None:
    _count(em, ins, "llvm.ctpop")


@lowers("clz")
def lower_clz(em, ins: ir.Instr) -> None:
    _count(em, ins, "llvm.ctlz", ll.Constant(ll.IntType(1), 0))  # clz(0) is the width


@lowers("brev")
def lower_brev(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    em.write(ins.args[0], t, intrinsic(em, "llvm.bitreverse", [em.read_bits(ins.args[1], t)]))


@lowers("bfind")
def lower_bfind(em, ins: ir.Instr) -> None:
    """Position of the most significant non-sign bit (0xffffffff if none); .shiftamt: msb - it."""
    t = type_suffix(ins)
    n = TYPE_BITS[t]
    b = em.b
    a = em.read_bits(ins.args[1], t)
    if t[0] == "s":
        a = b.select(b.icmp_signed("<", a, em.const_int(n, 0)), b.not_(a), a)
    lz = resize(em, intrinsic(em, "llvm.ctlz", [a, ll.Constant(ll.IntType(1), 0)]), 32, False)
    pos = lz if "shiftamt" in ins.mods else b.sub(em.const_int(32, n - 1), lz)
    none = b.icmp_unsigned("==", a, em.const_int(n, 0))
    em.write(ins.args[0], "u32", b.select(none, em.const_int(32, -1), pos))


def _select_bit(em, m, k):
    """Position of the k-th (1-based) set bit of the 32-bit m, counting from bit 0.

    A binary search on population counts of halves; meaningful only when popc(m) >= k.
    """
    b = em.b
    pos = em.const_int(32, 0)
    for w in (16, 8, 4, 2, 1):
        low = b.and_(b.lshr(m, pos), em.const_int(32, (1 << w) - 1))
        cnt = intrinsic(em, "llvm.ctpop", [low])
        up = b.icmp_unsigned(">", k, cnt)
        k = b.select(up, b.sub(k, cnt), k)
        pos = b.select(up, b.add(pos, em.const_int(32, w)), pos)
    return pos


@lowers("fns")
def lower_fns(em, ins: ir.Instr) -> None:
    """Find the offset-th set bit of mask from base, upwards (offset > 0) or downwards (< 0).

    A base above 31 is undefined in PTX; the manual's loop finds nothing then (0xffffffff),
    and so does the H200. An offset of -2**31 gives 0 on the H200 whatever mask and base are:
    ptxas's sm_90 expansion negates the offset (still -2**31), its signed `popc < count` test
    never reports "not found", and the bit search of the reversed mask runs to the top (0).
    """
    b = em.b
    c32 = lambda v: em.const_int(32, v)  # noqa: E731
    mask = em.read_bits(ins.args[1], "b32")
    base = em.read_bits(ins.args[2], "u32")
    off = em.read_bits(ins.args[3], "s32")
    none = c32(-1)
    in_range = b.icmp_unsigned("<", base, c32(32))
    sb = b.and_(base, c32(31))  # only used where in_range
    # offset == 0: is bit `base` set?
    bit = b.and_(b.lshr(mask, sb), c32(1))
    at_base = b.select(b.icmp_unsigned("!=", bit, c32(0)), base, none)
    neg = b.icmp_signed("<", off, c32(0))
    need = b.select(neg, b.sub(c32(0), off), off)  # |offset|, unsigned (INT_MIN included)
    # upwards: bits base..31; downwards: bits 0..base
    up_m = b.and_(mask, b.shl(c32(-1), sb))
    down_m = b.and_(mask, b.lshr(c32(-1), b.sub(c32(31), sb)))
    m = b.select(neg, down_m, up_m)
    cnt = intrinsic(em, "llvm.ctpop", [m])
    found = b.icmp_unsigned(">=", cnt, need)
    k = b.select(neg, b.add(b.sub(cnt, need), c32(1)), need)
    pos = b.select(found, _select_bit(em, m, k), none)
    v = b.select(b.icmp_unsigned("==", off, c32(0)), at_base, pos)
    v = b.select(in_range, v, none)
    em.write(ins.args[0], "b32", b.select(b.icmp_unsigned("==", off, c32(-(1 << 31))), c32(0), v))


# ---------------------------------------------------------------- bit fields


def _pos_len(em, ins: ir.Instr, i: int, n: int):
    """Field position and length operands (u32) as n-bit values in 0..255.

    The manual keeps their low byte, and so does the H200 for .b32/.u32/.s32 (ptxas picks the
    bytes with PRMT). For the 64-bit types the H200 saturates instead: ptxas builds the field
    with 64-bit shifts of the whole u32 amount, where any amount from 64 up shifts everything
    out, so a position or length above 255 acts as 255, not as its low byte.
    """
    b = em.b
    out = []
    for j in (i, i + 1):
        v = em.read_bits(ins.args[j], "u32")
        if n == 64:
            v = b.select(b.icmp_unsigned(">", v, em.const_int(32, 0xFF)), em.const_int(32, 0xFF), v)
        else:
            v = b.and_(v, em.const_int(32, 0xFF))
        out.append(resize(em, v, n, False))
    return out


def _low_mask(em, ln, n: int):
    """n-bit mask of the low `ln` bits (ln may be ≥ n)."""
    b = em.b
    full = b.icmp_unsigned(">=", ln, em.const_int(n, n))
    safe = b.select(full, em.const_int(n, 0), ln)
    return b.select(full, em.const_int(n, -1), b.sub(b.shl(em.const_int(n, 1), safe), em.const_int(n, 1)))


@lowers("bfe")
def lower_bfe(em, ins: ir.Instr) -> None:
    """Extract len bits at pos, zero- or sign-extended; bits past the msb read as the sign."""
    t = type_suffix(ins)
    n = TYPE_BITS[t]
    b = em.b
    a = em.read_bits(ins.args[1], t)
    pos, ln = _pos_len(em, ins, 2, n)
    cn = lambda v: em.const_int(n, v)  # noqa: E731
    past = b.icmp_unsigned(">=", pos, cn(n))
    if t[0] == "s":
        x = b.ashr(a, b.select(past, cn(n - 1), pos))
        short = b.icmp_unsigned("<", ln, cn(n))
        sh = b.select(short, b.sub(cn(n), ln), cn(0))  # sign-extend from bit len-1
        x = b.ashr(b.shl(x, sh), sh)
    else:
        x = b.select(past, cn(0), b.lshr(a, b.select(past, cn(0), pos)))
        x = b.and_(x, _low_mask(em, ln, n))
    em.write(ins.args[0], t, b.select(b.icmp_unsigned("==", ln, cn(0)), cn(0), x))


@lowers("bfi")
def lower_bfi(em, ins: ir.Instr) -> None:
    """Insert the low len bits of a into b at pos (what falls past the msb is dropped)."""
    t = type_suffix(ins)
    n = TYPE_BITS[t]
    b = em.b
    a = em.read_bits(ins.args[1], t)
    base = em.read_bits(ins.args[2], t)
    pos, ln = _pos_len(em, ins, 3, n)
    past = b.icmp_unsigned(">=", pos, em.const_int(n, n))
    sp = b.select(past, em.const_int(n, 0), pos)
    mask = b.select(past, em.const_int(n, 0), b.shl(_low_mask(em, ln, n), sp))
    v = b.or_(b.and_(base, b.not_(mask)), b.and_(b.shl(a, sp), mask))
    em.write(ins.args[0], t, v)


@lowers("bmsk")
def lower_bmsk(em, ins: ir.Instr) -> None:
    """A mask of b bits starting at bit a (the manual's pseudo-code for .clamp and .wrap)."""
    b = em.b
    c32 = lambda v: em.const_int(32, v)  # noqa: E731
    a = em.read_bits(ins.args[1], "u32")
    w = em.read_bits(ins.args[2], "u32")
    a1 = b.and_(a, c32(31))
    w1 = b.and_(w, c32(31))
    total = b.add(a1, w1)
    mask0 = b.shl(c32(-1), a1)
    zero_hi = b.icmp_unsigned(">=", total, c32(32))  # the field reaches bit 31
    if "clamp" in ins.mods:
        mask0 = b.select(b.icmp_unsigned(">=", a, c32(32)), c32(0), mask0)
        zero_hi = b.or_(zero_hi, b.or_(b.icmp_unsigned(">=", a, c32(32)), b.icmp_unsigned(">=", w, c32(32))))
    elif "wrap" not in ins.mods:
        raise em.error("bmsk needs .clamp or .wrap")
    mask1 = b.shl(c32(-1), b.and_(total, c32(31)))
    mask1 = b.select(b.icmp_unsigned("==", w1, c32(0)), c32(-1), mask1)
    mask1 = b.select(zero_hi, c32(0), mask1)
    em.write(ins.args[0], "b32", b.and_(mask0, b.not_(mask1)))


@lowers("szext")
def lower_szext(em, ins: ir.Instr) -> None:
    """Sign- (.s32) or zero- (.u32) extend the low b bits of a (the manual's pseudo-code)."""
    t = type_suffix(ins)
    b = em.b
    c32 = lambda v: em.const_int(32, v)  # noqa: E731
    a = em.read_bits(ins.args[1], "b32")
    w = em.read_bits(ins.args[2], "u32")
    w1 = b.and_(w, c32(31))
    if "clamp" in ins.mods:
        too_large = b.icmp_unsigned(">=", w, c32(32))
    elif "wrap" in ins.mods:
        too_large = None
    else:
        raise em.error("szext needs .clamp or .wrap")
    mask = b.shl(c32(-1), w1)
    if too_large is not None:
        mask = b.select(too_large, c32(0), mask)
    v = b.and_(a, b.not_(mask))
    if t == "s32":
        sign = b.and_(b.lshr(a, b.and_(b.sub(w1, c32(1)), c32(31))), c32(1))
        sign = b.icmp_unsigned("!=", sign, c32(0))
        sign = b.and_(sign, b.icmp_unsigned("!=", w1, c32(0)))
        if too_large is not None:
            sign = b.and_(sign, b.not_(too_large))
        v = b.select(sign, b.or_(v, mask), v)
    em.write(ins.args[0], "b32", v)


# ---------------------------------------------------------------- prmt

#: Byte selectors of the prmt modes for c & 3 (nibble k = source byte of result byte k).
PRMT_MODES = {
    "f4e": (0x3210, 0x4321, 0x5432, 0x6543),
    "b4e": (0x5670, 0x6701, 0x7012, 0x0123),
    "rc8": (0x0000, 0x1111, 0x2222, 0x3333),
    "ecl": (0x3210, 0x3211, 0x3222, 0x3333),
    "ecr": (0x0000, 0x1110, 0x2210, 0x3210),
    "rc16": (0x1010, 0x3232, 0x1010, 0x3232),
}


@lowers("prmt")
def lower_prmt(em, ins: ir.Instr) -> None:
    """Pick four bytes of {b, a}; in the generic form selector bit 3 replicates the byte's sign."""
    b = em.b
    c32 = lambda v: em.const_int(32, v)  # noqa: E731
    c64 = lambda v: em.const_int(64, v)  # noqa: E731
    a = resize(em, em.read_bits(ins.args[1], "b32"), 64, False)
    hi = resize(em, em.read_bits(ins.args[2], "b32"), 64, False)
    src = b.or_(b.shl(hi, c64(32)), a)
    ctl = em.read_bits(ins.args[3], "b32")
    mode = next((m for m in ins.mods if m in PRMT_MODES), None)
    if mode is not None:
        sel = b.and_(ctl, c32(3))
        table = PRMT_MODES[mode]
        ctl = c32(table[3])
        for i in (2, 1, 0):
            ctl = b.select(b.icmp_unsigned("==", sel, c32(i)), c32(table[i]), ctl)
    out = c32(0)
    for k in range(4):
        s = b.lshr(ctl, c32(4 * k)) if k else ctl
        shift = resize(em, b.mul(b.and_(s, c32(7)), c32(8)), 64, False)
        byte = b.and_(b.trunc(b.lshr(src, shift), ity(em, 32)), c32(0xFF))
        if mode is None:
            neg = b.icmp_unsigned("!=", b.and_(byte, c32(0x80)), c32(0))
            rep = b.icmp_unsigned("!=", b.and_(s, c32(8)), c32(0))
            byte = b.select(rep, b.select(neg, c32(0xFF), c32(0)), byte)
        out = b.or_(out, b.shl(byte, c32(8 * k)) if k else byte)
    em.write(ins.args[0], "b32", out)
