"""Warp collectives: shfl, vote, match, redux, activemask, elect.

PTX ISA §9.7.9.6 (shfl.sync), §9.7.13.8-11 (vote, match.sync, activemask, redux.sync),
§9.7.13.12 (elect.sync). A warp runs as one SIMD function, so a collective is a cross-lane
operation on the 32-lane register vectors: no synchronisation is needed, and every one of
these lowerings works in vector mode (their results are always per-lane registers).

Who takes part. The GPU waits for the non-exited lanes of `membermask`; here, under
min-PC scheduling, a lane of the member mask may be pending elsewhere in the function
when the active lanes reach the collective. Such a lane *contributes its current register
value* (the value it held when it left the others: exactly the GPU's answer when it would
have reached the collective with that value unchanged). The participants are therefore

    P = exec | (membermask & live & ~exited)

where `exec` are the lanes executing the instruction (active and guard true). Exited lanes
never contribute. Legacy forms without `.sync` (no member mask) use `exec` alone.

shfl: a lane whose computed source lane is out of range (the `c` operand's clamp and
segment mask) reads its own value, as the ISA says; one whose source lane is in range but
not a participant (outside the member mask and not executing, exited, or past the end of a
partial warp) reads 0, which is what an H200 answers (measured: the cuda-samples reduction
relies on it when its last warp shuffles with a partial mask). The optional predicate
destination is the ISA's range test alone.
"""

from __future__ import annotations

import weakref

from llvmlite import ir as ll

from ..backends.cpu import layout as L
from ..backends.cpu.emit import opaque_alloca
from ..backends.cpu.types import I1, I32, I64, PTR, vec
from ..ptx import ir
from .registry import lowers, type_suffix

W = L.WARP
_SCRATCH: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _i32(v: int) -> ll.Constant:
    return ll.Constant(I32, v & 0xFFFFFFFF)


def first_exec_lane(em) -> ll.Value:
    """Index (i32) of the lowest executing lane (31 if none, to stay in range)."""
    b = em.b
    return b.and_(b.cttz(em.exec_mask(), ll.Constant(I1, 0)), _i32(W - 1))


def warp_uniform(em, op, ptype: str = "b32") -> ll.Value:
    """A scalar operand that PTX requires to be the same in every lane (member masks):
    an immediate or uniform register directly, a varying one from the first executing lane."""
    saved = em.vec
    em.vec = True
    v = em.read_bits(op, ptype)
    em.vec = saved
    return em.b.extract_element(v, first_exec_lane(em))


def live_lanes(em) -> ll.Value:
    """i32 mask of the lanes of this warp that exist and have not exited."""
    b = em.b
    exited = b.load(b.gep(em.ws, [ll.Constant(I64, L.WS_EXITED)], source_etype=ll.IntType(8)), typ=I32)
    return b.and_(em.live_mask, b.not_(exited))


def participants(em, member_op) -> ll.Value:
    """The lanes whose values a collective combines (see the module docstring)."""
    b = em.b
    ex = em.exec_mask()
    if member_op is None:
        return ex
    member = warp_uniform(em, member_op)
    return b.or_(ex, b.and_(member, live_lanes(em)))


def mask_vec(em, mask: ll.Value) -> ll.Value:
    """i32 lane mask → <32 x i1>."""
    return em.b.bitcast(mask, vec(I1))


def _scratch(em) -> ll.Value:
    """A 32 x 8-byte stack buffer in the function's entry block, for cross-lane gathers."""
    slot = _SCRATCH.get(em)
    if slot is None:
        entry = em.llfn.entry_basic_block
        eb = ll.IRBuilder(entry)
        eb.position_at_start(entry)
        slot = opaque_alloca(eb, ll.ArrayType(I64, W), "xlane", align=64)
        _SCRATCH[em] = slot
    return slot


