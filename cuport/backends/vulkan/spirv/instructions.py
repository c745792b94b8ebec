"""The LLVM instructions, one handler each, registered in HANDLERS (by instruction class,
or by opname for the classes that hold several opcodes). A handler translates one
instruction into the translator's current block and defines its value."""

from __future__ import annotations

from llvmlite import ir as ll

from . import escapes, fpmath, intrinsics, subnormal
from .memory import _mem_type, _same_type, access_pointer, local_load, local_store, memory_operands
from .module import OP, enum
from .translate import LocalPtr, alloc_size, bool_type, is_bool, is_float, splat

HANDLERS: dict = {}


def handles(*keys):
    def deco(f):
        for k in keys:
            assert k not in HANDLERS, k
            HANDLERS[k] = f
        return f
    return deco


# ---------------------------------------------------------------------- arithmetic
_INT = {"add": OP.OpIAdd, "sub": OP.OpISub, "mul": OP.OpIMul, "udiv": OP.OpUDiv, "sdiv": OP.OpSDiv,
        "urem": OP.OpUMod, "srem": OP.OpSRem, "shl": OP.OpShiftLeftLogical,
        "lshr": OP.OpShiftRightLogical, "ashr": OP.OpShiftRightArithmetic,
        "and": OP.OpBitwiseAnd, "or": OP.OpBitwiseOr, "xor": OP.OpBitwiseXor}
_BOOL = {"and": OP.OpLogicalAnd, "or": OP.OpLogicalOr, "xor": OP.OpLogicalNotEqual,
         "add": OP.OpLogicalNotEqual, "sub": OP.OpLogicalNotEqual, "mul": OP.OpLogicalAnd}
_FLOAT = {"fadd": OP.OpFAdd, "fsub": OP.OpFSub, "fmul": OP.OpFMul}


@handles(*_INT)
def _int_binop(tr, ins) -> None:
    a, b = ins.operands
    t = ins.type
    if is_bool(t):
        code = _BOOL.get(ins.opname)
        if code is None:
            raise tr.error(f"`{ins.opname}` on i1 not supported")
    elif ins.opname in ("sdiv", "srem"):
        tr.define(ins, _signed_divide(tr, ins.opname, t, tr.val(a), tr.val(b)))
        return
    else:
        code = _INT[ins.opname]
    tr.define(ins, tr.op(code, tr.ty(t), tr.val(a), tr.val(b)))


def _signed_divide(tr, opname: str, t, a: int, b: int) -> int:
    """sdiv/srem through the unsigned operations on magnitudes: NVIDIA's Vulkan driver
    (580, H200) answers OpSRem(1, -1) = 1 on 64-bit integers. The quotient's sign is the
    operands' sign difference, the remainder's the dividend's (INT_MIN / -1 never gets here:
    the PTX lowering divides by 1 instead)."""
    ty, bt, zero = tr.ty(t), bool_type(tr, t), splat(tr, t, 0)

    def magnitude(x: int) -> tuple[int, int]:
        neg = tr.op(OP.OpSLessThan, bt, x, zero)
        return neg, tr.op(OP.OpSelect, ty, neg, tr.op(OP.OpSNegate, ty, x), x)

    neg_a, abs_a = magnitude(a)
    neg_b, abs_b = magnitude(b)
    if opname == "sdiv":
        r, neg = tr.op(OP.OpUDiv, ty, abs_a, abs_b), tr.op(OP.OpLogicalNotEqual, bt, neg_a, neg_b)
    else:
        r, neg = tr.op(OP.OpUMod, ty, abs_a, abs_b), neg_a
    return tr.op(OP.OpSelect, ty, neg, tr.op(OP.OpSNegate, ty, r), r)


@handles(*_FLOAT)
def _float_binop(tr, ins) -> None:
    a, b = ins.operands
    t = ins.type
    if subnormal.active(tr, t):
        x, y = tr.val(a), tr.val(b)
        tr.define(ins, subnormal.fmul(tr, t, x, y) if ins.opname == "fmul"
                  else subnormal.fadd(tr, t, x, y, sub=ins.opname == "fsub"))
        return
    r = tr.op(_FLOAT[ins.opname], tr.ty(t), tr.val(a), tr.val(b))
    tr.define(ins, tr.no_contract(r))


