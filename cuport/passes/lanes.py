"""Exact lane forms: varying registers whose 32 lanes follow a formula in the lane index.

Needs: a Cfg, its Divergence (with the `blend` set of passes/liveness.py) and the block
shape. Leaves: `analyze(...)` → register → `Lanes`, for the registers where it is exact.

A warp's lane i is split as i = S*j + k (k < S, j < 32/S) with S the run length of equal
(tid.y, tid.z) (shapes.segment_length; 32 when tid.x does not split the warp). A register
with form `Lanes(w, kx, ky, ext, m, ikx, iky)` holds in lane (k, j)

    u + kx*k + ky*j + m * ext(ib + ikx*k + iky*j)    (mod 2^w; the ext term only if ext)

where u (w bits) and ib (32 bits) are the same for the whole warp: its *leaves*, the only
values the emitter keeps (backends/cpu/lanes.py). `ext` ("s" or "z") widens a 32-bit
value to 64 bits, as cvt.s64.s32 or mul.wide.u32 do. Unlike shapes.py's prediction this
is exact, wrap-around included: add, sub, mul.lo, shl and mad.lo by constants are exact
modulo 2^w, and a widening keeps the lanes' 32-bit values inside the ext term instead of
assuming they do not wrap. Whether they do is one scalar comparison on ib at the access
(contiguous lanes only when they do not), never a comparison of 32 addresses.

Legal for a register when every definition is one of those operations on operands with
forms (or uniform) and none has a varying guard. A definition in a split block writes every
lane by the formula, also the lanes that are not running: legal when none of those will
read the old value, i.e. the register is not live at any wait point after the block (while
a block runs, the warp's other lanes wait at later blocks: the min-PC order of
backends/cpu/emit.py). Several definitions must agree on everything but the leaves (a
loop's induction variable).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..isa.operands import defs
from ..ptx import ir
from .cfg import Cfg
from .divergence import Divergence
from .shapes import segment_length

W = 32


def signed(x: int, w: int) -> int:
    x &= (1 << w) - 1
    return x - (1 << w) if x >> (w - 1) else x


DYN = "dyn"  # a run stride known only at run time (a leaf): row * n in a 2-D block


@dataclass(frozen=True)
class Lanes:
    w: int
    kx: int = 0
    ky: int | str = 0  # int, or DYN (leaf vy)
    ext: str | None = None
    m: int = 0
    ikx: int = 0
    iky: int | str = 0  # int, or DYN (leaf ivy)

    @staticmethod
    def make(w: int, kx: int = 0, ky: int | str = 0, ext: str | None = None, m: int = 0,
             ikx: int = 0, iky: int | str = 0) -> Lanes:
        m = signed(m, w)
        if ext is None or m == 0:
            ext, m, ikx, iky = None, 0, 0, 0
        return Lanes(w, signed(kx, w), ky if ky == DYN else signed(ky, w), ext, m,
                     signed(ikx, 32), iky if iky == DYN else signed(iky, 32))

    @property
    def uniform(self) -> bool:
        return self.kx == 0 and self.ky == 0 and self.ext is None


class Leaves:
    """Arithmetic on leaves: the analysis only needs the forms, so its leaves are None;
    the emitter passes one that builds LLVM scalars."""

    def add(self, a, b, w: int):
        return None

    def mul(self, a, c: int, w: int):
        return None

    def mul2(self, a, c, w: int):
        return None

    def const(self, c: int, w: int):
        return None

    def trunc(self, a):
        return None


@dataclass
class Value:
    """A form and its leaves: u (w bits), ib (32 bits, with ext), vy / ivy (the run
    strides that are DYN)."""

    lanes: Lanes
    u: object = None
    ib: object = None
    vy: object = None
    ivy: object = None


def _stride(k: int | str, leaf, w: int, ops: Leaves):
    """A run stride as a leaf value (a constant when static)."""
    return leaf if k == DYN else ops.const(k, w)


def _sum_stride(a: int | str, va, b: int | str, vb, w: int, ops: Leaves):
    if a != DYN and b != DYN:
        return a + b, None
    return DYN, ops.add(_stride(a, va, w, ops), _stride(b, vb, w, ops), w)


def _add(x: Value, y: Value, ops: Leaves) -> Value | None:
    a, b = x.lanes, y.lanes
    if a.w != b.w or (a.ext and b.ext):
        return None
    w = a.w
    ky, vy = _sum_stride(a.ky, x.vy, b.ky, y.vy, w, ops)
    e, ev = (a, x) if a.ext else (b, y)
    return Value(Lanes.make(w, a.kx + b.kx, ky, e.ext, e.m, e.ikx, e.iky),
                 ops.add(x.u, y.u, w), ev.ib, vy, ev.ivy)


def _scale(x: Value, c: int, ops: Leaves) -> Value:
    a = x.lanes
    ky, vy = (DYN, ops.mul(x.vy, c, a.w)) if a.ky == DYN else (a.ky * c, None)
    return Value(Lanes.make(a.w, a.kx * c, ky, a.ext, a.m * c, a.ikx, a.iky),
                 ops.mul(x.u, c, a.w), x.ib, vy, x.ivy)


def _scale_dyn(x: Value, n: Value, ops: Leaves) -> Value | None:
    """x * n for a uniform n known only at run time: only x's run stride may be nonzero
    (tid.y * width), which becomes a leaf."""
    a = x.lanes
    if a.kx != 0 or a.ext or not n.lanes.uniform:
        return None
    return Value(Lanes.make(a.w, 0, DYN), ops.mul2(x.u, n.u, a.w), None,
                 ops.mul2(_stride(a.ky, x.vy, a.w, ops), n.u, a.w))


def _widen(x: Value, kind: str, c: int, ops: Leaves) -> Value | None:
    """ext64(x) * c for a 32-bit x without an ext term of its own."""
    a = x.lanes
    if a.w != 32 or a.ext:
        return None
    return Value(Lanes.make(64, 0, 0, kind, c, a.kx, a.ky), ops.const(0, 64), x.u, None, x.vy)


def _narrow(x: Value, ops: Leaves) -> Value:
    """The low 32 bits: ext() is the identity there, so the ext term folds in."""
    a = x.lanes
    u = ops.trunc(x.u)
    if not a.ext:
        ky, vy = (DYN, ops.trunc(x.vy)) if a.ky == DYN else (a.ky, None)
        return Value(Lanes.make(32, a.kx, ky), u, None, vy)
    u = ops.add(u, ops.mul(x.ib, a.m, 32), 32)
    if a.ky != DYN and a.iky != DYN:
        ky, vy = a.ky + a.m * a.iky, None
    else:
        outer = ops.trunc(x.vy) if a.ky == DYN else ops.const(a.ky, 32)
        ky, vy = DYN, ops.add(outer, ops.mul(_stride(a.iky, x.ivy, 32, ops), a.m, 32), 32)
    return Value(Lanes.make(32, a.kx + a.m * a.ikx, ky), u, None, vy)


_INT32 = {"b32", "u32", "s32"}
_INT64 = {"b64", "u64", "s64"}
#: modifiers that change what an integer instruction computes (carry, saturation, halves)
_NOT_MODULAR = {"cc", "sat", "hi", "f16", "f32", "f64", "f16x2", "bf16", "bf16x2", "relu"}


def width_of(t: str) -> int | None:
    return 32 if t in _INT32 else 64 if t in _INT64 else None


def _types(ins: ir.Instr) -> list[str]:
    return [m for m in ins.mods if m in ir.SCALAR_TYPES]


def transfer(ins: ir.Instr, operand, ops: Leaves) -> Value | None | object:
    """The destination's Value, None when it has no form, or TOP when an operand's form
    is not known yet. `operand(op, width)` gives an operand's Value (or None / TOP)."""
    if ins.guard is not None and operand(ins.guard, 0) is not UNIFORM_GUARD:
        return None
    if any(m in _NOT_MODULAR for m in ins.mods):
        return None
    op, args = ins.op, ins.args
    types = _types(ins)
    if not types or len(args) < 2 or not isinstance(args[0], ir.Reg):
        return None
    srcs = args[1:]

    def get(o, w):
        v = operand(o, w)
        return v

    def all_known(vals):
        for v in vals:
            if v is None:
                return None
            if v is TOP:
                return TOP
        return True

    if op in ("mov", "cvta") and len(srcs) == 1:
        if op == "cvta" and ("shared" in ins.mods or "local" in ins.mods):
            return None
        w = width_of(types[-1])
        if w is None:
            return None
        v = get(srcs[0], w)
        return v
    if op == "cvt" and len(types) == 2 and len(srcs) == 1:
        dw, sw = width_of(types[0]), width_of(types[1])
        if dw is None or sw is None or any(m in ins.mods for m in ("rn", "rz", "rm", "rp", "rni", "rzi")):
            return None
        v = get(srcs[0], sw)
        if v is None or v is TOP:
            return v
        if dw == sw:
            return v
        if dw == 64:
            return _widen(v, "s" if types[1][0] == "s" else "z", 1, ops)
        return _narrow(v, ops)
    w = width_of(types[-1])
    if w is None:
        return None
    if op in ("add", "sub") and len(srcs) == 2:
        x, y = get(srcs[0], w), get(srcs[1], w)
        k = all_known((x, y))
        if k is not True:
            return k
        if op == "sub":
            y = _scale(y, -1, ops)
        return _add(x, y, ops)
    if op == "neg" and len(srcs) == 1:
        x = get(srcs[0], w)
        return x if x is None or x is TOP else _scale(x, -1, ops)
    if op == "shl" and len(srcs) == 2 and isinstance(srcs[1], ir.Imm) and 0 <= srcs[1].value < w:
        x = get(srcs[0], w)
        return x if x is None or x is TOP else _scale(x, 1 << srcs[1].value, ops)
    if op in ("mul", "mad") and ("lo" in ins.mods or "wide" in ins.mods):
        wide = "wide" in ins.mods
        sw = 32 if wide else w
        if wide and w != 32:
            return None  # mul.wide.s32 is typed by its sources
        a, c = srcs[0], srcs[1]
        if isinstance(a, ir.Imm) and not isinstance(c, ir.Imm):
            a, c = c, a
        if not isinstance(c, ir.Imm):
            # uniform * uniform (mad.lo ctaid, ntid, tid), or a run-varying row times a
            # uniform width (mad.lo tid.y, n, tid.x)
            x, y = get(a, sw), get(c, sw)
            k = all_known((x, y))
            if k is not True:
                return k
            if wide:
                return None
            if x.lanes.uniform and y.lanes.uniform:
                p = Value(Lanes(w), ops.mul2(x.u, y.u, w))
            else:
                if x.lanes.uniform:
                    x, y = y, x
                p = _scale_dyn(x, y, ops)
                if p is None:
                    return None
            if op == "mul":
                return p
            if len(srcs) != 3:
                return None
            z = get(srcs[2], w)
            k = all_known((z,))
            if k is not True:
                return k
            return _add(p, z, ops)
        x = get(a, sw)
        if x is None or x is TOP:
            return x
        if wide:
            kind = "s" if types[-1][0] == "s" else "z"
            cc = signed(c.value, 32) if kind == "s" else c.value & 0xFFFFFFFF
            if x.lanes.uniform:
                return None  # a uniform product is not varying (the divergence pass says so)
            p = _widen(x, kind, cc, ops)
            rw = 64
        else:
            p = _scale(x, c.value, ops)
            rw = w
        if p is None or op == "mul":
            return p
        if len(srcs) != 3:
            return None
        z = get(srcs[2], rw)
        k = all_known((z,))
        if k is not True:
            return k
        return _add(p, z, ops)
    return None


