"""The Vulkan emitter's atomics, CTA barriers and warp primitives (isa/api.py).

Atomics are SPIR-V atomic instructions on buffer-device-address pointers (global) or on the
Workgroup word array (shared), with the PTX scope and ordering; what SPIR-V has no
instruction for (inc/dec with PTX's wrap, f16/bf16 adds, 16-bit cas, f32/f64 adds where the
device lacks float atomics, or where its f32 add would not flush subnormals as PTX's global
one does) is a compare-and-swap loop around isa.atomics.combine, the same semantics the
CPU backend uses.

Warp collectives (shfl, vote, match, redux, activemask, elect, and wmma.mma's operand
fetches): where the device runs 32-wide subgroups (NVIDIA; AMD and Apple on request) a warp
is a subgroup and a collective is a subgroup operation over the invocations that execute
it. Elsewhere (lavapipe's subgroups are 8 wide) every thread writes its value to workgroup
memory, the block meets at a barrier and reads its warp's values back: correct only when
the whole block reaches the collective together, so a collective in code that may run with
part of the block is refused (naming the instruction), as is a guarded one; bar.warp.sync
is then a barrier of the block, with the same limits.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ...isa.atomics import Atomic, combine
from ...isa.types import F32, F64, I1, I32, I64
from ...passes.cfg import barrier_number, is_barrier
from ...ptx import ir
from ...ptx.ir import TYPE_BITS
from . import layout as V
from . import lower_order

SUBGROUP, WORKGROUP, DEVICE = 3, 2, 1
SEM_ACQUIRE, SEM_RELEASE, SEM_ACQ_REL = 0x2, 0x4, 0x8
SEM_UNIFORM, SEM_WORKGROUP = 0x40, 0x100
SEM_AVAILABLE, SEM_VISIBLE = 0x2000, 0x4000


def with_visibility(sem: int) -> int:
    """An acquire also makes the writes others made available visible to this invocation's
    later accesses, a release makes its earlier writes available (the Vulkan memory
    model's MakeVisible and MakeAvailable: without them an acquire orders nothing for plain
    loads, and NVIDIA's driver kept stale L1 lines: grid.sync() read block sums of the
    previous round on the H200)."""
    if sem & (SEM_ACQUIRE | SEM_ACQ_REL):
        sem |= SEM_VISIBLE
    if sem & (SEM_RELEASE | SEM_ACQ_REL):
        sem |= SEM_AVAILABLE
    return sem


def fail_semantics(sem: int) -> int:
    """OpAtomicCompareExchange's semantics when it fails: the acquire part of `sem` only."""
    storage = sem & (SEM_UNIFORM | SEM_WORKGROUP)
    if sem & (SEM_ACQUIRE | SEM_ACQ_REL):
        return SEM_ACQUIRE | SEM_VISIBLE | storage
    return storage
_ORDER_SEM = {"monotonic": 0, "acquire": SEM_ACQUIRE, "release": SEM_RELEASE, "acq_rel": SEM_ACQ_REL}
_SCOPE = {"cta": WORKGROUP, "cluster": DEVICE, "gpu": DEVICE, "sys": DEVICE}
#: (op, kind) → the SPIR-V atomic that does it exactly; kind s/u/b
_NATIVE = {
    ("add", "u"): "OpAtomicIAdd", ("add", "s"): "OpAtomicIAdd",
    ("min", "s"): "OpAtomicSMin", ("min", "u"): "OpAtomicUMin",
    ("max", "s"): "OpAtomicSMax", ("max", "u"): "OpAtomicUMax",
    ("and", "b"): "OpAtomicAnd", ("or", "b"): "OpAtomicOr", ("xor", "b"): "OpAtomicXor",
    ("exch", "b"): "OpAtomicExchange", ("exch", "u"): "OpAtomicExchange", ("exch", "s"): "OpAtomicExchange",
}
#: redux/isa reduction name → the subgroup reduction
_GROUP_REDUCE = {"add": "OpGroupNonUniformIAdd", "umin": "OpGroupNonUniformUMin",
                 "umax": "OpGroupNonUniformUMax", "smin": "OpGroupNonUniformSMin",
                 "smax": "OpGroupNonUniformSMax", "and": "OpGroupNonUniformBitwiseAnd",
                 "or": "OpGroupNonUniformBitwiseOr", "xor": "OpGroupNonUniformBitwiseXor"}
