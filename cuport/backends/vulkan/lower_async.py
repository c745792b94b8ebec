"""cp.async, cp.async.bulk and the mbarrier family for one invocation (isa/async_copy.py's
semantics, per thread instead of per warp lane).

The same model as the CPU backend's: a copy is made when it is issued (so the group waits
are no-ops and cp.async.mbarrier.arrive without .noinc changes nothing), the src-size form
copies src-size bytes and fills the rest with zeros, ignore-src fills it all; an mbarrier is
the same 64-bit word (isa/async_copy.py: pending arrivals, expected arrivals, transaction
count, phase parity) and the same completion rule. What differs is that invocations run
at the same time: every change of an mbarrier word is an atomic compare-and-swap (release
semantics at workgroup scope, so the copies and stores before an arrive are visible to
whoever sees the phase complete), a test is an atomic acquire load. Shared memory holds
64-bit words in kernels with mbarriers (lower.py's plan_layout), so cp.async copies whole
8-byte words where it can.

A loop that waits on an mbarrier waits for other threads of the block; devices that run a
workgroup in lock step (lavapipe) refuse it like any such loop (compiler.py
check_progress).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ...isa.async_copy import _EXPECTED, _MASK21, _PHASE, _Word
from ...isa.memory import space_of
from ...ptx import ir
from .lower_sync import (
    SEM_ACQ_REL,
    SEM_ACQUIRE,
    SEM_UNIFORM,
    SEM_WORKGROUP,
    WORKGROUP,
    with_visibility,
)

I1, I32, I64 = ll.IntType(1), ll.IntType(32), ll.IntType(64)


def _c(t: ll.IntType, v: int) -> ll.Constant:
    return ll.Constant(t, v & ((1 << t.width) - 1))


def _space(em, mem: ir.Mem, named: str):
    """Where an operand's address points: one space, or the set a generic one may."""
    return em._space_for(named, mem)


