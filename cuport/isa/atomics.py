"""atom and red: atomic read-modify-write on global, shared and generic addresses.

PTX ISA §9.7.13.5 (atom), §9.7.13.6 (red). `atom` returns the old value, `red` only
updates memory. Operations: add (integers, f32, f64, and .noftz f16/f16x2/bf16/bf16x2),
min/max (s32/u32/s64/u64), inc/dec (u32, wrapping in [0..b]), and/or/xor (b32/b64),
exch (b32/b64/b128), cas (b16/b32/b64/b128; 16-byte atomics need the host's cmpxchg16b).

This module decodes the instruction into an `Atomic` and gives the new memory value of
each operation (`combine`, the ISA's table, which backends use in compare-and-swap loops);
the backend performs it (`em.atomic`, isa/api.py). Lanes that do not execute (inactive,
guard false) never touch memory. `.sem` maps to the LLVM ordering (.relaxed → monotonic,
the default); `.scope` is the PTX scope (gpu unless stated). atom.add.f32 on global
memory flushes subnormal inputs and results to zero, as the ISA says the GPU does (not on
shared memory; a generic address decides by where it points).
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir as ll

from ..ptx import ir
from .memory import space_of
from .registry import lowers, type_suffix
from .types import F16, F32, F64, I16, I32, I64

_OPS = ("and", "or", "xor", "cas", "exch", "add", "inc", "dec", "min", "max")
_SEM = {"relaxed": "monotonic", "acquire": "acquire", "release": "release", "acq_rel": "acq_rel"}


_ALLOWED = {
    "add": {"u32", "s32", "u64", "s64", "f32", "f64", "f16", "f16x2", "bf16", "bf16x2"},
    "min": {"u32", "s32", "u64", "s64"},
    "max": {"u32", "s32", "u64", "s64"},
    "inc": {"u32"},
    "dec": {"u32"},
    "and": {"b32", "b64"},
    "or": {"b32", "b64"},
    "xor": {"b32", "b64"},
    "exch": {"b32", "b64", "u32", "s32", "u64", "s64", "b128"},
    "cas": {"b16", "b32", "b64", "u32", "s32", "u64", "s64", "b128"},
}


def kind(t: str) -> str:
    """s / u / b, f for f32 and f64, h for the half-precision types (no atomicrmw of their own)."""
    if t in ("f32", "f64"):
        return "f"
    return "h" if t[0] in "fb" and "16" in t else t[0]


def _c(t: ll.IntType, v: int) -> ll.Constant:
    return ll.Constant(t, v & ((1 << t.width) - 1))


# ---------------------------------------------------------------- scalar semantics


def _flush32(b: ll.IRBuilder, bits: ll.Value) -> ll.Value:
    """f32 bits with a subnormal turned into a zero of the same sign."""
    sub = b.icmp_unsigned("==", b.and_(bits, _c(I32, 0x7F800000)), _c(I32, 0))
    return b.select(sub, b.and_(bits, _c(I32, 0x80000000)), bits)


def _bf16_to_f32(b, h: ll.Value) -> ll.Value:
    return b.bitcast(b.shl(b.zext(h, I32), _c(I32, 16)), F32)


def _f32_to_bf16(b, f: ll.Value) -> ll.Value:
    """Round to nearest even; NaN stays a quiet NaN."""
    x = b.bitcast(f, I32)
    lsb = b.and_(b.lshr(x, _c(I32, 16)), _c(I32, 1))
    r = b.lshr(b.add(x, b.add(_c(I32, 0x7FFF), lsb)), _c(I32, 16))
    nan = b.or_(b.lshr(x, _c(I32, 16)), _c(I32, 0x40))
    r = b.select(b.fcmp_unordered("uno", f, f), nan, r)
    return b.trunc(r, I16)


def _add_halves(b, t: str, old: ll.Value, v: ll.Value) -> ll.Value:
    """Packed or single f16/bf16 add, each half rounded to nearest even."""
    n = 2 if t.endswith("x2") else 1
    out = None
    for k in range(n):
        x = b.trunc(b.lshr(old, _c(old.type, 16 * k)), I16) if n == 2 else old
        y = b.trunc(b.lshr(v, _c(v.type, 16 * k)), I16) if n == 2 else v
        if t.startswith("bf16"):
            s = _f32_to_bf16(b, b.fadd(_bf16_to_f32(b, x), _bf16_to_f32(b, y)))
        else:
            s = b.bitcast(b.fadd(b.bitcast(x, F16), b.bitcast(y, F16)), I16)
        if n == 1:
            return s
        s = b.shl(b.zext(s, I32), _c(I32, 16 * k))
        out = s if out is None else b.or_(out, s)
    return out


def combine(b: ll.IRBuilder, op: str, t: str, old: ll.Value, v: ll.Value, c: ll.Value | None,
            ftz: ll.Value | None = None) -> ll.Value:
    """The new memory value (bits) from the old one and the operands, per the ISA's table."""
    if op == "add":
        if t in ("f16", "f16x2", "bf16", "bf16x2"):
            return _add_halves(b, t, old, v)
        if t == "f32":
            plain = b.bitcast(b.fadd(b.bitcast(old, F32), b.bitcast(v, F32)), I32)
            if ftz is None:
                return plain
            fo, fv = _flush32(b, old), _flush32(b, v)
            flushed = _flush32(b, b.bitcast(b.fadd(b.bitcast(fo, F32), b.bitcast(fv, F32)), I32))
            return b.select(ftz, flushed, plain)
        if t == "f64":
            return b.bitcast(b.fadd(b.bitcast(old, F64), b.bitcast(v, F64)), I64)
        return b.add(old, v)
    if op in ("min", "max"):
        cmp = b.icmp_signed if t[0] == "s" else b.icmp_unsigned
        keep = cmp("<" if op == "min" else ">", old, v)
        return b.select(keep, old, v)
    if op == "inc":
        return b.select(b.icmp_unsigned(">=", old, v), _c(old.type, 0), b.add(old, _c(old.type, 1)))
    if op == "dec":
        wrap = b.or_(b.icmp_unsigned("==", old, _c(old.type, 0)), b.icmp_unsigned(">", old, v))
        return b.select(wrap, v, b.sub(old, _c(old.type, 1)))
    if op == "and":
        return b.and_(old, v)
    if op == "or":
        return b.or_(old, v)
    if op == "xor":
        return b.xor(old, v)
    if op == "exch":
        return v
    if op == "cas":
        return b.select(b.icmp_unsigned("==", old, v), c, old)
    raise ValueError(op)


