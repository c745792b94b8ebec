"""Link several parsed PTX modules (the relocatable objects of an `-rdc` program) into one.

A definition replaces `.extern` declarations of the same name; a strong definition
replaces a `.weak` one; two strong definitions of one name are an error, as for the
device linker.
"""

from __future__ import annotations

from . import ir


class LinkError(Exception):
    pass


def link_modules(mods: list[ir.Module]) -> ir.Module:
    out = ir.Module(
        version=max(m.version for m in mods),
        target=mods[0].target,
        address_size=mods[0].address_size,
    )
    var_index: dict[str, int] = {}
    for m in mods:
        for v in m.variables:
            i = var_index.get(v.name)
            if i is None:
                var_index[v.name] = len(out.variables)
                out.variables.append(v)
                continue
            old = out.variables[i]
            if _stronger(v.linkage, v.init is not None or v.space == "shared", old.linkage,
                         old.init is not None or old.space == "shared"):
                out.variables[i] = v
        for name, f in m.functions.items():
            old = out.functions.get(name)
            if old is None:
                out.functions[name] = f
            elif f.is_definition and old.is_definition:
                if old.linkage != "weak" and f.linkage != "weak":
                    raise LinkError(f"{name} is defined in two PTX modules")
                if old.linkage == "weak" and f.linkage != "weak":
                    out.functions[name] = f
            elif f.is_definition:
                out.functions[name] = f
        for k, v in m.files.items():
            out.files.setdefault(k, v)
    return out


def _stronger(link_new: str, def_new: bool, link_old: str, def_old: bool) -> bool:
    if link_old == "extern" and link_new != "extern":
        return True
    if link_old == "weak" and link_new not in ("weak", "extern"):
        return True
    return not def_old and def_new
