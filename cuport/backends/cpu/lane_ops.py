"""The CPU backend's per-lane escapes: code that runs once per executing lane of a warp
(texture sampling, surface accesses) and the failure exit of a kernel.
"""

from __future__ import annotations

from dataclasses import replace

from llvmlite import ir as ll

from ...isa.types import I1, I32, PTR, VOID, vec
from . import layout as L
from .memory_ops import Elements, for_each_lane, lane_pointers

#: the failures isa lowerings may raise with em.fail_if, and the launch error they set
FAILURES = {"illegal_address": L.ERR_ILLEGAL_ADDRESS, "trap": L.ERR_TRAP, "assert": L.ERR_ASSERT,
            "misaligned": L.ERR_MISALIGNED, "illegal_instruction": L.ERR_ILLEGAL_INSTRUCTION}


class _NoMasks(dict):
    """The mask cache while building outlined code: the warp's masks are the caller's."""

    def __contains__(self, key) -> bool:
        raise AssertionError(f"internal: the warp's {key} mask inside outlined code")


class _CallMasks(_NoMasks):
    """The mask cache while building an outline_access function: the executing lanes are its
    second argument (an i32), no other mask of the warp's is there."""

    exec: ll.Value

    def __contains__(self, key) -> bool:
        if key == "exec":
            return True
        return super().__contains__(key)

    def __getitem__(self, key):
        if key == "exec":
            return self.exec
        return super().__getitem__(key)


def _i32(v: int) -> ll.Constant:
    return ll.Constant(I32, v)


def _lane(b: ll.IRBuilder, v: ll.Value, lane: ll.Value) -> ll.Value:
    return b.extract_element(v, lane) if isinstance(v.type, ll.VectorType) else v


