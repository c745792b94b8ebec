"""ld, ldu, st, prefetch, isspacep: loads and stores in every state space.

PTX ISA §9.7.9.8-11 (ld, ld.global.nc, ldu, st), §9.7.9.15 (prefetch), §9.7.9.17 (isspacep).
The emitter turns an address operand into host pointers (`em.address`): global, const and
generic addresses are host addresses already (a generic address of shared or local memory
is its host address, made by cvta); shared addresses are offsets into the worker's shared
window; local addresses are offsets into each lane's own window; kernel `.param` reads come
from the launch's parameter buffer.

Cache hints (.ca, .cg, .cs, .lu, .cv, .nc, L1::/L2:: qualifiers, cache policies) change
nothing on a CPU. Vector forms (.v2/.v4/.v8) access consecutive elements.

Memory model. Plain accesses of a warp are masked gathers/scatters. A `.volatile`,
`.relaxed`, `.acquire` or `.release` access must really happen, once per lane and in
order (a spin loop on a flag must not be hoisted, a value must not tear), so it becomes a
per-lane loop of scalar accesses: volatile ones for `.volatile`, LLVM atomics (monotonic,
acquire, release) for the others, which is at least as strong as any PTX scope asks.
Except `.volatile` on shared and local memory: only the block's own warps touch it, and
they never run at the same time (a worker switches warps at sync points and yield
points only, which end the generated code's view of memory), so such an access is a
plain one; warp-synchronous code (`volatile` shared arrays in reductions and scans)
then stays vector code.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir as ll
from llvmlite.ir import instructions as lli

from ..backends.cpu import layout as L
from ..backends.cpu.types import I1, I8, I32, I64, PTR, bits_type, vec
from ..ptx import ir
from ..ptx.ir import TYPE_BITS
from .registry import lowers, type_suffix

_ORDER = {"relaxed": "monotonic", "acquire": "acquire", "release": "release", "acq_rel": "acq_rel",
          "mmio": "monotonic"}


def vector_width(ins: ir.Instr) -> int:
    for m in ins.mods:
        if m in ("v2", "v4", "v8"):
            return int(m[1:])
    return 1


def memory_order(ins: ir.Instr) -> str | None:
    """The LLVM ordering a PTX .sem qualifier asks for (None: a plain access)."""
    for m in ins.mods:
        if m in _ORDER:
            return _ORDER[m]
    return None


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


def _elem_ptrs(em, ptrs: ll.Value, offset: int) -> ll.Value:
    if offset == 0:
        return ptrs
    return em.b.gep(ptrs, [ll.Constant(I64, offset)], source_etype=I8)


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


def _space_and_operands(em, ins: ir.Instr, mem_index: int, data_index: int):
    t = type_suffix(ins)
    if t == "pred":
        raise em.error("a load or store of a predicate")
    mem = ins.args[mem_index]
    if not isinstance(mem, ir.Mem):
        raise em.error("an access whose address is not [address]")
    data = ins.args[data_index]
    items = data.items if isinstance(data, ir.Vec) else (data,)
    n = vector_width(ins)
    if len(items) != n:
        raise em.error(f"a .v{n} access with {len(items)} elements")
    order = memory_order(ins)
    if order is not None and TYPE_BITS[t] > 64:
        raise em.error(f"an ordered access of .{t} is not supported")
    return t, em.space_of(ins), mem, items, order, "volatile" in ins.mods


# spaces no other block or host thread can see: volatile accesses need no special care
_BLOCK_PRIVATE = frozenset({"shared", "local"})


@lowers("ld", "ldu")
def lower_ld(em, ins: ir.Instr) -> None:
    t, space, mem, items, order, volatile = _space_and_operands(em, ins, 1, 0)
    size = max(TYPE_BITS[t] // 8, 1)
    et = bits_type(t)
    b = em.b
    if order is None and (not volatile or space in _BLOCK_PRIVATE):
        # plain: the emitter picks gathers, vector loads of contiguous runs, or one load
        ptrs = em.address(mem, space)
        for i, d in enumerate(items):
            em.write(d, t, em.load(em.offset_ptrs(ptrs, i * size), et, size))
        return
    ptrs = lane_pointers(em, mem, space)
    if not isinstance(ptrs.type, ll.VectorType):
        # one address for the warp: one access
        vals = _when(em, _uniform_condition(em, ins), lambda: [
            _scalar_load(b, _elem_ptrs(em, ptrs, i * size), et, size, order, volatile) for i in range(len(items))])
        for d, v in zip(items, vals, strict=True):
            em.write(d, t, em.splat(v) if em.vec else v)
        return

    def body(lane, accs):
        p = b.extract_element(ptrs, lane)
        out = []
        for i, acc in enumerate(accs):
            v = _scalar_load(b, _elem_ptrs(em, p, i * size), et, size, order, volatile)
            out.append(b.insert_element(acc, v, lane))
        return out

    undef = ll.Constant(ll.VectorType(et, 32), ll.Undefined)
    vals = for_each_lane(em, em.exec_mask(), [undef] * len(items), body)
    for d, v in zip(items, vals, strict=True):
        em.write(d, t, v)


@lowers("st")
def lower_st(em, ins: ir.Instr) -> None:
    t, space, mem, items, order, volatile = _space_and_operands(em, ins, 0, 1)
    size = max(TYPE_BITS[t] // 8, 1)
    vals = [em.read_bits(s, t) for s in items]
    b = em.b
    if order is None and (not volatile or space in _BLOCK_PRIVATE):
        ptrs = em.address(mem, space)
        for i, v in enumerate(vals):
            em.store(em.offset_ptrs(ptrs, i * size), v, size)
        return
    ptrs = lane_pointers(em, mem, space)
    if not em.vec:
        def emit() -> list:
            for i, v in enumerate(vals):
                _scalar_store(b, v, _elem_ptrs(em, ptrs, i * size), size, order, volatile)
            return []

        _when(em, _uniform_condition(em, ins), emit)
        return
    if not isinstance(ptrs.type, ll.VectorType):
        ptrs = b.inttoptr(em.splat(b.ptrtoint(ptrs, I64)), vec(PTR))

    def body(lane, accs):
        p = b.extract_element(ptrs, lane)
        for i, v in enumerate(vals):
            x = b.extract_element(v, lane) if isinstance(v.type, ll.VectorType) else v
            _scalar_store(b, x, _elem_ptrs(em, p, i * size), size, order, volatile)
        return []

    for_each_lane(em, em.exec_mask(), [], body)


@lowers("prefetch", "prefetchu", "applypriority", "discard", "createpolicy")
def lower_prefetch(em, ins: ir.Instr) -> None:
    """Cache-control hints: nothing to do on a CPU (createpolicy yields a dummy policy).

    `discard` makes the line's contents undefined: keeping them is one valid outcome."""
    if ins.op == "createpolicy":
        em.write(ins.args[0], "b64", em.const_int(64, 0))


# ---------------------------------------------------------------- isspacep


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


@lowers("isspacep")
def lower_isspacep(em, ins: ir.Instr) -> None:
    space = next((m.split("::")[0] for m in ins.mods
                  if m.split("::")[0] in ("global", "shared", "local", "const", "param")), None)
    if space is None:
        raise em.error("isspacep without a state space")
    a = em.read_bits(ins.args[1], "u64")
    b = em.b
    if space == "shared":
        r = in_shared_window(em, a)
    elif space == "local":
        r = _in_local_window(em, a)
    elif space == "const":
        r = _in_const(em, a)
    elif space == "param":
        r = _in_kernel_params(em, a)
    else:  # the global window holds everything but shared, local and constant memory
        r = b.not_(b.or_(b.or_(in_shared_window(em, a), _in_local_window(em, a)), _in_const(em, a)))
    em.write(ins.args[0], "pred", r)
