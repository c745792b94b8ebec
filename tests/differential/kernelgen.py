"""Kernel families: each makes one random CUDA kernel (its C++ text, its launch shape, the
layout of its outputs) and, where it can, a host reference of those outputs.

Conventions inside every kernel (the prelude in gen.py defines the helpers):
  in   the input pools (uint64 words, ld_<type>(in, i) reads entry i % 64 of a type's pool)
  out  the output bytes; each output array has an offset, an element width and a count
  p    a 32-bit kernel parameter (uniform)
  t    the thread's index in its block, nb the block's size, b the block's index, g = b*nb + t
An output array is written with ST<w>(offset, index, B(value)); B() gives a value's bits.

Kernels are deterministic: no result depends on the order in which threads or blocks run
(atomics are commutative and only their final values or order-free facts are stored;
barriers separate writes from reads; warp collectives use masks of lanes known to take part).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import hostref as H
import ops as O
from dtypes import POOL_N, TYPES, Rng, nspecials

# ---------------------------------------------------------------- outputs and kernels


@dataclass
class Out:
    """One output array: `count` elements of `dtype` at byte `offset`, written by source line
    `line` (an index into the kernel's body lines, made absolute by gen.py)."""
    name: str
    dtype: str
    count: int
    offset: int = 0
    line: int = 0
    what: str = ""
    approx: O.Approx | None = None
    operands: tuple[str, ...] = ()   # for approx: the output arrays holding its operands

    @property
    def width(self) -> int:
        return width_of(self.dtype)


def width_of(dtype: str) -> int:
    return 1 if dtype == "pred" else TYPES[dtype].bits // 8


@dataclass
class Kernel:
    name: str
    family: str
    grid: tuple[int, int]
    block: tuple[int, int, int]
    dyn_smem: int
    param: int
    body: list[str]
    outs: list[Out]
    helpers: set[str]
    ref: Callable[..., dict[str, list]] | None = None  # (pools, outputs under test) -> expected per output
    first_line: int = 0   # the line of the kernel's signature in the file (gen.py sets it)
    pre: list[str] = field(default_factory=list)  # device code the kernel needs before it
    ftz: bool = False     # built with -ftz=true (gen.py sets it)

    @property
    def nthreads_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def nblocks(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def nthreads(self) -> int:
        return self.nthreads_block * self.nblocks

    @property
    def out_bytes(self) -> int:
        return max((o.offset + o.count * o.width for o in self.outs), default=0)


class Builder:
    """Accumulates a kernel's body, its output arrays and the helpers it uses."""

    def __init__(self, name: str, rng: Rng, grid, block, dyn_smem: int = 0, param: int | None = None) -> None:
        self.name = name
        self.r = rng
        self.grid = grid
        self.block = block
        self.dyn_smem = dyn_smem
        self.param = rng.bits(32) if param is None else param
        self.lines: list[str] = []
        self.outs: list[Out] = []
        self.helpers: set[str] = set()
        self.offset = 0
        self.nvar = 0
        self.indent = 1
        self.pre: list[str] = []

    @property
    def nb(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def nblocks(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def nt(self) -> int:
        return self.nb * self.nblocks

    def var(self, prefix: str = "v") -> str:
        self.nvar += 1
        return f"{prefix}{self.nvar}"

    def emit(self, line: str) -> int:
        self.lines.append("  " * self.indent + line)
        return len(self.lines) - 1

    def out(self, dtype: str, count: int, what: str, line: int | None = None) -> Out:
        w = width_of(dtype)
        self.offset = (self.offset + 7) & ~7
        o = Out(f"o{len(self.outs)}", dtype, count, self.offset, len(self.lines) - 1 if line is None else line, what)
        self.offset += w * count
        self.outs.append(o)
        return o

    def store(self, o: Out, index: str, value: str) -> int:
        return self.emit(f"ST{o.width}({o.offset}u, {index}, B({value}));")

    def use(self, op: O.Op) -> str:
        self.helpers.update(op.helpers)
        return op.expr

    def kernel(self, family: str, ref=None) -> Kernel:
        return Kernel(self.name, family, self.grid, self.block, self.dyn_smem, self.param, self.lines, self.outs,
                      self.helpers, ref, pre=self.pre)


# ---------------------------------------------------------------- input loads
@dataclass
class Load:
    """An input value: pool entry (index expression) of a type, as a function of g, t, b and p."""
    var: str
    dtype: str
    kind: str      # "rand", "pair", "uniform", "block", "param", "const" (u32 from __constant__ CT)
    a: int = 0
    c: int = 0

    def index_c(self) -> str:
        if self.kind in ("rand", "const"):
            return f"g * {self.a}u + {self.c}u"
        if self.kind == "pair":
            return f"(g / {self.a}u) % {self.c}u"
        if self.kind == "uniform":
            return f"{self.c}u"
        if self.kind == "block":
            return f"b * {self.a}u + {self.c}u"
        return f"p * {self.a}u + {self.c}u"

    def index(self, g: int, b: int, p: int) -> int:
        if self.kind in ("rand", "const"):
            i = g * self.a + self.c
        elif self.kind == "pair":
            i = (g // self.a) % self.c
        elif self.kind == "uniform":
            i = self.c
        elif self.kind == "block":
            i = b * self.a + self.c
        else:
            i = (p * self.a + self.c) & 0xFFFFFFFF
        return (i & 0xFFFFFFFF) % POOL_N

    def value(self, pools: dict[str, list[int]], g: int, b: int, p: int) -> int:
        if self.dtype == "pred":
            return pools["u32"][self.index(g, b, p)] & 1
        return pools[self.dtype][self.index(g, b, p)]


def new_load(kb: Builder, dtype: str, npair: list[int]) -> Load:
    r = kb.r
    kind = r.weighted([("rand", 50), ("pair", 24), ("uniform", 12), ("block", 7), ("param", 7)])
    if dtype == "u32" and r.chance(0.15):
        kind = "const"
    v = kb.var("a")
    if kind == "pair":
        s = nspecials(dtype if dtype != "pred" else "u32")
        depth = npair[0]
        npair[0] += 1
        ld = Load(v, dtype, "pair", s ** (depth % 2), s)
    elif kind == "rand":
        ld = Load(v, dtype, "rand", r.below(32) * 2 + 1, r.below(64))
    elif kind == "block":
        ld = Load(v, dtype, "block", r.below(16) * 2 + 1, r.below(64))
    elif kind == "param":
        ld = Load(v, dtype, "param", r.below(16) * 2 + 1, r.below(64))
    elif kind == "const":
        ld = Load(v, dtype, "const", r.below(32) * 2 + 1, r.below(64))
    else:
        ld = Load(v, dtype, "uniform", 0, r.below(64))
    if kind == "const":
        kb.emit(f"const unsigned {v} = CT[({ld.index_c()}) % {POOL_N}u];")
    else:
        kb.emit(f"const {TYPES[dtype].c} {v} = ld_{dtype}(in, {ld.index_c()});")
    return ld


# ---------------------------------------------------------------- shapes
def shape(r: Rng, warp_multiple: bool = False, max_threads: int = 256) -> tuple[tuple[int, int], tuple[int, int, int]]:
    """A launch shape: mostly one or two blocks of 32..256 threads; some 2-D/3-D blocks, partial
    warps (unless warp_multiple), 2-D grids."""
    k = r.below(10)
    if k < 5:
        bx = r.choice([32, 64, 96, 128, 64, 128, 256, 160])
        block = (bx, 1, 1)
    elif k < 7:
        block = r.choice([(8, 8, 1), (16, 4, 1), (32, 2, 1), (4, 4, 4), (8, 4, 2), (16, 8, 1)])
    else:
        block = (r.choice([40, 48, 72, 100, 130, 200, 33, 63]), 1, 1)
    n = block[0] * block[1] * block[2]
    if warp_multiple and n % 32:
        block = ((n + 31) // 32 * 32, 1, 1)
        n = block[0]
    while n > max_threads:
        block = (block[0] // 2, block[1], block[2])
        n = block[0] * block[1] * block[2]
    grid = r.choice([(1, 1), (1, 1), (2, 1), (3, 1), (2, 2)])
    return grid, block


# ---------------------------------------------------------------- arithmetic DAGs
THEMES = {
    "int": lambda o: "int" in o.tags and "ptx" not in o.tags,
    "intptx": lambda o: "int" in o.tags and "ptx" in o.tags and "spelling" not in o.tags,
    "float": lambda o: "float" in o.tags,
    "half": lambda o: "half" in o.tags,
    "conv": lambda o: "conv" in o.tags,
    "mixed": lambda o: "spelling" not in o.tags,
}
THEME_WEIGHTS = [("int", 5), ("intptx", 5), ("float", 5), ("half", 3), ("conv", 6), ("mixed", 4)]


@dataclass
class Step:
    var: str
    op: O.Op | None
    args: tuple[str, ...]
    load: Load | None = None


def arith(kb: Builder, theme: str, nstmts: int, napprox: int = 0) -> tuple[list[Step], dict[str, Out]]:
    """A straight-line DAG of operations of one theme; every value is stored."""
    r = kb.r
    cands = [o for o in O.OPS.values() if THEMES[theme](o)]
    live: dict[str, list[str]] = {}
    steps: list[Step] = []
    outs: dict[str, Out] = {}
    npair = [0]

    products: set[str] = set()  # results of "hmul" ops, never the operands of an "hadd" op

    def operand(t: str, op: O.Op) -> str:
        have = live.get(t, [])
        if "hadd" in op.tags:
            have = [v for v in have if v not in products]
        if have and r.chance(0.7):
            return have[-1 - min(r.below(4), len(have) - 1)] if r.chance(0.6) else r.choice(have)
        ld = new_load(kb, t, npair)
        steps.append(Step(ld.var, None, (), ld))
        live.setdefault(t, []).append(ld.var)
        return ld.var

    for _ in range(nstmts):
        # of a few candidates, the one whose operands are most available
        opts = [r.choice(cands) for _ in range(3)]
        op = max(opts, key=lambda o: sum(a in live for a in o.args))
        args = tuple(operand(a, op) for a in op.args)
        v = kb.var()
        if "hmul" in op.tags:
            products.add(v)
        line = kb.emit(f"const {TYPES[op.out].c} {v} = {kb.use(op).format(*args)};")
        o = kb.out(op.out, kb.nt, op.name, line)
        kb.store(o, "g", v)
        outs[v] = o
        steps.append(Step(v, op, args))
        live.setdefault(op.out, []).append(v)
    for _ in range(napprox):
        ap = r.choice(list(O.APPROX.values()))
        kb.helpers.update(ap.helpers)
        operand_outs = []
        xs = []
        for i, dom in enumerate(ap.domain):
            raw = operand("f32", ap)
            x = kb.var("x")
            e = dom.format(x=raw)
            line = kb.emit(f"const float {x} = {e};")
            o = kb.out("f32", kb.nt, f"operand {i} of {ap.name}", line)
            kb.store(o, "g", x)
            operand_outs.append(o.name)
            xs.append(x)
        y = kb.var("y")
        line = kb.emit(f"const float {y} = {ap.expr.format(*xs)};")
        o = kb.out("f32", kb.nt, ap.name, line)
        o.approx = ap
        o.operands = tuple(operand_outs)
        kb.store(o, "g", y)
    return steps, outs


def eval_steps(steps: list[Step], pools, g: int, b: int, p: int, got: dict[str, list[int]] | None = None,
               outs: dict[str, Out] | None = None, ftz: bool = False) -> dict[str, object]:
    """The reference value of every step for thread g. With `got` (the outputs under test),
    each operation's operands are the values the device produced, so that a wrong result is
    reported where it arises, not again in everything computed from it."""
    env: dict[str, object] = {}
    for s in steps:
        if s.load is not None:
            env[s.var] = s.load.value(pools, g, b, p)
            continue
        if got is not None:
            vals = [got[outs[a].name][g] if a in outs else env[a] for a in s.args]
        else:
            vals = [env[a] for a in s.args]
        env[s.var] = apply(s.op, vals, ftz)
    return env


def _subnormal32(v: int) -> bool:
    return (v >> 23) & 0xFF == 0 and v & 0x7FFFFF != 0


def apply(op: O.Op, vals: list, ftz: bool = False):
    """op's reference result for operand bits vals: None when not modelled or when an operand
    is unknown. Under nvcc -ftz=true, C++ f32 operations flush denormals; the reference does
    not model that, so it answers None where an f32 operand or result is a denormal."""
    if op.ref is None or any(v is None or v == H.ANYNAN for v in vals):
        return None
    if ftz and any(t == "f32" and _subnormal32(v) for t, v in zip(op.args, vals, strict=True)):
        return None
    try:
        res = op.ref(*vals)
    except (ZeroDivisionError, OverflowError, ValueError):
        return None
    if ftz and op.out == "f32" and isinstance(res, int) and _subnormal32(res):
        return None
    return res


def arith_kernel(name: str, r: Rng, ftz: bool = False) -> Kernel:
    grid, block = shape(r, max_threads=128)
    kb = Builder(name, r, grid, block)
    theme = r.weighted(THEME_WEIGHTS)
    napprox = r.below(3) if theme in ("float", "mixed") else 0
    steps, outs = arith(kb, theme, r.range(10, 22), napprox)

    def ref(pools, got=None):
        res = {o.name: [None] * o.count for o in outs.values()}
        for g in range(kb.nt):
            env = eval_steps(steps, pools, g, g // kb.nb, kb.param, got, outs, ftz)
            for v, o in outs.items():
                res[o.name][g] = env[v]
        return res
    k = kb.kernel("arith:" + theme, ref)
    return k
