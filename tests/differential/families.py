"""The kernel families beyond straight-line arithmetic, and which family makes each kernel.

Each family returns a Kernel whose `ref(pools, got)` gives the expected outputs where Python
can model them (None where it cannot): the per-thread semantics of the C++ written here,
lane by lane for warp collectives, phase by phase (between barriers) for block-level code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import hostref as H
import kernelgen as K
import ops as O
from dtypes import POOL_N, POOLED, TYPES, Rng

WEIGHTS = [("arith", 44), ("ctrl", 16), ("warp", 14), ("shared", 10), ("atomics", 8), ("barrier", 4), ("regress", 4)]


def make(name: str, r: Rng, spec) -> K.Kernel:
    fam = r.weighted(WEIGHTS)
    if fam == "regress":
        return regress_kernel(name, r, spec.ftz, "managed" in spec.features)
    return MAKERS[fam](name, r, spec.ftz)


class Unknown(Exception):
    """A thread's path depends on a value the reference does not model."""


def _ref_ops(out: str, need: str | None = None, exact_only: bool = True) -> list[O.Op]:
    """Operations giving `out` (from a `need` operand) that the reference models; the inline-PTX
    spellings of issue 8 are left to the regress family, so that they fail no other kernel."""
    return [o for o in O.OPS.values() if o.out == out and (need is None or need in o.args)
            and (o.ref is not None or not exact_only) and "pred" not in o.args and "spelling" not in o.tags]


# ================================================================ control flow
ACC_TYPES = ["u32", "i32", "u64", "i64", "u16", "i8", "f32", "f64"]


@dataclass
class Operand:
    kind: str            # "acc", "load", "iter", "lit"
    ref: object = None   # acc index, Load, loop depth, literal
    dtype: str = ""

    def c(self, accs) -> str:
        if self.kind == "acc":
            return accs[self.ref][0]
        if self.kind == "load":
            return self.ref.var
        if self.kind == "iter":
            return f"({TYPES[self.dtype].c})i{self.ref}"
        return f"({TYPES[self.dtype].c}){self.ref}u"

    def value(self, st: dict, pools, g, b, p):
        if self.kind == "acc":
            return st["acc"][self.ref]
        if self.kind == "load":
            return self.ref.value(pools, g, b, p)
        if self.kind == "iter":
            return st["iter"][self.ref] & TYPES[self.dtype].mask
        return self.ref & TYPES[self.dtype].mask


@dataclass
class Upd:
    acc: int
    op: O.Op
    args: list[Operand]


@dataclass
class Cond:
    op: O.Op
    args: list[Operand]


@dataclass
class If:
    cond: Cond
    then: list
    other: list


@dataclass
class Loop:
    depth: int
    count: Operand | None   # a u32 operand (its low 3 bits + base) or None for `base` trips
    base: int
    body: list
    brk: Cond | None = None


@dataclass
class Switch:
    sel: Operand
    cases: list            # list of (body, falls_through)


@dataclass
class StoreAcc:
    acc: int
    out: K.Out


@dataclass
class Ctrl:
    accs: list[tuple[str, str]]                     # (name, dtype)
    phases: list = field(default_factory=list)      # ("stmts", list) | ("exchange", i, j, op, perm) | ("ret", Cond)


class CtrlGen:
    def __init__(self, kb: K.Builder) -> None:
        self.kb = kb
        self.r = kb.r
        self.loads: list[K.Load] = []
        self.npair = [0]
        self.depth = 0
        self.scope = 0  # loads declared inside a { } block are not visible after it
        self.accs: list[tuple[str, str]] = []

    def operand(self, dtype: str, avoid_acc: int | None = None) -> Operand:
        r = self.r
        cands = [i for i, (_, t) in enumerate(self.accs) if t == dtype and i != avoid_acc]
        k = r.below(10)
        if cands and k < 4:
            return Operand("acc", r.choice(cands), dtype)
        if self.depth and k < 5 and TYPES[dtype].kind == "int":
            return Operand("iter", r.below(self.depth), dtype)
        if k < 6 and TYPES[dtype].kind == "int":
            return Operand("lit", r.choice([0, 1, 2, 3, 7, 31, 32, 255, 0xFFFF, 0x80000000]), dtype)
        same = [ld for ld in self.loads if ld.dtype == dtype]
        if same and r.chance(0.3):
            return Operand("load", r.choice(same), dtype)
        ld = K.new_load(self.kb, dtype, self.npair)
        if self.scope == 0:
            self.loads.append(ld)
        return Operand("load", ld, dtype)

    def upd(self) -> Upd:
        i = self.r.below(len(self.accs))
        t = self.accs[i][1]
        ops_ = _ref_ops(t, t)
        op = self.r.choice(ops_)
        first = True
        args = []
        for a in op.args:
            if a == t and first:
                args.append(Operand("acc", i, t))
                first = False
            else:
                args.append(self.operand(a))
        return Upd(i, op, args)

    def cond(self) -> Cond:
        i = self.r.below(len(self.accs))
        t = self.accs[i][1]
        cmps = [o for o in O.OPS.values() if o.out == "pred" and o.ref is not None and o.args and o.args[0] == t
                and "pred" not in o.args and "spelling" not in o.tags]
        if not cmps:
            cmps = [O.OPS["cmp<.u32"]]
            t = "u32"
        op = self.r.choice(cmps)
        args = [Operand("acc", i, t) if j == 0 and self.accs[i][1] == op.args[0] else self.operand(a)
                for j, a in enumerate(op.args)]
        return Cond(op, args)

    def block(self, n: int) -> list:
        out = []
        for _ in range(n):
            k = self.r.below(20)
            if self.depth < 3 and k < 3:
                self.depth_push()
                out.append(If(self.cond(), self.block(self.r.range(1, 3)),
                              self.block(self.r.range(0, 2)) if self.r.chance(0.6) else []))
                self.depth_pop()
            elif self.depth < 3 and k < 5:
                d = self.depth
                cnt = self.operand("u32") if self.r.chance(0.7) else None
                self.depth_push(loop=True)
                body = self.block(self.r.range(1, 3))
                brk = self.cond() if self.r.chance(0.4) else None
                self.depth_pop(loop=True)
                out.append(Loop(d, cnt, self.r.range(0, 3), body, brk))
            elif self.depth < 3 and k < 6:
                self.depth_push()
                sel = self.operand("u32")
                cases = [(self.block(self.r.range(0, 2)), self.r.chance(0.3)) for _ in range(self.r.range(2, 4))]
                self.depth_pop()
                out.append(Switch(sel, cases))
            elif k < 8 and self.depth:
                out.append(StoreAcc(self.r.below(len(self.accs)), None))
            else:
                out.append(self.upd())
        return out

    def depth_push(self, loop: bool = False) -> None:
        self.scope += 1
        if loop:
            self.depth += 1

    def depth_pop(self, loop: bool = False) -> None:
        self.scope -= 1
        if loop:
            self.depth -= 1


