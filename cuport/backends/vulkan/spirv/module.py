"""A SPIR-V module builder: ids, deduplicated types and constants, decorations, the
capabilities and extensions the emitted instructions need (read from the grammar), entry
points, and the binary writer.

Instructions are lists of words; `Module.inst` builds one from an opcode number and operand
words (the fast path the translator uses), `Module.encode` from an opname and Python
operands checked against the grammar (the generic path of the `spv.Op*` escapes and of the
rarely used instructions here). The logical layout (SPIR-V 2.4) is kept as separate
sections joined by `words()`.
"""

from __future__ import annotations

import struct
from types import SimpleNamespace

from . import grammar as g

# opcode numbers by name, as attributes: OP.OpIAdd
OP = SimpleNamespace(**{name: row[0] for name, row in g.INSTRUCTIONS.items()})
GLSL = SimpleNamespace(**{name: row[0] for name, row in g.GLSL_STD_450.items()})

TARGET = (1, 5)  # SPIR-V 1.5: Vulkan 1.2

# Capabilities a Vulkan shader may not declare: when an instruction or enumerant can be
# enabled by one of several capabilities, these are never the one chosen.
NOT_VULKAN = frozenset({
    "Kernel", "Addresses", "Linkage", "Vector16", "Float16Buffer", "Pipes", "DeviceEnqueue",
    "LiteralSampler", "GenericPointer", "Groups", "NamedBarrier", "PipeStorage",
    "SubgroupDispatch", "ImageBasic", "ImageReadWrite", "ImageMipmap",
})

_ID_KINDS = frozenset({"IdResultType", "IdResult", "IdRef", "IdScope", "IdMemorySemantics"})


class SpirvError(Exception):
    """An operand list that does not fit the grammar, or an unknown name."""


def enum(kind: str, name: str) -> int:
    """The value of enumerant `name` of operand kind `kind` (e.g. enum('StorageClass', 'Input'))."""
    try:
        return g.ENUMS[kind][name][0]
    except KeyError:
        raise SpirvError(f"no enumerant {name!r} in SPIR-V operand kind {kind}") from None


def string_words(s: str) -> list[int]:
    """A LiteralString: UTF-8, nul-terminated, padded to whole words, little-endian."""
    data = s.encode() + b"\0"
    data += b"\0" * (-len(data) % 4)
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def inst(opcode: int, *operands: int) -> list[int]:
    return [(len(operands) + 1) << 16 | opcode, *operands]


def _version_ok(v: tuple[int, int] | None) -> bool:
    return v is not None and v <= TARGET


