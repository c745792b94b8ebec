"""A kernel whose barriers are all converged, run one region at a time as a loop over warps.

The kernel's LLVM function runs the whole block (passes/regions.py splits it): in a
*round* every warp that has not finished runs from where it waits to its next barrier
(or interleave point); a round runs, in region order, the loop over the warps of each
region some warp waits to run, then completes the barrier (bar.red's result) and starts
the next round. The common case, every warp at the same barrier, is one region loop per
round.

    round:   cur = the regions to run (those after interleave points first, see below)
    pick:    the lowest region in cur (none: round_end)
    region r, warp w = 0..nwarps-1, those waiting to run r this round:
             restore (barrier_state's plan), run the region's blocks (emitted for r),
             at barrier i: save, wait for region i + 1 (next |= bit), on to warp w + 1;
             all lanes exited: finished
    round_end: nothing next: the block is done; warps at interleave points: another round
             for them, barrier waits held; else release, and the barrier's regions run

A warp's WS_RESUME says which region it runs and in which round: (region << 1) | parity,
the parity flipping when a barrier completes, so that a warp that reaches a barrier whose
region runs later in the same round does not run on before the barrier completes.
FINISHED matches no region. Where the warps are in lockstep (passes/regions.lockstep: every
warp always runs the same region as the others) no warp's WS_RESUME is asked or kept: each
region loop runs every warp.

Interleave points (back edges of loops that read global memory, regions.interleave_edges):
every INTERLEAVE_PERIOD-th time a warp takes one it steps aside, its whole state saved
(registers live there or where lanes of the warp are pending, the pending lanes), and
the next warp runs; it goes on in the next round, before any barrier completes. After a
round in which warps stepped aside the function returns BLOCKED, its rounds' state kept in
the block (BS_ROUNDS, BS_PARITY): the worker, which holds INTERLEAVE_BLOCKS such blocks
(compiler.ModuleCompiler._step_regions), runs a round of the next one. A grid-stride loop's
consecutive blocks read neighbouring pieces of each stride: rotated, a worker reads 4 KiB of
each page at a time instead of 1 (bench reduce, one core: 21 -> 14 ms).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ...isa.types import I1, I8, I32, I64
from . import layout as L

FINISHED = 0xFFFFFFFE  # (WS_RESUME of a warp whose lanes have all exited)
INTERLEAVE_PERIOD = 8  # loop iterations a warp runs before the next warp's (bench/run.py reduce)
INTERLEAVE_BLOCKS = 4  # blocks of a kernel with interleave points a worker holds and rotates


def _i32(v: int) -> ll.Constant:
    return ll.Constant(I32, v & 0xFFFFFFFF)


def _i64(v: int) -> ll.Constant:
    return ll.Constant(I64, v & 0xFFFFFFFFFFFFFFFF)


class RegionLoops:
    """Mixin for FunctionEmitter: the kernel emitted as region loops (see the module)."""

    def _emit_regions(self) -> None:
        fn, b = self.llfn, self.b
        self.frame_base = _i32(0)
        self._layout_interleave()
        ws0 = self.ws  # the first warp's state; warp w's is w * warp_state_bytes further
        present = b.alloca(I64, name="present")  # regions some warp waits to run
        ran = b.alloca(I64, name="ran")  # of those, the ones this round runs
        cur = b.alloca(I64, name="cur")  # of those, the ones not run yet
        nxt = b.alloca(I64, name="next")  # regions warps reached in this round
        parity = b.alloca(I32, name="parity")
        self._rl = {"next": nxt, "parity": parity, "count": b.alloca(I32, name="icount")}
        imask = sum(1 << k for k, r in enumerate(self.regions) if r.interleave)
        rotate = self.mc.resident_slots > 1  # (see round_end)
        if rotate:  # where the block's rounds stopped (block_init: region 0, parity 0)
            b.store(b.load(b.gep(self.blk, [_i64(L.BS_ROUNDS)], source_etype=I8), typ=I64), present)
            b.store(b.load(b.gep(self.blk, [_i64(L.BS_PARITY)], source_etype=I8), typ=I32), parity)
        else:
            b.store(_i64(1), present)
            b.store(_i32(0), parity)
        # address checks made once for the block, that its warps skip (lane_forms.py)
        self.hoist_form_checks(sorted({x for r in self.regions for x in r.blocks}))
        # the next blocks' segments, prefetched by the regions between (prefetch_spread.py)
        self.plan_spread_prefetches(self.regions)
        round_bb = fn.append_basic_block("round")
        pick = fn.append_basic_block("pick")
        round_end = fn.append_basic_block("round_end")
        b.branch(round_bb)
        b.position_at_end(round_bb)
        p = b.load(present)
        pi = b.and_(p, _i64(imask))
        run = b.select(b.icmp_unsigned("!=", pi, _i64(0)), pi, p)
        b.store(run, ran)
        b.store(run, cur)
        b.store(_i64(0), nxt)
        b.branch(pick)

        heads = [fn.append_basic_block(f"region{r}") for r in range(len(self.regions))]
        b.position_at_end(pick)
        c = b.load(cur)
        some = fn.append_basic_block("pick_one")
        b.cbranch(b.icmp_unsigned("==", c, _i64(0)), round_end, some)
        b.position_at_end(some)
        r = b.trunc(b.cttz(c, ll.Constant(I1, 1)), I32)
        b.store(b.and_(c, b.sub(c, _i64(1))), cur)
        sw = b.switch(r, heads[0])
        for k, h in enumerate(heads[1:], 1):
            sw.add_case(_i32(k), h)

        for k, region in enumerate(self.regions):
            self._emit_region_loop(k, region, heads[k], pick, ws0)

        b = self.b
        b.position_at_end(round_end)
        # the regions warps wait to run: those reached this round, and those held
        n = b.or_(b.load(nxt), b.and_(b.load(present), b.not_(b.load(ran))))
        b.store(n, present)
        done = fn.append_basic_block("block_done")
        more = fn.append_basic_block("more")
        release = fn.append_basic_block("release")
        b.cbranch(b.icmp_unsigned("==", n, _i64(0)), done, more)
        b.position_at_end(done)
        b.ret(_i32(L.DONE))
        b.position_at_end(more)
        if rotate:
            # warps stepped aside at interleave points: the worker runs a round of each block
            # it holds in turn, so that their loops read consecutive memory together
            aside = fn.append_basic_block("rotate")
            b.cbranch(b.icmp_unsigned("!=", b.and_(n, _i64(imask)), _i64(0)), aside, release)
            b.position_at_end(aside)
            b.store(n, b.gep(self.blk, [_i64(L.BS_ROUNDS)], source_etype=I8))
            b.store(b.load(parity), b.gep(self.blk, [_i64(L.BS_PARITY)], source_etype=I8))
            b.ret(_i32(L.YIELDED))  # (block_rounds' BLOCKED: the worker moves on)
        else:
            b.cbranch(b.icmp_unsigned("!=", b.and_(n, _i64(imask)), _i64(0)), round_bb, release)
        b.position_at_end(release)
        # every waiting warp is at a barrier: it completes (bar.red's result of this round)
        red = b.gep(self.blk, [_i64(L.BS_RED)], source_etype=I8)
        b.store(b.load(red, typ=I32), b.gep(self.blk, [_i64(L.BS_REDOUT)], source_etype=I8))
        b.store(_i32(0), red)
        b.store(b.xor(b.load(parity), _i32(1)), parity)
        b.branch(round_bb)

    def _emit_region_loop(self, k: int, region, head: ll.Block, pick: ll.Block, ws0: ll.Value) -> None:
        fn, b = self.llfn, self.b
        nw = self.mc.nwarps
        loop = fn.append_basic_block(f"region{k}_warp")
        body = fn.append_basic_block(f"region{k}_run")
        latch = fn.append_basic_block(f"region{k}_next")
        b.position_at_end(head)
        b.branch(loop)
        b.position_at_end(loop)
        w = b.phi(I32, name=f"w{k}")
        w.add_incoming(_i32(0), head)
        ws = b.gep(ws0, [b.mul(b.zext(w, I64), _i64(self.mc.warp_state_bytes))], source_etype=I8)
        resume_p = b.gep(ws, [_i64(L.WS_RESUME)], source_etype=I8)
        if self.mc.kernel_lockstep:
            b.branch(body)  # (every warp waits to run this region: passes/regions.lockstep)
        else:
            want = b.or_(_i32(k << 1), b.load(self._rl["parity"]))
            b.cbranch(b.icmp_unsigned("==", b.load(resume_p, typ=I32), want), body, latch)

        b.position_at_end(body)
        self._set_warp(w, ws)
        self.emit_spread_prefetches(k, w)
        self._region = {"latch": latch, "resume": resume_p}
        # this region's copies of its blocks; dispatch, release and done of its own
        self.llblocks = [None] * len(self.blocks)
        for x in region.blocks:
            self.llblocks[x] = fn.append_basic_block(f"r{k}_" + self.blocks[x].name.replace("$", "_"))
        self.dispatch_bb = fn.append_basic_block(f"r{k}_dispatch")
        self.release_bb = fn.append_basic_block(f"r{k}_release")
        self.done_bb = fn.append_basic_block(f"r{k}_done")
        self.yield_suspend_bb = None
        self._fill_missing_blocks()  # (lanes pending outside the region cannot be)
        b.store(_i32(0), self._rl["count"])
        if region.interleave is not None:
            self._resume_interleaved(region.interleave)
        else:
            # no lanes are pending where a warp starts or passes a converged barrier: said
            # here, LLVM knows it in each warp's run (the pending state is the loop's
            # otherwise), and drops the pending-lane checks of branches that go one way
            if not self.pending_in_ws:
                self._clear_pending()
            if region.barrier is None:
                self._start_warp()
            else:
                bar = self.barriers[region.barrier]
                self._resume_simple(bar, bar.term, region.barrier)
            b.branch(self.llblocks[region.entry])
        for x in region.blocks:
            self._emit_block(self.blocks[x])
        self._emit_dispatch()
        self._emit_done()

        b.position_at_end(latch)
        w1 = b.add(w, _i32(1))
        w.add_incoming(w1, latch)
        b.cbranch(b.icmp_unsigned("<", w1, _i32(nw)), loop, pick)

    def _start_warp(self) -> None:
        """Region 0: the warp starts (what _kernel_prologue does for a warp function)."""
        b = self.b
        if self.exits_read:  # (emit._exits_read)
            b.store(_i32(0), b.gep(self.ws, [_i64(L.WS_EXITED)], source_etype=I8))
        if any(ins.op == "call" for blk in self.blocks for ins in blk.instrs):
            # (the local stack pointer: only a callee's frame starts there)
            b.store(_i32(self.frame_size), b.gep(self.ws, [_i64(L.WS_SP)], source_etype=I8))
        b.store(self.live_mask, self.active_slot)

    def _region_arrive(self, blk, t, idx: int) -> None:
        """Converged barrier `idx` ends the warp's run of this region: it waits for region
        idx + 1, which runs once the barrier completes."""
        b = self.b
        self._arrive_simple(t, idx)
        self._wait_for(idx + 1, b.xor(b.load(self._rl["parity"]), _i32(1)))

    def _wait_for(self, region: int, parity: ll.Value) -> None:
        b = self.b
        if not self.mc.kernel_lockstep:  # (where no round asks a warp where it waits)
            b.store(b.or_(_i32(region << 1), parity), self._region["resume"])
        nxt = self._rl["next"]
        b.store(b.or_(b.load(nxt), _i64(1 << region)), nxt)
        b.branch(self._region["latch"])

    def _region_done(self) -> None:
        """Every lane of the warp has exited."""
        b = self.b
        if not self.mc.kernel_lockstep:  # (where no round asks a warp where it waits)
            b.store(_i32(FINISHED), self._region["resume"])
        b.branch(self._region["latch"])

    def _fill_missing_blocks(self) -> None:
        """Blocks of other regions, which the region's dispatch names but never reaches (a
        converged barrier leaves no lanes pending, and an interleave point's region holds
        every block where lanes can wait there): reaching one is a cuport bug."""
        missing = [i for i, bb in enumerate(self.llblocks) if bb is None]
        if not missing:
            return
        bad = self.llfn.append_basic_block("not_in_region")
        for i in missing:
            self.llblocks[i] = bad
        b = ll.IRBuilder(bad)
        self.mc.emit_error(b, self.ctx, self.blk, L.ERR_REGION, self.fn.line)
        b.ret(_i32(L.FAILED))

    # ---------------------------------------------------------------- interleave points
    def _layout_interleave(self) -> None:
        """The warp state's area for a warp that stepped aside at an interleave point:
        every register live where the warp goes on or where its lanes are pending, the
        pending masks and the lanes that go on."""
        self._interleave_region = {r.interleave: k for k, r in enumerate(self.regions) if r.interleave}
        if not self._interleave_region:
            return
        names: set[str] = set()
        for _, header in self._interleave_region:
            names |= self.live[header]
        for t in self.targets:
            names |= self.live[t]
        off = (self.mc.warp_state_bytes + 63) & ~63
        self._iv_mask = off
        self._iv_pend = off + 8
        off = self._iv_pend + 4 * max(len(self.targets), 1)
        self._iv_bits = (off + 7) & ~7
        off = self._iv_bits + 8 * self.nwords
        self._iv_slots: list[tuple[ll.Value, ll.Type, int]] = []
        for name in sorted(n for n in names if n in self.regs):
            for slot, t in self._saved_slots(name):
                if slot is None:
                    off += 8  # (an absent leaf keeps its step)
                    continue
                if isinstance(t, ll.VectorType):
                    size = max(t.element.width // 8, 1) * t.count
                else:
                    size = max(t.width // 8, 1)
                align = min(64, size)
                off = (off + align - 1) & ~(align - 1)
                self._iv_slots.append((slot, t, off))
                off += size
        self.mc.note_warp_state(off)

    def interleave_goto(self, target: int, mask: ll.Value) -> bool:
        """`goto` along an interleave edge (True: emitted here): on to the loop's header,
        or, every INTERLEAVE_PERIOD-th time, step aside for the block's other warps."""
        if self.regions is None or self.block is None:
            return False
        k = self._interleave_region.get((self.block.index, target))
        if k is None:
            return False
        b = self.b
        cp = self._rl["count"]
        cnt = b.add(b.load(cp), _i32(1))
        b.store(cnt, cp)
        go_on = self.llfn.append_basic_block("no_interleave")
        aside = self.llfn.append_basic_block("interleave")
        b.cbranch(b.icmp_unsigned("!=", b.and_(cnt, _i32(INTERLEAVE_PERIOD - 1)), _i32(0)), go_on, aside)
        b.position_at_end(aside)
        p = self.ws
        b.store(mask, b.gep(p, [_i64(self._iv_mask)], source_etype=I8))
        # the pending lanes go with the warp's state; the next warp starts with none
        for r in range(max(len(self.targets), 1)):
            pp = b.gep(self.pend_ptr, [_i64(4 * r)], source_etype=I8)
            b.store(b.load(pp, typ=I32), b.gep(p, [_i64(self._iv_pend + 4 * r)], source_etype=I8))
            b.store(_i32(0), pp)
        for wd in range(self.nwords):
            bp = b.gep(self.bits_ptr, [_i64(8 * wd)], source_etype=I8)
            b.store(b.load(bp, typ=I64), b.gep(p, [_i64(self._iv_bits + 8 * wd)], source_etype=I8))
            b.store(_i64(0), bp)
        for slot, _t, off in self._iv_slots:
            b.store(b.load(slot), b.gep(p, [_i64(off)], source_etype=I8))
        self._wait_for(k, b.load(self._rl["parity"]))  # (the same round's parity: no barrier)
        b.position_at_end(go_on)
        self._goto_plain(target, mask)
        return True

    def _resume_interleaved(self, edge: tuple[int, int]) -> None:
        """The warp goes on where it stepped aside: its state back, then the edge's goto."""
        b = self.b
        p = self.ws
        for slot, t, off in self._iv_slots:
            b.store(b.load(b.gep(p, [_i64(off)], source_etype=I8), typ=t), slot)
        for r in range(max(len(self.targets), 1)):
            v = b.load(b.gep(p, [_i64(self._iv_pend + 4 * r)], source_etype=I8), typ=I32)
            b.store(v, b.gep(self.pend_ptr, [_i64(4 * r)], source_etype=I8))
        for wd in range(self.nwords):
            v = b.load(b.gep(p, [_i64(self._iv_bits + 8 * wd)], source_etype=I8), typ=I64)
            b.store(v, b.gep(self.bits_ptr, [_i64(8 * wd)], source_etype=I8))
        mask = b.load(b.gep(p, [_i64(self._iv_mask)], source_etype=I8), typ=I32)
        latch, header = edge
        self.block = self.blocks[latch]
        self.split = latch in self.div.split_blocks
        self.version = None
        self._mask_cache = {}
        self._goto_plain(header, mask)


__all__ = ["RegionLoops", "FINISHED", "INTERLEAVE_PERIOD"]
