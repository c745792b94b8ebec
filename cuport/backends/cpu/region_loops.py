"""A kernel whose barriers are all converged, run one region at a time as a loop over warps.

The kernel's LLVM function runs the whole block (passes/regions.py splits it): in a
*round* every warp that has not finished runs from where it waits to its next barrier;
a round runs, in region order, the loop over the warps of each region some warp waits
to run, then completes the barrier (bar.red's result) and starts the next round. The
common case, every warp at the same barrier, is one region loop per round.

    round:   present -> cur; next = 0
    pick:    the lowest region in cur (none: round_end)
    region r, warp w = 0..nwarps-1, those waiting to run r this round:
             restore (barrier_state's plan), run the region's blocks (emitted for r),
             at barrier i: save, wait for region i + 1 (next |= bit), on to warp w + 1;
             all lanes exited: finished
    round_end: no region next: the block is done; else release, present = next, round

A warp's WS_RESUME says which region it runs and in which round: (region << 1) | parity
of the round, so a warp that reaches a barrier whose region runs later in the same round
does not run it again before the round ends. FINISHED matches no region.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ...isa.types import I1, I8, I32, I64
from . import layout as L

FINISHED = 0xFFFFFFFE  # (WS_RESUME of a warp whose lanes have all exited)


def _i32(v: int) -> ll.Constant:
    return ll.Constant(I32, v & 0xFFFFFFFF)


def _i64(v: int) -> ll.Constant:
    return ll.Constant(I64, v & 0xFFFFFFFFFFFFFFFF)


class RegionLoops:
    """Mixin for FunctionEmitter: the kernel emitted as region loops (see the module)."""

    def _emit_regions(self) -> None:
        fn, b = self.llfn, self.b
        self.frame_base = _i32(0)
        ws0 = self.ws  # the first warp's state; warp w's is w * warp_state_bytes further
        present = b.alloca(I64, name="present")  # regions some warp waits to run, this round
        cur = b.alloca(I64, name="cur")  # of those, the ones not run yet
        nxt = b.alloca(I64, name="next")  # regions warps wait to run next round
        parity = b.alloca(I32, name="parity")
        b.store(_i64(1), present)
        b.store(_i32(0), parity)
        round_bb = fn.append_basic_block("round")
        pick = fn.append_basic_block("pick")
        round_end = fn.append_basic_block("round_end")
        b.branch(round_bb)
        b.position_at_end(round_bb)
        b.store(b.load(present), cur)
        b.store(_i64(0), nxt)
        b.branch(pick)
        self._rl = {"next": nxt, "parity": parity}

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
        n = b.load(nxt)
        done = fn.append_basic_block("block_done")
        more = fn.append_basic_block("release")
        b.cbranch(b.icmp_unsigned("==", n, _i64(0)), done, more)
        b.position_at_end(done)
        b.ret(_i32(L.DONE))
        b.position_at_end(more)
        # every waiting warp is at a barrier: it completes (bar.red's result of this round)
        red = b.gep(self.blk, [_i64(L.BS_RED)], source_etype=I8)
        b.store(b.load(red, typ=I32), b.gep(self.blk, [_i64(L.BS_REDOUT)], source_etype=I8))
        b.store(_i32(0), red)
        b.store(n, present)
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
        want = b.or_(_i32(k << 1), b.load(self._rl["parity"]))
        b.cbranch(b.icmp_unsigned("==", b.load(resume_p, typ=I32), want), body, latch)

        b.position_at_end(body)
        self._set_warp(w, ws)
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
        b.store(_i32(0), b.gep(self.ws, [_i64(L.WS_EXITED)], source_etype=I8))
        b.store(_i32(self.frame_size), b.gep(self.ws, [_i64(L.WS_SP)], source_etype=I8))
        b.store(self.live_mask, self.active_slot)

    def _region_arrive(self, blk, t, idx: int) -> None:
        """Converged barrier `idx` ends the warp's run of this region: it waits for region
        idx + 1 in the next round."""
        b = self.b
        self._arrive_simple(t, idx)
        nparity = b.xor(b.load(self._rl["parity"]), _i32(1))
        b.store(b.or_(_i32((idx + 1) << 1), nparity), self._region["resume"])
        nxt = self._rl["next"]
        b.store(b.or_(b.load(nxt), _i64(1 << (idx + 1))), nxt)
        b.branch(self._region["latch"])

    def _region_done(self) -> None:
        """Every lane of the warp has exited."""
        b = self.b
        b.store(_i32(FINISHED), self._region["resume"])
        b.branch(self._region["latch"])

    def _fill_missing_blocks(self) -> None:
        """Blocks of other regions, which the region's dispatch names but never reaches (a
        converged barrier leaves no lanes pending): reaching one is a cuport bug."""
        missing = [i for i, bb in enumerate(self.llblocks) if bb is None]
        if not missing:
            return
        bad = self.llfn.append_basic_block("not_in_region")
        for i in missing:
            self.llblocks[i] = bad
        b = ll.IRBuilder(bad)
        self.mc.emit_error(b, self.ctx, self.blk, L.ERR_CONVERGENCE, self.fn.line)
        b.ret(_i32(L.FAILED))