TOP = object()  # not known yet (the optimistic start of the fixed point)
UNIFORM_GUARD = object()


def analyze(cfg: Cfg, div: Divergence, block: tuple[int, int, int], regs: dict[str, str],
            live: list[set[str]]) -> dict[str, Lanes]:
    """The exact form of every varying register that has one (see the module docstring);
    `live`: live-in sets (passes/liveness.py)."""
    from .liveness import wait_points

    nx, ny, _ = block
    seg = segment_length(block)
    waits = sorted(wait_points(cfg, div))
    candidates: dict[str, list[tuple[ir.Instr, int]]] = {}
    excluded: set[str] = set()

    def read_later(name: str, index: int) -> bool:
        return any(w > index and name in live[w] for w in waits)

    for b in cfg.blocks:
        split = b.index in div.split_blocks
        for ins in b.instrs:
            ds = defs(ins)
            for r in ds:
                if r.name not in div.varying:
                    continue
                if (len(ds) != 1 or width_of(regs.get(r.name, "")) is None
                        or (split and read_later(r.name, b.index))):
                    excluded.add(r.name)
                candidates.setdefault(r.name, []).append((ins, b.index))
    forms: dict[str, object] = {r: TOP for r in candidates if r not in excluded}
    specials = _special_forms(nx, ny, seg)

    def operand(o, w):
        if isinstance(o, ir.Reg):
            if w == 0:  # a guard: only a uniform one keeps a form
                return UNIFORM_GUARD if o.name not in div.varying else None
            rt = width_of(regs.get(o.name, ""))
            if rt is None or rt != w:
                return None
            if o.name not in div.varying:
                return Value(Lanes(w))
            v = forms.get(o.name)
            if isinstance(v, Value) and v.lanes.uniform:
                # equal in every running lane (a counter of a loop with a divergent exit):
                # uniform forms are not kept, the emitter holds it as 32 lanes, so a form
                # derived from it would have no leaves (differential d07_k030)
                return None
            return v
        if isinstance(o, ir.Imm):
            return Value(Lanes(w))
        if isinstance(o, (ir.Sym, ir.SymAddr)):
            return Value(Lanes(w))
        if isinstance(o, ir.Special):
            lanes = specials.get(o.name)
            if lanes is not None:
                return Value(lanes) if w == 32 else None
            from .divergence import special_is_varying

            return None if special_is_varying(o.name, block) else Value(Lanes(w))
        return None

    ops = Leaves()
    changed = True
    while changed:
        changed = False
        for r in list(forms):
            result: object = TOP
            for ins, _ in candidates[r]:
                v = transfer(ins, operand, ops)
                if v is None:
                    result = None
                    break
                if v is TOP:
                    continue
                if result is TOP:
                    result = v.lanes
                elif result != v.lanes:
                    result = None
                    break
            old_v = forms[r]
            if result is None or (isinstance(old_v, Value) and result is not TOP and old_v.lanes != result):
                del forms[r]  # no form: its users lose theirs in the next rounds
                changed = True
            elif result is not TOP and old_v is TOP:
                forms[r] = Value(result)
                changed = True
    return {r: v.lanes for r, v in forms.items() if isinstance(v, Value) and not v.lanes.uniform}


def _special_forms(nx: int, ny: int, seg: int | None) -> dict[str, Lanes]:
    """Special registers with an exact form (their leaves: backends/cpu/lanes.py)."""
    out = {"%laneid": Lanes.make(32, 1, seg or W)}
    if seg is None:
        return out
    out["%tid.x"] = Lanes.make(32, 1, 0)
    if seg < W and (nx * ny) % W == 0:
        out["%tid.y"] = Lanes.make(32, 0, 1)
    return out
