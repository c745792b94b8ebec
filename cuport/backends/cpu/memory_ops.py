"""The CPU backend's memory accesses for a warp: ld/st in every state space, isspacep, cvta.

cuport/isa/memory.py decodes the instructions (type, state space, vector width, ordering);
this module turns them into warp-wide LLVM IR. The emitter turns an address operand into
host pointers (`em.address`): global, const and generic addresses are host addresses
already (a generic address of shared or local memory is its host address, made by cvta);
shared addresses are offsets into the worker's shared window; local addresses are offsets
into each lane's own window; kernel `.param` reads come from the launch's parameter buffer.

Plain accesses of a warp are masked gathers/scatters. A `.volatile`, `.relaxed`, `.acquire`
or `.release` access must really happen, once per lane and in order (a spin loop on a flag
must not be hoisted, a value must not tear), so it becomes a per-lane loop of scalar
accesses: volatile ones for `.volatile`, LLVM atomics (monotonic, acquire, release) for
the others, which is at least as strong as any PTX scope asks. Except `.volatile` on shared
and local memory: only the block's own warps touch it, and they never run at the same time
(a worker switches warps at sync points and yield points only, which end the generated
code's view of memory), so such an access is a plain one; warp-synchronous code
(`volatile` shared arrays in reductions and scans) then stays vector code.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir as ll
from llvmlite.ir import instructions as lli

from ...isa import memory
from ...isa.memory import BLOCK_PRIVATE, Access
from ...isa.types import I1, I8, I32, I64, PTR, bits_type, vec
from ...ptx import ir
from . import jit
from . import layout as L


def for_each_lane(em, mask: ll.Value, inits: list[ll.Value],
                  body: Callable[[ll.Value, list[ll.Value]], list[ll.Value]]) -> list[ll.Value]:
    """Run `body(lane, values) -> values` for every set bit of the i32 `mask`, lowest lane
    first, as an LLVM loop; `values` are loop-carried (start at `inits`). The body may add
    blocks of its own. The builder ends after the loop; returns the final values."""
    b = em.b
    pre = b.block
    head = em.llfn.append_basic_block("lanes")
    step = em.llfn.append_basic_block("lane")
    done = em.llfn.append_basic_block("lanes_done")
    b.branch(head)
    b.position_at_end(head)
    rem = b.phi(I32)
    rem.add_incoming(mask, pre)
    phis = []
    for v in inits:
        p = b.phi(v.type)
        p.add_incoming(v, pre)
        phis.append(p)
    b.cbranch(b.icmp_unsigned("==", rem, ll.Constant(I32, 0)), done, step)
    b.position_at_end(step)
    lane = b.cttz(rem, ll.Constant(I1, 1))
    outs = body(lane, list(phis))
    nxt = b.and_(rem, b.sub(rem, ll.Constant(I32, 1)))
    end = b.block
    b.branch(head)
    rem.add_incoming(nxt, end)
    for p, v in zip(phis, outs, strict=True):
        p.add_incoming(v, end)
    b.position_at_end(done)
    return list(phis)


def store_atomic(b: ll.IRBuilder, value: ll.Value, ptr: ll.Value, ordering: str, align: int) -> None:
    """llvmlite's store_atomic wants typed pointers; build the instruction directly."""
    b._insert(lli.StoreAtomicInstr(b.block, value, ptr, ordering, align))


def _scalar_load(b: ll.IRBuilder, p: ll.Value, t: ll.Type, size: int, order: str | None, volatile: bool):
    if order is not None:
        return b.load_atomic(p, "acquire" if order in ("acquire", "acq_rel") else "monotonic", size, typ=t)
    ld = b.load(p, typ=t, align=size)
    if volatile:
        ld.volatile = True
    return ld


def _scalar_store(b: ll.IRBuilder, v: ll.Value, p: ll.Value, size: int, order: str | None, volatile: bool):
    if order is not None:
        store_atomic(b, v, p, "release" if order in ("release", "acq_rel") else "monotonic", size)
        return
    st = b.store(v, p, align=size)
    if volatile:
        st.volatile = True


_VOLATILE_WIDE = "relaxed"  # a volatile 16-byte access: an LLVM atomic, one instruction (below)


def _one_access(n: int, nbytes: int) -> ll.IntType | None:
    """The integer type that performs an ordered or volatile access of `n` elements, `nbytes`
    in all, as one access, where isa/memory.one_access says a GPU does: any width up to 8
    bytes; 16 where LLVM makes a 128-bit atomic one access (jit.single_access_16: vmovdqa
    with AVX, CMPXCHG16B without, LDP or an exclusive pair on AArch64)."""
    if not memory.one_access(n, nbytes) or (nbytes == 16 and not jit.single_access_16()):
        return None
    return ll.IntType(8 * nbytes)


