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
  and conversions, and through the call-parameter variables of inlined calls (what is
  stored into one is what is loaded from it: a pointer argument keeps its spaces in the
  callee's body); what the device runtime returns as a buffer (GLOBAL_RESULTS) is global;
- a pointer loaded from memory may point anywhere, unless the function never stores a
  shared or local address into memory: then it points to global memory (a generic
  address of shared or local memory means something only to the block or thread that
  made it, so no one else can have stored one for it: libcudadevrt's error table, read
  through a pointer in a module variable at every device-side launch, is global);
- a pointer made any other way may point anywhere;
- a register spilled across a recursive call (passes/call_stack.py, `spills`: the store
  and the load that restores it) keeps its value: neither is a store or a load of one.

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
PRIVATE = frozenset({"shared", "local"})
#: opcodes whose result is an address when a source is one (pointer arithmetic)
_PROPAGATE = {"mov", "add", "sub", "mad", "and", "or", "xor", "cvt", "selp", "slct", "min", "max",
              "shl", "shr", "mul", "bfi", "prmt"}
#: calls whose result is an address in global memory: parameter buffers (dynamic
#: parallelism) and the device heap
GLOBAL_RESULTS = {"__cuda_syscall_cnpv2GetParameterBufferV2", "__cuda_syscall_cnpv2GetParameterBuffer",
                  "malloc"}


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


def _param_var(ins: ir.Instr, tracked: set[str]) -> str | None:
    """The call-parameter variable a ld.param/st.param names, if it is a tracked one."""
    if ins.op not in ("ld", "st") or space_of(ins) != "param":
        return None
    m = ins.args[0 if ins.op == "st" else 1] if len(ins.args) > 1 else None
    if isinstance(m, ir.Mem) and isinstance(m.base, ir.Sym) and m.base.name in tracked:
        return m.base.name
    return None


def _call_variables(body: list[ir.Instr], fn: ir.Function) -> tuple[set[str], dict[str, bool]]:
    """(the call-parameter variables whose contents can be followed: named only by
    ld.param/st.param and as call operands; those calls return into, with whether what they
    return is a global address)."""
    names = {v.name for v in fn.locals if v.space == "param"}
    escaped: set[str] = set()
    returned: dict[str, bool] = {}
    for ins in body:
        if ins.op == "call":
            args = list(ins.args)
            rets = args.pop(0).items if args and isinstance(args[0], ir.Args) else ()
            target = args[0].name if args and isinstance(args[0], ir.Sym) else None
            for r in rets:
                if isinstance(r, ir.Sym):
                    returned[r.name] = target in GLOBAL_RESULTS
            continue
        if ins.op in ("ld", "st") and space_of(ins) == "param":
            m = ins.args[0 if ins.op == "st" else 1] if len(ins.args) > 1 else None
            if not (isinstance(m, ir.Mem) and isinstance(m.base, ir.Sym)):
                escaped |= names  # (a param access through an address: it may be any)
            continue
        escaped |= ir.symbols_named(ins.args) & names
    return names - escaped, returned


def _seed(ins: ir.Instr, kernel_params: set[str], loaded: frozenset[str],
          unknown: frozenset[str]) -> frozenset[str] | None:
    """The spaces of an instruction's result when they do not depend on its sources
    (`loaded`: of a value loaded from memory; `unknown`: of one made any other way)."""
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
        return loaded
    if ins.op == "mov" and len(ins.args) > 1 and isinstance(ins.args[1], (ir.Sym, ir.SymAddr)):
        return GLOBAL
    if ins.op == "mov" and len(ins.args) > 1 and isinstance(ins.args[1], ir.Special) \
            and ins.args[1].name.startswith("%envreg"):
        return GLOBAL  # the driver's values: the cooperative launch's grid workspace (global)
    if ins.op in _PROPAGATE:
        return None
    return unknown


def analyze(fn: ir.Function, spills: frozenset[int] = frozenset()) -> Spaces:
    """`spills`: the ids of instructions that save a register to memory or restore it."""
    body = [s for s in fn.body or () if isinstance(s, ir.Instr) and id(s) not in spills]
    private = any(
        s.op == "cvta" and "to" not in s.mods
        and any(m.split("::")[0] in ("shared", "local") for m in s.mods)
        for s in body
    )
    if not private:
        return Spaces({}, False)
    tracked, returned = _call_variables(body, fn)
    # which values are shared or local addresses made by this thread's cvta (nothing
    # stored to memory is one, so far as this knows): is any stored to memory?
    made = _solve(body, fn, tracked, returned, frozenset(), frozenset())
    loaded = ANY if _stores_private(body, made, tracked) else GLOBAL
    regs = _solve(body, fn, tracked, returned, loaded, ANY)
    # a register that never received an address (an integer) used as one: anywhere
    return Spaces({r: (s if s else ANY) for r, s in regs.items()}, True)


def _solve(body: list[ir.Instr], fn: ir.Function, tracked: set[str], returned: dict[str, bool],
           loaded: frozenset[str], unknown: frozenset[str]) -> dict[str, frozenset[str]]:
    """The spaces of every register (`loaded`: of a value loaded from memory; `unknown`:
    of one made any other way, a call's result included)."""
    kernel_params = {p.name for p in fn.params} if fn.is_entry else set()
    regs: dict[str, frozenset[str]] = {}
    # call-parameter variable -> spaces
    params = {name: GLOBAL if is_global else unknown for name, is_global in returned.items()}
    changed = True
    while changed:
        changed = False
        for ins in body:
            var = _param_var(ins, tracked)
            if var is not None and ins.op == "st":
                val = frozenset().union(*(regs.get(r.name, frozenset()) for r in regs_in(ins.args[1])))
                if not val <= params.get(var, frozenset()):
                    params[var] = params.get(var, frozenset()) | val
                    changed = True
                continue
            ds = defs(ins)
            if not ds:
                continue
            if var is not None:
                seed = params.get(var, frozenset())
            else:
                seed = _seed(ins, kernel_params, loaded, unknown)
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
    return regs


def _stores_private(body: list[ir.Instr], regs: dict[str, frozenset[str]], tracked: set[str]) -> bool:
    """Whether an instruction that writes memory (a store, an atomic, anything with an
    address that is not a load) may write a shared or local address there. (A tracked
    call-parameter variable is followed exactly; the device-runtime functions cuport
    provides keep no pointer they are given.)"""
    for ins in body:
        if ins.op in ("ld", "ldu", "call") or _param_var(ins, tracked) is not None:
            continue
        if not any(isinstance(a, ir.Mem) for a in ins.args):
            continue
        for a in ins.args:
            if isinstance(a, ir.Mem):
                continue
            if any(regs.get(r.name, frozenset()) & PRIVATE for r in regs_in(a)):
                return True
    return False
