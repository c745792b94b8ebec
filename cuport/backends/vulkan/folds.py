"""Code the driver's compiler would fold wrongly, rewritten so that it cannot (quirks.py:
lavapipe has both; a device whose probe sees neither fold gets its code unchanged).

- `float_zero_folds`: gallivm returns 0.0 for x * 0.0 and x for x + 0.0 (lp_build_mul,
  lp_build_add: a test of the operand against its constant zero), so inf * 0 is 0 and
  -0 + 0 is -0. The zero need not be a literal of the SPIR-V: the driver propagates
  constants through registers (libdevice's sinf: `mov.f32 %f36, 0f00000000` then
  `mul.rn.f32 %f, %x, %f36`). So every float operand of an arithmetic instruction whose
  value the driver could know is made opaque: its bits or-ed with a push constant that is
  0 at run time (layout.PUSH "pad"), which no compiler can see through. "Could know" is
  what does not depend on anything read at run time: constants, and registers every store
  of which writes such a value (a forward taint from the run-time sources: loads from
  memory, builtins, push constants, calls other than LLVM's pure intrinsics). Literal
  operands other than +0.0 stay: the driver folds only +0.0.
- `sext64_compare_folds`: a signed comparison of an i32 sign-extended to i64 with a constant
  folds to a wrong constant. Every signed 64-bit comparison becomes an unsigned one of the
  operands with their sign bits flipped (the same order), which the driver compiles right.

Needs: the lowered function (em.llfn) and em.outline's functions. Leaves: the same values computed, the rewritten
operands and comparisons in place. Legal anywhere: or-ing 0 and flipping both sign bits
change no value.
"""

from __future__ import annotations

import math
from contextlib import nullcontext

from llvmlite import ir as ll

from ...isa.types import I32, I64

#: instructions and intrinsics whose float operands gallivm may fold against a zero: the
#: arithmetic itself and what the SPIR-V translator emulates with arithmetic (spirv/fpmath.py)
_FLOAT_OPS = frozenset(("fadd", "fsub", "fmul", "fdiv", "frem"))
_FLOAT_CALLS = ("llvm.fma.", "llvm.fmuladd.", "llvm.sqrt.", "llvm.experimental.constrained.")
# LLVM intrinsics: a function of their operands alone; em.outline's functions (lower_outline.py)
# counted as such too: the driver inlines them, and may know their results where it knows
# their arguments
_PURE_CALLS = ("llvm.", "cuport.outlined.")


def guard_folds(em, float_zero: bool, compare64: bool) -> None:
    """Rewrite em's function for the folds its device makes (see the module docstring), and
    the functions em.outline built: there every argument counts as one the driver may know
    (it inlines them into sites whose arguments it may know)."""
    for fn, known_args in [(em.llfn, False)] + [(o.fn, True) for o in em._outlined_fns.values()]:
        with em.in_outlined(fn) if known_args else nullcontext():
            if compare64:
                _unsigned_compares(fn)
            if float_zero:
                _opaque_zero_operands(em, fn, known_args)


# ---------------------------------------------------------------------- comparisons
def _unsigned_compares(fn: ll.Function) -> None:
    sign = ll.Constant(I64, 1 << 63)
    made: dict[int, tuple] = {}  # id(old comparison) -> (old, new)
    for blk in fn.blocks:
        for ins in list(blk.instructions):
            if not (isinstance(ins, ll.ICMPInstr) and ins.op in ("slt", "sle", "sgt", "sge")
                    and ins.operands[0].type == I64):
                continue
            b = ll.IRBuilder(blk)
            b.position_before(ins)
            a, c = (b.xor(x, sign) for x in ins.operands)
            new = b.icmp_unsigned({"slt": "<", "sle": "<=", "sgt": ">", "sge": ">="}[ins.op], a, c)
            made[id(ins)] = (ins, new)
    if made:
        _replace(fn, made)


# ---------------------------------------------------------------------- float zeros
def _opaque_zero_operands(em, fn: ll.Function, known_args: bool = False) -> None:
    known = _driver_may_know(fn, known_args)
    targets = []
    for blk in fn.blocks:
        for ins in blk.instructions:
            if _is_float_op(ins):
                ops = ins.operands if not isinstance(ins, ll.CallInstr) else ins.args
                for v in ops:
                    if _float(v.type) and (isinstance(v, ll.Constant) or id(v) in known) \
                            and not _nonzero_literal(v):
                        targets.append((blk, ins, v))
    if not targets:
        return
    zero = em.push("pad")  # 0 at run time; a push constant: no compiler knows it
    made: dict = {}
    for blk, ins, v in targets:
        b = ll.IRBuilder(blk)
        b.position_before(ins)
        key = (id(ins), id(v))
        if key in made:
            continue
        made[key] = True
        ins.replace_usage(v, _or_zero(b, v, zero))


