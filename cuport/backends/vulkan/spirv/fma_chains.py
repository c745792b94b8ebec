"""Chains of f32 fmas checked once (subnormal.fma's guard, FloatModes.fma32 "guard").

The guard tests every fma for a subnormal operand or a tiny result and branches to an exact
helper where one appears: about eight instructions and a branch per fma, which made the
tiled sgemm's inner loop (sixteen fmas into one accumulator, unrolled by nvcc) 2.6 times
slower than native on an H100. Here such a run is checked once: each fma of a chain is the
device's own Fma, its operands' keys and its result folded into two running minima (no
branch); at the chain's last fma one test decides, and where it holds the whole chain is
computed again from its first accumulator through the per-fma guard, each intermediate
stored again into its register.

Why it is exact. subnormal.fma's proof: the device's result F of one fma equals CUDA's
unless an operand is subnormal or |F| <= 2^-126. Member k > 1 of a chain takes F(k-1), the
device's result of member k-1, as one operand (the accumulator of a dot product, the
running value of a polynomial evaluated by Horner's rule); that is CUDA's value there
unless the test fires, F(k-1) is never subnormal (the device flushes its results) and a
tiny one fires the test itself, so only the other operands need their keys (all three for
the first member). So where the test does not fire, every member's F is CUDA's, and where
it fires every member is recomputed from CUDA's values.

What a chain is, in the lowered LLVM of one block: `llvm.fma.f32` calls where each one's
only use is a store (through at most one bitcast) into a register variable, whose next
reference in the block is a load whose only use (through at most one bitcast) is one
operand of the next fma, and no member's register is referenced again before the chain
ends other than by the chain's own loads and stores (a later reader would have seen a fast
value the slow path replaces; a later writer would be overwritten by the slow path).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llvmlite import ir as ll


@dataclass
class Chain:
    """One chain: its fmas in order and the store of each result (the last one's is left
    to the translator, after the test), and the running state while it is emitted."""

    members: list[ll.CallInstr]
    stores: list[ll.StoreInstr]
    links: list[int]  # per member after the first: which operand is the previous result
    keys: int | None = None  # SPIR-V id: running unsigned minimum of the keys
    tiny: int | None = None  # SPIR-V id: running minimum of |F| (NMin: NaN-blind)
    operands: list[tuple[int, int, int]] = field(default_factory=list)  # SPIR-V ids


def _is_fma32(ins) -> bool:
    return isinstance(ins, ll.CallInstr) and getattr(ins.callee, "name", "") == "llvm.fma.f32" \
        and isinstance(ins.type, ll.FloatType)


def users(fn: ll.Function) -> dict[int, list]:
    """id(value) -> the instructions of fn that use it."""
    users: dict[int, list] = {}
    for blk in fn.blocks:
        for ins in blk.instructions:
            for op in ins.operands:
                users.setdefault(id(op), []).append(ins)
    return users


def _through_bitcast(v, users: dict[int, list]):
    """The single user of v, looking through one single-use bitcast; None otherwise."""
    us = users.get(id(v), [])
    if len(us) != 1:
        return None
    u = us[0]
    if isinstance(u, ll.CastInstr) and u.opname == "bitcast":
        us = users.get(id(u), [])
        return us[0] if len(us) == 1 else None
    return u


def _register_of(store) -> object | None:
    if isinstance(store, ll.StoreInstr) and isinstance(store.operands[1], ll.AllocaInstr):
        return store.operands[1]
    return None


def find(block: ll.Block, users: dict[int, list]) -> dict[int, tuple[Chain, int]]:
    """id(fma call) -> (its chain, its index) for the chains of `block` (two fmas or more)."""
    insts = block.instructions
    pos = {id(ins): i for i, ins in enumerate(insts)}
    refs: dict[int, list[int]] = {}  # id(register) -> positions of loads and stores of it
    for i, ins in enumerate(insts):
        if isinstance(ins, ll.LoadInstr) and isinstance(ins.operands[0], ll.AllocaInstr):
            refs.setdefault(id(ins.operands[0]), []).append(i)
        elif isinstance(ins, ll.StoreInstr) and isinstance(ins.operands[1], ll.AllocaInstr):
            refs.setdefault(id(ins.operands[1]), []).append(i)
    taken: set[int] = set()
    out: dict[int, tuple[Chain, int]] = {}
    for start in insts:
        if not _is_fma32(start) or id(start) in taken:
            continue
        members, stores, feeds, links = [start], [], [], []
        while True:
            st = _through_bitcast(members[-1], users)
            reg = _register_of(st)
            if reg is None or id(st) not in pos:
                break
            later = [p for p in refs.get(id(reg), []) if p > pos[id(st)]]
            if not later or not isinstance(insts[later[0]], ll.LoadInstr):
                break
            load = insts[later[0]]
            nxt = _through_bitcast(load, users)
            if not _is_fma32(nxt) or id(nxt) not in pos or id(nxt) in taken:
                break
            link = [j for j, x in enumerate(nxt.args)
                    if x is load or (isinstance(x, ll.CastInstr) and x.operands[0] is load)]
            if len(link) != 1:
                break
            members.append(nxt)
            stores.append(st)
            feeds.append(later[0])
            links.append(link[0])
        # a member's register referenced before the chain's end other than by the chain's own
        # loads and stores (a reader would see a fast value; a writer would be overwritten by
        # the slow path's stores): the chain ends before that reference
        while len(members) > 1:
            end = pos[id(members[-1])]
            own = set(feeds[:len(members) - 1]) | {pos[id(st)] for st in stores[:len(members) - 1]}
            first_bad = min((p for st in stores[:len(members) - 1]
                             for p in refs.get(id(_register_of(st)), [])
                             if pos[id(st)] < p <= end and p not in own), default=None)
            if first_bad is None:
                break
            members = [m for m in members if pos[id(m)] < first_bad]
        if len(members) < 2:
            continue
        chain = Chain(members, stores[:len(members) - 1], links[:len(members) - 1])
        for k, m in enumerate(members):
            taken.add(id(m))
            out[id(m)] = (chain, k)
    return out
