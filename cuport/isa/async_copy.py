"""cp.async, cp.async.bulk and the mbarrier family: asynchronous copies into shared memory
and the barriers that wait for them (what cuda::pipeline, cuda::memcpy_async and
cuda::barrier emit).

PTX ISA §9.7.9.25 (cp.async, cp.async.wait_group/wait_all/commit_group,
cp.async.mbarrier.arrive), §9.7.9.25.4 (cp.async.bulk), §9.7.13.15 (mbarrier).

A CPU has no copy engine to overlap with: every copy is made when it is issued, which
is one of the orders the asynchronous semantics allow (the program may not touch the
destination before it waits, nor the source before the copy completes). So the group
waits are no-ops, `cp.async.mbarrier.arrive` without `.noinc` changes nothing (its
pending-count increment and its arrive cancel), and a bulk copy's complete-tx happens at
once. The src-size form copies src-size bytes and fills the rest of cp-size with zeros;
ignore-src (a true predicate) fills it all.

An mbarrier is a 64-bit word in (shared) memory whose layout is cuport's own (PTX
calls it opaque): bits 0-20 the pending arrivals of the current phase, 21-41 the
expected arrivals, 42-62 the transaction count (21-bit two's complement), 63 the phase
parity. A phase completes when both the pending arrivals and the transaction count are
0: the parity flips, the pending count starts again from the expected count. The
state an arrive returns holds the phase the thread arrived on and the pending count
before the arrivals of its warp's instruction (what pending_count reads: an H200 answers
the same count for every lane of a warp that arrives together, measured); test_wait
is true once the barrier's parity differs from that phase's, test_wait.parity once it
differs from the parity given. try_wait tests and returns at once (allowed: its time
limit is the system's): the loops that call it get yield points (passes/yields.py), so
the warps that must arrive get to run. Every executing thread arrives, in lane order
(`em.begin_collective()` then `em.per_lane`: a warp's lanes act one by one).
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir as ll

from ..ptx import ir
from .memory import space_of
from .registry import lowers
from .types import I1, I8, I32, I64, PTR

_MASK21 = (1 << 21) - 1
_EXPECTED, _TX, _PHASE = 21, 42, 63


def _generic(em, mem, space: str) -> ll.Value:
    """The generic address (u64, current mode) of a memory operand of `space`."""
    if not isinstance(mem, ir.Mem):
        raise em.error("an operand that is not [address]")
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


def _memcpy(em, dst: ll.Value, src: ll.Value, n: ll.Value) -> None:
    em.intrinsic("llvm.memcpy", [dst, src, n, ll.Constant(I1, 0)], [PTR, PTR, I64],
                 ll.VoidType())


def _memset0(em, dst: ll.Value, n: ll.Value) -> None:
    em.intrinsic("llvm.memset", [dst, ll.Constant(I8, 0), n, ll.Constant(I1, 0)], [PTR, I64],
                 ll.VoidType())


def _is_pred(em, op) -> bool:
    """Whether cp.async's fourth operand is ignore-src (a predicate), not src-size."""
    if isinstance(op, ir.Not):
        return True
    return isinstance(op, ir.Reg) and em.fn.regs.get(op.name) == "pred"


def _each(em, args: list[ll.Value], body: Callable[[list[ll.Value]], None]) -> None:
    """body(scalar args) for every executing thread, lowest lane first."""
    def run(vals):
        body(vals)
        return []

    em.per_lane(args, run)


# ---------------------------------------------------------------- cp.async (non-bulk)

def _cp_async(em, ins: ir.Instr) -> None:
    """cp.async.{ca,cg}.shared{::cta}.global [dst], [src], cp-size{, src-size | ignore-src}
    {, cache-policy}"""
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
    fill = extra[0] if extra else None
    if fill is None or (isinstance(fill, ir.Imm) and fill.value == size):
        # the whole cp-size from the source: ordinary 4-byte loads and stores (the
        # emitter makes vector accesses of contiguous lanes)
        src, dst = args[1], args[0]
        for off in range(0, size, 4):
            value = em.load(em.address(ir.Mem(src.base, src.offset + off), "global"), I32, 4)
            em.store(em.address(ir.Mem(dst.base, dst.offset + off), "shared"), value, 4)
        return
    em.begin_collective()
    b = em.b
    dst = _generic(em, args[0], "shared")
    src = _generic(em, args[1], "global")
    if _is_pred(em, fill):  # ignore-src: nothing read when true
        ignore = em.read_bits(fill, "pred")
        count = b.select(ignore, em.const_int(32, 0), em.const_int(32, size))
    else:
        count = em.read_bits(fill, "u32")
        limit = em.const_int(32, size)
        count = b.select(b.icmp_unsigned("<", count, limit), count, limit)

    def body(vals):
        d, s, n = vals
        _memset0(em, _ptr(em, d), ll.Constant(I64, size))
        _memcpy(em, _ptr(em, d), _ptr(em, s), b.zext(n, I64))

    _each(em, [dst, src, count], body)


