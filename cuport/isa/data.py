"""mov and cvta: moving values, packing vectors, converting addresses between spaces.

PTX ISA §9.7.9.1 (mov), §9.7.9.16 (cvta). `mov` of a symbol yields its address in the
symbol's own state space (a shared variable's offset in the shared window, a global
variable's host address); `cvta` converts between those and generic (host) addresses.
"""

from __future__ import annotations

from ..ptx import ir
from ..ptx.ir import TYPE_BITS
from .registry import lowers, type_suffix


@lowers("mov")
def lower_mov(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    dst, src = ins.args[0], ins.args[1]
    b = em.b
    if isinstance(src, ir.Vec):
        # pack {lo, ..., hi} into one wide register
        n = len(src.items)
        part = TYPE_BITS[t] // n
        pt = {8: "b8", 16: "b16", 32: "b32", 64: "b64"}[part]
        wide = em.const_int(TYPE_BITS[t], 0)
        wt = wide.type
        for i, s in enumerate(src.items):
            v = em.read_bits(s, pt)
            v = b.zext(v, wt)
            if i:
                v = b.shl(v, em.const_int(TYPE_BITS[t], part * i))
            wide = b.or_(wide, v)
        em.write(dst, t, wide)
        return
    if isinstance(dst, ir.Vec):
        n = len(dst.items)
        part = TYPE_BITS[t] // n
        pt = {8: "b8", 16: "b16", 32: "b32", 64: "b64"}[part]
        v = em.read_bits(src, t)
        for i, d in enumerate(dst.items):
            x = v if i == 0 else b.lshr(v, em.const_int(TYPE_BITS[t], part * i))
            em.write(d, pt, b.trunc(x, em.bty(pt)))
        return
    em.write(dst, t, em.read_bits(src, t))


@lowers("cvta")
def lower_cvta(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    dst, src = ins.args[0], ins.args[1]
    to = "to" in ins.mods
    space = next((m for m in ins.mods if m in ("global", "shared", "local", "const", "param")), None)
    if space is None:
        for m in ins.mods:
            if m.startswith("shared::"):
                space = "shared"
    if space is None:
        raise em.error("cvta without a state space")
    b = em.b
    a = em.cvta(space, em.read_bits(src, "u64"), to)
    em.write(dst, t, b.trunc(a, em.bty(t)) if TYPE_BITS[t] < 64 else a)
