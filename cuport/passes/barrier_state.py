"""What a warp keeps across a converged barrier, and how it gets it back.

Needs: a Cfg, its Divergence and live-in sets; every barrier in converged code (the
"simple" barrier protocol of backends/cpu/emit.py). Leaves: a `BarrierState` plan.

A warp that reaches a barrier returns to the block runner, so the registers its
continuation reads must survive in the warp's state. Two things keep that traffic small,
which matters: kernels such as a tiled matrix multiply cross two barriers per tile, and
every varying 32-bit register is 128 bytes of a warp's state.
- Rematerialization: a register with one definition computed only from constants,
  symbols, thread/block indices, kernel parameters and uniform registers is recomputed
  after the barrier (shared-memory addresses like `As + 64*tid.y + 4*tid.x`, a bounds test
  `x < n` and the predicates made of it) instead of saved and loaded. A kernel parameter's
  load is free there: the emitter reads each parameter once per block.
- One slot per register, written only when the register may have changed since the
  warp last resumed: a loop-invariant value is saved once, at the first barrier.
- Saved where it is written: a register written in a block that runs at most once between
  two barriers (no loop without a barrier holds it), and not again before a barrier, is
  stored into its slot at the end of that block instead of at the barriers it reaches.
  Paths that leave it alone store nothing: a tree step that only some warps take (the
  others branch around it) saved all its registers at the barrier for every warp.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from ..isa.operands import defs, uses
from ..ptx import ir
from .cfg import Cfg, is_suspend
from .divergence import Divergence

#: Opcodes whose result depends only on their operands (safe to recompute).
_PURE = {"mov", "add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "not", "cvt", "cvta",
         "neg", "min", "max", "selp", "mul24", "mad24", "setp"}
#: Special registers that keep their value for a whole block.
_BLOCK_INVARIANT = ("%tid.", "%ntid.", "%ctaid.", "%nctaid.", "%laneid", "%warpid", "%nwarpid",
                    "%lanemask_")


@dataclass
class BarrierState:
    slots: list[str]  # registers with a save slot, in slot order
    save: list[list[str]]  # per barrier: registers to store at arrival
    load: list[list[str]]  # per barrier: registers to load at resume
    remat: list[list[ir.Instr]] = field(default_factory=list)  # per barrier: instructions to re-run
    eager: dict[int, list[str]] = field(default_factory=dict)  # per block: registers to store at its end


def _param_load(ins: ir.Instr, params: set[str]) -> bool:
    """An unguarded load of one of the kernel's own parameters (read-only for the launch)."""
    return (ins.op == "ld" and "param" in ins.mods and ins.guard is None and len(ins.args) == 2
            and isinstance(ins.args[0], ir.Reg) and isinstance(ins.args[1], ir.Mem)
            and isinstance(ins.args[1].base, ir.Sym) and ins.args[1].base.name in params)


def _recomputable(ins: ir.Instr, params: set[str] = frozenset()) -> bool:
    """A pure, unguarded instruction with one result and register or constant operands, or
    a load of a kernel parameter."""
    if _param_load(ins, params):
        return True
    return (ins.guard is None and ins.op in _PURE and len(defs(ins)) == 1
            and not any(m in ("cc", "sat") for m in ins.mods)
            and not isinstance(ins.args[0], ir.Vec)
            and not any(isinstance(a, (ir.Vec, ir.Mem)) for a in ins.args[1:]))


def _constant_operand(o) -> bool:
    if isinstance(o, (ir.Imm, ir.FImm, ir.Sym, ir.SymAddr)):
        return True
    return isinstance(o, ir.Special) and o.name.startswith(_BLOCK_INVARIANT)


def _operands(ins: ir.Instr, params: set[str]) -> list:
    """The source operands a recomputed instruction depends on (none for a parameter load;
    a negated predicate as its register)."""
    if _param_load(ins, params):
        return []
    return [a.reg if isinstance(a, ir.Not) else a for a in ins.args[1:]]


