"""Run short stretches that a divergent branch jumps over predicated, instead of branching.

Needs: the function's Cfg and Divergence (which predicates are varying). Leaves: a copy of
the function in which every `@p bra L; <straight-line code>; L:` whose `p` is varying and
whose code is short and free of warp-level instructions is `<the code>; L:`, each
instruction of it guarded by `!p` (or by `!p` and its own guard), no branch left; the
caller builds the CFG and divergence again.

Why: a divergent branch makes both of its successors places where lanes may wait (the
warp executor's pending targets, backends/cpu/emit.py), each reachable from the warp's
dispatch, so LLVM's SSA construction puts a phi for every register live there at every
such block. CUB's onesweep radix sort kernel (Thrust's sort) has ~50 guarded one-line loads
and stores written as `@p bra` around them, with ~270 registers live: 38,000 phis, and
LLVM's instcombine and register coalescer then took most of its compile time. Predicated,
the same code is one straight line.

Legal: for the lanes that run the stretch, a guarded instruction does exactly what it did;
for the others (which would have jumped to L) it does nothing, as the branch made it do.
The copy of `p` taken where the branch was keeps the condition if the stretch writes `p`.
Pure arithmetic whose results are used nowhere but later in the stretch (address
temporaries: nvcc names every value afresh) stays unguarded, so lane forms and address
patterns see it as before: the lanes that skip the stretch never read those registers.
The stretches are kept in `Function.stretches`: the emitter jumps over one that holds
memory accesses where no lane of the warp runs it and no lane must (backends/cpu/emit.py
`_emit_body`), as the branch did, without the lanes waiting anywhere.
Only arithmetic and masked memory accesses are predicated (PREDICABLE): warp-level
instructions (shuffles, votes, barriers, calls) keep their branch, since what they do
depends on which lanes reach them together, and so does anything else with effects.
"""

from __future__ import annotations

import copy
import itertools

from ..isa.operands import defs, uses
from ..ptx import ir
from .cfg import Cfg
from .divergence import Divergence

#: the longest stretch predicated: it then runs even where no lane takes it (a masked
#: instruction costs about what it would in a branch of its own); a few instructions
#: covers nvcc's guarded loads and stores, and `if (i < n)` bodies of a tile
MAX_INSTRS = 16

#: operations with no effect but their destination (no memory, no other lanes, no trap:
#: integer division by zero is defined in PTX and made safe by isa/integer.py)
PURE = frozenset({
    "add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem", "abs", "neg", "min",
    "max", "and", "or", "xor", "not", "cnot", "shl", "shr", "lop3", "shf", "prmt", "bfe",
    "bfi", "bfind", "brev", "clz", "popc", "cvt", "cvta", "mov", "setp", "selp", "slct",
    "set", "fma", "copysign", "testp",
})

#: other computations that only write their destination (guarded: the lanes that skip
#: keep their old values, emit.py's write)
_ARITHMETIC = frozenset({"rcp", "sqrt", "rsqrt", "sin", "cos", "ex2", "lg2", "tanh", "dp4a",
                         "dp2a", "bmsk", "szext", "fns"})

#: memory accesses whose lowering touches only the executing lanes' addresses (the guard
#: is part of the exec mask: masked gathers and scatters, per-lane atomics, a scalar
#: access only when some lane executes it)
_MASKED_MEMORY = frozenset({"ld", "ldu", "st", "atom", "red"})

#: what a stretch may hold. Everything else keeps its branch: warp-level instructions
#: (shuffles, votes, barriers, yields, calls), whose meaning depends on which lanes reach
#: them together; control flow and traps; textures, surfaces, async copies and anything
#: else whose lowering might act for lanes that skip it.
PREDICABLE = PURE | _ARITHMETIC | _MASKED_MEMORY

_counter = itertools.count(1)


def _predicable(ins: ir.Instr) -> bool:
    return ins.op in PREDICABLE


def _local(seen: dict[str, list[tuple[int, bool]]], body: list, name: str, i: int, j: int
           ) -> bool:
    """Whether register `name` is mentioned only between statements i and j (a stretch),
    first by an unguarded definition."""
    occ = seen[name]
    return all(i < k < j for k, _ in occ) and occ[0][1] and body[occ[0][0]].guard is None


