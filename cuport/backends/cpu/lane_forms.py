"""Registers kept as exact lane formulas (passes/lanes.py): scalar leaves instead of vectors.

A register with a form holds no `<32 x T>` value: the emitter keeps its leaves (u, and ib
when the form widens a 32-bit term) in scalar stack slots, computes them from the operands'
leaves with scalar arithmetic, and builds the lanes' vector only where an instruction
wants it (splat plus a constant vector, a few instructions that LLVM shares). Saving one
at a barrier stores its leaves.

The payoff is at memory accesses. For an address with a form the emitter knows, without
looking at 32 addresses, whether the lanes are contiguous or equal along each run: the
first lane's address of each run is a scalar, and the only thing to check at run time is
that the 32-bit term did not wrap (one scalar comparison). Then the access is one vector
load or store per run; otherwise a gather or scatter of the lanes' addresses.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir as ll

from ...isa.memory import ordered
from ...isa.operands import defs
from ...isa.types import I1, I32, I64, PTR, vec, vector_constant
from ...passes import lanes as lanes_pass
from ...passes.lanes import DYN, Lanes, Value
from ...passes.shapes import segment_length
from ...ptx import ir
from ...ptx.ir import TYPE_BITS

W = 32


class _LLVMLeaves(lanes_pass.Leaves):
    def __init__(self, b: ll.IRBuilder) -> None:
        self.b = b

    def add(self, a, c, w: int):
        return self.b.add(a, c)

    def mul(self, a, c: int, w: int):
        c &= (1 << w) - 1
        if c == 1:
            return a
        return self.b.mul(a, ll.Constant(ll.IntType(w), c))

    def mul2(self, a, c, w: int):
        return self.b.mul(a, c)

    def const(self, c: int, w: int):
        return ll.Constant(ll.IntType(w), c & ((1 << w) - 1))

    def trunc(self, a):
        return self.b.trunc(a, I32)


@dataclass
class FormPtrs:
    """The host addresses of a warp-wide access whose address has a form.

    kind: "contiguous" or "uniform" (equal along each run of `seg` lanes) when the form
    says so, else None. `ok`: i1 that must hold for `leaders` (one scalar pointer per run)
    to serve, None when they always do. `value`: the address's Value, for the lanes'
    vector (`em.form_vector`)."""

    kind: str | None
    seg: int
    ok: ll.Value | None
    leaders: list
    value: Value
    size: int  # bytes of each lane's element
    mapped: bool = False  # every lane's address lies in the block's static shared memory

    @property
    def type(self) -> ll.Type:
        return vec(PTR)


class _NotAffine(Exception):
    pass


class _WarpLeaves(lanes_pass.Leaves):
    """Leaves as functions of the warp index w: (a, c) stands for a + c*w (mod 2^bits), c
    None where the leaf is the same in every warp. A product of two leaves that both depend
    on w is no such function (_NotAffine)."""

    def __init__(self, b: ll.IRBuilder) -> None:
        self.b = b

    def add(self, x, y, w: int):
        c = y[1] if x[1] is None else x[1] if y[1] is None else self.b.add(x[1], y[1])
        return self.b.add(x[0], y[0]), c

    def mul(self, x, c: int, w: int):
        c &= (1 << w) - 1
        if c == 1:
            return x
        k = ll.Constant(ll.IntType(w), c)
        return self.b.mul(x[0], k), None if x[1] is None else self.b.mul(x[1], k)

    def mul2(self, x, y, w: int):
        if x[1] is not None and y[1] is not None:
            raise _NotAffine
        if x[1] is None:
            x, y = y, x
        return self.b.mul(x[0], y[0]), None if x[1] is None else self.b.mul(x[1], y[0])

    def const(self, c: int, w: int):
        return ll.Constant(ll.IntType(w), c & ((1 << w) - 1)), None

    def trunc(self, a):
        return self.b.trunc(a[0], I32), None if a[1] is None else self.b.trunc(a[1], I32)


class _ConstWarpLeaves(lanes_pass.Leaves):
    """_WarpLeaves whose a and c are known at compile time (Python ints): constants, the
    thread index, the block shape and shared variables' offsets, nothing read at run time
    (_NotAffine where a leaf is)."""

    def add(self, x, y, w: int):
        m = (1 << w) - 1
        c = y[1] if x[1] is None else x[1] if y[1] is None else (x[1] + y[1]) & m
        return (x[0] + y[0]) & m, c

    def mul(self, x, c: int, w: int):
        m = (1 << w) - 1
        return (x[0] * c) & m, None if x[1] is None else (x[1] * c) & m

    def mul2(self, x, y, w: int):
        if x[1] is not None and y[1] is not None:
            raise _NotAffine
        if x[1] is None:
            x, y = y, x
        m = (1 << w) - 1
        return (x[0] * y[0]) & m, None if x[1] is None else (x[1] * y[0]) & m

    def const(self, c: int, w: int):
        return c & ((1 << w) - 1), None

    def trunc(self, a):
        return a[0] & 0xFFFFFFFF, None if a[1] is None else a[1] & 0xFFFFFFFF


class LaneForms:
    """Mixin for FunctionEmitter: registers with exact lane forms."""

    def _setup_forms(self, enabled: bool) -> None:
        self.forms: dict[str, Lanes] = {}
        self.form_slots: dict[str, tuple] = {}
        self.form_seg = segment_length(self.mc.block) or W
        self.hoisted_ok: dict[int, ll.Value] = {}  # (hoist_form_checks: id(access) -> i1)
        self._single_defs: dict[str, ir.Instr] | None = None  # (_only_def, made when first asked)
        self._mapped: dict[tuple[str, int, int], bool] = {}  # (_in_static_shared)
        if not enabled or os.environ.get("CUPORT_NO_FORMS") == "1":
            return
        self.forms = lanes_pass.analyze(self.cfg, self.div, self.mc.block, self.fn.regs, self.live)
        eb = self.b  # (in the entry block, before its terminator)
        for name, f in self.forms.items():
            t, tag = ll.IntType(f.w), name.replace("%", "")
            self.form_slots[name] = (
                eb.alloca(t, name="u_" + tag),
                eb.alloca(I32, name="ib_" + tag) if f.ext else None,
                eb.alloca(t, name="vy_" + tag) if f.ky == DYN else None,
                eb.alloca(I32, name="ivy_" + tag) if f.ext and f.iky == DYN else None,
            )

    # ---------------------------------------------------------------- leaves
    def form_value(self, name: str) -> Value:
        b = self.b
        leaves = [b.load(slot) if slot is not None else None for slot in self.form_slots[name]]
        return Value(self.forms[name], *leaves)

    def _store_form(self, name: str, v: Value, guard: ll.Value | None = None) -> None:
        b = self.b
        for slot, leaf in zip(self.form_slots[name], (v.u, v.ib, v.vy, v.ivy), strict=True):
            if slot is None:
                continue
            if leaf is None:
                raise self.error(f"internal: a leaf of {name}'s lane form is missing")
            if guard is not None:
                leaf = b.select(guard, leaf, b.load(slot))
            b.store(leaf, slot)

    def form_leaf_slots(self, name: str) -> list[tuple[ll.Value, ll.Type]]:
        """The scalar slots a barrier saves for a register with a form, in 8-byte steps
        (u, ib, vy, ivy; absent ones are left out but keep their step)."""
        f = self.forms[name]
        types = (ll.IntType(f.w), I32, ll.IntType(f.w), I32)
        return [(slot, t) for slot, t in zip(self.form_slots[name], types, strict=True)]

    def _form_operand(self, o, w: int):
        """An operand as a lanes Value (leaves as scalars), for the transfer functions."""
        if isinstance(o, ir.Reg) and w == 0:
            return lanes_pass.UNIFORM_GUARD if o.name not in self.div.varying else None
        if isinstance(o, ir.Reg) and o.name in self.forms:
            return self.form_value(o.name)
        if isinstance(o, ir.Special) and o.name in ("%tid.x", "%tid.y", "%laneid"):
            special = lanes_pass._special_forms(*self.mc.block[:2], segment_length(self.mc.block))
            if o.name in special:
                return Value(special[o.name], self._special_leaf(o.name))
        if isinstance(o, ir.Reg) and o.name in self.div.varying:
            return None
        saved, self.vec = self.vec, False
        try:
            u = self.read_bits(o, "b64" if w == 64 else "b32")
        finally:
            self.vec = saved
        return Value(Lanes(w), u)

    def _special_leaf(self, name: str) -> ll.Value:
        """Lane 0's value of a special register with a form."""
        b = self.b
        nx, ny, _ = self.mc.block
        if name == "%laneid":
            return ll.Constant(I32, 0)
        first = b.mul(self.warp, ll.Constant(I32, W))  # the warp's first thread
        if name == "%tid.x":
            return b.urem(first, ll.Constant(I32, nx)) if nx % W == 0 and nx != W else \
                (ll.Constant(I32, 0) if nx <= W else first)
        return b.urem(b.udiv(first, ll.Constant(I32, nx)), ll.Constant(I32, ny))

    def emit_form_def(self, ins: ir.Instr) -> None:
        """An instruction whose destination has a form: its leaves, in scalar code."""
        dest = ins.args[0].name
        v = lanes_pass.transfer(ins, self._form_operand, _LLVMLeaves(self.b))
        if not isinstance(v, Value) or v.lanes != self.forms[dest]:
            raise self.error(f"internal: the lane form of {dest} does not hold here")
        if v.u is None:  # a form straight from a special register or a uniform source
            raise self.error(f"internal: no leaves for {dest}")
        g = None
        if ins.guard is not None:
            g = self.guard_value(ins)
        self._store_form(dest, v, g)

    # ---------------------------------------------------------------- lanes
    def _lanes_of(self, base, kx: int, ky, vy, w: int) -> ll.Value:
        """splat(base) + kx*k + ky*j over the lanes (ky a constant, or DYN with leaf vy)."""
        b = self.b
        s = self.form_seg
        mask = (1 << w) - 1
        t = ll.IntType(w)
        ky_c = 0 if ky == DYN else ky
        out = b.add(self.splat(base), vector_constant(t, [(kx * (i % s) + ky_c * (i // s)) & mask
                                                          for i in range(W)]))
        if ky == DYN and s < W:
            out = b.add(out, b.mul(self.splat(vy), vector_constant(t, [i // s for i in range(W)])))
        return out

    def form_vector(self, v: Value) -> ll.Value:
        """The lanes' <32 x iw> values of a Value."""
        b = self.b
        f = v.lanes
        out = self._lanes_of(v.u, f.kx, f.ky, v.vy, f.w)
        if f.ext:
            inner = self._lanes_of(v.ib, f.ikx, f.iky, v.ivy, 32)
            e = b.sext(inner, vec(I64)) if f.ext == "s" else b.zext(inner, vec(I64))
            if f.m != 1:
                e = b.mul(e, vector_constant(I64, [f.m & (2**64 - 1)] * W))
            out = b.add(out, e)
        return out

    def form_read(self, name: str) -> ll.Value:
        return self.form_vector(self.form_value(name))

    # ---------------------------------------------------------------- addresses
    def form_address(self, mem: ir.Mem, space: str, elem_size: int) -> FormPtrs | None:
        """FormPtrs for `mem` when its base register has a form (global, const, generic or
        shared space), else None."""
        base = mem.base
        if not (isinstance(base, ir.Reg) and base.name in self.forms) or space == "local":
            return None
        ops = _LLVMLeaves(self.b)
        v = self.form_value(base.name)
        if v.lanes.w == 32:  # read as u64: zero-extended
            v = lanes_pass._widen(v, "z", 1, ops)
            if v is None:
                return None
        p = self._form_ptrs(v, mem.offset, space, elem_size, self.hoisted_ok.get(id(self.ins)))
        if p is not None and space == "shared" and p.kind is not None:
            p.mapped = self._in_static_shared(mem, elem_size)
        return p

    def _in_static_shared(self, mem: ir.Mem, size: int) -> bool:
        """Whether `mem`'s shared address lies inside the block's static shared memory in
        every lane of every warp, whether the lane executes the access or not: its form's
        leaves are known at compile time as a + c*w in the warp index w (a tile's
        `tile[ty + 1][tx]`). A run's leader is then memory the block owns, always mapped,
        so a run with no executing lane may load from it or store to it masked off instead
        of a dummy slot (emit._segment_load)."""
        key = (mem.base.name, mem.offset, size)
        if key not in self._mapped:
            self._mapped[key] = self._in_static_shared_now(mem.base.name, mem.offset, size)
        return self._mapped[key]

    def _in_static_shared_now(self, name: str, offset: int, size: int) -> bool:
        f = self.forms[name]
        if not self.is_kernel or self.mc.static_shared < size:
            return False
        ops = _ConstWarpLeaves()
        try:
            v = self._warp_value(name, f.w, {}, ops)
        except _NotAffine:
            return False
        if v is None or v.lanes != f:
            return False
        s = self.form_seg
        mask = (1 << f.w) - 1

        def at(leaf, w):
            return None if leaf is None else (leaf[0] + (leaf[1] or 0) * w)

        for w in range(self.mc.nwarps):
            u, ib, vy, ivy = (at(x, w) for x in (v.u, v.ib, v.vy, v.ivy))
            for lane in range(W):
                k, j = lane % s, lane // s
                x = u + f.kx * k + (vy if f.ky == DYN else f.ky) * j
                if f.ext:
                    t = (ib + f.ikx * k + (ivy if f.iky == DYN else f.iky) * j) & 0xFFFFFFFF
                    x += f.m * (lanes_pass.signed(t, 32) if f.ext == "s" else t)
                a = ((x & mask) + offset) & 0xFFFFFFFF
                if a + size > self.mc.static_shared:
                    return False
        return True

    def _form_ptrs(self, v: Value, offset: int, space: str, size: int,
                   hoisted: ll.Value | None = None) -> FormPtrs | None:
        """`hoisted`: an i1 computed before the region loop (hoist_form_checks) that, where
        it holds, implies this access's check in every warp of the block: the check is then
        made only where it does not."""
        b = self.b
        ops = _LLVMLeaves(b)
        if offset:
            v = lanes_pass._add(v, Value(Lanes(64), ll.Constant(I64, offset & (2**64 - 1))), ops)
        if space == "shared":  # shared_base + (address mod 2^32)
            v = lanes_pass._widen(lanes_pass._narrow(v, ops), "z", 1, ops)
            v = lanes_pass._add(v, Value(Lanes(64), b.ptrtoint(self.shared_base, I64)), ops)
        if v is None:
            return None
        f = v.lanes
        s = self.form_seg
        runs = W // s
        eff_kx = lanes_pass.signed(f.kx + f.m * f.ikx, 64)
        kind = None
        if eff_kx == 0 and (f.ext is None or f.ikx == 0):
            kind = "uniform"
        elif eff_kx == size:
            kind = "contiguous"
        if kind is None:
            return FormPtrs(None, s, None, [], v, size)
        def along(base, k, vk, j: int, w: int):
            """base + k*j with k a constant or DYN (leaf vk), in w bits."""
            if j == 0:
                return base
            t = ll.IntType(w)
            step = b.mul(vk, ll.Constant(t, j)) if k == DYN else ll.Constant(t, (k * j) & ((1 << w) - 1))
            return b.add(base, step)

        # each run's first lane, exactly as that lane computes it
        leaders = []
        for j in range(runs):
            a = along(v.u, f.ky, v.vy, j, 64)
            if f.ext:
                inner = along(v.ib, f.iky, v.ivy, j, 32)
                e = b.sext(inner, I64) if f.ext == "s" else b.zext(inner, I64)
                a = b.add(a, b.mul(e, ll.Constant(I64, f.m & (2**64 - 1))))
            leaders.append(a)
        ok = None
        if kind == "contiguous" and hoisted is not None and space != "shared":
            ok = self._checked_unless(hoisted, lambda: self._form_check(v, leaders, space, size))
        elif kind == "contiguous":
            ok = self._form_check(v, leaders, space, size)
        return FormPtrs(kind, s, ok, [b.inttoptr(a, PTR) for a in leaders], v, size)

    def _checked_unless(self, hoisted: ll.Value, check: Callable[[], ll.Value | None]) -> ll.Value:
        """i1: `hoisted`, or else `check()`, which is emitted only on that path."""
        b = self.b
        start = b.block
        slow = self.llfn.append_basic_block("form_check")
        join = self.llfn.append_basic_block("form_checked")
        b.cbranch(hoisted, join, slow)
        b.position_at_end(slow)
        ok = check()
        if ok is None:
            ok = ll.Constant(I1, 1)
        slow_end = b.block
        b.branch(join)
        b.position_at_end(join)
        phi = b.phi(I1)
        phi.add_incoming(ll.Constant(I1, 1), start)
        phi.add_incoming(ok, slow_end)
        return phi

    def _form_check(self, v: Value, leaders: list, space: str, size: int) -> ll.Value | None:
        """i1 that must hold for the leaders of a contiguous form to serve (None: always);
        `leaders` is updated in place where a shared run wraps (_rising_wrap)."""
        b = self.b
        f = v.lanes
        conds = []
        # (shared memory only: there `s[t - k]` under `t >= k` wraps below the window in
        # the first warp; elsewhere a wrapping 32-bit index is rare, and the extra leader
        # and branch in every grid-stride loop cost AVX2 code of bench reduce 7%)
        rising = space == "shared" and W // self.form_seg == 1 and f.kx == 0 and (
            lanes_pass.signed(f.ikx, 32) > 0 and lanes_pass.signed(f.m, 64) > 0)
        if rising:
            wrapped, leaders[0] = self._rising_wrap(v, leaders[0])
            conds.append(self._unwrapped_or_clear(wrapped, v))
        elif f.ext:
            # the lanes' 32-bit values must not wrap: then ext() is linear over them
            t = b.sext(v.ib, I64) if f.ext == "s" else b.zext(v.ib, I64)
            conds += self._index_in_range(f, t, v.ivy)
        # a run's host addresses must not wrap around 2^64 (they cannot in shared
        # memory: the shared window's address plus a 32-bit offset)
        if space != "shared":
            conds += [b.icmp_unsigned("<=", a, self._run_limit(size)) for a in leaders]
        return self._all(conds)

    def _all(self, conds: list[ll.Value]) -> ll.Value | None:
        ok = conds[0] if conds else None
        for c in conds[1:]:
            ok = self.b.and_(ok, c)
        return ok

    def _run_limit(self, size: int) -> ll.Constant:
        """The highest leader whose run of `size`-byte elements does not wrap around 2^64."""
        return ll.Constant(I64, 2**64 - 1 - size * (self.form_seg - 1))

    def _index_in_range(self, f: Lanes, t: ll.Value, ivy: ll.Value | None,
                        low: int | None = None) -> list[ll.Value]:
        """i1s: the 32-bit term of every lane, for the first lane's exact value `t` (i64, the
        term extended as f.ext says), lies in the range of that extension (from `low` up,
        where given)."""
        b = self.b
        s = self.form_seg
        runs = W // s
        lo_b, hi_b = (-(2**31), 2**31 - 1) if f.ext == "s" else (0, 2**32 - 1)
        if low is not None:
            lo_b = max(lo_b, low)
        conds = []
        for k in {0, s - 1}:
            for j in {0, runs - 1}:
                c = b.add(t, ll.Constant(I64, (f.ikx * k) & (2**64 - 1)))
                if j and f.iky == DYN:
                    c = b.add(c, b.mul(b.sext(ivy, I64), ll.Constant(I64, j)))
                elif j:
                    c = b.add(c, ll.Constant(I64, (f.iky * j) & (2**64 - 1)))
                conds.append(b.icmp_signed(">=", c, ll.Constant(I64, lo_b)))
                conds.append(b.icmp_signed("<=", c, ll.Constant(I64, hi_b)))
        return conds

    # ---------------------------------------------------------------- checks per block
    def hoist_form_checks(self, blocks: list[int]) -> None:
        """Before the region loops (region_loops.py), once per block: for each plain global
        access of `blocks` that every lane may run (passes/lane_bounds.py: the halo rows of
        a stencil, run by one warp, keep their own check, which the other warps jump over),
        whose contiguous form is checked per warp (_form_check) and whose leaves are
        a + c*w in the warp index w, one i1 for the whole block, kept in `hoisted_ok`:
        where it holds, every warp's check holds, and the warps skip theirs.

        The leaves are computed again here from the address's definitions, which must each
        be the register's only one, unguarded, down to kernel parameters, %ctaid, %ntid,
        %nctaid, the thread index and constants (a register read before its only definition
        ran holds no defined value in PTX). A check per warp is linear in w where it holds:
        the first lane's 32-bit term is t0 + d*w exactly (d the step between warps) as long
        as it stays in range, so the corners at the first and the last warp bound every
        warp's, and a run's leader moves by a fixed step mod 2^64, exact in i128 where both
        ends lie below the limit. The 16x16 stencil's tile load and store checked the same
        ranges in each of its 8 warps (about 13 AVX-512 instructions each); their checks
        share their corners here. Only blocks whose warps hold several runs (rows): a warp
        that is one run checks two corners and one leader, and bench block_scan's 32 warps
        (1024 threads) ran 1% more AVX2 instructions with its checks made per block."""
        self.hoisted_ok = {}
        if not self.forms or self.mc.nwarps < 2 or self.form_seg == W:
            return  # (a warp of one run checks two corners and a leader: no cheaper per block)
        memo: dict[tuple[str, int], Value | None] = {}
        # (a block of their own: values computed once per launch go to the start of the
        # entry block, _at_entry, which would move the builder's place there under it)
        here = self.llfn.append_basic_block("block_checks")
        self.b.branch(here)
        self.b.position_at_end(here)
        saved_vec, self.vec = self.vec, False
        try:
            for x in blocks:
                for ins in self.blocks[x].instrs:
                    if self.lane_bounds.lanes(x, ins) != (1 << W) - 1:
                        continue
                    ok = self._hoisted_check(ins, memo)
                    if ok is not None:
                        self.hoisted_ok[id(ins)] = ok
        finally:
            self.vec = saved_vec

    def _hoisted_check(self, ins: ir.Instr, memo: dict) -> ll.Value | None:
        acc = self._form_access(ins)
        if acc is None or self.space_of(ins) not in ("global", "const", "generic"):
            return None
        mem, size = acc
        v = self._warp_address(mem, size, memo)
        return None if v is None else self._block_check(v, size)

    def _form_access(self, ins: ir.Instr) -> tuple[ir.Mem, int] | None:
        """(memory operand, element bytes) of a plain ld/ldu/st of one element a lane (not
        ordered, not a vector) whose address register has a form (self.forms); else None."""
        from ...isa.registry import type_suffix

        if ins.op not in ("ld", "ldu", "st") or ordered(ins) or any(
                m.startswith("v") and m[1:].isdigit() for m in ins.mods):
            return None
        mem = ins.args[0] if ins.op == "st" else ins.args[1]
        if not (isinstance(mem, ir.Mem) and isinstance(mem.base, ir.Reg) and mem.base.name in self.forms):
            return None
        try:
            return mem, max(TYPE_BITS[type_suffix(ins)] // 8, 1)
        except (ValueError, KeyError):
            return None

    def _warp_address(self, mem: ir.Mem, size: int, memo: dict) -> Value | None:
        """The 64-bit address of `mem` (base register in self.forms) as a value of the warp
        index and the block's leaves, where it is affine and its lanes are the ones
        form_address makes for an element of `size` bytes; else None."""
        ops = _WarpLeaves(self.b)
        try:
            v = self._warp_value(mem.base.name, 64 if self.forms[mem.base.name].w == 64 else 32, memo, ops)
            if v is not None and v.lanes.w == 32:
                v = lanes_pass._widen(v, "z", 1, ops)
            if v is not None and mem.offset:
                v = lanes_pass._add(v, Value(Lanes(64), ops.const(mem.offset, 64)), ops)
        except _NotAffine:
            return None
        if v is None or v.lanes != self._form_lanes(mem, size):
            return None
        return v

    def _form_lanes(self, mem: ir.Mem, size: int) -> Lanes | None:
        """The lanes of the address form_address makes for `mem` (without leaves)."""
        ops = lanes_pass.Leaves()
        v = Value(self.forms[mem.base.name])
        if v.lanes.w == 32:
            v = lanes_pass._widen(v, "z", 1, ops)
        if v is not None and mem.offset:
            v = lanes_pass._add(v, Value(Lanes(64)), ops)
        return None if v is None else v.lanes

    def _warp_value(self, name: str, w: int, memo: dict, ops: _WarpLeaves) -> Value | None:
        """Register `name` (read as w bits) as a Value whose leaves are _WarpLeaves pairs,
        computed at the builder from its only definition; None where that cannot be."""
        key = (name, w)
        if key in memo:
            return memo[key]
        memo[key] = None  # (a definition that reads itself: none)
        ins = self._only_def(name)
        v = None
        if ins is not None and ins.guard is None and lanes_pass.width_of(self.fn.regs.get(name, "")) == w:
            src = ins.args[1] if len(ins.args) == 2 else None
            if (ins.op == "ld" and "param" in ins.mods and isinstance(src, ir.Mem)
                    and isinstance(src.base, ir.Sym) and self.is_kernel
                    and src.base.name in self.mc.kernel_param_offsets):
                if isinstance(ops, _ConstWarpLeaves):
                    raise _NotAffine  # (read at run time)
                from ...isa.registry import type_suffix

                if (name not in self.div.varying and isinstance(ins.args[0], ir.Reg)
                        and lanes_pass.width_of(type_suffix(ins)) == w):  # (ld.param.u32, .u64)
                    off = self.mc.kernel_param_offsets[src.base.name] + src.offset
                    v = Value(Lanes(w), (self._kernel_param(off, ll.IntType(w)), None))
            else:
                r = lanes_pass.transfer(ins, lambda o, ow: self._warp_operand(o, ow, memo, ops), ops)
                if isinstance(r, Value):
                    want = self.forms.get(name) if name in self.div.varying else Lanes(w)
                    v = r if r.lanes == want else None
        memo[key] = v
        return v

    def _warp_operand(self, o, w: int, memo: dict, ops: _WarpLeaves):
        if isinstance(o, ir.Reg):
            if w == 0:
                return lanes_pass.UNIFORM_GUARD if o.name not in self.div.varying else None
            return self._warp_value(o.name, w, memo, ops)
        if isinstance(o, ir.Imm) and isinstance(o.value, int):
            return Value(Lanes(w), ops.const(o.value, w))
        if isinstance(o, (ir.Sym, ir.SymAddr)) and o.name in self.mc.shared_offsets:
            return Value(Lanes(w), ops.const(self.mc.shared_offsets[o.name] + getattr(o, "offset", 0), w))
        if isinstance(o, ir.Special) and w == 32:
            nx, ny, nz = self.mc.block
            special = lanes_pass._special_forms(nx, ny, segment_length(self.mc.block))
            if o.name in special:
                step = None  # the first lane's value, as _special_leaf computes it, per warp
                if o.name == "%tid.x" and nx > W:
                    if nx % W == 0 and ny * nz != 1:
                        return None  # ((32*w) mod nx: not linear in w)
                    step = W
                elif o.name == "%tid.y":
                    if nz != 1 or W % nx:
                        return None
                    step = W // nx
                return Value(special[o.name], (ops.const(0, 32)[0],
                                               None if step is None else ops.const(step, 32)[0]))
            if o.name[:-1] == "%ntid." and o.name[-1] in "xyz":
                return Value(Lanes(32), ops.const(self.mc.block["xyz".index(o.name[-1])], 32))
            if o.name[:-1] in ("%ctaid.", "%nctaid."):
                if isinstance(ops, _ConstWarpLeaves):
                    raise _NotAffine  # (read at run time)
                return Value(Lanes(32), (self.special(o.name), None))
        return None

    def _block_check(self, v: Value, size: int) -> ll.Value | None:
        """i1 for every warp of the block (hoist_form_checks), from v's (a, c) leaves."""
        b = self.b
        f = v.lanes
        if lanes_pass.signed(f.kx + f.m * f.ikx, 64) != size:
            return None  # (not contiguous: nothing to check)
        if (v.vy is not None and v.vy[1] is not None) or (v.ivy is not None and v.ivy[1] is not None):
            return None  # (run strides that change from warp to warp)
        last = self.mc.nwarps - 1
        s = self.form_seg
        first = Value(f, v.u[0], v.ib[0] if v.ib else None, v.vy[0] if v.vy else None,
                      v.ivy[0] if v.ivy else None)
        conds = []
        step = v.u[1] if v.u[1] is not None else ll.Constant(I64, 0)  # a leader's, mod 2^64
        if f.ext:
            # a base pointer plus an index that is not negative (a 2-D array's): each leader
            # lies between the base and 2^35 bytes above it, below the limit where the base
            # is below 2^62; other forms check the leaders at both ends
            simple = v.u[1] is None and f.ky == 0 and 0 < lanes_pass.signed(f.m, 64) <= 8
            t0 = b.sext(first.ib, I64) if f.ext == "s" else b.zext(first.ib, I64)
            d = b.sext(v.ib[1], I64) if v.ib[1] is not None else ll.Constant(I64, 0)
            t_last = b.add(t0, b.mul(d, ll.Constant(I64, last)))
            for t in (t0, t_last):
                conds += self._index_in_range(f, t, first.ivy, 0 if simple else None)
            if simple:
                conds.append(b.icmp_unsigned("<=", first.u, ll.Constant(I64, 1 << 62)))
                return self._all(conds)
            step = b.add(step, b.mul(d, ll.Constant(I64, f.m & (2**64 - 1))))
        i128 = ll.IntType(128)
        limit = self._run_limit(size)
        step128 = b.mul(b.sext(step, i128), ll.Constant(i128, last))
        for j in range(W // s):
            a = first.u
            if j:
                a = b.add(a, b.mul(first.vy, ll.Constant(I64, j)) if f.ky == DYN else ll.Constant(
                    I64, (f.ky * j) & (2**64 - 1)))
            if f.ext:
                inner = first.ib
                if j:
                    inner = b.add(inner, b.mul(first.ivy, ll.Constant(I32, j)) if f.iky == DYN else ll.Constant(
                        I32, (f.iky * j) & (2**32 - 1)))
                e = b.sext(inner, I64) if f.ext == "s" else b.zext(inner, I64)
                a = b.add(a, b.mul(e, ll.Constant(I64, f.m & (2**64 - 1))))
            a_last = b.add(b.zext(a, i128), step128)
            conds.append(b.icmp_unsigned("<=", a, limit))
            conds.append(b.icmp_signed(">=", a_last, ll.Constant(i128, 0)))
            conds.append(b.icmp_signed("<=", a_last, b.zext(limit, i128)))
        return self._all(conds)

    def _rising_wrap(self, v: Value, leader: ll.Value) -> tuple[ll.Value, ll.Value]:
        """For one run whose 32-bit term rises along the lanes (`ext(ib + ikx*k)*m`): i1
        whether the term wraps within the run, and the run's leader for the lanes past the
        wrap, whose term starts again from the bottom of its range: m*2^32 lower. `buf[t -
        1]` under `t >= 1` in shared memory wraps in lane 0, which does not execute: the
        other lanes are still one vector from there."""
        b, f = self.b, v.lanes
        t = b.sext(v.ib, I64) if f.ext == "s" else b.zext(v.ib, I64)
        hi_b = 2**31 - 1 if f.ext == "s" else 2**32 - 1
        last = b.add(t, ll.Constant(I64, lanes_pass.signed(f.ikx, 32) * (self.form_seg - 1)))
        wrapped = b.icmp_signed(">", last, ll.Constant(I64, hi_b))
        past = b.sub(leader, ll.Constant(I64, (lanes_pass.signed(f.m, 64) << 32) & (2**64 - 1)))
        return wrapped, b.select(wrapped, past, leader)

    def _unwrapped_or_clear(self, wrapped: ll.Value, v: Value) -> ll.Value:
        """i1: a rising 32-bit term (_rising_wrap) does not wrap, or no executing lane lies
        before its wrap, where the term is still at or above the first lane's. The lanes are
        looked at only where it wraps, behind a branch (as an `or`, AVX2 code compared them
        in every warp: bench block_scan 21.2M -> 22.0M instructions per launch)."""
        b, f = self.b, v.lanes
        self.exec_mask()  # (cached before the branch: the access's other code uses it)

        def clear() -> ll.Value:
            inner = self._lanes_of(v.ib, f.ikx, f.iky, v.ivy, 32)
            before = (b.icmp_signed if f.ext == "s" else b.icmp_unsigned)(">=", inner, self.splat(v.ib))
            hit = b.bitcast(b.and_(before, self.exec_mask_vec()), I32)
            return b.icmp_unsigned("==", hit, ll.Constant(I32, 0))
        return self._checked_unless(b.not_(wrapped), clear)

    def form_offset(self, p: FormPtrs, offset: int) -> FormPtrs:
        """`p + offset` bytes (the elements of a .v2/.v4 access): host addresses already."""
        return self._form_ptrs(p.value, offset, "global", p.size)

    def form_lane_ptrs(self, p: FormPtrs) -> ll.Value:
        return self.b.inttoptr(self.form_vector(p.value), vec(PTR))

    def form_lane_ptr(self, p: FormPtrs, lane: int) -> ll.Value:
        """One lane's host address (form_lane_ptrs' element `lane`), as scalar code."""
        return self.b.inttoptr(self.form_lane_value(p.value, lane), PTR)

    def form_lane_value(self, v: Value, lane: int) -> ll.Value:
        """One lane's value of a Value (form_vector's element `lane`), as scalar code."""
        b = self.b
        f = v.lanes
        s = self.form_seg
        k, j = lane % s, lane // s

        def at(base, kx: int, ky, vy, w: int):
            t = ll.IntType(w)
            c = (kx * k + (0 if ky == DYN else ky * j)) & ((1 << w) - 1)
            out = b.add(base, ll.Constant(t, c)) if c else base
            if ky == DYN and j:
                out = b.add(out, b.mul(vy, ll.Constant(t, j)))
            return out

        a = at(v.u, f.kx, f.ky, v.vy, f.w)
        if f.ext:
            e = at(v.ib, f.ikx, f.iky, v.ivy, 32)
            e = b.sext(e, I64) if f.ext == "s" else b.zext(e, I64)
            if f.m != 1:
                e = b.mul(e, ll.Constant(I64, f.m & (2**64 - 1)))
            a = b.add(a, e)
        return a

    # ---------------------------------------------------------------- one lane's guard
    def lane_guard(self, ins: ir.Instr, lane: int) -> ll.Value | None:
        """i1: the varying guard of `ins` in `lane`, as scalar code from the predicate's
        definitions (setp of integers whose operands have forms or are uniform, and/or/xor/
        not of such; each register's only definition), or None. An access that a few known
        lanes make (emit._sparse_load) reads its lanes' guards: built as 32 lanes and
        extracted, AVX2 code packed the whole vector to bytes to read two of them (a 16x16
        stencil's halo columns, lanes 0 and 16)."""
        if ins.guard is None or ins.guard.name not in self.div.varying or not self.forms:
            return None
        saved, self.vec = self.vec, False
        try:
            g = self._lane_pred(ins.guard.name, lane, 0)
        finally:
            self.vec = saved
        return self.b.not_(g) if g is not None and ins.guard_neg else g

    def some_lane_runs(self, ins: ir.Instr, before: list[ir.Instr]) -> ll.Value | None:
        """i1: some active lane runs `ins` (its varying guard holds there), from one lane per
        run of form_seg lanes where the guard is the same along each run (every integer its
        setps compare is uniform or has a form constant along a run: `ty == 0` in a 16x16
        block), or None. The definitions of the guard and of the predicates it is made of
        must be in `before` (the straight-line code up to `ins`), with nothing after the
        first of them writing an integer register they read, so that lane_guard, which
        reads those registers here, sees the values they compared. The vector test (splat,
        compares, mask test) becomes a scalar compare per run, which LLVM folds further
        (`ty == 0` over lanes 2w and 2w+1: a test of the warp index)."""
        if ins.guard is None or ins.guard.name not in self.div.varying or not self.forms:
            return None
        preds: set[str] = set()
        ints: set[str] = set()
        if not self._run_constant(ins.guard.name, 0, preds, ints):
            return None
        at = {r.name: k for k, x in enumerate(before) for r in defs(x) if r.name in preds}
        if len(at) != len(preds) or any(r.name in ints for x in before[min(at.values()):] for r in defs(x)):
            return None
        b, s = self.b, self.form_seg
        out = None
        for lane in range(0, W, s):
            g = self.lane_guard(ins, lane)
            if g is None:
                return None
            run = ((1 << s) - 1) << lane
            live = b.icmp_unsigned("!=", b.and_(self.active, ll.Constant(I32, run - (1 << 32 if run >> 31 else 0))),
                                   ll.Constant(I32, 0))
            g = b.and_(live, g)
            out = g if out is None else b.or_(out, g)
        return out

    def _run_constant(self, name: str, depth: int, preds: set[str], ints: set[str]) -> bool:
        """Whether predicate `name` is the same in every lane of a run (as _lane_pred would
        build it: each register's only definition), adding it and the predicates it is made
        of to `preds`, the integer registers they compare to `ints`."""
        from ...isa.compare import comparison
        from ...isa.registry import type_suffix

        ins = self._only_def(name)
        if ins is None or ins.guard is not None or depth > 8 or not isinstance(ins.args[0], ir.Reg):
            return False
        preds.add(name)
        args = ins.args
        if ins.op == "setp" and len(args) == 3:
            t = type_suffix(ins)
            if comparison(ins)[1] is not None or lanes_pass.width_of(t) is None:
                return False
            return all(self._run_constant_int(o, ints) for o in args[1:])
        if "pred" not in ins.mods or ins.op not in ("and", "or", "xor", "not", "mov"):
            return False
        for o in args[1:]:
            r = o.reg if isinstance(o, ir.Not) else o
            if not isinstance(r, ir.Reg) or not self._run_constant(r.name, depth + 1, preds, ints):
                return False
        return True

    def _run_constant_int(self, o, ints: set[str]) -> bool:
        """Whether an integer setp operand is the same along each run of lanes."""
        if isinstance(o, ir.Imm):
            return True
        if isinstance(o, ir.Special):
            special = lanes_pass._special_forms(*self.mc.block[:2], segment_length(self.mc.block))
            f = special.get(o.name)
            return f.kx == 0 if f is not None else o.name[:-1] in ("%ctaid.", "%ntid.", "%nctaid.")
        if not isinstance(o, ir.Reg):
            return False
        ints.add(o.name)
        f = self.forms.get(o.name)
        if f is not None:
            return f.kx == 0 and (not f.ext or f.ikx == 0)
        return o.name not in self.div.varying

    def _only_def(self, name: str) -> ir.Instr | None:
        """The instruction that defines register `name`, where it is its only definition."""
        if self._single_defs is None:
            count: dict[str, list[ir.Instr]] = {}
            for blk in self.cfg.blocks:
                for ins in blk.instrs:
                    for r in defs(ins):
                        count.setdefault(r.name, []).append(ins)
            self._single_defs = {r: d[0] for r, d in count.items() if len(d) == 1}
        return self._single_defs.get(name)

    def _lane_pred(self, name: str, lane: int, depth: int) -> ll.Value | None:
        from ...isa.compare import compare, comparison
        from ...isa.registry import type_suffix

        ins = self._only_def(name)
        if ins is None or ins.guard is not None or depth > 8 or not isinstance(ins.args[0], ir.Reg):
            return None
        b, args = self.b, ins.args
        if ins.op == "setp" and len(args) == 3:
            t = type_suffix(ins)
            cmp, boolop = comparison(ins)
            if boolop is not None or lanes_pass.width_of(t) is None:
                return None  # (integers only: float operands have no forms)
            x, y = self._lane_int(args[1], t, lane), self._lane_int(args[2], t, lane)
            return None if x is None or y is None else compare(self, cmp, t, x, y)
        if "pred" not in ins.mods:
            return None
        ops = [self._lane_pred_operand(o, lane, depth) for o in args[1:]]
        if any(o is None for o in ops):
            return None
        if ins.op in ("and", "or", "xor") and len(ops) == 2:
            return {"and": b.and_, "or": b.or_, "xor": b.xor}[ins.op](*ops)
        if ins.op in ("not", "mov") and len(ops) == 1:
            return b.not_(ops[0]) if ins.op == "not" else ops[0]
        return None

    def _lane_pred_operand(self, o, lane: int, depth: int) -> ll.Value | None:
        if isinstance(o, ir.Reg):
            return self._lane_pred(o.name, lane, depth + 1)
        if isinstance(o, ir.Not) and isinstance(o.reg, ir.Reg):
            v = self._lane_pred(o.reg.name, lane, depth + 1)
            return None if v is None else self.b.not_(v)
        return None

    def _lane_int(self, o, t: str, lane: int) -> ll.Value | None:
        """An integer operand of type `t` in one lane (scalar), or None."""
        w = lanes_pass.width_of(t)
        if isinstance(o, ir.Imm) and isinstance(o.value, int):
            return self.const_int(w, o.value)
        if isinstance(o, ir.Reg):
            if self._only_def(o.name) is None or lanes_pass.width_of(self.fn.regs.get(o.name, "")) != w:
                return None
            if o.name in self.forms:
                return self.form_lane_value(self.form_value(o.name), lane)
            return None if o.name in self.div.varying else self.read_bits(o, t)
        if isinstance(o, ir.Special) and w == 32:
            special = lanes_pass._special_forms(*self.mc.block[:2], segment_length(self.mc.block))
            if o.name in special:
                return self.form_lane_value(Value(special[o.name], self._special_leaf(o.name)), lane)
            if o.name[:-1] in ("%ctaid.", "%ntid.", "%nctaid."):
                return self.special(o.name)
        return None


__all__ = ["FormPtrs", "LaneForms", "I1"]
