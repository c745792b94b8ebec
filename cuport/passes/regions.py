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

from .cfg import Block, Cfg, is_suspend, may_finish
from .divergence import Divergence

#: the rounds keep the set of regions warps wait to run as a 64-bit mask
MAX_REGIONS = 64
#: instructions emitted over all regions, at most this many times the kernel's own
MAX_GROWTH = 2.0


@dataclass
class Region:
    entry: int  # the block where its warps start: 0, or a barrier's continuation
    barrier: int | None  # the index (in the kernel's barrier list) it continues, None at entry
    blocks: list[int]  # its blocks, in priority order
    interleave: tuple[int, int] | None = None  # the back edge (latch, header) it continues


def interleave_edges(cfg: Cfg) -> list[tuple[int, int]]:
    """Back edges of the loops that read global memory and hold no barrier or yield: a
    warp steps aside there every INTERLEAVE_PERIOD-th time, so that the block's warps go
    through such a loop together, as on a GPU, instead of one after another. A grid-stride
    loop read warp after warp reads 8 strided streams one after the other (each warp's
    next 128 bytes a stride away); interleaved, the block's consecutive warps read
    consecutive memory in the same stretch of time, which the CPU's prefetchers follow."""
    blocks = cfg.blocks
    out: list[tuple[int, int]] = []
    if not cfg.reducible:
        return out
    for header, body in sorted(cfg.loops.items()):
        instrs = [ins for x in body for ins in blocks[x].instrs]
        if any(is_suspend(ins) for ins in instrs):
            continue
        if not any(ins.op in ("ld", "ldu") and _space(ins) in ("global", "generic") for ins in instrs):
            continue
        out += [(x, header) for x in sorted(body) if header in blocks[x].succs]
    return out


def _wait_targets(cfg: Cfg, div: Divergence) -> set[int]:
    """Blocks where lanes can wait while others of their warp run (backends/cpu/emit.py's
    dispatch targets): successors of split blocks and divergent branches, and of guarded
    returns."""
    out: set[int] = set()
    for b in cfg.blocks:
        t = b.term
        if b.index in div.split_blocks or b.index in div.divergent_branches or (
                t is not None and t.guard is not None and t.op in ("ret", "exit")):
            out.update(b.succs)
    return {t for t in out if not cfg.blocks[t].exit_sink}


def _space(ins) -> str:
    for m in ins.mods:
        if m in ("global", "shared", "local", "const", "param") or m.startswith(("shared::", "param::")):
            return m.split("::")[0]
    return "generic"


def split(cfg: Cfg, div: Divergence, barriers: list[Block],
          edges: list[tuple[int, int]] = ()) -> list[Region] | None:
    """Region 0 starts at the entry; region i + 1 at barrier i's continuation; then one
    region per interleave edge, starting at its loop's header. The region of an interleave
    edge also holds what lanes pending at the latch may run: the blocks after the latch
    that divergent branches of the regions holding the latch send lanes to (`if (c) {loop}
    else {...}`: the lanes of the else wait while the others loop)."""
    blocks = cfg.blocks
    if any(b.term is not None and is_suspend(b.term) and b.term.op == "yield" for b in blocks):
        return None
    if len(barriers) + len(edges) + 1 > MAX_REGIONS:
        return None
    cut = set(edges)

    def closure(seeds) -> list[int]:
        seen = set(seeds)
        stack = list(seeds)
        while stack:
            x = stack.pop()
            t = blocks[x].term
            if t is not None and is_suspend(t):
                continue  # the region ends here: the barrier's continuation is another's entry
            for s in blocks[x].succs:
                if s not in seen and (x, s) not in cut:
                    seen.add(s)
                    stack.append(s)
        return sorted(seen)

    regions = [Region(0, None, closure([0]))]
    regions += [Region(b.succs[0], i, closure([b.succs[0]])) for i, b in enumerate(barriers)]
    targets = _wait_targets(cfg, div)
    for x, h in edges:
        origin = {y for r in regions[:len(barriers) + 1] if x in r.blocks for y in r.blocks}
        waiting = [t for t in targets if t > x and t in origin]
        regions.append(Region(h, None, closure([h, *waiting]), (x, h)))
    own = sum(len(b.instrs) for b in blocks)
    emitted = sum(len(blocks[x].instrs) for r in regions for x in r.blocks)
    if emitted > MAX_GROWTH * max(own, 1):
        return None
    return regions


def lockstep(cfg: Cfg, regions: list[Region], calls_may_exit: bool,
             block_varying: set[str]) -> bool:
    """Whether a block's warps always run the same region in the same round: no interleave
    points, and in every region the choice between its ends (the barriers it reaches,
    finishing) is the same for every thread of the block. `block_varying`: the registers
    that may differ between the threads of a block (divergence.analyze with scope "block"
    and racy_loads). A branch, a guarded `ret`/`exit` or a call where a callee may execute
    `exit` (`calls_may_exit`) from which different ends can be reached is such a choice;
    it must be a branch or guard on a register no thread of the block sees otherwise (a loop
    around barriers whose trip count is the block's: the loop's last region ends at its
    barrier or, after the last trip, where every warp finishes). Then every warp goes from
    region to region with the others, none finishes or waits elsewhere, and a round runs
    its region over all the warps without asking each where it waits."""
    blocks = cfg.blocks
    for r in regions:
        if r.interleave is not None:
            return False
        inside = set(r.blocks)
        ends = _ends(blocks, inside, calls_may_exit)
        for x in r.blocks:
            blk = blocks[x]
            t = blk.term
            if t is not None and is_suspend(t):
                continue  # (the region ends here)
            outs = [ends[s] if s in inside else frozenset({("region", s)}) for s in blk.succs]
            finishing = may_finish(blk, calls_may_exit)
            if finishing:
                if not outs or all(o == {"finish"} for o in outs):
                    continue  # every thread finishes here
                if calls_may_exit and any(ins.op == "call" for ins in blk.instrs):
                    return False  # (some threads may finish in the callee, others not)
                outs.append(frozenset({"finish"}))
            if len(set(outs)) < 2:
                continue
            if t is None or t.guard is None or t.guard.name in block_varying:
                return False
    return True


def _ends(blocks: list[Block], inside: set[int], calls_may_exit: bool) -> dict[int, frozenset]:
    """For each block of a region, where its threads can go on from there: the barrier
    blocks they can reach, "finish", and blocks outside the region (which a region's blocks
    reach only through barriers, so none)."""
    ends: dict[int, set] = {x: set() for x in inside}
    for x in inside:
        t = blocks[x].term
        if t is not None and is_suspend(t):
            ends[x].add(("barrier", x))
        elif may_finish(blocks[x], calls_may_exit):
            ends[x].add("finish")
    changed = True
    while changed:  # (to a fixed point: regions hold loops)
        changed = False
        for x in inside:
            t = blocks[x].term
            if t is not None and is_suspend(t):
                continue
            for s in blocks[x].succs:
                add = ends[s] if s in inside else {("region", s)}
                if not add <= ends[x]:
                    ends[x] |= add
                    changed = True
    return {x: frozenset(e) for x, e in ends.items()}
