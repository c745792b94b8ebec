"""Block-level speculation for the f32-subnormal emulation (FloatModes.flush32).

A device that flushes f32 subnormals (NVIDIA's Vulkan driver) gets CUDA's results from
subnormal.py, which tests every f32 add, mul and fma for a case where flushing would change
its result and branches to an exact helper there. In a hot loop (sgemm's inner product:
two shared-memory loads per fma) those per-operation tests cost more than the arithmetic:
about 16 integer operations and a branch per fma made bench/gpu's sgemm 3.5x slower on the
H200. Here a whole basic block runs first on the device's own arithmetic, collecting a
cheaper test as it goes; only where that test fires is the block run again, each operation
then with its own exact test (the code subnormal.py emits):

- fadd/fsub: the device's sum is right unless both operands are below 2^-100 in magnitude
  (subnormal.fadd's rule): the minimum over the block of max(|x|, |y|) is tested once;
- fmul/fma: right when no operand is subnormal and |result| > 2^-126 (a result of at most
  2^-126 may be a flushed one; a zero too). The operands' test is needed only for those
  that come from outside the block's own checked arithmetic: a value the block computed
  with a checked operation (through bitcasts, the canonical-NaN select and the registers'
  Function variables) is never subnormal on the fast run.

So sgemm's fma costs one test of each loaded operand (a shift-add and a minimum) and one
float comparison of its result, and the block one branch.

The block is run again from its start, so it may only hold what can run twice to the same
effect: computations, loads, and stores to registers (allocas stored whole); no other
store, atomic, barrier, call with an effect or volatile access (`eligible`). Values of the
block are merged after the selection with phis, so everything after it sees the exact ones.
"""

from __future__ import annotations

import struct

from llvmlite import ir as ll

from .module import GLSL, OP
from .subnormal import _SMALL_SUM, _SUB_KEY, _U, _key, _tiny

RARE_MERGE = "DontFlatten"
#: a block with more instructions is not duplicated (code size)
MAX_INSTRUCTIONS = 600
#: calls a block may hold and still run twice: pure intrinsics and reads of builtins and
#: push constants
_PURE_CALLS = ("spv.push.", "spv.builtin.", "llvm.fma.", "llvm.fmuladd.", "llvm.fabs.",
               "llvm.minnum.", "llvm.maxnum.", "llvm.minimum.", "llvm.maximum.",
               "llvm.copysign.", "llvm.floor.", "llvm.ceil.", "llvm.trunc.", "llvm.rint.",
               "llvm.round.", "llvm.nearbyint.", "llvm.sqrt.", "llvm.smax.", "llvm.smin.",
               "llvm.umax.", "llvm.umin.", "llvm.abs.", "llvm.ctpop.", "llvm.ctlz.",
               "llvm.cttz.", "llvm.bitreverse.", "llvm.bswap.", "llvm.fshl.", "llvm.fshr.")
_FLOAT_OPS = ("fadd", "fsub", "fmul")


def member_kind(tr, ins) -> str | None:
    """'add', 'mul' or 'fma' for the scalar f32 operations that speculation runs on the
    device's arithmetic; None for anything else."""
    if not isinstance(ins.type, ll.FloatType):
        return None
    if isinstance(ins, ll.CallInstr):
        name = ins.callee.name
        if name in ("llvm.fma.f32", "llvm.fmuladd.f32") and tr.float_modes.fused_fma:
            return "fma"
        return None
    if ins.opname in ("fadd", "fsub"):
        return "add"
    if ins.opname == "fmul":
        return "mul"
    return None


def _repeatable(ins) -> bool:
    """Whether `ins` may run twice to the same effect."""
    if isinstance(ins, ll.StoreInstr):
        return isinstance(ins.operands[1], ll.AllocaInstr) and not getattr(ins, "volatile", False)
    if isinstance(ins, ll.LoadInstr):
        return not getattr(ins, "volatile", False)
    if isinstance(ins, ll.CallInstr):
        return ins.callee.name.startswith(_PURE_CALLS)
    return not isinstance(ins, (ll.AllocaInstr, ll.Terminator))


def segments(tr, insts: list) -> list[tuple[list, bool]]:
    """The block's instructions (but the terminator) as runs in order, each with whether to
    speculate on it: the longest runs of repeatable instructions that hold two or more
    f32 operations to test (and no descriptor used after them)."""
    if not tr.float_modes.flush32:
        return [(insts, False)]
    out: list[tuple[list, bool]] = []
    cur: list = []

    def plain(run: list) -> None:
        if not run:
            return
        if out and not out[-1][1]:
            out[-1][0].extend(run)
        else:
            out.append((list(run), False))

    def close() -> None:
        at = [k for k, i in enumerate(cur) if member_kind(tr, i)]
        if len(at) >= 2:  # speculate from the first tested operation to the last
            run = cur[at[0]:at[-1] + 1]
            if len(run) <= MAX_INSTRUCTIONS and not any(
                    isinstance(i.type, (ll.PointerType, ll.ArrayType, ll.LiteralStructType))
                    and tr.used_after(i, run[-1]) for i in run):
                plain(cur[:at[0]])
                out.append((run, True))
                plain(cur[at[-1] + 1:])
                cur.clear()
                return
        plain(cur)
        cur.clear()

    for ins in insts:
        if member_kind(tr, ins) or _repeatable(ins):
            cur.append(ins)
            continue
        close()
        plain([ins])
    close()
    return out


