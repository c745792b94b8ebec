"""cp.async, cp.async.bulk and the mbarrier family: asynchronous copies into shared memory
and the barriers that wait for them (what cuda::pipeline, cuda::memcpy_async and
cuda::barrier emit), for every backend.

PTX ISA §9.7.9.25 (cp.async, cp.async.wait_group/wait_all/commit_group,
cp.async.mbarrier.arrive), §9.7.9.25.4 (cp.async.bulk), §9.7.13.15 (mbarrier).

Every copy is made when it is issued, which is one of the orders the asynchronous
semantics allow (the program may not touch the destination before it waits, nor the
source before the copy completes): neither a CPU nor a Vulkan shader has a copy engine to
overlap with. So the group waits are no-ops, `cp.async.mbarrier.arrive` without `.noinc`
changes nothing (its pending-count increment and its arrive cancel), and a bulk copy's
complete-tx happens at once. The src-size form copies src-size bytes and fills the rest
of cp-size with zeros; ignore-src (a true predicate) fills it all. The backend moves the
bytes (`em.copy_bytes`, isa/api.py).

An mbarrier is a 64-bit word in (shared) memory whose layout is cuport's own (PTX
calls it opaque): bits 0-20 the pending arrivals of the current phase, 21-41 the
expected arrivals, 42-62 the transaction count (21-bit two's complement), 63 the phase
parity. A phase completes when both the pending arrivals and the transaction count are
0: the parity flips, the pending count starts again from the expected count. This module
says how each instruction changes the word (`_Word`); the backend performs the change
atomically, with release-acquire ordering at CTA scope (`em.sync_word_update`), so that
what a thread wrote before its arrive is visible to whoever sees the phase complete.

The state an arrive returns holds the phase the thread arrived on and the pending count
before the arrivals of its warp's instruction (what pending_count reads: an H200 answers
the same count for every lane of a warp that arrives together, measured): the backend
gives both words (a backend whose threads of a warp do not arrive as one act, Vulkan's
emulated warps, gives the thread's own). test_wait is true once the barrier's parity
differs from that phase's, test_wait.parity once it differs from the parity given.
try_wait tests and returns at once (allowed: its time limit is the system's): the loops
that call it get yield points (passes/yields.py), so the warps that must arrive get to run.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ..ptx import ir
from .memory import space_of
from .registry import lowers
from .types import I64

_MASK21 = (1 << 21) - 1
_EXPECTED, _TX, _PHASE = 21, 42, 63


def _is_pred(em, op) -> bool:
    """Whether cp.async's fourth operand is ignore-src (a predicate), not src-size."""
    if isinstance(op, ir.Not):
        return True
    return isinstance(op, ir.Reg) and em.fn.regs.get(op.name) == "pred"


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
        em.copy_bytes(args[0], "shared", args[1], "global", size)  # all of cp-size
        return
    em.begin_collective()
    b = em.b
    limit = em.const_int(32, size)
    if _is_pred(em, fill):  # ignore-src: nothing read when true
        count = b.select(em.read_bits(fill, "pred"), em.const_int(32, 0), limit)
    else:
        count = em.read_bits(fill, "u32")
        count = b.select(b.icmp_unsigned("<", count, limit), count, limit)
    em.copy_bytes(args[0], "shared", args[1], "global", size, count)


# ---------------------------------------------------------------- mbarrier words

class _Word:
    """An mbarrier word's fields as i64 values of one thread, and how to put them back
    together."""

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


def _word(em, ins: ir.Instr, index: int) -> tuple[ir.Mem, str]:
    """The mbarrier operand `index` and the state space the instruction names."""
    mem = ins.args[index]
    if not isinstance(mem, ir.Mem):
        raise em.error("an mbarrier operand that is not [address]")
    space = space_of(ins)
    if space not in ("shared", "generic"):
        raise em.error(f"an mbarrier in .{space} memory")
    return mem, space


def _tx_change(b: ll.IRBuilder, sign: int, complete: bool):
    """The change of a word by a transaction count (args[0], u32): expect_tx (sign 1) or
    complete_tx (sign -1, completing the phase where it is done)."""

    def change(old: ll.Value, args: list[ll.Value]) -> ll.Value:
        w = _Word(b, old)
        n = b.zext(args[0], I64)
        w.tx = b.add(w.tx, n) if sign > 0 else b.sub(w.tx, n)
        if complete:
            w.complete_if_done()
        return w.pack()

    return change


def _u32(em, ins: ir.Instr, index: int, default: int) -> ll.Value:
    return em.read_bits(ins.args[index], "u32") if len(ins.args) > index else em.const_int(32, default)


