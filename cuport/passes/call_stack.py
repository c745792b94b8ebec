"""Calls of recursive device functions through a per-invocation stack (the Vulkan backend).

SPIR-V has no call stack, so the Vulkan pipeline inlines every device function
(passes/inline.py); the functions of a recursive strongly connected component of the call
graph (ptx/callgraph.py) cannot be inlined. Each call of one from outside its component
becomes an *instance* of the component, in place of the call:

    call site   push the exit marker and the callee's frame, copy the arguments
    H:          a multiway branch on %cuport_next: the exit, a function's entry, a return site
    bodies      one copy of each function of the component. A call of one of them: push the
                registers live across the call (passes/liveness.py) and the return site's
                number, copy the arguments, %cuport_next = the callee's entry, go to H; the
                return site pops the registers and copies the results. `ret`: pop the frame,
                %cuport_next = the number on top of the stack, go to H
    X:          pop the exit marker, copy the results; the caller goes on

The instance is entered only at H and left only at X, and every call and return goes
around the one loop that H heads, so the CFG stays reducible, mutual recursion included. A
return site inside a loop of its function is reached through that loop's header: each such
header begins with a test (is %cuport_next the number of a return site inside this loop?)
that sends the returning thread through the nested loops' headers to its return site, so
no loop gains a second entry (return-site numbers are given loop by loop, so a loop's are
one interval). Calls of non-recursive functions in the bodies are inlined as elsewhere;
a call into another recursive component makes a nested instance.

The stack is a `.local` array of the stack limit (cudaLimitStackSize: NVIDIA's default is
1024 bytes a thread) in the per-invocation Function array that holds all local memory,
with a stack pointer register holding a local address. Function storage, not a slice of
device memory: a GPU's driver backs it with scratch memory for the invocations resident at
a time, as CUDA backs its threads' stacks, where device memory would have to be sized for
the whole grid (or handed out by atomics), and no other thread can overwrite it. An
activation's frame holds its function's `.local` variables (the depot that %SPL points
at), so a recursive function with a local array has one per activation, and a generic
pointer into a frame is a local-window address like any other (backends/vulkan/layout.py);
and those of its parameters and results whose values outlive a call (nvcc's never do: it
reads parameters first and writes results last, so each is one variable). A level of
recursion then takes no more stack than ptxas gives the function on sm_90 (tests/vulkan/
test_recursion.py). A call that would pass the stack's end fails the launch with
CUDA_ERROR_HARDWARE_STACK_ERROR, naming the kernel and the call's PTX line, before it
writes anything (`trap.stack`, an instruction of cuport's own).

Needs: the kernel with every call of a non-recursive function inlined
(`inline_all_calls(..., keep=recursive_functions(...))`).
Leaves: a kernel without calls of defined functions.
Legal: for recursive functions without CTA barriers or warp collectives (the threads of a
block or warp reach them at different depths: refused, naming the function) whose calls
pass `.param` variables, as nvcc's do.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from dataclasses import dataclass, field

from ..ptx import ir
from ..ptx.callgraph import call_operands, call_target, recursive_components
from ..ptx.errors import UnsupportedError
from . import cfg as cfgmod
from .inline import expand_calls, instantiate, unguard_calls
from .liveness import live_after, live_in

DEFAULT_STACK_BYTES = 1024  # cudaLimitStackSize's default on NVIDIA's GPUs
STACK = "$cuport_stack"  # the stack: a .local array
SP = ir.Reg("%cuport_sp")  # the stack pointer, a local address (a byte offset in local memory)
NEXT = ir.Reg("%cuport_next")  # H's choice: 0 the exit (and 0 while running), an entry, a return site
NEW_SP = ir.Reg("%cuport_newsp")
PRED = ir.Reg("%cuport_p")
HALF = ir.Reg("%cuport_h")
DIFF = ir.Reg("%cuport_d")
ADDR = ir.Reg("%cuport_a")
_OWN = {SP.name: "u64", NEXT.name: "u32", NEW_SP.name: "u64", PRED.name: "pred",
        HALF.name: "b16", DIFF.name: "u32", ADDR.name: "u64"}
EXIT_MARK = 8  # bytes below an instance's first frame: the exit marker (0), 8-aligned

#: what a thread cannot run inside recursion here, by opcode
_REFUSED = {"bar": "a CTA barrier", "barrier": "a CTA barrier", "shfl": "a warp shuffle",
            "vote": "a warp vote", "match": "a warp match", "redux": "a warp reduction",
            "activemask": "activemask", "elect": "elect.sync", "wmma": "a warp matrix operation",
            "mma": "a warp matrix operation"}


def recursive_functions(funcs: list[ir.Function]) -> frozenset[str]:
    """The functions of `funcs` on a cycle of the call graph."""
    return frozenset().union(*recursive_components(funcs))


def _i(op: str, mods: tuple[str, ...], *args, guard: ir.Reg | None = None, line: int = 0) -> ir.Instr:
    return ir.Instr(op, mods, list(args), guard, False, line)


def _at(off: int) -> ir.Mem:
    return ir.Mem(SP, off)


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _words(size: int) -> range:
    return range(0, max(size, 1), 4)


@dataclass
class StackFacts:
    """What the pass tells later steps."""

    frames: dict[str, int] = field(default_factory=dict)  # function -> stack bytes a level
    #: the ids of the stores that save a register across a call and the loads that restore
    #: it (address-space inference: they keep the register's value, passes/spaces.py)
    spills: set[int] = field(default_factory=set)


@dataclass
class _Site:
    """A call of a function of the component from one of its functions."""

    call: ir.Instr
    callee: str
    saves: list[tuple[str, str, int]]  # (register, PTX type, offset) pushed across the call
    bytes: int  # the caller's part of the stack: the saves, then the return site's number
    headers: list[str]  # labels of the loops around the call, outermost first
    resume: str = ""  # the return site's label
    number: int = 0


@dataclass
class _Loop:
    """A loop of a function with return sites inside (or the function's top level)."""

    label: str | None
    items: list = field(default_factory=list)  # _Site or _Loop, in program order
    lo: int = 0
    hi: int = 0
    dispatch: str = ""


@dataclass
class _Member:
    """One function of a component, copied into an instance."""

    name: str
    body: list
    params: list[tuple[str, int]]  # (name in this copy, bytes)
    rets: list[tuple[str, int]]
    offsets: dict[str, int]  # what lives in the frame (name -> byte offset); the rest is static
    size: int  # the frame's bytes (8-aligned)
    end: str  # the label its `ret`s branch to
    entry: str = ""
    number: int = 0  # H's number for its entry
    top: _Loop = field(default_factory=lambda: _Loop(None))
    sites: list[_Site] = field(default_factory=list)


class _Stacker:
    """The pass over one kernel: `host` gains the copies' registers and variables."""

    def __init__(self, funcs: list[ir.Function], host: ir.Function, stack_bytes: int) -> None:
        self.by_name = {f.name: f for f in funcs}
        self.component = {n: c for c in recursive_components(funcs) for n in c}
        self.recursive = frozenset(self.component)
        self.plain = {n for n, f in self.by_name.items() if f.is_definition and not f.is_entry} - self.recursive
        self.host = host
        self.limit = stack_bytes
        self.tags = itertools.count(1)
        self.facts = StackFacts()

    def calls(self, body: list, inside: frozenset[str] = frozenset()) -> list:
        """`body` with each call of a recursive function outside `inside` made an instance."""
        out: list = []
        for st in unguard_calls(body, self.recursive):
            target = call_target(st) if isinstance(st, ir.Instr) and st.op == "call" else None
            if target in self.recursive and target not in inside:
                out.extend(self.instance(st, target))
            else:
                out.append(st)
        return out

    # ------------------------------------------------------------ an instance
    def instance(self, call: ir.Instr, root: str) -> list:
        comp = self.component[root]
        k = next(self.tags)
        members = {g: self.member(g, comp) for g in [root, *sorted(comp - {root})]}
        for m in members.values():  # (a cycle of calls costs the sum of its functions')
            self.facts.frames[m.name] = m.size + max((site.bytes for site in m.sites), default=0)
        number = 1
        for m in members.values():
            m.entry, m.number = f"$rc_entry{m.name}$rc{k}", number
            number += 1
        for m in members.values():
            number = self.number(m.top, number, f"$rc{k}")
        head, leave = f"$rc_head{k}", f"$rc_exit{k}"
        args, rets = self.actuals(call, members[root])
        out = self.enter(call, members[root], args, [], EXIT_MARK, 0)
        out.append(ir.Label(head, call.line))
        arms = [(0, 0, leave)] + [(m.number, m.number, m.entry) for m in members.values()]
        for m in members.values():
            arms += self.arms(m.top)
        out += self.dispatch(arms, call.line)
        for m in members.values():
            out += self.emit(m, members, head)
        out.append(ir.Label(leave, call.line))
        out.append(_i("sub", ("s64",), SP, SP, ir.Imm(EXIT_MARK), line=call.line))
        out += self.copy_out(members[root], rets, EXIT_MARK, call.line)
        return out

    def member(self, name: str, comp: frozenset[str]) -> _Member:
        """A copy of `name`'s body for an instance: its non-recursive calls inlined, calls
        into other components made nested instances, its return sites analysed."""
        fn = self.by_name[name]
        tag = f"$rc{next(self.tags)}"
        formals = [p.name + tag for p in fn.params]
        results = [r.name + tag for r in fn.rets]
        fake = ir.Instr("call", ("uni",), [ir.Args(tuple(ir.Sym(r) for r in results)), ir.Sym(name),
                                           ir.Args(tuple(ir.Sym(p) for p in formals))], line=fn.line)
        body = instantiate(fake, fn, self.host, UnsupportedError, tag)
        frame_vars = [v for v in fn.locals if v.space == "local"]
        own = {v.name + tag for v in frame_vars}
        self.host.locals = [v for v in self.host.locals if v.name not in own]  # in the frame instead
        body = expand_calls(body, self.host, self.by_name, self.plain)
        for st in body:
            if isinstance(st, ir.Instr) and st.op in _REFUSED:
                what = "a warp barrier" if st.op == "bar" and "warp" in st.mods else _REFUSED[st.op]
                raise UnsupportedError(
                    f"{what} inside the recursive device function {name} (barriers and warp "
                    "collectives cannot run inside recursion on the Vulkan backend: the threads "
                    "of a block or warp reach them at different depths)", st.line, st.text())
        body = self.calls(body, inside=comp)
        m = _Member(name, body, [(n, p.size) for n, p in zip(formals, fn.params, strict=True)],
                    [(n, r.size) for n, r in zip(results, fn.rets, strict=True)], {}, 0, "$ret" + tag)
        cfg = self.analyse(m, comp)
        crossing = _crossing_calls(cfg, [site.call for site in m.sites], set(formals), set(results))
        off = 0
        for n, v in [*zip(formals, fn.params, strict=True), *zip(results, fn.rets, strict=True),
                     *((v.name + tag, v) for v in frame_vars)]:
            if v.space == "param" and n not in crossing:  # one variable serves every activation
                self.host.locals.append(dataclasses.replace(v, name=n))
                continue
            off = _align(off, min(max(v.alignment, 4), 8))  # (the stack pointer is 8-aligned)
            m.offsets[n] = off
            off += max(v.size, 1)
        m.size = _align(off, 8)
        return m

    def analyse(self, m: _Member, comp: frozenset[str]) -> cfgmod.Cfg:
        """The member's calls into its component: what each must save, and the loops around
        it; the member's CFG."""
        cfg = cfgmod.build(ir.Function(m.name, "func", body=m.body))
        if not cfg.reducible:
            raise UnsupportedError(f"irreducible control flow in the recursive device function {m.name}",
                                   self.by_name[m.name].line)
        live = live_in(cfg, None)
        where = {id(ins): b.index for b in cfg.blocks for ins in b.instrs}
        for st in m.body:
            if not (isinstance(st, ir.Instr) and st.op == "call" and call_target(st) in comp):
                continue
            block = where.get(id(st))
            regs: set[str] = set() if block is None else live_after(cfg, live, block, st)
            loops = [] if block is None else sorted(
                (h for h, body in cfg.loops.items() if block in body), key=lambda h: -len(cfg.loops[h]))
            saves, size = self.layout_saves(regs - _OWN.keys(), st)
            site = _Site(st, call_target(st), saves, size, [cfg.blocks[h].label for h in loops])
            m.sites.append(site)
            node = m.top
            for label in site.headers:
                child = next((x for x in node.items if isinstance(x, _Loop) and x.label == label), None)
                if child is None:
                    child = _Loop(label)
                    node.items.append(child)
                node = child
            node.items.append(site)
        return cfg

    def layout_saves(self, regs: set[str], call: ir.Instr) -> tuple[list[tuple[str, str, int]], int]:
        """Offsets of the registers saved across `call` (widest first), and the caller's
        part of the stack: the saves, then the return site's number."""
        typed = []
        for r in regs:
            t = self.host.regs.get(r, "pred" if r == "%__cc" else None)
            if t is None:
                continue  # (an undeclared register: the lowering names it)
            if r in self.host.reg_vec:
                raise UnsupportedError(f"the vector register {r} is live across a recursive call",
                                       call.line, call.text())
            bits = 16 if t == "pred" else max(ir.type_bits(t), 8)
            if bits > 64:
                raise UnsupportedError(f"the {bits}-bit register {r} is live across a recursive "
                                       "call", call.line, call.text())
            typed.append((-bits, r, t))
        off = 0
        saves = []
        for nbits, r, t in sorted(typed):
            saves.append((r, t, off))
            off += -nbits // 8
        return saves, _align(_align(off, 4) + 4, 8)

    def number(self, node: _Loop, first: int, tag: str) -> int:
        """Number the return sites under `node` in program order (a loop's: one interval)."""
        node.lo = first
        for x in node.items:
            if isinstance(x, _Site):
                x.number, x.resume = first, f"$rc_resume{first}{tag}"
                first += 1
            else:
                first = self.number(x, first, tag)
        node.hi = first - 1
        if node.label is not None:
            node.dispatch = f"$rc_into{node.lo}{tag}"
        return first

    def arms(self, node: _Loop) -> list[tuple[int, int, str]]:
        """(lowest, highest number, label) for each return site and loop right under `node`."""
        return [(x.number, x.number, x.resume) if isinstance(x, _Site) else (x.lo, x.hi, x.label)
                for x in node.items]

    def dispatch(self, arms: list[tuple[int, int, str]], line: int) -> list:
        """Branch on %cuport_next to the arm whose interval holds it (the last one otherwise)."""
        out: list = []
        for lo, hi, label in arms[:-1]:
            out += _branch_if_in(lo, hi, label, line)
        out.append(_i("bra", ("uni",), ir.Sym(arms[-1][2]), line=line))
        return out

    # ------------------------------------------------------------ code
    def emit(self, m: _Member, members: dict[str, _Member], head: str) -> list:
        """The member's body: calls into the component pushed, `ret` popped, loop headers
        with their return-site tests; its frame variables made addresses in its frame."""
        loops: dict[str, _Loop] = {}

        def collect(node: _Loop) -> None:
            for x in node.items:
                if isinstance(x, _Loop):
                    loops[x.label] = x
                    collect(x)

        collect(m.top)
        sites = {id(s.call): s for s in m.sites}
        out: list = [ir.Label(m.entry, self.by_name[m.name].line)]
        body = m.body
        i = 0
        while i < len(body):
            st = body[i]
            if isinstance(st, ir.Label):
                spot = []
                while i < len(body) and isinstance(body[i], ir.Label):
                    spot.append(body[i])
                    i += 1
                out += spot
                names = {x.name for x in spot}
                for label in names & loops.keys():  # a loop header: is a return site inside?
                    node = loops[label]
                    out += _branch_if_in(node.lo, node.hi, node.dispatch, st.line)
                if m.end in names:
                    if m.size:
                        out.append(_i("sub", ("s64",), SP, SP, ir.Imm(m.size), line=st.line))
                    out.append(_i("ld", ("local", "u32"), NEXT, _at(-4), line=st.line))
                    out.append(_i("bra", ("uni",), ir.Sym(head), line=st.line))
                continue
            i += 1
            site = sites.get(id(st))
            if site is None:
                out.append(st)
                continue
            callee = members[site.callee]
            args, rets = self.actuals(st, callee)
            out += self.enter(st, callee, args, site.saves, site.bytes, site.number)
            out.append(_i("bra", ("uni",), ir.Sym(head), line=st.line))
            out.append(ir.Label(site.resume, st.line))
            out.append(_i("mov", ("u32",), NEXT, ir.Imm(0), line=st.line))
            out.append(_i("sub", ("s64",), SP, SP, ir.Imm(site.bytes), line=st.line))
            for r, t, off in site.saves:
                out += self.restore(r, t, off, st.line)
            out += self.copy_out(callee, rets, site.bytes, st.line)
        for node in loops.values():
            out.append(ir.Label(node.dispatch, self.by_name[m.name].line))
            out += self.dispatch(self.arms(node), self.by_name[m.name].line)
        return _in_frame(out, m.offsets, m.size)

    def actuals(self, call: ir.Instr, callee: _Member) -> tuple[tuple, tuple]:
        """The `.param` variables a call passes and receives."""
        rets, _, params, _ = call_operands(call)
        if len(params) != len(callee.params) or len(rets) != len(callee.rets):
            raise UnsupportedError(f"a call of {callee.name} with the wrong number of arguments",
                                   call.line, call.text())
        if not all(isinstance(a, ir.Sym) for a in (*params, *rets)):
            raise UnsupportedError("a call argument that is not a .param variable", call.line, call.text())
        return params, rets

    def enter(self, call: ir.Instr, callee: _Member, args: tuple, saves: list, below: int,
              number: int) -> list:
        """Push the caller's part (`below` bytes: saves, then `number`) and the callee's
        frame with its arguments, after checking that they fit; %cuport_next = its entry."""
        ln = call.line
        out = [_i("add", ("s64",), NEW_SP, SP, ir.Imm(below + callee.size), line=ln),
               _i("setp", ("gt", "u64"), PRED, NEW_SP, ir.SymAddr(STACK, self.limit), line=ln),
               _i("trap", ("stack",), ir.Imm(self.limit), guard=PRED, line=ln)]
        for r, t, off in saves:
            if t == "pred":
                out.append(_i("selp", ("b16",), HALF, ir.Imm(1), ir.Imm(0), ir.Reg(r), line=ln))
                out.append(_i("st", ("local", "b16"), _at(off), HALF, line=ln))
            else:
                out.append(self.spill(_i("st", ("local", f"b{max(ir.type_bits(t), 8)}"), _at(off),
                                         ir.Reg(r), line=ln)))
        out.append(_i("st", ("local", "u32"), _at(below - 4), ir.Imm(number), line=ln))
        for a, (formal, size) in zip(args, callee.params, strict=True):
            for w in _words(size):
                out.append(_i("ld", ("param", "b32"), self.word(formal), ir.Mem(a, w), line=ln))
                out.append(self.slot("st", callee, formal, below, w, ln))
        out.append(_i("mov", ("u64",), SP, NEW_SP, line=ln))
        out.append(_i("mov", ("u32",), NEXT, ir.Imm(callee.number), line=ln))
        return out

    def restore(self, r: str, t: str, off: int, line: int) -> list:
        if t == "pred":
            return [_i("ld", ("local", "b16"), HALF, _at(off), line=line),
                    _i("setp", ("ne", "b16"), ir.Reg(r), HALF, ir.Imm(0), line=line)]
        return [self.spill(_i("ld", ("local", f"b{max(ir.type_bits(t), 8)}"), ir.Reg(r), _at(off),
                              line=line))]

    def spill(self, ins: ir.Instr) -> ir.Instr:
        self.facts.spills.add(id(ins))
        return ins

    def copy_out(self, callee: _Member, rets: tuple, below: int, line: int) -> list:
        """Copy the results from the popped frame (`below` bytes above the stack pointer)."""
        out = []
        for a, (formal, size) in zip(rets, callee.rets, strict=True):
            for w in _words(size):
                out.append(self.slot("ld", callee, formal, below, w, line))
                out.append(_i("st", ("param", "b32"), ir.Mem(a, w), self.word(formal), line=line))
        return out

    def slot(self, op: str, callee: _Member, formal: str, below: int, w: int, line: int) -> ir.Instr:
        """Move a word of the callee's parameter or result `formal` from or to its register
        (word): in its frame (`below` bytes above the stack pointer), or its one variable."""
        off = callee.offsets.get(formal)
        mem, space = (_at(below + off + w), "local") if off is not None else (ir.Mem(ir.Sym(formal), w), "param")
        reg = self.word(formal)
        return _i(op, (space, "b32"), *((reg, mem) if op == "ld" else (mem, reg)), line=line)

    def word(self, formal: str) -> ir.Reg:
        """The register a parameter's or result's words are copied through: one for each, so
        that address-space inference (passes/spaces.py) sees each pointer's own spaces."""
        reg = ir.Reg(f"%cuport_w{formal}")
        self.host.regs[reg.name] = "b32"
        return reg


def _crossing_calls(cfg: cfgmod.Cfg, calls: list[ir.Instr], params: set[str],
                    results: set[str]) -> set[str]:
    """The parameters and results whose values must outlive a call in `calls`: a parameter
    read after a call, a result touched before one, either's address taken. They get a
    copy in each activation's frame; the rest (nvcc reads its parameters first and writes
    its results last) can each be one variable, which keeps frames as small as a GPU's."""
    where = {id(ins): (b.index, k) for b in cfg.blocks for k, ins in enumerate(b.instrs)}
    spots = [where[id(c)] for c in calls if id(c) in where]
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for b, k in spots:
        first[b] = min(first.get(b, k), k)
        last[b] = max(last.get(b, k), k)
    after = _closure({s for b in first for s in cfg.blocks[b].succs}, [b.succs for b in cfg.blocks])
    before = _closure({p for b in first for p in cfg.blocks[b].preds}, [b.preds for b in cfg.blocks])
    out: set[str] = set()
    for blk in cfg.blocks:
        for k, ins in enumerate(blk.instrs):
            accessed, taken = _references(ins)
            out |= taken & (params | results)
            if blk.index in after or k > first.get(blk.index, len(blk.instrs)):
                out |= accessed & params
            if blk.index in before or k < last.get(blk.index, -1):
                out |= accessed & results
    return out


def _closure(start: set[int], edges: list[list[int]]) -> set[int]:
    seen: set[int] = set()
    work = list(start)
    while work:
        x = work.pop()
        if x not in seen:
            seen.add(x)
            work.extend(edges[x])
    return seen


def _references(ins: ir.Instr) -> tuple[set[str], set[str]]:
    """The variables `ins` accesses (`[var+k]`) and those whose address it takes."""
    accessed: set[str] = set()
    taken: set[str] = set()
    for a in ins.args:
        if isinstance(a, ir.Mem) and isinstance(a.base, ir.Sym):
            accessed.add(a.base.name)
        elif isinstance(a, (ir.Sym, ir.SymAddr)):
            taken.add(a.name)
    return accessed, taken


def _branch_if_in(lo: int, hi: int, label: str, line: int) -> list:
    """Go to `label` if %cuport_next is in [lo, hi]."""
    if lo == hi:
        test = [_i("setp", ("eq", "u32"), PRED, NEXT, ir.Imm(lo), line=line)]
    else:
        test = [_i("sub", ("u32",), DIFF, NEXT, ir.Imm(lo), line=line),
                _i("setp", ("le", "u32"), PRED, DIFF, ir.Imm(hi - lo), line=line)]
    return [*test, _i("bra", (), ir.Sym(label), guard=PRED, line=line)]


def _in_frame(code: list, offsets: dict[str, int], size: int) -> list:
    """`code` with the frame's variables addressed through the stack pointer (the frame is
    the `size` bytes below it while its function runs): `[var+k]` becomes `[%cuport_sp+d]`
    (a `.param` access a `.local` one), and a variable's address `var` becomes
    %cuport_sp - size + offset."""
    out: list = []
    for st in code:
        if not isinstance(st, ir.Instr):
            out.append(st)
            continue
        args = list(st.args)
        changed = False
        for k, a in enumerate(args):
            if isinstance(a, ir.Mem) and isinstance(a.base, ir.Sym) and a.base.name in offsets:
                args[k] = ir.Mem(SP, offsets[a.base.name] - size + a.offset)
                changed = True
            elif isinstance(a, (ir.Sym, ir.SymAddr)) and a.name in offsets:
                delta = offsets[a.name] - size + getattr(a, "offset", 0)
                if st.op == "mov" and k == 1:
                    st = ir.Instr("add", ("s64",), [args[0], SP, ir.Imm(delta)], st.guard, st.guard_neg,
                                  st.line, st.loc)
                    args = st.args
                else:
                    out.append(ir.Instr("add", ("s64",), [ADDR, SP, ir.Imm(delta)], None, False, st.line))
                    args[k] = ADDR
                changed = True
        if changed:
            mods = tuple("local" if x == "param" else x for x in st.mods) if st.op in ("ld", "st") else st.mods
            st = ir.Instr(st.op, mods, args, st.guard, st.guard_neg, st.line, st.loc)
        out.append(st)
    return out


def stack_recursive_calls(funcs: list[ir.Function], kernel: ir.Function,
                          stack_bytes: int = DEFAULT_STACK_BYTES) -> tuple[ir.Function, StackFacts]:
    """`kernel` (calls of non-recursive functions inlined) with every call of a recursive
    function of `funcs` made an instance of its component (copied, not mutated), and the
    facts: the stack bytes each recursive function takes a level (its frame and the most
    its calls push), the spills."""
    recursive = recursive_functions(funcs)
    if not any(isinstance(st, ir.Instr) and st.op == "call" and call_target(st) in recursive
               for st in kernel.body or ()):
        return kernel, StackFacts()
    new = copy.copy(kernel)
    new.regs = dict(kernel.regs)
    new.reg_vec = dict(kernel.reg_vec)
    new.locals = list(kernel.locals)
    stacker = _Stacker(funcs, new, stack_bytes)
    body = stacker.calls(list(kernel.body or ()))
    new.regs.update(_OWN)
    new.locals.append(ir.Var(STACK, "local", "b8", (stack_bytes,), align=8, line=kernel.line))
    new.body = [_i("mov", ("u64",), SP, ir.Sym(STACK), line=kernel.line), *body]
    return new, stacker.facts
