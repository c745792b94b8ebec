"""Prefetches of the next block's segments, spread over the region loops between barriers.

A block that loads its segment of global memory, works on it in shared memory between
barriers and stores it (bench block_scan: 4 KiB in, 10 barriers, 4 KiB out) leaves the
memory idle while it works, and the next block's segment is a page the CPU's prefetchers
meet afresh. Prefetched at the access (emit._prefetch_ahead), the next blocks' lines are a
burst of prefetches in one region loop, which stalls it once the line fill buffers are
taken. Here each warp's lines of such an access are prefetched for the block SPREAD_BLOCKS
ahead by the warps of the region loops that hold no such access: each line of a warp's run
is one unit, which a host region's warps prefetch, a line each, the first units (in the
order of their accesses) in the first host regions (bench block_scan: the load's two lines
in the first two of the 10 step regions, the store's in the next two), so that a line has
most of a block's time to arrive. The address of an access's first lane in warp w is
computed before the region loops as a + c*w from its definitions (lane_forms._warp_value),
as hoist_form_checks does for address checks.

A store's lines are prefetched for reading: prefetchw made bench block_scan slower than
prefetcht0 on the dev VM's Xeon (18.9 against 16.9 ms). C doing block_scan's work in
cuport's order there (one thread, CPU time): no prefetches 23.5 ms, the next blocks' lines
prefetched at the accesses 19.6, spread over the steps 14.4. cuport (kernel_cost.py time,
best of 7, two or three runs each): none (main) 21.2-21.7 ms, at the accesses 18.6-19.0,
spread 15.9-16.4 (the next block's lines; 2 blocks ahead 17.0-17.8).
"""

from __future__ import annotations

import os

from llvmlite import ir as ll

from ...isa.types import I8, I32, I64, PTR
from ...passes import lanes as lanes_pass
from ...ptx import ir

W = 32
#: at most this many lines per host region's warp on average; more stay at the accesses
MAX_UNITS_PER_HOST = 4
#: how many blocks ahead the spread prefetches reach (as above; block_scan in C: 1 block
#: 14.4 ms, 2 blocks 14.8, 4 blocks 15.2-18.9)
SPREAD_BLOCKS = 1


class PrefetchSpread:
    """Mixin for FunctionEmitter (region loops): spread prefetches (see the module)."""

    def plan_spread_prefetches(self, regions: list) -> None:
        """Before the region loops, once per block: choose the accesses to spread and the
        regions that prefetch them (`spread_hosts`: region → [(the access's first-lane
        address leaves, byte offset ahead)]). Accesses chosen are left out by
        _prefetch_ahead (`spread_ids`). CUPORT_NO_SPREAD=1 leaves them to it."""
        self.spread_ids: set[int] = set()
        self.spread_hosts: dict[int, list] = {}
        if (os.environ.get("CUPORT_NO_PREFETCH") == "1" or os.environ.get("CUPORT_NO_SPREAD") == "1"
                or not self.forms or self.form_seg != W or not self.barriers or len(regions) < 3):
            return
        in_loop = {x for body in self.cfg.loops.values() for x in body}
        found: list[tuple[int, ir.Instr, int, int]] = []  # (region, access, stride, size)
        for k, region in enumerate(regions):
            for x in region.blocks:
                if x in in_loop:
                    continue
                for ins in self.blocks[x].instrs:
                    got = self._spreadable(ins)
                    if got is not None:
                        found.append((k, ins, *got))
        holding = {k for k, *_ in found}
        hosts = [k for k, region in enumerate(regions)
                 if k not in holding and not any(x in in_loop for x in region.blocks)]
        if not found or not hosts:
            return
        here = self.llfn.append_basic_block("spread_prefetch")
        self.b.branch(here)
        self.b.position_at_end(here)
        saved_vec, self.vec = self.vec, False
        units = []  # (first-lane leaves, block stride, the line's offset, the access's region)
        memo: dict = {}
        try:
            for k_acc, ins, stride, size in found:
                v = self._warp_address(ins.args[0] if ins.op == "st" else ins.args[1], size, memo)
                if v is None:
                    continue
                self.spread_ids.add(id(ins))
                for line in range(0, W * size, 64):
                    units.append((v, stride, line, k_acc))
        finally:
            self.vec = saved_vec
        if not units or len(units) > MAX_UNITS_PER_HOST * len(hosts):
            self.spread_ids.clear()  # (too many lines for the regions between: at the accesses)
            return
        # in the order of the accesses, to the first regions between: a line prefetched early
        # in a block has the rest of it to arrive (block_scan, one worker: its 4 units in the
        # 4 step regions after the load 15.9-16.4 ms; spread evenly over the 10, 18.6-19.3;
        # in the last 4, 19.1-19.9; each in 2 regions, every second warp, 17.8-18.1)
        for i, (v, stride, line, _) in enumerate(units):
            self.spread_hosts.setdefault(hosts[i % len(hosts)], []).append((v, stride * SPREAD_BLOCKS + line))

    def _spreadable(self, ins: ir.Instr) -> tuple[int, int] | None:
        """(block stride, element bytes) of a plain global load or store of one element per
        lane whose address has a form moving by a constant from block to block; else None."""
        acc = self._form_access(ins) if "global" in ins.mods else None
        if acc is None:
            return None
        mem, size = acc
        stride = self.block_strides.get(mem.base.name)
        f = self.forms[mem.base.name]
        if not stride or lanes_pass.signed(f.kx + f.m * f.ikx, 64) != size:
            return None  # (not moving with the block, or not contiguous)
        return stride, size

    def emit_spread_prefetches(self, region: int, w: ll.Value) -> None:
        """In region `region`'s loop, warp w: the host's prefetches (plan_spread_prefetches)."""
        b = self.b
        for v, ahead in self.spread_hosts.get(region, []):
            a = v.u[0] if v.u[1] is None else b.add(v.u[0], b.mul(v.u[1], b.zext(w, I64)))
            f = v.lanes
            if f.ext:
                inner = v.ib[0] if v.ib[1] is None else b.add(v.ib[0], b.mul(v.ib[1], w))
                e = b.sext(inner, I64) if f.ext == "s" else b.zext(inner, I64)
                a = b.add(a, b.mul(e, ll.Constant(I64, f.m & (2**64 - 1))))
            p = b.gep(b.inttoptr(a, PTR), [ll.Constant(I64, ahead)], source_etype=I8)
            self.intrinsic("llvm.prefetch", [p, ll.Constant(I32, 0), ll.Constant(I32, 3), ll.Constant(I32, 1)],
                           overload=[PTR], ret=ll.VoidType())