@handles("frem")
def _frem(tr, ins) -> None:
    a, b = ins.operands
    tr.define(ins, tr.op(OP.OpFRem, tr.ty(ins.type), tr.val(a), tr.val(b)))


@handles("fdiv")
def _fdiv(tr, ins) -> None:
    a, b = ins.operands
    tr.define(ins, fpmath.div(tr, ins.type, tr.val(a), tr.val(b)))


@handles("fneg")
def _fneg(tr, ins) -> None:
    (a,) = ins.operands
    if subnormal.active(tr, ins.type):
        tr.define(ins, subnormal.fneg(tr, ins.type, tr.val(a)))
        return
    tr.define(ins, tr.no_contract(tr.op(OP.OpFNegate, tr.ty(ins.type), tr.val(a))))


@handles("freeze")
def _freeze(tr, ins) -> None:
    tr.define(ins, tr.val(ins.operands[0]))


# ---------------------------------------------------------------------- comparisons
_ICMP = {"eq": OP.OpIEqual, "ne": OP.OpINotEqual, "ugt": OP.OpUGreaterThan,
         "uge": OP.OpUGreaterThanEqual, "ult": OP.OpULessThan, "ule": OP.OpULessThanEqual,
         "sgt": OP.OpSGreaterThan, "sge": OP.OpSGreaterThanEqual, "slt": OP.OpSLessThan,
         "sle": OP.OpSLessThanEqual}
_FCMP = {"oeq": OP.OpFOrdEqual, "one": OP.OpFOrdNotEqual, "ogt": OP.OpFOrdGreaterThan,
         "oge": OP.OpFOrdGreaterThanEqual, "olt": OP.OpFOrdLessThan, "ole": OP.OpFOrdLessThanEqual,
         "ueq": OP.OpFUnordEqual, "une": OP.OpFUnordNotEqual, "ugt": OP.OpFUnordGreaterThan,
         "uge": OP.OpFUnordGreaterThanEqual, "ult": OP.OpFUnordLessThan,
         "ule": OP.OpFUnordLessThanEqual}


@handles(ll.ICMPInstr)
def _icmp(tr, ins) -> None:
    a, b = ins.operands
    rt = bool_type(tr, a.type)
    x, y = tr.val(a), tr.val(b)
    if is_bool(a.type):
        if ins.op in ("eq", "ne"):
            tr.define(ins, tr.op(OP.OpLogicalEqual if ins.op == "eq" else OP.OpLogicalNotEqual, rt, x, y))
            return
        # ordering comparisons of i1: as integers (true is 1 unsigned, -1 signed)
        it = ll.VectorType(ll.IntType(8), a.type.count) if isinstance(a.type, ll.VectorType) else ll.IntType(8)
        one = -1 if ins.op.startswith("s") else 1
        x, y = (tr.op(OP.OpSelect, tr.ty(it), v, splat(tr, it, one), splat(tr, it, 0)) for v in (x, y))
    tr.define(ins, tr.op(_ICMP[ins.op], rt, x, y))


@handles(ll.FCMPInstr)
def _fcmp(tr, ins) -> None:
    a, b = ins.operands
    rt = bool_type(tr, a.type)
    p = ins.op
    if p in ("true", "false"):
        v = tr.m.const_bool(p == "true")
        if isinstance(a.type, ll.VectorType):
            v = tr.m.const_composite(rt, [v] * a.type.count)
        tr.define(ins, v)
        return
    x, y = tr.val(a), tr.val(b)
    if p in ("ord", "uno"):
        nan = tr.op(OP.OpLogicalOr, rt, tr.op(OP.OpIsNan, rt, x), tr.op(OP.OpIsNan, rt, y))
        tr.define(ins, nan if p == "uno" else tr.op(OP.OpLogicalNot, rt, nan))
        return
    if subnormal.order_active(tr, a.type):
        tr.define(ins, subnormal.fcmp(tr, p, a.type, a, b))
        return
    tr.define(ins, tr.op(_FCMP[p], rt, x, y))


