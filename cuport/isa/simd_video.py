"""Video instructions: the SIMD forms vadd2/4, vsub2/4, vavrg2/4, vabsdiff2/4, vmin2/4, vmax2/4
and the 32-bit scalar forms vadd, vsub, vabsdiff, vmin, vmax.

PTX ISA §9.7.16 (Video Instructions). Each element is extended by its source type and the
operation done in full precision; `.sat` clamps to the destination type's element range; the
SIMD forms then either add the elements to c (`.add`) or merge them into c's bytes, the
scalar forms apply an optional secondary `.add/.min/.max` with c.

The scalar forms follow ptxas's sm_90 expansion, which the H200 (tests/isa/gpu/video.json)
confirms where the manual is silent or says otherwise:
- `.sat` with an s32 destination clamps to [-2^31, 2^31 - 1]; with a u32 destination it only
  turns a negative result into 0: there is no upper clamp, the low 32 bits are kept
  (vadd.u32.u32.u32.sat 0xffffffff, 1 is 0, not 0xffffffff).
- What the secondary min/max sees: vadd/vsub produce a 32-bit result (after `.sat`, or wrapped
  without it) that is sign-extended (vadd.s32.u32.s32.max 0x80808080, 0x7f7f7f7f, 0 is 0;
  vsub.u32.u32.u32.sat.max 0xffffffff, 1, 0xffffffff is 0xfffffffe); vabsdiff/vmin/vmax keep
  their full-precision value (after `.sat`). The comparison is 64-bit against c extended by
  the destination type, signed or unsigned as that type is; `.add` wraps.

Only the default operand selectors and masks are supported: the parser keeps a selector as part
of the register name (`%r1.b0`), so a register name with a dot is refused here.
"""

from __future__ import annotations

from ..ptx import ir
from .integer import ity, resize, signed
from .registry import lowers

_OPS = ("add", "sub", "avrg", "absdiff", "min", "max")


def _types(em, ins: ir.Instr) -> tuple[bool, bool, bool]:
    ts = [m for m in ins.mods if m in ("u32", "s32")]
    if len(ts) != 3:
        raise em.error(f"{ins.op} needs three types (.dtype.atype.btype)")
    return signed(ts[0]), signed(ts[1]), signed(ts[2])


def _plain(em, ins: ir.Instr) -> None:
    for a in ins.args:
        if isinstance(a, ir.Reg) and "." in a.name:
            raise em.error(f"video operand selectors and masks ({a.name}) are not supported")


def _apply(em, op: str, a, c, bits: int):
    """The primary operation on full-precision `bits`-wide integers (signed representation)."""
    b = em.b
    zero = em.const_int(bits, 0)
    if op == "add":
        return b.add(a, c)
    if op == "sub":
        return b.sub(a, c)
    if op == "absdiff":
        d = b.sub(a, c)
        return b.select(b.icmp_signed("<", d, zero), b.sub(zero, d), d)
    if op == "min":
        return b.select(b.icmp_signed("<", a, c), a, c)
    if op == "max":
        return b.select(b.icmp_signed(">", a, c), a, c)
    # avrg: (a + b + 1) >> 1 for a non-negative sum, (a + b) >> 1 otherwise
    s = b.add(a, c)
    up = b.icmp_signed(">=", s, zero)
    return b.ashr(b.select(up, b.add(s, em.const_int(bits, 1)), s), em.const_int(bits, 1))


def _clamp(em, v, lo: int, hi: int, bits: int):
    b = em.b
    v = b.select(b.icmp_signed("<", v, em.const_int(bits, lo)), em.const_int(bits, lo), v)
    return b.select(b.icmp_signed(">", v, em.const_int(bits, hi)), em.const_int(bits, hi), v)


def _elem(em, v, i: int, w: int, sgn: bool):
    """Element i (w bits wide) of the 32-bit v, extended to i32 by its signedness."""
    b = em.b
    if sgn:
        x = b.shl(v, em.const_int(32, 32 - w * (i + 1))) if 32 - w * (i + 1) else v
        return b.ashr(x, em.const_int(32, 32 - w))
    x = b.lshr(v, em.const_int(32, w * i)) if i else v
    return b.and_(x, em.const_int(32, (1 << w) - 1))


def _simd(em, ins: ir.Instr, op: str, n: int) -> None:
    _plain(em, ins)
    b = em.b
    sd, sa, sb = _types(em, ins)
    w = 32 // n
    a = em.read_bits(ins.args[1], "b32")
    c = em.read_bits(ins.args[2], "b32")
    acc = em.read_bits(ins.args[3], "b32")
    add = "add" in ins.mods
    sat = "sat" in ins.mods
    if add and sat:
        raise em.error("`.sat` cannot be combined with the secondary `.add`")
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if sd else (0, (1 << w) - 1)
    out = acc if add else em.const_int(32, 0)
    for i in range(n):
        t = _apply(em, op, _elem(em, a, i, w, sa), _elem(em, c, i, w, sb), 32)
        if sat:
            t = _clamp(em, t, lo, hi, 32)
        if add:
            out = b.add(out, t)
        else:
            t = b.and_(t, em.const_int(32, (1 << w) - 1))
            out = b.or_(out, b.shl(t, em.const_int(32, w * i)) if i else t)
    em.write(ins.args[0], "b32", out)


def _scalar(em, ins: ir.Instr, op: str) -> None:
    _plain(em, ins)
    b = em.b
    sd, sa, sb = _types(em, ins)
    a = resize(em, em.read_bits(ins.args[1], "b32"), 64, sa)
    c = resize(em, em.read_bits(ins.args[2], "b32"), 64, sb)
    t = _apply(em, op, a, c, 64)
    if "sat" in ins.mods and sd:
        t = _clamp(em, t, -(1 << 31), (1 << 31) - 1, 64)
    elif "sat" in ins.mods:  # u32: negative → 0, no upper clamp (see the module docstring)
        zero = em.const_int(64, 0)
        t = b.select(b.icmp_signed("<", t, zero), zero, t)
    if op in ("add", "sub"):  # a 32-bit result, sign-extended (see the module docstring)
        t = resize(em, b.trunc(t, ity(em, 32)), 64, True)
    op2 = next((m for m in ins.mods if m in ("add", "min", "max")), None)
    if op2 is not None:
        if len(ins.args) != 4:
            raise em.error(f"{ins.op}.{op2} needs the operand c")
        acc = resize(em, em.read_bits(ins.args[3], "b32"), 64, sd)
        if op2 == "add":
            t = b.add(t, acc)
        else:
            cmp = b.icmp_signed if sd else b.icmp_unsigned
            t = b.select(cmp("<" if op2 == "min" else ">", t, acc), t, acc)
    elif len(ins.args) != 3:
        raise em.error("the data-merge form of the scalar video instructions is not supported")
    em.write(ins.args[0], "b32", b.trunc(t, ity(em, 32)))


def _register() -> None:
    for op in _OPS:
        for n in (2, 4):
            lowers(f"v{op}{n}")(lambda em, ins, op=op, n=n: _simd(em, ins, op, n))
        if op != "avrg":
            lowers(f"v{op}")(lambda em, ins, op=op: _scalar(em, ins, op))


_register()