def _ordered_loads(b: ll.IRBuilder, p: ll.Value, et: ll.Type, size: int, n: int, order: str | None,
                   volatile: bool) -> list[ll.Value]:
    """The n elements of an ordered or volatile access at `p`. One of up to 16 bytes in all
    (v2.u16, v2.u32, v4.u32, v2.u64, ...) is one access, as the GPU's: CUB publishes a tile's status
    and value with one st.relaxed.gpu.v2.u32 (v2.u64 for 8-byte values), and a reader must
    never see half of it (tests/vulkan/test_tile_status.py: element by element, 75 of 150,000
    reads of 8 bytes and 16,343 of 6,000,000 of 16 were torn)."""
    whole = _one_access(n, n * size)
    if whole is not None:
        w = _scalar_load(b, p, whole, n * size, order or (_VOLATILE_WIDE if whole.width == 128 else None), volatile)
        return [b.trunc(b.lshr(w, ll.Constant(whole, 8 * size * i)), et) for i in range(n)]
    return [_scalar_load(b, _elem_ptr(b, p, i * size), et, size, order, volatile) for i in range(n)]


def _ordered_stores(b: ll.IRBuilder, vals: list[ll.Value], p: ll.Value, size: int, order: str | None,
                    volatile: bool) -> None:
    """Store the elements `vals` (bits) of an ordered or volatile access at `p` (one access
    where _one_access says, see _ordered_loads)."""
    whole = _one_access(len(vals), len(vals) * size)
    if whole is not None:
        w = None
        for i, v in enumerate(vals):
            x = b.shl(b.zext(v, whole), ll.Constant(whole, 8 * size * i))
            w = x if w is None else b.or_(w, x)
        _scalar_store(b, w, p, len(vals) * size, order or (_VOLATILE_WIDE if whole.width == 128 else None), volatile)
        return
    for i, v in enumerate(vals):
        _scalar_store(b, v, _elem_ptr(b, p, i * size), size, order, volatile)


def _elem_ptr(b: ll.IRBuilder, p: ll.Value, offset: int) -> ll.Value:
    return p if offset == 0 else b.gep(p, [ll.Constant(I64, offset)], source_etype=I8)


def _when(em, cond: ll.Value | None, emit: Callable[[], list[ll.Value]]) -> list[ll.Value]:
    """Run `emit` (scalar accesses) only when the i1 `cond` holds (always when None), so that
    an access no lane executes never touches memory; loaded values are undefined otherwise."""
    if cond is None:
        return emit()
    b = em.b
    pre = b.block
    with b.if_then(cond):
        vals = emit()
        then = b.block
    out = []
    for v in vals:
        phi = b.phi(v.type)
        phi.add_incoming(v, then)
        phi.add_incoming(ll.Constant(v.type, ll.Undefined), pre)
        out.append(phi)
    return out


def _uniform_condition(em, ins: ir.Instr) -> ll.Value | None:
    """When a single access serves the warp: the i1 saying whether any lane executes it."""
    if not em.vec:
        return em.guard_value(ins) if ins.guard is not None else None
    return em.b.icmp_unsigned("!=", em.exec_mask(), ll.Constant(I32, 0))


def lane_pointers(em, mem: ir.Mem, space: str) -> ll.Value:
    """One host pointer per lane (<32 x ptr>), or one scalar pointer when the address is
    the same for every lane (in either mode)."""
    ptrs = em.address(mem, space)
    scalar = getattr(ptrs, "cuport_scalar", None)
    if scalar is not None:
        return scalar
    if isinstance(ptrs, ll.Value):
        return ptrs
    # checked run pattern (emit.SegPtrs): rebuild the lanes' addresses from the register
    b = em.b
    a = em.read_bits(mem.base, "u64")
    if mem.offset:
        a = b.add(a, em.const_int(64, mem.offset))
    return em.space_to_host(a, space)


def _at_offsets(em, acc: Access, offsets: list[ll.Value], base: ll.Value | None = None) -> list[ll.Value]:
    """The host pointers of one plain element at each of `offsets` (bytes, i64 per lane)
    from the access's address (or from its host pointer(s) `base`)."""
    if acc.order is not None or acc.volatile or len(acc.items) != 1:
        raise em.error("internal: per-lane offsets of an access that is not one plain element")
    b = em.b
    ptrs = em.address(acc.mem, acc.space) if base is None else base
    out = []
    for offset in offsets:
        base = ptrs
        if isinstance(offset.type, ll.VectorType) and not isinstance(ptrs.type, ll.VectorType):
            base = em.splat(ptrs)
        p = b.gep(base, [offset], source_etype=I8)
        if isinstance(offset.type, ll.VectorType):
            p.type = vec(PTR)  # llvmlite types a GEP with vector indices as a scalar pointer
        out.append(p)
    return out


