"""Which lanes of a warp may run each block and each guarded instruction.

Needs: a Cfg and the block shape. Leaves: `analyze(...)` → `LaneBounds`, whose
`lanes(block, ins)` is a 32-bit mask outside of which no lane of any warp can execute `ins`
(an over-approximation: a lane in the mask may or may not run it).

Halo code is the case that matters: `if (threadIdx.x == 0) tile[ty][0] = in[...]` in a
16x16 block runs in lanes 0 and 16 of each warp, and `threadIdx.x == 0` alone says so:
with the block shape known, %tid.x is `lane % 16` in every warp. The emitter then makes such
an access a scalar one per possible lane (backends/cpu/emit.py, `_sparse_lanes`) instead of
vector code over the warp's runs with its masks and address checks.

- Registers: the values of a register in each lane, exactly or modulo 2^b, where they do
  not depend on the warp or on data: %laneid, %tid.x when ntid.x divides 32 (lane % ntid.x)
  or is a multiple of it (lane, modulo 32), %tid.y likewise modulo 32/ntid.x, and integer
  arithmetic on them and constants (mov, add, sub, mul.lo, shl, shr, and, or, xor, not).
  Only registers with one unguarded definition: its lanes' values are the register's
  wherever it is read.
- Predicates: for each, the lanes where it may be true and those where it may be false,
  from setp on such values (eq/ne modulo 2^b, every comparison when exact) and the
  predicate operations (and, or, xor, not, mov, setp's .and/.or/.xor and `p|q`).
- Blocks: the lanes that may reach a block, forward over the CFG from every lane at the
  entry: a guarded branch sends the lanes where its predicate may be true one way and those
  where it may be false the other; other edges pass their block's lanes on.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..isa.operands import defs
from ..ptx import ir
from .cfg import Cfg

W = 32
ALL = (1 << W) - 1
_M64 = (1 << 64) - 1


@dataclass(frozen=True)
class Known:
    """A register's value in each lane, modulo 2^bits (bits 64: exact)."""

    vals: tuple[int, ...]
    bits: int

    def mod(self) -> int:
        return (1 << self.bits) - 1


def _log2(n: int) -> int | None:
    return n.bit_length() - 1 if n > 0 and n & (n - 1) == 0 else None


