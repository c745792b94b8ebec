"""Memory ordering in block-divergent code on drivers whose memory barriers are workgroup
barriers (quirks.py: lavapipe).

There a fence, an acquire/release/acq_rel atomic or ordered load or store, and a volatile
access (which the translator makes visible or available at device scope) all make the
invocation wait for the rest of its workgroup; in code that part of the workgroup skips
(a thread-0-only spin in cooperative groups' grid.sync(), a flag wait, a lock) the
invocations that run it stop for good. In such code (partial_blocks: the region of a branch
that varies in the block, to the end of the kernel once some threads may have returned)
cuport gives these accesses no memory semantics instead: ordered and volatile 32/64-bit accesses become relaxed atomic ones (never
removed, merged or hoisted out of a loop), narrower volatile ones plain accesses, fences
nothing, atomics relaxed. That is weaker than PTX asks only in principle on this driver: it
runs every invocation on the host CPU with coherent memory and compiles atomics to LLVM
atomics; the workgroup barriers around such code (bar.sync) still order everything.
A compare-and-swap loop retries a different number of times in each thread, so even in
block-uniform code its ordering moves to memory barriers before and after it
(around_loop). Elsewhere (block-uniform code, and every other device) nothing changes.
"""

from __future__ import annotations

import dataclasses

from ...isa import control
from ...isa.memory import Access
from ...passes.cfg import postdominators
from ...ptx import ir


def partial_blocks(cfg, div) -> set[int]:
    """Blocks that may run while part of the workgroup is elsewhere or has finished: the
    region of every branch (or guarded ret/exit) on a value that varies in the block, up to
    its post-dominator when no thread leaves the kernel on the way, else to the end."""
    ipdom = postdominators(cfg, ignore_exit_sinks=False)
    blocks = cfg.blocks
    out = set(div.split_blocks)
    for b in blocks:
        t = b.term
        if t is None or t.guard is None or t.guard.name not in div.varying or len(set(b.succs)) < 2:
            continue
        leaves = t.op in ("ret", "exit") or any(blocks[s].exit_sink for s in b.succs)
        stop = -1 if leaves else ipdom[b.index]
        stack = list(b.succs)
        while stack:
            x = stack.pop()
            if x == stop or x in out:
                continue
            out.add(x)
            stack.extend(blocks[x].succs)
    return out


def relaxed_here(em) -> bool:
    """Whether the instruction being lowered must not carry memory semantics."""
    plan = em.plan
    if plan.caps.divergent_memory_barriers or em.block is None:
        return False
    partial = getattr(em, "_partial_blocks", None)
    if partial is None:
        partial = em._partial_blocks = partial_blocks(plan.cfg, plan.block_div)
    return em.block.index in partial


def relax(em, acc: Access) -> Access:
    """The access as it is performed here (see the module docstring)."""
    if not (acc.order or acc.volatile) or not relaxed_here(em):
        return acc
    atomic = acc.size in (4, 8)
    return dataclasses.replace(acc, order="monotonic" if atomic else None, volatile=False)


def order_of(em, order: str) -> str:
    """The LLVM ordering name an atomic gets here."""
    return "monotonic" if relaxed_here(em) else order


def lower_fence(em, ins: ir.Instr) -> None:
    if relaxed_here(em):
        return
    control.lower_fence(em, ins)


def around_loop(em, sem: int, loop):
    """A retry loop whose trip count differs per thread (a compare-and-swap loop) on such a
    driver: the loop without memory semantics, between memory barriers that carry them
    (nothing in code part of the block skips). The value of loop()."""
    from llvmlite import ir as ll

    from .lower_sync import (
        DEVICE,
        SEM_ACQ_REL,
        SEM_ACQUIRE,
        SEM_RELEASE,
        SEM_UNIFORM,
        SEM_WORKGROUP,
        with_visibility,
    )

    i32 = ll.IntType(32)
    order = sem & (SEM_ACQUIRE | SEM_RELEASE | SEM_ACQ_REL)
    storage = sem & (SEM_UNIFORM | SEM_WORKGROUP)
    fence = not relaxed_here(em) and order
    if fence and order & (SEM_RELEASE | SEM_ACQ_REL):
        em.spv("OpMemoryBarrier", ll.VoidType(), [ll.Constant(i32, DEVICE),
                                                   ll.Constant(i32, with_visibility(SEM_RELEASE | storage))])
    out = loop()
    if fence and order & (SEM_ACQUIRE | SEM_ACQ_REL):
        em.spv("OpMemoryBarrier", ll.VoidType(), [ll.Constant(i32, DEVICE),
                                                   ll.Constant(i32, with_visibility(SEM_ACQUIRE | storage))])
    return out