def _arrive(em, ins: ir.Instr, mem: ir.Mem, space: str, count: ll.Value, tx: ll.Value | None,
            drop: bool, complete: bool, dest=None) -> None:
    """Each executing thread: tx-count += tx, then an arrive of `count` (dropping that many
    expected arrivals too for arrive_drop); its state into `dest` (a b64)."""
    b = em.b
    args = [count] if tx is None else [count, tx]

    def change(old: ll.Value, vals: list[ll.Value]) -> ll.Value:
        w = _Word(b, old)
        if tx is not None:
            w.tx = b.add(w.tx, b.zext(vals[1], I64))
        c = b.zext(vals[0], I64)
        w.pending = b.sub(w.pending, c)
        if drop:
            w.expected = b.sub(w.expected, c)
        if complete:
            w.complete_if_done()
        return w.pack()

    old, first = em.sync_word_update(mem, space, args, change, together=True)
    if dest is not None and not isinstance(dest, ir.Sink):
        # the phase from the thread's own arrive, the pending count from before the warp's
        mask = em.const_int(64, _MASK21)
        em.write(dest, "b64", b.or_(b.and_(old, b.not_(mask)), b.and_(first, mask)))


def _test(em, ins: ir.Instr, parity: bool) -> None:
    """test_wait / try_wait{.parity}: whether the phase of the state (or of the given
    parity) is complete, per thread."""
    em.begin_collective()
    b = em.b
    mem, space = _word(em, ins, 1)
    if parity:
        mine = b.zext(b.and_(em.read_bits(ins.args[2], "b32"), em.const_int(32, 1)), em.bty("b64"))
    else:
        mine = b.lshr(em.read_bits(ins.args[2], "b64"), em.const_int(64, _PHASE))
    phase = b.lshr(em.sync_word_load(mem, space), em.const_int(64, _PHASE))
    em.write(ins.args[0], "pred", b.icmp_unsigned("!=", phase, mine))


@lowers("mbarrier")
def lower_mbarrier(em, ins: ir.Instr) -> None:
    kind = ins.mods[0] if ins.mods else ""
    mods = set(ins.mods[1:])
    b = em.b
    if kind in ("init", "inval"):
        em.begin_collective()
        mem, space = _word(em, ins, 0)
        if kind == "init":
            c = b.and_(b.zext(em.read_bits(ins.args[1], "u32"), em.bty("b64")), em.const_int(64, _MASK21))
            value = b.or_(c, b.shl(c, em.const_int(64, _EXPECTED)))
        else:
            value = em.const_int(64, 0)
        em.sync_word_store(mem, space, value)
        return
    if kind in ("expect_tx", "complete_tx"):
        em.begin_collective()
        mem, space = _word(em, ins, 0)
        change = _tx_change(b, 1, False) if kind == "expect_tx" else _tx_change(b, -1, True)
        em.sync_word_update(mem, space, [em.read_bits(ins.args[1], "u32")], change)
        return
    if kind in ("arrive", "arrive_drop"):
        em.begin_collective()
        mem, space = _word(em, ins, 1)
        drop = kind == "arrive_drop"
        if "expect_tx" in mods:  # state, [addr], txCount: an arrive of one
            _arrive(em, ins, mem, space, em.const_int(32, 1), _u32(em, ins, 2, 0), drop, True,
                    ins.args[0])
        else:
            _arrive(em, ins, mem, space, _u32(em, ins, 2, 1), None, drop, "noComplete" not in mods,
                    ins.args[0])
        return
    if kind in ("test_wait", "try_wait"):
        _test(em, ins, "parity" in mods)
        return
    if kind == "pending_count":
        state = em.read_bits(ins.args[1], "b64")
        em.write(ins.args[0], "u32", b.trunc(b.and_(state, em.const_int(64, _MASK21)), em.bty("b32")))
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
    args = ins.args
    size = em.read_bits(args[2], "u32")
    em.copy_bytes(args[0], spaces[0], args[1], spaces[1], size)
    if "mbarrier::complete_tx::bytes" in mods:
        if len(args) < 4 or not isinstance(args[3], ir.Mem):
            raise em.error("an mbarrier operand that is not [address]")
        em.sync_word_update(args[3], "shared", [size], _tx_change(em.b, -1, True))


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
            em.begin_collective()
            mem, space = _word(em, ins, 0)
            _arrive(em, ins, mem, space, em.const_int(32, 1), None, False, True)
    elif rest and rest[0] in ("ca", "cg"):
        _cp_async(em, ins)
    else:
        raise em.error(f"cp.async.{'.'.join(rest)} is not supported")
