"""Registers live at the start of each block.

Needs: a Cfg and the Divergence record. In a split block a write to a varying register
keeps the values of the lanes that are not running, so it reads the old value, but only
when there can be an old value: when some definition of the register reaches the block
(an earlier definition, or the same one around a loop). The first definition of a
register, the common case in nvcc's nearly-SSA PTX, reads nothing and ends the register's
life above it as an unguarded write does (the lanes it skips hold no value: a guarded load
whose result the same guard's store alone uses), so the register is not kept alive (and
saved at every barrier) all the way from the kernel's entry.

The warp executor saves exactly the registers live into barrier continuations when a
warp suspends.
"""

from __future__ import annotations

from ..isa.operands import defs, uses
from .cfg import Cfg, is_suspend
from .divergence import Divergence


def _reachable_after(cfg: Cfg) -> list[set[int]]:
    """For each block, the blocks reachable from its successors (itself only around a loop)."""
    blocks = cfg.blocks
    out: list[set[int]] = []
    for b in blocks:
        seen: set[int] = set()
        stack = list(b.succs)
        while stack:
            x = stack.pop()
            if x in seen:
                continue
            seen.add(x)
            stack.extend(blocks[x].succs)
        out.append(seen)
    return out


def wait_points(cfg: Cfg, div: Divergence) -> set[int]:
    """Blocks at whose entry lanes can wait while other lanes of their warp run: targets
    of divergent branches and of split blocks, and continuations of barriers and yields."""
    out: set[int] = set()
    for b in cfg.blocks:
        t = b.term
        if b.index in div.split_blocks or b.index in div.divergent_branches:
            out.update(b.succs)
        if t is not None and (is_suspend(t) or (t.guard is not None and t.op in ("ret", "exit"))):
            out.update(b.succs)
    return out


def live_in_and_blends(cfg: Cfg, div: Divergence) -> tuple[list[set[str]], set[str]]:
    """Liveness, and the varying registers whose writes in split blocks must keep the
    values of lanes that are not running (blend).

    A lane that is not running waits at a wait point (or has finished). A write clobbering
    its value matters only when the register is live where it waits, so only registers
    live at some wait point need blended writes. Temporaries that live within one stretch
    of code need none, and then do not look live across whole loops either: that keeps
    the registers a warp saves at a barrier or yield to what is really needed.
    """
    waits = wait_points(cfg, div)
    blend: set[str] = set()
    while True:  # the least fixed point: blending makes more registers live, and so on
        live = live_in(cfg, div, blend)
        new = set(blend)
        for w in waits:
            new |= live[w]
        new &= div.varying
        if new == blend:
            return live, blend
        blend = new


def live_in(cfg: Cfg, div: Divergence | None, blend: set[str] | None = None) -> list[set[str]]:
    """Live-in sets; `blend`: the registers whose split-block writes are blended (default:
    every varying register). Without `div` (one thread's view: the Vulkan backend) no
    block is split: only guarded writes keep old values."""
    blocks = cfg.blocks
    if blend is None:
        blend = div.varying if div is not None else set()
    def_blocks: dict[str, set[int]] = {}
    for b in blocks:
        for ins in b.instrs:
            for r in defs(ins):
                def_blocks.setdefault(r.name, set()).add(b.index)
    reach = None
    may_hold: dict[str, set[int]] = {}

    def reached_by_def(name: str, block: int) -> bool:
        nonlocal reach
        if name not in may_hold:
            if reach is None:
                reach = _reachable_after(cfg)
            s: set[int] = set()
            for d in def_blocks.get(name, ()):
                s |= reach[d]
            may_hold[name] = s
        return block in may_hold[name]

    gen: list[set[str]] = []
    kill: list[set[str]] = []
    for b in blocks:
        g: set[str] = set()
        k: set[str] = set()
        written: set[str] = set()
        split = div is not None and b.index in div.split_blocks
        for ins in b.instrs:
            for r in uses(ins):
                if r.name not in k:
                    g.add(r.name)
            for r in defs(ins):
                partial = ins.guard is not None or (split and r.name in blend)
                if partial:
                    if r.name not in k and r.name not in written:
                        if reached_by_def(r.name, b.index):
                            g.add(r.name)
                        else:
                            # the first write there is: the lanes it leaves alone hold no
                            # value, so nothing above it is read through them
                            k.add(r.name)
                    written.add(r.name)
                else:
                    k.add(r.name)
        gen.append(g)
        kill.append(k)
    live = [set(g) for g in gen]
    changed = True
    while changed:
        changed = False
        for b in reversed(blocks):
            out: set[str] = set()
            for s in b.succs:
                out |= live[s]
            new = gen[b.index] | (out - kill[b.index])
            if new != live[b.index]:
                live[b.index] = new
                changed = True
    return live


def live_after(cfg: Cfg, live: list[set[str]], block: int, ins) -> set[str]:
    """The registers live just after the instruction `ins` of block `block`, from the
    live-in sets `live` (a guarded write does not end a register's life)."""
    b = cfg.blocks[block]
    out: set[str] = set()
    for s in b.succs:
        out |= live[s]
    for x in reversed(b.instrs):
        if x is ins:
            return out
        if x.guard is None:
            out -= {r.name for r in defs(x)}
        out |= {r.name for r in uses(x)}
    raise ValueError(f"{ins.text()} is not in block {block}")
