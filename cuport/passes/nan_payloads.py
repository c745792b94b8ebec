"""Registers whose canonical f32 NaN can wait for a read that shows a NaN's payload.

A GPU's f32 arithmetic returns the canonical NaN 0x7fffffff (isa/fprt.py); the host's
returns others, so a backend makes every f32 result canonical where it is written (a
compare and a select per operation, vectors wide: a third of a tiled sgemm's inner loop).
Many reads cannot tell NaNs apart: an f32 comparison asks only whether a value is a NaN,
and f32 arithmetic rounded to nearest is a NaN whenever an operand is one, whatever its
payload, and makes its own result canonical. Where a register's every write is such an
operation, its NaN may stay the host's until a read that shows the payload (a store, a
move to integer bits, a conversion, a shuffle, ...), which then makes the value canonical:
an accumulator is made canonical once after its loop instead of at every step.

Needs: a function body. Leaves: `deferred(fn)`, the registers written only by f32
operations that make their NaN canonical in isa/floating.result_bits and read blind
(`blind`) at least once. A backend that defers (em.nan_deferred) writes them as the host
computes them and makes each read by an instruction that is not blind canonical.
Legal: a blind read gives the same result for the host's NaN as for the canonical one, and
every other read sees the canonical NaN, so every value a program can observe is the one
that canonicalising at each write gives.
"""

from __future__ import annotations

from ..isa.operands import defs
from ..isa.values import float_imm_bits
from ..ptx import ir
from ..ptx.ir import TYPE_BITS

#: f32 arithmetic that is a NaN whenever an operand is one (IEEE), whatever its payload,
#: and makes its own NaN canonical (or defers it, by the same rule)
_ARITHMETIC = frozenset({"add", "sub", "mul", "fma", "mad", "div", "sqrt"})
_DIRECTED = frozenset({"rz", "rm", "rp"})  # (computed in f64 pairs: not blind, to be safe)


def _minmax(ins: ir.Instr) -> bool:
    """f32 min/max of distinct operands: a NaN operand is ignored and two NaNs give the
    canonical NaN (isa/floating.lower_minmax, through result_bits), so the result depends on
    an operand's NaN-ness only; `.xorsign` reads a NaN's sign bit. min/max of a register with
    itself copies its bits (ptxas folds it), as a move does."""
    if ins.op not in ("min", "max") or "xorsign" in ins.mods:
        return False
    srcs = ins.args[1:]
    return not (len(srcs) == 2 and isinstance(srcs[0], ir.Reg) and srcs[0] == srcs[1])


def blind(ins: ir.Instr) -> bool:
    """Whether `ins` reads its f32 sources only as numbers and NaN-ness: an f32 comparison,
    or f32 arithmetic rounded to nearest (div and sqrt only as .rn: .approx and .full are
    sequences of their own)."""
    types = [m for m in ins.mods if m in TYPE_BITS]
    if types != ["f32"]:
        return False  # (another type, or a mixed-precision form)
    if ins.op == "setp" or _minmax(ins):
        return True
    if ins.op not in _ARITHMETIC or any(m in _DIRECTED for m in ins.mods):
        return False
    return ins.op not in ("div", "sqrt") or "rn" in ins.mods


def _number(ins: ir.Instr) -> bool:
    """A move of an f32 constant that is no NaN (`mov.f32 %f, 0f00000000` before a loop
    that accumulates): no payload for a canonical read to change."""
    if ins.op != "mov" or ins.mods != ("f32",) or len(ins.args) != 2:
        return False
    a = ins.args[1]
    if isinstance(a, ir.FImm):
        bits = float_imm_bits(a, "f32")
    elif isinstance(a, ir.Imm):
        bits = a.value & 0xFFFFFFFF
    else:
        return False
    return (bits & 0x7F800000) != 0x7F800000 or (bits & 0x7FFFFF) == 0


def deferred(fn: ir.Function) -> frozenset[str]:
    """The registers of `fn` whose every write is an f32 operation of _ARITHMETIC (whose NaN
    isa/floating.py makes canonical) or a number (`_number`), and which some instruction
    reads blind."""
    ok: set[str] = set()
    bad: set[str] = set()
    blind_read: set[str] = set()
    for st in fn.body or ():
        if not isinstance(st, ir.Instr):
            continue
        types = [m for m in st.mods if m in TYPE_BITS]
        writer = ((st.op in _ARITHMETIC or _minmax(st)) and types[:1] == ["f32"]) or _number(st)
        for r in defs(st):
            (ok if writer else bad).add(r.name)
        if blind(st):
            blind_read.update(a.name for a in st.args[1:] if isinstance(a, ir.Reg))
    return frozenset((ok - bad) & blind_read)