class _Reaching:
    """Reaching definitions of some registers (bit sets over their definition sites, one
    extra site per register for "undefined": the entry)."""

    def __init__(self, cfg: Cfg, names: set[str]) -> None:
        blocks = cfg.blocks
        self.sites: list[tuple[int, int, ir.Instr | None]] = []
        self.of: dict[str, int] = {}  # register -> its sites' bits
        entry = 0
        for n in sorted(names):
            self.of[n] = 1 << len(self.sites)
            entry |= 1 << len(self.sites)
            self.sites.append((-1, -1, None))
        gen = [0] * len(blocks)
        kill = [0] * len(blocks)
        last: dict[tuple[int, str], int] = {}
        for b in blocks:
            for k, ins in enumerate(b.instrs):
                for r in defs(ins):
                    if r.name in names:
                        bit = 1 << len(self.sites)
                        self.sites.append((b.index, k, ins))
                        self.of[r.name] |= bit
                        last[(b.index, r.name)] = bit
        for (bi, n), bit in last.items():
            gen[bi] |= bit
            kill[bi] |= self.of[n]
        self.inn = [0] * len(blocks)
        self.out = [0] * len(blocks)
        changed = True
        while changed:
            changed = False
            for b in blocks:
                i = entry if b.index == 0 else 0
                for p in b.preds:
                    i |= self.out[p]
                o = gen[b.index] | (i & ~kill[b.index])
                if i != self.inn[b.index] or o != self.out[b.index]:
                    self.inn[b.index], self.out[b.index] = i, o
                    changed = True
        self.blocks = blocks

    def single(self, bits: int) -> ir.Instr | None:
        """The one definition in `bits` (None: several, or possibly undefined)."""
        if bits == 0 or bits & (bits - 1):
            return None
        return self.sites[bits.bit_length() - 1][2]

    def at_end(self, block: int, name: str) -> ir.Instr | None:
        return self.single(self.out[block] & self.of[name])

    def before(self, block: int, k: int, name: str) -> ir.Instr | None:
        """The one definition of `name` that reaches instruction k of `block`."""
        for ins in reversed(self.blocks[block].instrs[:k]):
            if any(r.name == name for r in defs(ins)):
                return ins
        return self.single(self.inn[block] & self.of[name])


def _substituted(ins: ir.Instr, subst: dict[str, object]) -> ir.Instr:
    """`ins` reading subst[r] in place of each register r in it."""
    if not subst:
        return ins
    out = copy.copy(ins)
    out.args = [ins.args[0]] + [subst.get(a.name, a) if isinstance(a, ir.Reg) else
                                ir.Not(subst[a.reg.name]) if isinstance(a, ir.Not) and isinstance(
                                    subst.get(a.reg.name), ir.Reg) else a
                                for a in ins.args[1:]]
    return out