@handles(ll.SelectInstr)
def _select(tr, ins) -> None:
    c, a, b = ins.operands
    if isinstance(ins.type, ll.PointerType):
        pa, pb = tr.pointer(a), tr.pointer(b)
        if isinstance(pa, LocalPtr) or isinstance(pb, LocalPtr):
            tr.define(ins, _select_local(tr, tr.val(c), pa, pb))
            return
    tr.define(ins, tr.op(OP.OpSelect, tr.ty(ins.type), tr.val(c), tr.val(a), tr.val(b)))


def _select_local(tr, c: int, pa, pb) -> LocalPtr:
    if not (isinstance(pa, LocalPtr) and isinstance(pb, LocalPtr) and pa.var == pb.var
            and len(pa.path) == len(pb.path)):
        raise tr.error("a select between pointers into different variables is not supported")
    path = tuple(x if x == y else tr.op(OP.OpSelect, tr.t_i32, c, tr.use(x), tr.use(y))
                 for x, y in zip(pa.path, pb.path, strict=True))
    return LocalPtr(pa.var, pa.storage, pa.vtype, path, pa.ptype)


# ---------------------------------------------------------------------- casts
@handles("trunc")
def _trunc(tr, ins) -> None:
    (a,) = ins.operands
    if is_bool(ins.type):
        t = a.type
        one = tr.op(OP.OpBitwiseAnd, tr.ty(t), tr.val(a), splat(tr, t, 1))
        tr.define(ins, tr.op(OP.OpINotEqual, tr.ty(ins.type), one, splat(tr, t, 0)))
        return
    tr.define(ins, tr.op(OP.OpUConvert, tr.ty(ins.type), tr.val(a)))


@handles("zext", "sext")
def _ext(tr, ins) -> None:
    (a,) = ins.operands
    t = ins.type
    if is_bool(a.type):
        tr.define(ins, tr.op(OP.OpSelect, tr.ty(t), tr.val(a), splat(tr, t, -1 if ins.opname == "sext" else 1), splat(tr, t, 0)))
        return
    tr.define(ins, tr.op(OP.OpUConvert if ins.opname == "zext" else OP.OpSConvert, tr.ty(t), tr.val(a)))


@handles("fptrunc", "fpext")
def _fconv(tr, ins) -> None:
    (a,) = ins.operands
    t = ins.type
    if ins.opname == "fpext" and subnormal.active(tr, a.type) and isinstance(t, ll.DoubleType):
        tr.define(ins, subnormal.fpext(tr, tr.val(a), tr.ty(t)))
        return
    tr.define(ins, tr.op(OP.OpFConvert, tr.ty(t), tr.val(a)))


@handles("fptoui", "fptosi")
def _ftoi(tr, ins) -> None:
    (a,) = ins.operands
    t = ins.type
    if is_bool(t):
        it = ll.VectorType(ll.IntType(32), t.count) if isinstance(t, ll.VectorType) else ll.IntType(32)
        i = tr.op(OP.OpConvertFToS, tr.ty(it), tr.val(a))
        tr.define(ins, tr.op(OP.OpINotEqual, tr.ty(t), i, splat(tr, it, 0)))
        return
    tr.define(ins, tr.op(OP.OpConvertFToU if ins.opname == "fptoui" else OP.OpConvertFToS, tr.ty(t), tr.val(a)))


