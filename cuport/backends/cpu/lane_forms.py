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
from dataclasses import dataclass

from llvmlite import ir as ll

from ...isa.types import I1, I32, I64, PTR, vec
from ...passes import lanes as lanes_pass
from ...passes.lanes import DYN, Lanes, Value
from ...passes.shapes import segment_length
from ...ptx import ir

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

    @property
    def type(self) -> ll.Type:
        return vec(PTR)


class LaneForms:
    """Mixin for FunctionEmitter: registers with exact lane forms."""

    def _setup_forms(self, enabled: bool) -> None:
        self.forms: dict[str, Lanes] = {}
        self.form_slots: dict[str, tuple] = {}
        self.form_seg = segment_length(self.mc.block) or W
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
        t = vec(ll.IntType(w))
        ky_c = 0 if ky == DYN else ky
        out = b.add(self.splat(base), ll.Constant(t, [(kx * (i % s) + ky_c * (i // s)) & mask
                                                      for i in range(W)]))
        if ky == DYN and s < W:
            out = b.add(out, b.mul(self.splat(vy), ll.Constant(t, [i // s for i in range(W)])))
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
                e = b.mul(e, ll.Constant(vec(I64), [f.m & (2**64 - 1)] * W))
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
        return self._form_ptrs(v, mem.offset, space, elem_size)

    def _form_ptrs(self, v: Value, offset: int, space: str, size: int) -> FormPtrs | None:
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
        if kind == "contiguous":
            conds = []
            # (shared memory only: there `s[t - k]` under `t >= k` wraps below the window in
            # the first warp; elsewhere a wrapping 32-bit index is rare, and the extra leader
            # and branch in every grid-stride loop cost AVX2 code of bench reduce 7%)
            rising = space == "shared" and runs == 1 and f.kx == 0 and lanes_pass.signed(f.ikx, 32) > 0 and (
                lanes_pass.signed(f.m, 64) > 0)
            if rising:
                wrapped, leaders[0] = self._rising_wrap(v, leaders[0])
                conds.append(self._unwrapped_or_clear(wrapped, v))
            elif f.ext:
                # the lanes' 32-bit values must not wrap: then ext() is linear over them
                t = b.sext(v.ib, I64) if f.ext == "s" else b.zext(v.ib, I64)
                lo_b, hi_b = (-(2**31), 2**31 - 1) if f.ext == "s" else (0, 2**32 - 1)
                corners = []
                for k in {0, s - 1}:
                    for j in {0, runs - 1}:
                        c = b.add(t, ll.Constant(I64, (f.ikx * k) & (2**64 - 1)))
                        if j and f.iky == DYN:
                            c = b.add(c, b.mul(b.sext(v.ivy, I64), ll.Constant(I64, j)))
                        elif j:
                            c = b.add(c, ll.Constant(I64, (f.iky * j) & (2**64 - 1)))
                        corners.append(c)
                for c in corners:
                    conds.append(b.icmp_signed(">=", c, ll.Constant(I64, lo_b)))
                    conds.append(b.icmp_signed("<=", c, ll.Constant(I64, hi_b)))
            # a run's host addresses must not wrap around 2^64 (they cannot in shared
            # memory: the shared window's address plus a 32-bit offset)
            limit = ll.Constant(I64, 2**64 - 1 - size * (s - 1))
            if space != "shared":
                for a in leaders:
                    conds.append(b.icmp_unsigned("<=", a, limit))
            ok = conds[0] if conds else None
            for c in conds[1:]:
                ok = b.and_(ok, c)
        return FormPtrs(kind, s, ok, [b.inttoptr(a, PTR) for a in leaders], v, size)

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
        start = b.block
        check = self.llfn.append_basic_block("wrap_check")
        join = self.llfn.append_basic_block("wrap_join")
        b.cbranch(wrapped, check, join)
        b.position_at_end(check)
        inner = self._lanes_of(v.ib, f.ikx, f.iky, v.ivy, 32)
        before = (b.icmp_signed if f.ext == "s" else b.icmp_unsigned)(">=", inner, self.splat(v.ib))
        hit = b.bitcast(b.and_(before, self.exec_mask_vec()), I32)
        clear = b.icmp_unsigned("==", hit, ll.Constant(I32, 0))
        check_end = b.block
        b.branch(join)
        b.position_at_end(join)
        ok = b.phi(I1)
        ok.add_incoming(ll.Constant(I1, 1), start)
        ok.add_incoming(clear, check_end)
        return ok

    def form_offset(self, p: FormPtrs, offset: int) -> FormPtrs:
        """`p + offset` bytes (the elements of a .v2/.v4 access): host addresses already."""
        return self._form_ptrs(p.value, offset, "global", p.size)

    def form_lane_ptrs(self, p: FormPtrs) -> ll.Value:
        return self.b.inttoptr(self.form_vector(p.value), vec(PTR))

    def form_lane_ptr(self, p: FormPtrs, lane: int) -> ll.Value:
        """One lane's host address (form_lane_ptrs' element `lane`), as scalar code."""
        b = self.b
        v, f = p.value, p.value.lanes
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
        return b.inttoptr(a, PTR)


__all__ = ["FormPtrs", "LaneForms", "I1"]
