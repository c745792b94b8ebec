"""wmma: warp-level matrix multiply-accumulate (tensor core fragments).

PTX ISA §9.7.14 (wmma.load, wmma.store, wmma.mma). A fragment is a warp-wide matrix held
in a few registers of every lane; which lane holds which element is unspecified, so a
program only reaches the elements through wmma.load/store/mma or element-wise code that
does not depend on their position. cuport's layout: slot `s` of lane `l` holds logical
element `s*32 + l` of the matrix in row-major order, so each slot is a run of 32
consecutive elements (fragment slots are elements packed into the 32-bit registers, two
f16/bf16 or four s8/u8 per register). The f16 a/b fragments of m16n16k16 have twice as many
slots as elements per lane (NVIDIA's layout repeats them); the second half repeats the
first. wmma.mma then works on whole matrices: products of f16, bf16 and tf32 inputs are
exact in f32 and are summed in k order with f32 fmas (a tensor core's summation order
and internal precision are not specified: results may differ from a GPU's in the last
bits, except where every partial sum is exact); f64 (m8n8k4) uses f64 fmas; s8/u8 sum
exactly into s32 (wrapping, or clamped with .satfinite). tf32 inputs keep their top 19
bits. Sub-byte (s4/u4/b1) shapes are refused.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ..ptx import ir
from .registry import lowers
from .types import F16, F32, F64, I8, I16, I32, I64, PTR, mangle, opaque_alloca, vec

W = 32
SHAPES = {"m16n16k16": (16, 16, 16), "m32n8k16": (32, 8, 16), "m8n32k16": (8, 32, 16),
          "m16n16k8": (16, 16, 8), "m8n8k4": (8, 8, 4)}
ELEMENT_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "f64": 64, "s8": 8, "u8": 8,
                "s32": 32}


def _shape(em, ins: ir.Instr) -> tuple[int, int, int]:
    for m in ins.mods:
        if m in SHAPES:
            return SHAPES[m]
        if m.startswith("m") and "n" in m and "k" in m:
            raise em.error(f"wmma shape .{m} is not supported (sub-byte and bit shapes)")
    raise em.error("wmma without a shape")


def _dims(which: str, m: int, n: int, k: int) -> tuple[int, int]:
    return {"a": (m, k), "b": (k, n)}.get(which, (m, n))


def _lane_vec(values: list[int]) -> ll.Constant:
    return ll.Constant(vec(I32), values)


def _regs(em, op) -> list:
    if not isinstance(op, ir.Vec):
        raise em.error("a wmma fragment that is not a {register list}")
    return list(op.items)


def _slots(em, regs: list, etype: str, reg_bits: int) -> list[ll.Value]:
    """The fragment's element slots as <32 x iN> bit vectors, in register order."""
    b = em.b
    bits = ELEMENT_BITS[etype]
    per = max(reg_bits // bits, 1)
    out = []
    for r in regs:
        v = em.read_bits(r, f"b{reg_bits}")
        if not isinstance(v.type, ll.VectorType):
            v = em.splat(v)
        for p in range(per):
            x = b.lshr(v, ll.Constant(v.type, [p * bits] * W)) if p else v
            out.append(b.trunc(x, vec(ll.IntType(bits))) if bits < reg_bits else x)
    return out


def _pack(em, regs: list, slots: list[ll.Value], etype: str, reg_bits: int) -> None:
    b = em.b
    bits = ELEMENT_BITS[etype]
    per = max(reg_bits // bits, 1)
    rt = vec(ll.IntType(reg_bits))
    for j, r in enumerate(regs):
        acc = None
        for p in range(per):
            x = slots[(j * per + p) % len(slots)]
            x = b.zext(x, rt) if bits < reg_bits else x
            if p:
                x = b.shl(x, ll.Constant(rt, [p * bits] * W))
            acc = x if acc is None else b.or_(acc, x)
        em.write(r, f"b{reg_bits}", acc)


def _reg_bits(etype: str) -> int:
    return 64 if etype == "f64" else 32


def _etype(em, ins: ir.Instr) -> str:
    for m in reversed(ins.mods):
        if m in ELEMENT_BITS:
            return m
    raise em.error("wmma without an element type")


def _element_offsets(rows: int, cols: int, slot: int, layout: str, stride: ll.Value, b) -> ll.Value:
    """Element offsets in memory of slot `slot`'s 32 elements (row- or column-major)."""
    idx = [slot * W + lane for lane in range(W)]
    r = _lane_vec([i // cols for i in idx])
    c = _lane_vec([i % cols for i in idx])
    major, minor = (r, c) if layout == "row" else (c, r)
    return b.add(b.mul(major, stride), minor)


def _addresses(em, ins: ir.Instr, mem, stride_op, rows: int, cols: int):
    b = em.b
    layout = "row" if "row" in ins.mods else "col"
    space = em.space_of(ins)
    base = em.address(mem, space)
    if isinstance(base.type, ll.VectorType):
        base = b.extract_element(base, ll.Constant(I32, 0))
    if stride_op is None:
        stride = ll.Constant(vec(I32), [cols if layout == "row" else rows] * W)
    else:
        s = em.read_bits(stride_op, "b32")
        stride = s if isinstance(s.type, ll.VectorType) else em.splat(s)
    return base, layout, stride


def _vector_ptrs(em, base, offsets: ll.Value, size: int) -> ll.Value:
    b = em.b
    byte = b.mul(b.sext(offsets, vec(I64)), ll.Constant(vec(I64), [size] * W))
    p = b.gep(base, [byte], source_etype=I8)
    p.type = vec(PTR)
    return p


@lowers("wmma")
def lower_wmma(em, ins: ir.Instr) -> None:
    em.begin_collective()  # fragments are spread over the warp's lanes
    kind = ins.mods[0] if ins.mods else ""
    m, n, k = _shape(em, ins)
    b = em.b
    if kind == "load":
        which = ins.mods[1]
        etype = _etype(em, ins)
        rows, cols = _dims(which, m, n, k)
        regs = _regs(em, ins.args[0])
        base, layout, stride = _addresses(em, ins, ins.args[1],
                                          ins.args[2] if len(ins.args) > 2 else None,
                                          rows, cols)
        bits = ELEMENT_BITS[etype]
        distinct = rows * cols // W
        et = ll.IntType(bits)
        mask = em.exec_mask_vec()
        loaded = []
        for s in range(distinct):
            ptrs = _vector_ptrs(em, base, _element_offsets(rows, cols, s, layout, stride, b),
                                bits // 8)
            loaded.append(em.intrinsic("llvm.masked.gather",
                                       [ptrs, ll.Constant(I32, bits // 8), mask,
                                        ll.Constant(vec(et), None)],
                                       overload=[vec(et), vec(PTR)], ret=vec(et)))
        _pack(em, regs, loaded, etype, _reg_bits(etype))
        return
    if kind == "store":
        etype = _etype(em, ins)
        rows, cols = m, n
        regs = _regs(em, ins.args[1])
        base, layout, stride = _addresses(em, ins, ins.args[0],
                                          ins.args[2] if len(ins.args) > 2 else None,
                                          rows, cols)
        bits = ELEMENT_BITS[etype]
        slots = _slots(em, regs, etype, _reg_bits(etype))
        mask = em.exec_mask_vec()
        for s in range(rows * cols // W):
            ptrs = _vector_ptrs(em, base, _element_offsets(rows, cols, s, layout, stride, b),
                                bits // 8)
            em.intrinsic("llvm.masked.scatter", [slots[s], ptrs, ll.Constant(I32, bits // 8), mask],
                         overload=[slots[s].type, vec(PTR)], ret=ll.VoidType())
        return
    if kind == "mma":
        _mma(em, ins, m, n, k)
        return
    raise em.error(f"wmma.{kind} is not supported")


def _to_compute(em, slot: ll.Value, etype: str, ct: ll.Type) -> ll.Value:
    b = em.b
    if etype == "f16":
        return b.fpext(b.bitcast(slot, vec(F16)), vec(ct))
    if etype == "bf16":
        return b.bitcast(b.shl(b.zext(slot, vec(I32)), ll.Constant(vec(I32), [16] * W)), vec(F32))
    if etype == "tf32":
        return b.bitcast(b.and_(slot, ll.Constant(vec(I32), [0xFFFFE000] * W)), vec(F32))
    if etype == "f32":
        return b.bitcast(slot, vec(F32))
    if etype == "f64":
        return b.bitcast(slot, vec(F64))
    if etype == "s8":
        return b.sext(slot, vec(ct))
    if etype == "u8":
        return b.zext(slot, vec(ct))
    if etype == "s32":
        return b.sext(slot, vec(ct))
    raise em.error(f"wmma on .{etype} is not supported")


def _mma(em, ins: ir.Instr, m: int, n: int, k: int) -> None:
    b = em.b
    types_ = [t for t in ins.mods if t in ELEMENT_BITS]
    if len(types_) == 2:  # f16 inputs: .dtype.ctype
        dtype, ctype = types_
        atype = btype = "f16"
    elif len(types_) == 4:
        dtype, atype, btype, ctype = types_
    else:
        raise em.error("wmma.mma without its types")
    integer = atype in ("s8", "u8")
    if "satfinite" in ins.mods and not integer:
        raise em.error("wmma.mma .satfinite on floating-point results is not supported")
    ct = I64 if integer else (F64 if atype == "f64" else F32)
    d_regs, a_regs, b_regs, c_regs = (_regs(em, a) for a in ins.args[:4])
    a = [_to_compute(em, s, atype, ct) for s in _slots(em, a_regs, atype, _reg_bits(atype))]
    bb = [_to_compute(em, s, btype, ct) for s in _slots(em, b_regs, btype, _reg_bits(btype))]
    c = [_to_compute(em, s, ctype, ct) for s in _slots(em, c_regs, ctype, _reg_bits(ctype))]
    # whole matrices in memory, row-major (a slot is 32 consecutive elements), multiplied
    # by a helper with loops, once per shape and type in the module
    buf_a = _matrix(em, a[: m * k // W], ct)
    buf_b = _matrix(em, bb[: k * n // W], ct)
    buf_c = _matrix(em, c[: m * n // W], ct)
    b.call(_helper(em, m, n, k, ct, integer), [buf_a, buf_b, buf_c])
    out = [b.load(b.gep(buf_c, [ll.Constant(I64, s * W)], source_etype=ct), typ=vec(ct))
           for s in range(m * n // W)]
    bits = ELEMENT_BITS[dtype]
    result = []
    for acc in out:
        if integer:
            if "satfinite" in ins.mods:
                lo = ll.Constant(vec(I64), [-(1 << 31)] * W)
                hi = ll.Constant(vec(I64), [(1 << 31) - 1] * W)
                acc = b.select(b.icmp_signed("<", acc, lo), lo, acc)
                acc = b.select(b.icmp_signed(">", acc, hi), hi, acc)
            result.append(b.trunc(acc, vec(I32)))
        elif dtype == "f16":
            result.append(b.bitcast(b.fptrunc(acc, vec(F16)), vec(I16)))
        else:
            result.append(b.bitcast(acc, vec(ll.IntType(bits))))
    _pack(em, d_regs, result, dtype, _reg_bits(dtype))


def _matrix(em, slots: list[ll.Value], ct: ll.Type) -> ll.Value:
    entry = em.llfn.entry_basic_block
    eb = ll.IRBuilder(entry)
    eb.position_at_start(entry)
    buf = opaque_alloca(eb, ll.ArrayType(ct, len(slots) * W), "wmma", align=64)
    for s, v in enumerate(slots):
        p = em.b.gep(buf, [ll.Constant(I64, s * W)], source_etype=ct)
        em.b.store(v, p, align=16)
    return buf


def _helper(em, m: int, n: int, k: int, ct: ll.Type, integer: bool) -> ll.Function:
    """c[i][:] += a[i][kk] * b[kk][:] for kk in order: row-vector fmas (f32/f64), or exact
    products and sums (integers, in i64)."""
    module = em.module
    name = f"cuport_wmma_{m}x{n}x{k}_{'i64' if integer else ('f64' if ct == F64 else 'f32')}"
    if name in module.globals:
        return module.globals[name]
    fn = ll.Function(module, ll.FunctionType(ll.VoidType(), [PTR, PTR, PTR]), name=name)
    fn.linkage = "internal"
    pa, pb, pc = fn.args
    entry = fn.append_basic_block("entry")
    b = ll.IRBuilder(entry)
    row_t = ll.VectorType(ct, n)
    for i in range(m):  # small: unrolled over rows, a loop over k
        pre = b.block
        loop = fn.append_basic_block(f"row{i}")
        done = fn.append_basic_block(f"row{i}_done")
        crow = b.gep(pc, [ll.Constant(I64, i * n)], source_etype=ct)
        init = b.load(crow, typ=row_t, align=4)
        b.branch(loop)
        b.position_at_end(loop)
        kk = b.phi(I64)
        acc = b.phi(row_t)
        kk.add_incoming(ll.Constant(I64, 0), pre)
        acc.add_incoming(init, pre)
        av = b.load(b.gep(pa, [b.add(ll.Constant(I64, i * k), kk)], source_etype=ct), typ=ct)
        splat = b.shuffle_vector(b.insert_element(ll.Constant(row_t, None), av, ll.Constant(I32, 0)),
                                 ll.Constant(row_t, None), ll.Constant(ll.VectorType(I32, n), [0] * n))
        brow = b.load(b.gep(pb, [b.mul(kk, ll.Constant(I64, n))], source_etype=ct), typ=row_t, align=4)
        if integer:
            nxt = b.add(acc, b.mul(splat, brow))
        else:
            fname = "llvm.fma." + mangle(row_t)
            f = module.globals.get(fname) or ll.Function(
                module, ll.FunctionType(row_t, [row_t] * 3), name=fname)
            nxt = b.call(f, [splat, brow, acc])
        k1 = b.add(kk, ll.Constant(I64, 1))
        kk.add_incoming(k1, loop)
        acc.add_incoming(nxt, loop)
        b.cbranch(b.icmp_unsigned("<", k1, ll.Constant(I64, k)), loop, done)
        b.position_at_end(done)
        b.store(nxt, crow, align=4)
    b.ret_void()
    return fn
