"""Predict how each varying register's value changes across the lanes of a warp.

Needs: a Cfg and its Divergence. Leaves: `predict(...)` → register → `Shape(kx, kl)` or
None, meaning `value = f(tid.y, tid.z, uniform values) + kx * tid.x + kl * laneid`, with
kx and kl compile-time constants. That is what the memory lowering needs: with the block
shape the kernel is compiled for, an address with kx == element size is contiguous in
runs of `ntid.x` lanes, one with kx == kl == 0 is the same for all lanes of a run, and so on.

The prediction is a *hint*, never trusted: the memory lowering checks at run time that
the addresses really have the predicted pattern before it uses vector loads and stores
instead of gathers and scatters, and falls back when they do not. So the rules ignore
overflow and wrap-around; they only have to be right for the common cases.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..isa.operands import defs
from ..ptx import ir
from .cfg import Cfg
from .divergence import Divergence

W = 32


@dataclass(frozen=True)
class Shape:
    kx: int  # coefficient of tid.x
    kl: int  # coefficient of %laneid


UNIFORM = Shape(0, 0)
_TOP = object()  # not known yet (optimistic start of the fixed point)


def segment_length(block: tuple[int, int, int]) -> int | None:
    """Lanes per run of equal (tid.y, tid.z) inside a warp, if runs are regular."""
    nx = block[0]
    if nx % W == 0:
        return W
    if W % nx == 0:
        return nx
    return None


def predict(cfg: Cfg, div: Divergence, block: tuple[int, int, int]) -> dict[str, Shape | None]:
    fn = cfg.fn
    nx = block[0]
    specials = {"%tid.x": Shape(1, 0), "%laneid": Shape(0, 1)}
    shapes: dict[str, object] = {}
    defs_of: dict[str, list[ir.Instr]] = {}
    for b in cfg.blocks:
        for ins in b.instrs:
            for r in defs(ins):
                defs_of.setdefault(r.name, []).append(ins)

    def src(o):
        if isinstance(o, ir.Reg):
            if o.name not in div.varying:
                return UNIFORM
            return shapes.get(o.name, _TOP)
        if isinstance(o, ir.Special):
            if o.name in specials:
                return specials[o.name]
            if o.name.startswith(("%tid.y", "%tid.z", "%ctaid", "%nctaid", "%ntid", "%warpid")):
                return UNIFORM
            return None
        if isinstance(o, (ir.Imm, ir.Sym, ir.SymAddr, ir.FImm)):
            return UNIFORM
        return None

    def const(o) -> int | None:
        return o.value if isinstance(o, ir.Imm) else None

    def lin(a: Shape, b: Shape, f) -> Shape:
        return Shape(f(a.kx, b.kx), f(a.kl, b.kl))

    def scale(a: Shape, k: int) -> Shape:
        return Shape(a.kx * k, a.kl * k)

    def evaluate(ins: ir.Instr):
        op = ins.op
        args = ins.args
        if ins.guard is not None or len(args) < 2 or isinstance(args[0], (ir.Vec, ir.PredPair)):
            return None
        if any(m in ("f16", "f32", "f64", "bf16", "f16x2") for m in ins.mods) and op != "cvta":
            return None
        srcs = [src(a) for a in args[1:]]
        if any(s is None for s in srcs):
            # lane-varying operands with unknown shape: only uniform results survive
            return None
        if any(s is _TOP for s in srcs):
            return _TOP
        if op in ("mov", "cvta", "cvt"):
            return srcs[0]
        if op in ("add", "sub") and len(srcs) == 2:
            return lin(srcs[0], srcs[1], (lambda x, y: x + y) if op == "add" else (lambda x, y: x - y))
        if op == "shl" and len(srcs) == 2:
            k = const(args[2])
            if k is None:
                return UNIFORM if srcs[0] == UNIFORM and srcs[1] == UNIFORM else None
            if not 0 <= k < 64:  # shifted out (PTX clamps the amount); 1 << 2**40 is no shape
                return None
            return scale(srcs[0], 1 << k)
        if op in ("mul", "mad") and ("lo" in ins.mods or "wide" in ins.mods):
            a, c = srcs[0], srcs[1]
            if a == UNIFORM and c == UNIFORM:
                p = UNIFORM
            elif const(args[2]) is not None:
                p = scale(a, const(args[2]))
            elif const(args[1]) is not None:
                p = scale(c, const(args[1]))
            elif a.kx == a.kl == 0 and c.kx == c.kl == 0:
                p = UNIFORM  # f(ty, tz) * g(ty, tz): still constant along a run
            else:
                return None
            if op == "mad":
                p = lin(p, srcs[2], lambda x, y: x + y)
            return p
        if all(s == UNIFORM for s in srcs) and op in ("and", "or", "xor", "shr", "div", "rem", "min", "max", "selp"):
            return UNIFORM
        return None

    varying = [r for r in defs_of if r in div.varying]
    for _ in range(10):  # a few rounds reach the fixed point for real code
        changed = False
        for name in varying:
            old = shapes.get(name, _TOP)
            if old is None:
                continue
            new = _TOP
            for ins in defs_of[name]:
                v = evaluate(ins) if len(defs(ins)) == 1 else None
                if v is None:
                    new = None
                    break
                if v is _TOP:
                    continue
                if new is _TOP:
                    new = v
                elif new != v:
                    new = None
                    break
            if new != old:
                shapes[name] = new
                changed = True
        if not changed:
            break
    del fn, nx
    return {k: (v if isinstance(v, Shape) else None) for k, v in shapes.items()}


def block_strides(cfg: Cfg) -> dict[str, int]:
    """How each register changes from a block to the next along x: register → c where the
    register's value is `f(everything but %ctaid.x) + c * %ctaid.x` (c a compile-time
    constant, not 0), for registers computed from %ctaid.x by mov/cvt/cvta, add/sub, shl and
    mul/mad by constants, loops' induction variables included. Like `predict`, a hint for
    the memory lowering (the address a load will have some blocks later, to prefetch), never
    trusted: overflow is ignored, and so are loads (taken as not depending on %ctaid.x)."""
    defs_of: dict[str, list[ir.Instr]] = {}
    for b in cfg.blocks:
        for ins in b.instrs:
            for r in defs(ins):
                defs_of.setdefault(r.name, []).append(ins)
    strides: dict[str, object] = {}  # int, None (no such c), or _TOP (not known yet)

    def src(o):
        if isinstance(o, ir.Reg) and o.name in defs_of:
            return strides.get(o.name, _TOP)
        if isinstance(o, ir.Special):
            return 1 if o.name == "%ctaid.x" else 0
        return 0

    def evaluate(ins: ir.Instr):
        op, args = ins.op, ins.args
        if len(args) < 2 or len(defs(ins)) != 1 or any(isinstance(a, (ir.Vec, ir.Mem)) for a in args[1:]):
            return 0
        cs = [src(a) for a in args[1:]]
        if any(c is None for c in cs):
            return None
        if any(c is _TOP for c in cs):
            return _TOP
        imm = [a.value if isinstance(a, ir.Imm) else None for a in args[1:]]
        if op in ("mov", "cvt", "cvta") and len(cs) == 1:
            return cs[0]
        if op in ("add", "sub") and len(cs) == 2:
            return cs[0] + cs[1] if op == "add" else cs[0] - cs[1]
        if op == "shl" and len(cs) == 2 and imm[1] is not None and 0 <= imm[1] < 64:
            return cs[0] << imm[1]
        if op in ("mul", "mad") and ("lo" in ins.mods or "wide" in ins.mods):
            if not cs[0] and not cs[1]:
                k = 0
            elif cs[0] and not cs[1] and imm[1] is not None:
                k = cs[0] * imm[1]
            elif cs[1] and not cs[0] and imm[0] is not None:
                k = cs[1] * imm[0]
            else:
                return None
            return k if op == "mul" else k + cs[2]
        return None if any(cs) else 0

    for _ in range(10):  # a few rounds reach the fixed point for real code
        changed = False
        for name, ins_list in defs_of.items():
            if strides.get(name, _TOP) is None:
                continue
            vals = {evaluate(ins) for ins in ins_list} - {_TOP}
            new = _TOP if not vals else (vals.pop() if len(vals) == 1 else None)
            if new is not _TOP and new != strides.get(name, _TOP):
                strides[name] = new
                changed = True
        if not changed:
            break
    return {k: v for k, v in strides.items() if isinstance(v, int) and v}


def access_pattern(shape: Shape | None, size: int, block: tuple[int, int, int]) -> tuple[str, int] | None:
    """How the 32 addresses of a warp-wide access of `size`-byte elements lie in memory.

    ("contiguous", S): runs of S lanes at consecutive elements (S = 32: one vector);
    ("broadcast", S): runs of S lanes share one address; None: no known structure.
    """
    if shape is None:
        return None
    seg = segment_length(block)
    if shape.kl == size and shape.kx == 0:
        return ("contiguous", W) if seg == W else None
    if shape.kl != 0:
        return None
    if seg is None:
        return None
    if shape.kx == size:
        return ("contiguous", seg)
    if shape.kx == 0:
        return ("broadcast", seg)
    return None