@handles("uitofp", "sitofp")
def _itof(tr, ins) -> None:
    (a,) = ins.operands
    t = ins.type
    x = tr.val(a)
    if is_bool(a.type):
        one = tr.const(ll.Constant(t.element if isinstance(t, ll.VectorType) else t, -1.0 if ins.opname == "sitofp" else 1.0))
        zero = tr.const(ll.Constant(t.element if isinstance(t, ll.VectorType) else t, 0.0))
        if isinstance(t, ll.VectorType):
            one = tr.m.const_composite(tr.ty(t), [one] * t.count)
            zero = tr.m.const_composite(tr.ty(t), [zero] * t.count)
        tr.define(ins, tr.op(OP.OpSelect, tr.ty(t), x, one, zero))
        return
    tr.define(ins, tr.op(OP.OpConvertUToF if ins.opname == "uitofp" else OP.OpConvertSToF, tr.ty(t), x))


@handles("bitcast")
def _bitcast(tr, ins) -> None:
    (a,) = ins.operands
    if isinstance(ins.type, ll.PointerType) or isinstance(a.type, ll.PointerType):
        if not (isinstance(ins.type, ll.PointerType) and isinstance(a.type, ll.PointerType)):
            raise tr.error("bitcast between a pointer and a non-pointer")
        tr.define(ins, tr.pointer(a))
        return
    if is_bool(ins.type) or is_bool(a.type):
        raise tr.error("bitcast of i1 values is not supported")
    if tr.ty(ins.type) == tr.ty(a.type):
        tr.define(ins, tr.val(a))
        return
    tr.define(ins, tr.op(OP.OpBitcast, tr.ty(ins.type), tr.val(a)))


@handles("inttoptr")
def _inttoptr(tr, ins) -> None:
    (a,) = ins.operands
    if ins.type.addrspace != 0:
        raise tr.error("inttoptr to an address space other than 0 (global memory)")
    x = tr.val(a)
    if a.type.width != 64:
        x = tr.op(OP.OpUConvert, tr.t_i64, x)
    tr.define(ins, x)


@handles("ptrtoint")
def _ptrtoint(tr, ins) -> None:
    (a,) = ins.operands
    p = tr.pointer(a)
    if isinstance(p, LocalPtr):
        raise tr.error("ptrtoint of a pointer into a variable (it has no address in SPIR-V)")
    x = tr.use(p)
    if ins.type.width != 64:
        x = tr.op(OP.OpUConvert, tr.ty(ins.type), x)
    tr.define(ins, x)


@handles("addrspacecast")
def _addrspacecast(tr, ins) -> None:
    raise tr.error("addrspacecast is not supported (shared and local memory have no addresses)")


# ---------------------------------------------------------------------- vectors, aggregates
def _const_index(v) -> int | None:
    return int(v.constant) if isinstance(v, ll.Constant) else None


@handles(ll.ExtractElement)
def _extract_element(tr, ins) -> None:
    vec, idx = ins.operands
    k = _const_index(idx)
    rt = tr.ty(ins.type)
    if k is not None:
        tr.define(ins, tr.op(OP.OpCompositeExtract, rt, tr.val(vec), k))
    else:
        tr.define(ins, tr.op(OP.OpVectorExtractDynamic, rt, tr.val(vec), tr.val(idx)))


@handles(ll.InsertElement)
def _insert_element(tr, ins) -> None:
    vec, value, idx = ins.operands
    k = _const_index(idx)
    rt = tr.ty(ins.type)
    if k is not None:
        tr.define(ins, tr.op(OP.OpCompositeInsert, rt, tr.val(value), tr.val(vec), k))
    else:
        tr.define(ins, tr.op(OP.OpVectorInsertDynamic, rt, tr.val(vec), tr.val(value), tr.val(idx)))


@handles(ll.ShuffleVector)
def _shuffle(tr, ins) -> None:
    a, b, mask = ins.operands
    comps = []
    for e in mask.constant if isinstance(mask.constant, (list, tuple)) else [mask.constant] * ins.type.count:
        c = e.constant if isinstance(e, ll.Constant) else e
        comps.append(0xFFFFFFFF if c is ll.Undefined or c is None else int(c))
    tr.define(ins, tr.op(OP.OpVectorShuffle, tr.ty(ins.type), tr.val(a), tr.val(b), *comps))


