"""wmma: warp-level matrix multiply-accumulate (tensor core fragments).

PTX ISA §9.7.14 (wmma.load, wmma.store, wmma.mma). A fragment is a warp-wide matrix held
in a few registers of every lane; which lane holds which element is unspecified, so a
program only reaches the elements through wmma.load/store/mma or element-wise code that
does not depend on their position.

cuport's layout: slot `s` of lane `l` holds logical element `s*32 + l` of the matrix in
row-major order, so each slot is a run of 32 consecutive elements (fragment slots are
elements packed into the 32-bit registers, two f16/bf16 or four s8/u8 per register, an f64
per 64-bit register). Where NVIDIA's layout gives a lane more registers than the matrix
has elements per lane (the f16 a/b fragments of m16n16k16 and m32n8k16's b, m8n32k16's a),
the extra slots repeat the first ones.

Numerics: products of f16, bf16 and tf32 inputs are exact in f32 and are summed in k order
with f32 fmas starting from c (a tensor core's summation order and internal precision are
not specified: results may differ from a GPU's in the last bits, except where every
partial sum is exact). f16 products are also within f32's normal range, so a multiply and
an add give the fma's result: they use llvm.fmuladd, which a device whose Fma is not fused
(lavapipe) runs without an exact emulation. f64 (m8n8k4) uses f64 fmas; s8/u8 products are
summed exactly (in i32) and added to c in s32, wrapping, or clamped with .satfinite. tf32
inputs keep their top 19 bits. Sub-byte (s4/u4/b1) shapes are refused.

Everything is per lane, through the lowering interface (isa/api.py). wmma.load and
wmma.store compute the lanes' element offsets (`em.load_elements`/`store_elements` at
per-lane offsets: one access for the fragment, so a GPU checks its addresses once). A
row-major matrix's rows are runs of a slot's lanes (vector loads on the CPU). Per thread a
lane of a column-major fragment accesses its own elements; in vector mode (CPU) the slots
take them in memory order, where columns are runs, and a permute puts them in place (the
8- and 16-bit gathers it replaces are 32 tested scalar loads each on x86). wmma.mma computes the lane's own elements of d, d[i][j] for each slot, and fetches the
a[i][kk] and b[kk][j] it needs from the lanes that hold them (`em.warp_reads`). The
gathering is planned at compile time (`mma_plan`); a fetch moves one unit of a fragment
from one source lane per lane, and serves every product that needs an element of that unit
from that lane. Per thread (Vulkan) the unit is a register (two f16/bf16, four s8/u8, one
tf32 or f64): the fewest shuffles, then an extraction per use. In every shape the register
a product needs is the same for all lanes (tests/isa/test_wmma_plan.py checks the plan), so
one fetch is one shuffle; the element inside it may differ per lane (m32n8k16's a). On the
CPU the unit is an element converted once (f32, f64 or i32): a fetch is a vector permute or
broadcast load there, cheaper than an extraction and conversion per product. Fetches per
lane and mma, a + b (products per lane in brackets):

    shape       per thread: f16/bf16   s8/u8     tf32/f64        CPU (elements)
    m16n16k16                64 + 8    32 + 4              (128)   128 + 16
    m32n8k16                128 + 8    64 + 4              (128)   256 + 16
    m8n32k16                 64 + 0    32 + 0              (128)   128 + 0
    m16n16k8                                     64 + 8    (64)     64 + 8
    m8n8k4                                        8 + 4    (8)       8 + 4

m8n32k16's a fetches are broadcasts (one source lane), its b is each lane's own. A fetch is
a subgroup shuffle where a warp is a subgroup; with narrower subgroups (lavapipe) all
fetches of one unit are one exchange through workgroup memory.

Code size: every kind of load, store and mma is built once per module (`em.outline` for the
products, with the unpacking of a, b and c and the packing of d; `em.outline_access` for a
load or store, with its offsets, accesses, permute and registers), and a site is a call:
an LLVM function on the CPU, a SPIR-V function on Vulkan (backends/vulkan/lower_outline.py).
cudaTensorCoreGemm's kernel has 2053 mma and 1541 loads (its k loop unrolled); CPU time to
compile it on the 2-core dev VM: over 15 minutes while LLVM inlined the column-major loads'
gathers, 49 s with one call of them per load, 20 s so; at most 42 instructions of LLVM IR a
site. On Vulkan, built in place, it was 2.6 million SPIR-V ids (53 MB; `cuport ptx
--dump-after translate` 113 s on that VM), outlined 120 thousand ids (2.6 MB; 6.4 s).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir as ll

from ..ptx import ir
from .memory import Access, space_of
from .registry import lowers
from .types import I32, WARP, vec

W = WARP
SHAPES = {"m16n16k16": (16, 16, 16), "m32n8k16": (32, 8, 16), "m8n32k16": (8, 32, 16),
          "m16n16k8": (16, 16, 8), "m8n8k4": (8, 8, 4)}
ELEMENT_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "f64": 64, "s8": 8, "u8": 8,
                "s32": 32}
_SPACES = ("global", "shared", "generic")


# ---------------------------------------------------------------- per-lane integers


class _Lane:
    """An i32 per-lane value under construction: a formula written once over ints
    (+, *, >>, & with int constants) runs on Python ints to plan, and on this wrapper to
    emit the thread's value in per-thread mode."""

    def __init__(self, em, v: ll.Value) -> None:
        self.em, self.v = em, v

    def _c(self, x: int) -> ll.Value:
        return self.em.const_int(32, x)

    def __add__(self, x: int) -> _Lane:
        return self if x == 0 else _Lane(self.em, self.em.b.add(self.v, self._c(x)))

    __radd__ = __add__

    def __mul__(self, x: int) -> _Lane:
        return self if x == 1 else _Lane(self.em, self.em.b.mul(self.v, self._c(x)))

    __rmul__ = __mul__

    def __rshift__(self, x: int) -> _Lane:
        return self if x == 0 else _Lane(self.em, self.em.b.lshr(self.v, self._c(x)))

    def __and__(self, x: int) -> _Lane:
        return _Lane(self.em, self.em.b.and_(self.v, self._c(x)))