class Module:
    """One SPIR-V module under construction."""

    def __init__(self) -> None:
        self.bound = 1
        self.capabilities: dict[str, None] = {}  # ordered sets
        self.extensions: dict[str, None] = {}
        self._implied: set[str] = set()
        self.ext_imports: dict[str, int] = {}
        self.imports: list[int] = []
        self.entry_points: list[int] = []
        self.exec_modes: list[int] = []
        self.debug: list[int] = []
        self.annotations: list[int] = []
        self.globals: list[int] = []  # types, constants, global variables, in definition order
        self.functions: list[int] = []
        self._types: dict[tuple, int] = {}
        self._consts: dict[tuple, int] = {}
        self._const_types: dict[int, int] = {}
        self._checked_ops: set[str] = set()
        self.capability("Shader")

    # ------------------------------------------------------------------ ids and requirements
    def id(self) -> int:
        i = self.bound
        self.bound += 1
        return i

    def capability(self, name: str) -> None:
        """Declare capability `name` and the extension it needs where SPIR-V 1.5 lacks it."""
        if name in self.capabilities:
            return
        if name not in g.ENUMS["Capability"]:
            raise SpirvError(f"unknown SPIR-V capability {name}")
        self.capabilities[name] = None
        _, _, implies, exts, version = g.ENUMS["Capability"][name]
        if exts and not _version_ok(version):
            self.extension(exts[0])
        stack = [name]
        while stack:
            c = stack.pop()
            if c not in self._implied:
                self._implied.add(c)
                stack.extend(g.ENUMS["Capability"][c][2])

    def extension(self, name: str) -> None:
        self.extensions[name] = None

    def require(self, capabilities: tuple[str, ...], extensions: tuple[str, ...] = (),
                version: tuple[int, int] | None = (1, 0), what: str = "") -> None:
        """Enable one of `capabilities` (one already declared if any, else the first that is
        core in SPIR-V 1.5 and allowed in Vulkan, else the first allowed), and `extensions`
        unless `version` makes the thing core."""
        if capabilities and not any(c in self._implied for c in capabilities):
            allowed = [c for c in capabilities if c not in NOT_VULKAN]
            if not allowed:
                raise SpirvError(f"{what} needs one of {', '.join(capabilities)}, none allowed in Vulkan")
            core = [c for c in allowed if _version_ok(g.ENUMS["Capability"][c][4])]
            self.capability((core or allowed)[0])
        if extensions and not _version_ok(version):
            for e in extensions:
                self.extension(e)

    def require_op(self, opname: str) -> None:
        if opname in self._checked_ops:
            return
        row = g.INSTRUCTIONS.get(opname)
        if row is None:
            raise SpirvError(f"unknown SPIR-V instruction {opname}")
        self.require(row[2], row[3], row[4], opname)
        self._checked_ops.add(opname)

    def require_enum(self, kind: str, name: str) -> None:
        row = g.ENUMS[kind][name]
        self.require(row[2], row[3], row[4], f"{kind} {name}")

    def ext_import(self, name: str = "GLSL.std.450") -> int:
        if name not in self.ext_imports:
            i = self.id()
            self.ext_imports[name] = i
            self.imports += inst(OP.OpExtInstImport, i, *string_words(name))
        return self.ext_imports[name]

    # ------------------------------------------------------------------ generic encoding
    def encode(self, opname: str, *args) -> list[int]:
        """Instruction `opname` with operands in grammar order: ids and literal integers as
        ints, LiteralString as str, enumerants as a name (BitEnum: names joined by '|') or a
        value, followed by their parameters; the capabilities it needs are declared."""
        row = g.INSTRUCTIONS.get(opname)
        if row is None:
            raise SpirvError(f"unknown SPIR-V instruction {opname}")
        self.require_op(opname)
        words = encode_operands(self, row[1], list(args), opname)
        return inst(row[0], *words)

    # ------------------------------------------------------------------ types
    def _type(self, key: tuple, opcode: int, *operands: int) -> int:
        t = self._types.get(key)
        if t is None:
            t = self.id()
            self._types[key] = t
            self.globals += inst(opcode, t, *operands)
        return t

    def t_void(self) -> int:
        return self._type(("void",), OP.OpTypeVoid)

    def t_bool(self) -> int:
        return self._type(("bool",), OP.OpTypeBool)

    def t_int(self, width: int) -> int:
        key = ("int", width)
        if key not in self._types:
            if width in (8, 16, 64):
                self.capability(f"Int{width}")
        return self._type(key, OP.OpTypeInt, width, 0)

    def t_float(self, width: int) -> int:
        key = ("float", width)
        if key not in self._types:
            if width in (16, 64):
                self.capability(f"Float{width}")
        return self._type(key, OP.OpTypeFloat, width)

    def t_vector(self, elem: int, n: int) -> int:
        return self._type(("vec", elem, n), OP.OpTypeVector, elem, n)

    def t_array(self, elem: int, n: int, stride: int | None = None) -> int:
        key = ("array", elem, n, stride)
        if key not in self._types:
            length = self.const_int(self.t_int(32), n)
            t = self._type(key, OP.OpTypeArray, elem, length)
            if stride is not None:
                self.decorate(t, "ArrayStride", stride)
        return self._types[key]

    def t_struct(self, members: list[int], key: object = None) -> int:
        """A struct; deduplicated only when `key` is given (decorations differ otherwise)."""
        if key is not None and ("struct", key) in self._types:
            return self._types[("struct", key)]
        t = self.id()
        self.globals += inst(OP.OpTypeStruct, t, *members)
        if key is not None:
            self._types[("struct", key)] = t
        return t

    def t_pointer(self, storage: str, pointee: int) -> int:
        return self._type(("ptr", storage, pointee), OP.OpTypePointer, enum("StorageClass", storage), pointee)

    def t_function(self, ret: int, params: tuple[int, ...] = ()) -> int:
        return self._type(("fn", ret, params), OP.OpTypeFunction, ret, *params)

    # ------------------------------------------------------------------ constants
    def _const(self, key: tuple, opcode: int, type_id: int, *operands: int) -> int:
        c = self._consts.get(key)
        if c is None:
            c = self.id()
            self._consts[key] = c
            self._const_types[c] = type_id
            self.globals += inst(opcode, type_id, c, *operands)
        return c

    def type_of(self, const_id: int) -> int | None:
        """The type of a constant made here (None for other ids)."""
        return self._const_types.get(const_id)

    def const_int(self, type_id: int, value: int, width: int = 32) -> int:
        value &= (1 << width) - 1
        words = (value & 0xFFFFFFFF, value >> 32) if width == 64 else (value,)
        return self._const(("c", type_id, value), OP.OpConstant, type_id, *words)

    def const_bits(self, type_id: int, bits: int, width: int) -> int:
        """A float (or int) constant from its bit pattern."""
        return self.const_int(type_id, bits, width)

    def const_bool(self, value: bool) -> int:
        t = self.t_bool()
        return self._const(("b", bool(value)), OP.OpConstantTrue if value else OP.OpConstantFalse, t)

    def const_composite(self, type_id: int, parts: list[int]) -> int:
        return self._const(("cc", type_id, tuple(parts)), OP.OpConstantComposite, type_id, *parts)

    def const_null(self, type_id: int) -> int:
        return self._const(("null", type_id), OP.OpConstantNull, type_id)

    def undef(self, type_id: int) -> int:
        return self._const(("undef", type_id), OP.OpUndef, type_id)

    # ------------------------------------------------------------------ decorations, names
    def decorate(self, target: int, decoration: str, *literals: int) -> None:
        self.annotations += inst(OP.OpDecorate, target, enum("Decoration", decoration), *literals)

    def member_decorate(self, struct_id: int, member: int, decoration: str, *literals: int) -> None:
        self.annotations += inst(OP.OpMemberDecorate, struct_id, member, enum("Decoration", decoration), *literals)

    def name(self, target: int, name: str) -> None:
        self.debug += inst(OP.OpName, target, *string_words(name))

    # ------------------------------------------------------------------ globals, entry
    def global_variable(self, ptr_type: int, storage: str, init: int | None = None) -> int:
        v = self.id()
        ops = (ptr_type, v, enum("StorageClass", storage)) + ((init,) if init is not None else ())
        self.globals += inst(OP.OpVariable, *ops)
        return v

    def entry_point(self, model: str, fn: int, name: str, interface: list[int]) -> None:
        self.entry_points += inst(OP.OpEntryPoint, enum("ExecutionModel", model), fn, *string_words(name), *interface)

    def execution_mode(self, fn: int, mode: str, *literals: int) -> None:
        self.require_enum("ExecutionMode", mode)
        self.exec_modes += inst(OP.OpExecutionMode, fn, enum("ExecutionMode", mode), *literals)

    # ------------------------------------------------------------------ output
    def words(self, memory_model: tuple[str, str] = ("PhysicalStorageBuffer64", "Vulkan")) -> list[int]:
        self.require_enum("AddressingModel", memory_model[0])
        self.require_enum("MemoryModel", memory_model[1])
        out = [g.MAGIC, TARGET[0] << 16 | TARGET[1] << 8, 0, self.bound, 0]
        for c in self.capabilities:
            out += inst(OP.OpCapability, enum("Capability", c))
        for e in self.extensions:
            out += inst(OP.OpExtension, *string_words(e))
        out += self.imports
        out += inst(OP.OpMemoryModel, enum("AddressingModel", memory_model[0]), enum("MemoryModel", memory_model[1]))
        out += self.entry_points + self.exec_modes + self.debug + self.annotations + self.globals + self.functions
        return out

    def to_bytes(self) -> bytes:
        w = self.words()
        return struct.pack(f"<{len(w)}I", *w)


