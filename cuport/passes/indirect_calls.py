"""Calls through a register (function pointers, C++ virtual functions): which functions they
may reach, and, for backends without function pointers, direct calls in their place.

A function's address in cuport is its token (backends/device_launch.function_token): what
`mov.u64 %rd, f` gives and what a virtual-function table's initialiser holds. A call through
a register may reach the defined device functions whose address the module takes
(ptx/callgraph.address_taken) with as many parameters and results as the call passes, and
without a block barrier (a barrier reached through a pointer would be one part of the block
may skip): `indirect_targets`, the same set on every backend. The CPU backend calls the
lanes' targets one by one (cpu/emit.py _indirect_call). SPIR-V has no function pointers, so
for the Vulkan backend `resolve_indirect_calls` rewrites each such call, before inlining, as

    setp.eq.u64     %p1, %rd, TOKEN(f1);       (and the call's own guard, if any)
    @%p1 call (ret), f1, (args);
    ...
    setp.ne.u64     %none, %rd, TOKEN(f1); setp.ne.and.u64 %none, %rd, TOKEN(f2), %none; ...
    @%none trap;                                (no function has that address)

after which the targets are ordinary guarded calls that the inliner copies in (recursion
through a virtual call becomes direct recursion, for passes/call_stack.py).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable

from ..ptx import ir
from ..ptx.callgraph import call_operands
from .inline import has_barrier

_counter = itertools.count(1)


def indirect_targets(module: ir.Module, taken: set[str], nparams: int, nrets: int) -> list[ir.Function]:
    """The functions a call through a register with `nparams` arguments and `nrets` results
    may reach (`taken`: the module's address-taken functions), in declaration order."""
    return [f for f in module.functions.values()
            if f.is_definition and not f.is_entry and f.name in taken and len(f.params) == nparams
            and len(f.rets) == nrets and not has_barrier(f)]


def has_indirect_call(fn: ir.Function) -> bool:
    return any(isinstance(st, ir.Instr) and st.op == "call" and isinstance(call_operands(st)[1], ir.Reg)
               for st in fn.body or ())


def resolve_indirect_calls(fn: ir.Function, module: ir.Module, taken: set[str],
                           token: Callable[[str], int]) -> ir.Function:
    """`fn` (a copy, where it changes) with each call through a register made guarded direct
    calls of its `indirect_targets` (module docstring); `token(name)` is a function's address."""
    if not has_indirect_call(fn):
        return fn
    new = copy.copy(fn)
    new.regs = dict(fn.regs)
    body: list = []
    for st in fn.body or ():
        if not (isinstance(st, ir.Instr) and st.op == "call"):
            body.append(st)
            continue
        rets, target, params, _ = call_operands(st)
        if not isinstance(target, ir.Reg):
            body.append(st)
            continue
        body.extend(_dispatch(st, new, target, indirect_targets(module, taken, len(params), len(rets)),
                              token))
    new.body = body
    return new


def _dispatch(call: ir.Instr, host: ir.Function, target: ir.Reg,
              targets: list[ir.Function], token: Callable[[str], int]) -> list[ir.Instr]:
    n = next(_counter)
    line, loc = call.line, call.loc
    guard = None if call.guard is None else (ir.Not(call.guard) if call.guard_neg else call.guard)

    def pred(name: str) -> ir.Reg:
        reg = f"%__icall{n}_{name}"
        host.regs[reg] = "pred"
        return ir.Reg(reg)

    def setp(cmp: str, dst: ir.Reg, fn: ir.Function, also) -> ir.Instr:
        args = [dst, target, ir.Imm(token(fn.name))]
        if also is None:
            return ir.Instr("setp", (cmp, "u64"), args, None, False, line, loc)
        return ir.Instr("setp", (cmp, "and", "u64"), args + [also], None, False, line, loc)

    out: list[ir.Instr] = []
    rest = len(call_operands(call)[3])  # (the prototype)
    head = list(call.args[:len(call.args) - rest])
    slot = next(i for i, a in enumerate(head) if a is target)
    for i, f in enumerate(targets):
        p = pred(str(i))
        out.append(setp("eq", p, f, guard))
        args = list(head)
        args[slot] = ir.Sym(f.name)
        out.append(ir.Instr("call", call.mods, args, p, False, line, loc))
    if not targets:  # (no function of the module can be called this way)
        return [ir.Instr("trap", (), [], call.guard, call.guard_neg, line, loc)]
    none = pred("none")
    for i, f in enumerate(targets):
        out.append(setp("ne", none, f, guard if i == 0 else none))
    out.append(ir.Instr("trap", (), [], none, False, line, loc))
    return out
