"""Inline device functions that a warp must be able to suspend in into their callers.

Needs: parsed functions. Leaves: no reachable `.func` that contains a barrier or a loop that
may wait for another thread (passes/yields.py, a spin loop), but for recursive and
address-taken ones with spin loops (below). The warp executor can only suspend a warp in the
kernel's own LLVM function (a device function's frame would be lost), at a barrier or at a
spin loop's yield point, so such a function is brought into the kernel: the callee's body
is copied in place of the `call`, its registers, labels and local variables renamed, its
formal parameters bound to the caller's `.param` variables, and each `ret` turned into a
branch to the end of the copy; its callers are inlined in turn (they gain the barrier or the
loop). A `__noinline__` function spinning on a flag set by a block not yet started (or a
grid sync in one) deadlocked a worker whose blocks were all waiting before this.

A function that calls itself (directly or not) and contains a barrier cannot be inlined and
is refused. One with a spin loop stays a function, as does one whose address is taken (a
call through a register may reach it): its loop gets no yield point, so it may wait only for
threads already running, as before.

Legal whenever the call is not guarded by a predicate (nvcc never guards calls).
"""

from __future__ import annotations

import copy
import itertools

from ..ptx import ir
from ..ptx.callgraph import address_taken, call_operands, recursive_components
from ..ptx.callgraph import call_target as _call_target
from ..ptx.errors import UnsupportedError
from .cfg import is_barrier
from .yields import has_spin_loop, waits_in

_counter = itertools.count(1)


def has_barrier(fn: ir.Function) -> bool:
    return any(isinstance(s, ir.Instr) and is_barrier(s) for s in fn.body or ())


def _with_callers(start: set[str], funcs: list[ir.Function], admit) -> set[str]:
    """`start` and the functions of `funcs` that call one of them, directly or not, that
    `admit` lets in."""
    out = set(start)
    changed = True
    while changed:
        changed = False
        for f in funcs:
            if f.is_entry or f.name in out or not admit(f):
                continue
            if any(isinstance(st, ir.Instr) and st.op == "call" and _call_target(st) in out
                   for st in f.body or ()):
                out.add(f.name)
                changed = True
    return out


def inline_suspending_functions(module: ir.Module, funcs: list[ir.Function]) -> list[ir.Function]:
    """Return `funcs` with the callees a warp must be able to suspend in (see the module
    docstring) inlined into the entry (copied, not mutated)."""
    by_name = {f.name: f for f in funcs}
    taken = address_taken(module)
    recursive = frozenset().union(*recursive_components(funcs))
    waits = waits_in(funcs, taken)

    def plain(f: ir.Function) -> bool:
        return f.name not in recursive and f.name not in taken

    # a caller of a function with a barrier gains the barrier: inlined too (or refused)
    needs = _with_callers({f.name for f in funcs if not f.is_entry and has_barrier(f)},
                          funcs, lambda f: True)
    spins = {f.name for f in funcs if not f.is_entry and plain(f) and has_spin_loop(f, waits)}
    needs |= _with_callers(spins, funcs, plain)
    if not needs:
        return funcs
    out: list[ir.Function] = []
    for f in funcs:
        if f.name in needs:
            continue
        if any(isinstance(st, ir.Instr) and st.op == "call" and _call_target(st) in needs for st in f.body or ()):
            f = _inline_into(f, by_name, needs, UnsupportedError)
        out.append(f)
    return out


def _inline_into(fn: ir.Function, by_name: dict[str, ir.Function], needs: set[str], err) -> ir.Function:
    new = copy.copy(fn)
    new.regs = dict(fn.regs)
    new.reg_vec = dict(fn.reg_vec)
    new.locals = list(fn.locals)
    new.prototypes = dict(fn.prototypes)
    body = list(fn.body or ())
    stack: list[str] = []
    new.body = _expand(body, new, by_name, needs, err, stack)
    return new


def _expand(body: list, host: ir.Function, by_name, needs, err, stack: list[str]) -> list:
    out: list = []
    for st in body:
        if not (isinstance(st, ir.Instr) and st.op == "call" and _call_target(st) in needs):
            out.append(st)
            continue
        name = _call_target(st)
        if name in stack:
            raise err(f"the recursive device function {name} contains a CTA barrier", st.line)
        if st.guard is not None:
            raise err("a guarded call of a function that contains a barrier", st.line, st.text())
        callee = by_name[name]
        stack.append(name)
        copy_body = instantiate(st, callee, host, err)
        out.extend(_expand(copy_body, host, by_name, needs, err, stack))
        stack.pop()
    return out


