"""ld, ldu, st, prefetch: loads and stores in every state space.

PTX ISA §9.7.9 (Data Movement and Conversion Instructions: ld, ldu, st, prefetch).
The emitter turns an address operand into host pointers (`em.address`): global, const and
generic addresses are host addresses already; shared addresses are offsets into the
worker's shared window; local addresses are offsets into each lane's own window; kernel
`.param` reads come from the launch's parameter buffer. Cache hints (.ca, .cg, .cs, .lu,
.cv, .nc, L1::/L2:: qualifiers) change nothing on a CPU. `.volatile` and the
.relaxed/.acquire/.release forms become volatile or atomic accesses plus fences, which
is at least as strong as the PTX memory model asks.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ..backends.cpu.types import bits_type
from ..ptx import ir
from ..ptx.ir import TYPE_BITS
from .registry import lowers, type_suffix

_ORDER = {"acquire": "acquire", "release": "release", "relaxed": "monotonic", "acq_rel": "acq_rel"}


def vector_width(ins: ir.Instr) -> int:
    for m in ins.mods:
        if m in ("v2", "v4", "v8"):
            return int(m[1:])
    return 1


def _order(ins: ir.Instr) -> str | None:
    for m in ins.mods:
        if m in _ORDER:
            return _ORDER[m]
    return None


def _elem_ptrs(em, ptrs: ll.Value, offset: int) -> ll.Value:
    if offset == 0:
        return ptrs
    b = em.b
    if isinstance(ptrs.type, ll.VectorType):
        i8 = ll.IntType(8)
        return b.gep(ptrs, [ll.Constant(ll.IntType(64), offset)], source_etype=i8)
    return b.gep(ptrs, [ll.Constant(ll.IntType(64), offset)], source_etype=ll.IntType(8))


@lowers("ld", "ldu")
def lower_ld(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    space = em.space_of(ins)
    dst, mem = ins.args[0], ins.args[1]
    if not isinstance(mem, ir.Mem):
        raise em.error("a load whose source is not an address")
    n = vector_width(ins)
    size = max(TYPE_BITS[t] // 8, 1)
    ptrs = em.address(mem, space)
    order = _order(ins)
    volatile = "volatile" in ins.mods
    items = dst.items if isinstance(dst, ir.Vec) else (dst,)
    if len(items) != n:
        raise em.error(f"ld.v{n} with {len(items)} destinations")
    et = bits_type(t)
    for i, d in enumerate(items):
        p = _elem_ptrs(em, ptrs, i * size)
        if order is not None and not isinstance(p.type, ll.VectorType):
            v = em.b.load_atomic(p, "acquire" if order in ("acquire", "acq_rel") else "monotonic", size, typ=et)
            v = em.splat(v) if em.vec else v
        else:
            v = em.load(p, et, size, volatile=volatile)
        em.write(d, t, v)
    if order in ("acquire", "acq_rel") and isinstance(ptrs.type, ll.VectorType):
        em.b.fence("acquire")


@lowers("st")
def lower_st(em, ins: ir.Instr) -> None:
    t = type_suffix(ins)
    space = em.space_of(ins)
    mem, src = ins.args[0], ins.args[1]
    if not isinstance(mem, ir.Mem):
        raise em.error("a store whose destination is not an address")
    n = vector_width(ins)
    size = max(TYPE_BITS[t] // 8, 1)
    ptrs = em.address(mem, space)
    order = _order(ins)
    if order in ("release", "acq_rel"):
        em.b.fence("release")
    volatile = "volatile" in ins.mods
    items = src.items if isinstance(src, ir.Vec) else (src,)
    if len(items) != n:
        raise em.error(f"st.v{n} with {len(items)} sources")
    for i, s in enumerate(items):
        v = em.read_bits(s, t)
        em.store(_elem_ptrs(em, ptrs, i * size), v, size, volatile=volatile)


@lowers("prefetch", "prefetchu", "applypriority", "discard", "createpolicy")
def lower_prefetch(em, ins: ir.Instr) -> None:
    """Cache-control hints: nothing to do on a CPU (createpolicy yields a dummy policy)."""
    if ins.op == "createpolicy":
        em.write(ins.args[0], "b64", em.const_int(64, 0))
