"""The CPU backend's warp primitives (isa/api.py) for the collectives of cuport/isa/warp.py.

A warp runs as one SIMD function, so a collective is a cross-lane operation on the
32-lane register vectors: no synchronisation is needed. Participants (isa/warp.py's
docstring): P = exec | (membermask & live & ~exited).
"""

from __future__ import annotations

import weakref

from llvmlite import ir as ll

from ...isa.types import I1, I32, I64, PTR, opaque_alloca, vec
from . import layout as L
from .memory_ops import for_each_lane

W = L.WARP
_SCRATCH: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _i32(v: int) -> ll.Constant:
    return ll.Constant(I32, v & 0xFFFFFFFF)


class WarpOps:
    """Mixin of the FunctionEmitter: the warp primitives in vector mode."""

    def begin_collective(self) -> None:
        self.vec = True

    def broadcast(self, v: ll.Value) -> ll.Value:
        return self.splat(v) if self.vec else v

    def warp_lane(self) -> ll.Value:
        return self.lane if self.vec else self.const_int(32, 0)

    def warp_executing(self) -> ll.Value:
        return self.exec_mask()

    def first_exec_lane(self) -> ll.Value:
        """Index (i32) of the lowest executing lane (31 if none, to stay in range)."""
        b = self.b
        return b.and_(b.cttz(self.exec_mask(), ll.Constant(I1, 0)), _i32(W - 1))

    def warp_uniform(self, op, ptype: str = "b32") -> ll.Value:
        """A scalar operand that PTX requires to be the same in every lane (member masks):
        an immediate or uniform register directly, a varying one from the first executing lane."""
        saved = self.vec
        self.vec = True
        v = self.read_bits(op, ptype)
        self.vec = saved
        return self.b.extract_element(v, self.first_exec_lane())

    def live_lanes(self) -> ll.Value:
        """i32 mask of the lanes of this warp that exist and have not exited."""
        b = self.b
        if not self.exits_read:
            raise self.error("internal: WS_EXITED is read where emit._exits_read said it is not")
        exited = b.load(b.gep(self.ws, [ll.Constant(I64, L.WS_EXITED)], source_etype=ll.IntType(8)), typ=I32)
        return b.and_(self.live_mask, b.not_(exited))

    def warp_participants(self, member_op) -> ll.Value:
        b = self.b
        ex = self.exec_mask()
        if member_op is None:
            return ex
        member = self.warp_uniform(member_op)
        return b.or_(ex, b.and_(member, self.live_lanes()))

    def warp_ballot(self, pred: ll.Value) -> ll.Value:
        """The i32 mask of the lanes whose <32 x i1> `pred` holds (every lane: callers mask)."""
        return self.b.bitcast(pred, I32)

    def _scratch(self) -> ll.Value:
        """A 32 x 8-byte stack buffer in the function's entry block, for cross-lane gathers."""
        slot = _SCRATCH.get(self)
        if slot is None:
            entry = self.llfn.entry_basic_block
            eb = ll.IRBuilder(entry)
            eb.position_at_start(entry)
            slot = opaque_alloca(eb, ll.ArrayType(I64, W), "xlane", align=64)
            _SCRATCH[self] = slot
        return slot

    def warp_read(self, values: ll.Value, src: ll.Value) -> ll.Value:
        """result[i] = values[src[i]] for every executing lane (others keep values[i]; with
        constant source lanes, one vector shuffle, which gives them values[src[i]] too)."""
        b = self.b
        if isinstance(src, ll.Constant) and isinstance(src.type, ll.VectorType):
            return b.shuffle_vector(values, ll.Constant(values.type, ll.Undefined), src)
        et = values.type.element
        slot = self._scratch()
        b.store(values, slot, align=64)
        ptrs = b.gep(slot, [src], source_etype=et)
        ptrs.type = vec(PTR)  # llvmlite types a GEP with vector indices as a scalar pointer
        return self.intrinsic(
            "llvm.masked.gather",
            [ptrs, _i32(et.width // 8), self.exec_mask_vec(), values],
            overload=[values.type, ptrs.type],
            ret=values.type,
        )

    def warp_reads(self, values: ll.Value, srcs: list[ll.Value]) -> list[ll.Value]:
        """warp_read from each of `srcs`. Constant sources whose lanes read in runs of 8 or
        more from one lane (wmma's rows of a) are broadcast loads of the value's element
        from a stack copy: cheaper than the shuffles LLVM makes of such masks, where it
        keeps the copy in memory (floats: _keep_in_memory)."""
        b = self.b
        copy = None
        out = []
        for src in srcs:
            runs = _runs(src)
            if runs is None:
                out.append(self.warp_read(values, src))
                continue
            if copy is None:
                copy = self.entry_alloca(values.type, "xlane_copy")
                b.store(values, copy)
                if not isinstance(values.type.element, ll.IntType):
                    _keep_in_memory(b, copy)
            et = values.type.element
            parts = []
            for lane, n in runs:
                x = b.load(b.gep(copy, [_i32(0), _i32(lane)], source_etype=values.type), typ=et)
                parts.append(self.splat(x, n))
            while len(parts) > 1:  # concatenate the runs
                parts = [_concat(b, parts[i], parts[i + 1]) for i in range(0, len(parts), 2)]
            out.append(parts[0])
        return out

    def warp_first(self, values: ll.Value, part: ll.Value) -> ll.Value:
        """The value of the lowest lane of `part`, as a scalar."""
        b = self.b
        first = b.cttz(part, ll.Constant(I1, 0))
        return b.extract_element(values, b.and_(first, _i32(W - 1)))

    def warp_reduce(self, name: str, x: ll.Value, identity) -> ll.Value:
        """Reduce the lanes of `x` (non-participants already hold `identity`) with `name`
        (add umin umax smin smax and or xor fminimum fmaximum), as a scalar."""
        del identity
        return self.intrinsic(f"llvm.vector.reduce.{name}", [x], ret=x.type.element)

    def warp_match_any(self, a: ll.Value, part: ll.Value) -> ll.Value:
        """Per lane: the participants j whose value equals the lane's own (bit j)."""
        b = self.b
        zero = self.const_int(32, 0)

        def body(j, accs):
            eq = b.icmp_unsigned("==", a, self.splat(b.extract_element(a, j)))
            return [b.or_(accs[0], b.select(eq, self.splat(b.shl(_i32(1), j)), zero))]

        (out,) = for_each_lane(self, part, [zero], body)
        return out


def _keep_in_memory(b: ll.IRBuilder, p: ll.Value) -> None:
    """An empty asm that may change memory at `p`: LLVM then reads the floats stored there
    from memory, which x86 folds into the FMAs that use them as broadcast operands (wmma.mma
    f16: 256 FMAs and 500 shuffles -> 256 FMAs; cudaTensorCoreGemm's kernel -15%), instead
    of forwarding the stored vector into shuffles (llvmlite 0.50 writes no volatile accesses).
    Not integers: LLVM merges their loads into vector loads and shuffles, and multiplies
    that no longer wait for them crowd the registers (immaTensorCoreGemm's kernel +25%)."""
    asm = ll.InlineAsm(ll.FunctionType(ll.VoidType(), [PTR]), "", "r,~{memory}", side_effect=True)
    b.call(asm, [p])


def _runs(src: ll.Value) -> list[tuple[int, int]] | None:
    """(source lane, length) of each run of a constant source vector whose lanes read in
    equal runs of 8 or more, else None."""
    if not (isinstance(src, ll.Constant) and isinstance(src.type, ll.VectorType)):
        return None
    lanes = [c.constant if isinstance(c, ll.Constant) else c for c in src.constant]
    for n in (32, 16, 8):
        if all(lanes[i] == lanes[i - i % n] for i in range(W)):
            return [(lanes[i], n) for i in range(0, W, n)]
    return None


def _concat(b: ll.IRBuilder, x: ll.Value, y: ll.Value) -> ll.Value:
    n = x.type.count
    return b.shuffle_vector(x, y, ll.Constant(vec(I32, 2 * n), list(range(2 * n))))