def special_lanes(name: str, block: tuple[int, int, int]) -> Known | None:
    """A special register's values in the lanes of any warp, where the block shape fixes them."""
    nx, ny, nz = block
    lanes = range(W)
    if name == "%laneid":
        return Known(tuple(lanes), 64)
    if name == "%tid.x":
        if W % nx == 0:
            return Known(tuple(lane % nx for lane in lanes), 64)
        if nx % W == 0:  # 32c + lane, c depending on the warp
            return Known(tuple(lanes), 5)
        return None
    if name == "%tid.y":
        if ny == 1:
            return Known((0,) * W, 64)
        b = _log2(W // nx) if W % nx == 0 else None
        if b is not None and ny % (W // nx) == 0:  # (32w/nx + lane/nx) mod ny, modulo 32/nx
            return Known(tuple(lane // nx for lane in lanes), b)
        return None
    if name == "%tid.z" and nz == 1:
        return Known((0,) * W, 64)
    return None


def _signed(x: int, w: int) -> int:
    x &= (1 << w) - 1
    return x - (1 << w) if x >> (w - 1) else x


def _width(ins: ir.Instr) -> tuple[int, str] | None:
    """The integer width and kind (s/u/b) of `ins`'s type suffix."""
    for m in reversed(ins.mods):
        if len(m) >= 2 and m[0] in "sub" and m[1:].isdigit() and m[1:] in ("8", "16", "32", "64"):
            return int(m[1:]), m[0]
    return None


_INT_CMP = {"eq": lambda a, c: a == c, "ne": lambda a, c: a != c, "lt": lambda a, c: a < c,
            "le": lambda a, c: a <= c, "gt": lambda a, c: a > c, "ge": lambda a, c: a >= c,
            "lo": lambda a, c: a < c, "ls": lambda a, c: a <= c, "hi": lambda a, c: a > c,
            "hs": lambda a, c: a >= c}
_ARITH = {"add": lambda a, c: a + c, "sub": lambda a, c: a - c, "mul": lambda a, c: a * c,
          "and": lambda a, c: a & c, "or": lambda a, c: a | c, "xor": lambda a, c: a ^ c}


@dataclass
class LaneBounds:
    blocks: list[int]  # per block: the lanes that may run it
    preds: dict[str, tuple[int, int]]  # predicate → (lanes where it may be true, may be false)

    def guard(self, ins: ir.Instr, holds: bool = True) -> int:
        """The lanes where `ins`'s guard may hold (with holds False: may fail)."""
        if ins.guard is None:
            return ALL if holds else 0
        t, f = self.preds.get(ins.guard.name, (ALL, ALL))
        return t if holds != ins.guard_neg else f

    def lanes(self, block: int, ins: ir.Instr | None) -> int:
        b = self.blocks[block] if 0 <= block < len(self.blocks) else ALL
        return b & (self.guard(ins) if ins is not None else ALL)


def analyze(cfg: Cfg, block: tuple[int, int, int]) -> LaneBounds:
    instrs = [ins for b in cfg.blocks for ins in b.instrs]
    count: dict[str, int] = {}
    for ins in instrs:
        for r in defs(ins):
            count[r.name] = count.get(r.name, 0) + 1
    single = {n for n, c in count.items() if c == 1}
    known: dict[str, Known] = {}
    preds: dict[str, tuple[int, int]] = {}

    def value(o) -> Known | None:
        if isinstance(o, ir.Imm):
            return Known((o.value & _M64,) * W, 64)
        if isinstance(o, ir.Special):
            return special_lanes(o.name, block)
        if isinstance(o, ir.Reg):
            return known.get(o.name)
        return None

    def pred(o) -> tuple[int, int]:
        if isinstance(o, ir.Not):
            t, f = pred(o.reg)
            return f, t
        if isinstance(o, ir.Reg):
            return preds.get(o.name, (ALL, ALL))
        if isinstance(o, ir.Imm):
            return (ALL, 0) if o.value else (0, ALL)
        return ALL, ALL

    def arith(ins: ir.Instr) -> Known | None:
        op = ins.op
        wk = _width(ins)
        srcs = [value(a) for a in ins.args[1:]]
        if wk is None or not srcs or any(s is None for s in srcs):
            return None
        w, kind = wk
        mask = (1 << w) - 1

        def make(vals, bits: int) -> Known:
            return Known(tuple(v & mask for v in vals), 64 if bits >= w else bits)

        a = srcs[0]
        if op == "mov" and len(srcs) == 1:
            return make(a.vals, a.bits)
        if op == "not" and len(srcs) == 1:
            return make([~v for v in a.vals], a.bits)
        if op in ("shl", "shr") and len(srcs) == 2 and isinstance(ins.args[2], ir.Imm):
            k = ins.args[2].value
            if not 0 <= k < w:
                return None
            if op == "shl":
                return make([v << k for v in a.vals], a.bits + k)
            if a.bits < w:
                return None
            return make([(_signed(v, w) if kind == "s" else v & mask) >> k for v in a.vals], 64)
        if op in _ARITH and len(srcs) == 2 and (op != "mul" or "lo" in ins.mods):
            c = srcs[1]
            bits = min(a.bits, c.bits)
            if op == "and" and c.bits >= w and all(0 <= v < (1 << a.bits) for v in c.vals):
                bits = 64  # every bit the mask keeps is known
            return make([_ARITH[op](x, y) for x, y in zip(a.vals, c.vals, strict=True)], bits)
        return None

    def setp(ins: ir.Instr) -> tuple[int, int] | None:
        cmp = next((m for m in ins.mods if m in _INT_CMP), None)
        wk = _width(ins)
        if cmp is None or wk is None:
            return None
        a, c = value(ins.args[1]), value(ins.args[2])
        if a is None or c is None:
            return None
        w, kind = wk
        bits = min(a.bits, c.bits)
        t = f = 0
        for lane in range(W):
            x, y = a.vals[lane], c.vals[lane]
            if bits < w:
                if cmp not in ("eq", "ne"):
                    return None
                same = (x - y) & ((1 << bits) - 1) == 0
                # congruent: either; not congruent: surely different
                eq_t, eq_f = same, True
                r_t, r_f = (eq_t, eq_f) if cmp == "eq" else (eq_f, eq_t)
            else:
                if kind == "s" and cmp not in ("lo", "ls", "hi", "hs"):
                    x, y = _signed(x, w), _signed(y, w)
                else:
                    x, y = x & ((1 << w) - 1), y & ((1 << w) - 1)
                r = _INT_CMP[cmp](x, y)
                r_t, r_f = r, not r
            t |= r_t << lane
            f |= r_f << lane
        return t, f

    def combine(op: str, a: tuple[int, int], c: tuple[int, int]) -> tuple[int, int]:
        (at, af), (ct, cf) = a, c
        if op == "and":
            return at & ct, af | cf
        if op == "or":
            return at | ct, af & cf
        return (at & cf) | (af & ct), (at & ct) | (af & cf)  # xor

    # one pass in program order reaches every register whose one definition comes before its
    # uses in the text (the rest stay unknown); repeated until nothing changes
    changed = True
    while changed:
        changed = False
        for ins in instrs:
            ds = defs(ins)
            if ins.guard is not None or not ds or any(d.name not in single for d in ds):
                continue
            dest = ins.args[0]
            if "pred" in ins.mods and ins.op in ("and", "or", "xor", "not", "mov"):
                srcs = [pred(a) for a in ins.args[1:]]
                if ins.op == "not" or (ins.op == "mov" and len(srcs) == 1):
                    r = srcs[0] if ins.op == "mov" else (srcs[0][1], srcs[0][0])
                elif len(srcs) == 2:
                    r = combine(ins.op, srcs[0], srcs[1])
                else:
                    continue
                if isinstance(dest, ir.Reg) and preds.get(dest.name) != r:
                    preds[dest.name] = r
                    changed = True
            elif ins.op == "setp":
                r = setp(ins)
                if r is None:
                    continue
                boolop = next((m for m in ins.mods if m in ("and", "or", "xor")), None)
                rq = (r[1], r[0])
                if boolop is not None and len(ins.args) > 3:
                    c = pred(ins.args[3])
                    r, rq = combine(boolop, r, c), combine(boolop, rq, c)
                pairs = [(dest, r)] if isinstance(dest, ir.Reg) else (
                    [(dest.p, r), (dest.q, rq)] if isinstance(dest, ir.PredPair) else [])
                for d, v in pairs:
                    if isinstance(d, ir.Reg) and preds.get(d.name) != v:
                        preds[d.name] = v
                        changed = True
            elif isinstance(dest, ir.Reg) and len(ds) == 1:
                k = arith(ins)
                if k is not None and known.get(dest.name) != k:
                    known[dest.name] = k
                    changed = True

    bounds = LaneBounds([0] * len(cfg.blocks), preds)
    lanes = bounds.blocks
    if lanes:
        lanes[0] = ALL
    work = [0] if lanes else []
    while work:
        i = work.pop()
        b = cfg.blocks[i]
        here = lanes[i]
        t = b.term
        out: list[tuple[int, int]] = []
        if t is not None and t.op == "bra" and t.guard is not None and len(b.succs) == 2:
            out = [(b.succs[0], here & bounds.guard(t)), (b.succs[1], here & bounds.guard(t, False))]
        elif t is not None and t.op in ("ret", "exit") and t.guard is not None:
            out = [(s, here & bounds.guard(t, False)) for s in b.succs]
        else:
            out = [(s, here) for s in b.succs]
        for s, m in out:
            if m & ~lanes[s]:
                lanes[s] |= m
                work.append(s)
    return bounds