def predicate_short_branches(fn: ir.Function, cfg: Cfg, div: Divergence) -> ir.Function:
    """A copy of `fn` with the short stretches behind divergent branches predicated, or
    `fn` itself when there are none (cfg: `fn`'s; div: its divergence)."""
    body = fn.body or []
    labels = {s.name: i for i, s in enumerate(body) if isinstance(s, ir.Label)}
    divergent = {id(cfg.blocks[x].term) for x in div.divergent_branches}
    stretches: list[tuple[int, int]] = []  # (the branch's index, its label's index)
    for i, s in enumerate(body):
        if not (isinstance(s, ir.Instr) and s.op == "bra" and s.guard is not None
                and id(s) in divergent and s.args and isinstance(s.args[-1], ir.Sym)):
            continue
        j = labels.get(s.args[-1].name)
        if j is None or j <= i + 1 or j - i - 1 > MAX_INSTRS:
            continue
        if all(isinstance(x, ir.Instr) and _predicable(x) for x in body[i + 1:j]):
            stretches.append((i, j))
    if not stretches:
        return fn
    # where each register is mentioned: (statement index, is a definition)
    seen: dict[str, list[tuple[int, bool]]] = {}
    for i, s in enumerate(body):
        if isinstance(s, ir.Instr):
            for r in uses(s):
                seen.setdefault(r.name, []).append((i, False))
            for r in defs(s):
                seen.setdefault(r.name, []).append((i, True))

    regs = dict(fn.regs)
    marked = dict(fn.stretches)
    replace: dict[int, list] = {}  # branch index -> what replaces the branch and the stretch

    def new_pred() -> ir.Reg:
        r = ir.Reg(f"%__pred{next(_counter)}")
        regs[r.name] = "pred"
        return r

    for i, j in stretches:
        bra = body[i]
        stretch = body[i + 1:j]

        out: list = []
        p, skip_if = bra.guard, not bra.guard_neg  # lanes with p == skip_if branched over
        if any(r.name == p.name for x in stretch for r in defs(x)):
            copy_p = new_pred()
            out.append(ir.Instr("mov", ("pred",), [copy_p, p], line=bra.line))
            p = copy_p
        start = len(out)
        for ins in stretch:
            ds = defs(ins)
            if ins.guard is None and ins.op in PURE and ds and all(_local(seen, body, r.name, i, j) for r in ds):
                out.append(ins)
                continue
            g = copy.copy(ins)
            if ins.guard is None:
                g.guard, g.guard_neg = p, skip_if
            else:
                both = new_pred()
                run = ir.Not(p) if skip_if else p
                own = ir.Not(ins.guard) if ins.guard_neg else ins.guard
                out.append(ir.Instr("and", ("pred",), [both, run, own], line=ins.line))
                g.guard, g.guard_neg = both, False
            out.append(g)
        replace[i] = out
        ids = tuple(id(x) for x in out[start:])
        marked[ids[0]] = (ids, p, not skip_if)

    new_body: list = []
    i = 0
    ends = {i: j for i, j in stretches}
    while i < len(body):
        if i in replace:
            new_body.extend(replace[i])
            i = ends[i]  # (the label stays while other branches lead there)
            continue
        new_body.append(body[i])
        i += 1
    # labels no instruction names any more go, so that a stretch around this one can be
    # predicated in a next round
    ended = {body[j].name for _, j in stretches}
    named = {a.name for s in new_body if isinstance(s, ir.Instr) for a in s.args if isinstance(a, ir.Sym)}
    new_body = [s for s in new_body if not (isinstance(s, ir.Label) and s.name in ended
                                            and s.name not in named)]
    kept = {id(s) for s in new_body}  # (a stretch inside another one was copied: gone)
    out = copy.copy(fn)
    out.body = new_body
    out.regs = regs
    out.stretches = {k: v for k, v in marked.items() if all(x in kept for x in v[0])}
    return out