@dataclass(frozen=True)
class Atomic:
    """One atom/red: `v` and `c` are the operand values (bits, current mode)."""

    op: str  # and or xor cas exch add inc dec min max
    t: str
    space: str  # global shared generic
    order: str  # LLVM ordering
    scope: str  # cta cluster gpu sys
    mem: ir.Mem
    v: ll.Value
    c: ll.Value | None
    wants_old: bool  # atom (the old value is written to a register), not red


@lowers("atom", "red")
def lower_atomic(em, ins: ir.Instr) -> None:
    em.begin_collective()  # red has no result, but a warp's lanes still act one by one
    t = type_suffix(ins)
    op = next((m for m in ins.mods if m in _OPS), None)
    if op is None:
        raise em.error(f"{ins.op} without an operation")
    nvec = next((int(m[1:]) for m in ins.mods if m in _VECTOR), 1)
    if nvec > 1 and not (op == "add" and t in _VECTOR_TYPES and nvec in _VECTOR_TYPES[t]):
        raise em.error(f"vector {ins.op}.{op} .v{nvec}.{t} is not supported (only add on .v2/.v4 f32, "
                       ".v2/.v4/.v8 f16/bf16 and .v2/.v4 f16x2/bf16x2)")
    if t not in _ALLOWED[op]:
        raise em.error(f"{ins.op}.{op} on .{t} is not supported")
    if op in ("add",) and t in ("f16", "f16x2", "bf16", "bf16x2") and "noftz" not in ins.mods:
        raise em.error(f"{ins.op}.add.{t} requires .noftz")
    space = space_of(ins)
    if space not in ("global", "shared", "generic"):
        raise em.error(f"{ins.op} on the .{space} state space")
    order = next((_SEM[m] for m in ins.mods if m in _SEM), "monotonic")
    scope = next((m for m in ins.mods if m in ("cta", "cluster", "gpu", "sys")), "gpu")
    args = list(ins.args)
    if any(m.endswith("cache_hint") for m in ins.mods):
        args.pop()  # the cache policy operand
    dst = args.pop(0) if ins.op == "atom" else None
    mem = args[0]
    if not isinstance(mem, ir.Mem):
        raise em.error(f"{ins.op} whose address is not [address]")
    if len(args) != (3 if op == "cas" else 2):
        raise em.error(f"wrong number of operands for {ins.op}.{op}")
    if nvec > 1:
        return _vector(em, ins, op, t, nvec, space, order, scope, dst, mem, args[1])
    v = em.read_bits(args[1], t)
    c = em.read_bits(args[2], t) if op == "cas" else None
    old = em.atomic(Atomic(op, t, space, order, scope, mem, v, c, dst is not None))
    if dst is not None:
        em.write(dst, t, old)


#: vector atom/red (sm_90): the element types and vector lengths of `.add`
_VECTOR = ("v2", "v4", "v8")
_VECTOR_TYPES = {"f32": (2, 4), "f16x2": (2, 4), "bf16x2": (2, 4), "f16": (2, 4, 8), "bf16": (2, 4, 8)}
_ELEM_BYTES = {"f32": 4, "f16x2": 4, "bf16x2": 4, "f16": 2, "bf16": 2}


def _vector(em, ins: ir.Instr, op: str, t: str, n: int, space: str, order: str, scope: str,
            dst, mem: ir.Mem, src) -> None:
    """atom/red .v2/.v4/.v8 (global only): one atomic per element, at consecutive addresses;
    the ISA makes each element atomic, not the vector as a whole (atomicAdd(float4*) on sm_90)."""
    if space not in ("global", "generic"):
        raise em.error(f"vector {ins.op} on the .{space} state space")
    srcs = src.items if isinstance(src, ir.Vec) else ()
    dsts = dst.items if isinstance(dst, ir.Vec) else (() if dst is None else None)
    if len(srcs) != n or dsts is None or (dst is not None and len(dsts) != n):
        raise em.error(f"vector {ins.op} with operands that are not {{...}} of {n} elements")
    for k in range(n):
        at = ir.Mem(mem.base, mem.offset + k * _ELEM_BYTES[t])
        old = em.atomic(Atomic(op, t, space, order, scope, at, em.read_bits(srcs[k], t), None, dst is not None))
        if dst is not None and not isinstance(dsts[k], ir.Sink):
            em.write(dsts[k], t, old)