_REDUCE = 0  # GroupOperation Reduce
_COLLECTIVE_OPS = {"shfl", "vote", "match", "redux", "activemask", "elect"}


def is_collective(ins: ir.Instr) -> bool:
    """Whether threads of a warp exchange values in the instruction (wmma.mma gathers its
    operands from other lanes; wmma.load and store are each thread's own accesses)."""
    if ins.op == "wmma":
        return bool(ins.mods) and ins.mods[0] == "mma"
    return ins.op in _COLLECTIVE_OPS


def _c32(v: int) -> ll.Constant:
    return ll.Constant(I32, v & 0xFFFFFFFF)


class SyncOps:
    """Mixin of the VulkanEmitter."""

    # ================================================================ atomics
    def atomic(self, a: Atomic) -> ll.Value | None:
        where = self._space_for(a.space, a.mem)
        addr = self.address(a.mem, a.space)
        et = ll.IntType(TYPE_BITS[a.t])
        if et.width > 64:
            raise self.error(f"a {et.width}-bit atomic")
        (old,) = self._by_space(where, addr, lambda space, ad: [self._atomic_at(space, ad, a, et)], [et])
        return old if a.wants_old else None

    def _atomic_at(self, space: str, ad: ll.Value, a: Atomic, et: ll.IntType) -> ll.Value:
        b = self.b
        shared = space == "shared"
        if space == "local":
            # PTX leaves atomics on local memory undefined; a generic address that inference
            # cannot place (`this` of an object in shared memory, loaded from memory) may still
            # point there: a plain read-modify-write, which no other thread can see anyway
            old = self._word_load(space, ad, et)
            ftz = ll.Constant(I1, 1) if (a.op == "add" and a.t == "f32") else None
            self._word_store(space, ad, combine(b, a.op, a.t, old, a.v, a.c, ftz))
            return old
        if space not in ("shared", "global"):
            raise self.error(f"an atomic on {space} memory")
        # shared memory in device memory (slices.py): byte-addressed as global memory is, at
        # workgroup scope, ordering UniformMemory (the storage class it is in)
        words = shared and self.shared is not None
        scope = WORKGROUP if shared else _SCOPE[a.scope]
        sem = _ORDER_SEM[lower_order.order_of(self, a.order)]
        if sem:
            sem = with_visibility(sem | (SEM_WORKGROUP if words else SEM_UNIFORM))
        kind = "f" if a.t in ("f32", "f64") else ("h" if a.t[0] in "fb" and "16" in a.t else a.t[0])
        word = self.shared_word.width if words else et.width
        native = _NATIVE.get((a.op, kind))
        if et.width in (32, 64) and word == et.width:
            if words:
                p = self._word_ptr(space, self._split(space, ad)[0])
            else:
                p = self._slice_ptr(ad, write=True) if shared else self._global_ptr(ad, write=True)
            tag = "s" if shared else "g"
            if native is not None:
                return self.spv(native, et, [p, _c32(scope), _c32(sem), a.v], tag)
            if a.op == "cas":
                fail = fail_semantics(sem)
                return self.spv("OpAtomicCompareExchange", et, [p, _c32(scope), _c32(sem), _c32(fail), a.c, a.v], tag)
            if a.op == "add" and kind == "f" and self._native_fadd(a.t, shared, words):
                ft = F32 if a.t == "f32" else F64
                r = self.spv("OpAtomicFAddEXT", ft, [p, _c32(scope), _c32(sem), b.bitcast(a.v, ft)], tag)
                return b.bitcast(r, et)
            ftz = ll.Constant(I1, 1) if (a.op == "add" and a.t == "f32" and not shared) else None
            return self._cas_loop(p, tag, et, scope, sem, lambda old: combine(b, a.op, a.t, old, a.v, a.c, ftz))
        # a narrower value inside a word (16-bit cas/adds, 32-bit ops on 64-bit shared words)
        if words:
            idx, bit = self._split(space, ad)
            p = self._word_ptr(space, idx)
            wt = self.shared_word
            tag = "s"
        else:
            aligned = b.and_(ad, ll.Constant(I64, ~3))
            p = self._slice_ptr(aligned, write=True) if shared else self._global_ptr(aligned, write=True)
            bit = b.shl(b.trunc(b.and_(ad, ll.Constant(I64, 3)), I32), _c32(3))
            wt = I32
            tag = "s" if shared else "g"
        sh = b.zext(bit, wt) if wt.width > 32 else bit
        mask = ll.Constant(wt, (1 << et.width) - 1)

        def update(w: ll.Value) -> ll.Value:
            old = b.trunc(b.lshr(w, sh), et)
            new = combine(b, a.op, a.t, old, a.v, a.c, None)
            return b.or_(b.and_(w, b.not_(b.shl(mask, sh))), b.shl(b.zext(new, wt), sh))

        w = self._cas_loop(p, tag, wt, scope, sem, update)
        return b.trunc(b.lshr(w, sh), et)

    def _native_fadd(self, t: str, shared: bool, words: bool) -> bool:
        """Whether the device's OpAtomicFAddEXT does PTX's float add: PTX's global f32 add
        flushes subnormals (a device whose buffer add keeps them does it exactly), its
        shared one keeps them (shared memory in device memory: a device whose buffer add
        flushes, NVIDIA's, does it exactly). Never on shared memory's Workgroup array: its
        elements are integer words, and OpAtomicFAddEXT needs a pointer to a float (every
        atom.shared.add.f32 failed SPIR-V translation on devices with shaderSharedFloat32AtomicAdd)."""
        caps = self.plan.caps
        if words:
            return False
        if t == "f64":
            return caps.float64_atomic_add
        return caps.float32_atomic_add and caps.atomic_add_flushes_f32 != shared

    def _cas_loop(self, p: ll.Value, tag: str, t: ll.IntType, scope: int, sem: int, new_of) -> ll.Value:
        """Atomically replace *p by new_of(old); the old value."""
        b = self.b
        if sem and not self.plan.caps.divergent_memory_barriers:
            # the retries differ per thread: the ordering goes around the loop (lower_order.py)
            return lower_order.around_loop(self, sem, lambda: self._cas_loop(p, tag, t, scope, 0, new_of))
        pre = b.block
        first = self.spv("OpAtomicLoad", t, [p, _c32(scope), _c32(0)], tag)
        loop = self.llfn.append_basic_block("cas")
        done = self.llfn.append_basic_block("cas_done")
        b.branch(loop)
        b.position_at_end(loop)
        old = b.phi(t)
        old.add_incoming(first, pre)
        new = new_of(old)
        fail = fail_semantics(sem)
        got = self.spv("OpAtomicCompareExchange", t, [p, _c32(scope), _c32(sem), _c32(fail), new, old], tag)
        old.add_incoming(got, b.block)
        b.cbranch(b.icmp_unsigned("==", got, old), done, loop)
        b.position_at_end(done)
        return old

    # ================================================================ CTA barriers
    def control_barrier(self) -> None:
        sem = SEM_ACQ_REL | SEM_WORKGROUP | SEM_UNIFORM | SEM_AVAILABLE | SEM_VISIBLE
        self.spv("OpControlBarrier", ll.VoidType(), [_c32(WORKGROUP), _c32(WORKGROUP), _c32(sem)])

    def barrier(self, t: ir.Instr) -> None:
        """bar.sync / barrier.sync / bar.red: the whole block meets (named barriers and thread
        counts only where they mean the whole block)."""
        args = list(t.args)
        red = "red" in t.mods
        dst = args.pop(0) if red else None
        cond = args.pop() if red else None
        number = barrier_number(t)
        if not isinstance(number, ir.Imm):
            raise self.error("a CTA barrier whose number is not an immediate")
        if len(args) > 1:
            n = args[1]
            need = (self.plan.nthreads + 31) // 32 * 32
            if not isinstance(n, ir.Imm) or n.value not in (self.plan.nthreads, need):
                raise self.error("a CTA barrier for part of the block (a thread count)")
        if number.value != 0 and self._barrier_ids() != {number.value}:
            raise self.error("named barriers (several barrier numbers in one kernel)")
        if not red:
            self.control_barrier()
            return
        self._barrier_reduce(t, dst, cond)

    def _barrier_ids(self) -> set[int]:
        ids = set()
        for s in self.fn.body or ():
            if isinstance(s, ir.Instr) and is_barrier(s):
                a = barrier_number(s)
                ids.add(a.value if isinstance(a, ir.Imm) else -1)
        return ids

    def _barrier_reduce(self, t: ir.Instr, dst, cond) -> None:
        b = self.b
        op = next((m for m in t.mods if m in ("popc", "and", "or")), None)
        if op is None:
            raise self.error("bar.red without .popc, .and or .or")
        c = self.read_bits(cond, "pred")
        slot = ll.Constant(I64, self.plan.shared_bytes - 64)  # bar.red's word: the scratch's last
        wt = self.shared_word
        p = self._word_ptr("shared", self._split("shared", slot)[0])
        self.control_barrier()
        with b.if_then(b.icmp_unsigned("==", self.linear_tid(), _c32(0))):
            b.store(ll.Constant(wt, 1 if op == "and" else 0), p)
        self.control_barrier()
        if op == "popc":
            with b.if_then(c):
                self.spv("OpAtomicIAdd", wt, [p, _c32(WORKGROUP), _c32(0), ll.Constant(wt, 1)], "s")
        elif op == "and":
            with b.if_then(b.not_(c)):
                self.spv("OpAtomicAnd", wt, [p, _c32(WORKGROUP), _c32(0), ll.Constant(wt, 0)], "s")
        else:
            with b.if_then(c):
                self.spv("OpAtomicOr", wt, [p, _c32(WORKGROUP), _c32(0), ll.Constant(wt, 1)], "s")
        self.control_barrier()
        r = b.load(p, typ=wt)
        if op == "popc":
            self.write(dst, "u32", b.trunc(r, I32) if wt.width > 32 else r)
        else:
            self.write(dst, "pred", b.icmp_unsigned("!=", r, ll.Constant(wt, 0)))

    # ================================================================ warp primitives
    def begin_collective(self) -> None:
        if not is_collective(self.ins):
            return  # atomics, wmma.load/store: each thread acts for itself
        if self.emulated and self.block.index in self.plan.block_div.split_blocks:
            raise self.error(
                f"a warp collective ({self.ins.op}) in code that part of the block may skip, on a "
                f"device whose subgroups are {self.plan.caps.subgroup_size} wide, not 32 (it runs "
                "through workgroup memory there and needs the whole block)")

    def _lockstep_by_barriers(self) -> bool:
        """Where warps are emulated (subgroups narrower than 32) and the whole block runs
        this code: a volatile shared store is put between workgroup barriers, so that every
        lane of a warp has read step k before any stores it and stored it before any reads
        step k + 1 (without them scanwarp's results were wrong on lavapipe). In code part of
        the block may skip no barrier can be placed (lavapipe's answers were right there all
        the same: tests/vulkan/warp_sync_scan.cu's reduction)."""
        return self.emulated and self.block.index not in self.plan.block_div.split_blocks

    def before_volatile_shared_store(self) -> None:
        if self._lockstep_by_barriers():
            self.control_barrier()

    def after_volatile_shared_store(self) -> None:
        """After a volatile (or ordered) store to shared memory. Where a warp is a subgroup,
        a subgroup-scope memory barrier, so that the driver's compiler cannot move a later
        load of another address above it: ptxas keeps volatile accesses in program order,
        and pre-Volta warp-synchronous code (a scan or reduction through a volatile pointer
        without __syncwarp: the SDK's scanwarp, HeCBench's radixsort) relies on it, the
        warp's lanes reading step k + 1 only after all of them stored step k. SPIR-V's
        Volatile forbids eliding an access, not moving it past one of another address.
        (bar.warp.sync's barrier is this one.) Where warps are emulated: a workgroup barrier
        (_lockstep_by_barriers)."""
        if self.emulated:
            if self._lockstep_by_barriers():
                self.control_barrier()
            return
        if self.plan.caps.divergent_memory_barriers or self.block.index not in self.plan.block_div.split_blocks:
            sem = with_visibility(SEM_ACQ_REL | SEM_WORKGROUP | SEM_UNIFORM)
            self.spv("OpMemoryBarrier", ll.VoidType(), [_c32(SUBGROUP), _c32(sem)])

    def warp_barrier(self) -> None:
        """bar.warp.sync: where a warp is a subgroup, a subgroup-scope memory barrier: CUDA's
        __syncwarp orders the warp's shared and global accesses around it, and without one
        the driver's compiler may move a load of another lane's word above it (the subgroup
        runs together already; a control barrier would need all of it, which code part of
        the warp skips does not give). Where a warp spans several subgroups (lavapipe), the
        block meets, so that what the warp's threads wrote to shared memory before it is
        there for them after it (wmma tiles staged by the warp)."""
        if not self.emulated:
            self.after_volatile_shared_store()  # (the same barrier)
            return
        if self.ins.guard is not None or self.block.index in self.plan.block_div.split_blocks:
            raise self.error(
                f"a warp barrier (bar.warp.sync) in code that part of the block may skip, on a "
                f"device whose subgroups are {self.plan.caps.subgroup_size} wide, not 32 (it is a "
                "barrier of the whole block there)")
        self.control_barrier()

    def broadcast(self, v: ll.Value) -> ll.Value:
        return v

    def warp_lane(self) -> ll.Value:
        return self.special("%laneid")

    def _warp_base(self) -> ll.Value:
        return self.b.and_(self.linear_tid(), _c32(~31))

    def warp_executing(self) -> ll.Value:
        b = self.b
        if not self.emulated:
            return self.warp_ballot(ll.Constant(I1, 1))
        rem = b.sub(_c32(self.plan.nthreads), self._warp_base())
        part = b.sub(b.shl(_c32(1), rem), _c32(1))
        return b.select(b.icmp_unsigned(">=", rem, _c32(32)), _c32(0xFFFFFFFF), part)

    def warp_uniform(self, op, ptype: str = "b32") -> ll.Value:
        return self.read_bits(op, ptype)

    def warp_participants(self, member_op) -> ll.Value:
        return self.warp_executing()

    # -- workgroup-memory scratch (emulated warps)
    def _scratch_addr(self, index: ll.Value) -> ll.Value:
        b = self.b
        return b.add(ll.Constant(I64, self.plan.scratch_offset), b.mul(b.zext(index, I64), ll.Constant(I64, 8)))

    def _live_lane(self, j: ll.Value) -> ll.Value:
        """Whether lane j of this thread's warp exists (the block's last warp may be partial)."""
        b = self.b
        return b.icmp_unsigned("<", b.add(self._warp_base(), j), _c32(self.plan.nthreads))

    def _exchange(self, value: ll.Value, read):
        """Every thread publishes `value`; `read(load_of_lane)` computes the result from the
        warp's values. The block meets before the store (the previous exchange's reads are
        done: only exchanges touch the scratch) and after it (every value is there)."""
        b = self.b
        t = value.type
        it = t if isinstance(t, ll.IntType) else ll.IntType(64 if t == F64 else 32)  # floats' bits
        self.control_barrier()
        self._word_store("shared", self._scratch_addr(self.linear_tid()), b.bitcast(value, it) if it != t else value)
        self.control_barrier()

        def load(lane: ll.Value) -> ll.Value:
            v = self._word_load("shared", self._scratch_addr(b.add(self._warp_base(), lane)), it)
            return b.bitcast(v, t) if it != t else v

        return read(load)

    def warp_ballot(self, pred: ll.Value) -> ll.Value:
        b = self.b
        if not self.emulated:
            v = self.spv("OpGroupNonUniformBallot", ll.VectorType(I32, 4), [_c32(SUBGROUP), pred])
            return b.extract_element(v, _c32(0))
        bit = b.select(pred, b.shl(_c32(1), self.warp_lane()), _c32(0))
        return self._exchange(bit, lambda load: self._fold_lanes(
            _c32(0), lambda j, acc: b.or_(acc, b.select(self._live_lane(j), load(j), _c32(0)))))

    def warp_read(self, values: ll.Value, src: ll.Value) -> ll.Value:
        if not self.emulated:
            return self.spv("OpGroupNonUniformShuffle", values.type, [_c32(SUBGROUP), values, src])
        return self._exchange(values, lambda load: load(self.b.and_(src, _c32(31))))

    def warp_reads(self, values: ll.Value, srcs: list[ll.Value]) -> list[ll.Value]:
        if not self.emulated:
            return [self.warp_read(values, src) for src in srcs]
        b = self.b
        return self._exchange(values, lambda load: [load(b.and_(src, _c32(31))) for src in srcs])

    def warp_first(self, values: ll.Value, part: ll.Value) -> ll.Value:
        if not self.emulated:
            return self.spv("OpGroupNonUniformBroadcastFirst", values.type, [_c32(SUBGROUP), values])
        first = self.b.and_(self.b.cttz(part, ll.Constant(I1, 0)), _c32(31))
        return self._exchange(values, lambda load: load(first))

    def warp_reduce(self, name: str, x: ll.Value, identity) -> ll.Value:
        b = self.b
        if not self.emulated and name in _GROUP_REDUCE:
            return self.spv(_GROUP_REDUCE[name], x.type, [_c32(SUBGROUP), _c32(_REDUCE), x])
        combine_two = _combiner(self, name)
        if not self.emulated:
            # exact IEEE minimum/maximum (-0 < +0) over the executing lanes, one lane at a time
            part = self.warp_executing()

            def step(j, acc):
                v = self.spv("OpGroupNonUniformShuffle", x.type, [_c32(SUBGROUP), x, j])
                take = b.trunc(b.lshr(part, j), I1)
                return b.select(take, combine_two(acc, v), acc)

            return self._fold_lanes(_ident(x.type, identity), step)
        return self._exchange(x, lambda load: self._fold_lanes(
            _ident(x.type, identity),
            lambda j, acc: b.select(self._live_lane(j), combine_two(acc, load(j)), acc)))

    def warp_match_any(self, a: ll.Value, part: ll.Value) -> ll.Value:
        b = self.b
        zero = _c32(0)

        def fold(load) -> ll.Value:
            def step(j, acc):
                eq = b.and_(b.icmp_unsigned("==", a, load(j)), b.trunc(b.lshr(part, j), I1))
                return b.or_(acc, b.select(eq, b.shl(_c32(1), j), zero))

            return self._fold_lanes(zero, step)

        if not self.emulated:
            return fold(lambda j: self.spv("OpGroupNonUniformShuffle", a.type, [_c32(SUBGROUP), a, j]))
        return self._exchange(a, fold)

    def _fold_lanes(self, init: ll.Value, step) -> ll.Value:
        """acc = step(j, acc) for the lanes j = 0..31 (a loop whose counter is uniform)."""
        b = self.b
        pre = b.block
        head = self.llfn.append_basic_block("lanes")
        done = self.llfn.append_basic_block("lanes_done")
        b.branch(head)
        b.position_at_end(head)
        j = b.phi(I32)
        acc = b.phi(init.type)
        j.add_incoming(_c32(0), pre)
        acc.add_incoming(init, pre)
        nacc = step(j, acc)
        nj = b.add(j, _c32(1))
        end = b.block
        j.add_incoming(nj, end)
        acc.add_incoming(nacc, end)
        b.cbranch(b.icmp_unsigned("<", nj, _c32(32)), head, done)
        b.position_at_end(done)
        return nacc


def _ident(t: ll.Type, identity) -> ll.Value:
    if isinstance(t, ll.IntType):
        return ll.Constant(t, int(identity) & ((1 << t.width) - 1))
    return ll.Constant(t, float(identity))


def _combiner(em, name: str):
    b = em.b
    ints = {"add": b.add, "and": b.and_, "or": b.or_, "xor": b.xor}
    if name in ints:
        return ints[name]
    if name in ("umin", "umax", "smin", "smax"):
        cmp = b.icmp_unsigned if name[0] == "u" else b.icmp_signed
        rel = "<" if name.endswith("min") else ">"
        return lambda x, y: b.select(cmp(rel, x, y), x, y)
    if name in ("fminimum", "fmaximum"):
        return lambda x, y: em.intrinsic(f"llvm.{name[1:]}", [x, y])
    raise em.error(f"the warp reduction {name}")


__all__ = ["SyncOps", "V"]
