"""Calls to declared `spv.*` functions: the emitter's way of naming SPIR-V things.

- `spv.builtin.<Name>[.x|.y|.z]()`: a BuiltIn input variable (its type is the call's return
  type, or uvec3 with a component selected);
- `spv.push.<type>(i32 offset)`: a member of the push-constant block (built in
  translate._prescan from all such calls);
- `spv.loop_cut.i32()`: the PTX line of the first loop the driver ended early in this
  invocation, 0 if none (translate.LoopMarks; 0 where loops are not marked);
- `spv.Op<Name>[.<anything>](args...)`: instruction Op<Name>, its operands after the result
  type and id in grammar order; the grammar says which arguments are <id>s (made from values,
  constants and pointers) and which are literals or enumerants (taken from constant
  arguments); the capabilities and extensions come from the grammar too.
"""

from __future__ import annotations

from llvmlite import ir as ll

from . import grammar as g
from .memory import access_pointer
from .module import OP, SpirvError, enum

_ID_KINDS = frozenset({"IdRef", "IdScope", "IdMemorySemantics"})
_COMPONENT = {"x": 0, "y": 1, "z": 2}


def call(tr, ins, name: str) -> None:
    parts = name.split(".")
    if len(parts) >= 3 and parts[1] == "builtin":
        _builtin(tr, ins, parts[2], parts[3] if len(parts) > 3 else None)
    elif parts[1] == "push":
        _push(tr, ins)
    elif parts[1] == "loop_cut":
        tr.loop_cut(ins)
    elif parts[1].startswith("Op"):
        spirv_op(tr, ins, parts[1])
    else:
        raise tr.error(f"unknown SPIR-V escape @{name}")


# ---------------------------------------------------------------------- builtins, push
def _builtin(tr, ins, name: str, comp: str | None) -> None:
    if name not in g.ENUMS["BuiltIn"]:
        raise tr.error(f"no SPIR-V BuiltIn {name}")
    if comp is not None and comp not in _COMPONENT:
        raise tr.error(f"builtin component .{comp}: .x, .y or .z")
    if ins.args:
        raise tr.error("spv.builtin.* takes no arguments")
    t = ins.type
    vt = ll.VectorType(t, 3) if comp is not None else t
    key = (name, str(vt))
    var = tr.builtins.get(key)
    if var is None:
        if any(k[0] == name for k in tr.builtins):
            raise tr.error(f"builtin {name} read as two different types")
        tr.m.require_enum("BuiltIn", name)
        var = tr.m.global_variable(tr.ptr_type("Input", tr.ty(vt)), "Input")
        tr.m.decorate(var, "BuiltIn", enum("BuiltIn", name))
        tr.interface[var] = None
        tr.builtins[key] = var
    v = tr.op(OP.OpLoad, tr.ty(vt), var)
    if comp is not None:
        v = tr.op(OP.OpCompositeExtract, tr.ty(t), v, _COMPONENT[comp])
    tr.define(ins, v)


def _push(tr, ins) -> None:
    off = int(ins.args[0].constant)
    member, t = tr.push_members[off]
    p = tr.op(OP.OpAccessChain, tr.ptr_type("PushConstant", tr.ty(t)), tr.push_var, tr.cint(member))
    tr.define(ins, tr.op(OP.OpLoad, tr.ty(t), p))


# ---------------------------------------------------------------------- Op<Name>
def _arg_kinds(tr, kinds: tuple[str, ...], args: list) -> list[str]:
    """The grammar kind of each argument (enumerant parameters included)."""
    out: list[str] = []
    i = 0

    def one(kind: str) -> None:
        nonlocal i
        if i >= len(args):
            raise tr.error(f"operand {kind} missing")
        cat = g.KINDS.get(kind)
        if cat == "Composite":
            for b in g.COMPOSITES[kind]:
                one(b)
            return
        out.append(kind)
        a = args[i]
        i += 1
        if cat in ("ValueEnum", "BitEnum"):
            value = _literal(tr, a, kind)
            for row in _enumerants(kind, value):
                for p in row[1]:
                    one(p.rstrip("?*"))

    for kind in kinds:
        q = kind[-1] if kind[-1] in "?*" else ""
        base = kind[:-1] if q else kind
        if q == "*":
            while i < len(args):
                one(base)
        elif q == "?":
            if i < len(args):
                one(base)
        else:
            one(base)
    if i != len(args):
        raise tr.error(f"{len(args) - i} argument(s) more than the instruction has operands")
    return out


