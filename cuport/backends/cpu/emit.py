"""Emit one PTX function as an LLVM function that runs a whole warp as SIMD code.

How a warp runs (see DESIGN.md, "Executing a thread block on a CPU"):
- Every value of the warp is a `<32 x T>` vector (one lane per thread); registers the
  divergence analysis proves uniform are scalars.
- Blocks are numbered in execution priority order (passes.cfg). A block runs with an
  `active` lane mask. At a branch whose lanes disagree, both targets get their lanes
  recorded as *pending* and the lowest-numbered pending block runs next (min-PC), so the
  warp reconverges at post-dominators and at loop exits.
- In *split* blocks (passes.divergence) writes to varying registers are blended with the
  old value, so lanes that are elsewhere keep theirs.
- A CTA barrier ends a block: the arriving lanes wait, other pending lanes run on, and
  when nothing is runnable the warp saves the registers live across barriers into its
  WarpState and returns to the block runner (runtime.py) with status SUSPENDED. Called
  again after the barrier completes, it restores them and carries on.
- Device functions are LLVM functions taking the caller's lane mask and pointers to the
  per-lane `.param` memory of the call.

ISA families (cuport.isa.*) lower instructions through the small API of this class:
`read`, `write`, `const`, `intrinsic`, `exec_mask`, `address`, `load`, `store`.
"""

from __future__ import annotations

import bisect
import math
import os
from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir as ll

from ...isa.cluster import ONE_BLOCK_CLUSTER
from ...isa.fprt import canon_nan
from ...isa.memory import ordered, space_of
from ...isa.operands import defs, uses
from ...isa.types import (
    F16,
    F32,
    F64,
    I1,
    I8,
    I16,
    I32,
    I64,
    PTR,
    bits_type,
    mangle,
    opaque_alloca,
    vec,
)
from ...isa.values import Values, float_imm_bits
from ...passes import cfg as cfgmod
from ...passes import lane_bounds, nan_payloads
from ...passes.divergence import Divergence, special_is_varying
from ...passes.lanes import DYN
from ...passes.shapes import access_pattern
from ...ptx import ir, opcodes
from ...ptx.callgraph import call_operands
from ...ptx.errors import UnsupportedError
from ...ptx.ir import TYPE_BITS
from ..device_launch import function_token
from . import (
    async_ops,
    atomic_ops,
    jit,
    llvm_volatile,  # noqa: F401 (load/store volatile in the IR text)
    memory_ops,
    rounding,
)
from . import layout as L
from .lane_forms import FormPtrs, LaneForms
from .lane_ops import LaneOps
from .layout import DONE, FAILED, SUSPENDED, YIELDED  # noqa: F401 (warp function return codes)
from .prefetch_spread import PrefetchSpread
from .region_loops import RegionLoops
from .warp_ops import WarpOps

W = L.WARP
ALL = (1 << W) - 1
#: a load or store that at most this many lanes of a warp can execute (passes/lane_bounds.py:
#: halos under `if (threadIdx.x == 0)`) is a scalar access per lane, without the run masks,
#: address checks and gathers of warp-wide code
SPARSE_LANES = 4
#: how many blocks ahead along x a 2-D tile's global loads and stores prefetch their rows (the
#: same access of the block a worker runs that many blocks later). bench jacobi, one core of
#: the 2-core AMD EPYC (Zen 4), CPU time: loads only, none 20.2 ms, 2 blocks 18.5, 4 blocks
#: 17.0, 8 blocks 18.9; loads and stores, 2: 16.1-16.5, 3: 14.7-16.8, 4: 14.5-15.2, 6: 14.7,
#: 8: 15.1-15.3, 12: 15.1; sgemm 1024^3 (B's tile): 2: 52.2, 4: 51.6, 8: 56.4
PREFETCH_BLOCKS = 4
#: how many blocks ahead a warp-wide run outside loops in a kernel with barriers prefetches
#: its lines (_prefetch_ahead). bench block_scan (load a 1024-int segment, 10 barriers, store),
#: one core of the 2-core Intel Xeon dev VM, CPU time per launch: none 21.1-21.7 ms, 1 block
#: 17.4-18.8, 2 blocks 17.8-18.6, 4 blocks 18.7-18.9
RUN_PREFETCH_BLOCKS = 2


def _is_zero(v: ll.Value) -> bool:
    """Whether `v` is a constant whose every bit is zero (seen through bitcasts)."""
    while getattr(v, "opname", None) == "bitcast":
        v = v.operands[0]
    if not isinstance(v, ll.Constant):
        return False
    c = v.constant
    elems = c if isinstance(c, (list, tuple)) else [c]
    return all(e is None or (_is_zero(e) if isinstance(e, ll.Constant) else
                             e == 0 and math.copysign(1.0, e) > 0) for e in elems)


def _zero_off(v: ll.Value, zero: bool) -> ll.Value:
    """`v`, marked as zero in the lanes that do not execute the load that made it (a masked
    load or gather with a zero pass-through): write() then blends nothing into a register
    that held zero (`x = c ? p[i] : 0`)."""
    v.cuport_zero_off = zero
    return v


@dataclass
class SegPtrs:
    """Addresses of a warp-wide access known (checked) to be `kind` in runs of `seg` lanes:
    one scalar pointer per run, to its first lane's address."""

    kind: str
    seg: int
    ptrs: list
    base: str
    shape: object

    @property
    def type(self) -> ll.Type:
        # looks like <32 x ptr> to code that only asks for the type; em.load/em.store and
        # em.offset_ptrs are the only consumers of its contents
        return vec(PTR)


@dataclass
class ParamSlot:
    """Per-lane memory of a `.param` variable (call arguments and return values)."""

    size: int
    ptr: ll.Value | None = None  # base of W consecutive copies, lane-major


def i32c(v: int) -> ll.Constant:
    return ll.Constant(I32, v & 0xFFFFFFFF)


def i64c(v: int) -> ll.Constant:
    return ll.Constant(I64, v & 0xFFFFFFFFFFFFFFFF)