def plan(cfg: Cfg, div: Divergence, live: list[set[str]], barriers=None) -> BarrierState:
    """`barriers`: the suspension blocks that use this protocol (default: all of them)."""
    blocks = cfg.blocks
    if barriers is None:
        barriers = [b for b in blocks if b.term is not None and is_suspend(b.term)]
    params = {p.name for p in cfg.fn.params} if cfg.fn.is_entry else set()
    def_count: dict[str, int] = {}
    def_ins: dict[str, ir.Instr] = {}
    def_at: dict[str, tuple[int, int]] = {}
    for b in blocks:
        for k, ins in enumerate(b.instrs):
            for r in defs(ins):
                def_count[r.name] = def_count.get(r.name, 0) + 1
                def_ins[r.name] = ins
                def_at[r.name] = (b.index, k)

    # ---- operands with several definitions, where the one that reaches a recomputable
    # instruction copies a constant or thread index (`mov %r35, %tid.x` before a loop that
    # advances %r35, and `shl %r27, %r35, 2` between them): read the constant instead
    single = {n for n, c in def_count.items() if c == 1 and _recomputable(def_ins[n], params)}
    wanted = {a.name for n in single for a in _operands(def_ins[n], params)
              if isinstance(a, ir.Reg) and def_count.get(a.name, 0) > 1}
    barrier_live = {n for b in barriers for n in live[b.succs[0]] if def_count.get(n, 0) > 1}
    reach = _Reaching(cfg, wanted | barrier_live)
    subst: dict[str, dict[str, object]] = {}
    for n in single:
        for a in _operands(def_ins[n], params):
            if isinstance(a, ir.Reg) and a.name in wanted:
                d = reach.before(*def_at[n], a.name)
                if d is not None and d.op == "mov" and _recomputable(d) and (
                        _constant_operand(d.args[1])
                        or (isinstance(d.args[1], ir.Reg) and def_count.get(d.args[1].name) == 1)):
                    subst.setdefault(n, {})[a.name] = d.args[1]
    recompute = {n: _substituted(def_ins[n], subst.get(n, {})) for n in single}

    # ---- rematerializable registers (a fixed point: operands must be remat, uniform or constant)
    remat: set[str] = set()
    constant: set[str] = set()  # of those, computed from constants and thread/block indices only
    changed = True

    def operand_ok(o) -> bool:
        if _constant_operand(o):
            return True
        if isinstance(o, ir.Reg):
            if def_count.get(o.name, 0) != 1:
                return False
            return o.name in remat or o.name not in div.varying
        return False

    def operand_constant(o) -> bool:
        if isinstance(o, ir.Reg):
            return o.name in constant
        return _constant_operand(o)

    while changed:
        changed = False
        for name, ins in recompute.items():
            if name not in remat and all(operand_ok(a) for a in _operands(ins, params)):
                remat.add(name)
                changed = True
    changed = True
    while changed:
        changed = False
        for name in remat - constant:
            if all(operand_constant(a) for a in _operands(recompute[name], params)):
                constant.add(name)
                changed = True
    # Varying registers are worth recomputing; a uniform one is one scalar load, unless it
    # is a constant (a shared variable's address): recomputed, it is a constant to LLVM
    # too, which can then prove shared addresses in range and drop their checks.
    remat = {r for r in remat if r in div.varying or r in constant}

    # ---- registers with several definitions where one reaches a barrier alone, and that one
    # computes a constant (`mov %r, 0` before the barrier, a load into %r after it)
    local: list[dict[str, ir.Instr]] = []
    for b in barriers:
        here = {}
        for name in live[b.succs[0]]:
            if name in barrier_live:
                d = reach.at_end(b.index, name)
                if d is not None and _recomputable(d, params) and all(
                        operand_constant(a) for a in _operands(d, params)):
                    here[name] = d
        local.append(here)

    # ---- per barrier: what to recompute (with its dependencies) and what to load
    loads: list[list[str]] = []
    remats: list[list[ir.Instr]] = []
    for bi, b in enumerate(barriers):
        want = live[b.succs[0]]
        order: list[ir.Instr] = []
        done: set[str] = set()
        extra: set[str] = set()

        def visit(name: str, done=done, extra=extra, order=order) -> None:
            if name in done:
                return
            done.add(name)
            ins = recompute[name]
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
        loads.append(sorted((set(want) - remat - set(local[bi])) | extra))
        remats.append(order)

    slots = sorted({n for ld in loads for n in ld})

    eager = _eager_saves(cfg, live, set(slots))

    # ---- changed since resume and not yet saved: forward over the blocks
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
            new_out -= set(eager.get(b.index, ()))
            if new_in != inn[b.index] or new_out != out[b.index]:
                inn[b.index], out[b.index] = new_in, new_out
                changed = True
    # A value read after a resume at barrier B was either saved at B (it changed since the
    # warp last resumed) or is still in its slot from an earlier barrier: a register live
    # across B and unchanged since the last resume was live across that one too.
    saves = [sorted(out[b.index] & set(ld)) for b, ld in zip(barriers, loads, strict=True)]
    return BarrierState(slots, saves, loads, remats, eager)


def _eager_saves(cfg: Cfg, live: list[set[str]], slots: set[str]) -> dict[int, list[str]]:
    """Per block, the registers with a slot that it writes, that live on after it, and that
    no path from its end writes again before it reaches a suspension point; only blocks
    outside every loop without one (those run at most once between two barriers), and not
    the suspension blocks themselves (their arrival saves)."""
    blocks = cfg.blocks
    if not cfg.reducible:
        return {}
    suspends = {b.index for b in blocks if b.term is not None and is_suspend(b.term)}
    in_plain_loop: set[int] = set()
    for body in cfg.loops.values():
        if not body & suspends:
            in_plain_loop |= body
    written = [{r.name for ins in b.instrs for r in defs(ins)} for b in blocks]
    # what a path from a block's start may write before it suspends (backward)
    ahead: list[set[str]] = [set() for _ in blocks]
    changed = True
    while changed:
        changed = False
        for b in reversed(blocks):
            new = set(written[b.index])
            if b.index not in suspends:
                for x in b.succs:
                    new |= ahead[x]
            if new != ahead[b.index]:
                ahead[b.index] = new
                changed = True
    out: dict[int, list[str]] = {}
    for b in blocks:
        if b.index in suspends or b.index in in_plain_loop or not b.succs:
            continue
        later = set().union(*(ahead[x] for x in b.succs))
        after = set().union(*(live[x] for x in b.succs))
        names = sorted((written[b.index] & slots & after) - later)
        if names:
            out[b.index] = names
    return out
