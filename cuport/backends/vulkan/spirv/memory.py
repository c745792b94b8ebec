"""Typed pointers for accesses: PhysicalStorageBuffer pointers from global addresses,
access chains into Function and Workgroup variables, and the memory operands each needs."""

from __future__ import annotations

from llvmlite import ir as ll

from .module import OP, enum
from .translate import (
    MA_ALIGNED,
    MA_NONPRIVATE,
    MA_VOLATILE,
    LocalPtr,
    alloc_size,
    is_bool,
    scalar_width,
    splat,
)

MA_AVAILABLE = enum("MemoryAccess", "MakePointerAvailable")
MA_VISIBLE = enum("MemoryAccess", "MakePointerVisible")
SCOPE_DEVICE = enum("Scope", "Device")
SCOPE_WORKGROUP = enum("Scope", "Workgroup")


def memory_operands(tr, ins, storage: str, t: ll.Type) -> list[int]:
    """Memory operands of a load/store through a pointer of `storage`: every global or
    shared access takes part in inter-invocation ordering (NonPrivatePointer); a volatile
    one is also made visible (loads) or available (stores) at device (global) or workgroup
    (shared) scope, so a spin on a flag sees other invocations' stores; a global one states
    its alignment."""
    volatile = bool(getattr(ins, "volatile", False)) or "volatile" in getattr(ins, "flags", ())
    if storage in ("Function", "Private"):
        return [MA_VOLATILE] if volatile else []
    mask = MA_NONPRIVATE
    params: list[int] = []
    if storage == "PhysicalStorageBuffer":
        mask |= MA_ALIGNED
        params.append(getattr(ins, "align", None) or _abi_align(t))
    if volatile:
        mask |= MA_VOLATILE | (MA_AVAILABLE if isinstance(ins, ll.StoreInstr) else MA_VISIBLE)
        if storage == "Workgroup":
            params.append(tr.cint(SCOPE_WORKGROUP))
        else:
            tr.m.capability("VulkanMemoryModelDeviceScope")
            params.append(tr.cint(SCOPE_DEVICE))
    return [mask, *params]


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




# ---------------------------------------------------------------------- variables
def local_load(tr, ins, p: LocalPtr, t: ll.Type) -> int:
    """A load of type `t` through a pointer into a Function or Workgroup variable: the
    element itself, the element reinterpreted (same size), or consecutive elements of its
    array put together (a wider type: an i64 or <4 x float> from an array of i32)."""
    e = p.ptype
    ops = memory_operands(tr, ins, p.storage, e)
    if _same_type(e, t) or (isinstance(t, ll.PointerType) and _same_type(e, ll.IntType(64))):
        return tr.op(OP.OpLoad, tr.ty(t), access_pointer(tr, p, e), *ops)
    if is_bool(t):
        v = local_load(tr, ins, p, ll.IntType(8) if not isinstance(t, ll.VectorType) else ll.VectorType(ll.IntType(8), t.count))
        return tr.op(OP.OpINotEqual, tr.ty(t), v, splat(tr, ll.IntType(8), 0))
    parts = [tr.op(OP.OpLoad, tr.ty(e), access_pointer(tr, q, e), *ops) for q in _elements(tr, p, t)]
    return _join(tr, parts, e, t)


def local_store(tr, ins, p: LocalPtr, x: int, t: ll.Type) -> None:
    e = p.ptype
    ops = memory_operands(tr, ins, p.storage, e)
    if _same_type(e, t) or (isinstance(t, ll.PointerType) and _same_type(e, ll.IntType(64))):
        tr.stmt(OP.OpStore, access_pointer(tr, p, e), x, *ops)
        return
    if is_bool(t):
        i8 = ll.IntType(8)
        local_store(tr, ins, p, tr.op(OP.OpSelect, tr.ty(i8), x, splat(tr, i8, 1), splat(tr, i8, 0)), i8)
        return
    qs = _elements(tr, p, t)
    for q, part in zip(qs, _split(tr, x, e, t, len(qs)), strict=True):
        tr.stmt(OP.OpStore, access_pointer(tr, q, e), part, *ops)


def _elements(tr, p: LocalPtr, t: ll.Type) -> list[LocalPtr]:
    """The elements an access of type t covers, starting at p's (consecutive in its array)."""
    e = p.ptype
    se, st = alloc_size(e), alloc_size(t)
    if isinstance(e, ll.ArrayType) or st % se or is_bool(e):
        raise tr.error(f"access of {t} through a pointer to {e}")
    k = st // se
    if k == 1:
        return [p]
    parent = _parent(p)
    if parent is None:
        raise tr.error(f"access of {t} through a pointer to a single {e}")
    out = []
    for j in range(k):
        last = p.path[-1] if j == 0 else tr.op(OP.OpIAdd, tr.t_i32, tr.use(p.path[-1]), tr.cint(j))
        out.append(LocalPtr(p.var, p.storage, p.vtype, p.path[:-1] + (last,), e))
    return out


def _parent(p: LocalPtr):
    if not p.path:
        return None
    t = p.vtype
    for _ in range(len(p.path) - 1):
        t = t.element
    return t if isinstance(t, ll.ArrayType) else None


def _group_type(e: ll.Type, n: int) -> ll.Type:
    return e if n == 1 else ll.VectorType(e, n)


def _join(tr, parts: list[int], e: ll.Type, t: ll.Type) -> int:
    """Elements of type e (in memory order) as one value of type t."""
    if len(parts) == 1:
        return tr.op(OP.OpBitcast, tr.ty(t), parts[0])
    if len(parts) <= 4:
        v = tr.op(OP.OpCompositeConstruct, tr.ty(ll.VectorType(e, len(parts))), *parts)
        return tr.op(OP.OpBitcast, tr.ty(t), v)
    # more than four: groups of four as integers first
    w = ll.IntType(alloc_size(e) * 4 * 8)
    words = [_join(tr, parts[i:i + 4], e, w) for i in range(0, len(parts), 4)]
    return _join(tr, words, w, t)


def _split(tr, x: int, e: ll.Type, t: ll.Type, k: int) -> list[int]:
    """Value x of type t as k elements of type e (in memory order)."""
    if k == 1:
        return [tr.op(OP.OpBitcast, tr.ty(e), x)]
    if k <= 4:
        v = tr.op(OP.OpBitcast, tr.ty(ll.VectorType(e, k)), x)
        return [tr.op(OP.OpCompositeExtract, tr.ty(e), v, j) for j in range(k)]
    w = ll.IntType(alloc_size(e) * 4 * 8)
    out = []
    for word in _split(tr, x, w, t, k // 4):
        out += _split(tr, word, e, w, 4)
    return out