def _table(f: Callable) -> list[int]:
    return [f(lane) for lane in range(W)]


def _per_lane(em, f: Callable) -> ll.Value:
    """The i32 value f(lane) of each lane in the current mode: a constant where every lane
    has the same, the lanes' constant vector in vector mode, else computed from %laneid."""
    t = _table(f)
    if len(set(t)) == 1:
        return em.const_int(32, t[0])
    if em.vec:
        return ll.Constant(vec(I32), t)
    return f(_Lane(em, em.warp_lane())).v


def _log2(x: int) -> int:
    assert x & (x - 1) == 0, x
    return x.bit_length() - 1


# ---------------------------------------------------------------- operands


def _shape(em, ins: ir.Instr) -> tuple[int, int, int]:
    for m in ins.mods:
        if m in SHAPES:
            return SHAPES[m]
        if m.startswith("m") and "n" in m and "k" in m:
            raise em.error(f"wmma shape .{m} is not supported (sub-byte and bit shapes)")
    raise em.error("wmma without a shape")


def _etype(em, ins: ir.Instr) -> str:
    for m in reversed(ins.mods):
        if m in ELEMENT_BITS:
            return m
    raise em.error("wmma without an element type")


@dataclass(frozen=True)
class Fragment:
    """A fragment's registers: `rows` x `cols` elements of `etype`, `per` to a register."""

    etype: str
    rows: int
    cols: int
    regs: tuple

    @property
    def bits(self) -> int:
        return ELEMENT_BITS[self.etype]

    @property
    def reg_bits(self) -> int:
        return 64 if self.etype == "f64" else 32

    @property
    def per(self) -> int:
        return self.reg_bits // self.bits

    @property
    def slots(self) -> int:
        """Distinct element slots per lane (a whole number of registers in every shape)."""
        return self.rows * self.cols // W

    @property
    def words(self) -> int:
        """Distinct registers per lane."""
        return self.slots // self.per