# ---------------------------------------------------------------- mbarrier words

class _Word:
    """An mbarrier word's fields as i64 values, and how to put them back together."""

    def __init__(self, b: ll.IRBuilder, w: ll.Value) -> None:
        self.b = b
        m = ll.Constant(I64, _MASK21)
        self.pending = b.and_(w, m)
        self.expected = b.and_(b.lshr(w, ll.Constant(I64, _EXPECTED)), m)
        self.tx = b.and_(b.lshr(w, ll.Constant(I64, _TX)), m)
        self.phase = b.lshr(w, ll.Constant(I64, _PHASE))

    def pack(self) -> ll.Value:
        b = self.b
        m = ll.Constant(I64, _MASK21)
        w = b.and_(self.pending, m)
        w = b.or_(w, b.shl(b.and_(self.expected, m), ll.Constant(I64, _EXPECTED)))
        w = b.or_(w, b.shl(b.and_(self.tx, m), ll.Constant(I64, _TX)))
        return b.or_(w, b.shl(self.phase, ll.Constant(I64, _PHASE)))

    def complete_if_done(self) -> None:
        b = self.b
        zero = ll.Constant(I64, 0)
        done = b.and_(b.icmp_unsigned("==", self.pending, zero), b.icmp_unsigned("==", self.tx, zero))
        self.pending = b.select(done, self.expected, self.pending)
        self.phase = b.select(done, b.xor(self.phase, ll.Constant(I64, 1)), self.phase)


def _word_address(em, ins: ir.Instr, index: int) -> ll.Value:
    space = space_of(ins)
    if space not in ("shared", "generic"):
        raise em.error(f"an mbarrier in .{space} memory")
    return _generic(em, ins.args[index], space)


def _update(em, address: ll.Value, change: Callable[[_Word], ll.Value | None]) -> ll.Value | None:
    """Read-modify-write one thread's barrier word; change() edits the fields and may
    return a value (the thread's state) computed before a completion it then applies."""
    b = em.b
    p = _ptr(em, address)
    ld = b.load(p, typ=I64, align=8)
    ld.volatile = True
    w = _Word(b, ld)
    out = change(w)
    st = b.store(w.pack(), p, align=8)
    st.volatile = True
    return out


def _u32(em, ins: ir.Instr, index: int, default: int) -> ll.Value:
    return em.read_bits(ins.args[index], "u32") if len(ins.args) > index else em.const_int(32, default)


def _arrive(em, ins: ir.Instr, index: int, count: ll.Value | None, tx: ll.Value | None,
            drop: bool, complete: bool, dest=None) -> None:
    """Each executing thread: tx-count += tx, then an arrive of `count` (dropping that many
    expected arrivals too for arrive_drop); its state into `dest` (a b64)."""
    em.begin_collective()
    b = em.b
    address = _word_address(em, ins, index)
    count = count if count is not None else em.const_int(32, 0)
    tx = tx if tx is not None else em.const_int(32, 0)
    b.fence("release")

    def body(vals):
        a, c, t = vals

        def change(w: _Word):
            state = w.pack()
            w.tx = b.add(w.tx, b.zext(t, I64))
            c64 = b.zext(c, I64)
            w.pending = b.sub(w.pending, c64)
            if drop:
                w.expected = b.sub(w.expected, c64)
            if complete:
                w.complete_if_done()
            return state

        return [_update(em, a, change)]

    want_state = dest is not None and not isinstance(dest, ir.Sink)
    if want_state:  # the word before the warp's arrivals (read before any lane arrives)

        def read(vals):
            ld = b.load(_ptr(em, vals[0]), typ=I64, align=8)
            ld.volatile = True
            return [ld]

        before = em.per_lane([address], read, 1, I64)[0]
    states = em.per_lane([address, count, tx], body, 1, I64)
    if want_state:
        # the phase from the thread's own arrive, the pending count from before the warp's
        mask = em.const_int(64, _MASK21)
        em.write(dest, "b64", b.or_(b.and_(states[0], b.not_(mask)), b.and_(before, mask)))


def _test(em, ins: ir.Instr, parity: bool) -> None:
    """test_wait / try_wait{.parity}: whether the phase of the state (or of the given
    parity) is complete, per thread."""
    em.begin_collective()
    b = em.b
    address = _word_address(em, ins, 1)
    ref = em.read_bits(ins.args[2], "b64")

    def body(vals):
        a, r = vals
        ld = b.load(_ptr(em, a), typ=I64, align=8)
        ld.volatile = True
        phase = b.lshr(ld, ll.Constant(I64, _PHASE))
        mine = b.and_(r, ll.Constant(I64, 1)) if parity else b.lshr(r, ll.Constant(I64, _PHASE))
        return [b.zext(b.icmp_unsigned("!=", phase, mine), I32)]

    done = em.per_lane([address, ref], body, 1, I32)[0]
    b.fence("acquire")
    em.write(ins.args[0], "pred", b.icmp_unsigned("!=", done, em.const_int(32, 0)))