def _vector_runs(em, ptrs: list[ll.Value], runs: int) -> bool:
    """Whether runs of `runs` consecutive elements are worth vector accesses (as
    emit._pattern decides for patterns it finds itself)."""
    return runs >= 8 and L.WARP % runs == 0 and em.vec and isinstance(ptrs[0].type, ll.VectorType)


def _run_leaders(em, ptrs: ll.Value, runs: int) -> list[ll.Value]:
    return [em.b.extract_element(ptrs, ll.Constant(I32, j * runs)) for j in range(L.WARP // runs)]


class Elements:
    """isa/api.py's Elements inside an outline_access function: the access's element at
    offsets from the host pointer(s) `base`, the function's parameter (lane_ops.py)."""

    def __init__(self, em, acc: Access, base: ll.Value) -> None:
        self.em, self.acc, self.base = em, acc, base

    def load(self, offsets: list[ll.Value], runs: int = 0) -> list[ll.Value]:
        return load_at(self.em, _at_offsets(self.em, self.acc, offsets, self.base), self.acc, runs)

    def store(self, vals: list[ll.Value], offsets: list[ll.Value], runs: int = 0) -> None:
        store_at(self.em, vals, _at_offsets(self.em, self.acc, offsets, self.base), self.acc, runs)


def load_at(em, ptrs: list[ll.Value], acc: Access, runs: int = 0) -> list[ll.Value]:
    """The element of `acc` at each of `ptrs` (lanes contiguous in `runs`): vector loads of
    the runs, else gathers (LLVM makes a gather of 8- or 16-bit elements 32 scalar loads,
    each behind its lane's test; wmma's loads are built once per module, outline_access)."""
    et, size = bits_type(acc.t), acc.size
    if _vector_runs(em, ptrs, runs):
        return [em._segment_load(_run_leaders(em, p, runs), et, size, "contiguous", runs) for p in ptrs]
    return [em.load(p, et, size) for p in ptrs]


def store_at(em, vals: list[ll.Value], ptrs: list[ll.Value], acc: Access, runs: int = 0) -> None:
    for v, p in zip(vals, ptrs, strict=True):
        if _vector_runs(em, ptrs, runs):
            em._segment_store(_run_leaders(em, p, runs), v, acc.size, runs)
        else:
            em.store(p, v, acc.size)


def load_elements(em, acc: Access, offsets: list[ll.Value] | None = None, runs: int = 0) -> list[ll.Value]:
    """The loaded values (bits) of every element of `acc` (or of its one element at each of
    `offsets` from its address; lanes contiguous in `runs`), in the current mode."""
    t, space, mem, n, order, volatile = acc.t, acc.space, acc.mem, len(acc.items), acc.order, acc.volatile
    size = acc.size
    et = bits_type(t)
    b = em.b
    if offsets is not None:
        return load_at(em, _at_offsets(em, acc, offsets), acc, runs)
    if order is None and (not volatile or space in BLOCK_PRIVATE):
        # plain: the emitter picks gathers, vector loads of contiguous runs, or one load
        ptrs = em.address(mem, space, size)
        return [em.load(em.offset_ptrs(ptrs, i * size), et, size) for i in range(n)]
    ptrs = lane_pointers(em, mem, space)
    if not isinstance(ptrs.type, ll.VectorType):
        # one address for the warp: one access
        vals = _when(em, _uniform_condition(em, em.ins),
                     lambda: _ordered_loads(b, ptrs, et, size, n, order, volatile))
        return [em.splat(v) if em.vec else v for v in vals]

    def body(lane, accs):
        p = b.extract_element(ptrs, lane)
        return [b.insert_element(acc_v, v, lane)
                for acc_v, v in zip(accs, _ordered_loads(b, p, et, size, n, order, volatile), strict=True)]

    undef = ll.Constant(ll.VectorType(et, 32), ll.Undefined)
    return for_each_lane(em, em.exec_mask(), [undef] * n, body)


def store_elements(em, acc: Access, vals: list[ll.Value], offsets: list[ll.Value] | None = None,
                   runs: int = 0) -> None:
    """Store `vals` (bits, one per element of `acc`, or one at each of `offsets`)."""
    t, space, mem, order, volatile = acc.t, acc.space, acc.mem, acc.order, acc.volatile
    size = acc.size
    b = em.b
    del t
    if offsets is not None:
        store_at(em, vals, _at_offsets(em, acc, offsets), acc, runs)
        return
    if order is None and (not volatile or space in BLOCK_PRIVATE):
        ptrs = em.address(mem, space, size)
        for i, v in enumerate(vals):
            em.store(em.offset_ptrs(ptrs, i * size), v, size)
        return
    ptrs = lane_pointers(em, mem, space)
    if not em.vec:
        def emit() -> list:
            _ordered_stores(b, vals, ptrs, size, order, volatile)
            return []

        _when(em, _uniform_condition(em, em.ins), emit)
        return
    if not isinstance(ptrs.type, ll.VectorType):
        ptrs = b.inttoptr(em.splat(b.ptrtoint(ptrs, I64)), vec(PTR))

    def body(lane, accs):
        p = b.extract_element(ptrs, lane)
        _ordered_stores(b, [b.extract_element(v, lane) if isinstance(v.type, ll.VectorType) else v for v in vals],
                        p, size, order, volatile)
        return []

    for_each_lane(em, em.exec_mask(), [], body)


def _within(em, a: ll.Value, base: ll.Value, size: ll.Value) -> ll.Value:
    """a - base < size (unsigned), for i64 scalars `base`/`size` and `a` in the current mode."""
    b = em.b
    if em.vec:
        base, size = em.splat(base), em.splat(size)
    return b.icmp_unsigned("<", b.sub(a, base), size)


def in_shared_window(em, a: ll.Value) -> ll.Value:
    """Whether generic (host) address(es) `a` fall in this block's shared memory."""
    b = em.b
    mc = em.mc
    dyn = b.load(b.gep(em.ctx, [ll.Constant(I64, L.LaunchCtx.dyn_smem.offset)], source_etype=I8), typ=I32)
    size = b.add(b.zext(dyn, I64), ll.Constant(I64, mc.dyn_shared_offset))
    return _within(em, a, b.ptrtoint(em.shared_base, I64), size)


def _in_local_window(em, a: ll.Value) -> ll.Value:
    b = em.b
    mc = em.mc
    base = b.load(b.gep(em.blk, [ll.Constant(I64, L.BS_LOCAL)], source_etype=I8), typ=ll.PointerType())
    size = ll.Constant(I64, mc.nwarps * L.WARP * mc.local_window)
    return _within(em, a, b.ptrtoint(base, I64), size)


def _in_const(em, a: ll.Value) -> ll.Value:
    b = em.b
    mc = em.mc
    r = em.const("pred", 0)
    for v in mc.ptx.variables:
        if v.space == "const" and v.name in mc.global_vars:
            g = b.ptrtoint(mc.global_vars[v.name], I64)
            r = b.or_(r, _within(em, a, g, ll.Constant(I64, max(v.size, 1))))
    return r


def _in_kernel_params(em, a: ll.Value) -> ll.Value:
    b = em.b
    mc = em.mc
    end = 0
    for p in mc.kernel.params:
        end = max(end, mc.kernel_param_offsets[p.name] + p.size)
    base = b.load(b.gep(em.ctx, [ll.Constant(I64, 0)], source_etype=I8), typ=ll.PointerType())
    return _within(em, a, b.ptrtoint(base, I64), ll.Constant(I64, end))


def in_space(em, space: str, a: ll.Value) -> ll.Value:
    """isspacep: whether generic address(es) `a` lie in `space` (i1 in the current mode)."""
    b = em.b
    if space == "shared":
        return in_shared_window(em, a)
    if space == "local":
        return _in_local_window(em, a)
    if space == "const":
        return _in_const(em, a)
    if space == "param":
        return _in_kernel_params(em, a)
    # the global window holds everything but shared, local and constant memory
    return b.not_(b.or_(b.or_(in_shared_window(em, a), _in_local_window(em, a)), _in_const(em, a)))


def cvta(em, space: str, a: ll.Value, to_space: bool) -> ll.Value:
    """cvta: a `space` address to generic (to_space False) or back (True), as i64."""
    b = em.b
    if space == "shared":
        base = b.ptrtoint(em.shared_base, I64)
        base = em.splat(base) if em.vec else base
        return b.sub(a, base) if to_space else b.add(b.and_(a, em.const_int(64, 0xFFFFFFFF)), base)
    if space == "local":
        if not em.vec:
            raise em.error("internal: cvta.local in uniform mode")
        bases = em.lane_local_bases()
        return b.sub(a, bases) if to_space else b.add(a, bases)
    return a  # global, const and param addresses are generic (host) addresses already
