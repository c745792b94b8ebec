"""Typed pointers for accesses: PhysicalStorageBuffer pointers from global addresses,
access chains into Function and Workgroup variables, and the memory operands each needs."""

from __future__ import annotations

from llvmlite import ir as ll

from .module import OP
from .translate import (
    MA_ALIGNED,
    MA_NONPRIVATE,
    MA_VOLATILE,
    LocalPtr,
    alloc_size,
    is_bool,
    scalar_width,
)


def memory_operands(tr, ins, storage: str, t: ll.Type) -> list[int]:
    volatile = bool(getattr(ins, "volatile", False)) or "volatile" in getattr(ins, "flags", ())
    if storage == "Function":
        return [MA_VOLATILE] if volatile else []
    mask = MA_NONPRIVATE | (MA_VOLATILE if volatile else 0)
    if storage == "PhysicalStorageBuffer":
        align = getattr(ins, "align", None) or _abi_align(t)
        return [mask | MA_ALIGNED, align]
    return [mask]


def _abi_align(t: ll.Type) -> int:
    return alloc_size(t) if not isinstance(t, ll.ArrayType) else _abi_align(t.element)


def _mem_type(tr, t: ll.Type) -> tuple[ll.Type, bool]:
    """The type a value of `t` has in memory (i1 is a byte), and whether it was changed."""
    if isinstance(t, ll.PointerType):
        return ll.IntType(64), False  # a global pointer is stored as its address
    if is_bool(t):
        return (ll.VectorType(ll.IntType(8), t.count) if isinstance(t, ll.VectorType) else ll.IntType(8)), True
    return t, False


def access_pointer(tr, p, t: ll.Type, storage_out: list | None = None) -> int:
    """A typed SPIR-V pointer for an access of type `t` through pointer `p` (a global
    address id or a LocalPtr)."""
    if isinstance(p, LocalPtr):
        if not _same_type(p.ptype, t):
            raise tr.error(f"access of {t} through a pointer to {p.ptype}")
        if storage_out is not None:
            storage_out.append(p.storage)
        if not p.path:
            return p.var
        idx = [tr.use(i) for i in p.path]
        return tr.op(OP.OpAccessChain, tr.ptr_type(p.storage, tr.ty(t)), p.var, *idx)
    width = scalar_width(t)
    if width in (8, 16):
        tr.m.capability(f"StorageBuffer{width}BitAccess")
    if storage_out is not None:
        storage_out.append("PhysicalStorageBuffer")
    return tr.op(OP.OpConvertUToPtr, tr.ptr_type("PhysicalStorageBuffer", tr.ty(t)), tr.use(p))


def _same_type(a: ll.Type, b: ll.Type) -> bool:
    return a is b or str(a) == str(b)


