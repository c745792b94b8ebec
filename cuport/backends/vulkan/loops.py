"""Loops on drivers with a loop budget (quirks.py: lavapipe).

lavapipe (Mesa 22.3's gallivm) ends a shader's loops without a word once it has spent
65535 loop passes *in all*: one limiter per shader invocation group (8 invocations, a
subgroup: each runs as one coroutine), set once at its start and decremented at the end of
every pass of every loop (lp_bld_ir_common.c, lp_exec_endloop), the pass that leaves the
loop included; when it reaches 0, every loop the group is in ends at the end of its pass,
the lanes that were going round again included. Its control flow is masked, not branched
(lp_exec_mask_cond_push), so a loop that no lane of the group enters still makes its one
pass, and a loop runs as many passes as its longest-running lane needs. Measured here with
cuport's own checks off (an outer loop of 100000 trips around an inner loop), the outer
loop stopped at: 65536 with nothing inside; 32768 with an inner loop that exits in its first
pass, run by one lane or by none (behind a branch no lane takes); 21845 with two passes of
it; 7282 where lane t of 8 makes t + 1 passes (the group pays the longest: 9 a trip). A
kernel's loop budget is therefore not what one thread counts: the spin loop of a grid
sync that never waits (one block) still costs a pass per sync; libcudadevrt's
`rows` kernel (tests/driver/c/cg_devrt.cu), whose loop nvcc unrolls four times, went wrong
silently at 52429 rows (5 passes per 4 rows), the inline grid.sync() version at 32768 (2
per row). NIR also rewrites loops (unrolling, peeling) before the limiter is placed, so no
count kept in the SPIR-V can match the driver's exactly.

So cuport does not count; it notices the cut (translate.LoopMarks): before each branch to a
loop's continue target an invocation marks the loop, before each branch out of the loop it
clears the mark, and at the loop's merge block a mark still set means that the invocation
arrived there without leaving the loop: the driver ended the loop early. The first such
loop's PTX line is noted, and the thread records the launch failure (ERR_LOOP_LIMIT) when
it ends or before it records any other failure (lower.py report_fault), since once a loop
is cut short what follows, a trap the thread then reaches included, is made of wrong
values. A launch whose loops all finish (however many passes they took) runs as it would
without the marks; one the driver cut fails, naming the loop. (One the driver cut in the
very pass its loop was to end may fail with right results: NIR may rotate a loop so that
its exit test opens the next pass, which the driver no longer runs; measured: a loop of
exactly 65536 trips alone.) What the marks cost, a tight loop on lavapipe: DESIGN.md.

Each back edge of a loop that waits for another thread (its body holds an atomic, an
ordered or volatile load, a fence, an mbarrier test: passes/yields.py) first spends about
14 us in SPIN_DIVISIONS dependent vector divisions (measured on this machine's lavapipe;
the spin loop of cooperative groups' grid.sync() and flag waits are such loops), so that a
wait may last about 65535 x 14 us = 0.9 s in all before the budget is spent, and the thread
still sees the awaited value within 14 us. (Nothing shorter gives a loop-free delay there:
each division step costs compile time, 1 s for these.)
"""

from __future__ import annotations

from llvmlite import ir as ll

from ...passes.yields import loop_waits
from . import layout as V

#: <4 x i64> divisions on each back edge of a spin loop, so that a wait spends the budget slowly
SPIN_DIVISIONS = 160
I32 = ll.IntType(32)
I64 = ll.IntType(64)
V4 = ll.VectorType(I64, 4)


def _successors(block: ll.Block) -> list[ll.Block]:
    t = block.terminator
    if isinstance(t, ll.ConditionalBranch):
        return [t.operands[1], t.operands[2]]
    if isinstance(t, ll.Branch):
        return [t.operands[0]]
    if isinstance(t, ll.SwitchInstr):
        return [t.default] + [b for _, b in t.cases]
    return []


