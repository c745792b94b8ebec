"""Loops on drivers with a loop-iteration budget (quirks.py: lavapipe).

lavapipe ends the loops of a shader invocation without a word once they have taken 65535
back edges *in all* (gallivm's one loop limiter per shader function, set at its start and
counted down by every loop's back edge): a long grid-stride loop or a spin wait for another
block silently stops early. Nesting loops does not help (measured: the count is shared),
so cuport does two things there (only where the probe measured a budget):

- each back edge of a loop that waits for another thread (its body holds an atomic, an
  ordered or volatile load, a fence, an mbarrier test: passes/yields.py) first spends
  about 14 us in SPIN_DIVISIONS dependent vector divisions (measured on this machine's
  lavapipe; the spin loop of cooperative groups' grid.sync() and flag waits are such
  loops), so that a wait may last about 65535 x 14 us = 0.9 s in all before the budget
  is spent, and the thread still sees the awaited value within 14 us. (Nothing shorter
  gives a loop-free delay there: each division step costs compile time, 1 s for these.)
- `count_trips` (the emitted function): every back edge counts in a per-invocation
  counter, and the invocation that reaches the budget records a launch failure
  (ERR_LOOP_LIMIT), so a launch whose loops the driver cut short fails loudly instead of
  returning wrong results. The driver counts per group of invocations run together (8
  on lavapipe), which can be ahead of one invocation's count when the group's lanes take
  different loops; the check is exact where they loop together.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ...passes.yields import observes_others
from ...ptx import ir
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
    return {em.llblocks[h] for h, body in cfg.loops.items()
            if any(observes_others(ins) for x in body for ins in cfg.blocks[x].instrs)}


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


def count_trips(em, limit: int) -> int:
    """Count the back edges of the emitter's function (see the module docstring); the
    number of back edges instrumented. Back edges into headers with phi nodes (the isa
    helpers' compare-and-swap and lane loops) count too: they spend the same budget."""
    fn = em.llfn
    blocks = list(fn.blocks)
    preds: dict = {b: [] for b in blocks}
    for b in blocks:
        for s in _successors(b):
            preds[s].append(b)
    dom = _dominators(blocks, preds)
    edges = [(p, h) for h in blocks for p in preds[h] if h in dom[p]]
    if not edges:
        return 0
    spins = _spin_headers(em)
    trips = em.entry_alloca(I32, "trips")
    eb = ll.IRBuilder(fn.entry_basic_block)
    eb.position_before(fn.entry_basic_block.terminator)
    eb.store(ll.Constant(I32, 0), trips)
    ptx_block = dict(zip(em.llblocks, em.blocks, strict=True))
    saved_b, saved_ins = em.b, em.ins
    try:
        for k, (p, h) in enumerate(edges):
            # the failure names the PTX line that ends the latch's block, when it is a PTX block
            blk = ptx_block.get(p)
            line = (blk.term or blk.instrs[-1]).line if blk is not None and blk.instrs else 0
            em.ins = ir.Instr("bra", (), [], line=line)
            step = fn.append_basic_block(f"trip{k}")
            b = em.b = ll.IRBuilder(step)
            n = b.add(b.load(trips, typ=I32), ll.Constant(I32, 1))
            b.store(n, trips)
            with b.if_then(b.icmp_unsigned(">=", n, ll.Constant(I32, limit)), likely=False):
                em.record_failure(V.ERR_LOOP_LIMIT)
            if h in spins:
                _delay(em, n)
            last = b.block
            b.branch(h)
            for phi in (i for i in h.instructions if isinstance(i, ll.PhiInstr)):
                phi.incomings = [(v, last if blk is p else blk) for v, blk in phi.incomings]
            _retarget(p, h, step)
    finally:
        em.b, em.ins = saved_b, saved_ins
    return len(edges)
