"""Which source slot ptxas gives each operand of a commutative f64 instruction.

When several operands of an f64 add/sub/mul/fma are NaN, the GPU returns the NaN of a
given *SASS* slot (isa/fprt.py, NAN_ORDER_F64: DADD/DMUL the second source's, DFMA b's,
then c's, then a's). ptxas does not keep PTX's order for the two commutative sources: it
puts the value defined earlier in the first slot and the later one in the second,
whatever the PTX order or register names (sm_90, ptxas 13: `add.f64 d, %fd19, %fd18` with
%fd18 loaded first is `DADD R, R(fd18), R(fd19)`; `sub.f64 d, a, b` with b first is
`DADD R, -b, a`), and an immediate goes to the second slot. A copy (`mov`) or a negation
or absolute value that ptxas folds into a source modifier has the definition of its
source. A register with several definitions reaching the use (a value merged after a
branch, a loop-carried value) counts as defined after every singly defined value, even one
defined after the merge (d09ftz_k001 of tests/differential: `add.rz.f64 d, %fd44, %fd55`
with %fd55 merged from two branches and %fd44 loaded after them keeps %fd44 first), and so
does the result of an f64 div.rn, rcp.rn or sqrt.rn, which ptxas expands with a slow path.

This is a model of what ptxas does in straight-line code and simple branches; in loops
that ptxas unrolls, the slots change from one unrolled iteration to the next, which no
rule on PTX can follow (tests/differential lists the kernels that meet it).
"""

from __future__ import annotations

from . import ir, opcodes

#: f64 opcodes whose first two sources ptxas may exchange (min/max: DSETP.MIN/MAX pairs)
COMMUTED = ("add", "sub", "mul", "fma", "mad", "min", "max")
_FOLDED = ("neg", "abs")
#: f64 instructions whose .rn form ptxas expands with a slow path that merges into the
#: result (d03_k046: `min.f64 d, %rcp, %ld` after rcp.rn.f64 is DSETP.MIN %ld, %rcp); the
#: .rz/.rm/.rp forms are not (ptxas 13: `add.f64 d, %rcp, %ld` after rcp.rz.f64 keeps %rcp first)
_EXPANDED = ("div", "rcp", "sqrt")  # f64: DADD -RZ, -a: a source modifier where the result feeds a DADD/DMUL/DFMA

_cache: dict[int, tuple[ir.Function, int, frozenset[int]]] = {}


def swapped(fn: ir.Function, ins: ir.Instr) -> bool:
    """Whether ptxas puts `ins`'s PTX operands a and b in the other slots (b first)."""
    hit = _cache.get(id(fn))
    body = fn.body or []
    if hit is None or hit[0] is not fn or hit[1] != len(body):
        if len(_cache) > 256:
            _cache.clear()
        hit = (fn, len(body), frozenset(_swaps(body)))
        _cache[id(fn)] = hit
    return id(ins) in hit[2]


def _dests(ins: ir.Instr) -> list[str]:
    if not ins.args or not opcodes.has_dest(ins):
        return []
    d = ins.args[0]
    if isinstance(d, ir.Reg):
        return [d.name]
    if isinstance(d, ir.Vec):
        return [x.name for x in d.items if isinstance(x, ir.Reg)]
    return []


def _swaps(body: list) -> list[int]:
    pos: dict[int, int] = {}
    block_start: list[int] = []  # per position: where its block starts
    defs: dict[str, list[int]] = {}
    instrs: list[ir.Instr] = []
    start = 0
    for st in body:
        if isinstance(st, ir.Label):
            start = len(instrs)
            continue
        if not isinstance(st, ir.Instr):
            continue
        i = len(instrs)
        pos[id(st)] = i
        instrs.append(st)
        block_start.append(start)
        for r in _dests(st):
            defs.setdefault(r, []).append(i)
        if opcodes.ends_block(st):
            start = i + 1

    def rank(op, at: int, depth: int = 0) -> float:
        if not isinstance(op, ir.Reg):
            return float("inf")  # an immediate: the second slot
        ds = defs.get(op.name, [])
        same_block = [d for d in ds if block_start[at] <= d < at]
        if same_block:
            d = same_block[-1]
        elif len(ds) == 1:
            d = ds[0]
        else:  # merged (a phi, an if-converted select): ptxas makes it after every other value
            return len(instrs) + block_start[at]
        src = instrs[d]
        if src.op in _EXPANDED and "f64" in src.mods and "rn" in src.mods:
            return len(instrs) + d  # its value comes out of a slow path: merged
        if depth < 8 and not src.guard and len(src.args) == 2 and isinstance(src.args[1], ir.Reg) and (
                src.op == "mov" or (src.op in _FOLDED and "f64" in src.mods)):
            return rank(src.args[1], d, depth + 1)
        return d

    out = []
    for i, ins in enumerate(instrs):
        if ins.op in COMMUTED and "f64" in ins.mods and len(ins.args) >= 3:
            if rank(ins.args[1], i) > rank(ins.args[2], i):
                out.append(id(ins))
    return out