class LaneOps:
    """Mixin of the FunctionEmitter."""

    def fail_if(self, bad: ll.Value, kind: str) -> None:
        """Stop the kernel with the launch error `kind` (FAILURES) when the i1 `bad` holds."""
        b = self.b
        fault = self.llfn.append_basic_block("fault")
        ok = self.llfn.append_basic_block("no_fault")
        b.cbranch(bad, fault, ok)
        b.position_at_end(fault)
        self.mc.emit_error(b, self.ctx, self.blk, FAILURES[kind], self.ins.line)
        b.ret(ll.Constant(I32, L.FAILED))
        b.position_at_end(ok)

    def fail_unless_member(self, member: ll.Value, kind: str) -> None:
        """fail_if when an executing lane is not in its `member` mask (isa/api.py)."""
        b = self.b
        if self.vec:  # each lane's own bit of its own mask
            own = b.trunc(b.lshr(member, self.lane), vec(ll.IntType(1)))
            outside = b.bitcast(b.not_(own), I32)
        else:  # one mask for the warp
            outside = b.not_(member)
        hit = b.and_(outside, self.exec_mask())
        self.fail_if(b.icmp_unsigned("!=", hit, _i32(0)), kind)

    def texture_facts(self, image) -> None:
        """Nothing: a CPU kernel is compiled once for every launch, and its warps decide
        what the descriptor says once per sample (isa/texture_sampler.py)."""
        return None

    def zero_bytes(self, size: int) -> ll.Value:
        """A zeroed constant global of the module, at least `size` bytes (isa/api.py)."""
        mod = self.module
        try:
            g = mod.get_global("cuport_null_descriptor")
        except KeyError:
            g = None
        if g is None or g.value_type.count < size:
            t = ll.ArrayType(ll.IntType(8), size)
            g = ll.GlobalVariable(mod, t, name=mod.get_unique_name("cuport_null_descriptor") if g else
                                  "cuport_null_descriptor")
            g.linkage = "internal"
            g.global_constant = True
            g.initializer = ll.Constant(t, None)
        return self.b.ptrtoint(g, ll.IntType(64))

    def outline(self, key: str, args: list[ll.Value], body) -> list[ll.Value]:
        """body(args) as a function of the module, built once per `key` and called (isa/api.py):
        a kernel with hundreds of wmma.mma compiles one copy of the products."""
        return self._outlined(key, args, body, _NoMasks())

    def outline_access(self, key: str, acc, args: list[ll.Value], body) -> list[ll.Value]:
        """outline with memory (isa/api.py): the function also takes the access's host
        pointer (one, or one per lane) and the executing lanes, with which `body`'s loads and
        stores are made (memory_ops.Elements): a wmma.load's offsets, vector loads of its
        runs, the order of its elements and its registers, once per module."""
        base = lane_pointers(self, acc.mem, acc.space)
        shape = "v" if isinstance(base.type, ll.VectorType) else "u"
        shape += "".join("v" if isinstance(a.type, ll.VectorType) else "u" for a in args)

        def build(params: list[ll.Value]) -> list[ll.Value]:
            return body(Elements(self, acc, params[0]), params[2:])

        return self._outlined(f"{key}.{shape}", [base, self.exec_mask(), *args], build,
                              _CallMasks())

    def _outlined(self, key: str, args: list[ll.Value], body, masks: dict) -> list[ll.Value]:
        """body(args) as a function built once per `key` (noinline: LLVM's inliner would
        put a function of a few large intrinsics back at every site, where codegen expands
        them), called here; the results come back through a stack buffer of the caller.
        `masks`: the mask cache while building it (_CallMasks: the second argument is the
        call's executing lanes)."""
        b = self.b
        name = f"cuport.outlined.{key}"
        done = self.mc.outlined.get(name)
        if done is None:
            fn = ll.Function(self.module, ll.FunctionType(VOID, [a.type for a in args] + [PTR]), name=name)
            fn.linkage = "internal"
            fn.attributes.add("noinline")
            entry, start = fn.append_basic_block("entry"), fn.append_basic_block("body")
            ll.IRBuilder(entry).branch(start)  # the entry holds the body's stack slots only
            saved = self.b, self.llfn, self._mask_cache, self.ins, self.__dict__.get("_dummy"), \
                self.__dict__.get("_dummy_run")
            self.b, self.llfn, self._mask_cache = ll.IRBuilder(start), fn, masks
            self._dummy = self._dummy_run = None  # (stack slots of the function being built)
            if self.ins is not None and self.ins.guard is not None:
                self.ins = replace(self.ins, guard=None)  # (its lanes are in the mask argument)
            if isinstance(masks, _CallMasks):
                masks.exec = fn.args[1]
            try:
                outs = body(list(fn.args[:-1]))
                out_t = ll.LiteralStructType([v.type for v in outs])
                for i, v in enumerate(outs):
                    self.b.store(v, self.b.gep(fn.args[-1], [_i32(0), _i32(i)], source_etype=out_t))
                self.b.ret_void()
            finally:
                self.b, self.llfn, self._mask_cache, self.ins, self._dummy, self._dummy_run = saved
            done = self.mc.outlined[name] = (fn, out_t)
        fn, out_t = done
        if not out_t.elements:
            b.call(fn, [*args, ll.Constant(PTR, None)])
            return []
        buf = self.outlined_results.get(name)
        if buf is None:
            buf = self.outlined_results[name] = self.entry_alloca(out_t, "outlined")
        b.call(fn, [*args, buf])
        return [b.load(b.gep(buf, [_i32(0), _i32(i)], source_etype=out_t), typ=t)
                for i, t in enumerate(out_t.elements)]

    def per_lane(self, args: list[ll.Value], body, nres: int = 0, t: ll.Type = I32) -> list[ll.Value]:
        """Run `body(scalar args) -> [results of type t]` for each executing lane (once, for the
        warp, in uniform mode) and return the results as the warp's values (vectors or scalars)."""
        b = self.b
        if not self.vec:
            execs = b.icmp_unsigned("!=", self.exec_mask(), ll.Constant(I32, 0))
            pre = b.block
            run = self.llfn.append_basic_block("tex_run")
            join = self.llfn.append_basic_block("tex_join")
            b.cbranch(execs, run, join)
            b.position_at_end(run)
            res = body(args)
            end = b.block
            b.branch(join)
            b.position_at_end(join)
            out = []
            for r in res:
                p = b.phi(r.type)
                p.add_incoming(r, end)
                p.add_incoming(ll.Constant(r.type, 0), pre)
                out.append(p)
            return out

        def step(lane, accs):
            res = body([_lane(b, a, lane) for a in args])
            return [b.insert_element(acc, r, lane) for acc, r in zip(accs, res, strict=True)]

        zero = ll.Constant(vec(t), None)
        return for_each_lane(self, self.exec_mask(), [zero] * nres, step)

    def per_warp(self, key: ll.Value, args: list[ll.Value], lane_body, warp_body, nres: int = 0,
                 t: ll.Type = I32) -> list[ll.Value]:
        """warp_body once where the executing lanes hold one `key` (isa/api.py), else
        per_lane; lanes that do not execute read 0 either way."""
        b = self.b
        if not self.vec:
            return self.per_lane([key, *args], lane_body, nres, t)
        mask = self.exec_mask()
        lanes = b.bitcast(mask, vec(I1))
        some = b.icmp_unsigned("!=", mask, _i32(0))
        if isinstance(key.type, ll.VectorType):
            first = b.extract_element(key, b.and_(b.cttz(mask, ll.Constant(I1, 0)), _i32(31)))
            same = b.icmp_unsigned("==", key, self.splat(first))
            same = b.select(lanes, same, ll.Constant(vec(I1), [1] * 32))  # others may be poison
            go = b.and_(some, b.icmp_unsigned("==", b.bitcast(same, I32), _i32(-1)))
        else:
            first, go = key, some
        warp = self.llfn.append_basic_block("tex_warp")
        lane = self.llfn.append_basic_block("tex_lanes")
        join = self.llfn.append_basic_block("tex_warp_join")
        b.cbranch(go, warp, lane)
        b.position_at_end(warp)
        wide = [a if isinstance(a.type, ll.VectorType) else self.splat(a) for a in args]
        zero = ll.Constant(vec(t), None)
        wres = [b.select(lanes, r, zero) for r in warp_body(first, wide, lanes)]
        wend = b.block
        b.branch(join)
        b.position_at_end(lane)
        if isinstance(key.type, ll.VectorType):
            lres = self.per_lane([key, *args], lane_body, nres, t)
        else:  # no lane executes
            lres = [zero] * len(wres)
        lend = b.block
        b.branch(join)
        b.position_at_end(join)
        out = []
        for x, y in zip(wres, lres, strict=True):
            p = b.phi(x.type)
            p.add_incoming(x, wend)
            p.add_incoming(y, lend)
            out.append(p)
        return out
