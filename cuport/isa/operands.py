"""Which operands of an instruction it writes and which it reads.

PTX puts the destination first, except where ptx/opcodes.py's table says otherwise. The
analyses (uniformity, liveness) only need register names, so this module flattens
vectors, predicate pairs, negations and addresses into register lists.
"""

from __future__ import annotations

from ..ptx import ir, opcodes

has_dest = opcodes.has_dest  # (the table: ptx/opcodes.py)


def regs_in(o) -> list[ir.Reg]:
    """Registers an operand mentions (addresses included)."""
    if isinstance(o, ir.Reg):
        return [o]
    if isinstance(o, ir.Not):
        return [o.reg]
    if isinstance(o, ir.Mem):
        return [o.base] if isinstance(o.base, ir.Reg) else []
    if isinstance(o, (ir.Vec, ir.Args)):
        out: list[ir.Reg] = []
        for x in o.items:
            out.extend(regs_in(x))
        return out
    if isinstance(o, ir.PredPair):
        return [x for x in (o.p, o.q) if isinstance(x, ir.Reg)]
    return []


#: The hidden carry flag of add.cc/addc/subc/madc, made an ordinary register for the analyses.
CARRY = ir.Reg("%__cc")
_CARRY_IN = {"addc", "subc", "madc"}


def defs(ins: ir.Instr) -> list[ir.Reg]:
    if not has_dest(ins):
        return []
    d = ins.args[0]
    if isinstance(d, ir.Mem):
        return []
    out = regs_in(d)
    if "cc" in ins.mods:
        out.append(CARRY)
    return out


def uses(ins: ir.Instr) -> list[ir.Reg]:
    out: list[ir.Reg] = []
    if ins.guard is not None:
        out.append(ins.guard)
    args = ins.args[1:] if has_dest(ins) and not isinstance(ins.args[0], ir.Mem) else ins.args
    for a in args:
        out.extend(regs_in(a))
    if ins.op in _CARRY_IN:
        out.append(CARRY)
    return out