@handles(ll.ExtractValue)
def _extract_value(tr, ins) -> None:
    agg = ins.operands[0]
    parts = tr.vals.get(agg)
    if not isinstance(parts, tuple) or len(ins.indices) != 1 or parts[ins.indices[0]] is None:
        raise tr.error("extractvalue is supported on cmpxchg, *.with.overflow and call results, "
                       "and on members insertvalue set")
    tr.define(ins, tr.use(parts[ins.indices[0]]))


@handles(ll.InsertValue)
def _insert_value(tr, ins) -> None:
    """A struct of one level (a defined function's results) is its members' ids, a tuple
    like a cmpxchg's; the function's ret constructs it (translate.returned)."""
    agg, value = ins.operands[:2]
    t = ins.type
    if not isinstance(t, ll.LiteralStructType) or len(ins.indices) != 1:
        raise tr.error("insertvalue is supported into a struct of scalars only")
    if isinstance(agg, ll.Constant):
        if agg.constant not in (None, ll.Undefined):
            raise tr.error("insertvalue into a struct constant other than undef")
        parts = [None] * len(t.elements)
    else:
        parts = tr.vals.get(agg)
        if not isinstance(parts, tuple):
            raise tr.error("insertvalue into a struct that is not insertvalue's")
        parts = list(parts)
    parts[ins.indices[0]] = tr.val(value)
    tr.define(ins, tuple(parts))


# ---------------------------------------------------------------------- phi, alloca
@handles(ll.PhiInstr)
def _phi(tr, ins) -> None:
    var = tr.phi_var(ins)
    tr.define(ins, tr.op(OP.OpLoad, tr.ty(ins.type), var))


@handles(ll.AllocaInstr)
def _alloca(tr, ins) -> None:
    t = ins.allocated_type
    path: tuple[int, ...] = ()
    if ins.operands:
        n = _const_index(ins.operands[0])
        if n is None:
            raise tr.error("alloca with a run-time count")
        if n != 1:
            t = ll.ArrayType(t, n)
            path = (tr.cint(0),)
    var = tr.function_var(tr.ty(t))
    tr.define(ins, LocalPtr(var, "Function", t, path, ins.allocated_type if path else t))


# ---------------------------------------------------------------------- memory
@handles(ll.LoadInstr)
def _load(tr, ins) -> None:
    p = tr.pointer(ins.operands[0])
    t = ins.type
    if isinstance(t, ll.PointerType) and t.addrspace != 0:
        raise tr.error("load of a pointer into shared or local memory")
    if isinstance(p, LocalPtr):
        tr.define(ins, local_load(tr, ins, p, t))
        return
    mt, changed = _mem_type(tr, t)
    ptr = access_pointer(tr, p, mt)
    v = tr.op(OP.OpLoad, tr.ty(mt), ptr, *memory_operands(tr, ins, "PhysicalStorageBuffer", mt))
    if changed:
        v = tr.op(OP.OpINotEqual, tr.ty(t), v, splat(tr, mt, 0))
    tr.define(ins, v)


@handles(ll.StoreInstr)
def _store(tr, ins) -> None:
    value, pv = ins.operands
    p = tr.pointer(pv)
    t = value.type
    if isinstance(t, ll.PointerType):
        vp = tr.pointer(value)
        if isinstance(vp, LocalPtr):
            raise tr.error("store of a pointer into a variable (it has no address in SPIR-V)")
        x = tr.use(vp)
    else:
        x = tr.val(value)
    if isinstance(p, LocalPtr):
        local_store(tr, ins, p, x, t)
        return
    mt, changed = _mem_type(tr, t)
    if changed:
        x = tr.op(OP.OpSelect, tr.ty(mt), x, splat(tr, mt, 1), splat(tr, mt, 0))
    ptr = access_pointer(tr, p, mt)
    tr.stmt(OP.OpStore, ptr, x, *memory_operands(tr, ins, "PhysicalStorageBuffer", mt))


