"""The CPU backend's asynchronous copies and mbarrier words for a warp (isa/api.py's
copy_bytes and sync_word_*; the semantics are cuport/isa/async_copy.py's).

A warp's lanes act one after another in lane order, each on its generic (host) address.
Only the block's own warps touch its shared memory, and a worker switches warps at sync
and yield points only (memory_ops.py), so a volatile load, change and store per lane
updates an mbarrier word atomically; the fences around it order the lane's other accesses
as the release-acquire PTX asks of the barrier. A copy of all of cp-size bytes is the
ordinary loads and stores of a warp (vector accesses of contiguous lanes); a partial or
bulk copy is a memset and a memcpy per lane.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir as ll

from ...isa.types import I1, I8, I32, I64, PTR
from ...ptx import ir


def _generic(em, mem: ir.Mem, space: str) -> ll.Value:
    """The generic address (u64, current mode) of a memory operand of `space`."""
    b = em.b
    if isinstance(mem.base, ir.Reg):
        a = em.read_bits(mem.base, "u64")
    elif isinstance(mem.base, ir.Sym):
        a = em.read_bits(ir.SymAddr(mem.base.name, 0), "u64")
    else:
        a = em.const_int(64, 0)
    if mem.offset:
        a = b.add(a, em.const_int(64, mem.offset))
    return a if space == "generic" else em.cvta(space, a, False)


def _ptr(em, a: ll.Value) -> ll.Value:
    return em.b.inttoptr(a, PTR)


def _each(em, args: list[ll.Value], body: Callable[[list[ll.Value]], None]) -> None:
    """body(scalar args) for every executing thread, lowest lane first."""
    def run(vals):
        body(vals)
        return []

    em.per_lane(args, run)


def copy_bytes(em, dst: ir.Mem, dst_space: str, src: ir.Mem, src_space: str,
               size: int | ll.Value, count: ll.Value | None = None) -> None:
    if isinstance(size, int) and count is None:
        # the whole cp-size from the source: ordinary 4-byte loads and stores (the emitter
        # makes vector accesses of contiguous lanes)
        for off in range(0, size, 4):
            value = em.load(em.address(ir.Mem(src.base, src.offset + off), src_space), I32, 4)
            em.store(em.address(ir.Mem(dst.base, dst.offset + off), dst_space), value, 4)
        return
    em.begin_collective()
    b = em.b
    n = count if count is not None else size
    args = [_generic(em, dst, dst_space), _generic(em, src, src_space), n]

    def body(vals):
        d, s, k = vals
        if count is not None:  # zeros first, then the bytes that come from the source
            em.intrinsic("llvm.memset", [_ptr(em, d), ll.Constant(I8, 0), ll.Constant(I64, size),
                                         ll.Constant(I1, 0)], [PTR, I64], ll.VoidType())
        em.intrinsic("llvm.memcpy", [_ptr(em, d), _ptr(em, s), b.zext(k, I64), ll.Constant(I1, 0)],
                     [PTR, PTR, I64], ll.VoidType())

    _each(em, args, body)


def _word_load(em, a: ll.Value) -> ll.Value:
    ld = em.b.load(_ptr(em, a), typ=I64, align=8)
    ld.volatile = True
    return ld


def sync_word_store(em, mem: ir.Mem, space: str, value: ll.Value) -> None:
    em.begin_collective()

    def store(vals):
        st = em.b.store(vals[1], _ptr(em, vals[0]), align=8)
        st.volatile = True

    _each(em, [_generic(em, mem, space), value], store)


def sync_word_load(em, mem: ir.Mem, space: str) -> ll.Value:
    em.begin_collective()
    (word,) = em.per_lane([_generic(em, mem, space)], lambda vals: [_word_load(em, vals[0])], 1, I64)
    em.b.fence("acquire")
    return word


def sync_word_update(em, mem: ir.Mem, space: str, args: list[ll.Value],
                     change: Callable[[ll.Value, list[ll.Value]], ll.Value],
                     together: bool = False) -> tuple[ll.Value, ll.Value]:
    em.begin_collective()
    b = em.b
    address = _generic(em, mem, space)
    first = None
    if together:  # the word before the warp's updates: read before any lane's
        (first,) = em.per_lane([address], lambda vals: [_word_load(em, vals[0])], 1, I64)
    b.fence("release")

    def body(vals):
        old = _word_load(em, vals[0])
        st = b.store(change(old, vals[1:]), _ptr(em, vals[0]), align=8)
        st.volatile = True
        return [old]

    (old,) = em.per_lane([address, *args], body, 1, I64)
    b.fence("acquire")
    return old, (old if first is None else first)
