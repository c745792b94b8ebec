"""The typed IR of a PTX module, as the parser produces it and the passes and backends read it.

Deliberately close to the text: an instruction keeps its opcode and its dot-suffixes in
order (`add.rn.ftz.f32` → op `add`, mods `('rn', 'ftz', 'f32')`), because what a suffix
means depends on the instruction family, and each family (cuport.isa.*) reads its own.
Operands are small frozen records. Nested `{ }` scopes are flattened by the parser, which
renames registers and labels declared in inner scopes so every name in a function is unique.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

# ---------------------------------------------------------------- types

#: Scalar PTX types and their width in bits.
TYPE_BITS: dict[str, int] = {
    "pred": 1,
    "b8": 8, "b16": 16, "b32": 32, "b64": 64, "b128": 128,
    "u8": 8, "u16": 16, "u32": 32, "u64": 64,
    "s8": 8, "s16": 16, "s32": 32, "s64": 64,
    "f16": 16, "f16x2": 32, "bf16": 16, "bf16x2": 32, "f32": 32, "f64": 64,
    "tf32": 32, "e4m3x2": 16, "e5m2x2": 16,
}

SCALAR_TYPES = frozenset(TYPE_BITS)


def type_bits(t: str) -> int:
    return TYPE_BITS[t]


def is_float(t: str) -> bool:
    return t in ("f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32")


def is_signed(t: str) -> bool:
    return t[0] == "s"


def is_int(t: str) -> bool:
    return t[0] in "usb" and t != "pred"


# ---------------------------------------------------------------- operands


@dataclass(frozen=True, slots=True)
class Reg:
    """A register (`%r1`, `%p2`, or a name like `p` from inline asm, made unique by the parser)."""

    name: str


@dataclass(frozen=True, slots=True)
class Special:
    """A special register such as `%tid.x`, `%laneid`, `%clock64`."""

    name: str


@dataclass(frozen=True, slots=True)
class Imm:
    """An integer immediate (Python int, may be negative; reduced to the instruction's width later)."""

    value: int


@dataclass(frozen=True, slots=True)
class FImm:
    """A floating-point immediate; `bits`/`width` keep a hex literal (0f…/0d…) exact."""

    value: float
    width: int  # 32 for 0f, 64 for 0d or a decimal literal
    bits: int


@dataclass(frozen=True, slots=True)
class Sym:
    """A named thing: a variable, a function or a label."""

    name: str


@dataclass(frozen=True, slots=True)
class Mem:
    """An address operand `[base+offset]`; base is a Reg, a Sym, or None for an absolute address."""

    base: Reg | Sym | None
    offset: int = 0


@dataclass(frozen=True, slots=True)
class Vec:
    """A vector operand `{a, b, c, d}`; items are Reg, Imm, FImm or Sink."""

    items: tuple


@dataclass(frozen=True, slots=True)
class TexAddr(Vec):
    """A texture or surface operand `[tex, {c0, c1}]` or `[tex, sampler, {c0}]`.

    `items` is (image, [sampler,] coordinates) with the coordinates always a Vec. It is a
    Vec so that code walking operands (registers used, renaming) finds its registers
    without knowing it; a pass that rebuilds it as a plain Vec keeps that shape, which
    cuport.isa.texture accepts as well.
    """

    @property
    def image(self):
        return self.items[0]

    @property
    def sampler(self):
        return self.items[1] if len(self.items) == 3 else None

    @property
    def coords(self) -> tuple:
        return self.items[-1].items


@dataclass(frozen=True, slots=True)
class Sink:
    """The `_` placeholder that discards a result."""


@dataclass(frozen=True, slots=True)
class PredPair:
    """`%p|%q` as the destination of setp/set: the predicate and its complement (q may be Sink)."""

    p: Reg | Sink
    q: Reg | Sink


@dataclass(frozen=True, slots=True)
class Not:
    """A negated predicate source `!%p`."""

    reg: Reg


@dataclass(frozen=True, slots=True)
class Args:
    """A parenthesised list, as in `call (ret), f, (a, b);`."""

    items: tuple


@dataclass(frozen=True, slots=True)
class SymAddr:
    """A symbol used as a value, with an offset (`mov.u64 %rd, sym+8;`, `generic(sym)` in initialisers)."""

    name: str
    offset: int = 0
    generic: bool = False


Operand = (Reg | Special | Imm | FImm | Sym | Mem | Vec | TexAddr | Sink | PredPair | Not | Args
           | SymAddr)


def symbols_named(operands: Iterable[object]) -> set[str]:
    """The names of the variables, functions and textures that `operands` name: a symbol
    or its address (a call target, `mov %rd, sym+8`, `generic(sym)` in an initialiser), an
    address's base (`[sym+4]`), and those inside vector, texture and call-list operands.
    One walk for every reader (the validator's shared-memory count, the call graph, the
    linker's undefined symbols, the passes that keep a variable whose name escapes); what
    a reader leaves out, such as a call's own target, it drops from the operands first."""
    out: set[str] = set()
    work = list(operands)
    while work:
        o = work.pop()
        if isinstance(o, (Sym, SymAddr)):
            out.add(o.name)
        elif isinstance(o, Mem):
            if isinstance(o.base, Sym):
                out.add(o.base.name)
        elif isinstance(o, (Vec, Args)):
            work.extend(o.items)
    return out


# ---------------------------------------------------------------- statements


@dataclass(slots=True)
class Instr:
    op: str
    mods: tuple[str, ...]
    args: list
    guard: Reg | None = None
    guard_neg: bool = False
    line: int = 0  # line in the PTX text
    loc: tuple[int, int] | None = None  # (.file index, source line) from the last .loc

    def text(self) -> str:
        """The instruction as PTX-like text, for error messages and dumps."""
        g = f"@{'!' if self.guard_neg else ''}{self.guard.name} " if self.guard else ""
        return g + ".".join((self.op, *self.mods)) + " " + ", ".join(map(format_operand, self.args))

    def has(self, mod: str) -> bool:
        return mod in self.mods


@dataclass(slots=True)
class Label:
    name: str
    line: int = 0


@dataclass(slots=True)
class Var:
    """A variable declaration in any state space (module or function scope)."""

    name: str
    space: str  # global, const, shared, local, param, reg, tex, surf...
    type: str
    dims: tuple[int | None, ...] = ()  # () scalar, (n,) array, (None,) unsized extern array
    align: int = 0
    vector: int = 1  # .v2 / .v4 element vectors
    init: list | None = None  # flat list of ints / floats / SymAddr, in element order
    linkage: str = ""  # "", visible, extern, weak, common
    ptr_space: str = ""  # kernel params: `.ptr .global`
    line: int = 0
    managed: bool = False  # `.attribute(.managed)`: a __managed__ variable (host and device)

    @property
    def elem_bytes(self) -> int:
        return max(TYPE_BITS[self.type] // 8, 1) * self.vector if self.type != "pred" else 1

    @property
    def size(self) -> int:
        n = 1
        for d in self.dims:
            n *= d or 0
        return self.elem_bytes * n

    @property
    def alignment(self) -> int:
        return self.align or self.elem_bytes


@dataclass(slots=True)
class Function:
    name: str
    kind: str  # "entry" or "func"
    linkage: str = ""
    params: list[Var] = field(default_factory=list)
    rets: list[Var] = field(default_factory=list)
    body: list | None = None  # Instr / Label, flattened; None for a declaration
    regs: dict[str, str] = field(default_factory=dict)  # register name → type
    reg_vec: dict[str, int] = field(default_factory=dict)  # vector registers (`.reg .v4 .f32 v`)
    locals: list[Var] = field(default_factory=list)  # .local / .shared / .param / .const in the body
    maxntid: tuple[int, ...] | None = None
    reqntid: tuple[int, ...] | None = None
    minnctapersm: int | None = None
    maxnreg: int | None = None
    reqnctapercluster: tuple[int, ...] | None = None  # __cluster_dims__
    noreturn: bool = False
    prototypes: dict[str, Function] = field(default_factory=dict)  # .callprototype labels
    line: int = 0
    undeclared: dict[str, int] = field(default_factory=dict)  # registers used undeclared -> line
    #: predicated stretches (passes/predicate.py): id of a stretch's first instruction ->
    #: (the ids of its instructions, in order; the predicate; the value where lanes run it)
    stretches: dict[int, tuple[tuple[int, ...], Reg, bool]] = field(default_factory=dict)

    @property
    def is_entry(self) -> bool:
        return self.kind == "entry"

    @property
    def is_definition(self) -> bool:
        return self.body is not None


@dataclass(slots=True)
class Module:
    version: tuple[int, int] = (0, 0)
    target: tuple[str, ...] = ()
    address_size: int = 64
    variables: list[Var] = field(default_factory=list)
    functions: dict[str, Function] = field(default_factory=dict)
    files: dict[int, str] = field(default_factory=dict)
    has_debug_sections: bool = False  # `.section .debug_*` blocks (which the lexer skips)
    lines: dict[str, int] = field(default_factory=dict)  # `.version` etc. -> its PTX line

    @property
    def sm(self) -> int:
        """The numeric target (`sm_75` → 75), 0 if absent."""
        for t in self.target:
            if t.startswith(("sm_", "compute_")):
                digits = "".join(c for c in t.split("_", 1)[1] if c.isdigit())
                return int(digits or 0)
        return 0

    def kernels(self) -> list[Function]:
        return [f for f in self.functions.values() if f.is_entry and f.is_definition]


def format_operand(o) -> str:
    if isinstance(o, (Reg, Special, Sym)):
        return o.name
    if isinstance(o, Imm):
        return str(o.value)
    if isinstance(o, FImm):
        return f"0f{o.bits:08X}" if o.width == 32 else f"0d{o.bits:016X}"
    if isinstance(o, Mem):
        b = o.base.name if o.base is not None else ""
        if o.offset:
            return f"[{b}+{o.offset}]" if b else f"[{o.offset}]"
        return f"[{b}]"
    if isinstance(o, TexAddr):
        return "[" + ", ".join(map(format_operand, o.items)) + "]"
    if isinstance(o, Vec):
        return "{" + ", ".join(map(format_operand, o.items)) + "}"
    if isinstance(o, Sink):
        return "_"
    if isinstance(o, PredPair):
        return f"{format_operand(o.p)}|{format_operand(o.q)}"
    if isinstance(o, Not):
        return "!" + o.reg.name
    if isinstance(o, Args):
        return "(" + ", ".join(map(format_operand, o.items)) + ")"
    if isinstance(o, SymAddr):
        s = f"generic({o.name})" if o.generic else o.name
        return s + (f"+{o.offset}" if o.offset else "")
    return repr(o)