def instantiate(call: ir.Instr, callee: ir.Function, host: ir.Function, err, tag: str = "") -> list:
    """A copy of `callee`'s body for `call`, its names suffixed with `tag` (a fresh one by
    default), each `ret` a branch to the label `$ret` + tag that ends the copy."""
    tag = tag or f"$in{next(_counter)}"
    rets, _, params, _ = call_operands(call)
    if len(params) != len(callee.params) or len(rets) < len(callee.rets):
        raise err(f"a call of {callee.name} with the wrong number of arguments", call.line, call.text())
    # a call may name a result its callee does not give (a prototype declared with one for a
    # function defined without: numba-cuda's declare_device of a C void function, linked from
    # another module): as on a GPU, and as on the CPU backend, nothing writes that .param
    rets = rets[:len(callee.rets)]
    rename: dict[str, str] = {}
    for formal, actual in zip(list(callee.params) + list(callee.rets), list(params) + list(rets), strict=True):
        if not isinstance(actual, ir.Sym):
            raise err("a call argument that is not a .param variable", call.line, call.text())
        rename[formal.name] = actual.name
    labels = {st.name for st in callee.body or () if isinstance(st, ir.Label)}
    for lbl in labels:
        rename[lbl] = lbl + tag
    for v in callee.locals:
        nv = copy.copy(v)
        nv.name = v.name + tag
        rename[v.name] = nv.name
        if v.space == "shared":
            # a function's static shared variable is one per block, not one per call site
            nv.name = v.name
            rename[v.name] = v.name
            if any(x.name == v.name for x in host.locals):
                continue
        host.locals.append(nv)
    regmap: dict[str, str] = {}
    for r, t in callee.regs.items():
        regmap[r] = r + tag
        host.regs[r + tag] = t
        if r in callee.reg_vec:
            host.reg_vec[r + tag] = callee.reg_vec[r]
    end = "$ret" + tag

    def op(o):
        if isinstance(o, ir.Reg):
            return ir.Reg(regmap.get(o.name, o.name))
        if isinstance(o, ir.Not):
            return ir.Not(op(o.reg))
        if isinstance(o, ir.Sym):
            return ir.Sym(rename.get(o.name, o.name))
        if isinstance(o, ir.SymAddr):
            return ir.SymAddr(rename.get(o.name, o.name), o.offset, o.generic)
        if isinstance(o, ir.Mem):
            base = o.base
            if isinstance(base, ir.Reg):
                base = op(base)
            elif isinstance(base, ir.Sym):
                base = ir.Sym(rename.get(base.name, base.name))
            return ir.Mem(base, o.offset)
        if isinstance(o, ir.Vec):
            return ir.Vec(tuple(op(x) for x in o.items))
        if isinstance(o, ir.Args):
            return ir.Args(tuple(op(x) for x in o.items))
        if isinstance(o, ir.PredPair):
            return ir.PredPair(op(o.p), op(o.q))
        return o

    out: list = []
    for st in callee.body or ():
        if isinstance(st, ir.Label):
            out.append(ir.Label(rename[st.name], st.line))
            continue
        guard = ir.Reg(regmap.get(st.guard.name, st.guard.name)) if st.guard is not None else None
        if st.op == "ret":
            out.append(ir.Instr("bra", ("uni",) if guard is None else (), [ir.Sym(end)], guard, st.guard_neg, st.line, st.loc))
            continue
        out.append(ir.Instr(st.op, st.mods, [op(a) for a in st.args], guard, st.guard_neg, st.line, st.loc))
    out.append(ir.Label(end, call.line))
    return out


def inline_all_calls(module: ir.Module, funcs: list[ir.Function], kernel: str,
                     keep: frozenset[str] = frozenset()) -> ir.Function:
    """The kernel `kernel` with every call of a defined device function inlined (copied, not
    mutated); calls of `.extern` functions (vprintf, __assertfail, malloc) and of the
    functions in `keep` (the recursive ones: passes/call_stack.py) stay calls.

    For backends without a call stack of their own (Vulkan's SPIR-V has no recursion and no
    function pointers). A guarded call becomes a branch around the inlined body; recursion
    outside `keep` and indirect calls are refused with the call's line."""
    by_name = {f.name: f for f in funcs}
    fn = by_name[kernel]
    defined = {n for n, f in by_name.items() if f.is_definition and not f.is_entry} - keep
    for st in fn.body or ():
        if isinstance(st, ir.Instr) and st.op == "call" and _call_target(st) is None:
            raise UnsupportedError("an indirect call (a function pointer)", st.line, st.text())
    body = unguard_calls(list(fn.body or ()), defined)
    new = copy.copy(fn)
    new.regs = dict(fn.regs)
    new.reg_vec = dict(fn.reg_vec)
    new.locals = list(fn.locals)
    new.prototypes = dict(fn.prototypes)
    new.body = _expand_all(body, new, by_name, defined, [])
    return new


def expand_calls(body: list, host: ir.Function, by_name: dict[str, ir.Function],
                 defined: set[str]) -> list:
    """`body` (of `host`) with every call of a function in `defined` inlined, recursively."""
    return _expand_all(unguard_calls(body, defined), host, by_name, defined, [])


def unguard_calls(body: list, defined: set[str]) -> list:
    """`@p call f` → `@!p bra skip; call f; skip:` (inlining copies a body, not a guard)."""
    out: list = []
    for st in body:
        if isinstance(st, ir.Instr) and st.op == "call" and st.guard is not None \
                and _call_target(st) in defined:
            skip = f"$skip{next(_counter)}"
            out.append(ir.Instr("bra", (), [ir.Sym(skip)], st.guard, not st.guard_neg, st.line, st.loc))
            out.append(ir.Instr(st.op, st.mods, st.args, None, False, st.line, st.loc))
            out.append(ir.Label(skip, st.line))
        else:
            out.append(st)
    return out


def _expand_all(body: list, host: ir.Function, by_name, defined: set[str], stack: list[str]) -> list:
    out: list = []
    for st in body:
        name = _call_target(st) if isinstance(st, ir.Instr) and st.op == "call" else None
        if name not in defined:
            if isinstance(st, ir.Instr) and st.op == "call" and name is None:
                raise UnsupportedError("an indirect call (a function pointer)", st.line, st.text())
            out.append(st)
            continue
        if name in stack:
            raise UnsupportedError(f"the recursive device function {name} (this backend has no "
                                   "call stack)", st.line, st.text())
        stack.append(name)
        copied = unguard_calls(instantiate(st, by_name[name], host, UnsupportedError), defined)
        out.extend(_expand_all(copied, host, by_name, defined, stack))
        stack.pop()
    return out