def _fragment(em, op, etype: str, rows: int, cols: int) -> Fragment:
    if not isinstance(op, ir.Vec):
        raise em.error("a wmma fragment that is not a {register list}")
    f = Fragment(etype, rows, cols, tuple(op.items))
    assert f.slots % f.per == 0, f
    if len(f.regs) * f.per < f.slots:
        raise em.error(f"a .{etype} fragment of {rows}x{cols} in {len(f.regs)} registers")
    return f


def _read_reg(em, f: Fragment, j: int) -> ll.Value:
    v = em.read_bits(f.regs[j], f"b{f.reg_bits}")
    return em.splat(v) if em.vec and not isinstance(v.type, ll.VectorType) else v


def _element(em, f: Fragment, word: ll.Value, shift: ll.Value | int) -> ll.Value:
    """The element `shift` bits up in a register value, as an iN."""
    b = em.b
    if f.bits == f.reg_bits:
        return word
    if not isinstance(shift, int):
        word = b.lshr(word, shift)
    elif shift:
        word = b.lshr(word, em.const_int(f.reg_bits, shift))
    return b.trunc(word, em.bty(f"b{f.bits}"))


def _words(em, f: Fragment) -> list[ll.Value]:
    """The fragment's distinct registers (the others repeat them), as read."""
    return [_read_reg(em, f, j) for j in range(f.words)]


def _split(em, f: Fragment, words: list[ll.Value]) -> list[ll.Value]:
    """The element slots (iN values) the distinct registers `words` hold, in order."""
    return [_element(em, f, word, p * f.bits) for word in words for p in range(f.per)]


def _slots(em, f: Fragment) -> list[ll.Value]:
    """The fragment's distinct element slots (iN values), in register order."""
    return _split(em, f, _words(em, f))


def _join(em, f: Fragment, slots: list[ll.Value]) -> list[ll.Value]:
    """The distinct registers' values that hold `slots`."""
    b = em.b
    out = []
    for j in range(f.words):
        acc = None
        for p in range(f.per):
            x = slots[j * f.per + p]
            if f.bits < f.reg_bits:
                x = b.zext(x, em.bty(f"b{f.reg_bits}"))
                if p:
                    x = b.shl(x, em.const_int(f.reg_bits, p * f.bits))
            acc = x if acc is None else b.or_(acc, x)
        out.append(acc)
    return out


def _write(em, f: Fragment, words: list[ll.Value]) -> None:
    """Write the fragment's registers from its distinct ones (extra registers repeat them)."""
    for j, r in enumerate(f.regs):
        em.write(r, f"b{f.reg_bits}", words[j % len(words)])


def _pack(em, f: Fragment, slots: list[ll.Value]) -> None:
    """Write the fragment's registers from its distinct slots."""
    _write(em, f, _join(em, f, slots))


# ---------------------------------------------------------------- load and store


def _access(em, ins: ir.Instr, mem, etype: str) -> Access:
    space = space_of(ins)
    if space not in _SPACES:
        raise em.error(f"wmma on .{space} memory")
    if not isinstance(mem, ir.Mem):
        raise em.error("a wmma address that is not [address]")
    return Access(f"b{ELEMENT_BITS[etype]}", space, mem, (None,), None, False)


def _stride(em, ins: ir.Instr, stride_op, rows: int, cols: int) -> ll.Value:
    """ldm, the i32 elements between a row-major matrix's rows (a column-major one's
    columns); without the operand, the tile's own."""
    if stride_op is None:
        return em.const_int(32, cols if "row" in ins.mods else rows)
    return em.read_bits(stride_op, "b32")