def gather_lanes(em, values: ll.Value, src: ll.Value) -> ll.Value:
    """result[i] = values[src[i]] for every executing lane (others keep values[i])."""
    b = em.b
    et = values.type.element
    slot = _scratch(em)
    b.store(values, slot, align=64)
    ptrs = b.gep(slot, [src], source_etype=et)
    ptrs.type = vec(PTR)  # llvmlite types a GEP with vector indices as a scalar pointer
    return em.intrinsic(
        "llvm.masked.gather",
        [ptrs, _i32(et.width // 8), em.exec_mask_vec(), values],
        overload=[values.type, ptrs.type],
        ret=values.type,
    )


# ---------------------------------------------------------------- shfl


@lowers("shfl")
def lower_shfl(em, ins: ir.Instr) -> None:
    em.vec = True
    b = em.b
    mode = next((m for m in ins.mods if m in ("up", "down", "bfly", "idx")), None)
    if mode is None:
        raise em.error("shfl without a mode (.up, .down, .bfly, .idx)")
    t = type_suffix(ins)
    if t != "b32":
        raise em.error(f"shfl on .{t} (only .b32 exists)")
    dst, a_op, b_op, c_op = ins.args[:4]
    member = ins.args[4] if "sync" in ins.mods else None
    if "sync" in ins.mods and len(ins.args) != 5:
        raise em.error("shfl.sync takes d, a, b, c, membermask")
    a = em.read_bits(a_op, "b32")
    c31 = em.const_int(32, 31)
    bval = b.and_(em.read_bits(b_op, "b32"), c31)
    c = em.read_bits(c_op, "b32")
    clamp = b.and_(c, c31)
    seg = b.and_(b.lshr(c, em.const_int(32, 8)), c31)
    lane = em.lane
    min_lane = b.and_(lane, seg)
    max_lane = b.or_(min_lane, b.and_(clamp, b.xor(seg, c31)))
    if mode == "up":
        j = b.sub(lane, bval)
        inrange = b.icmp_signed(">=", j, max_lane)
    else:
        if mode == "down":
            j = b.add(lane, bval)
        elif mode == "bfly":
            j = b.xor(lane, bval)
        else:
            j = b.or_(min_lane, b.and_(bval, b.xor(seg, c31)))
        inrange = b.icmp_unsigned("<=", j, max_lane)
    src = b.select(inrange, j, lane)
    part = participants(em, member)
    src_in = b.trunc(b.lshr(em.splat(part), src), vec(I1))
    d = gather_lanes(em, a, src)
    d = b.select(src_in, d, em.const_int(32, 0))
    if isinstance(dst, ir.PredPair):
        em.write(dst.p, "b32", d)
        em.write(dst.q, "pred", inrange)
    else:
        em.write(dst, "b32", d)


# ---------------------------------------------------------------- vote, activemask, elect


@lowers("vote")
def lower_vote(em, ins: ir.Instr) -> None:
    em.vec = True
    b = em.b
    mode = next((m for m in ins.mods if m in ("all", "any", "uni", "ballot")), None)
    if mode is None:
        raise em.error("vote without a mode (.all, .any, .uni, .ballot)")
    sync = "sync" in ins.mods
    if len(ins.args) != (3 if sync else 2):
        raise em.error("vote takes d, p" + (", membermask" if sync else ""))
    part = participants(em, ins.args[2] if sync else None)
    pred = b.bitcast(em.read_bits(ins.args[1], "pred"), I32)
    yes = b.and_(part, pred)
    if mode == "ballot":
        em.write(ins.args[0], "b32", em.splat(yes))
        return
    zero = _i32(0)
    if mode == "all":
        r = b.icmp_unsigned("==", yes, part)
    elif mode == "any":
        r = b.icmp_unsigned("!=", yes, zero)
    else:
        r = b.or_(b.icmp_unsigned("==", yes, part), b.icmp_unsigned("==", yes, zero))
    em.write(ins.args[0], "pred", em.splat(r))


@lowers("activemask")
def lower_activemask(em, ins: ir.Instr) -> None:
    """The lanes executing this instruction (active, not exited, guard true)."""
    em.vec = True
    em.write(ins.args[0], "b32", em.splat(em.exec_mask()))


@lowers("elect")
def lower_elect(em, ins: ir.Instr) -> None:
    """elect.sync d|p, membermask: the lowest executing lane of the member mask leads."""
    em.vec = True
    b = em.b
    if len(ins.args) != 2:
        raise em.error("elect.sync takes d|p, membermask")
    member = warp_uniform(em, ins.args[1])
    cand = b.and_(member, em.exec_mask())
    leader = b.cttz(cand, ll.Constant(I1, 0))
    dst = ins.args[0]
    d, p = (dst.p, dst.q) if isinstance(dst, ir.PredPair) else (dst, ir.Sink())
    em.write(d, "b32", em.splat(leader))
    em.write(p, "pred", b.icmp_unsigned("==", em.lane, em.splat(leader)))


# ---------------------------------------------------------------- match


@lowers("match")
def lower_match(em, ins: ir.Instr) -> None:
    em.vec = True
    b = em.b
    t = type_suffix(ins)
    if t not in ("b32", "b64"):
        raise em.error(f"match on .{t}")
    mode = next((m for m in ins.mods if m in ("any", "all")), None)
    if mode is None or len(ins.args) != 3:
        raise em.error("match.any/all.sync takes d, a, membermask")
    a = em.read_bits(ins.args[1], t)
    part = participants(em, ins.args[2])
    dst = ins.args[0]
    if mode == "all":
        first = b.cttz(part, ll.Constant(I1, 0))
        ref = b.extract_element(a, b.and_(first, _i32(W - 1)))
        same = b.bitcast(b.icmp_unsigned("==", a, em.splat(ref)), I32)
        ok = b.icmp_unsigned("==", b.and_(same, part), part)
        d = b.select(ok, part, _i32(0))
        if isinstance(dst, ir.PredPair):
            em.write(dst.p, "b32", em.splat(d))
            em.write(dst.q, "pred", em.splat(ok))
        else:
            em.write(dst, "b32", em.splat(d))
        return
    if isinstance(dst, ir.PredPair):
        raise em.error("match.any has no predicate destination")
    # match.any: for every participant j, the lanes whose value equals lane j's get bit j
    acc = _over_lanes(em, part, em.const_int(32, 0), lambda j, acc: b.or_(
        acc,
        b.select(
            b.icmp_unsigned("==", a, em.splat(b.extract_element(a, j))),
            em.splat(b.shl(_i32(1), j)),
            em.const_int(32, 0),
        ),
    ))
    em.write(dst, "b32", b.and_(acc, em.splat(part)))


def _over_lanes(em, mask: ll.Value, init: ll.Value, body) -> ll.Value:
    """Fold `body(j, acc) -> acc` over the set bits j of `mask`, lowest first (an LLVM loop)."""
    from .memory import for_each_lane

    (out,) = for_each_lane(em, mask, [init], lambda j, accs: [body(j, accs[0])])
    return out


# ---------------------------------------------------------------- redux

_REDUX_INT = {
    ("add", "u32"): ("add", 0), ("add", "s32"): ("add", 0),
    ("min", "u32"): ("umin", 0xFFFFFFFF), ("max", "u32"): ("umax", 0),
    ("min", "s32"): ("smin", 0x7FFFFFFF), ("max", "s32"): ("smax", 0x80000000),
    ("and", "b32"): ("and", 0xFFFFFFFF), ("or", "b32"): ("or", 0), ("xor", "b32"): ("xor", 0),
}


@lowers("redux")
def lower_redux(em, ins: ir.Instr) -> None:
    em.vec = True
    b = em.b
    t = type_suffix(ins)
    op = next((m for m in ins.mods if m in ("add", "min", "max", "and", "or", "xor")), None)
    if op is None or len(ins.args) != 3:
        raise em.error("redux.sync takes .op, d, a, membermask")
    part = participants(em, ins.args[2])
    pv = mask_vec(em, part)
    if t == "f32":
        r = _redux_float(em, ins, op, em.read(ins.args[1], "f32"), pv)
        em.write(ins.args[0], "f32", em.splat(r))
        return
    key = (op, t if op not in ("and", "or", "xor") else "b32")
    if key not in _REDUX_INT:
        raise em.error(f"redux.sync.{op}.{t}")
    name, ident = _REDUX_INT[key]
    a = em.read_bits(ins.args[1], "b32")
    x = b.select(pv, a, em.const_int(32, ident))
    r = em.intrinsic(f"llvm.vector.reduce.{name}", [x], ret=I32)
    em.write(ins.args[0], t, em.splat(r))


def _redux_float(em, ins: ir.Instr, op: str, a: ll.Value, pv: ll.Value) -> ll.Value:
    """redux.sync.min/max{.abs}{.NaN}.f32: -0 < +0; NaNs ignored unless .NaN (then any NaN
    gives the canonical NaN); all inputs NaN gives the canonical NaN."""
    if op not in ("min", "max"):
        raise em.error(f"redux.sync.{op}.f32")
    b = em.b
    f32 = ll.FloatType()
    if "abs" in ins.mods:
        a = em.intrinsic("llvm.fabs", [a])
    isnan = b.fcmp_unordered("uno", a, a)
    ident = float("inf") if op == "min" else float("-inf")
    usable = b.and_(pv, b.not_(isnan))
    x = b.select(usable, a, em.const("f32", ident))
    r = em.intrinsic(f"llvm.vector.reduce.f{'minimum' if op == 'min' else 'maximum'}", [x], ret=f32)
    any_nan = b.icmp_unsigned("!=", b.bitcast(b.and_(pv, isnan), I32), _i32(0))
    any_num = b.icmp_unsigned("!=", b.bitcast(usable, I32), _i32(0))
    nan = b.bitcast(_i32(0x7FFFFFFF), f32)
    bad = b.not_(any_num)
    if "NaN" in ins.mods:
        bad = b.or_(bad, any_nan)
    return b.select(bad, nan, r)

