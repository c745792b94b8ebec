"""Registers live at the start of each block.

Needs: a Cfg and the Divergence record. In a split block a write to a varying register
keeps the values of the lanes that are not running, so it reads the old value too: such a
write does not end the register's liveness. The warp executor saves exactly the registers
live into barrier continuations when a warp suspends.
"""

from __future__ import annotations

from ..isa.operands import defs, uses
from .cfg import Cfg
from .divergence import Divergence


def live_in(cfg: Cfg, div: Divergence) -> list[set[str]]:
    blocks = cfg.blocks
    gen: list[set[str]] = []
    kill: list[set[str]] = []
    for b in blocks:
        g: set[str] = set()
        k: set[str] = set()
        blend = b.index in div.split_blocks
        for ins in b.instrs:
            for r in uses(ins):
                if r.name not in k:
                    g.add(r.name)
            for r in defs(ins):
                partial = ins.guard is not None or (blend and r.name in div.varying)
                if partial:
                    if r.name not in k:
                        g.add(r.name)
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