class BlockSpeculation:
    """One block emitted twice: fast (the device's arithmetic, a combined test), then, where
    the test fires, exact."""

    def __init__(self, tr, insts: list, emit_one) -> None:
        self.tr = tr
        self.insts = insts
        self.emit_one = emit_one  # the ordinary handler dispatch of one instruction
        self.u = _U(tr)
        self.key_min: int | None = None  # min over unchecked mul/fma operands of 2|x|-1
        self.add_min: int | None = None  # min over adds of max(|x|, |y|) - 1
        self.tiny: int | None = None  # some mul/fma result is at most 2^-126
        self.checked: set = set()  # LLVM values known not subnormal on the fast run
        self.stored: dict = {}  # alloca -> the value last stored to it in this block

    def run(self) -> None:
        tr = self.tr
        for ins in self.insts:
            tr.ins = ins
            kind = member_kind(tr, ins)
            if kind is None:
                self.emit_one(ins)
                self._track(ins)
            else:
                self._fast(ins, kind)
        tr.ins = None
        fast = {ins: tr.vals.get(ins) for ins in self.insts}
        cond = self._condition()
        head = tr.cur
        then, after = tr.new_block(), tr.new_block()
        from .translate import RARE

        tr.stmt(OP.OpSelectionMerge, after.label, RARE)
        tr.stmt(OP.OpBranchConditional, cond, then.label, after.label)
        then.preds.append(head)
        after.preds.append(head)
        tr.cur = None
        tr.start(then)
        for ins in self.insts:
            tr.ins = ins
            self.emit_one(ins)
        tr.ins = None
        slow = {ins: tr.vals.get(ins) for ins in self.insts}
        end = tr.cur
        tr.branch(after)
        tr.start(after)
        last = self.insts[-1]
        for ins in self.insts:
            f, s = fast[ins], slow[ins]
            if isinstance(f, int) and isinstance(s, int) and f != s and tr.used_after(ins, last):
                tr.vals[ins] = tr.op(OP.OpPhi, tr.site_type(f), f, head.label, s, end.label)
            else:
                tr.vals[ins] = f

    # -------------------------------------------------------------- the fast run
    def _fast(self, ins, kind: str) -> None:
        tr, u = self.tr, self.u
        args = list(ins.args) if isinstance(ins, ll.CallInstr) else list(ins.operands)
        ids = [tr.val(a) for a in args]
        if kind == "add":
            opcode = OP.OpFSub if ins.opname == "fsub" else OP.OpFAdd
            r = tr.no_contract(tr.op(opcode, u.ft, *ids))
            big = u.op(OP.OpISub, u.umax(u.mag(ids[0]), u.mag(ids[1])), u.c(1))
            self.add_min = big if self.add_min is None else u.umin(self.add_min, big)
        else:
            if kind == "mul":
                r = tr.no_contract(tr.op(OP.OpFMul, u.ft, *ids))
            else:
                r = tr.ext(u.ft, GLSL.Fma, *ids)
            for a, x in zip(args, ids, strict=True):
                if not self._not_subnormal(a):
                    k = _key(u, x)
                    self.key_min = k if self.key_min is None else u.umin(self.key_min, k)
            t = _tiny(tr, u, r)
            self.tiny = t if self.tiny is None else u.lor(self.tiny, t)
        tr.define(ins, r)
        self.checked.add(ins)

    def _condition(self) -> int:
        u = self.u
        parts = []
        if self.key_min is not None:
            parts.append(u.cmp(OP.OpULessThan, self.key_min, u.c(_SUB_KEY)))
        if self.add_min is not None:
            parts.append(u.cmp(OP.OpULessThan, self.add_min, u.c(_SMALL_SUM - 1)))
        if self.tiny is not None:
            parts.append(self.tiny)
        cond = parts[0]
        for p in parts[1:]:
            cond = u.lor(cond, p)
        return cond

    # -------------------------------------------------------------- what is not subnormal
    def _track(self, ins) -> None:
        """Follow checked values through the instructions that only move them."""
        if isinstance(ins, ll.StoreInstr):
            self.stored[ins.operands[1]] = ins.operands[0]
        elif isinstance(ins, ll.LoadInstr):
            src = self.stored.get(ins.operands[0])
            if src is not None and self._not_subnormal(src):
                self.checked.add(ins)
        elif ins.opname == "bitcast" and self._not_subnormal(ins.operands[0]):
            self.checked.add(ins)
        elif ins.opname == "select" and all(self._not_subnormal(v) for v in ins.operands[1:]):
            self.checked.add(ins)

    def _not_subnormal(self, v) -> bool:
        if isinstance(v, ll.Constant):
            return _constant_not_subnormal(v)
        return v in self.checked


def _constant_not_subnormal(c: ll.Constant) -> bool:
    t, v = c.type, c.constant
    if isinstance(t, ll.FloatType):
        if not isinstance(v, (int, float)):
            return False
        bits = struct.unpack("<I", struct.pack("<f", float(v)))[0]
    elif isinstance(t, ll.IntType) and t.width == 32 and isinstance(v, int):
        bits = v & 0xFFFFFFFF
    else:
        return False
    mag = bits & 0x7FFFFFFF
    return mag == 0 or mag >= 0x00800000
