"""Give spin loops a point where the warp lets others run.

Needs: the kernel after inlining (passes/inline.py brings in every device function with a
loop that may wait, since a warp can suspend only in the kernel's own code). Leaves: the
same function, where every loop whose body holds an instruction that can observe another
thread's progress (a volatile or ordered load, an atomic, a fence, nanosleep, or a call of a
device function that holds one: `waits_in`) sends its back edges through a `yield` block.

On a GPU every warp of every resident block runs at once, so a warp may spin until
another warp or block publishes a value (CUB's decoupled look-back, flags set by another
warp, spin locks). cuport runs the warps of a block one after another, and a worker's
blocks one after another, so a spinning warp must step aside now and then: `yield`
suspends the warp every 64th time it is reached (cheap for loops that do not wait), the
block runner runs the other warps, and a worker whose blocks are all yielding starts
another block or switches to one it holds (cuport/backends/cpu/compiler.py).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable

from ..isa.operands import defs, uses
from ..ptx import ir, opcodes
from ..ptx.callgraph import call_target, callees
from .cfg import Cfg, build

_counter = itertools.count(1)
_READS_ONLY = ("ld", "ldu", "prefetch", "prefetchu")
Waits = Callable[[ir.Instr], bool]


def observes_others(ins: ir.Instr) -> bool:
    """Whether `ins` can see another thread's progress (ptx/opcodes.py)."""
    return opcodes.waits(ins)


def waiting_functions(funcs: list[ir.Function]) -> frozenset[str]:
    """The functions of `funcs` that may observe another thread's progress: an instruction of
    theirs does, or a function they call does (directly or not)."""
    calls = {f.name: callees(f) for f in funcs}
    out = {f.name for f in funcs
           if any(isinstance(s, ir.Instr) and observes_others(s) for s in f.body or ())}
    changed = True
    while changed:
        changed = False
        for f in funcs:
            if f.name not in out and calls[f.name] & out:
                out.add(f.name)
                changed = True
    return frozenset(out)


def waits_in(funcs: list[ir.Function], taken: set[str] | frozenset[str] = frozenset()) -> Waits:
    """Whether an instruction of one of `funcs` may observe another thread's progress: it
    does itself, or it calls a function that may (a `__noinline__` flag read in a loop's
    condition), or it calls through a register and one of the functions whose address is
    taken (`taken`) may."""
    waiting = waiting_functions(funcs)
    indirect = bool(waiting & set(taken))

    def waits(ins: ir.Instr) -> bool:
        if observes_others(ins):
            return True
        if ins.op != "call":
            return False
        target = call_target(ins)
        return target in waiting if target is not None else indirect
    return waits


def loop_waits(cfg: Cfg, body: set[int], waits: Waits = observes_others) -> bool:
    """Whether the loop of `cfg` made of the blocks `body` waits for another thread: whether
    it goes round or leaves depending on what an instruction of it for which `waits` holds
    gave (a flag, a counter, an mbarrier's phase), through registers, guards, or memory the
    loop writes and reads back. A loop that only reads what others wrote (thread 0 summing
    a block's partial sums from volatile shared memory) runs the same trips whatever they
    wrote. Branches inside the loop count too, as if each could leave it."""
    instrs = [ins for x in body for ins in cfg.blocks[x].instrs]
    seen: set[str] = set()
    stored = False  # an observed value went to memory: every load of the loop may give it back
    changed = True
    while changed:
        changed = False
        for ins in instrs:
            touches_memory = any(isinstance(a, ir.Mem) for a in ins.args)
            if not (waits(ins) or (stored and touches_memory) or any(r.name in seen for r in uses(ins))):
                continue
            if touches_memory and not stored and ins.op not in _READS_ONLY:
                stored = changed = True
            for r in defs(ins):
                if r.name not in seen:
                    seen.add(r.name)
                    changed = True
    return any(opcodes.ends_block(ins) and any(r.name in seen for r in uses(ins)) for ins in instrs)


def _spin_loops(fn: ir.Function, waits: Waits):
    """The CFG of `fn` and the headers of its loops that may wait for another thread."""
    if fn.body is None or not any(isinstance(s, ir.Instr) and waits(s) for s in fn.body):
        return None, []
    cfg = build(fn)
    return cfg, [h for h, body in cfg.loops.items()
                 if any(waits(ins) for x in body for ins in cfg.blocks[x].instrs)]


def has_spin_loop(fn: ir.Function, waits: Waits = observes_others) -> bool:
    """Whether a loop of `fn` may wait for another thread (and so needs a yield point)."""
    return bool(_spin_loops(fn, waits)[1])


def insert_yields(fn: ir.Function, waits: Waits = observes_others) -> ir.Function:
    """A copy of `fn` with yield points on the back edges of loops that may spin (a loop
    with an instruction for which `waits` holds)."""
    cfg, spinning = _spin_loops(fn, waits)
    if not spinning:
        return fn
    blocks = cfg.blocks
    retarget: dict[tuple[int, str], str] = {}  # (latch index, header label) -> yield label
    tails: list = []
    for header in spinning:
        body = cfg.loops[header]
        hdr = blocks[header]
        if hdr.label is None:
            continue
        ylabel = f"{hdr.label}$yield{next(_counter)}"
        latches = [x for x in body if header in blocks[x].succs]
        for x in latches:
            retarget[(x, hdr.label)] = ylabel
        tails += [ir.Label(ylabel, hdr.line), ir.Instr("yield", (), [], line=hdr.line),
                  ir.Instr("bra", ("uni",), [ir.Sym(hdr.label)], line=hdr.line)]
    if not retarget:
        return fn
    # rewrite the branch instructions of the latches (identified by object identity)
    swap: dict[int, ir.Instr] = {}
    for (x, label), ylabel in retarget.items():
        t = blocks[x].term
        if t is not None and t.op == "bra" and t.args and isinstance(t.args[-1], ir.Sym) \
                and t.args[-1].name == label:
            nt = copy.copy(t)
            nt.args = [*t.args[:-1], ir.Sym(ylabel)]
            swap[id(t)] = nt
    new_body = []
    # a latch that falls through into the header (or ends in a barrier): an explicit jump
    fall_latches = {x for (x, _), _ in retarget.items()
                    if blocks[x].term is None or blocks[x].term.op != "bra"}
    last_of = {id(blocks[x].instrs[-1]): x for x in fall_latches if blocks[x].instrs}
    for st in fn.body:
        if isinstance(st, ir.Instr) and id(st) in swap:
            new_body.append(swap[id(st)])
            continue
        new_body.append(st)
        if isinstance(st, ir.Instr) and id(st) in last_of:
            x = last_of[id(st)]
            hdr_label = next(lbl for (xx, lbl) in retarget if xx == x)
            new_body.append(ir.Instr("bra", ("uni",), [ir.Sym(retarget[(x, hdr_label)])], line=st.line))
    # the yield blocks go after a final ret so nothing falls into them
    new_body.append(ir.Instr("ret", (), [], line=0))
    new_body += tails
    out = copy.copy(fn)
    out.body = new_body
    return out