def _emit_block(kb: K.Builder, ctrl: Ctrl, nodes: list) -> None:
    accs = ctrl.accs
    for n in nodes:
        if isinstance(n, Upd):
            kb.emit(f"{accs[n.acc][0]} = {kb.use(n.op).format(*[a.c(accs) for a in n.args])};")
            n.line = len(kb.lines) - 1
        elif isinstance(n, If):
            kb.emit(f"if ({kb.use(n.cond.op).format(*[a.c(accs) for a in n.cond.args])}) {{")
            kb.indent += 1
            _emit_block(kb, ctrl, n.then)
            kb.indent -= 1
            if n.other:
                kb.emit("} else {")
                kb.indent += 1
                _emit_block(kb, ctrl, n.other)
                kb.indent -= 1
            kb.emit("}")
        elif isinstance(n, Loop):
            cnt = f"({n.count.c(accs)} & 7u) + {n.base}u" if n.count else f"{n.base + 1}u"
            kb.emit(f"for (unsigned i{n.depth} = 0, n{n.depth} = {cnt}; i{n.depth} < n{n.depth}; ++i{n.depth}) {{")
            kb.indent += 1
            _emit_block(kb, ctrl, n.body)
            if n.brk:
                kb.emit(f"if ({kb.use(n.brk.op).format(*[a.c(accs) for a in n.brk.args])}) break;")
            kb.indent -= 1
            kb.emit("}")
        elif isinstance(n, Switch):
            kb.emit(f"switch ({n.sel.c(accs)} % {len(n.cases) + 1}u) {{")
            for ci, (body, falls) in enumerate(n.cases):
                kb.emit(f"case {ci}u: {{")
                kb.indent += 1
                _emit_block(kb, ctrl, body)
                if not falls:
                    kb.emit("break;")
                kb.indent -= 1
                kb.emit("}" + (" // falls through" if falls else ""))
            kb.emit("default: break;")
            kb.emit("}")
        elif isinstance(n, StoreAcc):
            name, t = accs[n.acc]
            n.out = kb.out(t, kb.nt, f"{name} stored in a branch", len(kb.lines))
            kb.store(n.out, "g", name)


def _run_block(nodes: list, st: dict, pools, g, b, p, res: dict, ftz: bool = False) -> None:
    """Execute nodes for one thread; raises Unknown when a decision depends on an unknown value."""
    accs = st["acc"]

    def val(o: Operand):
        v = o.value(st, pools, g, b, p)
        return v

    def ev(op, args):
        r = K.apply(op, [val(a) for a in args], ftz)
        return None if r == H.ANYNAN else r

    def decide(c: Cond) -> bool:
        v = ev(c.op, c.args)
        if v is None:
            raise Unknown
        return bool(v)

    for n in nodes:
        if isinstance(n, Upd):
            accs[n.acc] = ev(n.op, n.args)
        elif isinstance(n, If):
            _run_block(n.then if decide(n.cond) else n.other, st, pools, g, b, p, res, ftz)
        elif isinstance(n, Loop):
            if n.count is not None:
                c = val(n.count)
                if c is None:
                    raise Unknown
                trips = (c & 7) + n.base
            else:
                trips = n.base + 1
            for i in range(trips):
                st["iter"][n.depth] = i
                _run_block(n.body, st, pools, g, b, p, res, ftz)
                if n.brk and decide(n.brk):
                    break
        elif isinstance(n, Switch):
            s = val(n.sel)
            if s is None:
                raise Unknown
            sel = s % (len(n.cases) + 1)
            running = False
            for ci, (body, falls) in enumerate(n.cases):
                if ci == sel:
                    running = True
                if running:
                    _run_block(body, st, pools, g, b, p, res, ftz)
                    if not falls:
                        break
        elif isinstance(n, StoreAcc):
            res[n.out.name][g] = accs[n.acc]


PERMS = ["(t + {k}u) % nb", "nb - 1u - t", "(t ^ {k}u) < nb ? (t ^ {k}u) : t", "(t * {m}u) % nb"]


def _perm(kind: int, k: int, m: int, t: int, nb: int) -> int:
    if kind == 0:
        return (t + k) % nb
    if kind == 1:
        return nb - 1 - t
    if kind == 2:
        return (t ^ k) if (t ^ k) < nb else t
    return (t * m) % nb