@handles(ll.GEPInstr)
def _gep(tr, ins) -> None:
    p = tr.pointer(ins.pointer)
    s = ins.source_etype
    idxs = list(ins.indices)
    if isinstance(p, LocalPtr):
        tr.define(ins, _gep_local(tr, p, s, idxs))
        return
    # a global address: base + index * size, then into arrays and vectors
    const = 0
    terms = []
    t = s
    for k, ix in enumerate(idxs):
        if k == 0:
            size = alloc_size(s)
        elif isinstance(t, (ll.ArrayType, ll.VectorType)):
            t = t.element
            size = alloc_size(t)
        else:
            raise tr.error(f"getelementptr into {t} is not supported")
        c = _const_index(ix)
        if c is not None:
            const += _signed(c, ix.type.width) * size
            continue
        x = tr.val(ix)
        if ix.type.width != 64:
            x = tr.op(OP.OpSConvert, tr.t_i64, x)
        if size != 1:
            x = tr.op(OP.OpIMul, tr.t_i64, x, tr.cint(size, 64))
        terms.append(x)
    addr = tr.use(p)
    for x in terms:
        addr = tr.op(OP.OpIAdd, tr.t_i64, addr, x)
    if const:
        addr = tr.op(OP.OpIAdd, tr.t_i64, addr, tr.cint(const, 64))
    tr.define(ins, addr)


def _signed(v: int, width: int) -> int:
    v &= (1 << width) - 1
    return v - (1 << width) if v >> (width - 1) else v


def _index32(tr, ix) -> int:
    c = _const_index(ix)
    if c is not None:
        return tr.cint(_signed(c, ix.type.width) & 0xFFFFFFFF)
    x = tr.val(ix)
    if ix.type.width != 32:
        x = tr.op(OP.OpSConvert if ix.type.width < 32 else OP.OpUConvert, tr.t_i32, x)
    return x