def _retarget(block: ll.Block, old: ll.Block, new: ll.Block) -> None:
    t = block.terminator
    if isinstance(t, ll.SwitchInstr):
        if t.default is old:
            t.default = new
        t.cases = [(v, new if b is old else b) for v, b in t.cases]
        return
    t.operands = [new if op is old else op for op in t.operands]


def _dominators(blocks: list[ll.Block], preds: dict) -> dict:
    entry = blocks[0]
    every = set(blocks)
    dom = {b: set(every) for b in blocks}
    dom[entry] = {entry}
    changed = True
    while changed:
        changed = False
        for b in blocks[1:]:
            ps = [dom[p] for p in preds[b]]
            new = (set.intersection(*ps) if ps else set()) | {b}
            if new != dom[b]:
                dom[b] = new
                changed = True
    return dom


def _spin_headers(em) -> set:
    """The llvmlite blocks heading PTX loops that wait for another thread."""
    cfg = em.plan.cfg
    return {em.llblocks[h] for h, body in cfg.loops.items() if loop_waits(cfg, body)}


def _delay(em, seed: ll.Value) -> None:
    """A wait of SPIN_DIVISIONS dependent vector divisions that the compiler cannot remove:
    its result, masked by a push constant that is 0 at run time (layout.PUSH "pad"), decides
    a launch failure that never happens."""
    b = em.b
    d = b.insert_element(ll.Constant(V4, [1, 3, 5, 7]), b.zext(seed, I64), ll.Constant(I32, 0))
    big = ll.Constant(V4, [(1 << 63) - 25, (1 << 62) - 57, (1 << 61) - 1, (1 << 60) - 93])
    one = ll.Constant(V4, [1] * 4)
    for _ in range(SPIN_DIVISIONS):
        d = b.udiv(big, b.or_(b.add(d, one), one))
    x = b.extract_element(d, ll.Constant(I32, 0))
    never = b.icmp_unsigned("!=", b.and_(x, b.zext(em.push("pad"), I64)), ll.Constant(I64, 0))
    with b.if_then(never, likely=False):
        em.record_failure(V.ERR_LOOP_LIMIT)


def mark_loops(em) -> dict[ll.Block, int]:
    """Delay the back edges of spin loops (see the module docstring) and name each loop of
    the emitter's function by a PTX line, that of its (last) back edge's branch: the map
    from loop header to line that translate.LoopMarks reports a cut loop by."""
    fn = em.llfn
    blocks = list(fn.blocks)
    preds: dict = {b: [] for b in blocks}
    for b in blocks:
        for s in _successors(b):
            preds[s].append(b)
    dom = _dominators(blocks, preds)
    edges = [(p, h) for h in blocks for p in preds[h] if h in dom[p]]
    em.push("pad")  # the marks' index (translate.LoopMarks), read where it is declared
    lines: dict[ll.Block, int] = {}
    for p, h in edges:
        lines[h] = max(lines.get(h, 0), em.block_lines.get(p, 0))
    spins = _spin_headers(em)
    if not any(h in spins for _, h in edges):
        return lines
    count = em.entry_alloca(I32, "spins")  # the delays' seed: a value that changes every trip
    eb = ll.IRBuilder(fn.entry_basic_block)
    eb.position_before(fn.entry_basic_block.terminator)
    eb.store(ll.Constant(I32, 0), count)
    saved_b, saved_ins = em.b, em.ins
    try:
        for k, (p, h) in enumerate((p, h) for p, h in edges if h in spins):
            step = fn.append_basic_block(f"spin{k}")
            b = em.b = ll.IRBuilder(step)
            em.ins = None
            n = b.add(b.load(count, typ=I32), ll.Constant(I32, 1))
            b.store(n, count)
            _delay(em, n)
            last = b.block
            b.branch(h)
            for phi in (i for i in h.instructions if isinstance(i, ll.PhiInstr)):
                phi.incomings = [(v, last if blk is p else blk) for v, blk in phi.incomings]
            _retarget(p, h, step)
    finally:
        em.b, em.ins = saved_b, saved_ins
    return lines