def ctrl_kernel(name: str, r: Rng, ftz: bool = False) -> K.Kernel:
    grid, block = K.shape(r, max_threads=256)
    kb = K.Builder(name, r, grid, block)
    cg = CtrlGen(kb)
    nacc = r.range(2, 4)
    types = [r.choice(ACC_TYPES) for _ in range(nacc)]
    inits = []
    for i, t in enumerate(types):
        ld = K.new_load(kb, t, cg.npair)
        cg.loads.append(ld)
        kb.emit(f"{TYPES[t].c} c{i} = {ld.var};")
        cg.accs.append((f"c{i}", t))
        inits.append(ld)
    ctrl = Ctrl(cg.accs)
    nb = kb.nb
    # phases: statements, barrier exchanges through shared memory (uniform), a uniform loop
    # around both, an early return after the last barrier
    shared_decl = {}
    nph = r.range(1, 3)
    for _ in range(nph):
        ctrl.phases.append(("stmts", cg.block(r.range(2, 5))))
        if r.chance(0.6):
            i, j = r.below(nacc), r.below(nacc)
            ti, tj = types[i], types[j]
            comb = [o for o in _ref_ops(tj, tj) if len(o.args) == 2 and o.args == (tj, tj)]
            op = r.choice(comb) if comb else None
            perm = (r.below(4), r.range(1, 9), r.choice([3, 5, 7, 11]))
            while perm[0] == 3 and _gcd(perm[2], nb) != 1:
                perm = (perm[0], perm[1], perm[2] + 2)
            shared_decl[ti] = True
            rounds = r.range(1, 3) if r.chance(0.4) else 1
            ctrl.phases.append(("exchange", i, j, op, perm, rounds))
    if r.chance(0.5):
        ctrl.phases.append(("ret", cg.cond()))
        ctrl.phases.append(("stmts", cg.block(r.range(1, 3))))
    for t in shared_decl:
        kb.emit(f"__shared__ {TYPES[t].c} sh_{t}[{nb}];")
    for ph in ctrl.phases:
        if ph[0] == "stmts":
            _emit_block(kb, ctrl, ph[1])
        elif ph[0] == "exchange":
            _, i, j, op, (pk, k, m), rounds = ph
            ti = types[i]
            loop = rounds > 1
            if loop:
                kb.emit(f"for (unsigned rr = 0; rr < (p & 1u) + {rounds - 1}u; ++rr) {{")
                kb.indent += 1
            src = PERMS[pk].format(k=k, m=m)
            kb.emit(f"sh_{ti}[{src}] = c{i};")
            kb.emit("__syncthreads();")
            tj = types[j]
            # a defined conversion: C++ casts between integers and from integers or floats to
            # floats; a float becomes an integer through its bits (a cast would be undefined
            # out of range)
            cast = f"({TYPES[tj].c})B(sh_{ti}[t])" if TYPES[ti].kind == "float" and TYPES[tj].kind == "int" \
                else f"({TYPES[tj].c})sh_{ti}[t]"
            if op is not None:
                kb.emit(f"c{j} = {kb.use(op).format(f'c{j}', cast)};")
            else:
                kb.emit(f"c{j} = {cast};")
            kb.emit("__syncthreads();")
            if loop:
                kb.indent -= 1
                kb.emit("}")
        else:
            c = ph[1]
            kb.emit(f"if ({kb.use(c.op).format(*[a.c(ctrl.accs) for a in c.args])}) return;")
    finals = []
    for nm, t in ctrl.accs:
        o = kb.out(t, kb.nt, f"final {nm}", len(kb.lines))
        kb.store(o, "g", nm)
        finals.append(o)
    param = kb.param

    def ref(pools, got=None):
        res = {o.name: [0] * o.count for o in kb.outs}
        for blk in range(kb.nt // nb):
            sts = []
            alive = []
            for t in range(nb):
                g = blk * nb + t
                sts.append({"acc": [ld.value(pools, g, blk, param) for ld in inits], "iter": {}})
                alive.append(True)
            unknown = [False] * nb
            for ph in ctrl.phases:
                if ph[0] in ("stmts", "ret"):
                    for t in range(nb):
                        if not alive[t] or unknown[t]:
                            continue
                        g = blk * nb + t
                        try:
                            if ph[0] == "stmts":
                                _run_block(ph[1], sts[t], pools, g, blk, param, res, ftz)
                            else:
                                c = ph[1]
                                v = K.apply(c.op, [a.value(sts[t], pools, g, blk, param) for a in c.args], ftz)
                                if v is None or v == H.ANYNAN:
                                    raise Unknown
                                if v:
                                    alive[t] = False
                        except Unknown:
                            unknown[t] = True
                else:
                    _, i, j, op, (pk, k, m), rounds = ph
                    n = rounds if rounds == 1 else (param & 1) + rounds - 1
                    for _ in range(n):
                        sh = [None] * nb
                        for t in range(nb):
                            sh[_perm(pk, k, m, t, nb)] = None if unknown[t] else sts[t]["acc"][i]
                        for t in range(nb):
                            if unknown[t]:
                                continue
                            v = sh[t]
                            if v is not None:
                                v = H.sx(v, TYPES[types[i]].bits) if TYPES[types[i]].signed else v
                                v = _convert(v, types[i], types[j])
                            cur = sts[t]["acc"][j]
                            if op is None:
                                sts[t]["acc"][j] = v
                            else:
                                rv = K.apply(op, [cur, v], ftz)
                                sts[t]["acc"][j] = None if rv == H.ANYNAN else rv
            for t in range(nb):
                g = blk * nb + t
                if unknown[t]:  # whatever it stored may have been stored over later
                    for o in kb.outs:
                        res[o.name][g] = None
                    continue
                if alive[t]:
                    for i, o in enumerate(finals):
                        res[o.name][g] = sts[t]["acc"][i]
        return res

    return kb.kernel("ctrl", ref)


def _convert(v: int, src: str, dst: str):
    """The exchange's conversion between two accumulator types (v: the source's bits, already
    sign-extended when signed): integer casts wrap, integers and floats round to floats, a
    float gives an integer its bits."""
    s, d = TYPES[src], TYPES[dst]
    if src == dst:
        return v & d.mask
    if d.kind == "int":
        return v & d.mask
    if s.kind == "int":
        return H.i2f(v, d.fmt, "rn")
    r = H.f2f(v, s.fmt, d.fmt)
    return None if r == H.ANYNAN else r


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


# ================================================================ warp collectives
SHFL_TYPES = ["u32", "i32", "f32", "u64", "f64", "i64", "h2"]


def _shfl_src(mode: str, lane: int, b: int, width: int) -> int:
    """The lane a shfl reads (PTX shfl.sync with CUDA's clamp values), or lane itself. Only
    the low 5 bits of the lane operand count (the ISA's bval[4:0])."""
    b &= 31
    seg = 32 - width
    minl = lane & seg
    if mode == "up":
        j = lane - b
        return j if j >= minl else lane
    maxl = minl | (31 & ~seg)
    if mode == "down":
        j = lane + b
    elif mode == "xor":
        j = lane ^ b
    else:
        j = minl | (b & 31 & ~seg)
    return j if j <= maxl else lane


def warp_kernel(name: str, r: Rng, ftz: bool = False) -> K.Kernel:
    partial = r.chance(0.2)
    grid, block = K.shape(r, warp_multiple=not partial, max_threads=256)
    if partial and block[0] * block[1] * block[2] % 32 == 0:
        block = (block[0] * block[1] * block[2] - r.range(1, 31), 1, 1)
    kb = K.Builder(name, r, grid, block)
    nb = kb.nb
    npair = [0]
    kb.emit("const unsigned lane = t & 31u;")
    kb.emit("const unsigned nl = min(32u, nb - (t & ~31u));")
    kb.emit("const unsigned wm = nl == 32u ? FULL : (1u << nl) - 1u;")
    kb.emit("(void)lane; (void)wm;")
    vals: dict[str, list[str]] = {}
    aliases: dict[str, tuple[str, str, str]] = {}
    model: list = []   # (kind, ...) statements for the reference
    loads: dict[str, K.Load] = {}

    inside = [False]

    def value(t: str) -> str:
        have = vals.get(t, [])
        if have and r.chance(0.5):
            return r.choice(have)
        ld = K.new_load(kb, t, npair)
        loads[ld.var] = ld
        if not inside[0]:
            vals.setdefault(t, []).append(ld.var)
        return ld.var

    def pred() -> tuple[str, str, int]:
        v = value("u32")
        k = r.choice([1, 3, 5, 16, 0x80000000])
        return v, f"(({v} & {k}u) != 0u)", k

    def result(t: str, expr: str, what: str, kind: tuple, cond_line: bool = False) -> str:
        v = kb.var("w")
        line = kb.emit(f"const {TYPES[t].c} {v} = {expr};")
        o = kb.out(t, kb.nt, what, line)
        kb.store(o, "g", v)
        model.append((v, o, kind))
        vals.setdefault(t, []).append(v)
        return v

    for _ in range(r.range(6, 14)):
        k = r.below(12)
        if k < 5 and not partial:
            t = r.choice(SHFL_TYPES)
            x = value(t)
            width = r.choice([32, 32, 16, 8, 4, 2])
            mode = r.choice(["idx", "up", "down", "xor"])
            if mode == "idx":
                sk = r.below(3)
                if sk == 0:
                    b_c, bk = f"{r.below(40)}", ("lit", None)
                    bk = ("lit", int(b_c))
                elif sk == 1:
                    m = r.choice([3, 5, 7, 31])
                    b_c, bk = f"(int)(lane * {m}u + 1u)", ("lane", m)
                else:
                    src = value("u32")
                    b_c, bk = f"(int)({src} & 63u)", ("data", src)
                expr = f"__shfl_sync(FULL, {x}, {b_c}, {width})"
            else:
                d = r.choice([0, 1, 2, 3, 5, 8, 16, 31, 33])
                fn = {"up": "__shfl_up_sync", "down": "__shfl_down_sync", "xor": "__shfl_xor_sync"}[mode]
                expr = f"{fn}(FULL, {x}, {d}u, {width})" if mode != "xor" else f"{fn}(FULL, {x}, {d}, {width})"
                bk = ("lit", d)
            result(t, expr, f"shfl.{mode} width {width}", ("shfl", mode, x, bk, width))
        elif k < 7:
            pv, pc, pk = pred()
            which = r.choice(["ballot", "any", "all"])
            fn = {"ballot": "__ballot_sync", "any": "__any_sync", "all": "__all_sync"}[which]
            t = "u32" if which == "ballot" else "i32"
            result(t, f"{fn}(wm, {pc})", which, ("vote", which, pv, pk))
        elif k < 9:
            t = r.choice(["u32", "i32"])
            opn = r.choice(["add", "min", "max"] + (["and", "or", "xor"] if t == "u32" else []))
            x = value(t)
            if r.chance(0.5):  # fewer distinct values, more interesting matches and reductions
                xs = kb.var("q")
                kb.emit(f"const {TYPES[t].c} {xs} = {x} % 5;")
                aliases[xs] = ("mod5", x, t)
                x = xs
            result(t, f"__reduce_{opn}_sync(wm, {x})", f"reduce.{opn}", ("reduce", opn, x, t))
        elif k < 11:
            t = r.choice(["u32", "u64", "f32", "i64"])
            x = value(t)
            if t in ("u32", "u64") and r.chance(0.6):
                xs = kb.var("q")
                kb.emit(f"const {TYPES[t].c} {xs} = {x} & 3u;")
                aliases[xs] = ("and3", x, t)
                x = xs
            if r.chance(0.5):
                result("u32", f"__match_any_sync(wm, {x})", "match.any", ("match_any", x))
            else:
                pvar = kb.var("mp")
                kb.emit(f"int {pvar};")
                result("u32", f"__match_all_sync(wm, {x}, &{pvar})", "match.all", ("match_all", x))
                o = kb.out("i32", kb.nt, "match.all predicate", len(kb.lines))
                kb.store(o, "g", pvar)
                model.append((pvar, o, ("match_all_pred", x)))
        else:
            # a divergent region whose collectives use the mask of the lanes inside it
            pv, pc, pk = pred()
            m = kb.var("m")
            kb.emit(f"const unsigned {m} = __ballot_sync(wm, {pc});")
            mo = kb.out("u32", kb.nt, "ballot of the branch condition", len(kb.lines) - 1)
            kb.store(mo, "g", m)
            model.append((m, mo, ("vote", "ballot", pv, pk)))
            kb.emit(f"if ({pc}) {{")
            kb.indent += 1
            inside[0] = True
            x = value("u32")
            inner = []
            for _ in range(r.range(1, 4)):
                kk = r.below(5)
                v = kb.var("d")
                if kk == 0:
                    e, kind = f"__shfl_sync({m}, {x}, __ffs({m}) - 1)", ("lowest", x)
                elif kk == 1:
                    e, kind = f"__reduce_add_sync({m}, {x})", ("dreduce", x)
                elif kk == 2:
                    e, kind = "__activemask()", ("active",)
                elif kk == 3:
                    e, kind = f"__ballot_sync({m}, ({x} & 2u) != 0u)", ("dballot", x)
                else:
                    e, kind = f"__match_any_sync({m}, {x} & 1u)", ("dmatch", x)
                line = kb.emit(f"const unsigned {v} = {e};")
                o = kb.out("u32", kb.nt, e.split("(")[0] + " in a divergent branch", line)
                kb.store(o, "g", v)
                inner.append((v, o, kind))
            inside[0] = False
            kb.indent -= 1
            kb.emit("}")
            kb.emit("__syncwarp(wm);")
            model.append((None, None, ("branch", pv, pk, inner)))
    param = kb.param

    def ref(pools, got=None):
        res = {o.name: [None] * o.count for o in kb.outs}
        for blk in range(kb.nblocks):
            for t0 in range(0, nb, 32):  # warps are formed within each block
                eval_warp(pools, blk, t0, res)
        return res

    def eval_warp(pools, blk: int, t0: int, res: dict) -> None:
        """The model's statements for the warp of block blk whose first thread is t0."""
        if True:
            n = min(32, nb - t0)
            lanes = range(n)
            env: dict[str, list] = {}

            def get(v, lane):
                if v in env:
                    return env[v][lane]
                if v in aliases:
                    how, src, t = aliases[v]
                    x = get(src, lane)
                    if x is None:
                        return None
                    if how == "mod5":  # C's % on the type (signed: truncating)
                        return H.trunc_rem(H.sx(x, 32), 5) & 0xFFFFFFFF if t == "i32" else x % 5
                    return x & 3
                ld = loads[v]
                return ld.value(pools, blk * nb + t0 + lane, blk, param)

            def run(stmt_list, active):
                for v, o, kind in stmt_list:
                    out = [None] * 32
                    kd = kind[0]
                    if kd == "shfl":
                        _, mode, x, bk, width = kind
                        for lane in active:
                            if bk[0] == "lit":
                                bb = bk[1]
                            elif bk[0] == "lane":
                                bb = (lane * bk[1] + 1) & 0xFFFFFFFF
                            else:
                                s = get(bk[1], lane)
                                bb = None if s is None else s & 63
                            if bb is None:
                                continue
                            out[lane] = get(x, _shfl_src(mode, lane, bb, width))
                    elif kd == "vote":
                        _, which, pv, pk = kind
                        ps = [get(pv, lane) for lane in active]
                        if None not in ps:
                            bits = sum(1 << lane for lane, pvv in zip(active, ps, strict=True) if pvv & pk)
                            v_ = {"ballot": bits, "any": int(bits != 0),
                                  "all": int(bits == sum(1 << lane for lane in active))}[which]
                            for lane in active:
                                out[lane] = v_
                    elif kd == "reduce":
                        _, opn, x, t = kind
                        xs = [get(x, lane) for lane in active]
                        if None not in xs:
                            sv = [H.sx(x_, 32) if t == "i32" else x_ for x_ in xs]
                            acc = REDUCE[opn](sv)
                            for lane in active:
                                out[lane] = acc & 0xFFFFFFFF
                    elif kd in ("match_any", "match_all", "match_all_pred"):
                        x = kind[1]
                        xs = {lane: get(x, lane) for lane in active}
                        if None not in xs.values():
                            for lane in active:
                                same = sum(1 << m2 for m2 in active if xs[m2] == xs[lane])
                                alls = len(set(xs.values())) == 1
                                full = sum(1 << m2 for m2 in active)
                                out[lane] = {"match_any": same, "match_all": full if alls else 0,
                                             "match_all_pred": int(alls)}[kd]
                    elif kd == "branch":
                        _, pv, pk, inner = kind
                        ps = {lane: get(pv, lane) for lane in active}
                        if None in ps.values():
                            continue
                        sub = [lane for lane in active if ps[lane] & pk]
                        m = sum(1 << lane for lane in sub)
                        for _iv, io, ik in inner:
                            o2 = [None] * 32
                            if ik[0] == "lowest":
                                src = (m & -m).bit_length() - 1
                                for lane in sub:
                                    o2[lane] = get(ik[1], src)
                            elif ik[0] == "dreduce":
                                xs = [get(ik[1], lane) for lane in sub]
                                if None not in xs:
                                    for lane in sub:
                                        o2[lane] = sum(xs) & 0xFFFFFFFF
                            elif ik[0] == "active":
                                for lane in sub:
                                    o2[lane] = m
                            elif ik[0] == "dballot":
                                xs = {lane: get(ik[1], lane) for lane in sub}
                                if None not in xs.values():
                                    bm = sum(1 << lane for lane in sub if xs[lane] & 2)
                                    for lane in sub:
                                        o2[lane] = bm
                            else:
                                xs = {lane: get(ik[1], lane) for lane in sub}
                                if None not in xs.values():
                                    for lane in sub:
                                        o2[lane] = sum(1 << m2 for m2 in sub if xs[m2] & 1 == xs[lane] & 1)
                            for lane in active:
                                res[io.name][blk * nb + t0 + lane] = o2[lane] if lane in sub else 0
                        continue
                    env[v] = out
                    for lane in active:
                        res[o.name][blk * nb + t0 + lane] = out[lane]
            run(model, list(lanes))

    return kb.kernel("warp", ref)


def _fold(xs, f):
    """f folded over xs, left to right."""
    acc = xs[0]
    for x in xs[1:]:
        acc = f(acc, x)
    return acc


REDUCE = {"add": lambda s: sum(s) & 0xFFFFFFFF, "min": min, "max": max,
          "and": lambda s: _fold(s, lambda x, y: x & y), "or": lambda s: _fold(s, lambda x, y: x | y),
          "xor": lambda s: _fold(s, lambda x, y: x ^ y)}


# ================================================================ shared memory
SHARED_TYPES = ["u8", "i16", "u32", "i32", "u64", "f32", "f64", "h2"]


def shared_kernel(name: str, r: Rng, ftz: bool = False) -> K.Kernel:
    kind = r.weighted([("permute", 4), ("reduce", 3), ("dynamic", 2), ("atomics", 2), ("tile", 1)])
    if kind == "tile":
        side = r.choice([8, 16])
        grid, block = r.choice([(1, 1), (2, 1)]), (side, side, 1)
    else:
        grid, block = K.shape(r, max_threads=256)
    dyn = 0
    kb = K.Builder(name, r, grid, block)
    nb = kb.nb
    npair = [0]
    param = kb.param
    if kind in ("permute", "dynamic"):
        t1, t2 = r.choice(SHARED_TYPES), r.choice(SHARED_TYPES)
        a = K.new_load(kb, t1, npair)
        c = K.new_load(kb, t2, npair)
        if kind == "permute":
            kb.emit(f"__shared__ {TYPES[t1].c} s1[{nb}];")
            kb.emit(f"__shared__ {TYPES[t2].c} s2[{nb + 3}];")
        else:
            big = r.chance(0.15)
            pad = 56 * 1024 if big else r.choice([0, 8, 40])
            off2 = ((nb * TYPES[t1].bits // 8 + 7) // 8 * 8) + pad
            dyn = off2 + (nb + 3) * TYPES[t2].bits // 8 + 8
            kb.dyn_smem = dyn
            kb.emit("extern __shared__ __align__(16) unsigned char dsm[];")
            kb.emit(f"{TYPES[t1].c}* s1 = ({TYPES[t1].c}*)dsm;")
            kb.emit(f"{TYPES[t2].c}* s2 = ({TYPES[t2].c}*)(dsm + {off2});")
        pk1, k1, m1 = r.below(4), r.range(1, 9), _coprime(r, nb)
        pk2, k2, m2 = r.below(4), r.range(1, 9), _coprime(r, nb)
        w1 = PERMS[pk1].format(k=k1, m=m1)
        w2 = PERMS[pk2].format(k=k2, m=m2)
        kb.emit(f"s1[{w1}] = {a.var};")
        kb.emit(f"s2[{w2}] = {c.var};")
        kb.emit(f"if (t < 3u) s2[{nb}u + t] = {c.var};")
        kb.emit("__syncthreads();")
        rd = r.choice([1, 2, 5])
        o1 = kb.out(t1, kb.nt, "s1 read back", len(kb.lines))
        kb.store(o1, "g", f"s1[(t + {rd}u) % nb]")
        o2 = kb.out(t2, kb.nt, "s2 read back", len(kb.lines))
        kb.store(o2, "g", "s2[t + 3u]")
        kb.emit(f"const {TYPES[t1].c} rev = s1[nb - 1u - t];")
        kb.emit("__syncthreads();")
        kb.emit("s1[t] = rev;")
        kb.emit("__syncthreads();")
        o3 = kb.out(t1, kb.nt, "s1 reversed in place", len(kb.lines))
        kb.store(o3, "g", "s1[t]")

        def ref(pools, got=None):
            res = {o.name: [None] * o.count for o in kb.outs}
            for blk in range(kb.nt // nb):
                s1 = [None] * nb
                s2 = [None] * (nb + 3)
                for t in range(nb):
                    g = blk * nb + t
                    s1[_perm(pk1, k1, m1, t, nb)] = a.value(pools, g, blk, param)
                    s2[_perm(pk2, k2, m2, t, nb)] = c.value(pools, g, blk, param)
                for t in range(3):
                    s2[nb + t] = c.value(pools, blk * nb + t, blk, param)
                for t in range(nb):
                    g = blk * nb + t
                    res[o1.name][g] = s1[(t + rd) % nb]
                    res[o2.name][g] = s2[t + 3]
                s1b = [s1[nb - 1 - t] for t in range(nb)]
                for t in range(nb):
                    res[o3.name][blk * nb + t] = s1b[t]
            return res
        return kb.kernel("shared:" + kind, ref)

    if kind == "reduce":
        opname = r.choice(["add.u32", "xor.u64", "max.i32", "__fadd_rn", "min.u16", "__dadd_rn", "__hadd.f16"])
        op = O.OPS[opname]
        t = op.out
        a = K.new_load(kb, t, npair)
        p2 = 1
        while p2 < nb:
            p2 *= 2
        kb.emit(f"__shared__ {TYPES[t].c} red[{nb}];")
        kb.emit(f"red[t] = {a.var};")
        kb.emit("__syncthreads();")
        kb.emit(f"for (unsigned s = {p2 // 2}u; s > 0u; s >>= 1) {{")
        kb.emit(f"  if (t < s && t + s < nb) red[t] = {kb.use(op).format('red[t]', 'red[t + s]')};")
        kb.emit("  __syncthreads();")
        kb.emit("}")
        o_all = kb.out(t, kb.nt, f"tree reduction ({opname}) state", len(kb.lines))
        kb.store(o_all, "g", "red[t]")
        o_tot = kb.out(t, kb.nblocks, f"tree reduction ({opname}) of the block", len(kb.lines))
        kb.emit(f"if (t == 0u) ST{o_tot.width}({o_tot.offset}u, b, B(red[0]));")

        def ref(pools, got=None):
            res = {o.name: [None] * o.count for o in kb.outs}
            for blk in range(kb.nt // nb):
                red = [a.value(pools, blk * nb + t, blk, param) for t in range(nb)]
                s = p2 // 2
                while s > 0:
                    new = list(red)
                    for t in range(nb):
                        if t < s and t + s < nb:
                            x, y = red[t], red[t + s]
                            v = K.apply(op, [x, y], ftz)
                            new[t] = None if v == H.ANYNAN else v
                    red = new
                    s //= 2
                for t in range(nb):
                    res[o_all.name][blk * nb + t] = red[t]
                res[o_tot.name][blk] = red[0]
            return res
        return kb.kernel("shared:reduce", ref)

    if kind == "atomics":
        nbins = r.choice([1, 3, 7, 16])
        which = r.choice(["add", "max", "or", "xor", "min", "inc"])
        a = K.new_load(kb, "u32", npair)
        kb.emit(f"__shared__ unsigned bins[{nbins}];")
        kb.emit(f"if (t < {nbins}u) bins[t] = {0xFFFFFFFF if which == 'min' else 0}u;")
        kb.emit("__syncthreads();")
        expr = {"add": f"atomicAdd(&bins[{a.var} % {nbins}u], {a.var} & 0xffu)",
                "max": f"atomicMax(&bins[t % {nbins}u], {a.var})",
                "min": f"atomicMin(&bins[t % {nbins}u], {a.var})",
                "or": f"atomicOr(&bins[{a.var} % {nbins}u], 1u << (t & 31u))",
                "xor": f"atomicXor(&bins[t % {nbins}u], {a.var})",
                "inc": f"atomicInc(&bins[{a.var} % {nbins}u], 5u)"}[which]
        kb.emit(f"{expr};")
        kb.emit("__syncthreads();")
        o = kb.out("u32", kb.nblocks * nbins, f"shared atomic {which} bins", len(kb.lines))
        kb.emit(f"if (t < {nbins}u) ST4({o.offset}u, b * {nbins}u + t, bins[t]);")

        def ref(pools, got=None):
            res = {o.name: [None] * o.count}
            for blk in range(kb.nt // nb):
                bins = [0xFFFFFFFF if which == "min" else 0] * nbins
                for t in range(nb):
                    v = a.value(pools, blk * nb + t, blk, param)
                    if which == "add":
                        bins[v % nbins] = (bins[v % nbins] + (v & 0xFF)) & 0xFFFFFFFF
                    elif which == "max":
                        bins[t % nbins] = max(bins[t % nbins], v)
                    elif which == "min":
                        bins[t % nbins] = min(bins[t % nbins], v)
                    elif which == "or":
                        bins[v % nbins] |= 1 << (t & 31)
                    elif which == "xor":
                        bins[t % nbins] ^= v
                    else:
                        bins[v % nbins] = 0 if bins[v % nbins] >= 5 else bins[v % nbins] + 1
                for i in range(nbins):
                    res[o.name][blk * nbins + i] = bins[i]
            return res
        return kb.kernel("shared:atomics", ref)

    # tile: a 2-D tile written row by row, read transposed (padding column)
    side = block[0]
    t1 = r.choice(["u32", "f64", "u16", "i8"])
    a = K.new_load(kb, t1, npair)
    kb.emit(f"__shared__ {TYPES[t1].c} tile[{side}][{side + 1}];")
    kb.emit(f"tile[threadIdx.y][threadIdx.x] = {a.var};")
    kb.emit("__syncthreads();")
    o = kb.out(t1, kb.nt, "tile read transposed", len(kb.lines))
    kb.store(o, "g", "tile[threadIdx.x][threadIdx.y]")

    def ref(pools, got=None):
        res = {o.name: [None] * o.count}
        for blk in range(kb.nt // nb):
            tile = {}
            for t in range(nb):
                x, y = t % side, t // side
                tile[(y, x)] = a.value(pools, blk * nb + t, blk, param)
            for t in range(nb):
                x, y = t % side, t // side
                res[o.name][blk * nb + t] = tile[(x, y)]
        return res
    return kb.kernel("shared:tile", ref)


def _coprime(r: Rng, n: int) -> int:
    m = r.choice([3, 5, 7, 11, 13])
    while _gcd(m, n) != 1:
        m += 2
    return m


# ================================================================ global atomics
def atomics_kernel(name: str, r: Rng, ftz: bool = False) -> K.Kernel:
    grid, block = K.shape(r, max_threads=256)
    kb = K.Builder(name, r, grid, block)
    nt = kb.nt
    npair = [0]
    param = kb.param
    specs = []
    for _ in range(r.range(3, 7)):
        kind = r.choice(["add32", "add64", "addf", "addd", "sub", "max", "min64", "maxs", "bits", "inc", "dec",
                         "cas_fmax", "cas_mul", "ticket", "h2", "bf2", "block", "exch"])
        nbins = r.choice([1, 2, 5])
        a = K.new_load(kb, "u32", npair)
        if kind == "add32":
            o = kb.out("u32", nbins, "atomicAdd u32")
            kb.emit(f"atomicAdd((unsigned*)(out + {o.offset}) + {a.var} % {nbins}u, {a.var});")
        elif kind == "add64":
            o = kb.out("u64", nbins, "atomicAdd u64")
            kb.emit(f"atomicAdd((unsigned long long*)(out + {o.offset}) + g % {nbins}u, "
                    f"(unsigned long long){a.var} << ({a.var} & 31u));")
        elif kind == "addf":
            o = kb.out("f32", nbins, "atomicAdd f32 (exact sums)")
            kb.emit(f"atomicAdd((float*)(out + {o.offset}) + g % {nbins}u, (float)((int)({a.var} % 129u) - 64) * 0.25f);")
        elif kind == "addd":
            o = kb.out("f64", nbins, "atomicAdd f64 (exact sums)")
            kb.emit(f"atomicAdd((double*)(out + {o.offset}) + {a.var} % {nbins}u, (double)(int){a.var} * 0.125);")
        elif kind == "sub":
            o = kb.out("u32", nbins, "atomicSub")
            kb.emit(f"atomicSub((unsigned*)(out + {o.offset}) + g % {nbins}u, {a.var} & 0xffffu);")
        elif kind == "max":
            o = kb.out("u32", nbins, "atomicMax u32")
            kb.emit(f"atomicMax((unsigned*)(out + {o.offset}) + g % {nbins}u, {a.var});")
        elif kind == "maxs":
            o = kb.out("i32", 2 * nbins, "atomicMax i32 (odd threads), then atomicMin i32 (even threads)")
            kb.emit(f"if (g & 1u) atomicMax((int*)(out + {o.offset}) + g % {nbins}u, (int){a.var}); "
                    f"else atomicMin((int*)(out + {o.offset}) + {nbins}u + g % {nbins}u, -(int)({a.var} & 0x7fffffffu));")
        elif kind == "min64":
            o = kb.out("i64", nbins, "atomicMin i64")
            kb.emit(f"atomicMin((long long*)(out + {o.offset}) + g % {nbins}u, (long long)(int){a.var} * 3ll);")
        elif kind == "bits":
            o = kb.out("u64", 3, "atomicAnd/Or/Xor u64")
            kb.emit(f"atomicOr((unsigned long long*)(out + {o.offset}), 1ull << (g & 63u));")
            kb.emit(f"atomicXor((unsigned long long*)(out + {o.offset}) + 1, (unsigned long long){a.var} * 0x9e3779b9ull);")
            kb.emit(f"atomicAnd((unsigned long long*)(out + {o.offset}) + 2, ~(1ull << ({a.var} & 63u)));")
        elif kind == "inc":
            o = kb.out("u32", nbins, "atomicInc (limit 6)")
            kb.emit(f"atomicInc((unsigned*)(out + {o.offset}) + g % {nbins}u, 6u);")
        elif kind == "dec":
            o = kb.out("u32", nbins, "atomicDec (limit 9)")
            kb.emit(f"atomicDec((unsigned*)(out + {o.offset}) + g % {nbins}u, 9u);")
        elif kind == "cas_fmax":
            o = kb.out("f32", 1, "float max by a CAS loop")
            fa = K.new_load(kb, "f32", npair)
            kb.emit(f"{{ unsigned* q = (unsigned*)(out + {o.offset}); unsigned old = *q, assumed;")
            kb.emit(f"  do {{ assumed = old; float m = fmaxf(__uint_as_float(assumed), {fa.var});"
                    f" old = atomicCAS(q, assumed, __float_as_uint(m)); }} while (old != assumed); }}")
            o.line = len(kb.lines) - 1
            specs.append((kind, o, a, nbins, fa))
            continue
        elif kind == "cas_mul":
            o = kb.out("u32", 1, "u32 product by a CAS loop (starts at 0 -> 1 by the first)")
            kb.emit(f"{{ unsigned* q = (unsigned*)(out + {o.offset}); unsigned old = *q, assumed;")
            kb.emit(f"  do {{ assumed = old; old = atomicCAS(q, assumed, (assumed | 1u) * ({a.var} | 1u)); }}"
                    f" while (old != assumed); }}")
        elif kind == "ticket":
            o = kb.out("u32", 1, "ticket counter")
            o2 = kb.out("u8", nt, "slots claimed by tickets")
            kb.emit(f"{{ unsigned tk = atomicAdd((unsigned*)(out + {o.offset}), 1u); ST1({o2.offset}u, tk % {nt}u, 1u); }}")
            o.line = o2.line = len(kb.lines) - 1
            specs.append((kind, o, a, nbins, o2))
            continue
        elif kind == "h2":
            o = kb.out("h2", 1, "atomicAdd __half2 (exact sums)")
            kb.emit(f"atomicAdd((__half2*)(out + {o.offset}), __floats2half2_rn((float)((int)({a.var} % 5u) - 2) * 0.5f, "
                    f"(float)(int)({a.var} % 3u)));")
        elif kind == "bf2":
            o = kb.out("bf2", 1, "atomicAdd __nv_bfloat162 (exact sums)")
            kb.emit(f"if (g < 200u) atomicAdd((__nv_bfloat162*)(out + {o.offset}), "
                    f"__floats2bfloat162_rn((float)((int)({a.var} % 3u) - 1) * 0.5f, 0.5f));")
        elif kind == "block":
            o = kb.out("u32", kb.nblocks, "atomicAdd_block per block and atomicAdd_system")
            kb.emit(f"atomicAdd_block((unsigned*)(out + {o.offset}) + b, {a.var} & 0xffu);")
            kb.emit(f"atomicAdd_system((unsigned*)(out + {o.offset}) + b, 1u);")
        else:
            o = kb.out("u32", 1, "atomicExch of one value by all")
            kb.emit(f"atomicExch((unsigned*)(out + {o.offset}), {param ^ 0x5a5a}u);")
        o.line = len(kb.lines) - 1
        specs.append((kind, o, a, nbins, None))
    nb = kb.nb

    def ref(pools, got=None):
        res = {o.name: [None] * o.count for o in kb.outs}
        for kind, o, a, nbins, extra in specs:
            vals = [a.value(pools, g, g // nb, param) for g in range(nt)]
            acc = [0] * o.count
            for g, v in enumerate(vals):
                if kind == "add32":
                    acc[v % nbins] = (acc[v % nbins] + v) & 0xFFFFFFFF
                elif kind == "add64":
                    acc[g % nbins] = (acc[g % nbins] + (v << (v & 31))) & (2 ** 64 - 1)
                elif kind == "addf":
                    acc[g % nbins] += ((v % 129) - 64) * 0.25
                elif kind == "addd":
                    acc[v % nbins] += H.sx(v, 32) * 0.125
                elif kind == "sub":
                    acc[g % nbins] = (acc[g % nbins] - (v & 0xFFFF)) & 0xFFFFFFFF
                elif kind == "max":
                    acc[g % nbins] = max(acc[g % nbins], v)
                elif kind == "maxs":
                    i = g % nbins if g & 1 else nbins + g % nbins
                    x = H.sx(v, 32) if g & 1 else -(v & 0x7FFFFFFF)
                    cur = H.sx(acc[i], 32)
                    acc[i] = (max(cur, x) if g & 1 else min(cur, x)) & 0xFFFFFFFF
                elif kind == "min64":
                    cur = H.sx(acc[g % nbins], 64)
                    acc[g % nbins] = min(cur, H.sx(v, 32) * 3) & (2 ** 64 - 1)
                elif kind == "bits":
                    acc[0] |= 1 << (g & 63)
                    acc[1] ^= (v * 0x9E3779B9) & (2 ** 64 - 1)
                    if g == 0:
                        acc[2] = 0  # memory starts at 0: the ANDs keep it 0
                elif kind == "inc":
                    acc[g % nbins] = 0 if acc[g % nbins] >= 6 else acc[g % nbins] + 1
                elif kind == "dec":
                    c = acc[g % nbins]
                    acc[g % nbins] = 9 if (c == 0 or c > 9) else c - 1
                elif kind == "cas_fmax":
                    x = extra.value(pools, g, g // nb, param)
                    acc[0] = None if acc[0] is None or (ftz and K._subnormal32(x)) else H.f_minmax(acc[0], x, "f32", True)
                elif kind == "cas_mul":
                    acc[0] = ((acc[0] | 1) * (v | 1)) & 0xFFFFFFFF
                elif kind == "ticket":
                    acc[0] += 1
                elif kind == "h2":
                    acc[0] = acc[0] if isinstance(acc[0], list) else [0.0, 0.0]
                    acc[0][0] += ((v % 5) - 2) * 0.5
                    acc[0][1] += v % 3
                elif kind == "bf2":
                    acc[0] = acc[0] if isinstance(acc[0], list) else [0.0, 0.0]
                    if g >= 200:
                        continue
                    acc[0][0] += ((v % 3) - 1) * 0.5
                    acc[0][1] += 0.5
                elif kind == "block":
                    acc[g // nb] = (acc[g // nb] + (v & 0xFF) + 1) & 0xFFFFFFFF
                else:
                    acc[0] = param ^ 0x5A5A
            if kind == "addf":
                acc = [H.encode(_frac(x), "f32") for x in acc]
            elif kind == "addd":
                acc = [H.encode(_frac(x), "f64") for x in acc]
            elif kind in ("h2", "bf2"):
                fmt = "f16" if kind == "h2" else "bf16"
                pair = acc[0] if isinstance(acc[0], list) else [0.0, 0.0]
                acc = [H.encode(_frac(pair[1]), fmt) << 16 | H.encode(_frac(pair[0]), fmt)]
            res[o.name] = acc
            if kind == "ticket":
                res[extra.name] = [1] * nt
        return res

    return kb.kernel("atomics", ref)


def _frac(x: float):
    from fractions import Fraction
    return Fraction(x)


# ================================================================ barrier reductions
def barrier_kernel(name: str, r: Rng, ftz: bool = False) -> K.Kernel:
    grid, block = K.shape(r, max_threads=256)
    if r.chance(0.3):
        block = (r.choice([200, 100, 130, 72]), 1, 1)
    kb = K.Builder(name, r, grid, block)
    nb = kb.nb
    npair = [0]
    param = kb.param
    a = K.new_load(kb, "i32", npair)
    c = K.new_load(kb, "u32", npair)
    kb.emit(f"__shared__ int s[{nb}];")
    kb.emit(f"s[t] = {a.var};")
    kb.emit("__syncthreads();")
    rounds = r.range(1, 3)
    kb.emit("int neg = 0, nall = 0, nany = 0, cnt = 0;")
    kb.emit(f"for (unsigned rr = 0; rr < {rounds}u + (p & 1u); ++rr) {{")
    kb.emit("  neg += __syncthreads_count(s[t] < 0) + __syncthreads_count(s[t] < 0);")
    kb.emit(f"  nall += __syncthreads_and((({c.var} >> rr) & 3u) != 0u);")
    kb.emit(f"  nany += __syncthreads_or(((({c.var} ^ t) >> rr) & 63u) == 7u);")
    kb.emit("  cnt = __syncthreads_count((s[(t + rr) % nb] & 1) != 0) - cnt;")
    kb.emit("}")
    outs = {}
    for v in ("neg", "nall", "nany", "cnt"):
        outs[v] = kb.out("i32", kb.nt, f"{v} from __syncthreads_count/and/or", len(kb.lines))
        kb.store(outs[v], "g", v)

    def ref(pools, got=None):
        res = {o.name: [None] * o.count for o in kb.outs}
        n = rounds + (param & 1)
        for blk in range(kb.nt // nb):
            s = [H.sx(a.value(pools, blk * nb + t, blk, param), 32) for t in range(nb)]
            cs = [c.value(pools, blk * nb + t, blk, param) for t in range(nb)]
            neg = all_ = any_ = cnt = 0
            for rr in range(n):
                k = sum(1 for x in s if x < 0)
                neg += 2 * k
                all_ += int(all(((cs[t] >> rr) & 3) != 0 for t in range(nb)))
                any_ += int(any((((cs[t] ^ t) >> rr) & 63) == 7 for t in range(nb)))
                cnt = sum(1 for t in range(nb) if s[(t + rr) % nb] & 1) - cnt
            for t in range(nb):
                g = blk * nb + t
                for v, x in (("neg", neg), ("nall", all_), ("nany", any_), ("cnt", cnt)):
                    res[outs[v].name][g] = x & 0xFFFFFFFF
        return res

    return kb.kernel("barrier", ref)


# ================================================================ the issue's bug classes
def regress_kernel(name: str, r: Rng, ftz: bool = False, managed: bool = False) -> K.Kernel:
    kind = r.choice(["align256", "cp_async", "carry_divergent", "spelling_divergent", "noinline", "oob_read",
                     "atom_v4"] + ["managed"] * (3 if managed else 0))
    grid, block = K.shape(r, max_threads=128, warp_multiple=kind == "cp_async")
    kb = K.Builder(name, r, grid, block)
    nb = kb.nb
    npair = [0]
    param = kb.param
    if kind == "align256":
        n = r.choice([5, 9, 17])
        a = K.new_load(kb, "u32", npair)
        kb.emit(f"__align__(256) unsigned loc[{n}];")
        kb.emit(f"__align__(256) unsigned char loc2[{n + 3}];")
        kb.emit(f"for (unsigned i = 0; i < {n}u; ++i) loc[i] = {a.var} * (i + 1u);")
        kb.emit(f"for (unsigned i = 0; i < {n + 3}u; ++i) loc2[i] = (unsigned char)({a.var} >> (i & 7u));")
        o1 = kb.out("u32", kb.nt, "address of a local __align__(256) array, mod 256", len(kb.lines))
        kb.store(o1, "g", "(unsigned)((uintptr_t)loc & 255u) | (unsigned)((uintptr_t)loc2 & 255u) << 8")
        o2 = kb.out("u32", kb.nt, "a dynamically indexed element of it", len(kb.lines))
        kb.store(o2, "g", f"loc[{a.var} % {n}u] + loc2[({a.var} >> 3) % {n + 3}u]")

        def ref(pools, got=None):
            res = {o1.name: [0] * kb.nt, o2.name: []}
            for g in range(kb.nt):
                v = a.value(pools, g, g // nb, param)
                res[o2.name].append(((v * (v % n + 1)) + ((v >> (((v >> 3) % (n + 3)) & 7)) & 255)) & 0xFFFFFFFF)
            return res
        return kb.kernel("regress:align256", ref)

    if kind == "atom_v4":
        # sm_90's vector atomics: atomicAdd(float4*) and (float2*) (atom.global.add.v4/v2.f32), exact sums
        a = K.new_load(kb, "u32", npair)
        o = kb.out("f32", 6, "atomicAdd float4 and float2 (exact sums)")
        o.offset = (o.offset + 15) & ~15  # a float4 is 16-byte aligned
        kb.offset = o.offset + 24
        kb.emit(f"atomicAdd((float4*)(out + {o.offset}), make_float4((float)({a.var} & 7u), -1.0f, 0.5f, "
                f"(float)((int)({a.var} % 5u) - 2)));")
        kb.emit(f"atomicAdd((float2*)(out + {o.offset + 16}), make_float2(0.25f, (float)(t & 3u)));")
        o.line = len(kb.lines) - 2

        def ref(pools, got=None):
            acc = [0.0] * 6
            for g in range(kb.nt):
                v = a.value(pools, g, g // nb, param)
                for i, x in enumerate([v & 7, -1.0, 0.5, (v % 5) - 2, 0.25, (g % nb) & 3]):
                    acc[i] += x
            return {o.name: [H.encode(_frac(x), "f32") for x in acc]}
        return kb.kernel("regress:atom_v4", ref)

    if kind == "oob_read":
        # loads just past the end of the input allocation (inside the page the GPU maps it in):
        # a GPU reads something there; a fault would be cuport's. The values are not used.
        k = r.choice([0, 1, 7])
        kb.emit("unsigned junk;")
        kb.emit(f'asm volatile("ld.global.u32 %0, [%1];" : "=r"(junk) : "l"(in + {POOL_N * len(POOLED)}u + (t & 7u) + {k}u));')
        o = kb.out("u32", kb.nt, "a load past the end of an allocation completed", len(kb.lines))
        kb.store(o, "g", "1u")

        def ref(pools, got=None):
            return {o.name: [1] * kb.nt}
        return kb.kernel("regress:oob_read", ref)

    if kind == "managed":
        from gen import MANAGED_N  # noqa: PLC0415 (gen imports this module)
        a = K.new_load(kb, "u32", npair)
        o = kb.out("u32", kb.nt, "a __managed__ variable set by the host", len(kb.lines))
        kb.store(o, "g", f"MG[({a.var} ^ t) % {MANAGED_N}u] + {a.var}")

        def ref(pools, got=None):
            res = []
            for g in range(kb.nt):
                v = a.value(pools, g, g // nb, param)
                res.append((pools["u32"][(v ^ (g % nb)) % MANAGED_N] + v) & 0xFFFFFFFF)
            return {o.name: res}
        return kb.kernel("regress:managed", ref)

    if kind == "cp_async":
        # cp.async with a src-size operand: bytes past src-size are zero-filled
        mode = r.choice(["ca", "cg"])
        kb.emit(f"__shared__ __align__(16) unsigned sm[{nb * 4}];")
        a = K.new_load(kb, "u32", npair)
        kb.emit(f"const unsigned sz = {'(' + a.var + ' % 5u) * 4u' if mode == 'ca' else '(' + a.var + ' % 3u) * 8u'};")
        kb.emit(f"const uint64_t* src = in + (t * 2u) % {POOL_N * len(POOLED) - 2}u;")
        kb.emit("const unsigned dst = (unsigned)__cvta_generic_to_shared(&sm[t * 4u]);")
        kb.emit(f'asm volatile("cp.async.{mode}.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(sz) : "memory");')
        kb.emit('asm volatile("cp.async.commit_group;" ::: "memory");')
        kb.emit('asm volatile("cp.async.wait_group 0;" ::: "memory");')
        kb.emit("__syncthreads();")
        o = kb.out("u32", kb.nt * 4, f"cp.async.{mode} with src-size, read by the next thread", len(kb.lines))
        kb.emit(f"for (unsigned i = 0; i < 4u; ++i) ST4({o.offset}u, g * 4u + i, sm[((t + 1u) % nb) * 4u + i]);")

        def ref(pools, got=None):
            words = [w for tt in POOLED for w in pools[tt]]
            res = {o.name: [None] * (kb.nt * 4)}
            for blk in range(kb.nt // nb):
                sm = []
                for t in range(nb):
                    v = a.value(pools, blk * nb + t, blk, param)
                    sz = (v % 5) * 4 if mode == "ca" else (v % 3) * 8
                    base = (t * 2) % (POOL_N * len(POOLED) - 2)
                    data = words[base].to_bytes(8, "little") + words[base + 1].to_bytes(8, "little")
                    data = data[:sz] + bytes(16 - sz)
                    sm.append([int.from_bytes(data[4 * i:4 * i + 4], "little") for i in range(4)])
                for t in range(nb):
                    for i in range(4):
                        res[o.name][(blk * nb + t) * 4 + i] = sm[(t + 1) % nb][i]
            return res
        return kb.kernel("regress:cp_async", ref)

    if kind in ("carry_divergent", "spelling_divergent"):
        tag = "carry" if kind == "carry_divergent" else "spelling"
        cands = [o for o in O.OPS.values() if tag in o.tags]
        steps = []
        outs = {}
        loads = {}
        c = K.new_load(kb, "u32", npair)
        mask = r.choice([1, 2, 4])
        kb.emit(f"if (({c.var} ^ t) & {mask}u) {{")
        kb.indent += 1
        for _ in range(r.range(2, 4)):
            op = r.choice(cands)
            args = []
            for at in op.args:
                ld = K.new_load(kb, at, npair)
                loads[ld.var] = ld
                steps.append(K.Step(ld.var, None, (), ld))
                args.append(ld.var)
            v = kb.var()
            line = kb.emit(f"const {TYPES[op.out].c} {v} = {kb.use(op).format(*args)};")
            o = kb.out(op.out, kb.nt, op.name + " in a divergent branch", line)
            kb.store(o, "g", v)
            outs[v] = o
            steps.append(K.Step(v, op, tuple(args)))
        kb.indent -= 1
        kb.emit("}")

        def ref(pools, got=None):
            res = {o.name: [0] * o.count for o in outs.values()}
            for g in range(kb.nt):
                t = g % nb
                if not ((c.value(pools, g, g // nb, param) ^ t) & mask):
                    continue
                env = K.eval_steps(steps, pools, g, g // nb, param, ftz=ftz)
                for v, o in outs.items():
                    res[o.name][g] = None if env[v] == H.ANYNAN else env[v]
            return res
        return kb.kernel("regress:" + kind, ref)

    # a __noinline__ device function with a local array and a struct passed by value
    fn = f"{name}_fn"
    n = r.choice([4, 8, 13])
    kb.pre = [
        f"struct {fn}_s {{ unsigned a; unsigned long long b; unsigned char c; }};",
        f"static __device__ __noinline__ unsigned long long {fn}({fn}_s s, unsigned k) {{",
        f"  unsigned loc[{n}];",
        f"  for (unsigned i = 0; i < {n}u; ++i) loc[i] = s.a + i * s.c;",
        "  unsigned long long acc = s.b;",
        f"  for (unsigned i = 0; i < k % {n}u + 1u; ++i) acc = acc * 31ull + loc[(k + i) % {n}u];",
        "  return acc;",
        "}",
    ]
    a = K.new_load(kb, "u32", npair)
    bb = K.new_load(kb, "u64", npair)
    kb.emit(f"const {fn}_s st = {{ {a.var}, {bb.var}, (unsigned char)({a.var} >> 24) }};")
    o = kb.out("u64", kb.nt, "a __noinline__ function with a local array", len(kb.lines))
    kb.store(o, "g", f"{fn}(st, {a.var} ^ t)")

    def ref(pools, got=None):
        res = {o.name: []}
        for g in range(kb.nt):
            av = a.value(pools, g, g // nb, param)
            bv = bb.value(pools, g, g // nb, param)
            cc = av >> 24
            loc = [(av + i * cc) & 0xFFFFFFFF for i in range(n)]
            k = av ^ (g % nb)
            acc = bv
            for i in range(k % n + 1):
                acc = (acc * 31 + loc[(k + i) % n]) & (2 ** 64 - 1)
            res[o.name].append(acc)
        return res
    return kb.kernel("regress:noinline", ref)


MAKERS = {"arith": K.arith_kernel, "ctrl": ctrl_kernel, "warp": warp_kernel, "shared": shared_kernel,
          "atomics": atomics_kernel, "barrier": barrier_kernel, "regress": regress_kernel}
