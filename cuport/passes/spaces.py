"""Address-space inference: which state spaces a generic address may point into.

Needs: a function whose calls are inlined (the Vulkan pipeline inlines everything).
Leaves: `Spaces`, answering for every generic memory access (ld/st/atom/red without a
state space) the set of spaces its address register may point into.

A GPU backend keeps shared memory (workgroup memory) and local memory (per invocation)
apart from global memory, so a generic access must know where it goes. Generic pointers
into shared or local memory are only made by `cvta.shared`/`cvta.local` (PTX has no other
way: `mov` of a shared variable gives its shared-space address), so:

- when the function has no such cvta, every generic access is a global one;
- otherwise registers carry the union of the spaces of what flows into them (flow
  insensitive: PTX from nvcc is nearly SSA), through moves, integer arithmetic, selects
  and conversions; a pointer loaded from memory or made any other way may point anywhere.

An access with several possible spaces gets a run-time test of the address (the backend's
windows); with one, none.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..isa.memory import space_of
from ..isa.operands import defs, regs_in
from ..ptx import ir

ANY = frozenset({"global", "shared", "local"})
GLOBAL = frozenset({"global"})
#: opcodes whose result is an address when a source is one (pointer arithmetic)
_PROPAGATE = {"mov", "add", "sub", "mad", "and", "or", "xor", "cvt", "selp", "slct", "min", "max",
              "shl", "shr", "mul", "bfi", "prmt"}


@dataclass
class Spaces:
    regs: dict[str, frozenset[str]]
    any_generic_private: bool  # some cvta makes shared or local memory generic

    def of(self, mem: ir.Mem) -> frozenset[str]:
        """The spaces the generic address `mem` may point into."""
        if not self.any_generic_private:
            return GLOBAL
        base = mem.base
        if isinstance(base, ir.Reg):
            return self.regs.get(base.name, ANY)
        return GLOBAL  # a symbol or an absolute address: module variables are global


def _seed(ins: ir.Instr, kernel_params: set[str]) -> frozenset[str] | None:
    """The spaces of an instruction's result when they do not depend on its sources."""
    if ins.op == "cvta":
        if "to" in ins.mods:
            return frozenset()  # a space-specific address, not a generic pointer
        for sp in ("shared", "local"):
            if sp in ins.mods or any(m.startswith(sp + "::") for m in ins.mods):
                return frozenset({sp})
        return GLOBAL  # cvta.global / .const / .param: global memory on every backend
    if ins.op in ("ld", "ldu"):
        m = ins.args[1] if len(ins.args) > 1 else None
        if space_of(ins) == "param" and isinstance(m, ir.Mem) and isinstance(m.base, ir.Sym) \
                and m.base.name in kernel_params:
            return GLOBAL  # pointers passed by the host point to global memory
        return ANY
    if ins.op == "mov" and len(ins.args) > 1 and isinstance(ins.args[1], (ir.Sym, ir.SymAddr)):
        return GLOBAL
    if ins.op == "mov" and len(ins.args) > 1 and isinstance(ins.args[1], ir.Special) \
            and ins.args[1].name.startswith("%envreg"):
        return GLOBAL  # the driver's values: the cooperative launch's grid workspace (global)
    if ins.op in _PROPAGATE:
        return None
    return ANY


def analyze(fn: ir.Function) -> Spaces:
    body = [s for s in fn.body or () if isinstance(s, ir.Instr)]
    private = any(
        s.op == "cvta" and "to" not in s.mods
        and any(m.split("::")[0] in ("shared", "local") for m in s.mods)
        for s in body
    )
    if not private:
        return Spaces({}, False)
    kernel_params = {p.name for p in fn.params} if fn.is_entry else set()
    regs: dict[str, frozenset[str]] = {}
    changed = True
    while changed:
        changed = False
        for ins in body:
            ds = defs(ins)
            if not ds:
                continue
            seed = _seed(ins, kernel_params)
            if seed is None:
                val: frozenset[str] = frozenset()
                for a in ins.args[1:]:
                    for r in regs_in(a):
                        val |= regs.get(r.name, frozenset())
            else:
                val = seed
            for d in ds:
                old = regs.get(d.name, frozenset())
                new = old | val
                if new != old:
                    regs[d.name] = new
                    changed = True
    # a register that never received an address (an integer) used as one: anywhere
    return Spaces({r: (s if s else ANY) for r, s in regs.items()}, True)
