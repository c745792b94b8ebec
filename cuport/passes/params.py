"""Turn the `.param` variables of inlined calls into registers.

Needs: a function whose calls were inlined (passes/inline.py binds a callee's formal
parameters to the caller's `.param` variables, so an argument still goes through memory:
`st.param [p], %x` at the call, `ld.param %y, [p]` in the copied body). Leaves: each such
variable that is only ever stored and loaded whole, at offset 0, with one width that its
registers share, replaced by a register: the store a `mov` into it, each load a `mov` out.

Why: the divergence analysis takes a load from memory to differ between lanes, so a
uniform argument became varying in the callee, and a barrier behind a branch on it was
"in code that part of the block may skip" (libcudadevrt's cudaCGSynchronize tests its
handle before the grid barrier). Through a register the value keeps its uniformity.

Legal always: a memory cell that is only loaded and stored directly, whose address is
never taken nor passed (a call that remains, a vector or partial access, an array), is a
register. Variables that fail any condition keep their memory.
"""

from __future__ import annotations

import copy

from ..ptx import ir
from ..ptx.ir import TYPE_BITS

_WIDTHS = (16, 32, 64)  # widths `mov.bN` copies between registers


def forward_params(fn: ir.Function) -> ir.Function:
    """`fn` (copied, not mutated) with its forwardable `.param` variables as registers."""
    candidates = {v.name: TYPE_BITS.get(v.type, 0) for v in fn.locals
                  if v.space == "param" and not v.dims and v.vector == 1}
    candidates = {n: w for n, w in candidates.items() if w in _WIDTHS}
    for st in fn.body or ():
        if not isinstance(st, ir.Instr) or not candidates:
            continue
        access = _access(st)
        for name in ir.symbols_named(st.args):
            if name in candidates and (access is None or access[0] != name
                                       or not _fits(fn, st, candidates[name])):
                del candidates[name]
    if not candidates:
        return fn
    new = copy.copy(fn)
    new.regs = dict(fn.regs)
    new.locals = [v for v in fn.locals if v.name not in candidates]
    regs = {}
    for name, width in candidates.items():
        regs[name] = f"%{name}$reg"
        new.regs[regs[name]] = f"b{width}"
    body: list = []
    for st in fn.body:
        access = _access(st) if isinstance(st, ir.Instr) else None
        if access is None or access[0] not in candidates:
            body.append(st)
            continue
        reg = ir.Reg(regs[access[0]])
        mov = ("b" + str(candidates[access[0]]),)
        args = [reg, st.args[1]] if st.op == "st" else [st.args[0], reg]
        body.append(ir.Instr("mov", mov, args, st.guard, st.guard_neg, st.line, st.loc))
    new.body = body
    return new


def _access(st: ir.Instr) -> tuple[str, str] | None:
    """(variable, type) of a scalar `ld.param`/`st.param` of a whole `.param` variable."""
    if st.op not in ("ld", "st") or "param" not in st.mods or len(st.args) != 2:
        return None
    if any(m in ("v2", "v4", "v8") for m in st.mods):
        return None
    mem = st.args[1] if st.op == "ld" else st.args[0]
    if not (isinstance(mem, ir.Mem) and isinstance(mem.base, ir.Sym) and mem.offset == 0):
        return None
    types = [m for m in st.mods if m in TYPE_BITS]
    return (mem.base.name, types[-1]) if len(types) == 1 else None


def _fits(fn: ir.Function, st: ir.Instr, width: int) -> bool:
    """The access moves the variable's width, from or to a register of that width."""
    _, typ = _access(st)
    if TYPE_BITS[typ] != width:
        return False
    value = st.args[0] if st.op == "ld" else st.args[1]
    if isinstance(value, ir.Reg):
        return TYPE_BITS.get(fn.regs.get(value.name, ""), 0) == width
    return st.op == "st" and isinstance(value, (ir.Imm, ir.FImm))
