"""Split a kernel at its converged barriers into regions, each to run as a loop over warps.

Needs: the kernel's Cfg and the list of its barrier blocks, every one a converged
`bar.sync 0` (the simple protocol: `ModuleCompiler._all_barriers_simple`), and no yield
points. Leaves: `Region`s, or None where the kernel keeps the warp-suspension scheme.

A region starts at the kernel's entry or at a barrier's continuation and holds every block
reachable from there without crossing a barrier; it ends at the barriers it reaches (and
where its threads finish). The CPU backend runs a block one region at a time, as a loop
over the block's warps (PoCL's work-item loops, COX's hierarchical collapsing): warp 0
runs the region up to its barrier, then warp 1, and so on, the values that live across the
barrier kept in each warp's state. That is the order in which the warp-suspension scheme
ran them, without a switch back into the warp function per warp and barrier.

A block reachable from two region entries (a loop whose body holds a barrier: the code
before the barrier follows both the kernel's entry and the barrier at the loop's end) is
part of both, and its code is emitted once per region; where that would more than double
the kernel (or a kernel has more than MAX_REGIONS regions) it keeps the old scheme.

Legal because every barrier is converged: a warp arrives with all its live lanes, none
pending elsewhere, so a warp's whole state at a barrier is its registers. Warps that stop
at different barriers are allowed (a round runs each present region over its warps).
"""

from __future__ import annotations

from dataclasses import dataclass

from .cfg import Block, Cfg, is_suspend

#: the rounds keep the set of regions warps wait to run as a 64-bit mask
MAX_REGIONS = 64
#: instructions emitted over all regions, at most this many times the kernel's own
MAX_GROWTH = 2.0


@dataclass
class Region:
    entry: int  # the block where its warps start: 0, or a barrier's continuation
    barrier: int | None  # the index (in the kernel's barrier list) it continues, None at entry
    blocks: list[int]  # its blocks, in priority order


def split(cfg: Cfg, barriers: list[Block]) -> list[Region] | None:
    """Region 0 starts at the entry; region i + 1 at barrier i's continuation."""
    blocks = cfg.blocks
    if any(b.term is not None and is_suspend(b.term) and b.term.op == "yield" for b in blocks):
        return None
    if len(barriers) + 1 > MAX_REGIONS:
        return None
    entries = [(0, None)] + [(b.succs[0], i) for i, b in enumerate(barriers)]
    regions = []
    for entry, bar in entries:
        seen = {entry}
        stack = [entry]
        while stack:
            x = stack.pop()
            t = blocks[x].term
            if t is not None and is_suspend(t):
                continue  # the region ends here: the barrier's continuation is another's entry
            for s in blocks[x].succs:
                if s not in seen:
                    seen.add(s)
                    stack.append(s)
        regions.append(Region(entry, bar, sorted(seen)))
    own = sum(len(b.instrs) for b in blocks)
    emitted = sum(len(blocks[x].instrs) for r in regions for x in r.blocks)
    if emitted > MAX_GROWTH * max(own, 1):
        return None
    return regions