def _gep_local(tr, p: LocalPtr, s: ll.Type, idxs: list) -> LocalPtr:
    """A GEP on a pointer into a variable: the access chain below it. Beyond the plain
    forms (GEP [N x T] [0, i] on the variable, GEP T [i] on an element of an array of T),
    a leading [0] over an array type is dropped, and a step over objects of a size that is
    a multiple of the array's elements moves by that many elements (the emitter may index
    an i32 array by i64 or <4 x i32>)."""
    path = list(p.path)
    t = p.ptype
    while len(idxs) > 1 and isinstance(s, ll.ArrayType) and _const_index(idxs[0]) == 0 and not _same_type(s, t):
        s, idxs = s.element, idxs[1:]  # GEP [N x S] p, 0, i ... is GEP S p, i ...
    first = idxs[0]
    c0 = _const_index(first)
    if _same_type(s, t):
        if c0 != 0:
            path = _step(tr, p, path, first, 1)
    elif isinstance(t, (ll.ArrayType, ll.VectorType)) and _same_type(t.element, s):
        path.append(_index32(tr, first))  # the array starts at p: element `first` of it
        t = s
    elif len(idxs) == 1 and _is_scalarish(s) and _is_scalarish(t) and alloc_size(s) % alloc_size(t) == 0:
        if c0 != 0:
            path = _step(tr, p, path, first, alloc_size(s) // alloc_size(t))
    elif (len(idxs) == 1 and isinstance(t, ll.ArrayType) and _is_scalarish(t.element) and _is_scalarish(s)
          and alloc_size(s) % alloc_size(t.element) == 0):
        path.append(_scaled(tr, _index32(tr, first), alloc_size(s) // alloc_size(t.element)))
        t = t.element
    elif len(idxs) == 1 and isinstance(s, ll.IntType) and s.width == 8:
        # a byte offset (the isa layer's field offsets): whole elements of the array
        elem = t.element if isinstance(t, ll.ArrayType) else t
        if not _is_scalarish(elem):
            raise tr.error(f"byte offset into {t}")
        size = alloc_size(elem)
        k = _byte_index(tr, first, size)
        if isinstance(t, ll.ArrayType):
            path.append(k)
            t = elem
        elif c0 != 0:
            parent = _type_at(tr, p.vtype, len(path) - 1) if path else None
            if parent is None:
                raise tr.error("pointer arithmetic outside a variable")
            path[-1] = tr.op(OP.OpIAdd, tr.t_i32, tr.use(path[-1]), k)
    else:
        raise tr.error(f"getelementptr over {s} on a pointer to {t}")
    for ix in idxs[1:]:
        if not isinstance(t, (ll.ArrayType, ll.VectorType)):
            raise tr.error(f"getelementptr into {t} is not supported")
        path.append(_index32(tr, ix))
        t = t.element
    return LocalPtr(p.var, p.storage, p.vtype, tuple(path), t)


def _byte_index(tr, off, size: int) -> int:
    """The element index of byte offset `off` into elements of `size` bytes (a constant one
    must be a multiple; a run-time one is aligned, as PTX's accesses must be)."""
    c = _const_index(off)
    if c is not None:
        c = _signed(c, off.type.width)
        if c % size:
            raise tr.error(f"byte offset {c} inside an element of {size} bytes")
        return tr.cint((c // size) & 0xFFFFFFFF)
    x = _index32(tr, off)
    if size == 1:
        return x
    if size & (size - 1):
        return tr.op(OP.OpSDiv, tr.t_i32, x, tr.cint(size))
    return tr.op(OP.OpShiftRightArithmetic, tr.t_i32, x, tr.cint(size.bit_length() - 1))


def _is_scalarish(t: ll.Type) -> bool:
    return isinstance(t, (ll.IntType, ll.HalfType, ll.FloatType, ll.DoubleType, ll.VectorType, ll.PointerType))


def _scaled(tr, x: int, k: int) -> int:
    return x if k == 1 else tr.op(OP.OpIMul, tr.t_i32, x, tr.cint(k))


def _step(tr, p: LocalPtr, path: list, by, k: int) -> list:
    """`path` moved by `by` * k elements of the array that holds p's object."""
    parent = _type_at(tr, p.vtype, len(path) - 1) if path else None
    if parent is None:
        raise tr.error("pointer arithmetic outside a variable")
    path[-1] = tr.op(OP.OpIAdd, tr.t_i32, tr.use(path[-1]), _scaled(tr, _index32(tr, by), k))
    return path


def _type_at(tr, vtype: ll.Type, depth: int):
    """The type of the container whose element index `depth` of a path selects."""
    t = vtype
    for _ in range(depth):
        t = t.element
    return t if isinstance(t, (ll.ArrayType, ll.VectorType)) else None


# ---------------------------------------------------------------------- atomics
_RMW = {"xchg": "OpAtomicExchange", "add": "OpAtomicIAdd", "sub": "OpAtomicISub",
        "and": "OpAtomicAnd", "or": "OpAtomicOr", "xor": "OpAtomicXor", "max": "OpAtomicSMax",
        "min": "OpAtomicSMin", "umax": "OpAtomicUMax", "umin": "OpAtomicUMin",
        "fadd": "OpAtomicFAddEXT", "fmin": "OpAtomicFMinEXT", "fmax": "OpAtomicFMaxEXT"}
_ORDER = {"unordered": "None", "monotonic": "None", "acquire": "Acquire|MakeVisible",
          "release": "Release|MakeAvailable", "acq_rel": "AcquireRelease|MakeAvailable|MakeVisible",
          "seq_cst": "AcquireRelease|MakeAvailable|MakeVisible"}


def _semantics(tr, ordering: str, storage: str) -> int:
    names = _ORDER.get(ordering)
    if names is None:
        raise tr.error(f"atomic ordering {ordering} not supported")
    v = 0
    for n in names.split("|"):
        v |= enum("MemorySemantics", n)
    if v:
        v |= enum("MemorySemantics", "WorkgroupMemory" if storage == "Workgroup" else "UniformMemory")
    return tr.cint(v)


def _scope(tr, storage: str) -> int:
    if storage == "Workgroup":
        return tr.cint(enum("Scope", "Workgroup"))
    tr.m.capability("VulkanMemoryModelDeviceScope")
    return tr.cint(enum("Scope", "Device"))


def atomic_pointer(tr, p, t: ll.Type) -> tuple[int, str]:
    where: list = []
    ptr = access_pointer(tr, p, t, where)
    if isinstance(t, ll.IntType) and t.width == 64:
        tr.m.capability("Int64Atomics")
    return ptr, where[0]


@handles(ll.AtomicRMW)
def _atomicrmw(tr, ins) -> None:
    pv, value = ins.operands
    name = _RMW.get(ins.operation)
    if name is None:
        raise tr.error(f"atomicrmw {ins.operation} not supported")
    t = value.type
    ptr, storage = atomic_pointer(tr, tr.pointer(pv), t)
    escapes.require_typed(tr, name, t)
    tr.note_atomic(name, t, storage)
    r = tr.op(getattr(OP, name), tr.ty(t), ptr, _scope(tr, storage), _semantics(tr, ins.ordering, storage), tr.val(value))
    tr.define(ins, r)


@handles(ll.CmpXchg)
def _cmpxchg(tr, ins) -> None:
    pv, cmp, new = ins.operands
    t = cmp.type
    ptr, storage = atomic_pointer(tr, tr.pointer(pv), t)
    tr.note_atomic("OpAtomicCompareExchange", t, storage)
    fail = ins.failordering if ins.failordering not in ("release", "acq_rel") else "monotonic"
    if fail == "seq_cst":
        fail = "acquire"
    c = tr.val(cmp)
    old = tr.op(OP.OpAtomicCompareExchange, tr.ty(t), ptr, _scope(tr, storage),
                _semantics(tr, ins.ordering, storage), _semantics(tr, fail, storage), tr.val(new), c)
    tr.define(ins, (old, tr.op(OP.OpIEqual, tr.t_bool, old, c)))


@handles(ll.LoadAtomicInstr)
def _load_atomic(tr, ins) -> None:
    t = ins.type
    ptr, storage = atomic_pointer(tr, tr.pointer(ins.operands[0]), t)
    tr.note_atomic("OpAtomicLoad", t, storage)
    order = "acquire" if ins.ordering in ("acquire", "acq_rel", "seq_cst") else "monotonic"
    tr.define(ins, tr.op(OP.OpAtomicLoad, tr.ty(t), ptr, _scope(tr, storage), _semantics(tr, order, storage)))


@handles(ll.StoreAtomicInstr)
def _store_atomic(tr, ins) -> None:
    value, pv = ins.operands
    t = value.type
    ptr, storage = atomic_pointer(tr, tr.pointer(pv), t)
    tr.note_atomic("OpAtomicStore", t, storage)
    order = "release" if ins.ordering in ("release", "acq_rel", "seq_cst") else "monotonic"
    tr.stmt(OP.OpAtomicStore, ptr, _scope(tr, storage), _semantics(tr, order, storage), tr.val(value))


@handles(ll.Fence)
def _fence(tr, ins) -> None:
    v = 0
    for n in _ORDER[ins.ordering].split("|"):
        v |= enum("MemorySemantics", n)
    v |= enum("MemorySemantics", "WorkgroupMemory") | enum("MemorySemantics", "UniformMemory")
    tr.stmt(OP.OpMemoryBarrier, _scope(tr, "global"), tr.cint(v))


# ---------------------------------------------------------------------- calls
@handles(ll.CallInstr)
def _call(tr, ins) -> None:
    name = ins.callee.name
    if name.startswith("spv."):
        escapes.call(tr, ins, name)
    elif name.startswith("llvm."):
        intrinsics.call(tr, ins, name)
    elif ins.callee.blocks:
        tr.call_defined(ins)
    else:
        raise tr.error(f"call to @{name}, which the module declares but does not define")


@handles(ll.Comment)
def _comment(tr, ins) -> None:
    pass


__all__ = ["HANDLERS", "is_float"]
