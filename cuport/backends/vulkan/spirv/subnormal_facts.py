"""What the translator knows about an f32 operand being subnormal, so that a guarded fma
(subnormal.fma, FloatModes.fma32 "flow" and "cmpflow") tests only the operands it cannot
rule out. Three kinds of operand are known, each for a reason that holds for every value it
can take:

- a constant: its value is known here (0 and normal ones are not subnormal);
- an integer converted to f32 (sitofp, uitofp): 0 or at least 1 in magnitude;
- the result of a guarded fma: the guard's fast path is taken only where the device's
  result is above 2^-126 in magnitude, or NaN (its hot test, subnormal.fma), so not
  subnormal; where the exact path ran, the guard tests that result on its bits, in that
  rare branch, and merges the flag with a phi (false from the fast path). The flag is
  exact: true where and only where the value is subnormal. In sgemm's inner product (acc =
  fma(a, b, acc), 16 in a row) every accumulator but the first is such a result.

Values are followed back through bitcasts and through the registers' Function variables
(allocas only ever loaded and stored whole) to the store before the load in the same LLVM
block: the translator keeps PTX registers in such variables, so `%f10 = fma ...; ...;
fma(.., %f10)` reads back what the first fma's guard produced.
"""

from __future__ import annotations

import struct

from llvmlite import ir as ll


class OperandFacts:
    """Per translated module: the flags guarded fmas left, and the register forwarding."""

    def __init__(self) -> None:
        self.flags: dict[int, int] = {}  # result id of a guarded fma -> its bool "is subnormal"
        self._forward: dict[int, dict] = {}  # id(block) -> {load: the value stored before it}
        self._escaped: dict[int, set] = {}  # id(function) -> allocas used other than load/store

    def fact(self, tr, v: ll.Value) -> bool | int | None:
        """False: v is never subnormal; an id: a bool that holds where v is subnormal; None:
        nothing known (the guard tests v itself)."""
        s = self.source(v)
        if isinstance(s, ll.Constant):
            bits = _bits32(s)
            if bits is None:
                return None
            mag = bits & 0x7FFFFFFF
            return None if 0 < mag < 0x00800000 else False
        if isinstance(s, ll.CastInstr) and s.opname in ("sitofp", "uitofp"):
            return False
        r = tr.vals.get(s)
        flag = self.flags.get(r) if isinstance(r, int) else None
        return None if flag is None else tr.use(flag)

    def source(self, v: ll.Value) -> ll.Value:
        """v followed back through 32-bit bitcasts and register round trips."""
        for _ in range(256):  # (a chain of register moves; a bound against cycles)
            if isinstance(v, ll.CastInstr) and v.opname == "bitcast" and _is32(v.type) and _is32(v.operands[0].type):
                v = v.operands[0]
            elif isinstance(v, ll.LoadInstr) and (w := self._forwarded(v)) is not None:
                v = w
            else:
                return v
        return v

    def _forwarded(self, load: ll.LoadInstr) -> ll.Value | None:
        ptr = load.operands[0]
        block = load.parent
        if not isinstance(ptr, ll.AllocaInstr) or block is None or ptr in self._escapes(block.parent):
            return None
        table = self._forward.get(id(block))
        if table is None:
            table, last = {}, {}
            for ins in block.instructions:
                if isinstance(ins, ll.StoreInstr) and isinstance(ins.operands[1], ll.AllocaInstr):
                    last[ins.operands[1]] = ins.operands[0]
                elif isinstance(ins, ll.LoadInstr) and isinstance(ins.operands[0], ll.AllocaInstr):
                    stored = last.get(ins.operands[0])
                    if stored is not None and str(stored.type) == str(ins.type):
                        table[ins] = stored
            self._forward[id(block)] = table
        return table.get(load)

    def _escapes(self, fn: ll.Function) -> set:
        """The allocas of fn whose address is used other than to load or store through it
        (a call, a gep, a store of the address): another way could write them."""
        got = self._escaped.get(id(fn))
        if got is None:
            got = set()
            for block in fn.blocks:
                for ins in block.instructions:
                    for k, x in enumerate(ins.operands):
                        if isinstance(x, ll.AllocaInstr) and not (
                                (isinstance(ins, ll.LoadInstr) and k == 0)
                                or (isinstance(ins, ll.StoreInstr) and k == 1)):
                            got.add(x)
            self._escaped[id(fn)] = got
        return got


def _is32(t: ll.Type) -> bool:
    return isinstance(t, ll.FloatType) or (isinstance(t, ll.IntType) and t.width == 32)


def _bits32(c: ll.Constant) -> int | None:
    """The bits of a scalar f32 or i32 constant; None for anything else (undef, expressions)."""
    v = c.constant
    if isinstance(c.type, ll.FloatType) and isinstance(v, float):
        try:
            return struct.unpack("<I", struct.pack("<f", v))[0]
        except OverflowError:  # (not an f32 value)
            return None
    if isinstance(c.type, ll.IntType) and c.type.width == 32 and isinstance(v, int):
        return v & 0xFFFFFFFF
    return None