def _is_float_op(ins) -> bool:
    if isinstance(ins, ll.CallInstr):
        name = getattr(ins.callee, "name", "")
        return name.startswith(_FLOAT_CALLS)
    return getattr(ins, "opname", "") in _FLOAT_OPS


def _float(t: ll.Type) -> bool:
    t = t.element if isinstance(t, ll.VectorType) else t
    return isinstance(t, (ll.HalfType, ll.FloatType, ll.DoubleType))


def _nonzero_literal(v) -> bool:
    """A float constant the driver does not fold against: anything but +0.0 (elementwise)."""
    if not isinstance(v, ll.Constant):
        return False
    c = v.constant
    if isinstance(v.type, ll.VectorType):
        return isinstance(c, (list, tuple)) and all(_nonzero_literal(e if isinstance(e, ll.Constant)
                                                                     else ll.Constant(v.type.element, e))
                                                    for e in c)
    if c is None or c is ll.Undefined:
        return False
    return float(c) != 0.0 or math.copysign(1.0, float(c)) < 0


def _or_zero(b: ll.IRBuilder, v, zero):
    """v with its bits or-ed with `zero` (an i32 that is 0 at run time)."""
    t = v.type
    et = t.element if isinstance(t, ll.VectorType) else t
    width = {ll.HalfType: 16, ll.FloatType: 32, ll.DoubleType: 64}[type(et)]
    it = ll.IntType(width)
    z = zero if width == 32 else (b.zext(zero, it) if width == 64 else b.trunc(zero, it))
    if isinstance(t, ll.VectorType):
        it = ll.VectorType(it, t.count)
        z = b.shuffle_vector(b.insert_element(ll.Constant(it, None), z, ll.Constant(I32, 0)),
                             ll.Constant(it, None), ll.Constant(ll.VectorType(I32, t.count), [0] * t.count))
    return b.bitcast(b.or_(b.bitcast(v, it), z), t)


def _driver_may_know(fn: ll.Function, known_args: bool = False) -> set[int]:
    """The ids of the instructions of `fn` whose values depend on nothing read at run time (a
    constant folder could compute them): the complement of a forward taint from the run-time
    sources, through operands and through registers (allocas only loaded and stored: one
    stored tainted value taints every load of it)."""
    insts = [ins for blk in fn.blocks for ins in blk.instructions]
    allocas = {id(i) for i in insts if isinstance(i, ll.AllocaInstr)}
    users: dict[int, list] = {}
    loads: dict[int, list] = {}  # alloca -> its loads
    escaped: set[int] = set()  # allocas used otherwise than as a load's or store's address
    for ins in insts:
        for k, op in enumerate(ins.operands):
            users.setdefault(id(op), []).append(ins)
            if id(op) in allocas and not (isinstance(ins, ll.LoadInstr) or (isinstance(ins, ll.StoreInstr) and k == 1)):
                escaped.add(id(op))
        if isinstance(ins, ll.LoadInstr) and id(ins.operands[0]) in allocas:
            loads.setdefault(id(ins.operands[0]), []).append(ins)
    tainted: set[int] = set()
    work: list = []

    def taint(v) -> None:
        if id(v) not in tainted:
            tainted.add(id(v))
            work.append(v)

    for a in () if known_args else fn.args:
        taint(a)
    for ins in insts:
        if isinstance(ins, ll.LoadInstr):
            p = id(ins.operands[0])
            if p not in allocas or p in escaped:
                taint(ins)
        elif isinstance(ins, ll.CallInstr):
            if not getattr(ins.callee, "name", "").startswith(_PURE_CALLS):
                taint(ins)
        elif isinstance(ins, (ll.instructions.CmpXchg, ll.instructions.AtomicRMW)):
            taint(ins)
        elif any(not isinstance(op, (ll.Constant, ll.Instruction, ll.Argument)) for op in ins.operands):
            taint(ins)  # a global's address and the like: not worth following
    while work:
        v = work.pop()
        for u in users.get(id(v), ()):
            if isinstance(u, ll.StoreInstr):
                if u.operands[0] is v and id(u.operands[1]) in allocas:
                    for ld in loads.get(id(u.operands[1]), ()):
                        taint(ld)
            elif not isinstance(u, ll.LoadInstr):  # a load's value is not its address's
                taint(u)
    return {id(i) for i in insts if id(i) not in tainted}


def _replace(fn: ll.Function, made: dict[int, tuple]) -> None:
    """Every use in `fn` of each old value of `made` (id -> (old, new)) by its new one, in one
    walk of the function; the old instructions removed from their blocks."""
    for blk in fn.blocks:
        for ins in blk.instructions:
            for op in list(ins.operands):
                hit = made.get(id(op))
                if hit is not None and hit[0] is op and ins is not hit[1]:
                    ins.replace_usage(op, hit[1])
    for old, _ in made.values():
        old.parent.instructions.remove(old)