# ---------------------------------------------------------------------- operand encoding
def encode_operands(m: Module | None, kinds: tuple[str, ...], args: list, what: str) -> list[int]:
    """Words for `args` laid out as the grammar's operand `kinds` say (see Module.encode)."""
    words: list[int] = []
    i = 0
    for kind in kinds:
        q = kind[-1] if kind[-1] in "?*" else ""
        base = kind[:-1] if q else kind
        if q == "*":
            while i < len(args):
                i = _one(m, base, args, i, words, what)
        elif q == "?":
            if i < len(args):
                i = _one(m, base, args, i, words, what)
        else:
            if i >= len(args):
                raise SpirvError(f"{what}: operand {base} missing")
            i = _one(m, base, args, i, words, what)
    if i != len(args):
        raise SpirvError(f"{what}: {len(args) - i} operand(s) more than the grammar has")
    return words


def _one(m: Module | None, kind: str, args: list, i: int, words: list[int], what: str) -> int:
    a = args[i]
    if kind in _ID_KINDS or kind in ("LiteralInteger", "LiteralExtInstInteger", "LiteralSpecConstantOpInteger"):
        if not isinstance(a, int):
            raise SpirvError(f"{what}: {kind} operand must be an integer, not {a!r}")
        words.append(a & 0xFFFFFFFF)
        return i + 1
    if kind == "LiteralContextDependentNumber":
        words.extend(a if isinstance(a, (list, tuple)) else [a & 0xFFFFFFFF])
        return i + 1
    if kind == "LiteralString":
        words.extend(string_words(a))
        return i + 1
    cat = g.KINDS.get(kind)
    if cat == "Composite":
        i_end = i
        for b in g.COMPOSITES[kind]:
            i_end = _one(m, b, args, i_end, words, what)
        return i_end
    if cat in ("ValueEnum", "BitEnum"):
        table = g.ENUMS[kind]
        if isinstance(a, str):
            names = a.split("|") if cat == "BitEnum" else [a]
            value = 0
            for n in names:
                if n not in table:
                    raise SpirvError(f"{what}: no enumerant {n!r} in {kind}")
                value |= table[n][0]
        else:
            value = int(a)
            names = _names_of(kind, value)
        words.append(value)
        i += 1
        for n in names:  # parameters of the enumerants used, in the order of their bits
            row = table[n]
            if m is not None:
                m.require(row[2], row[3], row[4], f"{kind} {n}")
            for p in row[1]:
                i = _one(m, p, args, i, words, what)
        return i
    raise SpirvError(f"{what}: operand kind {kind} not supported")


def _names_of(kind: str, value: int) -> list[str]:
    """The enumerants of `kind` that make up `value` (bits ascending for a BitEnum), one name
    per value (the first the grammar lists)."""
    table = g.ENUMS[kind]
    seen: dict[int, str] = {}
    for n, row in table.items():
        seen.setdefault(row[0], n)
    if g.KINDS[kind] == "ValueEnum":
        if value not in seen:
            raise SpirvError(f"no enumerant of {kind} has the value {value}")
        return [seen[value]]
    out = []
    bit = 1
    rest = value
    while rest:
        if rest & bit:
            if bit not in seen:
                raise SpirvError(f"no enumerant of {kind} has the bit {bit:#x}")
            out.append(seen[bit])
            rest &= ~bit
        bit <<= 1
    return out
