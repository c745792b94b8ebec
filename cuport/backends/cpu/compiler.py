"""PTX module + kernel + block shape → one LLVM module ready for the JIT.

The LLVM module holds the kernel's warp function, every device function it can reach, a
block runner that schedules the block's warps around barriers, and a `worker` entry that
pulls blocks from the launch's shared counter until the grid is done. Module-scope
`.global`/`.const` variables are external symbols: the backend allocates them once per
loaded module and binds their addresses when it links the compiled object, so the same
object (and its disk cache entry) serves every load.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llvmlite import ir as ll

from ...passes import cfg as cfgmod
from ...passes import divergence, liveness
from ...passes.inline import inline_barrier_functions
from ...ptx import ir
from . import layout as L
from .emit import FAILED, SUSPENDED, FunctionEmitter, UnsupportedError, i32c, i64c
from .types import I8, I32, I64, PTR, VOID

W = L.WARP
DEFAULT_STACK = 1024  # bytes of per-thread stack for calls (cudaLimitStackSize default)


@dataclass
class CompiledKernelInfo:
    """What the launcher needs to know about a compiled specialization."""

    kernel: str
    block: tuple[int, int, int]
    nwarps: int
    warp_state_bytes: int
    local_window: int  # bytes per lane
    static_shared: int
    dyn_shared_offset: int
    global_symbols: dict[str, str] = field(default_factory=dict)  # LLVM symbol → PTX variable
    host_symbols: list[str] = field(default_factory=list)  # runtime callbacks the object imports

    def scratch_bytes(self, dyn_smem: int) -> int:
        return self.shared_offset() + self.dyn_shared_offset + dyn_smem + 64

    def shared_offset(self) -> int:
        off = L.BLOCK_STATE_BYTES
        off += self.nwarps * self.warp_state_bytes
        off = (off + 63) & ~63
        off += self.nwarps * W * self.local_window
        return (off + 255) & ~255

    def local_offset(self) -> int:
        off = L.BLOCK_STATE_BYTES + self.nwarps * self.warp_state_bytes
        return (off + 63) & ~63


def global_symbol_name(index: int) -> str:
    return f"cuport_g{index}"


#: Function "addresses" are tokens, the same in every compiled specialization of a module
#: (a pointer stored by one kernel may be called by another); an indirect call switches
#: on the token. The base keeps them far from any real address.
FUNC_TOKEN_BASE = 0x7F0F_0000_0000_0000


def function_token(module: ir.Module, name: str) -> int:
    return FUNC_TOKEN_BASE + list(module.functions).index(name)


class ModuleCompiler:
    def __init__(self, ptx: ir.Module, kernel: str, block: tuple[int, int, int], nsm: int = 1,
                 stack_bytes: int = DEFAULT_STACK) -> None:
        if kernel not in ptx.functions or not ptx.functions[kernel].is_entry:
            raise UnsupportedError(f"no kernel named {kernel}")
        self.ptx = ptx
        self.kernel = ptx.functions[kernel]
        self.block = block
        self.nthreads = block[0] * block[1] * block[2]
        self.nwarps = (self.nthreads + W - 1) // W
        self.nsm = nsm
        self.stack_bytes = stack_bytes
        self.llmod = ll.Module(name=kernel)
        self._decls: dict[str, ll.Function] = {}
        self._funcs: dict[str, ll.Function] = {}
        self._pending: list[str] = []
        self.warp_state_bytes = L.WS_HEADER
        self.frames: dict[str, int] = {}
        self.host_symbols: list[str] = []
        import os

        self.check_convergence = os.environ.get("CUPORT_CHECK_CONVERGENCE") == "1"

    # ------------------------------------------------------------ analysis helpers
    def _reachable(self) -> list[ir.Function]:
        seen: dict[str, ir.Function] = {}
        work = [self.kernel]
        while work:
            f = work.pop()
            if f.name in seen:
                continue
            seen[f.name] = f
            for st in f.body or ():
                if isinstance(st, ir.Instr):
                    for a in st.args:
                        names = []
                        if isinstance(a, (ir.Sym, ir.SymAddr)):
                            names.append(a.name)
                        for nm in names:
                            g = self.ptx.functions.get(nm)
                            if g is not None and g.is_definition and not g.is_entry:
                                work.append(g)
        return list(seen.values())

    def _layout_shared(self, funcs: list[ir.Function]) -> None:
        self.shared_offsets: dict[str, int] = {}
        off = 0
        externs: list[ir.Var] = []
        vars_ = [v for v in self.ptx.variables if v.space == "shared"]
        for f in funcs:
            vars_ += [v for v in f.locals if v.space == "shared"]
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

    def _local_window(self, funcs: list[ir.Function]) -> int:
        def frame(f: ir.Function) -> int:
            off = 0
            for v in f.locals:
                if v.space == "local":
                    a = max(v.alignment, 1)
                    off = (off + a - 1) // a * a + v.size
            return (off + 15) & ~15

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
        return max((need + 15) & ~15, 16)

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

    def _make_emitter(self, fn: ir.Function) -> FunctionEmitter:
        g = cfgmod.build(fn)
        div = divergence.analyze(g, self.block)
        live = liveness.live_in(g, div)
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
    def compile(self) -> tuple[ll.Module, CompiledKernelInfo]:
        funcs = inline_barrier_functions(self.ptx, self._reachable())
        self.kernel = next(f for f in funcs if f.name == self.kernel.name)
        self._layout_globals()
        self._layout_shared(funcs)
        self.local_window = self._local_window(funcs)
        self.has_exit = any(
            isinstance(s, ir.Instr) and s.op == "exit" for f in funcs for s in (f.body or ())
        )
        self.uses_barriers = any(
            isinstance(s, ir.Instr) and cfgmod.is_barrier(s) for s in (self.kernel.body or ())
        )
        self.simple_barriers = self._all_barriers_simple()
        self._declare_runtime()
        self._emitters: dict[str, FunctionEmitter] = {}
        kem = self._make_emitter(self.kernel)
        kfn = kem.declare()
        kem.emit()
        while self._pending:
            name = self._pending.pop()
            self._emitters[name].emit()
        self._emit_runner(kfn)
        info = CompiledKernelInfo(
            kernel=self.kernel.name,
            block=self.block,
            nwarps=self.nwarps,
            warp_state_bytes=self.warp_state_bytes,
            local_window=self.local_window,
            static_shared=self.static_shared,
            dyn_shared_offset=self.dyn_shared_offset,
            global_symbols=dict(self.global_symbols),
            host_symbols=list(self.host_symbols),
        )
        return self.llmod, info

    def _all_barriers_simple(self) -> bool:
        """True when every barrier is an unguarded `bar.sync 0` / `barrier.sync 0` (or bar.red
        on barrier 0) without a thread count, in converged code: then warps only ever wait for
        the whole block, and a round-robin over the warps implements the barrier."""
        g = cfgmod.build(self.kernel)
        div = divergence.analyze(g, self.block)
        for blk in g.blocks:
            t = blk.term
            if t is None or not cfgmod.is_barrier(t):
                continue
            if t.guard is not None or blk.index in div.split_blocks:
                return False
            args = list(t.args)
            if "red" in t.mods:
                args = args[1:]
                if len(args) != 2:
                    return False
                args = args[:1]
            if len(args) != 1 or not isinstance(args[0], ir.Imm) or args[0].value != 0:
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
        nw = self.nwarps
        wsb = self.warp_state_bytes
        # ---- run_block(ctx, blk, ws) -> 0 ok / 2 failed
        rb = ll.Function(self.llmod, ll.FunctionType(I32, [PTR, PTR, PTR]), name="run_block")
        rb.linkage = "internal"
        ctx, blk, ws = rb.args
        b = ll.IRBuilder(rb.append_basic_block("entry"))
        # clear per-block state (not the pointers)
        for off in range(L.BS_EXITED, L.BS_LINEAR, 4):
            b.store(i32c(0), b.gep(blk, [i64c(off)], source_etype=I8))
        for off in range(L.BS_ARRIVED, L.BLOCK_STATE_BYTES, 4):
            b.store(i32c(0), b.gep(blk, [i64c(off)], source_etype=I8))
        for w in range(nw) if nw <= 64 else ():
            b.store(i32c(0), b.gep(ws, [i64c(w * wsb + L.WS_RESUME)], source_etype=I8))
        if nw > 64:
            loop = rb.append_basic_block("clear")
            after = rb.append_basic_block("cleared")
            pre = b.block
            b.branch(loop)
            b.position_at_end(loop)
            w = b.phi(I32)
            w.add_incoming(i32c(0), pre)
            p = b.gep(ws, [b.mul(b.zext(w, I64), i64c(wsb))], source_etype=I8)
            b.store(i32c(0), p)
            nxt = b.add(w, i32c(1))
            w.add_incoming(nxt, loop)
            b.cbranch(b.icmp_unsigned("<", nxt, i32c(nw)), loop, after)
            b.position_at_end(after)
        # rounds over the warps until all are done
        round_bb = rb.append_basic_block("round")
        b.branch(round_bb)
        b.position_at_end(round_bb)
        ev0 = b.load(b.gep(blk, [i64c(L.BS_EVENTS)], source_etype=I8), typ=I32)
        wl = rb.append_basic_block("warp")
        wnext = rb.append_basic_block("warp_next")
        rdone = rb.append_basic_block("round_done")
        b.branch(wl)
        b.position_at_end(wl)
        w = b.phi(I32, name="w")
        alive = b.phi(I32, name="alive")
        w.add_incoming(i32c(0), round_bb)
        alive.add_incoming(i32c(0), round_bb)
        wsp = b.gep(ws, [b.mul(b.zext(w, I64), i64c(wsb))], source_etype=I8)
        state = b.load(b.gep(wsp, [i64c(L.WS_RESUME)], source_etype=I8), typ=I32)
        finished = b.icmp_unsigned("==", state, i32c(2))
        run = rb.append_basic_block("run")
        b.cbranch(finished, wnext, run)
        b.position_at_end(run)
        st = b.call(kfn, [ctx, blk, wsp, w])
        failed = b.icmp_unsigned("==", st, i32c(FAILED))
        ok = rb.append_basic_block("ok")
        fail = rb.append_basic_block("fail")
        b.cbranch(failed, fail, ok)
        b.position_at_end(fail)
        b.ret(i32c(FAILED))
        b.position_at_end(ok)
        still = b.zext(b.icmp_unsigned("==", st, i32c(SUSPENDED)), I32)
        alive_ok = b.add(alive, still)
        b.branch(wnext)
        b.position_at_end(wnext)
        alive_in = b.phi(I32)
        alive_in.add_incoming(alive, wl)
        alive_in.add_incoming(alive_ok, ok)
        nw_next = b.add(w, i32c(1))
        w.add_incoming(nw_next, wnext)
        alive.add_incoming(alive_in, wnext)
        b.cbranch(b.icmp_unsigned("<", nw_next, i32c(nw)), wl, rdone)
        b.position_at_end(rdone)
        all_done = b.icmp_unsigned("==", alive_in, i32c(0))
        fin = rb.append_basic_block("finished")
        more = rb.append_basic_block("more")
        b.cbranch(all_done, fin, more)
        b.position_at_end(fin)
        b.ret(i32c(0))
        b.position_at_end(more)
        if self.simple_barriers:
            # every live warp waits at barrier 0: the round completes it
            b.store(b.load(b.gep(blk, [i64c(L.BS_RED)], source_etype=I8), typ=I32),
                    b.gep(blk, [i64c(L.BS_REDOUT)], source_etype=I8))
            b.store(i32c(0), b.gep(blk, [i64c(L.BS_RED)], source_etype=I8))
            b.branch(round_bb)
            return self._emit_worker(rb, nw, wsb)
        ev1 = b.load(b.gep(blk, [i64c(L.BS_EVENTS)], source_etype=I8), typ=I32)
        stuck = rb.append_basic_block("stuck")
        b.cbranch(b.icmp_unsigned("==", ev0, ev1), stuck, round_bb)
        b.position_at_end(stuck)
        self.emit_error(b, ctx, blk, L.ERR_DEADLOCK, self.kernel.line)
        b.ret(i32c(FAILED))
        self._emit_worker(rb, nw, wsb)

    def _emit_worker(self, rb: ll.Function, nw: int, wsb: int) -> None:
        # ---- worker(ctx, worker_id)
        wf = ll.Function(self.llmod, ll.FunctionType(VOID, [PTR, I32]), name="worker")
        ctx, wid = wf.args
        b = ll.IRBuilder(wf.append_basic_block("entry"))
        scr_arr = b.load(b.gep(ctx, [i64c(L.LaunchCtx.scratch.offset)], source_etype=I8), typ=PTR)
        scratch = b.load(b.gep(scr_arr, [b.mul(b.zext(wid, I64), i64c(8))], source_etype=I8), typ=PTR)
        info_tmp = CompiledKernelInfo("", self.block, nw, wsb, self.local_window, self.static_shared,
                                      self.dyn_shared_offset)
        blk = scratch
        wsbase = b.gep(scratch, [i64c(L.BLOCK_STATE_BYTES)], source_etype=I8)
        local = b.gep(scratch, [i64c(info_tmp.local_offset())], source_etype=I8)
        shared = b.gep(scratch, [i64c(info_tmp.shared_offset())], source_etype=I8)
        b.store(shared, b.gep(blk, [i64c(L.BS_SHARED)], source_etype=I8))
        b.store(local, b.gep(blk, [i64c(L.BS_LOCAL)], source_etype=I8))
        gx = b.load(b.gep(ctx, [i64c(L.LaunchCtx.grid_x.offset)], source_etype=I8), typ=I32)
        gy = b.load(b.gep(ctx, [i64c(L.LaunchCtx.grid_y.offset)], source_etype=I8), typ=I32)
        nblocks = b.load(b.gep(ctx, [i64c(L.LaunchCtx.nblocks.offset)], source_etype=I8), typ=I64)
        chunk = b.zext(b.load(b.gep(ctx, [i64c(L.LaunchCtx.chunk.offset)], source_etype=I8), typ=I32), I64)
        grab = wf.append_basic_block("grab")
        b.branch(grab)
        b.position_at_end(grab)
        err = b.load_atomic(b.gep(ctx, [i64c(L.LaunchCtx.error.offset)], source_etype=I8), "monotonic", 4, typ=I32)
        quit_bb = wf.append_basic_block("quit")
        go = wf.append_basic_block("go")
        b.cbranch(b.icmp_unsigned("!=", err, i32c(0)), quit_bb, go)
        b.position_at_end(go)
        start = b.atomic_rmw("add", b.gep(ctx, [i64c(L.LaunchCtx.next_block.offset)], source_etype=I8), chunk, "monotonic")
        have = wf.append_basic_block("have")
        b.cbranch(b.icmp_unsigned(">=", start, nblocks), quit_bb, have)
        b.position_at_end(have)
        end = b.add(start, chunk)
        end = b.select(b.icmp_unsigned(">", end, nblocks), nblocks, end)
        body = wf.append_basic_block("block")
        b.branch(body)
        b.position_at_end(body)
        lin = b.phi(I64)
        lin.add_incoming(start, have)
        gx64 = b.zext(gx, I64)
        gxy = b.mul(gx64, b.zext(gy, I64))
        bx = b.urem(lin, gx64)
        by = b.udiv(b.urem(lin, gxy), gx64)
        bz = b.udiv(lin, gxy)
        for k, v in enumerate((bx, by, bz)):
            b.store(b.trunc(v, I32), b.gep(blk, [i64c(L.BS_CTAID + 4 * k)], source_etype=I8))
        b.store(lin, b.gep(blk, [i64c(L.BS_LINEAR)], source_etype=I8))
        r = b.call(rb, [ctx, blk, wsbase])
        cont = wf.append_basic_block("cont")
        b.cbranch(b.icmp_unsigned("!=", r, i32c(0)), quit_bb, cont)
        b.position_at_end(cont)
        nxt = b.add(lin, i64c(1))
        lin.add_incoming(nxt, cont)
        b.cbranch(b.icmp_unsigned("<", nxt, end), body, grab)
        b.position_at_end(quit_bb)
        b.ret_void()