class FunctionEmitter(Values, WarpOps, LaneOps, LaneForms, RegionLoops, PrefetchSpread):
    """Lowers one PTX function (kernel entry or device function) for one block shape."""

    def __init__(self, mc, fn: ir.Function, cfg: cfgmod.Cfg, div: Divergence, live: list[set[str]]):
        self.mc = mc  # the ModuleCompiler: symbols, LLVM module, block shape
        self.fn = fn
        self.cfg = cfg
        self.div = div
        self.live = live
        self.is_kernel = fn.is_entry
        self.blocks = cfg.blocks
        self.ins: ir.Instr | None = None
        self.vec = False
        self.split = False
        self.block: cfgmod.Block | None = None
        self._mask_cache: dict = {}
        self._stretch_guard: tuple[str, bool] | None = None  # (_emit_body: the stretch run now)
        self.outlined_results: dict[str, ll.Value] = {}  # em.outline's result buffer, by key
        self._nan_deferred = nan_payloads.deferred(fn)  # (see nan_deferred, read_bits)
        self._blind = False  # the current instruction reads f32 registers NaN-blind
        self.eager_saves: dict[int, list[str]] = {}  # block -> registers saved at its end
        #: registers whose last write in this PTX block stored zero unguarded (write)
        self._zero_regs: set[str] = set()

    def nan_deferred(self, ins: ir.Instr) -> bool:
        d = ins.args[0] if ins is not None and ins.args else None
        return isinstance(d, ir.Reg) and d.name in self._nan_deferred

    # ================================================================ set-up
    def declare(self) -> ll.Function:
        if self.is_kernel:
            args = [PTR, PTR, PTR, I32]
        else:
            args = [PTR, PTR, PTR, I32, I32] + [PTR] * (len(self.fn.params) + len(self.fn.rets))
        fty = ll.FunctionType(I32, args)
        name = self.mc.llvm_name(self.fn)
        self.llfn = ll.Function(self.mc.llmod, fty, name=name)
        self.llfn.linkage = "internal" if not self.is_kernel else "internal"
        return self.llfn

    def emit(self) -> None:
        fn = self.llfn
        self.ctx, self.blk, self.ws, self.warp = fn.args[:4]
        entry = fn.append_basic_block("entry")
        self.b = b = ll.IRBuilder(entry)
        self.entry_builder = ll.IRBuilder(entry)
        # ---- registers
        self.regs: dict[str, tuple[ll.Value, ll.Type, bool]] = {}
        for name, ptype in self.fn.regs.items():
            if name in self.fn.reg_vec:
                raise UnsupportedError(f"vector register {name} (.reg .v{self.fn.reg_vec[name]})")
            t = bits_type(ptype)
            varying = name in self.div.varying
            lt = vec(t) if varying else t
            slot = b.alloca(lt, name=name.replace("%", "r_"))
            self.regs[name] = (slot, t, varying)
        self.active_slot = b.alloca(I32, name="active")
        # ---- lanes
        self.lane = ll.Constant(vec(I32), list(range(W)))
        self.shared_base = b.load(b.gep(self.blk, [i64c(L.BS_SHARED)], source_etype=I8), typ=PTR)
        self.local_all = b.load(b.gep(self.blk, [i64c(L.BS_LOCAL)], source_etype=I8), typ=PTR)
        # a kernel in region loops (region_loops.py) runs the block's warps in loops: the
        # function's `ws` argument is the first warp's state, the rest are the loop's
        self.regions = self.mc.kernel_regions if self.is_kernel else None
        if self.is_kernel and self.regions is None:
            self._set_warp(self.warp, self.ws)
        elif not self.is_kernel:
            self._set_warp(self.warp, self.ws, live=fn.args[4])
        # ---- dispatch state: targets of pending lanes
        self._plan_dispatch()
        from ...passes.shapes import block_strides, predict

        self.shapes = predict(self.cfg, self.div, self.mc.block)
        self.lane_bounds = lane_bounds.analyze(self.cfg, self.mc.block)
        self.block_strides = block_strides(self.cfg)
        self.spread_ids: set[int] = set()  # (prefetch_spread.py: accesses whose region loops prefetch)
        self.spread_hosts: dict[int, list] = {}
        # ---- frames: this function's .local variables, .param variables of calls
        self._layout_locals()
        self._layout_params()
        if self.regions is not None:
            self._emit_regions()
            return
        # ---- LLVM blocks
        self.llblocks = [fn.append_basic_block(blk.name.replace("$", "_")) for blk in self.blocks]
        self.dispatch_bb = fn.append_basic_block("dispatch")
        self.release_bb = fn.append_basic_block("release") if self.is_kernel else None
        self.yield_suspend_bb = fn.append_basic_block("yield_suspend") if self.is_kernel else None
        self.done_bb = fn.append_basic_block("done")
        # ---- prologue
        if self.is_kernel:
            self._kernel_prologue()
        else:
            self._func_prologue()
        for blk in self.blocks:
            self._emit_block(blk)
        self._emit_dispatch()
        self._emit_done()

    def _set_warp(self, warp: ll.Value, ws: ll.Value, live: ll.Value | None = None) -> None:
        """The values that depend on which warp runs: its index, state, live lanes, local
        memory (computed where the builder is)."""
        b = self.b
        self.warp, self.ws = warp, ws
        if live is None:
            remaining = b.sub(i32c(self.mc.nthreads), b.mul(warp, i32c(W)))
            full = b.icmp_unsigned(">=", remaining, i32c(W))
            partial = b.sub(b.shl(i32c(1), remaining), i32c(1))
            live = b.select(full, i32c(ALL), partial, name="live")
        self.live_mask = live
        win = self.mc.local_window
        self.local_warp = b.gep(self.local_all, [b.mul(b.zext(warp, I64), i64c(W * win))], source_etype=I8)

    # ---------------------------------------------------------------- planning
    def _plan_dispatch(self) -> None:
        blocks = self.blocks
        targets: set[int] = set()
        self.barriers: list[cfgmod.Block] = []
        for blk in blocks:
            t = blk.term
            if blk.index in self.div.split_blocks or blk.index in self.div.divergent_branches:
                targets.update(blk.succs)
            if t is not None and t.guard is not None and t.op in ("ret", "exit"):
                targets.update(blk.succs)
            if t is not None and cfgmod.is_suspend(t):
                targets.update(blk.succs)
                self.barriers.append(blk)
        targets = {t for t in targets if not blocks[t].exit_sink}
        # barriers that no thread reaches after one of its warp finished: a warp resumes
        # there with all the lanes it started with (no WS_EXITED to read)
        self.no_exits_before = {i for i, blk in enumerate(self.barriers)
                                if not cfgmod.exits_before(self.cfg, self.div.varying,
                                                           self.div.divergent_branches, blk.index,
                                                           self.mc.has_exit)}
        self.targets = sorted(targets)
        self.rank = {t: i for i, t in enumerate(self.targets)}
        nt = max(len(self.targets), 1)
        self.nwords = (nt + 63) // 64
        self.exits_read = self._exits_read()
        b = self.b
        self.simple_barriers = self.is_kernel and self.mc.simple_barriers
        if self.simple_barriers:
            # converged barriers need no pending masks: their continuations are not targets
            conts = {blk.succs[0] for blk in self.barriers}
            still = set()
            for blk in self.blocks:
                if blk.index in self.div.split_blocks or blk.index in self.div.divergent_branches:
                    still.update(blk.succs)
                t = blk.term
                if t is not None and t.guard is not None and t.op in ("ret", "exit"):
                    still.update(blk.succs)
            self.targets = sorted(x for x in self.targets if x not in conts or x in still)
            self.rank = {t: i for i, t in enumerate(self.targets)}
            nt = max(len(self.targets), 1)
            self.nwords = (nt + 63) // 64
        if self.barriers and not self.is_kernel:
            raise UnsupportedError(
                f"a CTA barrier inside the device function {self.fn.name} that was not inlined",
                self.barriers[0].term.line,
            )
        if self.is_kernel:
            # which suspension points use which protocol (see _emit_barrier): with simple
            # barriers, yield points in split code still wait the general way
            self.general_points = [
                i for i, blk in enumerate(self.barriers)
                if not self.simple_barriers or blk.index in self.div.split_blocks
            ]
            # Barrier waits live in the WarpState. So do the pending masks and their bitmap
            # where a warp may suspend with lanes pending elsewhere (the general protocol);
            # where every suspension is a converged barrier nothing is pending when the warp
            # returns, and stack slots that LLVM keeps in registers serve.
            self.pending_in_ws = bool(self.general_points)
            # Lane forms (lane_forms.py) keep leaves, not lanes: not where the general
            # protocol blends a register's lanes saved at different times
            self._setup_forms(not self.general_points)
            off = L.WS_HEADER
            if self.pending_in_ws:
                self.ws_bits = off
                off += 8 * self.nwords
                self.ws_pend = off
                off += 4 * nt
                self.pend_ptr = b.gep(self.ws, [i64c(self.ws_pend)], source_etype=I8)
                self.bits_ptr = b.gep(self.ws, [i64c(self.ws_bits)], source_etype=I8)
            else:
                self.pend_ptr = opaque_alloca(b, ll.ArrayType(I32, nt), "pend")
                self.bits_ptr = opaque_alloca(b, ll.ArrayType(I64, self.nwords), "bits")
                self._clear_pending()
            self.ws_wait = off
            off += 4 * len(self.barriers)
            self.ws_wgen = off
            off += 4 * len(self.barriers)
            self.wait_ptr = b.gep(self.ws, [i64c(self.ws_wait)], source_etype=I8)
            self.wgen_ptr = b.gep(self.ws, [i64c(self.ws_wgen)], source_etype=I8)
            # Each barrier has its own save area for the registers live at its continuation:
            # arriving lanes store their values there (blended, so lanes arriving later do
            # not clobber earlier ones), released lanes load them back. Restoring at the
            # release, not at function entry, keeps the restored values from looking
            # invariant to LLVM, which would hoist address computations of later blocks up
            # to the entry and spill them.
            self.saved_regs: list[list[tuple[str, int]]] = []
            off = (off + 63) & ~63
            if self.simple_barriers:
                from ...passes.barrier_state import plan

                simple_idx = [i for i in range(len(self.barriers)) if i not in self.general_points]
                self.bstate_index = {i: k for k, i in enumerate(simple_idx)}
                self.bstate = plan(self.cfg, self.div, self.live, [self.barriers[i] for i in simple_idx])
                self.eager_saves = self.bstate.eager
                self.slot_off: dict[str, int] = {}
                for name in self.bstate.slots:
                    # a form's slot holds its leaves, 8 bytes apart (lane_forms.form_leaf_slots)
                    self.slot_off[name], off = self._save_slot(name, off, 32 if name in self.forms else None)
            for i, blk in enumerate(self.barriers):
                area: list[tuple[str, int]] = []
                if i not in self.general_points:
                    self.saved_regs.append(area)
                    continue
                for name in sorted(self.live[blk.succs[0]]):
                    if name in self.regs:
                        at, off = self._save_slot(name, off)
                        area.append((name, at))
                self.saved_regs.append(area)
            # A warp that steps aside at a yield may leave lanes pending at later blocks;
            # their registers live in this function's stack slots, so they are kept here
            # too (blended by the pending lanes) and brought back when the warp resumes.
            self.pending_save: list[tuple[str, int]] = []
            if any(self.barriers[i].term.op == "yield" for i in self.general_points):
                live_pending: set[str] = set()
                for tgt in self.targets:
                    live_pending |= self.live[tgt]
                off = (off + 63) & ~63
                self.pending_mask_off = off
                off += 64
                for name in sorted(live_pending):
                    if name in self.regs:
                        at, off = self._save_slot(name, off)
                        self.pending_save.append((name, at))
            self.mc.note_warp_state(off)
        else:
            self._setup_forms(True)
            self.pend_ptr = opaque_alloca(b, ll.ArrayType(I32, nt), "pend")
            self.bits_ptr = opaque_alloca(b, ll.ArrayType(I64, self.nwords), "bits")
            for w in range(self.nwords):
                b.store(i64c(0), b.gep(self.bits_ptr, [i64c(8 * w)], source_etype=I8))
            for r in range(nt):
                b.store(i32c(0), b.gep(self.pend_ptr, [i64c(4 * r)], source_etype=I8))

    def _save_slot(self, name: str, off: int, size: int | None = None) -> tuple[int, int]:
        """Where register `name` is kept in the warp-state area from `off` on, and where
        the area goes on after it: `size` bytes (by default its value, one a lane where
        varying) aligned to their size, up to 64."""
        _, t, varying = self.regs[name]
        if size is None:
            size = max(t.width // 8, 1) * (W if varying else 1)
        align = min(64, max(size, 1))
        at = (off + align - 1) & ~(align - 1)
        return at, at + size

    def _clear_pending(self) -> None:
        """No lanes pending anywhere (the stack-slot pending state, where the builder is)."""
        b = self.b
        for w in range(self.nwords):
            b.store(i64c(0), b.gep(self.bits_ptr, [i64c(8 * w)], source_etype=I8))
        for r in range(max(len(self.targets), 1)):
            b.store(i32c(0), b.gep(self.pend_ptr, [i64c(4 * r)], source_etype=I8))

    def _layout_locals(self) -> None:
        """Offsets of this function's `.local` variables inside each lane's stack frame."""
        off = 0
        self.local_off: dict[str, int] = {}
        for v in self.fn.locals:
            if v.space != "local":
                continue
            a = max(v.alignment, 1)
            off = (off + a - 1) // a * a
            self.local_off[v.name] = off
            off += v.size
        la = self.mc.local_align  # every frame keeps the largest alignment (compiler.py)
        self.frame_size = (off + la - 1) // la * la
        self.mc.note_frame(self.fn, self.frame_size)

    def _layout_params(self) -> None:
        self.param_slots: dict[str, ParamSlot] = {}
        b = self.b
        for v in self.fn.locals:
            if v.space == "param":
                size = max(v.size, 1)
                slot = ParamSlot(size)
                slot.ptr = opaque_alloca(b, ll.ArrayType(I8, size * W), v.name.replace("$", "_"), 16)
                self.param_slots[v.name] = slot
        if not self.is_kernel:
            args = self.llfn.args[5:]
            for v, a in zip(list(self.fn.params) + list(self.fn.rets), args, strict=True):
                self.param_slots[v.name] = ParamSlot(max(v.size, 1), a)

    def _kernel_prologue(self) -> None:
        b = self.b
        ep = b.gep(self.ws, [i64c(L.WS_EPOCH)], source_etype=I8)
        b.store(b.add(b.load(ep, typ=I32), i32c(1)), ep)
        resume = b.load(b.gep(self.ws, [i64c(L.WS_RESUME)], source_etype=I8), typ=I32)
        self.frame_base = i32c(0)
        start = self.llfn.append_basic_block("start")
        restore = self.llfn.append_basic_block("restore")
        b.cbranch(b.icmp_unsigned("==", resume, i32c(0)), start, restore)
        b.position_at_end(start)
        if self.pending_in_ws:
            for w in range(self.nwords):
                b.store(i64c(0), b.gep(self.bits_ptr, [i64c(8 * w)], source_etype=I8))
            for r in range(max(len(self.targets), 1)):
                b.store(i32c(0), b.gep(self.pend_ptr, [i64c(4 * r)], source_etype=I8))
        for i in range(len(self.barriers)):
            b.store(i32c(0), b.gep(self.wait_ptr, [i64c(4 * i)], source_etype=I8))
        b.store(i32c(0), b.gep(self.ws, [i64c(L.WS_EXITED)], source_etype=I8))
        b.store(i32c(self.frame_size), b.gep(self.ws, [i64c(L.WS_SP)], source_etype=I8))
        b.store(self.live_mask, self.active_slot)
        b.branch(self.llblocks[0])
        b.position_at_end(restore)
        if not self.simple_barriers:
            b.branch(self.release_bb)
            return
        # resume after a converged barrier: every live lane continues together
        sw = b.switch(resume, self.release_bb)
        self._simple_resume = {}
        for idx in range(len(self.barriers)):
            if idx in self.general_points:
                continue
            bb = self.llfn.append_basic_block(f"resume{idx}")
            sw.add_case(i32c(L.WS_SIMPLE_BASE + idx), bb)
            self._simple_resume[idx] = bb

    def _func_prologue(self) -> None:
        b = self.b
        sp_ptr = b.gep(self.ws, [i64c(L.WS_SP)], source_etype=I8)
        sp = b.load(sp_ptr, typ=I32)
        self.frame_base = sp
        if self.frame_size:
            new_sp = b.add(sp, i32c(self.frame_size))
            over = b.icmp_unsigned(">", new_sp, i32c(self.mc.local_window))
            with b.if_then(over, likely=False):
                self.mc.emit_error(b, self.ctx, self.blk, L.ERR_STACK, self.fn.line)
                b.ret(i32c(FAILED))
            b.store(new_sp, sp_ptr)
        b.store(self.live_mask, self.active_slot)
        b.branch(self.llblocks[0])

    # ================================================================ blocks
    def _emit_block(self, blk: cfgmod.Block) -> None:
        b = self.b
        b.position_at_end(self.llblocks[blk.index])
        self.block = blk
        self.split = blk.index in self.div.split_blocks
        self.active = b.load(self.active_slot, name="act")
        self._mask_cache = {}
        self._zero_regs = set()
        self.version = None
        if self.mc.check_convergence and self.is_kernel and not self.split:
            # debug mode: a converged block must run with every live lane of the warp
            ex = b.load(b.gep(self.ws, [i64c(L.WS_EXITED)], source_etype=I8), typ=I32)
            want = b.and_(self.live_mask, b.not_(ex))
            with b.if_then(b.icmp_unsigned("!=", self.active, want), likely=False):
                self.mc.emit_error(b, self.ctx, self.blk, L.ERR_CONVERGENCE, blk.line)
                b.ret(i32c(FAILED))
        body = blk.instrs[:-1] if blk.term is not None else blk.instrs
        checks = self._hoistable_checks(body)
        if checks:
            # Block versioning: check every predicted address pattern once, up front, and
            # emit the block twice: with vector loads/stores (all patterns hold) and with
            # gathers/scatters. One straight-line body per version keeps LLVM from merging
            # per-access diamonds into one path that holds every loaded value at once.
            oks = []
            for ins, mem, space, key in checks:
                self.ins = ins
                self.vec = True
                ptrs = self.address(mem, space)
                kind, seg, size = key[1:]
                oks.append(self._pattern_check(b.ptrtoint(ptrs, vec(I64)), kind, seg, size))
            ok = oks[0]
            for o in oks[1:]:
                ok = b.and_(ok, o)
            fast = self.llfn.append_basic_block(blk.name.replace("$", "_") + "_vec")
            slow = self.llfn.append_basic_block(blk.name.replace("$", "_") + "_gather")
            join = self.llfn.append_basic_block(blk.name.replace("$", "_") + "_end")
            b.cbranch(ok, fast, slow)
            keys = {c[3] for c in checks}
            for bb, mode in ((fast, "fast"), (slow, "slow")):
                b.position_at_end(bb)
                self.version = (mode, keys)
                self._mask_cache = {}
                self._zero_regs = set()
                self._emit_body(body)
                b.branch(join)
            b.position_at_end(join)
            self.version = None
            self.active = b.load(self.active_slot, name="act")
            self._mask_cache = {}
        else:
            self._emit_body(body)
        self._save_slots(self.eager_saves.get(blk.index, []))  # (saved where written)
        self.ins = blk.term
        self._emit_terminator(blk)

    def _emit_body(self, body: list[ir.Instr], inside: int | None = None) -> None:
        """The instructions of a block; a predicated stretch (passes/predicate.py) that holds
        memory accesses and that no lane must run is jumped over where no executing lane of
        the warp runs it, as its branch did: otherwise it costs its masks, address checks
        and skipped accesses in every warp (the halo rows of a 2-D stencil, `if (ty == 0)`,
        run in one warp of the block; a tree reduction's `if (t < s)`). With AVX-512 mask
        registers a stretch of one access is left to the access's own check
        (_if_some_lane), which blends its destination after it: the two cost about the same
        there, and LLVM's registers fared better or worse by kernel (jumped over: sgemm's
        guarded tile loads 5% more instructions, jacobi's tile load 7% fewer). Without them
        the blend builds its mask vector, which jumping over the stretch leaves out where no
        lane runs it (the first warps' `t >= off ? s[t - off] : 0` of a scan: AVX2 code of
        bench block_scan 23% fewer instructions). A guard that is the same along each run of
        lanes (`ty == 0` in a 16x16 block) is tested per run in scalar code
        (lane_forms.some_lane_runs), which LLVM folds to a test of the warp index (AVX2
        jacobi 5% fewer instructions, AVX-512 0.5%)."""
        b = self.b
        i = 0
        while i < len(body):
            n, run = self._skippable(body, i) if id(body[i]) != inside else (0, None)
            if not n:
                self._emit_instr(body[i])
                i += 1
                continue
            self.ins = run
            self._mask_cache = {k: v for k, v in self._mask_cache.items() if k == "active"}
            self.active_vec()  # (cached before the branch: later instructions use it)
            any_ = self.some_lane_runs(run, body[:i])
            if any_ is None:
                any_ = b.icmp_unsigned("!=", self.exec_mask(), i32c(0))
            outer = self._stretch_guard
            self._stretch_guard = (run.guard.name, run.guard_neg)
            zero = set(self._zero_regs)
            with b.if_then(any_, likely=False):
                self._emit_body(body[i:i + n], id(body[i]))
            self._stretch_guard = outer
            self._zero_regs = zero - {r.name for x in body[i:i + n] for r in defs(x)}  # (run or not)
            i += n

    def _skippable(self, body: list[ir.Instr], i: int) -> tuple[int, ir.Instr | None]:
        """(the length of the predicated stretch starting at body[i] that _emit_body may
        jump over, an instruction guarded as the lanes that run it) or (0, None)."""
        st = self.fn.stretches.get(id(body[i]))
        if st is None or self.block is None:
            return 0, None
        ids, p, holds = st
        n = len(ids)
        if tuple(id(x) for x in body[i:i + n]) != ids or p.name not in self.div.varying:
            return 0, None
        accesses = sum(x.op in ("ld", "ldu", "st", "atom", "red") for x in body[i:i + n])
        if accesses < (2 if jit.mask_registers() else 1):
            return 0, None  # (a lone access checks for itself: _if_some_lane)
        run = ir.Instr("bra", (), [], guard=p, guard_neg=not holds, line=body[i].line)
        must = self.lane_bounds.blocks[self.block.index] & ~self.lane_bounds.guard(run, holds=False) & ALL
        return (0, None) if must else (n, run)

    def _hoistable_checks(self, body: list[ir.Instr]) -> list:
        """Memory accesses whose address pattern can be checked at the start of the block."""
        from ...isa.registry import type_suffix

        written: set[str] = set()
        out = []
        seen = set()
        for ins in body:
            if ins.op in ("ld", "st", "ldu") and ins.guard is None and not ordered(ins):
                mem = ins.args[1] if ins.op != "st" else ins.args[0]
                space = self.space_of(ins)
                if (isinstance(mem, ir.Mem) and isinstance(mem.base, ir.Reg)
                        and mem.base.name in self.div.varying and mem.base.name not in written
                        and mem.base.name not in self.forms
                        and space in ("global", "shared", "const", "generic")):
                    try:
                        t = type_suffix(ins)
                    except ValueError:
                        t = None
                    shape = self.shapes.get(mem.base.name)
                    if t is not None and shape is not None:
                        size = max(TYPE_BITS[t] // 8, 1)
                        pat = access_pattern(shape, size, self.mc.block)
                        if pat is not None and pat[1] >= 8 and (ins.op != "st" or pat[0] == "contiguous"):
                            key = (mem.base.name, pat[0], pat[1], size)
                            if key not in seen:
                                seen.add(key)
                                out.append((ins, ir.Mem(mem.base, 0), space, key))
            for r in defs(ins):
                written.add(r.name)
            if ins.op == "call":
                break
        return out

    def _emit_instr(self, ins: ir.Instr) -> None:
        from ...isa import families, registry  # noqa: F401

        self.ins = ins
        lower = registry.LOWERINGS.get(ins.op)
        if lower is None:
            raise UnsupportedError(f"the instruction `{ins.op}` is not supported", ins.line, ins.text())
        self.vec = self._needs_vector(ins)
        self._mask_cache = {k: v for k, v in self._mask_cache.items() if k == "active"}
        if self.forms:
            ds = defs(ins)
            if ds and ds[0].name in self.forms:
                self.emit_form_def(ins)
                return
        self._blind = nan_payloads.blind(ins)
        try:
            lower(self, ins)
        finally:
            self._blind = False

    def _needs_vector(self, ins: ir.Instr) -> bool:
        varying = self.div.varying
        for r in defs(ins):
            if r.name in varying:
                return True
        for r in uses(ins):
            if r.name in varying:
                return True
        for a in ins.args:
            if isinstance(a, ir.Special) and special_is_varying(a.name, self.mc.block):
                return True
        op = ins.op
        if op in ("ld", "st", "atom", "red", "ldu", "cvta", "prefetch"):
            sp = self.space_of(ins)
            if sp == "local" or (sp == "param" and not self._kernel_param_access(ins)):
                return True
        if op == "mov" and len(ins.args) > 1:
            s = ins.args[1]
            if isinstance(s, (ir.Sym, ir.SymAddr)) and s.name in self.param_slots:
                return True
        return False

    def _kernel_param_access(self, ins: ir.Instr) -> bool:
        for a in ins.args:
            if isinstance(a, ir.Mem):
                return not (isinstance(a.base, ir.Sym) and a.base.name in self.param_slots)
        return True

    # ================================================================ terminators
    def _emit_terminator(self, blk: cfgmod.Block) -> None:
        t = blk.term
        b = self.b
        if t is None:
            self.goto(blk.succs[0], self.active)
            return
        self.vec = False
        if cfgmod.is_suspend(t):
            self._emit_barrier(blk, t)
            return
        if t.op == "bra":
            if t.guard is None or len(set(blk.succs)) == 1:
                self.goto(blk.succs[0], self.active)
                return
            taken, fall = blk.succs
            p = self.guard_value(t)
            if p.type == I1:
                tb = self.llfn.append_basic_block()
                fb = self.llfn.append_basic_block()
                b.cbranch(p, tb, fb)
                b.position_at_end(tb)
                self.goto(taken, self.active)
                b.position_at_end(fb)
                self.goto(fall, self.active)
                return
            pbits = b.bitcast(p, I32)
            tm = b.and_(self.active, pbits)
            fm = b.and_(self.active, b.not_(pbits))
            all_t = self.llfn.append_basic_block()
            not_all_t = self.llfn.append_basic_block()
            all_f = self.llfn.append_basic_block()
            both = self.llfn.append_basic_block()
            b.cbranch(b.icmp_unsigned("==", fm, i32c(0)), all_t, not_all_t)
            b.position_at_end(all_t)
            self.goto(taken, self.active)
            b.position_at_end(not_all_t)
            b.cbranch(b.icmp_unsigned("==", tm, i32c(0)), all_f, both)
            b.position_at_end(all_f)
            self.goto(fall, self.active)
            b.position_at_end(both)
            lo, lo_m, hi, hi_m = (taken, tm, fall, fm) if taken < fall else (fall, fm, taken, tm)
            self._defer(hi, hi_m)
            self.goto(lo, lo_m)
            return
        if t.op in ("ret", "exit"):
            if t.guard is None:
                self.finish(self.active, t.op)
                b.branch(self.dispatch_bb)
                return
            p = self._guard_bits(t)
            m = b.and_(self.active, p)
            self.finish(m, t.op)
            rest = b.and_(self.active, b.not_(p))
            go = self.llfn.append_basic_block()
            b.cbranch(b.icmp_unsigned("==", rest, i32c(0)), self.dispatch_bb, go)
            b.position_at_end(go)
            self.goto(blk.succs[0], rest)
            return
        if t.op == "trap":
            if t.guard is not None:
                p = self._guard_bits(t)
                m = b.and_(self.active, p)
                go = self.llfn.append_basic_block()
                trap = self.llfn.append_basic_block()
                b.cbranch(b.icmp_unsigned("==", m, i32c(0)), go, trap)
                b.position_at_end(trap)
                self.mc.emit_error(b, self.ctx, self.blk, L.ERR_TRAP, t.line)
                b.ret(i32c(FAILED))
                b.position_at_end(go)
                self.goto(blk.succs[0], self.active)
                return
            self.mc.emit_error(b, self.ctx, self.blk, L.ERR_TRAP, t.line)
            b.ret(i32c(FAILED))
            return
        raise UnsupportedError(f"the control instruction `{t.op}` is not supported", t.line, t.text())

    def guard_value(self, ins: ir.Instr) -> ll.Value:
        """The guard predicate: i1 when uniform, <32 x i1> when varying."""
        slot, t, varying = self.regs[ins.guard.name]
        v = self.b.load(slot)
        if ins.guard_neg:
            v = self.b.not_(v)
        return v

    def _guard_bits(self, ins: ir.Instr) -> ll.Value:
        p = self.guard_value(ins)
        if p.type == I1:
            return self.b.select(p, i32c(ALL), i32c(0))
        return self.b.bitcast(p, I32)

    def goto(self, target: int, mask: ll.Value) -> None:
        """Send `mask` lanes to block `target`, deferring them if lower blocks are pending
        (along an interleave edge the warp may step aside first: region_loops.py)."""
        if not self.interleave_goto(target, mask):
            self._goto_plain(target, mask)

    def _goto_plain(self, target: int, mask: ll.Value) -> None:
        b = self.b
        tb = self.blocks[target]
        if tb.exit_sink:
            self.finish(mask, tb.instrs[0].op)
            b.branch(self.dispatch_bb)
            return
        if target not in self.rank or not self.split:
            # a converged block has no lanes pending anywhere: jump straight there
            b.store(mask, self.active_slot)
            b.branch(self.llblocks[target])
            return
        # Lanes pending at an earlier block: let dispatch pick (the lowest runs first). Else
        # the target runs now, with the lanes pending there joining these (this is where
        # warps reconverge; the same as dispatch would pick, without going through it).
        # While a block runs, every pending block comes after it (it was the lowest), so
        # only the targets between this block and the target can hold lanes: none for a
        # back edge.
        lo = bisect.bisect_right(self.targets, self.block.index) if self.block is not None else 0
        r = self.rank[target]
        below = self._any_pending_in(lo, r)
        if below is not None:
            direct = self.llfn.append_basic_block()
            defer = self.llfn.append_basic_block()
            b.cbranch(below, defer, direct)
            b.position_at_end(defer)
            self._defer(target, mask)
            b.branch(self.dispatch_bb)
            b.position_at_end(direct)
        if r >= lo:  # lanes may wait at the target itself: they come along
            pp = b.gep(self.pend_ptr, [i64c(4 * r)], source_etype=I8)
            mask = b.or_(mask, b.load(pp, typ=I32))
            b.store(i32c(0), pp)
            w, bit = divmod(r, 64)
            bp = b.gep(self.bits_ptr, [i64c(8 * w)], source_etype=I8)
            b.store(b.and_(b.load(bp, typ=I64), i64c(~(1 << bit))), bp)
        b.store(mask, self.active_slot)
        b.branch(self.llblocks[target])

    def _any_pending_in(self, lo: int, hi: int) -> ll.Value | None:
        """i1: some target of rank lo <= r < hi has pending lanes (None: the range is empty)."""
        if hi <= lo:
            return None
        b = self.b
        acc = None
        for w in range(lo // 64, (hi - 1) // 64 + 1):
            a, z = max(lo, 64 * w) - 64 * w, min(hi, 64 * (w + 1)) - 64 * w
            maskc = ((1 << z) - 1) & ~((1 << a) - 1)
            v = b.load(b.gep(self.bits_ptr, [i64c(8 * w)], source_etype=I8), typ=I64)
            t = b.icmp_unsigned("!=", b.and_(v, i64c(maskc)), i64c(0))
            acc = t if acc is None else b.or_(acc, t)
        return acc

    def _any_pending_below(self, r: int) -> ll.Value | None:
        if r == 0:
            return None
        b = self.b
        acc = None
        for w in range(self.nwords):
            lo = 64 * w
            if lo >= r:
                break
            nbits = min(64, r - lo)
            maskc = (1 << nbits) - 1
            v = b.load(b.gep(self.bits_ptr, [i64c(8 * w)], source_etype=I8), typ=I64)
            t = b.icmp_unsigned("!=", b.and_(v, i64c(maskc)), i64c(0))
            acc = t if acc is None else b.or_(acc, t)
        return acc

    def _defer(self, target: int, mask: ll.Value) -> None:
        """Record `mask` lanes as pending at `target`."""
        b = self.b
        if self.blocks[target].exit_sink:
            self.finish(mask, self.blocks[target].instrs[0].op)
            return
        r = self.rank[target]
        p = b.gep(self.pend_ptr, [i64c(4 * r)], source_etype=I8)
        b.store(b.or_(b.load(p, typ=I32), mask), p)
        w, bit = divmod(r, 64)
        bp = b.gep(self.bits_ptr, [i64c(8 * w)], source_etype=I8)
        b.store(b.or_(b.load(bp, typ=I64), i64c(1 << bit)), bp)

    def _exits_read(self) -> bool:
        """Whether anything reads a warp's WS_EXITED (the lanes that exited) after `finish`
        writes it: a barrier some thread may reach after another of its warp exited (its
        resume), a warp collective (warp_ops.live_lanes) or a call (the callee may hold
        one), the convergence check. Region loops read nothing else of it (the block's
        runner does not), so a kernel in them without any of those leaves it unwritten: the
        exit mask of `if (!inside) return;` and of the final `ret` in every warp."""
        if self.regions is None or self.mc.check_convergence or len(self.no_exits_before) < len(self.barriers):
            return True
        for blk in self.blocks:
            for ins in blk.instrs:
                row = opcodes.TABLE.get(ins.op)
                if row is not None and row.per_lane and not row.memory and not cfgmod.is_barrier(ins):
                    return True  # (threads of a warp together, or a call)
        return False

    def finish(self, mask: ll.Value, how: str) -> None:
        """Lanes in `mask` leave: `ret` from a device function, or thread exit."""
        if how == "ret" and not self.is_kernel:
            return
        b = self.b
        if self.exits_read:
            ep = b.gep(self.ws, [i64c(L.WS_EXITED)], source_etype=I8)
            b.store(b.or_(b.load(ep, typ=I32), mask), ep)
        if not self.mc.simple_barriers:
            # (the simple protocol's rounds need none of these: see compiler._emit_runner)
            cnt = b.ctpop(mask)
            xp = b.gep(self.blk, [i64c(L.BS_EXITED)], source_etype=I8)
            b.store(b.add(b.load(xp, typ=I32), cnt), xp)
            self.mc.bump_events(b, self.blk)
            if self.mc.uses_barriers:
                b.call(self.mc.barrier_check_fn, [self.blk, i32c(-1)])

    # ---------------------------------------------------------------- barriers
    def _yield_now(self, blk: cfgmod.Block) -> None:
        """At a yield point: go on to the successor except every YIELD_PERIOD-th time."""
        b = self.b
        cp = b.gep(self.ws, [i64c(L.WS_YCOUNT)], source_etype=I8)
        cnt = b.add(b.load(cp, typ=I32), i32c(1))
        b.store(cnt, cp)
        go_on = self.llfn.append_basic_block("no_yield")
        step_aside = self.llfn.append_basic_block("yield")
        b.cbranch(b.icmp_unsigned("!=", b.and_(cnt, i32c(L.YIELD_PERIOD - 1)), i32c(0)), go_on, step_aside)
        b.position_at_end(go_on)
        self.goto(blk.succs[0], self.active)
        b.position_at_end(step_aside)

    def _emit_barrier(self, blk: cfgmod.Block, t: ir.Instr) -> None:
        b = self.b
        if t.guard is not None:
            raise UnsupportedError("a guarded barrier", t.line, t.text())
        idx = self.barriers.index(blk)
        if t.op == "yield":
            self._yield_now(blk)
        if idx not in self.general_points:
            if self.regions is not None:
                self._region_arrive(blk, t, idx)
            else:
                self._emit_simple_barrier(blk, t, idx)
            return
        if t.op == "yield":
            self._emit_yield_wait(blk, idx)
            return
        mods = t.mods
        args = list(t.args)
        is_red = "red" in mods
        dest = args.pop(0) if is_red else None
        bar_id = self._uniform_int(args[0]) if args else i32c(0)
        bar_id = b.and_(bar_id, i32c(L.MAX_BARRIERS - 1))
        count = None
        pred_bits = None
        if is_red:
            if len(args) == 3:
                count = self._uniform_int(args[1])
            pred_bits = self._pred_bits(args[-1])
        elif len(args) > 1:
            count = self._uniform_int(args[1])
        off = b.mul(b.zext(bar_id, I64), i64c(4))

        def field(base: int) -> ll.Value:
            return b.gep(self.blk, [b.add(i64c(base), off)], source_etype=I8)

        if count is not None:
            b.store(count, field(L.BS_EXPECTED))
        ap = field(L.BS_ARRIVED)
        b.store(b.add(b.load(ap, typ=I32), b.ctpop(self.active)), ap)
        if is_red:
            kind = next(m for m in mods if m in ("popc", "and", "or"))
            rp = field(L.BS_RED)
            if kind == "and":
                contrib = b.ctpop(b.and_(self.active, b.not_(pred_bits)))
            else:
                contrib = b.ctpop(b.and_(self.active, pred_bits))
            b.store(b.add(b.load(rp, typ=I32), contrib), rp)
            self.red_dest = getattr(self, "red_dest", {})
            self.red_dest[idx] = (dest, kind, t)
        wp = b.gep(self.wait_ptr, [i64c(4 * idx)], source_etype=I8)
        b.store(b.or_(b.load(wp, typ=I32), self.active), wp)
        b.store(b.load(field(L.BS_GEN), typ=I32), b.gep(self.wgen_ptr, [i64c(4 * idx)], source_etype=I8))
        self._save_waiting_registers(idx)
        self.mc.bump_events(b, self.blk)
        b.call(self.mc.barrier_check_fn, [self.blk, bar_id])
        b.branch(self.dispatch_bb)
        self.barrier_ids = getattr(self, "barrier_ids", {})
        self.barrier_ids[idx] = args[0] if args else ir.Imm(0)

    def _save_waiting_registers(self, idx: int) -> None:
        """Store the registers live at wait point `idx` into the warp state, for the lanes
        that wait there (the other lanes keep what they saved at their own wait)."""
        b = self.b
        amask = self.mask_vec(self.active)
        for name, roff in self.saved_regs[idx]:
            slot, rt, varying = self.regs[name]
            sp = b.gep(self.ws, [i64c(roff)], source_etype=I8)
            v = b.load(slot)
            if varying:
                v = b.select(amask, v, b.load(sp, typ=vec(rt)))
            b.store(v, sp)

    def _emit_yield_wait(self, blk: cfgmod.Block, idx: int) -> None:
        """Lanes at a yield wait until the warp function is next entered (general protocol)."""
        b = self.b
        wp = b.gep(self.wait_ptr, [i64c(4 * idx)], source_etype=I8)
        b.store(b.or_(b.load(wp, typ=I32), self.active), wp)
        epoch = b.load(b.gep(self.ws, [i64c(L.WS_EPOCH)], source_etype=I8), typ=I32)
        b.store(epoch, b.gep(self.wgen_ptr, [i64c(4 * idx)], source_etype=I8))
        self._save_waiting_registers(idx)
        # Lanes pending at earlier blocks may run now; lanes pending at later ones (past the
        # loop) must not run ahead of the waiting lanes: the warp suspends instead, so the
        # blocks after the loop stay converged (the waiting lanes come back first).
        cont = blk.succs[0]
        below = self._any_pending_below(self.rank[cont]) if cont in self.rank else None
        if below is None:
            b.branch(self.yield_suspend_bb)
        else:
            b.cbranch(below, self.dispatch_bb, self.yield_suspend_bb)

    def _emit_simple_barrier(self, blk: cfgmod.Block, t: ir.Instr, idx: int) -> None:
        """A barrier in converged code: every live lane arrives at once, so the warp just
        saves the registers the continuation needs and returns; the block runner calls it
        again when all warps have arrived (a round), and it resumes right after."""
        b = self.b
        self._arrive_simple(t, idx)
        b.store(i32c(L.WS_SIMPLE_BASE + idx), b.gep(self.ws, [i64c(L.WS_RESUME)], source_etype=I8))
        b.ret(i32c(YIELDED if t.op == "yield" else SUSPENDED))
        saved_block = self.block
        b.position_at_end(self._simple_resume[idx])
        self._resume_simple(blk, t, idx)
        b.branch(self.llblocks[blk.succs[0]])
        self.block = saved_block

    def _arrive_simple(self, t: ir.Instr, idx: int) -> None:
        """At converged barrier `idx`: add the warp's bar.red contribution and save what the
        continuation reads (passes/barrier_state.py) into the warp's state."""
        b = self.b
        if "red" in t.mods:
            args = list(t.args)
            kind = next(m for m in t.mods if m in ("popc", "and", "or"))
            pred_bits = self._pred_bits(args[-1])
            if kind == "and":
                contrib = b.ctpop(b.and_(self.active, b.not_(pred_bits)))
            else:
                contrib = b.ctpop(b.and_(self.active, pred_bits))
            rp = b.gep(self.blk, [i64c(L.BS_RED)], source_etype=I8)
            b.store(b.add(b.load(rp, typ=I32), contrib), rp)
        self._save_slots(self.bstate.save[self.bstate_index[idx]])

    def _save_slots(self, names: list[str]) -> None:
        """Store registers into their slots of the warp's state (passes/barrier_state.py)."""
        b = self.b
        for name in names:
            for k, (slot, _rt) in enumerate(self._saved_slots(name)):
                if slot is not None:
                    b.store(b.load(slot), b.gep(self.ws, [i64c(self.slot_off[name] + 8 * k)], source_etype=I8))

    def _resume_simple(self, blk: cfgmod.Block, t: ir.Instr, idx: int) -> None:
        """After converged barrier `idx` completed (the builder where the warp resumes): its
        registers back, every live lane active, bar.red's result written."""
        b = self.b
        for name in self.bstate.load[self.bstate_index[idx]]:
            for k, (slot, rt) in enumerate(self._saved_slots(name)):
                if slot is not None:
                    p = b.gep(self.ws, [i64c(self.slot_off[name] + 8 * k)], source_etype=I8)
                    b.store(b.load(p, typ=rt), slot)
        if idx in self.no_exits_before:
            active = self.live_mask
        else:
            ex = b.load(b.gep(self.ws, [i64c(L.WS_EXITED)], source_etype=I8), typ=I32)
            active = b.and_(self.live_mask, b.not_(ex))
        b.store(active, self.active_slot)
        # recompute what is cheaper to recompute than to keep (see passes/barrier_state.py)
        self.block = blk
        self.active = active
        self.split = False
        self.version = None
        self._mask_cache = {}
        for ins in self.bstate.remat[self.bstate_index[idx]]:
            self._emit_instr(ins)
        if "red" in t.mods:
            dest = t.args[0]
            kind = next(m for m in t.mods if m in ("popc", "and", "or"))
            total = b.load(b.gep(self.blk, [i64c(L.BS_REDOUT)], source_etype=I8), typ=I32)
            if kind == "popc":
                val, ptype = total, "u32"
            elif kind == "and":
                val, ptype = b.icmp_unsigned("==", total, i32c(0)), "pred"
            else:
                val, ptype = b.icmp_unsigned("!=", total, i32c(0)), "pred"
            self.ins = t
            self.split = False
            self.active = active
            self._mask_cache = {}
            self.vec = isinstance(dest, ir.Reg) and dest.name in self.div.varying
            self.write(dest, ptype, self.splat(val) if self.vec else val)

    def _saved_slots(self, name: str) -> list[tuple[ll.Value, ll.Type]]:
        """The stack slots of a register that a converged barrier saves, with their types."""
        if name in self.forms:
            return self.form_leaf_slots(name)
        slot, rt, varying = self.regs[name]
        return [(slot, vec(rt) if varying else rt)]

    def _register_value(self, name: str) -> ll.Value:
        """A register's bits as held: its lanes from a lane form, the constant a zero
        register holds (write: `mov %f2, %f1` after `mov %f1, 0` is zero too), else its slot."""
        slot, t, varying = self.regs[name]
        if name in self.forms:
            return self.form_read(name)
        if name in self._zero_regs:
            return ll.Constant(vec(t), None) if varying else ll.Constant(t, 0)
        return self.b.load(slot)

    def _uniform_int(self, op) -> ll.Value:
        """An integer operand that must be the same for the warp (barrier ids and counts)."""
        b = self.b
        if isinstance(op, ir.Imm):
            return i32c(op.value)
        if isinstance(op, ir.Reg):
            varying = self.regs[op.name][2]
            v = self._register_value(op.name)
            if varying:
                first = b.cttz(self.active, ll.Constant(I1, 0))
                v = b.extract_element(v, first)
            return self._resize(v, I32, False)
        raise UnsupportedError("a barrier operand that is not a register or an immediate", self.ins.line)

    def _pred_bits(self, op) -> ll.Value:
        b = self.b
        neg = isinstance(op, ir.Not)
        reg = op.reg if neg else op
        if isinstance(reg, ir.Imm):
            v = i32c(ALL if reg.value else 0)
        else:
            slot, t, varying = self.regs[reg.name]
            v = b.load(slot)
            v = b.bitcast(v, I32) if varying else b.select(v, i32c(ALL), i32c(0))
        return b.not_(v) if neg else v

    # ---------------------------------------------------------------- dispatch
    def _emit_dispatch(self) -> None:
        b = self.b
        b.position_at_end(self.dispatch_bb)
        none_bb = self.release_bb if self.is_kernel else self.done_bb
        if not self.targets:
            b.branch(none_bb)
        else:
            for w in range(self.nwords):
                bp = b.gep(self.bits_ptr, [i64c(8 * w)], source_etype=I8)
                v = b.load(bp, typ=I64)
                found = self.llfn.append_basic_block(f"found{w}")
                nxt = self.llfn.append_basic_block() if w + 1 < self.nwords else none_bb
                b.cbranch(b.icmp_unsigned("!=", v, i64c(0)), found, nxt)
                b.position_at_end(found)
                bit = b.cttz(v, ll.Constant(I1, 1))
                b.store(b.and_(v, b.sub(v, i64c(1))), bp)
                idx = b.add(b.trunc(bit, I32), i32c(64 * w))
                # one case per target, each taking its own pending mask at a constant offset
                # (so that stack-slot masks stay in registers)
                ranks = [r for r in range(len(self.targets)) if 64 * w <= r < 64 * (w + 1)]
                cases = []
                for r in ranks:
                    bb = self.llfn.append_basic_block(f"take{r}")
                    cases.append((r, bb))
                sw = b.switch(idx, cases[0][1])
                for r, bb in cases[1:]:
                    sw.add_case(i32c(r), bb)
                for r, bb in cases:
                    b.position_at_end(bb)
                    pp = b.gep(self.pend_ptr, [i64c(4 * r)], source_etype=I8)
                    b.store(b.load(pp, typ=I32), self.active_slot)
                    b.store(i32c(0), pp)
                    b.branch(self.llblocks[self.targets[r]])
                if nxt is not none_bb:
                    b.position_at_end(nxt)
        if self.is_kernel:
            self._emit_release()

    def _emit_release(self) -> None:
        """Lanes whose barrier completed become pending at its continuation; else suspend."""
        b = self.b
        b.position_at_end(self.release_bb)
        if not self.general_points:
            b.branch(self.done_bb)  # converged barriers return at once: nobody waits here
            return
        if self.pending_save:
            # lanes left pending when the warp stepped aside at a yield get their registers back
            pp = b.gep(self.ws, [i64c(self.pending_mask_off)], source_etype=I8)
            pm = b.load(pp, typ=I32)
            with b.if_then(b.icmp_unsigned("!=", pm, i32c(0))):
                pmv = self.mask_vec(pm)
                for name, roff in self.pending_save:
                    slot, rt, varying = self.regs[name]
                    v = b.load(b.gep(self.ws, [i64c(roff)], source_etype=I8), typ=vec(rt) if varying else rt)
                    if varying:
                        v = b.select(pmv, v, b.load(slot))
                    b.store(v, slot)
                b.store(i32c(0), pp)
        any_rel = ll.Constant(I1, 0)
        any_wait = ll.Constant(I1, 0)
        for idx in self.general_points:
            blk = self.barriers[idx]
            wp = b.gep(self.wait_ptr, [i64c(4 * idx)], source_etype=I8)
            waiting = b.load(wp, typ=I32)
            bar_op = self.barrier_ids.get(idx, ir.Imm(0)) if hasattr(self, "barrier_ids") else ir.Imm(0)
            gen_saved = b.load(b.gep(self.wgen_ptr, [i64c(4 * idx)], source_etype=I8), typ=I32)
            if blk.term.op == "yield":
                gen_now = b.load(b.gep(self.ws, [i64c(L.WS_EPOCH)], source_etype=I8), typ=I32)
                bid = i32c(0)
            else:
                # the barrier id: constant, or re-read from the (restored) register
                self.active = b.select(b.icmp_unsigned("!=", waiting, i32c(0)), waiting, i32c(1))
                bid = b.and_(self._uniform_int(bar_op), i32c(L.MAX_BARRIERS - 1))
                gp = b.gep(self.blk, [b.add(i64c(L.BS_GEN), b.mul(b.zext(bid, I64), i64c(4)))],
                           source_etype=I8)
                gen_now = b.load(gp, typ=I32)
            is_waiting = b.icmp_unsigned("!=", waiting, i32c(0))
            rel = b.and_(is_waiting, b.icmp_unsigned("!=", gen_now, gen_saved))
            do = self.llfn.append_basic_block()
            after = self.llfn.append_basic_block()
            b.cbranch(rel, do, after)
            b.position_at_end(do)
            b.store(i32c(0), wp)
            cont = blk.succs[0]
            wmask = self.mask_vec(waiting)
            for name, roff in self.saved_regs[idx]:
                slot, rt, varying = self.regs[name]
                sp = b.gep(self.ws, [i64c(roff)], source_etype=I8)
                v = b.load(sp, typ=vec(rt) if varying else rt)
                if varying:
                    v = b.select(wmask, v, b.load(slot))
                b.store(v, slot)
            if hasattr(self, "red_dest") and idx in self.red_dest:
                dest, kind, t = self.red_dest[idx]
                rp = b.gep(self.blk, [b.add(i64c(L.BS_REDOUT), b.mul(b.zext(bid, I64), i64c(4)))], source_etype=I8)
                total = b.load(rp, typ=I32)
                if kind == "popc":
                    val = total
                    ptype = "u32"
                elif kind == "and":
                    val = b.icmp_unsigned("==", total, i32c(0))
                    ptype = "pred"
                else:
                    val = b.icmp_unsigned("!=", total, i32c(0))
                    ptype = "pred"
                self.ins = t
                self.split = True
                self.active = waiting
                self._mask_cache = {}
                self.vec = dest.name in self.div.varying if isinstance(dest, ir.Reg) else False
                self.write(dest, ptype, self.splat(val) if self.vec else val)
            if cont in self.rank and not self.blocks[cont].exit_sink:
                self._defer(cont, waiting)
            b.branch(after)
            b.position_at_end(after)
            any_rel = b.or_(any_rel, rel)
            any_wait = b.or_(any_wait, b.and_(is_waiting, b.not_(rel)))
        suspend = self.llfn.append_basic_block("suspend")
        chk = self.llfn.append_basic_block()
        b.cbranch(any_rel, self.dispatch_bb, chk)
        b.position_at_end(chk)
        b.cbranch(any_wait, suspend, self.done_bb)
        b.position_at_end(suspend)
        b.store(i32c(1), b.gep(self.ws, [i64c(L.WS_RESUME)], source_etype=I8))
        yielding = ll.Constant(I1, 0)
        for idx in self.general_points:
            if self.barriers[idx].term.op == "yield":
                w = b.load(b.gep(self.wait_ptr, [i64c(4 * idx)], source_etype=I8), typ=I32)
                yielding = b.or_(yielding, b.icmp_unsigned("!=", w, i32c(0)))
        b.ret(b.select(yielding, i32c(YIELDED), i32c(SUSPENDED)))

    def _emit_done(self) -> None:
        b = self.b
        if self.yield_suspend_bb is not None:
            b.position_at_end(self.yield_suspend_bb)
            if self.pending_save:
                pm = i32c(0)
                for r in range(len(self.targets)):
                    pm = b.or_(pm, b.load(b.gep(self.pend_ptr, [i64c(4 * r)], source_etype=I8), typ=I32))
                b.store(pm, b.gep(self.ws, [i64c(self.pending_mask_off)], source_etype=I8))
                pmv = self.mask_vec(pm)
                for name, roff in self.pending_save:
                    slot, rt, varying = self.regs[name]
                    sp = b.gep(self.ws, [i64c(roff)], source_etype=I8)
                    v = b.load(slot)
                    if varying:
                        v = b.select(pmv, v, b.load(sp, typ=vec(rt)))
                    b.store(v, sp)
            b.store(i32c(1), b.gep(self.ws, [i64c(L.WS_RESUME)], source_etype=I8))
            b.ret(i32c(YIELDED))
        b.position_at_end(self.done_bb)
        if self.regions is not None:
            self._region_done()
            return
        if self.is_kernel:
            b.store(i32c(2), b.gep(self.ws, [i64c(L.WS_RESUME)], source_etype=I8))
        elif self.frame_size:
            sp_ptr = b.gep(self.ws, [i64c(L.WS_SP)], source_etype=I8)
            b.store(self.frame_base, sp_ptr)
        b.ret(i32c(DONE))

    def dummy_slot(self) -> ll.Value:
        """A harmless stack location to read when a load must not touch its real address."""
        if getattr(self, "_dummy", None) is None:
            self._dummy = self.entry_alloca(ll.ArrayType(I64, 4), "dummy")
            self._dummy.type = PTR
        return self._dummy

    def dummy_run(self) -> ll.Value:
        """Stack space for a run's masked load or store in which no lane executes: its
        real address may be garbage (a lane that skips a predicated load computed it), and
        a masked access whose masked-off lanes touch an unmapped page takes the CPU a
        microcode assist of hundreds of cycles even when no lane is enabled."""
        if getattr(self, "_dummy_run", None) is None:
            self._dummy_run = self.entry_alloca(ll.ArrayType(I64, W), "dummy_run")
            self._dummy_run.align = 64
            self._dummy_run.type = PTR
        return self._dummy_run

    def entry_alloca(self, t: ll.Type, name: str = "") -> ll.Value:
        """A stack slot allocated once in the entry block (never inside a loop)."""
        eb = ll.IRBuilder(self.llfn.entry_basic_block)
        eb.position_at_start(self.llfn.entry_basic_block)
        return eb.alloca(t, name=name)

    # ================================================================ the lowering API
    def error(self, message: str) -> UnsupportedError:
        ins = self.ins
        return UnsupportedError(message, ins.line if ins else 0, ins.text() if ins else "")

    def read(self, op, ptype: str) -> ll.Value:
        """Operand `op` as a value of PTX type `ptype` (float types as LLVM floats)."""
        return self.to_value(self.read_bits(op, ptype), ptype)

    def read_bits(self, op, ptype: str) -> ll.Value:
        """Operand `op` as the integer bit container of `ptype`, in the current mode."""
        b = self.b
        want = bits_type(ptype)
        if isinstance(op, ir.Reg):
            if op.name not in self.regs:
                raise self.error(f"the register {op.name} is not declared")
            varying = self.regs[op.name][2]
            if varying and not self.vec:
                raise self.error(f"internal: varying register {op.name} read in uniform mode")
            v = self._register_value(op.name)
            if self.vec and not varying:
                v = self.splat(v)
            if op.name in self._nan_deferred and not self._blind:
                v = canon_nan(self, self.to_value(v, "f32"), "f32")  # (passes/nan_payloads.py)
            return self._resize(v, want, ptype[0] == "s")
        if isinstance(op, ir.Imm):
            return self.const_int(want.width, op.value)
        if isinstance(op, ir.FImm):
            return self.const_int(want.width, float_imm_bits(op, ptype))
        if isinstance(op, ir.Not):
            v = self.read_bits(op.reg, "pred")
            return b.not_(v)
        if isinstance(op, ir.Special):
            return self._resize(self.special(op.name), want, False)
        if isinstance(op, (ir.Sym, ir.SymAddr)):
            return self._resize(self.symbol_value(op), want, False)
        raise self.error(f"an operand of an unsupported kind ({ir.format_operand(op)})")

    def write(self, op, ptype: str, value: ll.Value, signed: bool | None = None) -> None:
        """Store `value` (value or bits type of `ptype`) into destination operand `op`.

        Honours the guard predicate and, in split blocks, keeps inactive lanes' values.
        """
        if isinstance(op, ir.Sink):
            return
        if not isinstance(op, ir.Reg):
            raise self.error(f"a destination that is not a register ({ir.format_operand(op)})")
        b = self.b
        if op.name in self.forms:
            raise self.error(f"internal: {op.name} has a lane form but is written as lanes")
        slot, t, varying = self.regs[op.name]
        v = self.to_bits(value, ptype)
        if signed is None:
            signed = ptype[0] == "s"
        v = self._resize(v, t, signed)
        if varying and not self.vec:
            v = self.splat(v)
        elif self.vec and not varying:
            raise self.error(f"internal: uniform register {op.name} written in vector mode")
        ins = self.ins
        if varying:
            m = None
            guarded = ins is not None and ins.guard is not None
            if guarded:
                m = self.exec_mask_vec()
                if op.name in self._zero_regs and getattr(value, "cuport_zero_off", False):
                    m = None  # (the lanes that do not load are zero, as the register was)
            elif self.split and (self.div.blend is None or op.name in self.div.blend):
                # lanes waiting elsewhere keep their value (only where it is live there:
                # passes/liveness.py)
                m = self.active_vec()
            if m is not None:
                v = self._blend(m, v, b.load(slot), guarded)
        elif ins is not None and ins.guard is not None:
            g = self.guard_value(ins)
            if g.type != I1:
                raise self.error("internal: uniform register written under a varying guard")
            v = b.select(g, v, b.load(slot))
        b.store(v, slot)
        if ins is not None and ins.guard is None and _is_zero(v):
            self._zero_regs.add(op.name)
        else:
            self._zero_regs.discard(op.name)

    def _blend(self, m: ll.Value, new: ll.Value, old: ll.Value, executing: bool = False) -> ll.Value:
        """`new` in the lanes of mask `m`, `old` elsewhere; lane by lane where only a few lanes
        can run the instruction (passes/lane_bounds.py), so that LLVM sees each lane's value
        as a scalar (a halo's load, stored by one or two lanes). `executing`: m is the exec
        mask, whose lanes _lane_executes gives as scalars."""
        b = self.b
        bound = self.lane_bounds.lanes(self.block.index, self.ins) if self.block is not None else ALL
        lanes = [i for i in range(W) if bound >> i & 1]
        if not 0 < len(lanes) <= SPARSE_LANES:
            src = new.operands[0] if getattr(new, "opname", None) == "bitcast" else None
            if src is not None and isinstance(src.type, ll.VectorType) and isinstance(
                    src.type.element, (ll.HalfType, ll.FloatType, ll.DoubleType)):
                # a float result blended as floats: x86 makes select(m, a + b, a) one masked
                # add, where the bits' select was an add and a masked move
                return b.bitcast(b.select(m, src, b.bitcast(old, src.type)), new.type)
            return b.select(m, new, old)
        out = old
        for lane in lanes:
            i = i32c(lane)
            on = self._lane_executes(lane) if executing else b.extract_element(m, i)
            out = b.insert_element(out, b.select(on, b.extract_element(new, i), b.extract_element(old, i)), i)
        return out

    def active_vec(self) -> ll.Value:
        if "active" not in self._mask_cache:
            self._mask_cache["active"] = self.mask_vec(self.active)
        return self._mask_cache["active"]

    def exec_mask(self) -> ll.Value:
        """i32 mask of the lanes that execute the current instruction (active and guard)."""
        if "exec" not in self._mask_cache:
            m = self.active
            if self.ins is not None and self.ins.guard is not None:
                m = self.b.and_(m, self._guard_bits(self.ins))
            self._mask_cache["exec"] = m
        return self._mask_cache["exec"]

    def exec_mask_vec(self) -> ll.Value:
        return self.mask_vec(self.exec_mask())

    def mask_vec(self, m: ll.Value, lo: int = 0, n: int = W) -> ll.Value:
        """The <n x i1> of lanes lo..lo+n-1 of an i32 lane mask. Where `m` was made of vector
        masks (a guard's bitcast, and/or/xor of such, constants) the same operations on the
        vectors; other i32 values (a mask kept in memory, a phi) are a bitcast on AVX-512 (one
        kmov), and elsewhere their lanes' bits tested in a splat: AVX2 code built a
        bitcast's vector lane by lane (about 100 instructions for the two masks of a 32-lane
        access), and packed and unpacked the mask of each run cut from the whole."""
        b = self.b
        if isinstance(m, ll.Constant) and isinstance(m.constant, int):
            return ll.Constant(vec(I1, n), [(m.constant >> i) & 1 for i in range(lo, lo + n)])
        op = getattr(m, "opname", None)
        if op == "bitcast" and m.operands[0].type == vec(I1):
            return self._lanes_slice(m.operands[0], lo, n)
        if op in ("and", "or", "xor") and len(m.operands) == 2:
            x, y = (self.mask_vec(o, lo, n) for o in m.operands)
            return {"and": b.and_, "or": b.or_, "xor": b.xor}[op](x, y)
        if jit.mask_registers():
            return self._lanes_slice(b.bitcast(m, vec(I1)), lo, n)
        bits = ll.Constant(vec(I32, n), [1 << i if i < 31 else -(1 << 31) for i in range(lo, lo + n)])
        return b.icmp_unsigned("!=", b.and_(self.splat(m, n), bits), ll.Constant(vec(I32, n), None))

    def _lanes_slice(self, v: ll.Value, lo: int, n: int) -> ll.Value:
        if lo == 0 and n == W:
            return v
        return self.b.shuffle_vector(v, ll.Constant(v.type, None),
                                     ll.Constant(vec(I32, n), list(range(lo, lo + n))))

    def intrinsic(self, name: str, args: list[ll.Value], overload: list[ll.Type] | None = None, ret: ll.Type | None = None) -> ll.Value:
        """Call an LLVM intrinsic; `overload` types give the mangled suffix (default: first arg's)."""
        if overload is None:
            overload = [args[0].type]
        full = name + "".join("." + mangle(t) for t in overload)
        rt = ret if ret is not None else args[0].type
        fn = self.mc.declare(full, rt, [a.type for a in args])
        return self.b.call(fn, args)

    # ---------------------------------------------------------------- special registers
    def special(self, name: str) -> ll.Value:
        b = self.b
        mc = self.mc
        nx, ny, nz = mc.block
        if name in ("%tid.x", "%tid.y", "%tid.z", "%laneid"):
            if name == "%laneid":
                return self.lane if self.vec else i32c(0)
            if self.vec:
                linear = b.add(self.splat(b.mul(self.warp, i32c(W))), self.lane)
            else:
                linear = b.mul(self.warp, i32c(W))
            if name == "%tid.x":
                return b.urem(linear, self._c32(nx)) if nx != 1 else self._c32(0)
            if name == "%tid.y":
                return b.urem(b.udiv(linear, self._c32(nx)), self._c32(ny)) if ny != 1 else self._c32(0)
            return b.udiv(linear, self._c32(nx * ny)) if nz != 1 else self._c32(0)
        if name.startswith("%ntid."):
            return self._c32({"x": nx, "y": ny, "z": nz}[name[-1]])
        if name.startswith("%ctaid."):
            k = "xyz".index(name[-1])
            return self._v(self._at_entry(name, lambda eb: eb.load(
                eb.gep(self.blk, [i64c(L.BS_CTAID + 4 * k)], source_etype=I8), typ=I32)))
        if name.startswith("%nctaid."):
            k = "xyz".index(name[-1])
            off = L.LaunchCtx.grid_x.offset + 4 * k
            return self._v(b.load(b.gep(self.ctx, [i64c(off)], source_etype=I8), typ=I32))
        if name.startswith("%lanemask_"):
            kind = name[len("%lanemask_"):]
            one = ll.Constant(vec(I32), [1] * W)
            bit = b.shl(one, self.lane)
            if kind == "eq":
                return bit
            if kind == "lt":
                return b.sub(bit, one)
            if kind == "le":
                return b.or_(bit, b.sub(bit, one))
            if kind == "gt":
                return b.not_(b.or_(bit, b.sub(bit, one)))
            if kind == "ge":
                return b.not_(b.sub(bit, one))
        if name == "%warpid":
            return self._v(self.warp)
        if name == "%nwarpid":
            return self._c32(mc.nwarps)
        if name in ("%clock", "%clock_hi", "%clock64"):
            t = self.intrinsic("llvm.readcyclecounter", [], overload=[], ret=I64)
            if name == "%clock":
                return self._v(b.trunc(t, I32))
            if name == "%clock_hi":
                return self._v(b.trunc(b.lshr(t, i64c(32)), I32))
            return self._v(t)
        if name in ("%globaltimer", "%globaltimer_lo", "%globaltimer_hi"):
            t = b.call(mc.globaltimer_fn, [])
            if name == "%globaltimer_lo":
                return self._v(b.trunc(t, I32))
            if name == "%globaltimer_hi":
                return self._v(b.trunc(b.lshr(t, i64c(32)), I32))
            return self._v(t)
        if name == "%dynamic_smem_size":
            off = L.LaunchCtx.dyn_smem.offset
            return self._v(b.load(b.gep(self.ctx, [i64c(off)], source_etype=I8), typ=I32))
        if name in ("%total_smem_size", "%aggr_smem_size"):
            off = L.LaunchCtx.dyn_smem.offset
            dyn = b.load(b.gep(self.ctx, [i64c(off)], source_etype=I8), typ=I32)
            return self._v(b.add(dyn, i32c(mc.static_shared)))
        if name == "%smid":
            return self._c32(0)
        if name == "%nsmid":
            return self._c32(mc.nsm)
        if name == "%gridid":
            return self._v(i64c(0))
        if name in ("%envreg1", "%envreg2"):  # the cooperative launch's grid workspace
            off = L.LaunchCtx.grid_workspace.offset
            ws = b.load(b.gep(self.ctx, [i64c(off)], source_etype=I8), typ=I64)
            if name == "%envreg1":
                ws = b.lshr(ws, i64c(32))
            return self._v(b.trunc(ws, I32))
        if name.startswith("%envreg"):
            return self._c32(0)
        alias = ONE_BLOCK_CLUSTER.get(name)
        if alias is not None:
            return self.special(alias) if isinstance(alias, str) else self._c32(alias)
        raise self.error(f"the special register {name} is not supported")

    def _c32(self, v: int) -> ll.Value:
        return self.const_int(32, v)

    def _v(self, v: ll.Value) -> ll.Value:
        return self.splat(v) if self.vec else v

    # ---------------------------------------------------------------- symbols and memory
    def space_of(self, ins: ir.Instr) -> str:
        return space_of(ins)

    # ---------------------------------------------------------------- families' hooks (isa/api.py)
    @property
    def module(self) -> ll.Module:
        return self.mc.llmod

    @property
    def ptx(self) -> ir.Module:
        return self.mc.ptx

    def is_kernel_param(self, name: str) -> bool:
        return self.is_kernel and name in self.mc.kernel_param_offsets

    def load_elements(self, acc, offsets: list[ll.Value] | None = None, runs: int = 0) -> list[ll.Value]:
        base = acc.mem.base
        if (acc.space == "param" and offsets is None and self.ins.guard is None and self.is_kernel
                and isinstance(base, ir.Sym) and base.name in self.mc.kernel_param_offsets):
            return [self._kernel_param(self.mc.kernel_param_offsets[base.name] + acc.mem.offset + i * acc.size,
                                       bits_type(acc.t)) for i in range(len(acc.items))]
        return memory_ops.load_elements(self, acc, offsets, runs)

    def _at_entry(self, key, make: Callable[[ll.IRBuilder], ll.Value]) -> ll.Value:
        """A value of the launch or the block (a kernel parameter, %ctaid) computed once, in
        the function's entry block: region loops and code after barriers then use it without
        reloading it for every warp through pointers that LLVM cannot tell from the
        kernel's stores."""
        cache = self.__dict__.setdefault("_entry_values", {})
        v = cache.get(key)
        if v is None:
            eb = ll.IRBuilder(self.llfn.entry_basic_block)
            eb.position_at_start(self.llfn.entry_basic_block)
            v = cache[key] = make(eb)
        return v

    def _kernel_param(self, off: int, t: ll.Type) -> ll.Value:
        """The kernel parameter bits at byte `off` of the parameter buffer (read-only for
        the launch), in the current mode."""
        def make(eb: ll.IRBuilder) -> ll.Value:
            pbase = eb.load(eb.gep(self.ctx, [i64c(0)], source_etype=I8), typ=PTR)
            return eb.load(eb.gep(pbase, [i64c(off)], source_etype=I8), typ=t)

        v = self._at_entry(("param", off, str(t)), make)
        return self.splat(v) if self.vec else v

    def store_elements(self, acc, vals: list[ll.Value], offsets: list[ll.Value] | None = None,
                       runs: int = 0) -> None:
        memory_ops.store_elements(self, acc, vals, offsets, runs)

    def in_space(self, space: str, a: ll.Value) -> ll.Value:
        return memory_ops.in_space(self, space, a)

    def cvta(self, space: str, a: ll.Value, to_space: bool) -> ll.Value:
        return memory_ops.cvta(self, space, a, to_space)

    def atomic(self, a) -> ll.Value | None:
        return atomic_ops.atomic(self, a)

    def copy_bytes(self, dst: ir.Mem, dst_space: str, src: ir.Mem, src_space: str,
                   size: int | ll.Value, count: ll.Value | None = None) -> None:
        async_ops.copy_bytes(self, dst, dst_space, src, src_space, size, count)

    def sync_word_store(self, mem: ir.Mem, space: str, value: ll.Value) -> None:
        async_ops.sync_word_store(self, mem, space, value)

    def sync_word_load(self, mem: ir.Mem, space: str) -> ll.Value:
        return async_ops.sync_word_load(self, mem, space)

    def sync_word_update(self, mem: ir.Mem, space: str, args: list[ll.Value], change,
                         together: bool = False) -> tuple[ll.Value, ll.Value]:
        return async_ops.sync_word_update(self, mem, space, args, change, together)

    def directed_f64(self, op: str, args: list[ll.Value], mode: str) -> ll.Value:
        return rounding.strict(self, op, args, mode)

    def symbol_value(self, op) -> ll.Value:
        """The value of a symbol used as an operand: an address (in its own state space)."""
        name = op.name
        offset = getattr(op, "offset", 0)
        b = self.b
        mc = self.mc
        if name in self.local_off:
            v = i64c(self.local_off[name] + offset)
            v = b.add(b.zext(self.frame_base, I64), v)
            return self._v(v)
        if name in mc.shared_offsets:
            return self._v(i64c(mc.shared_offsets[name] + offset))
        if name in mc.global_vars:
            v = b.add(b.ptrtoint(mc.global_vars[name], I64), i64c(offset))
            return self._v(v)
        if self.is_kernel and name in mc.kernel_param_offsets:
            base = b.load(b.gep(self.ctx, [i64c(0)], source_etype=I8), typ=PTR)
            v = b.add(b.ptrtoint(base, I64), i64c(mc.kernel_param_offsets[name] + offset))
            return self._v(v)
        if name in mc.ptx.functions:
            return self._v(i64c(function_token(mc.ptx, name) + offset))
        if name in self.param_slots:
            raise self.error(f"taking the address of the call parameter {name}")
        raise self.error(f"the symbol {name} is not declared")

    def address(self, mem: ir.Mem, space: str, elem_size: int = 0) -> ll.Value:
        """Host address(es) of a memory operand: a scalar ptr in uniform mode, <32 x ptr>
        otherwise. With `elem_size` (plain loads and stores of that size) the result may be
        FormPtrs (lane_forms.py), which em.load/em.store and offset_ptrs take."""
        b = self.b
        base = mem.base
        if elem_size and self.vec and self.forms:
            fp = self.form_address(mem, space, elem_size)
            if fp is not None:
                return fp
        if space == "param":
            if isinstance(base, ir.Sym) and base.name in self.param_slots:
                return self._param_address(self.param_slots[base.name], mem.offset)
            if isinstance(base, ir.Sym) and self.is_kernel and base.name in self.mc.kernel_param_offsets:
                pbase = b.load(b.gep(self.ctx, [i64c(0)], source_etype=I8), typ=PTR)
                p = b.gep(pbase, [i64c(self.mc.kernel_param_offsets[base.name] + mem.offset)], source_etype=I8)
                return self._vp(p)
            # a register holding a kernel-parameter address: a host address
            space = "global"
        pattern = None
        uniform_base = space != "local" and (
            not isinstance(base, ir.Reg) or base.name not in self.div.varying
        )
        if self.vec and uniform_base:
            # the same address for every lane: compute it once, as a scalar
            saved, self.vec = self.vec, False
            scalar = self.address(mem, space)
            self.vec = saved
            ptrs = self.splat(scalar)
            ptrs.cuport_scalar = scalar
            return ptrs
        if isinstance(base, ir.Reg):
            if self.vec and space != "local":
                pattern = self.shapes.get(base.name)
                seg = self._fast_segments(base.name, pattern)
                if seg is not None:
                    return self._segment_pointers(base, mem.offset, space, pattern, seg)
            a = self.read_bits(base, "u64")
            if mem.offset:
                a = b.add(a, self.const_int(64, mem.offset))
        elif isinstance(base, ir.Sym):
            a = self.read_bits(ir.SymAddr(base.name, mem.offset), "u64")
        else:
            a = self.const_int(64, mem.offset)
        ptrs = self.space_to_host(a, space)
        if isinstance(ptrs.type, ll.VectorType) and pattern is not None:
            ptrs.cuport_pattern = pattern
            ptrs.cuport_base = base.name if isinstance(base, ir.Reg) else None
        return ptrs

    def _fast_segments(self, base: str, shape) -> tuple[str, int] | None:
        """In the vector version of a versioned block: the checked pattern of `base`, if any."""
        if self.version is None or self.version[0] != "fast" or shape is None:
            return None
        for key in self.version[1]:
            if key[0] == base:
                return key[1], key[2]
        return None

    def _segment_pointers(self, base: ir.Reg, offset: int, space: str, shape, seg) -> SegPtrs:
        """Scalar addresses of the first lane of each run (the block checked the pattern)."""
        b = self.b
        kind, n = seg
        v = self.read_bits(base, "u64")
        ptrs = []
        for j in range(W // n):
            a = b.extract_element(v, i32c(j * n))
            saved, self.vec = self.vec, False
            if offset and space == "shared":
                # the run's first lane may be one that does not execute, whose address
                # (base + offset) leaves the 32-bit window and wraps: offset after the
                # window, so that the run's other lanes still get theirs
                p = b.gep(self.space_to_host(a, space), [i64c(offset)], source_etype=I8)
            else:
                p = self.space_to_host(b.add(a, i64c(offset)) if offset else a, space)
            ptrs.append(p)
            self.vec = saved
        return SegPtrs(kind, n, ptrs, base.name, shape)

    def offset_ptrs(self, ptrs, offset: int):
        """`ptrs + offset` bytes, keeping the lane pattern of the address (vector ld/st elements)."""
        if offset == 0:
            return ptrs
        if isinstance(ptrs, FormPtrs):
            return self.form_offset(ptrs, offset)
        if isinstance(ptrs, SegPtrs):
            return SegPtrs(ptrs.kind, ptrs.seg, [self.b.gep(p, [i64c(offset)], source_etype=I8) for p in ptrs.ptrs],
                           ptrs.base, ptrs.shape)
        scalar = getattr(ptrs, "cuport_scalar", None)
        out = self.b.gep(ptrs, [i64c(offset)], source_etype=I8)
        if scalar is not None:
            out.cuport_scalar = self.b.gep(scalar, [i64c(offset)], source_etype=I8)
        pat = getattr(ptrs, "cuport_pattern", None)
        if pat is not None:
            out.cuport_pattern = pat
            out.cuport_base = getattr(ptrs, "cuport_base", None)
        return out

    def space_to_host(self, a: ll.Value, space: str) -> ll.Value:
        """Turn an address of `space` (i64 or <32 x i64>) into host pointer(s)."""
        b = self.b
        if space == "shared":
            a = b.and_(a, self.const_int(64, 0xFFFFFFFF))
            base = b.ptrtoint(self.shared_base, I64)
            a = b.add(self._v(base) if self.vec else base, a)
        elif space == "local":
            a = b.add(self.lane_local_bases(), self.splat(a) if not isinstance(a.type, ll.VectorType) else a)
        if isinstance(a.type, ll.VectorType):
            return b.inttoptr(a, vec(PTR))
        return b.inttoptr(a, PTR)

    def lane_local_bases(self) -> ll.Value:
        """<32 x i64>: the host address of local address 0 for each lane."""
        b = self.b
        base = b.ptrtoint(self.local_warp, I64)
        stride = ll.Constant(vec(I64), [i * self.mc.local_window for i in range(W)])
        return b.add(self.splat(base), stride)

    def _param_address(self, slot: ParamSlot, offset: int) -> ll.Value:
        b = self.b
        base = b.ptrtoint(slot.ptr, I64)
        offs = ll.Constant(vec(I64), [i * slot.size + offset for i in range(W)])
        return b.inttoptr(b.add(self.splat(base), offs), vec(PTR))

    def _vp(self, p: ll.Value) -> ll.Value:
        if not self.vec:
            return p
        return self.b.inttoptr(self.splat(self.b.ptrtoint(p, I64)), vec(PTR))

    def _lanes_may_all_skip(self, ptrs) -> bool:
        """Whether the current instruction has a varying guard and per-lane addresses: then
        it may run with no lane executing it (a predicated stretch, passes/predicate.py, in
        a warp none of whose lanes takes it)."""
        if not self.vec or self.ins is None or self.ins.guard is None:
            return False
        if (self.ins.guard.name, self.ins.guard_neg) == self._stretch_guard:
            return False  # (some lane does: _emit_body jumps over the stretch otherwise)
        if not isinstance(ptrs, (SegPtrs, FormPtrs)):
            ptrs = getattr(ptrs, "cuport_scalar", None) or ptrs
            if not isinstance(ptrs.type, ll.VectorType):
                return False  # (one access for the warp: it checks for itself)
        return self.guard_value(self.ins).type != I1

    def _if_some_lane(self, access: Callable[[], ll.Value | None]) -> ll.Value | None:
        """access() where some lane executes the current instruction; else nothing is
        accessed and the value is zero. Warps that skip a predicated access whole (a tree
        reduction's `if (t < w)`) skip it as their branch did."""
        b = self.b
        any_ = b.icmp_unsigned("!=", self.exec_mask(), i32c(0))
        self.active_vec()  # (cached before the branch: later instructions use it)
        pre = b.block
        with b.if_then(any_, likely=True):
            v = access()
            then = b.block
        if v is None:
            return None
        phi = b.phi(v.type)
        phi.add_incoming(v, then)
        phi.add_incoming(ll.Constant(v.type, None), pre)
        return _zero_off(phi, getattr(v, "cuport_zero_off", False))

    def _sparse_lanes(self, ptrs) -> list[int] | None:
        """The lanes that may execute the current access with per-lane addresses, when
        they are at most SPARSE_LANES (passes/lane_bounds.py); else None."""
        if not self.vec or self.ins is None or self.block is None:
            return None
        if not isinstance(ptrs, (SegPtrs, FormPtrs)) and (
                getattr(ptrs, "cuport_scalar", None) is not None or not isinstance(ptrs.type, ll.VectorType)):
            return None
        m = self.lane_bounds.lanes(self.block.index, self.ins)
        lanes = [i for i in range(W) if m >> i & 1]
        return lanes if 0 < len(lanes) <= SPARSE_LANES else None

    def _lane_ptr(self, ptrs, lane: int, size: int) -> ll.Value:
        """The host address of one lane of a warp-wide access of `size`-byte elements."""
        b = self.b
        if isinstance(ptrs, FormPtrs):
            return self.form_lane_ptr(ptrs, lane)
        if isinstance(ptrs, SegPtrs):
            p = ptrs.ptrs[lane // ptrs.seg]
            k = lane % ptrs.seg
            return b.gep(p, [i64c(k * size)], source_etype=I8) if ptrs.kind == "contiguous" and k else p
        return b.extract_element(ptrs, i32c(lane))

    def _sparse_load(self, ptrs, lanes: list[int], t: ll.Type, align: int, volatile: bool) -> ll.Value:
        """A scalar load for each of `lanes` that executes; a lane that does not reads a
        dummy slot instead (no branch; its address may be garbage). Where every lane's
        guard is scalar code (lane_forms.lane_guard) and several lanes may load, the lanes
        load without selects where all of them execute, and otherwise each gives zero where
        it does not (the value is then zero in every lane that does not load, so that
        write() blends nothing into a register that held zero): LLVM branched around each
        lane's load on each part of its guard and tested for lane 16 again what lane 0's
        guard shared with it (a halo column's `x > 0` in lanes 0 and 16)."""
        b = self.b
        size = self._size(t)
        guards = {lane: self._lane_guard(lane) for lane in lanes}
        on = {lane: self._lane_executes(lane, guards[lane], made=True) for lane in lanes}

        def load(lane: int, select: bool) -> ll.Value:
            p = self._lane_ptr(ptrs, lane, size)
            v = b.load(b.select(on[lane], p, self.dummy_slot()) if select else p, typ=t, align=align)
            if volatile:
                v.volatile = True
            return v

        out = ll.Constant(vec(t), None)
        if len(lanes) < 2 or any(g is None for g in guards.values()):
            for lane in lanes:
                out = b.insert_element(out, load(lane, True), i32c(lane))
            return out
        every = on[lanes[0]]
        for lane in lanes[1:]:
            every = b.and_(every, on[lane])
        with b.if_else(every, likely=True) as (all_run, some_skip):
            with all_run:
                fast, fast_bb = [load(lane, False) for lane in lanes], b.block
            with some_skip:
                slow = [b.select(on[lane], load(lane, True), ll.Constant(t, None)) for lane in lanes]
                slow_bb = b.block
        phis = [b.phi(t) for _ in lanes]  # (all at the top of the block)
        for lane, phi, x, y in zip(lanes, phis, fast, slow, strict=True):
            phi.add_incoming(x, fast_bb)
            phi.add_incoming(y, slow_bb)
            out = b.insert_element(out, phi, i32c(lane))
        return _zero_off(out, True)

    def _sparse_store(self, ptrs, lanes: list[int], value: ll.Value, align: int, volatile: bool) -> None:
        """A scalar store for each of `lanes` that executes, lowest lane first (so that the
        highest lane's value lands where lanes share an address, as a scatter orders them); a
        lane that does not stores into a dummy slot instead."""
        b = self.b
        vector = isinstance(value.type, ll.VectorType)
        size = self._size(value.type.element if vector else value.type)
        for lane in lanes:
            p = b.select(self._lane_executes(lane), self._lane_ptr(ptrs, lane, size), self.dummy_slot())
            x = b.extract_element(value, i32c(lane)) if vector else value
            st = b.store(x, p, align=align)
            if volatile:
                st.volatile = True

    def _lane_guard(self, lane: int) -> ll.Value | None:
        """The current instruction's guard for `lane` as scalar code (lane_forms.lane_guard),
        or None where it cannot be made."""
        return self.lane_guard(self.ins, lane) if self.ins is not None else None

    def _lane_executes(self, lane: int, g: ll.Value | None = None, made: bool = False) -> ll.Value:
        """i1: `lane` executes the current instruction; its guard as scalar code where
        lane_forms.lane_guard can make it (`g`, where the caller made it: `made`), else the
        lane of the exec mask."""
        b = self.b
        if not made:
            g = self._lane_guard(lane)
        if g is None:
            return b.extract_element(self.exec_mask_vec(), i32c(lane))
        return b.and_(b.trunc(b.lshr(self.active, i32c(lane)), I1), g)

    def load(self, ptrs: ll.Value, t: ll.Type, align: int, volatile: bool = False) -> ll.Value:
        """Load `t` from one pointer (uniform) or a vector of pointers.

        When the address shape analysis predicts that the warp's addresses are contiguous
        (in runs of ntid.x lanes) or shared by each run, the prediction is checked at run
        time and the access done with vector or scalar loads; otherwise a masked gather.
        An access that only a few known lanes can execute is a scalar load per lane.
        """
        lanes = self._sparse_lanes(ptrs)
        if lanes is not None:
            return self._sparse_load(ptrs, lanes, t, align, volatile)
        if self._lanes_may_all_skip(ptrs):
            return self._if_some_lane(lambda: self._load(ptrs, t, align, volatile))
        return self._load(ptrs, t, align, volatile)

    def _load(self, ptrs: ll.Value, t: ll.Type, align: int, volatile: bool) -> ll.Value:
        b = self.b
        if isinstance(ptrs, SegPtrs):
            return self._segment_load(ptrs.ptrs, t, align, ptrs.kind, ptrs.seg)
        if isinstance(ptrs, FormPtrs):
            return self._form_load(ptrs, t, align)
        scalar = getattr(ptrs, "cuport_scalar", None)
        if scalar is not None:
            ptrs = scalar
        if not isinstance(ptrs.type, ll.VectorType):
            g = self._uniform_guard()
            if g is None and self.vec and self.ins is not None and self.ins.guard is not None:
                g = b.icmp_unsigned("!=", self.exec_mask(), i32c(0))
            if g is not None:
                return self._guarded_scalar_load(ptrs, t, align, volatile, g)
            ld = b.load(ptrs, typ=t, align=align)
            if volatile:
                ld.volatile = True
            return self.splat(ld) if self.vec else ld
        mask = self.exec_mask_vec()
        vt = vec(t)

        def gather() -> ll.Value:
            return self.intrinsic(
                "llvm.masked.gather",
                [ptrs, i32c(align), mask, ll.Constant(vt, None)],
                overload=[vt, ptrs.type],
                ret=vt,
            )

        pat = None if volatile else self._pattern(ptrs, t)
        if pat is None:
            return _zero_off(gather(), True)
        kind, seg = pat
        ai = b.ptrtoint(ptrs, vec(I64))
        if self._version_mode(ptrs, kind, seg, t) == "slow":
            return _zero_off(gather(), True)
        ok = self._pattern_check(ai, kind, seg, self._size(t))
        v = self._fast_or_slow(ok, lambda: self._segment_load(self._leaders(ai, seg), t, align, kind, seg),
                               gather, ("ld_fast", "ld_gather", "ld_join"))
        return _zero_off(v, kind == "contiguous")

    def _form_load(self, p: FormPtrs, t: ll.Type, align: int) -> ll.Value:
        """A load through FormPtrs: per run when the form allows, else a gather."""
        vt = vec(t)
        self.exec_mask()  # (cached here, before the paths part: both use it)

        def gather() -> ll.Value:
            return self.intrinsic("llvm.masked.gather",
                                  [self.form_lane_ptrs(p), i32c(align), self.exec_mask_vec(),
                                   ll.Constant(vt, None)], overload=[vt, vec(PTR)], ret=vt)

        if p.kind is None:
            return _zero_off(gather(), True)
        if p.ok is None:
            self._prefetch_ahead(p)
            return _zero_off(self._segment_load(p.leaders, t, align, p.kind, p.seg, p.mapped),
                             p.kind == "contiguous")

        def fast() -> ll.Value:
            self._prefetch_ahead(p)
            return self._segment_load(p.leaders, t, align, p.kind, p.seg, p.mapped)

        v = self._fast_or_slow(p.ok, fast, gather, ("ldf_fast", "ldf_gather", "ldf_join"))
        return _zero_off(v, p.kind == "contiguous")

    def _fast_or_slow(self, ok: ll.Value, fast: Callable[[], ll.Value | None],
                      slow: Callable[[], ll.Value | None], names: tuple[str, str, str]) -> ll.Value | None:
        """Branch on `ok` to a block (named names[0]) that emits `fast` or one (names[1]) that
        emits `slow`, and join (names[2]): the access paths of a run check. Answers the phi of
        their values where they answer one (a load), else None (a store)."""
        b = self.b
        fast_bb, slow_bb, join = (self.llfn.append_basic_block(n) for n in names)
        b.cbranch(ok, fast_bb, slow_bb)
        b.position_at_end(fast_bb)
        v_fast = fast()
        fast_end = b.block
        b.branch(join)
        b.position_at_end(slow_bb)
        v_slow = slow()
        slow_end = b.block
        b.branch(join)
        b.position_at_end(join)
        if v_fast is None:
            return None
        phi = b.phi(v_fast.type)
        phi.add_incoming(v_fast, fast_end)
        phi.add_incoming(v_slow, slow_end)
        return phi

    def _prefetch_ahead(self, p: FormPtrs) -> None:
        """A global load or store whose address moves by a constant from a block to the next
        along x (shapes.block_strides) prefetches its lines some blocks ahead (for writing, a
        store), for the block the worker runs then: blocks go to a worker in chunks along x.
        - A 2-D tile (runs of a warp rows apart), PREFETCH_BLOCKS ahead, each run's first
          line: each run is a row of its own, a stream of 64 bytes per block, and a 16x16
          stencil's 18 rows read and 16 written outnumber the streams a CPU's prefetchers
          follow; the loads that missed stalled the warp (a third of jacobi's time).
        - A warp that is one run, outside loops, in a kernel with barriers (_run_prefetch),
          RUN_PREFETCH_BLOCKS ahead, every line of the run: a block that loads its segment,
          works on it in shared memory between barriers and stores it leaves the memory
          idle meanwhile, and each block's segment is a page the prefetchers meet afresh."""
        ins, f = self.ins, p.value.lanes
        if ins is None or ins.op not in ("ld", "ldu", "st") or "global" not in ins.mods or os.environ.get(
                "CUPORT_NO_PREFETCH") == "1":
            return
        if id(ins) in self.spread_ids:
            return  # (prefetched by the other regions' loops: prefetch_spread.py)
        one_run = self._run_prefetch(p)
        if not (one_run or (DYN in (f.ky, f.iky) and p.seg < W)):
            return
        mem = next((a for a in ins.args if isinstance(a, ir.Mem)), None)
        stride = self.block_strides.get(mem.base.name) if mem is not None and isinstance(mem.base, ir.Reg) else None
        if not stride:
            return
        ahead = stride * (RUN_PREFETCH_BLOCKS if one_run else PREFETCH_BLOCKS)
        lines = range(0, p.seg * p.size, 64) if one_run else range(1)
        for q in p.leaders:
            for line in lines:
                r = self.b.gep(q, [i64c(ahead + line)], source_etype=I8)
                self.intrinsic("llvm.prefetch", [r, i32c(int(ins.op == "st")), i32c(3), i32c(1)], overload=[PTR],
                               ret=ll.VoidType())

    def _run_prefetch(self, p: FormPtrs) -> bool:
        """Whether _prefetch_ahead prefetches a contiguous access whose warp is one run: in
        a kernel with barriers, outside loops. A barrier-free stream (bench triad) is the
        prefetchers' (prefetching it too: 2x slower), and so is a loop's (bench reduce's
        grid-stride loop: 15% slower)."""
        return (p.seg == W and p.kind == "contiguous" and bool(self.barriers)
                and not any(self.block.index in body for body in self.cfg.loops.values()))

    def _form_store(self, p: FormPtrs, value: ll.Value, align: int) -> None:
        self.exec_mask()  # (cached here, before the paths part: both use it)
        if not isinstance(value.type, ll.VectorType):
            value = self.splat(value)

        def scatter() -> None:
            self.intrinsic("llvm.masked.scatter",
                           [value, self.form_lane_ptrs(p), i32c(align), self.exec_mask_vec()],
                           overload=[value.type, vec(PTR)], ret=ll.VoidType())

        if p.kind == "uniform":
            self._run_store(p.leaders, value, align, p.seg)
            return
        if p.kind != "contiguous":
            scatter()
            return
        if p.ok is None:
            self._prefetch_ahead(p)
            self._segment_store(p.leaders, value, align, p.seg, p.mapped)
            return

        def fast() -> None:
            self._prefetch_ahead(p)
            self._segment_store(p.leaders, value, align, p.seg, p.mapped)

        self._fast_or_slow(p.ok, fast, scatter, ("stf_fast", "stf_scatter", "stf_join"))

    @staticmethod
    def _size(t: ll.Type) -> int:
        if isinstance(t, ll.IntType):
            return max(t.width // 8, 1)
        return {"float": 4, "double": 8, "half": 2}.get(str(t), 4)

    def _pattern(self, ptrs: ll.Value, t: ll.Type) -> tuple[str, int] | None:
        shape = getattr(ptrs, "cuport_pattern", None)
        pat = access_pattern(shape, self._size(t), self.mc.block)
        if pat is not None and pat[1] < 8:
            return None  # short runs: a gather is as good
        return pat

    def _pattern_check(self, ai: ll.Value, kind: str, seg: int, size: int) -> ll.Value:
        """i1: the lanes' addresses (<32 x i64>) really follow the predicted pattern."""
        b = self.b
        leaders = ll.Constant(vec(I32), [(i // seg) * seg for i in range(W)])
        lead = b.shuffle_vector(ai, ll.Constant(vec(I64), None), leaders)
        if kind == "contiguous":
            lead = b.add(lead, ll.Constant(vec(I64), [(i % seg) * size for i in range(W)]))
        eq = b.bitcast(b.icmp_unsigned("==", ai, lead), I32)
        return b.icmp_unsigned("==", eq, i32c(ALL))

    def _segment_mask(self, j: int, seg: int) -> ll.Value:
        """i1: some lane of run j executes this instruction."""
        b = self.b
        m = b.and_(self.exec_mask(), i32c(((1 << seg) - 1) << (j * seg)))
        return b.icmp_unsigned("!=", m, i32c(0))

    def _leaders(self, ai: ll.Value, seg: int) -> list[ll.Value]:
        b = self.b
        return [b.inttoptr(b.extract_element(ai, i32c(j * seg)), PTR) for j in range(W // seg)]

    def _run_mask(self, j: int, seg: int) -> ll.Value:
        """<seg x i1>: the executing lanes of run j (mask_vec: an i32 shifted and cut to i16
        makes AVX2 code rebuild the vector lane by lane, about 50 instructions, where AVX-512
        shifts a mask register)."""
        return self.mask_vec(self.exec_mask(), j * seg, seg)

    def _segment_load(self, leaders: list[ll.Value], t: ll.Type, align: int, kind: str, seg: int,
                      mapped: bool = False) -> ll.Value:
        """One load per run; a run in which no lane executes reads a dummy slot instead,
        unless its leader is `mapped` (FormPtrs: in static shared memory whatever the lane),
        where a masked load of no lane costs nothing more."""
        b = self.b
        parts = []
        for j in range(W // seg):
            p = leaders[j]
            if kind == "contiguous":
                st = vec(t, seg)
                if seg != W and not mapped:  # (a warp without lanes never gets here: _if_some_lane)
                    p = b.select(self._segment_mask(j, seg), p, self.dummy_run())
                m = self._run_mask(j, seg)
                parts.append(self.intrinsic("llvm.masked.load", [p, i32c(align), m, ll.Constant(st, None)],
                                            overload=[st, PTR], ret=st))
            else:
                # one element for the run; a run with no executing lane reads a dummy slot
                # instead (no branch, and its address may be garbage)
                if not mapped:
                    p = b.select(self._segment_mask(j, seg), p, self.dummy_slot())
                parts.append(b.load(p, typ=t, align=align))
        if kind == "contiguous":
            if len(parts) == 1:
                return parts[0]
            while len(parts) > 1:
                n = parts[0].type.count
                idx = ll.Constant(vec(I32, 2 * n), list(range(2 * n)))
                parts = [b.shuffle_vector(parts[i], parts[i + 1], idx) for i in range(0, len(parts), 2)]
            return parts[0]
        out = ll.Constant(vec(t), None)
        for j, v in enumerate(parts):
            out = b.insert_element(out, v, i32c(j))
        return b.shuffle_vector(out, ll.Constant(vec(t), None), ll.Constant(vec(I32), [i // seg for i in range(W)]))

    def _segment_store(self, leaders: list[ll.Value], value: ll.Value, align: int, seg: int,
                       mapped: bool = False) -> None:
        b = self.b
        for j in range(W // seg):
            p = leaders[j] if seg == W or mapped else b.select(self._segment_mask(j, seg), leaders[j],
                                                               self.dummy_run())
            if seg == W:
                part, m = value, self.exec_mask_vec()
            else:
                part = b.shuffle_vector(value, ll.Constant(value.type, None),
                                        ll.Constant(vec(I32, seg), list(range(j * seg, (j + 1) * seg))))
                m = self._run_mask(j, seg)
            self.intrinsic("llvm.masked.store", [part, p, i32c(align), m], overload=[part.type, PTR],
                           ret=ll.VoidType())

    def _run_store(self, leaders: list[ll.Value], value: ll.Value, align: int, seg: int) -> None:
        """Every lane of a run stores to one address: the highest executing lane's value
        lands there (as a scatter orders them); a run with no executing lane stores into a
        dummy slot instead (no branch)."""
        b = self.b
        for j in range(W // seg):
            m = b.and_(self.exec_mask(), i32c(((1 << seg) - 1) << (j * seg)))
            last = b.sub(i32c(W - 1), b.ctlz(m, ll.Constant(I1, 0)))
            any_ = b.icmp_unsigned("!=", m, i32c(0))
            lane = b.select(any_, last, i32c(j * seg))
            p = b.select(any_, leaders[j], self.dummy_slot())
            b.store(b.extract_element(value, lane), p, align=align)

    def _version_mode(self, ptrs: ll.Value, kind: str, seg: int, t: ll.Type) -> str | None:
        """"fast"/"slow" when the block was versioned on this access's pattern, else None."""
        if self.version is None:
            return None
        key = (getattr(ptrs, "cuport_base", None), kind, seg, self._size(t))
        mode, keys = self.version
        return mode if key in keys else None

    def _uniform_guard(self) -> ll.Value | None:
        """The i1 guard of the current instruction when it is uniform, else None."""
        if self.ins is None or self.ins.guard is None:
            return None
        g = self.guard_value(self.ins)
        return g if g.type == I1 else None

    def _guarded_scalar_load(self, ptr, t, align, volatile, g) -> ll.Value:
        b = self.b
        pre = b.block
        do = self.llfn.append_basic_block("ld_guarded")
        join = self.llfn.append_basic_block("ld_guarded_join")
        b.cbranch(g, do, join)
        b.position_at_end(do)
        ld = b.load(ptr, typ=t, align=align)
        if volatile:
            ld.volatile = True
        b.branch(join)
        b.position_at_end(join)
        phi = b.phi(t)
        phi.add_incoming(ld, do)
        phi.add_incoming(ll.Constant(t, None), pre)
        return self.splat(phi) if self.vec else phi

    def store(self, ptrs, value: ll.Value, align: int, volatile: bool = False) -> None:
        lanes = self._sparse_lanes(ptrs)
        if lanes is not None:
            self._sparse_store(ptrs, lanes, value, align, volatile)
        elif self._lanes_may_all_skip(ptrs):
            self._if_some_lane(lambda: self._store(ptrs, value, align, volatile))
        else:
            self._store(ptrs, value, align, volatile)

    def _store(self, ptrs, value: ll.Value, align: int, volatile: bool) -> None:
        b = self.b
        if isinstance(ptrs, SegPtrs):
            if not isinstance(value.type, ll.VectorType):
                value = self.splat(value)
            self._segment_store(ptrs.ptrs, value, align, ptrs.seg)
            return
        if isinstance(ptrs, FormPtrs):
            self._form_store(ptrs, value, align)
            return
        scalar = getattr(ptrs, "cuport_scalar", None)
        if scalar is not None:
            ptrs = scalar
        if not isinstance(ptrs.type, ll.VectorType):
            if isinstance(value.type, ll.VectorType):
                # one address for the warp: the highest executing lane's value wins
                last = b.sub(i32c(W - 1), b.ctlz(self.exec_mask(), ll.Constant(I1, 1)))
                value = b.extract_element(value, last)
            g = None
            if self.ins is not None and self.ins.guard is not None:
                g = self.guard_value(self.ins)
                if g.type != I1:
                    g = b.icmp_unsigned("!=", self.exec_mask(), i32c(0))
            if g is not None:
                with b.if_then(g):
                    st = b.store(value, ptrs, align=align)
            else:
                st = b.store(value, ptrs, align=align)
            if volatile:
                st.volatile = True
            return
        if not isinstance(value.type, ll.VectorType):
            value = self.splat(value)
        mask = self.exec_mask_vec()
        t = value.type.element

        def scatter() -> None:
            self.intrinsic(
                "llvm.masked.scatter",
                [value, ptrs, i32c(align), mask],
                overload=[value.type, ptrs.type],
                ret=ll.VoidType(),
            )

        pat = None if volatile else self._pattern(ptrs, t)
        if pat is None or pat[0] != "contiguous":
            scatter()
            return
        kind, seg = pat
        ai = b.ptrtoint(ptrs, vec(I64))
        if self._version_mode(ptrs, kind, seg, t) == "slow":
            scatter()
            return
        ok = self._pattern_check(ai, kind, seg, self._size(t))
        self._fast_or_slow(ok, lambda: self._segment_store(self._leaders(ai, seg), value, align, seg),
                           scatter, ("st_fast", "st_scatter", "st_join"))

    # ---------------------------------------------------------------- calls
    def emit_call(self, ins: ir.Instr) -> None:
        """`call (rets), f, (args)[, proto]`: pass pointers to the per-lane .param memory."""
        b = self.b
        rets, target, params, args = call_operands(ins)
        proto_name = args[0].name if args and isinstance(args[0], ir.Sym) else None

        def slot_ptr(o) -> ll.Value:
            if isinstance(o, ir.Sym) and o.name in self.param_slots:
                return self.param_slots[o.name].ptr
            raise self.error(f"a call argument that is not a .param variable ({ir.format_operand(o)})")

        ptrs = [slot_ptr(p) for p in params] + [slot_ptr(r) for r in rets]
        mask = self.exec_mask()
        if isinstance(target, ir.Sym):
            name = target.name
            callee = self.mc.ptx.functions.get(name)
            if callee is None:
                raise self.error(f"a call to the undeclared function {name}")
            if not callee.is_definition:
                self.mc.runtime_call(self, name, callee, ins, params, rets)
                return
            f = self.mc.function_for(name)
            status = b.call(f, [self.ctx, self.blk, self.ws, self.warp, mask, *ptrs])
        else:
            if proto_name is None:
                raise self.error("an indirect call without a prototype")
            status = self._indirect_call(target, mask, ptrs, len(params), len(rets))
        failed = self.llfn.append_basic_block()
        ok = self.llfn.append_basic_block()
        b.cbranch(b.icmp_unsigned("!=", status, i32c(DONE)), failed, ok)
        b.position_at_end(failed)
        b.ret(i32c(FAILED))
        b.position_at_end(ok)
        if self.mc.has_exit:
            ex = b.load(b.gep(self.ws, [i64c(L.WS_EXITED)], source_etype=I8), typ=I32)
            self.active = b.and_(self.active, b.not_(ex))
            b.store(self.active, self.active_slot)
            self._mask_cache = {}

    def _indirect_call(self, target, mask, ptrs, nparams: int, nrets: int) -> ll.Value:
        """Call through a function token: one direct call per distinct target among the lanes."""
        b = self.b
        saved_vec = self.vec
        self.vec = True
        tv = self.read_bits(target, "u64")
        self.vec = saved_vec
        from ...passes.indirect_calls import indirect_targets

        candidates = indirect_targets(self.mc.ptx, self.mc.address_taken(), nparams, nrets)
        remaining = self.entry_alloca(I32)
        b.store(mask, remaining)
        st_slot = self.entry_alloca(I32)
        b.store(i32c(DONE), st_slot)
        loop = self.llfn.append_basic_block("icall")
        body = self.llfn.append_basic_block("icall_body")
        out = self.llfn.append_basic_block("icall_end")
        bad = self.llfn.append_basic_block("icall_bad")
        b.branch(loop)
        b.position_at_end(loop)
        rem = b.load(remaining)
        b.cbranch(b.icmp_unsigned("==", rem, i32c(0)), out, body)
        b.position_at_end(body)
        first = b.cttz(rem, ll.Constant(I1, 1))
        tgt = b.extract_element(tv, first)
        same = b.bitcast(b.icmp_unsigned("==", tv, self.splat(tgt)), I32)
        sub = b.and_(rem, same)
        b.store(b.and_(rem, b.not_(sub)), remaining)
        sw = b.switch(tgt, bad)
        for f in candidates:
            case = self.llfn.append_basic_block("icall_" + self.mc.llvm_name(f))
            sw.add_case(i64c(function_token(self.mc.ptx, f.name)), case)
            b.position_at_end(case)
            s = b.call(self.mc.function_for(f.name), [self.ctx, self.blk, self.ws, self.warp, sub, *ptrs])
            b.store(b.or_(b.load(st_slot), s), st_slot)
            b.branch(loop)
        b.position_at_end(bad)
        self.mc.emit_error(b, self.ctx, self.blk, L.ERR_ILLEGAL_ADDRESS, self.ins.line)
        b.ret(i32c(FAILED))
        b.position_at_end(out)
        return b.load(st_slot)


__all__ = ["FunctionEmitter", "UnsupportedError", "DONE", "SUSPENDED", "FAILED", "F16", "F32", "F64", "I16"]