def _load(em, space: str, a: ll.Value, t: ll.IntType) -> ll.Value:
    if space == "global":
        return em.b.load(em._global_ptr(a), typ=t, align=t.width // 8)
    return em._word_load(space, a, t)


def _store(em, space: str, a: ll.Value, v: ll.Value) -> None:
    if space == "global":
        em.b.store(v, em._global_ptr(a, write=True), align=v.type.width // 8)
    else:
        em._word_store(space, a, v)


def _chunk(em, size: int) -> ll.IntType:
    """The widest access of a copy of `size` bytes that shared memory's words allow."""
    return I64 if size % 8 == 0 and em.shared_word.width == 64 else I32


# ---------------------------------------------------------------- cp.async (non-bulk)

def _cp_async(em, ins: ir.Instr) -> None:
    args = ins.args
    if len(args) < 3 or not isinstance(args[0], ir.Mem) or not isinstance(args[1], ir.Mem) \
            or not isinstance(args[2], ir.Imm):
        raise em.error("cp.async needs [dst], [src] and an immediate cp-size")
    size = args[2].value
    if size not in (4, 8, 16):
        raise em.error(f"cp.async with a cp-size of {size} (4, 8 or 16)")
    extra = list(args[3:])
    if any(m == "L2::cache_hint" for m in ins.mods) and extra:
        extra.pop()  # the cache policy: a hint
    b = em.b
    dst = em.address(args[0], "shared")
    src = em.address(args[1], "global")
    where = _space(em, args[0], "shared")
    if not isinstance(where, str) or where != "shared":
        raise em.error("cp.async to memory that may not be shared memory")
    fill = extra[0] if extra else None
    count = None  # bytes to read: all of them
    if fill is not None and not (isinstance(fill, ir.Imm) and fill.value == size):
        if isinstance(fill, ir.Not) or (isinstance(fill, ir.Reg) and em.regs.get(fill.name, (0, None))[1] == I1):
            count = b.select(em.read_bits(fill, "pred"), _c(I32, 0), _c(I32, size))  # ignore-src
        else:
            n = em.read_bits(fill, "u32")
            count = b.select(b.icmp_unsigned("<", n, _c(I32, size)), n, _c(I32, size))
    t = _chunk(em, size)
    step = t.width // 8
    for off in range(0, size, step):
        s, d = em._offset("global", src, off), em._offset("shared", dst, off)
        if count is None:
            _store(em, "shared", d, _load(em, "global", s, t))
            continue
        # the bytes of this word that come from the source: clamp(count - off, 0, step)
        valid = b.sub(count, _c(I32, off))
        valid = b.select(b.icmp_signed("<", valid, _c(I32, 0)), _c(I32, 0), valid)
        valid = b.select(b.icmp_signed(">", valid, _c(I32, step)), _c(I32, step), valid)
        slot = em.entry_alloca(t, "cp_word")
        b.store(_c(t, 0), slot)
        with b.if_then(b.icmp_unsigned(">", valid, _c(I32, 0))):
            word = _load(em, "global", s, t)  # never past the source's aligned cp-size chunk
            bits = b.zext(b.mul(valid, _c(I32, 8)), t) if t.width > 32 else b.mul(valid, _c(I32, 8))
            full = b.icmp_unsigned("==", valid, _c(I32, step))
            mask = b.select(full, _c(t, -1), b.sub(b.shl(_c(t, 1), bits), _c(t, 1)))
            b.store(b.and_(word, mask), slot)
        _store(em, "shared", d, b.load(slot, typ=t))


# ---------------------------------------------------------------- mbarrier words

def _mbar_space(em, ins: ir.Instr, index: int):
    mem = ins.args[index]
    if not isinstance(mem, ir.Mem):
        raise em.error("an mbarrier operand that is not [address]")
    named = space_of(ins)
    if named not in ("shared", "generic"):
        raise em.error(f"an mbarrier in .{named} memory")
    return em.address(mem, named), _space(em, mem, named)


def _word_pointer(em, space: str, a: ll.Value) -> tuple[ll.Value, str]:
    if space == "shared":
        if not em.plan.caps.int64_shared_atomics and em.shared is not None:
            raise em.error("an mbarrier in shared memory on a device without 64-bit atomics on "
                           "shared memory (shaderSharedInt64Atomics)")
        if em.shared_word.width != 64:
            raise em.error("an mbarrier in a kernel whose shared memory has 32-bit words (internal)")
        return em._word_ptr("shared", em._split("shared", a)[0]), "s"
    if space == "global":
        return em._global_ptr(a, write=True), "g"
    raise em.error(f"an mbarrier in {space} memory")


def _semantics(em, acquire_only: bool = False) -> int:
    """Memory semantics of an mbarrier access (none where lower_order.py says so)."""
    from .lower_order import relaxed_here

    if relaxed_here(em):
        return 0
    return with_visibility((SEM_ACQUIRE if acquire_only else SEM_ACQ_REL) | SEM_WORKGROUP | SEM_UNIFORM)


def _update(em, ins: ir.Instr, index: int, change, nres: int = 0) -> list[ll.Value]:
    """Atomically replace the mbarrier word by its change: change(fields) edits the _Word
    and returns `nres` values computed from the word it saw (those of the attempt that
    won the compare-and-swap)."""
    a, where = _mbar_space(em, ins, index)
    b = em.b

    def go(space: str, addr: ll.Value) -> list[ll.Value]:
        p, tag = _word_pointer(em, space, addr)
        out: list[ll.Value] = []

        def new_of(old: ll.Value) -> ll.Value:
            w = _Word(b, old)
            out[:] = change(w) or []
            return w.pack()

        em._cas_loop(p, tag, I64, WORKGROUP, _semantics(em), new_of)
        return out  # defined in the loop's last block, which dominates what follows

    return em._by_space(where, a, go, [I64] * nres)


def _apply(b, w: _Word, count: ll.Value | None, tx: ll.Value | None, drop: bool) -> None:
    if tx is not None:
        w.tx = b.add(w.tx, b.zext(tx, I64))
    if count is not None:
        c = b.zext(count, I64)
        w.pending = b.sub(w.pending, c)
        if drop:
            w.expected = b.sub(w.expected, c)


def _arrive(em, ins: ir.Instr, index: int, count: ll.Value | None, tx: ll.Value | None,
            drop: bool, complete: bool, dest=None) -> None:
    """tx-count += tx, then an arrive of `count` (dropping as many expected arrivals for
    arrive_drop); the word before it into `dest` (its phase, and the pending count that
    pending_count reads).

    Where a warp is a subgroup, the warp's threads that arrive at one barrier together do
    so at once, as NVIDIA's hardware does (the first lane updates the word once for all;
    every thread's state is the word before the warp's arrivals: an H200 answers one
    pending count for all of them, measured); elsewhere each thread arrives for itself."""
    b = em.b
    a, where = _mbar_space(em, ins, index)
    want = dest is not None and not isinstance(dest, ir.Sink)

    def alone() -> ll.Value:
        def change(w: _Word) -> list[ll.Value]:
            state = w.pack()
            _apply(b, w, count, tx, drop)
            if complete:
                w.complete_if_done()
            return [state]

        return _update(em, ins, index, change, 1)[0]

    if em.emulated or not isinstance(where, str):
        state = alone()
    else:
        state = _arrive_in_lane_order(em, ins, index, a, where, count, tx, drop, complete, alone)
    if want:
        em.write(dest, "b64", state)


def _arrive_in_lane_order(em, ins, index, a, where, count, tx, drop, complete, alone) -> ll.Value:
    from .lower_sync import SUBGROUP

    b = em.b
    sg = _c(I32, SUBGROUP)
    lo, hi = b.trunc(a, I32), b.trunc(b.lshr(a, _c(I64, 32)), I32)
    same = b.and_(em.spv("OpGroupNonUniformAllEqual", I1, [sg, lo]),
                  em.spv("OpGroupNonUniformAllEqual", I1, [sg, hi]))
    slot = em.entry_alloca(I64, "mbar_state")
    with b.if_else(same) as (together, apart):
        with together:
            def total(v: ll.Value | None) -> ll.Value | None:
                return None if v is None else em.spv("OpGroupNonUniformIAdd", I32, [sg, _c(I32, 0), v], "reduce")

            c_total, t_total = total(count), total(tx)
            old_slot = em.entry_alloca(I64, "mbar_old")
            with b.if_then(em.spv("OpGroupNonUniformElect", I1, [sg])):
                def change(w: _Word) -> list[ll.Value]:
                    seen = w.pack()
                    _apply(b, w, c_total, t_total, drop)
                    if complete:
                        w.complete_if_done()
                    return [seen]

                b.store(_update(em, ins, index, change, 1)[0], old_slot)
            old = b.load(old_slot, typ=I64)
            olo = em.spv("OpGroupNonUniformBroadcastFirst", I32, [sg, b.trunc(old, I32)])
            ohi = em.spv("OpGroupNonUniformBroadcastFirst", I32, [sg, b.trunc(b.lshr(old, _c(I64, 32)), I32)])
            b.store(b.or_(b.zext(olo, I64), b.shl(b.zext(ohi, I64), _c(I64, 32))), slot)
        with apart:
            b.store(alone(), slot)
    return b.load(slot, typ=I64)


def _test(em, ins: ir.Instr, parity: bool) -> None:
    b = em.b
    a, where = _mbar_space(em, ins, 1)
    ref = em.read_bits(ins.args[2], "b32" if parity else "b64")

    def go(space: str, addr: ll.Value) -> list[ll.Value]:
        p, tag = _word_pointer(em, space, addr)
        w = em.spv("OpAtomicLoad", I64, [p, _c(I32, WORKGROUP), _c(I32, _semantics(em, True))], tag)
        phase = b.lshr(w, _c(I64, _PHASE))
        mine = b.and_(b.zext(ref, I64), _c(I64, 1)) if parity else b.lshr(ref, _c(I64, _PHASE))
        return [b.zext(b.icmp_unsigned("!=", phase, mine), I32)]

    (done,) = em._by_space(where, a, go, [I32])
    em.write(ins.args[0], "pred", b.trunc(done, I1))


def lower_mbarrier(em, ins: ir.Instr) -> None:
    kind = ins.mods[0] if ins.mods else ""
    mods = set(ins.mods[1:])
    b = em.b
    if kind in ("init", "inval"):
        a, where = _mbar_space(em, ins, 0)
        if kind == "init":
            c = b.and_(b.zext(em.read_bits(ins.args[1], "u32"), I64), _c(I64, _MASK21))
            value = b.or_(c, b.shl(c, _c(I64, _EXPECTED)))
        else:
            value = _c(I64, 0)

        def go(space: str, addr: ll.Value) -> list[ll.Value]:
            p, tag = _word_pointer(em, space, addr)
            em.spv("OpAtomicStore", ll.VoidType(), [p, _c(I32, WORKGROUP), _c(I32, 0), value], tag)
            return []

        em._by_space(where, a, go, [])
        return
    if kind in ("expect_tx", "complete_tx"):
        n = b.zext(em.read_bits(ins.args[1], "u32"), I64)

        def change(w: _Word) -> None:
            w.tx = b.add(w.tx, n) if kind == "expect_tx" else b.sub(w.tx, n)
            if kind == "complete_tx":
                w.complete_if_done()

        _update(em, ins, 0, change)
        return
    if kind in ("arrive", "arrive_drop"):
        drop = kind == "arrive_drop"
        if "expect_tx" in mods:  # state, [addr], txCount: an arrive of one
            tx = em.read_bits(ins.args[2], "u32") if len(ins.args) > 2 else _c(I32, 0)
            _arrive(em, ins, 1, _c(I32, 1), tx, drop, True, ins.args[0])
        else:
            count = em.read_bits(ins.args[2], "u32") if len(ins.args) > 2 else _c(I32, 1)
            _arrive(em, ins, 1, count, None, drop, "noComplete" not in mods, ins.args[0])
        return
    if kind in ("test_wait", "try_wait"):
        _test(em, ins, "parity" in mods)
        return
    if kind == "pending_count":
        state = em.read_bits(ins.args[1], "b64")
        em.write(ins.args[0], "u32", b.trunc(b.and_(state, _c(I64, _MASK21)), I32))
        return
    raise em.error(f"mbarrier.{kind} is not supported")


# ---------------------------------------------------------------- cp.async.bulk

def _bulk(em, ins: ir.Instr) -> None:
    mods = ins.mods
    if "tensor" in mods:
        raise em.error("cp.async.bulk.tensor (tensor-map copies) is not supported")
    if "prefetch" in mods or "commit_group" in mods or "wait_group" in mods:
        return  # a hint; the copies are complete already
    if "multicast::cluster" in mods:
        raise em.error("cp.async.bulk with .multicast::cluster is not supported (clusters are)")
    spaces = [m.split("::")[0] for m in mods if m.split("::")[0] in ("shared", "global")]
    if len(spaces) < 2:
        raise em.error("cp.async.bulk without its destination and source state spaces")
    dst_space, src_space = spaces[0], spaces[1]
    args = ins.args
    b = em.b
    dst, src = em.address(args[0], dst_space), em.address(args[1], src_space)
    size = b.zext(em.read_bits(args[2], "u32"), I64)
    t = I64 if em.shared_word.width == 64 else I32
    step = t.width // 8
    # the copy: a loop over words (bulk sizes are multiples of 16 bytes)
    pre = b.block
    head = em.llfn.append_basic_block("bulk")
    body = em.llfn.append_basic_block("bulk_body")
    done = em.llfn.append_basic_block("bulk_done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64)
    i.add_incoming(_c(I64, 0), pre)
    b.cbranch(b.icmp_unsigned("<", i, size), body, done)
    b.position_at_end(body)
    _store(em, dst_space, b.add(dst, i), _load(em, src_space, b.add(src, i), t))
    nxt = b.add(i, _c(I64, step))
    i.add_incoming(nxt, b.block)
    b.branch(head)
    b.position_at_end(done)
    if "mbarrier::complete_tx::bytes" in mods:
        def change(w: _Word) -> None:
            w.tx = b.sub(w.tx, size)
            w.complete_if_done()

        _update(em, ins, 3, change)


def lower_cp(em, ins: ir.Instr) -> None:
    mods = ins.mods
    if not mods or mods[0] != "async":
        raise em.error(f"cp.{'.'.join(mods[:2])} is not supported")
    rest = mods[1:]
    if rest and rest[0] == "bulk":
        _bulk(em, ins)
    elif rest and rest[0] in ("commit_group", "wait_group", "wait_all"):
        return  # every copy completed when it was issued
    elif rest and rest[0] == "mbarrier":
        if "noinc" in rest:  # arrive once the thread's copies are done (they are)
            _arrive(em, ins, 0, _c(I32, 1), None, False, True)
    elif rest and rest[0] in ("ca", "cg"):
        _cp_async(em, ins)
    else:
        raise em.error(f"cp.async.{'.'.join(rest)} is not supported")


def needs_64bit_shared_words(ins: ir.Instr) -> bool:
    """Whether an instruction keeps an mbarrier word in shared memory (plan_layout)."""
    return ins.op == "mbarrier" or (ins.op == "cp" and any("mbarrier" in m for m in ins.mods))


__all__ = ["lower_cp", "lower_mbarrier", "needs_64bit_shared_words"]
