"""Which kernel parameters are the texture objects that `tex` and `tld4` sample.

Needs: a kernel's body (inlined or not). Leaves: for each texture operand of a `tex`/`tld4`
that certainly holds the value of one `.u64` kernel parameter, that parameter's name: the
operand names the parameter itself, or is a register whose every definition in the body is
an unguarded `ld.param` of the whole parameter (or a `mov` from such a register). A
parameter whose name appears anywhere but in `ld.param` (its address taken, a store) counts
for none.

Why: a launch knows what its parameters hold; where one is a live texture object the Vulkan
backend compiles a variant of the kernel whose samples take that object's format, filter and
address modes as constants (isa/texture_layout.Sampling), in straight-line code. An operand
this cannot tie to a parameter (an object loaded from memory, one chosen at run time) keeps
the sampler that reads the descriptor.
"""

from __future__ import annotations

from ..ptx import ir
from ..ptx.opcodes import has_dest

_HANDLE_TYPES = ("u64", "b64", "s64")


def texture_handles(fn: ir.Function) -> dict[str, str]:
    """Operand -> kernel parameter: a register's name, or a parameter's own, for each texture
    operand of `tex`/`tld4` in `fn` that certainly holds that parameter's value."""
    params = {p.name for p in fn.params if p.type in _HANDLE_TYPES and not p.dims and p.vector == 1}
    body = [st for st in fn.body or () if isinstance(st, ir.Instr)]
    for st in body:
        if _param_load(st, params) is None:
            image = _image(st)
            params -= ir.symbols_named(st.args) - ({image.name} if isinstance(image, ir.Sym) else set())
    defs: dict[str, list[ir.Instr]] = {}
    for st in body:
        for reg in _written(st):
            defs.setdefault(reg, []).append(st)

    def source(reg: str, seen: frozenset = frozenset()) -> str | None:
        """The parameter every definition of `reg` copies, if one."""
        found = set()
        for st in defs.get(reg, ()):
            if st.guard is not None:
                return None
            p = _param_load(st, params)
            if p is None and st.op == "mov" and isinstance(st.args[1], ir.Reg) \
                    and st.args[1].name not in seen and len(st.args) == 2:
                p = source(st.args[1].name, seen | {reg})
            if p is None:
                return None
            found.add(p)
        return found.pop() if len(found) == 1 else None

    out: dict[str, str] = {}
    for st in body:
        if st.op not in ("tex", "tld4"):
            continue
        image = _image(st)
        if isinstance(image, ir.Sym) and image.name in params:
            out[image.name] = image.name
        elif isinstance(image, ir.Reg) and image.name not in out:
            p = source(image.name)
            if p is not None:
                out[image.name] = p
    return out


def texture_params(fn: ir.Function) -> list[str]:
    """The kernel parameters (names, in declaration order) that texture operands of `fn` hold."""
    used = set(texture_handles(fn).values())
    return [p.name for p in fn.params if p.name in used]


def _image(st: ir.Instr):
    """The object operand of a texture instruction (`[object, {coordinates}]`): reading a
    parameter there reads its value."""
    if st.op not in ("tex", "tld4"):
        return None
    return next((a.items[0] for a in st.args if isinstance(a, ir.Vec) and a.items
                 and isinstance(a.items[-1], ir.Vec)), None)


def _param_load(st: ir.Instr, params: set[str]) -> str | None:
    """The parameter an `ld.param` of a whole 64-bit parameter into a register reads."""
    if st.op != "ld" or "param" not in st.mods or len(st.args) != 2:
        return None
    dst, mem = st.args
    if not (isinstance(dst, ir.Reg) and isinstance(mem, ir.Mem) and isinstance(mem.base, ir.Sym)
            and mem.offset == 0 and mem.base.name in params):
        return None
    if not any(m in _HANDLE_TYPES for m in st.mods) or any(m in ("v2", "v4") for m in st.mods):
        return None
    return mem.base.name


def _written(st: ir.Instr) -> list[str]:
    """The registers an instruction writes."""
    if not has_dest(st):
        return []
    d = st.args[0]
    items = d.items if isinstance(d, ir.Vec) else (d.p, d.q) if isinstance(d, ir.PredPair) else (d,)
    return [x.name for x in items if isinstance(x, ir.Reg)]