@lowers("mbarrier")
def lower_mbarrier(em, ins: ir.Instr) -> None:
    kind = ins.mods[0] if ins.mods else ""
    mods = set(ins.mods[1:])
    b = em.b
    if kind == "init":
        em.begin_collective()

        def init(vals):
            a, n = vals
            c = b.and_(b.zext(n, I64), ll.Constant(I64, _MASK21))
            st = b.store(b.or_(c, b.shl(c, ll.Constant(I64, _EXPECTED))), _ptr(em, a), align=8)
            st.volatile = True

        _each(em, [_word_address(em, ins, 0), em.read_bits(ins.args[1], "u32")], init)
        return
    if kind == "inval":
        em.begin_collective()
        _each(em, [_word_address(em, ins, 0)],
              lambda vals: b.store(ll.Constant(I64, 0), _ptr(em, vals[0]), align=8))
        return
    if kind in ("expect_tx", "complete_tx"):
        em.begin_collective()

        def tx(vals):
            a, n = vals

            def change(w: _Word):
                v = b.zext(n, I64)
                w.tx = b.add(w.tx, v) if kind == "expect_tx" else b.sub(w.tx, v)
                if kind == "complete_tx":
                    w.complete_if_done()

            _update(em, a, change)

        _each(em, [_word_address(em, ins, 0), em.read_bits(ins.args[1], "u32")], tx)
        return
    if kind in ("arrive", "arrive_drop"):
        drop = kind == "arrive_drop"
        if "expect_tx" in mods:  # state, [addr], txCount: an arrive of one
            _arrive(em, ins, 1, em.const_int(32, 1), _u32(em, ins, 2, 0), drop, True,
                    ins.args[0])
        else:
            _arrive(em, ins, 1, _u32(em, ins, 2, 1), None, drop, "noComplete" not in mods,
                    ins.args[0])
        return
    if kind in ("test_wait", "try_wait"):
        _test(em, ins, "parity" in mods)
        return
    if kind == "pending_count":
        state = em.read_bits(ins.args[1], "b64")
        em.write(ins.args[0], "u32", b.and_(state, em.const_int(64, _MASK21)))
        return
    raise em.error(f"mbarrier.{kind} is not supported")


# ---------------------------------------------------------------- cp.async.bulk

def _bulk(em, ins: ir.Instr) -> None:
    """cp.async.bulk: a copy of `size` bytes between global and shared memory (or shared
    and shared), then the mbarrier's complete-tx of `size` where it names one."""
    mods = ins.mods
    if "tensor" in mods:
        raise em.error("cp.async.bulk.tensor (tensor-map copies) is not supported")
    if "prefetch" in mods:
        return  # cp.async.bulk.prefetch.L2: a hint
    if "commit_group" in mods or "wait_group" in mods:
        return  # the copies are complete already
    if "multicast::cluster" in mods:
        raise em.error("cp.async.bulk with .multicast::cluster is not supported (clusters are)")
    spaces = [m.split("::")[0] for m in mods if m.split("::")[0] in ("shared", "global")]
    if len(spaces) < 2:
        raise em.error("cp.async.bulk without its destination and source state spaces")
    em.begin_collective()
    b = em.b
    args = ins.args
    mbar = "mbarrier::complete_tx::bytes" in mods
    vals = [_generic(em, args[0], spaces[0]), _generic(em, args[1], spaces[1]),
            em.read_bits(args[2], "u32")]
    if mbar:
        vals.append(_generic(em, args[3], "shared"))

    def body(v):
        n = b.zext(v[2], I64)
        _memcpy(em, _ptr(em, v[0]), _ptr(em, v[1]), n)
        if mbar:
            def change(w: _Word):
                w.tx = b.sub(w.tx, n)
                w.complete_if_done()

            _update(em, v[3], change)

    _each(em, vals, body)


@lowers("cp")
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
        # cp.async.mbarrier.arrive{.noinc}: arrive once the thread's copies are done
        # (they are); without .noinc the pending count's increment cancels the arrive
        if "noinc" in rest:
            _arrive(em, ins, 0, em.const_int(32, 1), None, False, True)
    elif rest and rest[0] in ("ca", "cg"):
        _cp_async(em, ins)
    else:
        raise em.error(f"cp.async.{'.'.join(rest)} is not supported")
