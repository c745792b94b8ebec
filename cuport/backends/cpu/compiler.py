"""PTX module + kernel + block shape → one LLVM module ready for the JIT.

The LLVM module holds the kernel's warp function, every device function it can reach, a
block runner that schedules the block's warps around barriers, and a `worker` entry that
pulls blocks from the launch's shared counter until the grid is done. Module-scope
`.global`/`.const` variables are external symbols: the backend allocates them once per
loaded module and binds their addresses when it links the compiled object, so the same
object (and its disk cache entry) serves every load.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from llvmlite import ir as ll

from ...isa.types import I8, I32, I64, PTR, VOID
from ...passes import cfg as cfgmod
from ...passes import divergence, liveness, regions
from ...passes.inline import inline_suspending_functions
from ...passes.predicate import predicate_short_branches
from ...passes.yields import insert_yields, waits_in
from ...ptx import ir
from ...ptx.callgraph import address_taken, reachable_functions, reachable_shared
from ..base import CUDA_ERROR_INVALID_VALUE, BackendError
from ..gc_pause import gc_paused
from . import jit
from . import layout as L
from .emit import FAILED, SUSPENDED, YIELDED, FunctionEmitter, UnsupportedError, i32c, i64c
from .layout import RESIDENT_SLOTS, CompiledKernelInfo
from .region_loops import INTERLEAVE_BLOCKS

W = L.WARP
DEFAULT_STACK = 1024  # bytes of per-thread stack for calls (cudaLimitStackSize default)
MAX_LOCAL_BYTES = 512 * 1024  # local memory per thread, as on NVIDIA's GPUs since sm_20
ROTATE_SLOT_BYTES = 1 << 20  # blocks rotate (region_loops.INTERLEAVE_BLOCKS) below this scratch


def _cfg(fn: ir.Function) -> cfgmod.Cfg:
    """The control flow graph; what it cannot represent (brx.idx) is unsupported."""
    try:
        return cfgmod.build(fn)
    except cfgmod.CfgError as e:
        raise UnsupportedError(str(e), e.line) from None


def global_symbol_name(index: int) -> str:
    return f"cuport_g{index}"


class ModuleCompiler:
    def __init__(self, ptx: ir.Module, kernel: str, block: tuple[int, int, int], nsm: int = 1,
                 stack_bytes: int = DEFAULT_STACK, resident: int = RESIDENT_SLOTS) -> None:
        if kernel not in ptx.functions or not ptx.functions[kernel].is_entry:
            raise UnsupportedError(f"no kernel named {kernel}")
        self.ptx = ptx
        self.kernel = ptx.functions[kernel]
        self.block = block
        self.nthreads = block[0] * block[1] * block[2]
        self.nwarps = (self.nthreads + W - 1) // W
        self.nsm = nsm
        self.stack_bytes = stack_bytes
        self.resident = resident  # blocks a worker may hold when warps can yield
        self.has_yields = False  # (the yields step: spin loops that wait for other blocks)
        self.llmod = ll.Module(name=kernel)
        self._decls: dict[str, ll.Function] = {}
        self.outlined: dict[str, tuple] = {}  # em.outline's functions: (function, result struct)
        self._funcs: dict[str, ll.Function] = {}
        self._pending: list[str] = []
        self.warp_state_bytes = L.WS_HEADER
        self.frames: dict[str, int] = {}
        self.host_symbols: list[str] = []

        self.check_convergence = os.environ.get("CUPORT_CHECK_CONVERGENCE") == "1"

    # ------------------------------------------------------------ analysis helpers
    def address_taken(self) -> set[str]:
        """The module's functions a call through a register may reach (ptx/callgraph.py)."""
        taken = getattr(self, "_address_taken", None)
        if taken is None:
            taken = self._address_taken = address_taken(self.ptx)
        return taken

    def _layout_shared(self, funcs: list[ir.Function]) -> None:
        self.shared_offsets: dict[str, int] = {}
        off = 0
        externs: list[ir.Var] = []
        vars_ = reachable_shared(self.ptx, self.kernel, funcs)
        max_align = 16
        for v in vars_:
            if v.linkage == "extern" or (v.dims and v.dims[-1] is None):
                externs.append(v)
                max_align = max(max_align, v.alignment)
                continue
            a = max(v.alignment, 1)
            off = (off + a - 1) // a * a
            self.shared_offsets[v.name] = off
            off += v.size
        self.static_shared = off
        self.dyn_shared_offset = (off + max_align - 1) // max_align * max_align
        for v in externs:
            self.shared_offsets[v.name] = self.dyn_shared_offset

    def _layout_globals(self) -> None:
        self.global_vars: dict[str, ll.GlobalVariable] = {}
        self.global_symbols: dict[str, str] = {}
        for i, v in enumerate(self.ptx.variables):
            if v.space not in ("global", "const"):
                continue
            sym = global_symbol_name(i)
            g = ll.GlobalVariable(self.llmod, ll.ArrayType(I8, max(v.size, 1)), name=sym)
            g.linkage = "external"
            self.global_vars[v.name] = g
            self.global_symbols[sym] = v.name
        self.kernel_param_offsets: dict[str, int] = {}
        off = 0
        for p in self.kernel.params:
            a = max(p.alignment, 1)
            off = (off + a - 1) // a * a
            self.kernel_param_offsets[p.name] = off
            off += p.size

    def _alignments(self, funcs: list[ir.Function]) -> None:
        """The largest alignments asked of local and shared variables (`.align 256` local
        arrays): every frame is a multiple of the local one, so frames pushed one after
        another keep it, and lane windows and the shared arena start at such multiples of
        a page-aligned scratch. Offsets inside the windows keep any alignment; the generic
        addresses of the windows keep at most a page's."""
        local, shared = 16, 256
        for v in self.ptx.variables:
            if v.space == "shared":
                shared = max(shared, v.alignment)
        for f in funcs:
            for v in f.locals:
                if v.space == "local":
                    local = max(local, v.alignment)
                elif v.space == "shared":
                    shared = max(shared, v.alignment)
        self.local_align, self.shared_align = local, shared

    def _local_window(self, funcs: list[ir.Function]) -> int:
        la = self.local_align

        def frame(f: ir.Function) -> int:
            off = 0
            for v in f.locals:
                if v.space == "local":
                    a = max(v.alignment, 1)
                    off = (off + a - 1) // a * a + v.size
            return (off + la - 1) // la * la

        frames = {f.name: frame(f) for f in funcs}
        calls: dict[str, set[str]] = {f.name: set() for f in funcs}
        indirect = False
        for f in funcs:
            for st in f.body or ():
                if isinstance(st, ir.Instr) and st.op == "call":
                    args = [a for a in st.args if not isinstance(a, ir.Args)]
                    if args and isinstance(args[0], ir.Sym) and args[0].name in frames:
                        calls[f.name].add(args[0].name)
                    elif args and isinstance(args[0], ir.Reg):
                        indirect = True
        # deepest path through the call graph; recursion or indirect calls get the stack limit
        memo: dict[str, int] = {}
        onstack: set[str] = set()
        recursive = False

        def depth(n: str) -> int:
            nonlocal recursive
            if n in memo:
                return memo[n]
            if n in onstack:
                recursive = True
                return 0
            onstack.add(n)
            d = frames[n] + max((depth(c) for c in calls[n]), default=0)
            onstack.discard(n)
            memo[n] = d
            return d

        need = depth(self.kernel.name)
        if recursive or indirect:
            need = frames[self.kernel.name] + max(self.stack_bytes, need - frames[self.kernel.name])
        self.has_calls = any(calls.values()) or indirect
        return max((need + la - 1) // la * la, la)

    # ------------------------------------------------------------ hooks used by the emitter
    def llvm_name(self, fn: ir.Function) -> str:
        safe = "".join(c if c.isalnum() or c == "_" else "_" for c in fn.name)
        return ("warp_" if fn.is_entry else "dev_") + safe

    def note_warp_state(self, size: int) -> None:
        self.warp_state_bytes = max(self.warp_state_bytes, (size + 63) & ~63)

    def note_frame(self, fn: ir.Function, size: int) -> None:
        self.frames[fn.name] = size

    def declare(self, name: str, ret: ll.Type, args: list[ll.Type]) -> ll.Function:
        f = self._decls.get(name)
        if f is None:
            try:
                f = self.llmod.get_global(name)  # declared already by an llvmlite builder helper
            except KeyError:
                f = ll.Function(self.llmod, ll.FunctionType(ret, args), name=name)
            self._decls[name] = f
        return f

    def function_for(self, name: str) -> ll.Function:
        f = self._funcs.get(name)
        if f is not None:
            return f
        fn = self.ptx.functions[name]
        em = self._make_emitter(fn)
        f = em.declare()
        self._funcs[name] = f
        self._pending.append(name)
        self._emitters[name] = em
        return f

    def _make_emitter(self, fn: ir.Function, g: cfgmod.Cfg | None = None,
                      div: divergence.Divergence | None = None,
                      live: list[set[str]] | None = None) -> FunctionEmitter:
        """The emitter of `fn`; device functions get their analyses here, the kernel from
        the pipeline's cfg/divergence/liveness steps."""
        if g is None:
            fn, g, div = self._predicated(fn)
            live, blend = liveness.live_in_and_blends(g, div)
            div.blend = blend
        if "%__cc" in div.varying or any(
            isinstance(s, ir.Instr) and "cc" in s.mods for s in fn.body or ()
        ):
            fn.regs.setdefault("%__cc", "pred")
        return FunctionEmitter(self, fn, g, div, live)

    def emit_error(self, b: ll.IRBuilder, ctx, blk, kind: int, line: int) -> None:
        """Record the first error of the launch (kind, PTX line, block)."""
        off = L.LaunchCtx.error.offset
        p = b.gep(ctx, [i64c(off)], source_etype=I8)
        res = b.cmpxchg(p, i32c(0), i32c(kind), "monotonic", "monotonic")
        won = b.extract_value(res, 1)
        with b.if_then(won):
            b.store(i32c(line), b.gep(ctx, [i64c(L.LaunchCtx.error_line.offset)], source_etype=I8))
            lin = b.load(b.gep(blk, [i64c(L.BS_LINEAR)], source_etype=I8), typ=I64)
            b.store(lin, b.gep(ctx, [i64c(L.LaunchCtx.error_block.offset)], source_etype=I8))

    def bump_events(self, b: ll.IRBuilder, blk) -> None:
        p = b.gep(blk, [i64c(L.BS_EVENTS)], source_etype=I8)
        b.store(b.add(b.load(p, typ=I32), i32c(1)), p)

    def runtime_call(self, em: FunctionEmitter, name: str, callee: ir.Function, ins: ir.Instr,
                     params: tuple, rets: tuple) -> None:
        from . import hostcalls

        hostcalls.lower_call(self, em, name, callee, ins, params, rets)

    # ------------------------------------------------------------ the whole module
    def compile(self, dump_after: str | None = None, out=None) -> tuple[ll.Module, CompiledKernelInfo]:
        """Run the PIPELINE's IR steps (through `runner`); with `dump_after`, write the state
        after that step to `out` (default stdout) and stop there."""
        run_pipeline(self, until="runner", dump_after=dump_after, out=out)
        return self.llmod, self.info

    # The steps of PIPELINE (below), in order; each reads what the earlier ones left.
    def _step_reachable(self) -> None:
        self.funcs = reachable_functions(self.ptx, self.kernel)

    def _step_inline(self) -> None:
        funcs = inline_suspending_functions(self.ptx, self.funcs)
        self.kernel = next(f for f in funcs if f.name == self.kernel.name)
        self.funcs = funcs

    def _step_yields(self) -> None:
        if os.environ.get("CUPORT_NO_YIELDS") != "1":
            self.kernel = insert_yields(self.kernel, waits_in(self.funcs, self.address_taken()))
        self.funcs = [self.kernel if f.name == self.kernel.name else f for f in self.funcs]
        self.has_yields = any(isinstance(s, ir.Instr) and s.op == "yield" for s in self.kernel.body or ())
        self.resident_slots = self.resident if self.has_yields else 1

    def _step_layout(self) -> None:
        funcs = self.funcs
        self._layout_globals()
        self._layout_shared(funcs)
        self._alignments(funcs)
        self.local_window = self._local_window(funcs)
        if self.local_window > MAX_LOCAL_BYTES:  # before anything that large is allocated
            # (the H200 answers CUDA_ERROR_INVALID_VALUE at the launch: tests/ptx/gpu)
            raise BackendError(CUDA_ERROR_INVALID_VALUE,
                               f"kernel {self.kernel.name} needs {self.local_window} bytes of "
                               f"local memory per thread, more than the {MAX_LOCAL_BYTES // 1024} "
                               "KiB a thread can have")
        self.has_exit = any(
            isinstance(s, ir.Instr) and s.op == "exit" for f in funcs for s in (f.body or ())
        )
        self.uses_barriers = any(
            isinstance(s, ir.Instr) and cfgmod.is_barrier(s) for s in (self.kernel.body or ())
        )

    def _step_cfg(self) -> None:
        self.kernel_cfg = _cfg(self.kernel)

    def _step_divergence(self) -> None:
        self.kernel_div = divergence.analyze(self.kernel_cfg, self.block)

    def _predicated(self, fn: ir.Function, g: cfgmod.Cfg | None = None,
                    div: divergence.Divergence | None = None
                    ) -> tuple[ir.Function, cfgmod.Cfg, divergence.Divergence]:
        """`fn` with the short stretches behind its divergent branches predicated
        (passes/predicate.py), its CFG and its divergence; again while a round predicates
        more (a stretch around a predicated one)."""
        if g is None:
            g = _cfg(fn)
            div = divergence.analyze(g, self.block)
        if os.environ.get("CUPORT_NO_PREDICATE") == "1":
            return fn, g, div
        while True:
            new = predicate_short_branches(fn, g, div)
            if new is fn:
                return fn, g, div
            fn = new
            g = _cfg(fn)
            div = divergence.analyze(g, self.block)

    def _step_predicate(self) -> None:
        fn, self.kernel_cfg, self.kernel_div = self._predicated(self.kernel, self.kernel_cfg,
                                                                self.kernel_div)
        if fn is not self.kernel:
            self.funcs = [fn if f is self.kernel else f for f in self.funcs]
            self.kernel = fn

    def _step_liveness(self) -> None:
        live, blend = liveness.live_in_and_blends(self.kernel_cfg, self.kernel_div)
        self.kernel_div.blend = blend
        self.kernel_live = live

    def _step_barriers(self) -> None:
        self.simple_barriers = self._all_barriers_simple()

    def _step_regions(self) -> None:
        self.kernel_regions = None
        self.kernel_lockstep = False
        if not self.simple_barriers or os.environ.get("CUPORT_NO_REGION_LOOPS") == "1":
            return
        g = self.kernel_cfg
        edges = [] if os.environ.get("CUPORT_NO_INTERLEAVE") == "1" else regions.interleave_edges(g)
        bars = [b for b in g.blocks if b.term is not None and cfgmod.is_suspend(b.term)]
        if edges:
            self.kernel_regions = regions.split(g, self.kernel_div, bars, edges)
        if self.kernel_regions is None:  # (without interleaving: smaller)
            self.kernel_regions = regions.split(g, self.kernel_div, bars)
        if self.kernel_regions is not None:
            # (what a block's threads may see differently: warps run a region one by one)
            block_varying = divergence.analyze(g, self.block, scope="block", racy_loads=True).varying
            self.kernel_lockstep = regions.lockstep(g, self.kernel_regions, self.has_exit, block_varying)
        if self.kernel_regions is not None and any(r.interleave for r in self.kernel_regions) \
                and self._slot_bytes() <= ROTATE_SLOT_BYTES:
            # a worker rotates several blocks through their rounds (region_loops.py)
            self.resident_slots = INTERLEAVE_BLOCKS

    def _slot_bytes(self) -> int:
        """At most a block's scratch but for its dynamic shared memory (CompiledKernelInfo's),
        before the emitter lays out the warp states: every register saved, 128 bytes each."""
        most = L.WS_HEADER + 128 * len(self.kernel.regs) + 1024
        return CompiledKernelInfo("", self.block, self.nwarps, most, self.local_window,
                                  self.static_shared, self.dyn_shared_offset,
                                  local_align=min(self.local_align, 4096),
                                  shared_align=min(self.shared_align, 4096)).scratch_bytes(0)

    def _step_emit(self) -> None:
        self._declare_runtime()
        self._emitters: dict[str, FunctionEmitter] = {}
        kem = self._make_emitter(self.kernel, self.kernel_cfg, self.kernel_div, self.kernel_live)
        self.kernel_fn = kem.declare()
        kem.emit()
        while self._pending:
            name = self._pending.pop()
            self._emitters[name].emit()

    def _step_runner(self) -> None:
        self._emit_runner(self.kernel_fn)
        self.info = CompiledKernelInfo(
            kernel=self.kernel.name,
            block=self.block,
            nwarps=self.nwarps,
            warp_state_bytes=self.warp_state_bytes,
            local_window=self.local_window,
            static_shared=self.static_shared,
            dyn_shared_offset=self.dyn_shared_offset,
            resident_slots=self.resident_slots,
            waits_on_others=self.has_yields,
            local_align=min(self.local_align, 4096),
            shared_align=min(self.shared_align, 4096),
            global_symbols=dict(self.global_symbols),
            host_symbols=list(self.host_symbols),
        )

    def _step_optimize(self) -> None:
        self.llvm_module = jit.optimize(jit.parse(str(self.llmod)))

    def _step_codegen(self) -> None:
        self.object = jit.emit_object(self.llvm_module)

    def _all_barriers_simple(self) -> bool:
        """True when every barrier is an unguarded `bar.sync 0` / `barrier.sync 0` (or bar.red
        on barrier 0, or barrier.cluster.wait) without a thread count, in converged code: then warps only ever wait for
        the whole block, and a round-robin over the warps implements the barrier."""
        g, div = self.kernel_cfg, self.kernel_div
        for blk in g.blocks:
            t = blk.term
            if t is None or not cfgmod.is_suspend(t):
                continue
            if t.op == "yield":
                continue  # a yield in split code waits the general way (emit.py)
            if t.guard is not None or blk.index in div.split_blocks:
                return False
            # bar.red: dest, number, predicate; barrier.cluster.wait: none; else the number
            operands = 3 if "red" in t.mods else 0 if "cluster" in t.mods else 1
            number = cfgmod.barrier_number(t) if len(t.args) == operands else None
            if not isinstance(number, ir.Imm) or number.value != 0:
                return False
        return True

    def _declare_runtime(self) -> None:
        self.globaltimer_fn = ll.Function(self.llmod, ll.FunctionType(I64, []), name="cuport_globaltimer")
        self.globaltimer_fn.linkage = "internal"
        b = ll.IRBuilder(self.globaltimer_fn.append_basic_block())
        ts = b.alloca(ll.ArrayType(I64, 2))
        cg = self.declare("clock_gettime", I32, [I32, PTR])
        b.call(cg, [i32c(0), ts])
        sec = b.load(ts, typ=I64)
        nsec = b.load(b.gep(ts, [i64c(8)], source_etype=I8), typ=I64)
        b.ret(b.add(b.mul(sec, i64c(1_000_000_000)), nsec))
        self._emit_barrier_check()

    def _emit_barrier_check(self) -> None:
        """void barrier_check(blk, id): complete every barrier round whose arrivals are in."""
        f = ll.Function(self.llmod, ll.FunctionType(VOID, [PTR, I32]), name="barrier_check")
        f.linkage = "internal"
        self.barrier_check_fn = f
        blk, _id = f.args
        entry = f.append_basic_block()
        b = ll.IRBuilder(entry)
        exited = b.load(b.gep(blk, [i64c(L.BS_EXITED)], source_etype=I8), typ=I32)
        all_threads = b.sub(i32c(self.nthreads), exited)
        for i in range(L.MAX_BARRIERS):

            def fld(base: int, i: int = i) -> ll.Value:
                return b.gep(blk, [i64c(base + 4 * i)], source_etype=I8)

            arrived = b.load(fld(L.BS_ARRIVED), typ=I32)
            expected = b.load(fld(L.BS_EXPECTED), typ=I32)
            need = b.select(b.icmp_unsigned("==", expected, i32c(0)), all_threads, expected)
            ready = b.and_(b.icmp_unsigned("!=", arrived, i32c(0)), b.icmp_unsigned(">=", arrived, need))
            with b.if_then(ready, likely=False):
                b.store(i32c(0), fld(L.BS_ARRIVED))
                b.store(i32c(0), fld(L.BS_EXPECTED))
                g = fld(L.BS_GEN)
                b.store(b.add(b.load(g, typ=I32), i32c(1)), g)
                b.store(b.load(fld(L.BS_RED), typ=I32), fld(L.BS_REDOUT))
                b.store(i32c(0), fld(L.BS_RED))
        b.ret_void()

    def _emit_runner(self, kfn: ll.Function) -> None:
        """block_init(blk, ws) and block_rounds(ctx, blk, ws): run a block's warps in rounds.

        A round calls every warp that can run. Warps return DONE, SUSPENDED (at a barrier),
        YIELDED (at a yield point) or FAILED. block_rounds returns FINISHED when every warp
        is done, FAILED, or BLOCKED when a round saw only yields (the block waits for
        something outside it: the worker may switch to another block).
        """
        nw = self.nwarps
        wsb = self.warp_state_bytes
        simple = self.simple_barriers
        # ---- block_init(blk, ws)
        bi = ll.Function(self.llmod, ll.FunctionType(VOID, [PTR, PTR]), name="block_init")
        bi.linkage = "internal"
        blk, ws = bi.args
        b = ll.IRBuilder(bi.append_basic_block("entry"))
        for off in range(L.BS_EXITED, L.BS_LINEAR, 4):
            b.store(i32c(0), b.gep(blk, [i64c(off)], source_etype=I8))
        if self.kernel_regions is not None:  # (region loops start at region 0, parity 0)
            b.store(i64c(1), b.gep(blk, [i64c(L.BS_ROUNDS)], source_etype=I8))
            b.store(i32c(0), b.gep(blk, [i64c(L.BS_PARITY)], source_etype=I8))
        # the simple protocol keeps no per-barrier counts: only barrier 0's bar.red sum
        for off in (L.BS_RED,) if simple else range(L.BS_ARRIVED, L.BLOCK_STATE_BYTES, 4):
            b.store(i32c(0), b.gep(blk, [i64c(off)], source_etype=I8))
        if self.kernel_lockstep:  # (no warp state is read before the warp writes it)
            b.ret_void()
            self.block_init_fn = bi
            return self._emit_block_rounds(kfn, nw, wsb, simple)
        loop = bi.append_basic_block("clear")
        after = bi.append_basic_block("cleared")
        pre = b.block
        b.branch(loop)
        b.position_at_end(loop)
        w = b.phi(I32)
        w.add_incoming(i32c(0), pre)
        p = b.gep(ws, [b.mul(b.zext(w, I64), i64c(wsb))], source_etype=I8)
        # (region loops read only WS_RESUME of these)
        for off in (L.WS_RESUME,) if self.kernel_regions else (L.WS_RESUME, L.WS_WAITING, L.WS_YCOUNT):
            b.store(i32c(0), b.gep(p, [i64c(off)], source_etype=I8))
        nxt = b.add(w, i32c(1))
        w.add_incoming(nxt, loop)
        b.cbranch(b.icmp_unsigned("<", nxt, i32c(nw)), loop, after)
        b.position_at_end(after)
        b.ret_void()
        self.block_init_fn = bi
        self._emit_block_rounds(kfn, nw, wsb, simple)

    def _emit_block_rounds(self, kfn: ll.Function, nw: int, wsb: int, simple: bool) -> None:
        # ---- block_rounds(ctx, blk, ws) -> FINISHED 0 / FAILED 2 / BLOCKED 3
        rb = ll.Function(self.llmod, ll.FunctionType(I32, [PTR, PTR, PTR]), name="block_rounds")
        rb.linkage = "internal"
        ctx, blk, ws = rb.args
        b = ll.IRBuilder(rb.append_basic_block("entry"))
        if self.kernel_regions is not None:
            # region loops: the kernel's function runs the whole block (region_loops.py)
            b.ret(b.call(kfn, [ctx, blk, ws, i32c(0)]))
            self._emit_worker(rb, nw, wsb)
            return
        round_bb = rb.append_basic_block("round")
        b.branch(round_bb)
        b.position_at_end(round_bb)
        ev0 = b.load(b.gep(blk, [i64c(L.BS_EVENTS)], source_etype=I8), typ=I32)
        release = b.load(b.gep(blk, [i64c(L.BS_RELEASE)], source_etype=I8), typ=I32)
        wl = rb.append_basic_block("warp")
        wnext = rb.append_basic_block("warp_next")
        rdone = rb.append_basic_block("round_done")
        b.branch(wl)
        b.position_at_end(wl)
        w = b.phi(I32, name="w")
        alive = b.phi(I32, name="alive")
        yields = b.phi(I32, name="yields")
        progress = b.phi(I32, name="progress")
        for v in (w, alive, yields, progress):
            v.add_incoming(i32c(0), round_bb)
        wsp = b.gep(ws, [b.mul(b.zext(w, I64), i64c(wsb))], source_etype=I8)
        state = b.load(b.gep(wsp, [i64c(L.WS_RESUME)], source_etype=I8), typ=I32)
        waiting_p = b.gep(wsp, [i64c(L.WS_WAITING)], source_etype=I8)
        waiting = b.load(waiting_p, typ=I32)
        finished = b.icmp_unsigned("==", state, i32c(2))
        check = rb.append_basic_block("check")
        run = rb.append_basic_block("run")
        skip = rb.append_basic_block("skip")
        b.cbranch(finished, wnext, check)
        b.position_at_end(check)
        if simple:
            # at a barrier that is not complete yet: leave the warp alone this round
            held = b.and_(b.icmp_unsigned("==", waiting, i32c(1)), b.icmp_unsigned("==", release, i32c(0)))
            b.cbranch(held, skip, run)
        else:
            b.branch(run)
        b.position_at_end(skip)
        a_skip = b.add(alive, i32c(1))
        b.branch(wnext)
        b.position_at_end(run)
        st = b.call(kfn, [ctx, blk, wsp, w])
        fail = rb.append_basic_block("fail")
        ok = rb.append_basic_block("ok")
        b.cbranch(b.icmp_unsigned("==", st, i32c(FAILED)), fail, ok)
        b.position_at_end(fail)
        b.ret(i32c(FAILED))
        b.position_at_end(ok)
        is_yield = b.icmp_unsigned("==", st, i32c(YIELDED))
        is_susp = b.icmp_unsigned("==", st, i32c(SUSPENDED))
        b.store(b.select(is_yield, i32c(2), b.select(is_susp, i32c(1), i32c(0))), waiting_p)
        y_ok = b.add(yields, b.zext(is_yield, I32))
        p_ok = b.add(progress, b.zext(b.not_(is_yield), I32))
        a_ok = b.add(alive, i32c(1))
        b.branch(wnext)
        b.position_at_end(wnext)
        a_in = b.phi(I32)
        y_in = b.phi(I32)
        p_in = b.phi(I32)
        a_in.add_incoming(alive, wl)
        y_in.add_incoming(yields, wl)
        p_in.add_incoming(progress, wl)
        a_in.add_incoming(a_skip, skip)
        y_in.add_incoming(yields, skip)
        p_in.add_incoming(progress, skip)
        a_in.add_incoming(a_ok, ok)
        y_in.add_incoming(y_ok, ok)
        p_in.add_incoming(p_ok, ok)
        w_next = b.add(w, i32c(1))
        w.add_incoming(w_next, wnext)
        alive.add_incoming(a_in, wnext)
        yields.add_incoming(y_in, wnext)
        progress.add_incoming(p_in, wnext)
        b.cbranch(b.icmp_unsigned("<", w_next, i32c(nw)), wl, rdone)
        b.position_at_end(rdone)
        fin = rb.append_basic_block("finished")
        more = rb.append_basic_block("more")
        b.cbranch(b.icmp_unsigned("==", a_in, i32c(0)), fin, more)
        b.position_at_end(fin)
        b.ret(i32c(0))
        b.position_at_end(more)
        if simple:
            # when no warp is at a yield, every live warp waits at barrier 0: complete it
            rel = b.icmp_unsigned("==", y_in, i32c(0))
            b.store(b.zext(rel, I32), b.gep(blk, [i64c(L.BS_RELEASE)], source_etype=I8))
            with b.if_then(rel):
                b.store(b.load(b.gep(blk, [i64c(L.BS_RED)], source_etype=I8), typ=I32),
                        b.gep(blk, [i64c(L.BS_REDOUT)], source_etype=I8))
                b.store(i32c(0), b.gep(blk, [i64c(L.BS_RED)], source_etype=I8))
        blocked = rb.append_basic_block("blocked")
        go = rb.append_basic_block("go")
        if simple:
            # no warp arrived or finished, some stepped aside at a yield: waiting on others
            idle = b.icmp_unsigned("==", p_in, i32c(0))
        else:
            # warps waiting at an incomplete barrier return at once: only arrivals and
            # exits (the block's event counter) are progress
            ev1 = b.load(b.gep(blk, [i64c(L.BS_EVENTS)], source_etype=I8), typ=I32)
            idle = b.icmp_unsigned("==", ev0, ev1)
        b.cbranch(b.and_(idle, b.icmp_unsigned("!=", y_in, i32c(0))), blocked, go)
        b.position_at_end(blocked)
        b.ret(i32c(3))
        b.position_at_end(go)
        if simple:
            b.branch(round_bb)
        else:
            stuck = rb.append_basic_block("stuck")
            b.cbranch(idle, stuck, round_bb)
            b.position_at_end(stuck)
            self.emit_error(b, ctx, blk, L.ERR_DEADLOCK, self.kernel.line)
            b.ret(i32c(FAILED))
        self._emit_worker(rb, nw, wsb)

    def _emit_worker(self, rb: ll.Function, nw: int, wsb: int) -> None:
        """worker(ctx, id): take blocks from the launch's counter and run them.

        A worker holds up to `resident_slots` blocks at once, each with its own scratch
        (block state, warp states, local windows, shared memory). It runs one block until
        it finishes; when a block reports BLOCKED (all its warps wait at yield points for
        something outside the block), the worker starts another block in a free slot or
        moves on to the next block it holds. Kernels without yield points hold one block.
        Before it moves on from a block that reports BLOCKED with no slot free, the worker
        gives its CPU away (runtime.c's cuport_worker_idle, a sched_yield): what the block
        waits for is another worker's block, and where workers outnumber the free cores that
        worker may be the one waiting for this CPU. Without it 16 workers on 2 cores spun
        until the scheduler preempted them (tests/driver/c/lookback_scan.cu: 2.3-3.3 s of
        CPU against 0.3 s with 2 workers; now 0.25-0.3 s). A BLOCKED report follows a round
        of its warps' spin loops, YIELD_PERIOD trips each (CUB's onesweep look-back, 32
        volatile loads one lane at a time and a fence: ~0.3 us a trip, ~0.17 ms a round of
        its 8 warps), so the yield (~0.3 us where nothing else wants the CPU) costs nothing
        measurable.
        """
        R = self.resident_slots
        wf = ll.Function(self.llmod, ll.FunctionType(VOID, [PTR, I32]), name="worker")
        ctx, wid = wf.args
        b = ll.IRBuilder(wf.append_basic_block("entry"))

        def ctx_field(name: str, t) -> ll.Value:
            return b.load(b.gep(ctx, [i64c(getattr(L.LaunchCtx, name).offset)], source_etype=I8), typ=t)

        scr_arr = ctx_field("scratch", PTR)
        scratch = b.load(b.gep(scr_arr, [b.mul(b.zext(wid, I64), i64c(8))], source_etype=I8), typ=PTR)
        slot_bytes = ctx_field("slot_bytes", I64)
        tmp = CompiledKernelInfo("", self.block, nw, wsb, self.local_window, self.static_shared,
                                 self.dyn_shared_offset, local_align=min(self.local_align, 4096),
                                 shared_align=min(self.shared_align, 4096))

        def slot_blk(sl: ll.Value) -> ll.Value:
            return b.gep(scratch, [b.mul(b.zext(sl, I64), slot_bytes)], source_etype=I8)

        for sl in range(R):
            base = slot_blk(i32c(sl))
            b.store(b.gep(base, [i64c(tmp.shared_offset())], source_etype=I8),
                    b.gep(base, [i64c(L.BS_SHARED)], source_etype=I8))
            b.store(b.gep(base, [i64c(tmp.local_offset())], source_etype=I8),
                    b.gep(base, [i64c(L.BS_LOCAL)], source_etype=I8))
        gx64 = b.zext(ctx_field("grid_x", I32), I64)
        gxy = b.mul(gx64, b.zext(ctx_field("grid_y", I32), I64))
        nblocks = ctx_field("nblocks", I64)
        chunk = b.zext(ctx_field("chunk", I32), I64)
        occ = b.alloca(I32, name="occupied")
        waited = b.alloca(I64, name="waited")  # BLOCKED reports in all (the grid log's)
        cur = b.alloca(I32, name="current")
        nxt = b.alloca(I64, name="next_block")
        end = b.alloca(I64, name="chunk_end")
        # the next block's (x, y, z): divided out once per chunk, then counted up
        cxyz = [b.alloca(I32, name=f"c{a}") for a in "xyz"]
        for slot, v in ((occ, i32c(0)), (waited, i64c(0)), (cur, i32c(0)),
                        (nxt, i64c(0)), (end, i64c(0)),
                        *((c, i32c(0)) for c in cxyz)):
            b.store(v, slot)
        main = wf.append_basic_block("main")
        quit_bb = wf.append_basic_block("quit")
        run = wf.append_basic_block("run")
        admit = wf.append_basic_block("admit")
        b.branch(main)

        # main: stop on a launch error; with no block held, take one
        b.position_at_end(main)
        err = b.load_atomic(b.gep(ctx, [i64c(L.LaunchCtx.error.offset)], source_etype=I8), "monotonic", 4,
                            typ=I32)
        chk = wf.append_basic_block("check_occupied")
        b.cbranch(b.icmp_unsigned("!=", err, i32c(0)), quit_bb, chk)
        b.position_at_end(chk)
        b.cbranch(b.icmp_unsigned("==", b.load(occ), i32c(0)), admit, run)

        # admit: take the next block (grabbing a chunk when needed) into a free slot
        b.position_at_end(admit)
        have = wf.append_basic_block("have_chunk")
        grab = wf.append_basic_block("grab")
        none_left = wf.append_basic_block("none_left")
        b.cbranch(b.icmp_unsigned("<", b.load(nxt), b.load(end)), have, grab)
        b.position_at_end(grab)
        start = b.atomic_rmw("add", b.gep(ctx, [i64c(L.LaunchCtx.next_block.offset)], source_etype=I8),
                             chunk, "monotonic")
        got = wf.append_basic_block("got_chunk")
        b.cbranch(b.icmp_unsigned(">=", start, nblocks), none_left, got)
        b.position_at_end(got)
        e = b.add(start, chunk)
        b.store(b.select(b.icmp_unsigned(">", e, nblocks), nblocks, e), end)
        b.store(start, nxt)
        for c, v in zip(cxyz, (b.urem(start, gx64), b.udiv(b.urem(start, gxy), gx64),
                               b.udiv(start, gxy)), strict=True):
            b.store(b.trunc(v, I32), c)
        b.branch(have)
        b.position_at_end(have)
        lin = b.load(nxt)
        b.store(b.add(lin, i64c(1)), nxt)
        o = b.load(occ)
        free = b.cttz(b.and_(b.not_(o), i32c((1 << R) - 1)), ll.Constant(ll.IntType(1), 1))
        blk = slot_blk(free)
        bx, by, bz = (b.load(c) for c in cxyz)
        for k, v in enumerate((bx, by, bz)):
            b.store(v, b.gep(blk, [i64c(L.BS_CTAID + 4 * k)], source_etype=I8))
        # the one after: x + 1, carrying into y and z
        x1 = b.add(bx, i32c(1))
        wrap_x = b.icmp_unsigned("==", x1, ctx_field("grid_x", I32))
        y1 = b.select(wrap_x, b.add(by, i32c(1)), by)
        wrap_y = b.icmp_unsigned("==", y1, ctx_field("grid_y", I32))
        b.store(b.select(wrap_x, i32c(0), x1), cxyz[0])
        b.store(b.select(wrap_y, i32c(0), y1), cxyz[1])
        b.store(b.select(wrap_y, b.add(bz, i32c(1)), bz), cxyz[2])
        b.store(lin, b.gep(blk, [i64c(L.BS_LINEAR)], source_etype=I8))
        b.call(self.block_init_fn, [blk, b.gep(blk, [i64c(L.BLOCK_STATE_BYTES)], source_etype=I8)])
        b.store(b.or_(o, b.shl(i32c(1), free)), occ)
        b.store(free, cur)
        b.branch(run)
        # nothing left to take: go on with the blocks held, or stop
        b.position_at_end(none_left)
        b.store(nblocks, nxt)
        b.store(nblocks, end)
        b.cbranch(b.icmp_unsigned("==", b.load(occ), i32c(0)), quit_bb, run)

        # run the current block until it finishes or waits on others
        b.position_at_end(run)
        c = b.load(cur)
        blk = slot_blk(c)
        r = b.call(rb, [ctx, blk, b.gep(blk, [i64c(L.BLOCK_STATE_BYTES)], source_etype=I8)])
        done_bb = wf.append_basic_block("block_done")
        not_done = wf.append_basic_block("block_waits")
        failed = b.icmp_unsigned("==", r, i32c(FAILED))
        b.cbranch(failed, quit_bb, not_done)
        b.position_at_end(not_done)
        waits = wf.append_basic_block("waits")
        b.cbranch(b.icmp_unsigned("==", r, i32c(0)), done_bb, waits)

        def next_held() -> None:
            # cur = the next held slot after cur (round robin)
            o2 = b.load(occ)
            c2 = b.load(cur)
            rot = b.or_(b.lshr(o2, b.add(c2, i32c(1))),
                        b.shl(o2, b.sub(i32c(R), b.add(c2, i32c(1)))))
            rot = b.and_(rot, i32c((1 << R) - 1))
            step = b.cttz(rot, ll.Constant(ll.IntType(1), 0))
            b.store(b.urem(b.add(b.add(c2, i32c(1)), step), i32c(R)), cur)

        b.position_at_end(done_bb)
        b.store(b.and_(b.load(occ), b.not_(b.shl(i32c(1), b.load(cur)))), occ)
        more_held = wf.append_basic_block("more_held")
        b.cbranch(b.icmp_unsigned("==", b.load(occ), i32c(0)), main, more_held)
        b.position_at_end(more_held)
        next_held()
        b.branch(main)

        # the block waits: start another one if a slot is free, else switch to the next held
        b.position_at_end(waits)
        b.store(b.add(b.load(waited), i64c(1)), waited)
        full = b.icmp_unsigned("==", b.load(occ), i32c((1 << R) - 1))
        switch = wf.append_basic_block("switch_block")
        can_admit = wf.append_basic_block("can_admit")
        b.cbranch(full, switch, can_admit)
        b.position_at_end(can_admit)
        more_blocks = b.or_(b.icmp_unsigned("<", b.load(nxt), b.load(end)),
                            b.icmp_unsigned("<", b.load(end), nblocks))
        b.cbranch(more_blocks, admit, switch)
        b.position_at_end(switch)
        if self.has_yields:
            # the block waits on others: let the OS run another thread (the worker whose
            # block it waits for may be waiting for this CPU)
            b.call(self._runtime_fn("cuport_worker_idle", []), [])
        next_held()
        b.branch(main)

        b.position_at_end(quit_bb)
        if self.has_yields:
            b.call(self._runtime_fn("cuport_worker_waited", [I64]), [b.load(waited)])
        b.ret_void()

    def _runtime_fn(self, name: str, args: list) -> ll.Function:
        """A function of runtime.c's that the worker calls (hostcalls.address_of binds it)."""
        if name not in self.host_symbols:
            self.host_symbols.append(name)
        return self.declare(name, VOID, args)


# ---------------------------------------------------------------- the pipeline, in order

Step = Callable[[ModuleCompiler], None]

#: (name, step, why it is here). `cuport ptx --dump-after NAME` prints the state after a step.
PIPELINE: list[tuple[str, Step, str]] = [
    ("reachable", ModuleCompiler._step_reachable,
     "the kernel and every device function its calls or function-address operands reach"),
    ("inline", ModuleCompiler._step_inline,
     "a barrier or a spin loop inside a device function must be in the kernel's body, where "
     "warps can suspend at it: such callees (and their callers) are copied into the kernel"),
    ("yields", ModuleCompiler._step_yields,
     "after inlining, so that spin loops through inlined callees are seen: loops that may "
     "wait for other threads (themselves or through a call) get a point where the warp "
     "steps aside"),
    ("layout", ModuleCompiler._step_layout,
     "offsets of shared, local, parameter and global memory over the final set of functions"),
    ("cfg", ModuleCompiler._step_cfg,
     "the kernel's blocks in the priority order that makes warps reconverge (passes/cfg.py), "
     "with yield points as block ends"),
    ("divergence", ModuleCompiler._step_divergence,
     "needs the CFG and the block shape: registers that differ between a warp's lanes, blocks "
     "where only part of the warp may run"),
    ("predicate", ModuleCompiler._step_predicate,
     "needs divergence: short straight-line code that a divergent branch jumps over runs "
     "predicated instead (passes/predicate.py), so that its two ends are no places where "
     "lanes wait (whose every live register LLVM merges at each); then CFG and divergence "
     "again"),
    ("liveness", ModuleCompiler._step_liveness,
     "needs divergence: what lives across blocks, and which writes in split blocks must keep "
     "the other lanes' values"),
    ("barriers", ModuleCompiler._step_barriers,
     "needs divergence: whether every barrier is in converged code (the simple protocol: "
     "warps in rounds, no per-barrier waits)"),
    ("regions", ModuleCompiler._step_regions,
     "needs the simple protocol: a kernel whose barriers are all converged (and that has no "
     "yield points) runs each stretch between barriers as a loop over the block's warps, "
     "warps stepping aside now and then in loops that read global memory "
     "(passes/regions.py), unless duplicated code would more than double it"),
    ("emit", ModuleCompiler._step_emit,
     "LLVM IR of the kernel's warp function and the device functions it calls, through "
     "cuport/isa's families"),
    ("runner", ModuleCompiler._step_runner,
     "the block runner and the worker entry around the warp function"),
    ("optimize", ModuleCompiler._step_optimize, "LLVM's O3 pipeline without its vectorizers"),
    ("codegen", ModuleCompiler._step_codegen, "the object file for this host's CPU"),
]

STEPS = [name for name, _, _ in PIPELINE]


def _dump(mc: ModuleCompiler, step: str) -> str:
    def body(fn: ir.Function) -> str:
        return "\n".join(s.text() if isinstance(s, ir.Instr) else f"{s.name}:" for s in fn.body or ())

    if step == "reachable":
        return "\n".join(f.name for f in mc.funcs)
    if step in ("inline", "yields", "predicate"):
        return body(mc.kernel)
    if step == "layout":
        return (f"shared {mc.shared_offsets} static={mc.static_shared} dyn@{mc.dyn_shared_offset}\n"
                f"local window {mc.local_window} bytes per lane\nparams {mc.kernel_param_offsets}\n"
                f"globals {mc.global_symbols}\nresident slots {mc.resident_slots}")
    if step == "cfg":
        return "\n".join(f"{b.index} {b.name}: succs={b.succs} instrs={len(b.instrs)}"
                         + (" exit-sink" if b.exit_sink else "") for b in mc.kernel_cfg.blocks)
    if step == "divergence":
        d = mc.kernel_div
        return (f"varying: {sorted(d.varying)}\nsplit blocks: {sorted(d.split_blocks)}\n"
                f"divergent branches: {sorted(d.divergent_branches)}")
    if step == "liveness":
        lines = [f"{b.name}: {sorted(mc.kernel_live[b.index])}" for b in mc.kernel_cfg.blocks]
        blend = mc.kernel_div.blend
        return "\n".join(lines) + f"\nblended in split blocks: {sorted(blend) if blend is not None else 'all'}"
    if step == "regions":
        if mc.kernel_regions is None:
            return "no region loops (warps suspend at barriers)"
        return ("warps in lockstep\n" if mc.kernel_lockstep else "") + "\n".join(f"region {k}: from {mc.kernel_cfg.blocks[r.entry].name}"
                         + (" (interleaved)" if r.interleave else "") + ": "
                         + " ".join(mc.kernel_cfg.blocks[x].name for x in r.blocks)
                         for k, r in enumerate(mc.kernel_regions))
    if step == "barriers":
        bars = [b.name for b in mc.kernel_cfg.blocks if b.term is not None and cfgmod.is_suspend(b.term)]
        return (f"barriers and yields: {bars}\nsimple protocol: "
                f"{'yes' if mc.simple_barriers else 'no (warps wait per barrier)'}")
    if step in ("emit", "runner"):
        return str(mc.llmod)
    if step == "optimize":
        return str(mc.llvm_module)
    if step == "codegen":
        return jit.emit_assembly(mc.llvm_module)
    raise KeyError(step)


def run_pipeline(mc: ModuleCompiler, until: str = "codegen", dump_after: str | None = None,
                 out=None) -> ModuleCompiler:
    """Run PIPELINE's steps up to and including `until` (or `dump_after`, whose state is
    written to `out`, default stdout)."""
    if dump_after is not None and dump_after not in STEPS:
        raise KeyError(f"no step {dump_after!r}; the steps are {', '.join(STEPS)}")
    last = dump_after or until
    times: list[tuple[str, float]] | None = [] if os.environ.get("CUPORT_COMPILE_TIMES") else None
    for name, step, _ in PIPELINE:
        t0 = time.thread_time()
        step(mc)
        if times is not None:
            times.append((name, time.thread_time() - t0))
        if name == dump_after:
            (out or sys.stdout).write(_dump(mc, name) + "\n")
        if name == last:
            break
    if times:
        print(f"cuport: compile of {mc.llmod.name} {mc.block}: {sum(t for _, t in times):.2f} s CPU ("
              + ", ".join(f"{n} {t:.2f}" for n, t in times if t >= 0.005) + ")",
              file=sys.stderr, flush=True)
    return mc


def compile_object(ptx: ir.Module, kernel: str, block: tuple[int, int, int], **kw
                   ) -> tuple[bytes, CompiledKernelInfo]:
    """The whole pipeline: the object file of `kernel` for `block`, and what the launcher needs."""
    with gc_paused():
        mc = run_pipeline(ModuleCompiler(ptx, kernel, block, **kw))
        return mc.object, mc.info

