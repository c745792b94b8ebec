"""Warp collectives: shfl, vote, match, redux, activemask, elect.

PTX ISA §9.7.9.6 (shfl.sync), §9.7.13.8-11 (vote, match.sync, activemask, redux.sync),
§9.7.13.12 (elect.sync). The semantics (operand decoding, the shfl lane arithmetic, vote's
and match's rules, redux's identities and NaN rules) are written here once against the
warp primitives of the lowering interface (isa/api.py: participants, ballot, lane reads,
reductions); the CPU backend runs a warp as one SIMD function (a collective is a
cross-lane operation on 32-lane vectors), a GPU backend maps them to subgroup operations.

Who takes part (`em.warp_participants`). The GPU waits for the non-exited lanes of
`membermask`. On the CPU backend, under min-PC scheduling, a lane of the member mask may
be pending elsewhere in the function when the active lanes reach the collective; such a
lane *contributes its current register value* (the value it held when it left the others:
exactly the GPU's answer when it would have reached the collective with that value
unchanged), so the participants are P = exec | (membermask & live & ~exited), where `exec`
are the lanes executing the instruction (active and guard true). Exited lanes never
contribute. Legacy forms without `.sync` (no member mask) use `exec` alone.

shfl: a lane whose computed source lane is out of range (the `c` operand's clamp and
segment mask) reads its own value, as the ISA says; one whose source lane is in range but
not a participant (outside the member mask and not executing, exited, or past the end of a
partial warp) reads 0, which is what an H200 answers (measured: the cuda-samples reduction
relies on it when its last warp shuffles with a partial mask). The optional predicate
destination is the ISA's range test alone.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ..ptx import ir
from .registry import lowers, type_suffix
from .types import I1, I32, WARP

W = WARP


def _i32(v: int) -> ll.Constant:
    return ll.Constant(I32, v & 0xFFFFFFFF)


def _is_member(em, part: ll.Value, lane: ll.Value) -> ll.Value:
    """Per lane: whether lane `lane` (current mode) is among the participants `part` (i32)."""
    b = em.b
    return b.trunc(b.lshr(em.broadcast(part), lane), em.bty("pred"))


# ---------------------------------------------------------------- shfl


@lowers("shfl")
def lower_shfl(em, ins: ir.Instr) -> None:
    em.begin_collective()
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
    lane = em.warp_lane()
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
    # out of range: the lane reads its own value; a source lane that does not take part: 0
    src = b.select(inrange, j, lane)
    part = em.warp_participants(member)
    d = em.warp_read(a, src)
    d = b.select(_is_member(em, part, src), d, em.const_int(32, 0))
    if isinstance(dst, ir.PredPair):
        em.write(dst.p, "b32", d)
        em.write(dst.q, "pred", inrange)
    else:
        em.write(dst, "b32", d)


# ---------------------------------------------------------------- vote, activemask, elect


@lowers("vote")
def lower_vote(em, ins: ir.Instr) -> None:
    em.begin_collective()
    b = em.b
    mode = next((m for m in ins.mods if m in ("all", "any", "uni", "ballot")), None)
    if mode is None:
        raise em.error("vote without a mode (.all, .any, .uni, .ballot)")
    sync = "sync" in ins.mods
    if len(ins.args) != (3 if sync else 2):
        raise em.error("vote takes d, p" + (", membermask" if sync else ""))
    if sync:
        _check_member(em, ins.args[2])
    votes = em.warp_ballot(em.read_bits(ins.args[1], "pred"))
    if sync and not isinstance(ins.args[2], ir.Imm):
        # a register mask may differ between lanes (__ballot_sync(lanemask_lt, p): HeCBench
        # bscan; cooperative groups' tiles): each lane votes over the lanes of its own mask
        part = b.and_(em.read_bits(ins.args[2], "b32"),
                      em.broadcast(em.warp_participants(ir.Imm(0xFFFFFFFF))))
        yes, zero = b.and_(part, em.broadcast(votes)), em.const_int(32, 0)
        per_lane = True
    else:
        part = em.warp_participants(ins.args[2] if sync else None)
        yes, zero = b.and_(part, votes), _i32(0)
        per_lane = False
    if mode == "ballot":
        em.write(ins.args[0], "b32", yes if per_lane else em.broadcast(yes))
        return
    if mode == "all":
        r = b.icmp_unsigned("==", yes, part)
    elif mode == "any":
        r = b.icmp_unsigned("!=", yes, zero)
    else:
        r = b.or_(b.icmp_unsigned("==", yes, part), b.icmp_unsigned("==", yes, zero))
    em.write(ins.args[0], "pred", r if per_lane else em.broadcast(r))


def _check_member(em, member) -> None:
    """A `.sync` vote whose member mask differs between lanes and lacks the executing thread
    is an illegal instruction: on an H100 (tests/driver/c/ballot_illegal_mask.cu, recorded
    2026-12-06) `__ballot_sync(lanemask_lt, p)` and a mask of the next lane only fail the
    launch with cudaErrorIllegalInstruction, while a mask every lane shares that lacks some
    of them (an immediate, a parameter, even 0) runs, its result undefined. So only a mask
    the divergence analysis cannot show warp-uniform is tested (one computed from data yet
    equal in every lane fails on cuport where the GPU would run it)."""
    if not isinstance(member, ir.Reg) or member.name not in em.div.varying:
        return
    em.fail_unless_member(em.read_bits(member, "b32"), "illegal_instruction")


@lowers("activemask")
def lower_activemask(em, ins: ir.Instr) -> None:
    """The lanes executing this instruction (active, not exited, guard true)."""
    em.begin_collective()
    em.write(ins.args[0], "b32", em.broadcast(em.warp_executing()))


@lowers("elect")
def lower_elect(em, ins: ir.Instr) -> None:
    """elect.sync d|p, membermask: the lowest executing lane of the member mask leads."""
    em.begin_collective()
    b = em.b
    if len(ins.args) != 2:
        raise em.error("elect.sync takes d|p, membermask")
    member = em.warp_uniform(ins.args[1])
    cand = b.and_(member, em.warp_executing())
    leader = b.cttz(cand, ll.Constant(I1, 0))
    dst = ins.args[0]
    d, p = (dst.p, dst.q) if isinstance(dst, ir.PredPair) else (dst, ir.Sink())
    em.write(d, "b32", em.broadcast(leader))
    em.write(p, "pred", b.icmp_unsigned("==", em.warp_lane(), em.broadcast(leader)))


# ---------------------------------------------------------------- match


@lowers("match")
def lower_match(em, ins: ir.Instr) -> None:
    em.begin_collective()
    b = em.b
    t = type_suffix(ins)
    if t not in ("b32", "b64"):
        raise em.error(f"match on .{t}")
    mode = next((m for m in ins.mods if m in ("any", "all")), None)
    if mode is None or len(ins.args) != 3:
        raise em.error("match.any/all.sync takes d, a, membermask")
    a = em.read_bits(ins.args[1], t)
    part = em.warp_participants(ins.args[2])
    dst = ins.args[0]
    if mode == "all":
        ref = em.warp_first(a, part)
        same = em.warp_ballot(b.icmp_unsigned("==", a, em.broadcast(ref)))
        ok = b.icmp_unsigned("==", b.and_(same, part), part)
        d = b.select(ok, part, _i32(0))
        if isinstance(dst, ir.PredPair):
            em.write(dst.p, "b32", em.broadcast(d))
            em.write(dst.q, "pred", em.broadcast(ok))
        else:
            em.write(dst, "b32", em.broadcast(d))
        return
    if isinstance(dst, ir.PredPair):
        raise em.error("match.any has no predicate destination")
    # match.any: for every participant j, the lanes whose value equals lane j's get bit j
    em.write(dst, "b32", b.and_(em.warp_match_any(a, part), em.broadcast(part)))


# ---------------------------------------------------------------- redux

_REDUX_INT = {
    ("add", "u32"): ("add", 0), ("add", "s32"): ("add", 0),
    ("min", "u32"): ("umin", 0xFFFFFFFF), ("max", "u32"): ("umax", 0),
    ("min", "s32"): ("smin", 0x7FFFFFFF), ("max", "s32"): ("smax", 0x80000000),
    ("and", "b32"): ("and", 0xFFFFFFFF), ("or", "b32"): ("or", 0), ("xor", "b32"): ("xor", 0),
}


@lowers("redux")
def lower_redux(em, ins: ir.Instr) -> None:
    em.begin_collective()
    b = em.b
    t = type_suffix(ins)
    op = next((m for m in ins.mods if m in ("add", "min", "max", "and", "or", "xor")), None)
    if op is None or len(ins.args) != 3:
        raise em.error("redux.sync takes .op, d, a, membermask")
    part = em.warp_participants(ins.args[2])
    mine = _is_member(em, part, em.warp_lane())
    if t == "f32":
        r = _redux_float(em, ins, op, em.read(ins.args[1], "f32"), mine)
        em.write(ins.args[0], "f32", em.broadcast(r))
        return
    key = (op, t if op not in ("and", "or", "xor") else "b32")
    if key not in _REDUX_INT:
        raise em.error(f"redux.sync.{op}.{t}")
    name, ident = _REDUX_INT[key]
    a = em.read_bits(ins.args[1], "b32")
    if not isinstance(ins.args[2], ir.Imm):
        em.write(ins.args[0], t, _redux_per_mask(em, name, a, ident, ins.args[2]))
        return
    x = b.select(mine, a, em.const_int(32, ident))
    em.write(ins.args[0], t, em.broadcast(em.warp_reduce(name, x, ident)))


_COMBINE = {"add": "add", "and": "and_", "or": "or_", "xor": "xor"}
_PICK = {"umin": "<", "umax": ">", "smin": "<", "smax": ">"}


def _redux_per_mask(em, name: str, a: ll.Value, ident: int, mask: ir.Operand) -> ll.Value:
    """redux.sync whose member mask is a register: lanes may pass different masks, one per
    group (cooperative_groups' cg::reduce over a labeled_partition or a tile: each lane's
    mask is its group's), and each lane's result combines the participants of its own mask
    (cuda-samples warpAggregatedAtomicsCG got one maximum for all its buckets). Lane i folds
    lane j's value where bit j of its mask is set: 32 reads of one lane each."""
    b = em.b
    everyone = em.broadcast(em.warp_participants(ir.Imm(0xFFFFFFFF)))
    take = b.and_(em.read_bits(mask, "b32"), everyone)
    values = em.warp_reads(a, [em.broadcast(_i32(j)) for j in range(W)])
    acc = em.const_int(32, ident)
    for j, v in enumerate(values):
        v = b.select(b.trunc(b.lshr(take, em.const_int(32, j)), em.bty("pred")), v,
                     em.const_int(32, ident))
        if name in _COMBINE:
            acc = getattr(b, _COMBINE[name])(acc, v)
        else:
            cmp = b.icmp_signed if name[0] == "s" else b.icmp_unsigned
            acc = b.select(cmp(_PICK[name], v, acc), v, acc)
    return acc


def _redux_float(em, ins: ir.Instr, op: str, a: ll.Value, mine: ll.Value) -> ll.Value:
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
    usable = b.and_(mine, b.not_(isnan))
    x = b.select(usable, a, em.const("f32", ident))
    r = em.warp_reduce("fminimum" if op == "min" else "fmaximum", x, ident)
    any_nan = b.icmp_unsigned("!=", em.warp_ballot(b.and_(mine, isnan)), _i32(0))
    any_num = b.icmp_unsigned("!=", em.warp_ballot(usable), _i32(0))
    nan = b.bitcast(_i32(0x7FFFFFFF), f32)
    bad = b.not_(any_num)
    if "NaN" in ins.mods:
        bad = b.or_(bad, any_nan)
    return b.select(bad, nan, r)