def _offsets(em, stride: ll.Value, size: int, rows: int, cols: int, row_major: bool) -> list[ll.Value]:
    """Each slot's byte offset from the matrix's address, per lane, for elements of `size`
    bytes `stride` apart (ldm)."""
    b = em.b
    if em.vec and not isinstance(stride.type, ll.VectorType):
        stride = em.splat(stride)
    stride = b.zext(stride, em.bty("b64"))
    sh, mask = _log2(cols), cols - 1
    out = []
    for s in range(rows * cols // W):
        r = _per_lane(em, lambda lane, s=s: (W * s + lane) >> sh)
        c = _per_lane(em, lambda lane, s=s: (W * s + lane) & mask)
        major, minor = (r, c) if row_major else (c, r)
        elems = b.add(b.mul(b.zext(major, stride.type), stride), b.zext(minor, stride.type))
        out.append(b.mul(elems, em.const_int(64, size)))
    return out


def _transposed(rows: int, cols: int) -> Callable[[int], int]:
    """Of a rows x cols matrix: the row-major index of the element at each column-major
    index (and, called with cols x rows, the converse)."""
    return lambda e: (e % rows) * cols + e // rows


def _permute(em, src: list[ll.Value], pick: Callable[[int], int]) -> list[ll.Value]:
    """Vector mode: slots whose element e (slot e >> 5, lane e & 31) is element pick(e) of
    the slots `src`. Each slot is two-source shuffles of the slots it draws from, pairwise:
    LLVM folds them into the target's permutes (a column-major fragment's transpose)."""
    b = em.b
    out = []
    for s in range(len(src)):
        want = [pick(W * s + lane) for lane in range(W)]
        parts = [(src[t], {lane: e & (W - 1) for lane, e in enumerate(want) if e >> 5 == t})
                 for t in sorted({e >> 5 for e in want})]
        if len(parts) == 1 and all(parts[0][1][lane] == lane for lane in range(W)):
            out.append(parts[0][0])
            continue
        parts.append((ll.Constant(src[0].type, None), {}))  # (an even count: a shuffle pairs two)
        while len(parts) > 1:
            nxt = []
            for (x, xs), (y, ys) in zip(parts[::2], parts[1::2], strict=False):
                mask = [xs[lane] if lane in xs else W + ys[lane] if lane in ys else lane for lane in range(W)]
                nxt.append((b.shuffle_vector(x, y, ll.Constant(vec(I32), mask)), {lane: lane for lane in {*xs, *ys}}))
            if len(parts) % 2:
                nxt.append(parts[-1])
            parts = nxt
        out.append(parts[0][0])
    return out


def _tile(em, ins: ir.Instr, f: Fragment, stride: ll.Value) -> tuple[list[ll.Value], int, Callable | None]:
    """How a fragment meets memory: the offsets of the elements its slots read or write,
    the lanes contiguous in memory (em.load_elements' `runs`), and where the elements of
    those slots belong in the fragment (None: where they are). A row-major matrix's rows are
    runs of a slot's lanes. A column-major one's are not: per thread (Vulkan) each lane
    accesses its own elements; in vector mode the slots take the elements in memory order
    (its columns are runs), which a permute puts in place, where 8- and 16-bit elements
    would be gathers of 32 scalar loads each."""
    size = f.bits // 8
    if "row" in ins.mods:
        return _offsets(em, stride, size, f.rows, f.cols, True), f.cols, None
    if not em.vec:
        return _offsets(em, stride, size, f.rows, f.cols, False), 0, None
    return _offsets(em, stride, size, f.cols, f.rows, True), f.rows, _transposed(f.rows, f.cols)


def _load(em, ins: ir.Instr, f: Fragment, acc: Access, stride: ll.Value) -> None:
    def body(mem, args: list[ll.Value]) -> list[ll.Value]:
        offsets, runs, order = _tile(em, ins, f, args[0])
        slots = mem.load(offsets, runs)
        if order is not None:  # memory's element e is the fragment's element order(e)
            back = {order(e): e for e in range(f.rows * f.cols)}
            slots = _permute(em, slots, back.__getitem__)
        return _join(em, f, slots)

    key = f"wmma.load.{f.rows}x{f.cols}.{f.etype}.{'row' if 'row' in ins.mods else 'col'}"
    _write(em, f, em.outline_access(key, acc, [stride], body))


def _store(em, ins: ir.Instr, f: Fragment, acc: Access, stride: ll.Value) -> None:
    def body(mem, args: list[ll.Value]) -> list[ll.Value]:
        offsets, runs, order = _tile(em, ins, f, args[0])
        slots = _split(em, f, args[1:])
        if order is not None:
            slots = _permute(em, slots, order)
        mem.store(slots, offsets, runs)
        return []

    key = f"wmma.store.{f.rows}x{f.cols}.{f.etype}.{'row' if 'row' in ins.mods else 'col'}"
    em.outline_access(key, acc, [stride, *_words(em, f)], body)


@lowers("wmma")
def lower_wmma(em, ins: ir.Instr) -> None:
    em.begin_collective()  # fragments are spread over the warp's lanes
    kind = ins.mods[0] if ins.mods else ""
    m, n, k = _shape(em, ins)
    if kind == "load":
        which = ins.mods[1]
        etype = _etype(em, ins)
        rows, cols = {"a": (m, k), "b": (k, n)}.get(which, (m, n))
        f = _fragment(em, ins.args[0], etype, rows, cols)
        acc = _access(em, ins, ins.args[1], etype)
        _load(em, ins, f, acc, _stride(em, ins, ins.args[2] if len(ins.args) > 2 else None, rows, cols))
        return
    if kind == "store":
        etype = _etype(em, ins)
        f = _fragment(em, ins.args[1], etype, m, n)
        acc = _access(em, ins, ins.args[0], etype)
        _store(em, ins, f, acc, _stride(em, ins, ins.args[2] if len(ins.args) > 2 else None, m, n))
        return
    if kind == "mma":
        _mma(em, ins, m, n, k)
        return
    raise em.error(f"wmma.{kind} is not supported")


# ---------------------------------------------------------------- mma


@dataclass(frozen=True)
class Fetch:
    """Unit `unit` of a fragment (a register, or one converted element) as held by lane
    src[lane], for each lane."""

    unit: int
    src: tuple[int, ...]

    @property
    def own(self) -> bool:
        return self.src == tuple(range(W))


@dataclass(frozen=True)
class Use:
    """What one product needs of a or b: in each lane, the element at position pos(lane)
    of the unit unit(lane), fetched from lane src(lane). `fetches`: one per unit some lane
    needs (one in every shape's register plan; two for m32n8k16's a by elements)."""

    fetches: tuple[Fetch, ...]
    unit: Callable  # lane -> unit (formulas, see _per_lane)
    pos: Callable
    src: Callable


def plan(per: int, index: Callable) -> Callable[[int, int], Use]:
    """The use of element `index(lane, s, kk)` of a fragment moved in units of `per`
    elements (row-major element e is in slot e >> 5 of lane e & 31)."""
    sh = _log2(per)

    def use(s: int, kk: int) -> Use:
        def src(lane):
            return index(lane, s, kk) & (W - 1)

        def unit(lane):
            return index(lane, s, kk) >> (5 + sh)

        def pos(lane):
            return (index(lane, s, kk) >> 5) & (per - 1)

        lanes = tuple(_table(src))
        return Use(tuple(Fetch(u, lanes) for u in sorted(set(_table(unit)))), unit, pos, src)

    return use


def mma_plan(m: int, n: int, k: int, per_a: int, per_b: int):
    """(a's use, b's use) of each product, as functions of (s, kk): the lane's element of d
    in slot s is d[i][j], i*n + j = 32*s + lane, and needs a[i][kk] and b[kk][j]."""
    shn, maskn = _log2(n), n - 1
    a = plan(per_a, lambda lane, s, kk: ((W * s + lane) >> shn) * k + kk)
    b = plan(per_b, lambda lane, s, kk: kk * n + ((W * s + lane) & maskn))
    return a, b


def _types(em, ins: ir.Instr) -> tuple[str, str, str, str]:
    types_ = [t for t in ins.mods if t in ELEMENT_BITS]
    if len(types_) == 2:  # f16 inputs: .dtype.ctype
        dtype, ctype = types_
        return dtype, "f16", "f16", ctype
    if len(types_) == 4:
        dtype, atype, btype, ctype = types_
        return dtype, atype, btype, ctype
    raise em.error("wmma.mma without its types")


def _to_compute(em, x: ll.Value, etype: str) -> ll.Value:
    """An element's bits as the value products are computed in: f32 (f16, bf16, tf32, f32),
    f64, or i32 (s8, u8: products and their sums are exact there)."""
    b = em.b
    t32 = em.bty("b32")
    if etype == "f16":
        return b.fpext(b.bitcast(x, em.ty("f16")), em.ty("f32"))
    if etype == "bf16":
        return b.bitcast(b.shl(b.zext(x, t32), em.const_int(32, 16)), em.ty("f32"))
    if etype == "tf32":
        return b.bitcast(b.and_(x, em.const_int(32, 0xFFFFE000)), em.ty("f32"))
    if etype == "f32":
        return b.bitcast(x, em.ty("f32"))
    if etype == "f64":
        return b.bitcast(x, em.ty("f64"))
    if etype == "s8":
        return b.sext(x, t32)
    if etype == "u8":
        return b.zext(x, t32)
    if etype == "s32":
        return x
    raise em.error(f"wmma on .{etype} is not supported")


def _units(em, f: Fragment, words: list[ll.Value]) -> tuple[list[ll.Value], int]:
    """The values that move between lanes, and how many elements each holds, from the
    distinct registers `words`: on the CPU backend the elements converted once (a move is
    one vector permute there, a conversion costs more); per thread the registers (fewest
    shuffles, then an extraction per use)."""
    if em.vec or f.per == 1:
        return [_to_compute(em, x, f.etype) for x in _split(em, f, words)], 1
    return words, f.per


def _fetch_all(em, units: list[ll.Value], uses: list[Use]) -> dict[Fetch, ll.Value]:
    """Every fetch that `uses` need: the warp reads of each unit together."""
    src = {x: u.src for u in reversed(uses) for x in u.fetches}  # source lanes, as a formula
    out: dict[Fetch, ll.Value] = {}
    for j in sorted({x.unit for x in src}):
        reads = [x for x in src if x.unit == j and not x.own]
        out.update((x, units[j]) for x in src if x.unit == j and x.own)
        if reads:
            values = em.warp_reads(units[j], [_per_lane(em, src[x]) for x in reads])
            out.update(zip(reads, values, strict=True))
    return out


def _mma(em, ins: ir.Instr, m: int, n: int, k: int) -> None:
    dtype, atype, btype, ctype = _types(em, ins)
    integer = atype in ("s8", "u8")
    satfinite = "satfinite" in ins.mods
    if satfinite and not integer:
        raise em.error("wmma.mma .satfinite on floating-point results is not supported")
    d_op, a_op, b_op, c_op = ins.args[:4]
    fa = _fragment(em, a_op, atype, m, k)
    fb = _fragment(em, b_op, btype, k, n)
    fc = _fragment(em, c_op, ctype, m, n)
    fd = _fragment(em, d_op, dtype, m, n)
    na, nb = fa.words, fb.words

    def body(words: list[ll.Value]) -> list[ll.Value]:
        """d's registers from a's, b's and c's: the unpacking and conversions belong to the
        products, so that a backend that builds them once builds those once too."""
        units_a, per_a = _units(em, fa, words[:na])
        units_b, per_b = _units(em, fb, words[na:na + nb])
        c = [_to_compute(em, x, ctype) for x in _split(em, fc, words[na + nb:])]
        d = _products(em, (m, n, k), fa, fb, dtype, satfinite, units_a, per_a, units_b, per_b, c)
        return _join(em, fd, d)

    key = f"wmma.{m}x{n}x{k}.{dtype}.{atype}.{btype}.{ctype}{'.sat' if satfinite else ''}"
    _write(em, fd, em.outline(key, _words(em, fa) + _words(em, fb) + _words(em, fc), body))


def _products(em, shape: tuple[int, int, int], fa: Fragment, fb: Fragment, dtype: str,
              satfinite: bool, units_a: list[ll.Value], per_a: int, units_b: list[ll.Value],
              per_b: int, c: list[ll.Value]) -> list[ll.Value]:
    """d's slots (bits): each lane's elements of a*b + c, products in k order."""
    b = em.b
    m, n, k = shape
    use_a, use_b = mma_plan(m, n, k, per_a, per_b)
    products = [(use_a(s, kk), use_b(s, kk)) for s in range(len(c)) for kk in range(k)]
    got_a = _fetch_all(em, units_a, [ua for ua, _ in products])
    got_b = _fetch_all(em, units_b, [ub for _, ub in products])
    values: dict[tuple, ll.Value] = {}

    def operand(f: Fragment, per: int, u: Use, got: dict) -> ll.Value:
        """The lane's element for the use `u`, as the value products are computed in."""
        pos = _table(u.pos)
        key = (id(f), u.fetches, tuple(pos))
        if key in values:
            return values[key]
        v = got[u.fetches[0]]
        if len(u.fetches) > 1:
            unit = _per_lane(em, u.unit)
            for x in u.fetches[1:]:
                v = b.select(b.icmp_unsigned("==", unit, em.const_int(32, x.unit)), got[x], v)
        if per > 1:
            shift = pos[0] * f.bits if len(set(pos)) == 1 else \
                _per_lane(em, lambda lane: u.pos(lane) * f.bits)
            v = _to_compute(em, _element(em, f, v, shift), f.etype)
        values[key] = v
        return v

    integer = fa.etype in ("s8", "u8")
    # f16 products are exact and within f32's normal range: fused or not, the same sum (and
    # a device whose Fma is not fused, lavapipe, then needs no exact emulation)
    fma = "llvm.fmuladd" if fa.etype == fb.etype == "f16" else "llvm.fma"
    out = []
    for s in range(len(c)):
        acc = None if integer else c[s]  # integers: the exact sum of the products, in i32
        for kk in range(k):
            ua, ub = products[s * k + kk]
            x, y = operand(fa, per_a, ua, got_a), operand(fb, per_b, ub, got_b)
            if integer:
                p = b.mul(x, y)
                acc = p if acc is None else b.add(acc, p)
            else:
                acc = em.intrinsic(fma, [x, y, acc])
        out.append(_result(em, dtype, satfinite, acc, c[s]))
    return out


def _result(em, dtype: str, satfinite: bool, acc: ll.Value, c: ll.Value) -> ll.Value:
    """d's bits from the accumulated value (integers: c plus the exact sum of products)."""
    b = em.b
    if dtype == "s32":
        if not satfinite:
            return b.add(c, acc)
        t64 = em.bty("b64")
        wide = b.add(b.sext(c, t64), b.sext(acc, t64))
        lo, hi = em.const_int(64, -(1 << 31)), em.const_int(64, (1 << 31) - 1)
        wide = b.select(b.icmp_signed("<", wide, lo), lo, wide)
        wide = b.select(b.icmp_signed(">", wide, hi), hi, wide)
        return b.trunc(wide, em.bty("b32"))
    if dtype == "f16":
        return b.bitcast(b.fptrunc(acc, em.ty("f16")), em.bty("b16"))
    return b.bitcast(acc, em.bty(f"b{ELEMENT_BITS[dtype]}"))

