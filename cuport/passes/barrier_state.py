"""What a warp keeps across a converged barrier, and how it gets it back.

Needs: a Cfg, its Divergence and live-in sets; every barrier in converged code (the
"simple" barrier protocol of backends/cpu/emit.py). Leaves: a `BarrierState` plan.

A warp that reaches a barrier returns to the block runner, so the registers its
continuation reads must survive in the warp's state. Two things keep that traffic small,
which matters: kernels such as a tiled matrix multiply cross two barriers per tile, and
every varying 32-bit register is 128 bytes of a warp's state.
- Rematerialization: a register with one definition computed only from constants,
  symbols, thread/block indices and uniform registers is recomputed after the barrier
  (shared-memory addresses like `As + 64*tid.y + 4*tid.x`) instead of saved and loaded.
- One slot per register, written only when the register may have changed since the
  warp last resumed: a loop-invariant value is saved once, at the first barrier.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..isa.operands import defs, uses
from ..ptx import ir
from .cfg import Cfg, is_suspend
from .divergence import Divergence

#: Opcodes whose result depends only on their operands (safe to recompute).
_PURE = {"mov", "add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "not", "cvt", "cvta",
         "neg", "min", "max", "selp", "mul24", "mad24"}
#: Special registers that keep their value for a whole block.
_BLOCK_INVARIANT = ("%tid.", "%ntid.", "%ctaid.", "%nctaid.", "%laneid", "%warpid", "%nwarpid",
                    "%lanemask_")


@dataclass
class BarrierState:
    slots: list[str]  # registers with a save slot, in slot order
    save: list[list[str]]  # per barrier: registers to store at arrival
    load: list[list[str]]  # per barrier: registers to load at resume
    remat: list[list[ir.Instr]] = field(default_factory=list)  # per barrier: instructions to re-run


def _recomputable(ins: ir.Instr) -> bool:
    """A pure, unguarded instruction with one result and register or constant operands."""
    return (ins.guard is None and ins.op in _PURE and len(defs(ins)) == 1
            and not any(m in ("cc", "sat") for m in ins.mods)
            and not isinstance(ins.args[0], ir.Vec)
            and not any(isinstance(a, (ir.Vec, ir.Mem)) for a in ins.args[1:]))


def plan(cfg: Cfg, div: Divergence, live: list[set[str]], barriers=None) -> BarrierState:
    """`barriers`: the suspension blocks that use this protocol (default: all of them)."""
    blocks = cfg.blocks
    if barriers is None:
        barriers = [b for b in blocks if b.term is not None and is_suspend(b.term)]
    def_count: dict[str, int] = {}
    def_ins: dict[str, ir.Instr] = {}
    for b in blocks:
        for ins in b.instrs:
            for r in defs(ins):
                def_count[r.name] = def_count.get(r.name, 0) + 1
                def_ins[r.name] = ins

    # ---- rematerializable registers (a fixed point: operands must be remat, uniform or constant)
    remat: set[str] = set()
    constant: set[str] = set()  # of those, computed from constants and thread/block indices only
    changed = True

    def operand_ok(o) -> bool:
        if isinstance(o, (ir.Imm, ir.FImm, ir.Sym, ir.SymAddr)):
            return True
        if isinstance(o, ir.Special):
            return o.name.startswith(_BLOCK_INVARIANT)
        if isinstance(o, ir.Reg):
            if def_count.get(o.name, 0) != 1:
                return False
            return o.name in remat or o.name not in div.varying
        return False

    def operand_constant(o) -> bool:
        if isinstance(o, ir.Reg):
            return o.name in constant
        return operand_ok(o)

    while changed:
        changed = False
        for name, ins in def_ins.items():
            if name in remat or def_count[name] != 1 or not _recomputable(ins):
                continue
            if all(operand_ok(a) for a in ins.args[1:]):
                remat.add(name)
                changed = True
    changed = True
    while changed:
        changed = False
        for name in remat - constant:
            if all(operand_constant(a) for a in def_ins[name].args[1:]):
                constant.add(name)
                changed = True
    # Varying registers are worth recomputing; a uniform one is one scalar load, unless it
    # is a constant (a shared variable's address): recomputed, it is a constant to LLVM
    # too, which can then prove shared addresses in range and drop their checks.
    remat = {r for r in remat if r in div.varying or r in constant}

    # ---- registers with several definitions where one reaches a barrier alone, and that one
    # computes a constant (`mov %r, 0` before the barrier, a load into %r after it)
    local = _single_constant_defs(cfg, barriers, live, remat, def_count,
                                  lambda ins: _recomputable(ins)
                                  and all(operand_constant(a) for a in ins.args[1:]))

    # ---- per barrier: what to recompute (with its dependencies) and what to load
    loads: list[list[str]] = []
    remats: list[list[ir.Instr]] = []
    needed_uniform: set[str] = set()
    for bi, b in enumerate(barriers):
        want = live[b.succs[0]]
        order: list[ir.Instr] = []
        done: set[str] = set()
        extra: set[str] = set()

        def visit(name: str, done=done, extra=extra, order=order) -> None:
            if name in done:
                return
            done.add(name)
            ins = def_ins[name]
            for u in uses(ins):
                if u.name in remat:
                    visit(u.name)
                else:
                    extra.add(u.name)
            order.append(ins)

        for name in sorted(want):
            if name in remat:
                visit(name)
        for _name, ins in sorted(local[bi].items()):
            for u in uses(ins):
                visit(u.name)  # (constants: recomputable themselves)
            order.append(ins)
        ld = sorted((set(want) - remat - set(local[bi])) | extra)
        needed_uniform |= extra
        loads.append(ld)
        remats.append(order)

    slots = sorted({n for ld in loads for n in ld})

    # ---- may-be-modified-since-resume: forward over the blocks
    barrier_edges = {(b.index, b.succs[0]): bi for bi, b in enumerate(barriers)}
    everything = set(def_count)
    out: dict[int, set[str]] = {b.index: set() for b in blocks}
    inn: dict[int, set[str]] = {b.index: set() for b in blocks}
    changed = True
    while changed:
        changed = False
        for b in blocks:
            new_in: set[str] = set(everything) if b.index == 0 else set()
            for p in b.preds:
                if (p, b.index) in barrier_edges:
                    # resuming: every live register is in its slot, except the result of
                    # a bar.red, which the warp writes after it resumes, and the registers
                    # recomputed there instead of loaded (their slots were not written)
                    new_in.update(r.name for r in defs(blocks[p].term))
                    new_in.update(local[barrier_edges[(p, b.index)]])
                    continue
                new_in |= out[p]
            new_out = set(new_in)
            for ins in b.instrs:
                for r in defs(ins):
                    new_out.add(r.name)
            if new_in != inn[b.index] or new_out != out[b.index]:
                inn[b.index], out[b.index] = new_in, new_out
                changed = True
    # A value read after a resume at barrier B was either saved at B (it changed since the
    # warp last resumed) or is still in its slot from an earlier barrier: a register live
    # across B and unchanged since the last resume was live across that one too.
    saves = [sorted(out[b.index] & set(ld)) for b, ld in zip(barriers, loads, strict=True)]
    return BarrierState(slots, saves, loads, remats)


def _single_constant_defs(cfg: Cfg, barriers, live: list[set[str]], remat: set[str],
                          def_count: dict[str, int], constant_def) -> list[dict[str, ir.Instr]]:
    """For each barrier, the registers live across it (and not rematerialized everywhere)
    that exactly one definition reaches, one that `constant_def` accepts: recomputed at the
    resume instead of saved. Reaching definitions of those candidates only."""
    blocks = cfg.blocks
    cands = {n for b in barriers for n in live[b.succs[0]]
             if n not in remat and def_count.get(n, 0) > 1}
    sites: dict[str, list[tuple[int, int, ir.Instr]]] = {}
    for b in blocks:
        for k, ins in enumerate(b.instrs):
            for r in defs(ins):
                if r.name in cands:
                    sites.setdefault(r.name, []).append((b.index, k, ins))
    cands = {n for n in cands if any(constant_def(ins) for _, _, ins in sites.get(n, ()))}
    out: list[dict[str, ir.Instr]] = [{} for _ in barriers]
    for name in sorted(cands):
        last = {}  # block -> the last definition of `name` in it
        for bi, k, _ins in sites[name]:
            last[bi] = (bi, k)
        undef = (-1, -1)
        reach_out: dict[int, frozenset] = {b.index: frozenset() for b in blocks}
        changed = True
        while changed:
            changed = False
            for b in blocks:
                if b.index in last:
                    new = frozenset([last[b.index]])
                else:
                    new = frozenset([undef]) if b.index == 0 else frozenset()
                    for p in b.preds:
                        new |= reach_out[p]
                if new != reach_out[b.index]:
                    reach_out[b.index] = new
                    changed = True
        by_site = {(bi, k): ins for bi, k, ins in sites[name]}
        for i, b in enumerate(barriers):
            if name not in live[b.succs[0]]:
                continue
            r = reach_out[b.index]
            if len(r) == 1 and undef not in r and constant_def(by_site[next(iter(r))]):
                out[i][name] = by_site[next(iter(r))]
    return out