def _enumerants(kind: str, value: int) -> list[tuple]:
    table = g.ENUMS[kind]
    if g.KINDS[kind] == "ValueEnum":
        return [next(row for row in table.values() if row[0] == value)] if any(r[0] == value for r in table.values()) else []
    rows = []
    seen = set()
    for row in sorted(table.values(), key=lambda r: r[0]):
        if row[0] and value & row[0] == row[0] and row[0] not in seen:
            rows.append(row)
            seen.add(row[0])
    return rows


def _literal(tr, a, kind: str) -> int:
    if not isinstance(a, ll.Constant) or not isinstance(a.type, ll.IntType):
        raise tr.error(f"the {kind} operand must be a constant integer")
    return int(a.constant) & ((1 << a.type.width) - 1)


def require_typed(tr, opname: str, t: ll.Type) -> None:
    """Capabilities that depend on the operand type: 64-bit integer atomics, and the
    width-specific capability among several (e.g. AtomicFloat32AddEXT for OpAtomicFAddEXT
    on floats)."""
    row = g.INSTRUCTIONS[opname]
    base = t.element if isinstance(t, ll.VectorType) else t
    if opname.startswith("OpAtomic") and isinstance(base, ll.IntType) and base.width == 64:
        tr.m.capability("Int64Atomics")
    caps = row[2]
    if len(caps) > 1 and not isinstance(base, ll.VoidType):
        width = {ll.HalfType: 16, ll.FloatType: 32, ll.DoubleType: 64}.get(type(base), getattr(base, "width", 0))
        kind = "Float" if width and not isinstance(base, ll.IntType) else "Int"
        fit = [c for c in caps if f"{kind}{width}" in c and "Vector" not in c]
        if fit:
            tr.m.capability(fit[0])
            tr.m.require((), row[3], row[4], opname)


def spirv_op(tr, ins, opname: str) -> None:
    row = g.INSTRUCTIONS.get(opname)
    if row is None:
        raise tr.error(f"no SPIR-V instruction {opname}")
    kinds = row[1]
    has_result = kinds[:2] == ("IdResultType", "IdResult")
    if not has_result and "IdResult" in kinds[:2]:
        raise tr.error(f"{opname} has no result type")
    if not has_result and not isinstance(ins.type, ll.VoidType):
        raise tr.error(f"{opname} has no result, the call returns {ins.type}")
    if has_result and isinstance(ins.type, ll.VoidType):
        raise tr.error(f"{opname} has a result, the call returns void")
    args = list(ins.args)
    arg_kinds = _arg_kinds(tr, kinds[2:] if has_result else kinds, args)
    # the type a pointer operand points to: the result's, or (no result) the last operand's
    pointee = ins.type if has_result else args[-1].type if args else None
    require_typed(tr, opname, pointee if pointee is not None else ll.VoidType())
    words: list[int] = []
    for a, kind in zip(args, arg_kinds, strict=True):
        if kind in _ID_KINDS:
            if isinstance(a.type, ll.PointerType):
                where: list = []
                words.append(access_pointer(tr, tr.pointer(a), pointee, where))
                if opname.startswith("OpAtomic"):
                    tr.note_atomic(opname, pointee, where[0])
            else:
                if kind == "IdScope" and isinstance(a, ll.Constant) and _literal(tr, a, kind) == enum("Scope", "Device"):
                    tr.m.capability("VulkanMemoryModelDeviceScope")
                words.append(tr.val(a))
        else:
            words.append(_literal(tr, a, kind))
    try:
        if has_result:
            rt = tr.ty(ins.type)
            r = tr.m.id()
            encoded = tr.m.encode(opname, rt, r, *words)
            tr.cur.words.extend(encoded)
            tr.site[r] = (tr.cur, len(tr.cur.words), rt)
            tr.define(ins, r)
        else:
            tr.cur.words.extend(tr.m.encode(opname, *words))
    except SpirvError as e:
        raise tr.error(str(e)) from None
