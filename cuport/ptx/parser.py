"""PTX text → cuport.ptx.ir.Module.

A recursive-descent parser over the token arrays of cuport.ptx.lexer. It accepts PTX as
nvcc 12.x/13.x and libNVVM emit it (ISA versions up to 9.x) plus hand-written PTX:
module, function and variable directives, register ranges (`%r<100>`), vector operands and
types, guards, all state spaces, initialised variables, linkage, `.func` with parameters and
return values, `.callprototype`, performance directives and `.loc`/`.file`.

Inner `{ }` scopes (inline asm) are flattened: every register, label and variable an
inner scope declares gets a unique suffix (`%p1` of the third scope becomes `%p1$3`), so a
declaration that shadows an outer one (nvcc's `{ .reg .pred %p1; ... }` around each
`bar.red`) stays apart from it and later passes see one flat namespace per function.

Register ranges (`.reg .b32 %r<N>`) are not expanded: a function's `regs` holds the
registers its instructions use, each resolved against the declarations in scope, so a
declared count costs nothing (ptxas accepts `%r<2147483648>`). A name that resolves to no
declaration is left as it is written, outside `regs`; cuport.ptx.validate reports it.

Nesting is bounded (MAX_NESTING) and parsed without recursion, so that no input can
exhaust Python's stack.
"""

from __future__ import annotations

import re
import struct

from . import ir
from .lexer import (
    EOF,
    FHEX,
    FLOAT,
    INT,
    LINEDIR,
    STRING,
    WORD,
    PtxSyntaxError,
    Tokens,
    parse_int,
)

_SPACES = {".global", ".const", ".shared", ".local", ".param", ".tex", ".surf"}
_LINKAGE = {".visible": "visible", ".extern": "extern", ".weak": "weak", ".common": "common"}
_VAR_TYPES = {"." + t for t in ir.SCALAR_TYPES} | {".texref", ".surfref", ".samplerref"}
_REG_TYPES = {"." + t for t in ("pred", "b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32",
                                "u64", "s8", "s16", "s32", "s64", "f16", "f16x2", "f32", "f64")}

_SPECIAL = re.compile(
    r"%(?:(?:tid|ntid|ctaid|nctaid|clusterid|nclusterid|cluster_ctaid|cluster_nctaid)\.[xyz]"
    r"|laneid|warpid|nwarpid|smid|nsmid|gridid|lanemask_(?:eq|le|lt|ge|gt)|clock|clock_hi|clock64"
    r"|globaltimer|globaltimer_lo|globaltimer_hi|dynamic_smem_size|total_smem_size|aggr_smem_size"
    r"|envreg\d+|pm\d+(?:_64)?|reserved_smem_offset_\w+|is_explicit_cluster|cluster_ctarank"
    r"|cluster_nctarank|current_graph_exec)$"
)


_VERSION = re.compile(r"\d{1,4}\.\d{1,4}")
_TARGET = re.compile(r"\w+(?:\s*,\s*\w+)*")

#: Deepest nesting of `{ }` scopes in a function body; ptxas gives up between 1000 and 2000
#: ("Parsing error near '{': memory exhausted").
MAX_NESTING = 1000
#: Deepest nesting of operands (`- - 1`, `{{a}}`) and of initialiser braces.
MAX_OPERAND_NESTING = 64


class _Scope:
    """The registers one `{ }` scope declares: single names and ranges, with their unique names."""

    __slots__ = ("names", "ranges", "tag", "declared", "b0", "l0", "misses")

    def __init__(self, tag: str, b0: int = 0, l0: int = 0) -> None:
        self.names: dict[str, str] = {}  # declared name (or resolved range member) -> unique
        self.ranges: dict[str, tuple[int, str, int]] = {}  # prefix -> (count, type, vector)
        self.tag = tag  # "" for the function's own scope
        self.declared: set[str] = set()  # labels and variables of this scope
        self.b0, self.l0 = b0, l0  # where its statements and variables start
        self.misses: set[str] = set()  # names known not to be registers (labels, variables)


def parse(text: str) -> ir.Module:
    """Parse PTX text; raise PtxSyntaxError naming the line and what was expected."""
    return _Parser(text).module()


class _Parser:
    def __init__(self, text: str) -> None:
        self.tk = Tokens(text)
        self.kinds = self.tk.kinds
        self.texts = self.tk.texts
        self.i = 0
        self.mod = ir.Module()
        self.loc: tuple[int, int] | None = None
        self.scope_counter = 0
        self.scopes: list[_Scope] = []
        self.fn: ir.Function | None = None
        self.nesting = 0  # operand / initialiser nesting

    # ------------------------------------------------------------ token helpers
    def peek(self, k: int = 0) -> str:
        return self.texts[self.i + k]

    def error(self, what: str, i: int | None = None):
        i = self.i if i is None else i
        line = self.tk.line_of(min(i, len(self.texts) - 1))
        got = self.texts[i] if self.kinds[i] != EOF else "end of text"
        return PtxSyntaxError(f"expected {what}, found {got!r}", line, self.tk.line_text(line))

    def expect(self, text: str) -> None:
        if self.texts[self.i] != text:
            raise self.error(repr(text))
        self.i += 1

    def accept(self, text: str) -> bool:
        if self.texts[self.i] == text:
            self.i += 1
            return True
        return False

    def word(self, what: str = "a name") -> str:
        if self.kinds[self.i] != WORD:
            raise self.error(what)
        self.i += 1
        return self.texts[self.i - 1]

    def name(self, what: str) -> str:
        """An identifier being declared: a word that is not a directive (`.reg`) or a
        dotted instruction-like name."""
        t = self.texts[self.i]
        if self.kinds[self.i] != WORD or t[0] == "." or "." in t or "::" in t:
            raise self.error(what)
        self.i += 1
        return t

    def int_(self) -> int:
        neg = self.accept("-")
        if self.kinds[self.i] != INT:
            raise self.error("an integer")
        v = self.literal(self.i)
        self.i += 1
        return -v if neg else v

    def literal(self, i: int) -> int:
        try:
            return parse_int(self.texts[i])
        except ValueError:  # `09`: a leading 0 makes it octal; ptxas reads `0`, then `9`
            t = self.texts[i]
            rest = t[1 + len(t[1:]) - len(t[1:].lstrip("01234567")):]
            line = self.tk.line_of(i)
            raise PtxSyntaxError(f"Parsing error near '{rest}': syntax error", line,
                                 self.tk.line_text(line)) from None

    def nested(self):
        """Count one level of operand or initialiser nesting, refusing absurd depths."""
        self.nesting += 1
        if self.nesting > MAX_OPERAND_NESTING:
            raise self.error(f"at most {MAX_OPERAND_NESTING} nested operands")

    def line(self) -> int:
        return self.tk.line_of(self.i)

    # ------------------------------------------------------------ module level
    def module(self) -> ir.Module:
        kinds, texts = self.kinds, self.texts
        self.mod.has_debug_sections = self.tk.sections > 0
        declared = seen_address_size = False
        while kinds[self.i] != EOF:
            t = texts[self.i]
            if kinds[self.i] == LINEDIR:
                if (declared and t.startswith(_HEADER_DIRECTIVES)) or (
                        t.startswith(".address_size") and seen_address_size):
                    raise self.error("a declaration (.version, .target and .address_size come "
                                     "first, once)")
                if t.startswith(".address_size"):
                    seen_address_size = True
                    self.require_version_and_target()  # (where ptxas checks them)
                self.line_directive(t, module_level=True)
                self.i += 1
            elif t == ".pragma":
                self.pragma()
            elif t == ".alias":
                self.i += 1
                alias = self.word()
                self.expect(",")
                target = self.word()
                self.expect(";")
                if target in self.mod.functions:
                    self.mod.functions[alias] = self.mod.functions[target]
            else:
                self.require_version_and_target()
                declared = True
                self.declaration()
        return self.mod

    def require_version_and_target(self) -> None:
        """At `.address_size` or the first declaration: ptxas' check that both came first
        (the JIT's name for its input is 'application ptx input')."""
        if self.mod.version == (0, 0) or not self.mod.target:
            what = ".version" if self.mod.version == (0, 0) else ".target"
            line = self.line()
            raise PtxSyntaxError(f"Missing {what} directive at start of file 'application ptx "
                                 "input'", line, self.tk.line_text(line))

    def pragma(self) -> None:
        """`.pragma "nounroll";`: one or more strings (what they say is ignored)."""
        self.i += 1
        while True:
            if self.kinds[self.i] != STRING:
                raise self.error("a string after .pragma")
            self.i += 1
            if not self.accept(","):
                break
        self.expect(";")

    def line_directive(self, t: str, module_level: bool = False) -> None:
        """.version/.target/.address_size (module level only, as ptxas' grammar has them),
        .file and .loc."""
        header = t.startswith(_HEADER_DIRECTIVES)
        if header:
            t = t.split("//", 1)[0].split("/*", 1)[0]
        parts = t.replace(",", " ").split()
        d = parts[0]
        if header:
            if not module_level or d not in _HEADER_DIRECTIVES:  # (`.version%p5`, `.address_size.x`)
                line = self.line()
                near = re.match(r"\.[A-Za-z_]+", d).group()
                raise PtxSyntaxError(f"Parsing error near '{near}': syntax error", line,
                                     self.tk.line_text(line))
            self.mod.lines.setdefault(d, self.line())
        try:
            if d == ".version":
                if len(parts) != 2 or not _VERSION.fullmatch(parts[1]):
                    raise ValueError
                if self.mod.version != (0, 0) and not self.mod.target:
                    line = self.line()
                    raise PtxSyntaxError("Missing .target directive at start of file 'application "
                                         "ptx input'", line,
                                         self.tk.line_text(line))
                major, minor = parts[1].split(".")
                self.mod.version = (int(major), int(minor))
            elif d == ".target":
                if len(parts) < 2 or not _TARGET.fullmatch(t.split(None, 1)[1].strip()):
                    raise ValueError
                self.mod.target = tuple(parts[1:])
            elif d == ".address_size":
                if len(parts) != 2 or not parts[1].isdigit():
                    raise ValueError
                self.mod.address_size = int(parts[1])
            elif d == ".file":
                idx = int(parts[1])
                name = t.split('"')[1] if '"' in t else (parts[2] if len(parts) > 2 else "")
                self.mod.files[idx] = name
            elif d == ".loc":
                self.loc = (int(parts[1]), int(parts[2]))
        except (ValueError, IndexError):
            raise self.error(f"a well-formed {d} directive") from None

    def declaration(self) -> None:
        start = self.i
        linkage = ""
        if self.texts[self.i] in _LINKAGE:
            linkage = _LINKAGE[self.texts[self.i]]
            self.i += 1
        t = self.texts[self.i]
        if t in (".entry", ".func"):
            self.function(linkage)
        elif t in _SPACES:
            v = self.variable(linkage)
            self.expect(";")
            self.mod.variables.append(v)
        else:
            raise self.error("a directive (.entry, .func, .global, .const, .shared, ...)", start)

    # ------------------------------------------------------------ variables
    def variable(self, linkage: str = "") -> ir.Var:
        line = self.line()
        space = self.texts[self.i][1:]
        self.i += 1
        align = 0
        vector = 1
        ptr_space = ""
        vtype = ""
        managed = False
        texts = self.texts
        while True:
            t = texts[self.i]
            if t == ".align":
                self.i += 1
                at = self.i
                align = self.int_()
                if align >= 1 << 32:
                    line = self.tk.line_of(at)
                    raise PtxSyntaxError("Constant overflow", line, self.tk.line_text(line), "error")
                if align <= 0 or align & (align - 1):
                    line = self.tk.line_of(at)
                    raise PtxSyntaxError("Alignment must be a power of two", line,
                                         self.tk.line_text(line), "error")
            elif t in (".v2", ".v4", ".v8"):
                vector = int(t[2:])
                self.i += 1
            elif t == ".ptr":
                self.i += 1
            elif space == "param" and t in (".global", ".shared", ".const", ".local"):
                ptr_space = t[1:]
                self.i += 1
            elif t in _VAR_TYPES and not vtype:
                vtype = t[1:]
                self.i += 1
            elif t in (".attribute", ".managed", ".unified"):
                managed = managed or t == ".managed"
                self.i += 1
                if texts[self.i] == "(":
                    while texts[self.i] != ")" and self.kinds[self.i] != EOF:
                        managed = managed or texts[self.i] == ".managed"
                        self.i += 1
                    self.expect(")")
            else:
                break
        if not vtype:
            raise self.error("a variable type (.b32, .f32, .u64, ...)")
        name = self.name("a variable name")
        dims: list[int | None] = []
        while texts[self.i] == "[":
            self.i += 1
            if texts[self.i] == "]":
                dims.append(None)
            else:
                dims.append(self.int_())
            self.expect("]")
        init = None
        if self.accept("="):
            init = self.initializer()
            if dims and dims[-1] is None:
                per = 1
                for d in dims[:-1]:
                    per *= d or 1
                dims[-1] = -(-len(init) // (per * vector))
        return ir.Var(name, space, vtype, tuple(dims), align, vector, init, linkage, ptr_space, line,
                      managed)

    def initializer(self) -> list:
        out: list = []
        self._init_into(out)
        return out

    def _init_into(self, out: list) -> None:
        if self.texts[self.i] == "{":
            self.nested()
            self._init_list(out)
            self.nesting -= 1
            return
        out.append(self.const_expr())

    def _init_list(self, out: list) -> None:
        if self.accept("{"):
            if not self.accept("}"):
                while True:
                    self._init_into(out)
                    if self.accept("}"):
                        break
                    self.expect(",")
            return
        out.append(self.const_expr())

    def const_expr(self):
        """An initialiser element: a number, `sym`, `sym+off`, `generic(sym)`, `generic(sym)+off`."""
        t = self.texts[self.i]
        k = self.kinds[self.i]
        if t == "generic" and self.texts[self.i + 1] == "(":
            self.i += 2
            name = self.word()
            self.expect(")")
            return ir.SymAddr(name, self._offset(), generic=True)
        if k == WORD:
            self.i += 1
            return ir.SymAddr(t, self._offset())
        if k == FHEX:
            self.i += 1
            return self._fhex(t)
        neg = False
        if t == "-":
            neg = True
            self.i += 1
            t = self.texts[self.i]
            k = self.kinds[self.i]
        if k == INT:
            self.i += 1
            v = self.literal(self.i - 1)
            return -v if neg else v
        if k == FLOAT:
            self.i += 1
            v = float(t)
            if v == float("inf"):
                raise self.error("a constant that is not too large", self.i - 1)
            return -v if neg else v
        if k == FHEX:
            self.i += 1
            f = self._fhex(t)
            return ir.FImm(-f.value, f.width, f.bits ^ (1 << (f.width - 1)))
        raise self.error("a constant")

    def _offset(self) -> int:
        if self.texts[self.i] == "+":
            self.i += 1
            return self.int_()
        if self.texts[self.i] == "-":
            self.i += 1
            return -self.int_()
        return 0

    @staticmethod
    def _fhex(t: str) -> ir.FImm:
        bits = int(t[2:], 16)
        if t[1] in "fF":
            return ir.FImm(struct.unpack("<f", struct.pack("<I", bits))[0], 32, bits)
        return ir.FImm(struct.unpack("<d", struct.pack("<Q", bits))[0], 64, bits)

    # ------------------------------------------------------------ functions
    def function(self, linkage: str) -> None:
        line = self.line()
        kind = self.texts[self.i][1:]
        self.i += 1
        rets: list[ir.Var] = []
        if kind == "func" and self.texts[self.i] == "(":
            rets = self.param_list()
        name = self.name("a function name")
        params: list[ir.Var] = []
        if self.texts[self.i] == "(":
            params = self.param_list()
        fn = ir.Function(name, kind, linkage, params, rets, line=line)
        # performance directives and attributes between the header and the body
        while True:
            t = self.texts[self.i]
            if t in (".maxntid", ".reqntid"):
                self.i += 1
                dims = [self.int_()]
                while self.accept(","):
                    dims.append(self.int_())
                setattr(fn, t[1:], tuple(dims))
            elif t in (".minnctapersm", ".maxnctapersm", ".maxnreg", ".maxclusterrank"):
                self.i += 1
                v = self.int_()
                if t == ".minnctapersm":
                    fn.minnctapersm = v
                elif t == ".maxnreg":
                    fn.maxnreg = v
            elif t == ".reqnctapercluster":
                self.i += 1
                dims = [self.int_()]
                while self.accept(","):
                    dims.append(self.int_())
                fn.reqnctapercluster = tuple(dims)
            elif t == ".explicitcluster":
                self.i += 1
            elif t == ".noreturn":
                fn.noreturn = True
                self.i += 1
            elif t == ".pragma":
                self.pragma()
            elif self.kinds[self.i] == LINEDIR:
                self.line_directive(t)
                self.i += 1
            else:
                break
        if self.accept(";"):
            pass  # declaration only
        else:
            self.expect("{")
            fn.body = []
            self.body(fn)
        old = self.mod.functions.get(name)
        if old is None or (fn.is_definition and not (old.is_definition and old.linkage != "weak")):
            self.mod.functions[name] = fn

    def param_list(self) -> list[ir.Var]:
        self.expect("(")
        out: list[ir.Var] = []
        if self.accept(")"):
            return out
        while True:
            t = self.texts[self.i]
            if t not in (".param", ".reg"):
                raise self.error("a .param or .reg parameter")
            v = self.variable()
            out.append(v)
            if self.accept(")"):
                return out
            self.expect(",")

    def body(self, fn: ir.Function) -> None:
        """Parse statements up to the `}` closing the function, flattening nested scopes.

        An inner scope's labels and variables get a unique suffix when it closes (inline asm
        repeats names like `LAB_WAIT`); its registers get theirs as they are declared.
        """
        texts, kinds = self.texts, self.kinds
        body = fn.body
        assert body is not None
        self.fn = fn
        root = _Scope("")
        for v in (*fn.params, *fn.rets):
            if v.space == "reg":
                root.names[v.name] = v.name
                fn.regs[v.name] = v.type
        self.scopes = [root]
        scopes = self.scopes
        while True:
            k = kinds[self.i]
            t = texts[self.i]
            if k == LINEDIR:
                self.line_directive(t)
                self.i += 1
                continue
            if t == "}":
                self.i += 1
                if len(scopes) == 1:
                    self.fn = None
                    return
                inner = scopes.pop()
                if inner.declared:
                    _rename_scope(body, fn.locals, inner.b0, inner.l0, inner.declared, inner.tag)
                continue
            if t == "{":
                if len(scopes) > MAX_NESTING:  # (ptxas' words when its parser's stack is full)
                    line = self.line()
                    raise PtxSyntaxError("Parsing error near '{': memory exhausted", line,
                                         f"more than {MAX_NESTING} nested {{ }} scopes")
                self.i += 1
                self.scope_counter += 1
                scopes.append(_Scope(f"${self.scope_counter}", len(body), len(fn.locals)))
                continue
            if k == EOF:
                raise self.error("'}' closing the function body")
            if t == ".reg":
                self.reg_decl(fn)
                continue
            if t in _SPACES:
                v = self.variable()
                self.expect(";")
                fn.locals.append(v)
                scopes[-1].declared.add(v.name)
                continue
            if t == ".pragma":
                self.pragma()
                continue
            if k == WORD and texts[self.i + 1] == ":":
                name = t
                line = self.line()
                if texts[self.i + 2] == ".callprototype":
                    self.i += 3
                    fn.prototypes[name] = self.prototype(name)
                    continue
                self.i += 2
                if texts[self.i] == ".branchtargets":
                    self.i += 1
                    targets = [ir.Sym(self.word())]
                    while self.accept(","):
                        targets.append(ir.Sym(self.word()))
                    self.expect(";")
                    body.append(ir.Instr("branchtargets", (), [ir.Sym(name), *targets], line=line))
                    scopes[-1].declared.add(name)
                    continue
                body.append(ir.Label(name, line))
                scopes[-1].declared.add(name)
                continue
            body.append(self.instruction())

    def reg_decl(self, fn: ir.Function) -> None:
        """`.reg [.v4] .type a, b<4>, c;` in the innermost scope (ranges kept as ranges)."""
        line_i = self.i
        self.i += 1
        vector = 1
        if self.texts[self.i] in (".v2", ".v4", ".v8"):
            vector = int(self.texts[self.i][2:])
            self.i += 1
        t = self.texts[self.i]
        if t not in _REG_TYPES:  # (ptxas: .bf16 and .tf32 registers are syntax errors)
            raise self.error("a register type")
        rtype = t[1:]
        self.i += 1
        scope = self.scopes[-1]
        while True:
            name_i = self.i
            name = self.name("a register name")
            if self.accept("<"):
                if self.kinds[self.i] != INT:
                    raise self.error("a register count")
                n = self.literal(self.i)
                if n >= 1 << 32:
                    raise PtxSyntaxError("Constant overflow", self.line(),
                                         self.tk.line_text(self.line()), "error")
                self.i += 1
                self.expect(">")
                if name in scope.ranges or any(_in_range(nm, name, n) for nm in scope.names):
                    raise self.redefined(f"{name}<", name_i)
                scope.ranges[name] = (n, rtype, vector)
                scope.misses.clear()
            else:
                if name in scope.names or self._range_of(scope, name) is not None:
                    raise self.redefined(name, name_i)
                unique = name + scope.tag
                scope.names[name] = unique
                scope.misses.discard(name)
                fn.regs[unique] = rtype
                if vector > 1:
                    fn.reg_vec[unique] = vector
            if not self.accept(","):
                break
        del line_i
        self.expect(";")

    def redefined(self, what: str, i: int) -> PtxSyntaxError:
        line = self.tk.line_of(i)
        return PtxSyntaxError(f"Duplicate definition of variable '{what}'", line,
                              self.tk.line_text(line), "error")

    @staticmethod
    def _range_of(scope: _Scope, name: str):
        """The range of `scope` that declares `name` (`%r12` in `%r<13>`), if any."""
        if not scope.ranges or not name[-1:].isdigit():
            return None
        j = len(name)
        while j > 0 and name[j - 1].isdigit():
            j -= 1
        for cut in range(j, len(name)):
            digits = name[cut:]
            if len(digits) > 1 and digits[0] == "0":
                continue
            r = scope.ranges.get(name[:cut])
            if r is not None and int(digits) < r[0]:
                return r
        return None

    def prototype(self, name: str) -> ir.Function:
        rets: list[ir.Var] = []
        if self.texts[self.i] == "(":
            rets = self.param_list()
        self.word()  # `_`
        params = self.param_list() if self.texts[self.i] == "(" else []
        self.expect(";")
        return ir.Function(name, "func", "", params, rets)

    # ------------------------------------------------------------ instructions
    def instruction(self) -> ir.Instr:
        start = self.i
        texts, kinds = self.texts, self.kinds
        guard = None
        guard_neg = False
        if texts[self.i] == "@":
            self.i += 1
            if texts[self.i] == "!":
                guard_neg = True
                self.i += 1
            g = self.word("a guard predicate")
            guard = ir.Reg(self.resolve(g) or self.undeclared(g))
        if kinds[self.i] != WORD:
            raise self.error("an instruction")
        full = texts[self.i]
        self.i += 1
        parts = full.split(".")
        op = parts[0]
        mods = tuple(parts[1:])
        args: list = []
        if texts[self.i] != ";":
            while True:
                args.append(self.operand())
                if texts[self.i] == ",":
                    self.i += 1
                    continue
                break
        if texts[self.i] != ";":
            raise self.error("',' or ';' after an operand")
        self.i += 1
        return ir.Instr(op, mods, args, guard, guard_neg, self.tk.line_of(start), self.loc)

    def operand(self):
        self.nested()
        o = self._operand()
        self.nesting -= 1  # (an error ends the parse: no need to unwind the count)
        return o

    def _operand(self):
        texts, kinds = self.texts, self.kinds
        t = texts[self.i]
        k = kinds[self.i]
        if k == WORD:
            self.i += 1
            u = self.resolve(t)
            if u is None and t[0] == "%" and _SPECIAL.match(t):
                return ir.Special(t)
            if u is None and "." in t:  # `%r1.b0123`, `%r1.h1`: a video instruction's selectors
                base, _, suffix = t.partition(".")
                ub = self.resolve(base)
                if ub is not None:
                    return ir.Reg(f"{ub}.{suffix}")
            if texts[self.i] == "|":
                self.i += 1
                q = self.operand()
                p = ir.Sink() if t == "_" else ir.Reg(u or self.undeclared(t))
                return ir.PredPair(p, q)
            if u is not None:
                return ir.Reg(u)
            if t == "_":
                return ir.Sink()
            if t == "WARP_SZ":  # the ISA's predefined constant
                return ir.Imm(32)
            if t[0] == "%":
                return ir.Reg(self.undeclared(t))
            if texts[self.i] in ("+", "-") and kinds[self.i + 1] == INT:
                return ir.SymAddr(t, self._offset())
            return ir.Sym(t)
        if k == INT:
            self.i += 1
            return ir.Imm(self.literal(self.i - 1))
        if k == FHEX:
            self.i += 1
            return self._fhex(t)
        if k == FLOAT:
            self.i += 1
            v = float(t)
            if v == float("inf"):
                raise PtxSyntaxError("Constant overflow", self.tk.line_of(self.i - 1),
                                     self.tk.line_text(self.tk.line_of(self.i - 1)), "error")
            return ir.FImm(v, 64, struct.unpack("<Q", struct.pack("<d", v))[0])
        if t == "+" and kinds[self.i + 1] in (INT, FLOAT, FHEX):  # `+4`, as ptxas reads it
            self.i += 1
            return self.operand()
        if t == "-":
            self.i += 1
            o = self.operand()
            if isinstance(o, ir.Imm):
                return ir.Imm(-o.value)
            if isinstance(o, ir.FImm):
                return ir.FImm(-o.value, o.width, o.bits ^ (1 << (o.width - 1)))
            raise self.error("a number after '-'")
        if t == "!":
            self.i += 1
            r = self.operand()
            if not isinstance(r, ir.Reg):
                raise self.error("a predicate register after '!'")
            return ir.Not(r)
        if t == "[":
            self.i += 1
            return self.address()
        if t == "{":
            self.i += 1
            items = []
            if texts[self.i] != "}":
                while True:
                    items.append(self.operand())
                    if not self.accept(","):
                        break
            self.expect("}")
            return ir.Vec(tuple(items))
        if t == "(":
            self.i += 1
            items = []
            if texts[self.i] != ")":
                while True:
                    items.append(self.operand())
                    if not self.accept(","):
                        break
            self.expect(")")
            return ir.Args(tuple(items))
        raise self.error("an operand")

    def address(self) -> ir.Mem:
        texts, kinds = self.texts, self.kinds
        base: ir.Reg | ir.Sym | None = None
        offset = 0
        t = texts[self.i]
        if kinds[self.i] == WORD:
            self.i += 1
            u = self.resolve(t)
            if u is not None:
                base = ir.Reg(u)
            elif t[0] == "%":
                base = ir.Reg(self.undeclared(t))
            else:
                base = ir.Sym(t)
            if texts[self.i] == "+":
                self.i += 1
                offset = self.int_()
            elif texts[self.i] == "-":
                self.i += 1
                offset = -self.int_()
        else:
            offset = self.int_()
        if texts[self.i] == ",":
            return self.texture_operand(base, offset)
        self.expect("]")
        return ir.Mem(base, offset)

    def texture_operand(self, image, offset: int) -> ir.TexAddr:
        """`[tex, {c0, ...}]`, `[tex, sampler, {c0, ...}]`, or a 1D `[tex, c0]`."""
        if image is None or offset:
            raise self.error("a texture, sampler or surface name or register before ','")
        items = [image]
        while self.accept(","):
            items.append(self.operand())
        self.expect("]")
        if len(items) not in (2, 3):
            raise self.error("[texture, coordinates] or [texture, sampler, coordinates]")
        coords = items[-1]
        if not isinstance(coords, ir.Vec):
            coords = ir.Vec((coords,))
        return ir.TexAddr((*items[:-1], coords))

    def undeclared(self, name: str) -> str:
        """A register used where none of that name is declared (cuport.ptx.validate says so,
        even if a declaration comes later)."""
        fn = self.fn
        if fn is not None:
            fn.undeclared.setdefault(name, self.tk.line_of(self.i - 1))
        return name

    def resolve(self, name: str) -> str | None:
        """The unique name of the register `name` means here, or None if none is declared."""
        scopes = self.scopes
        if len(scopes) > 1:
            for scope in reversed(scopes):
                u = scope.names.get(name)
                if u is not None or (scope.ranges and (u := self._resolve_in(scope, name))):
                    return u
            return None
        root = scopes[0]
        u = root.names.get(name)
        if u is None and root.ranges and name not in root.misses:
            u = self._resolve_in(root, name)
            if u is None:
                root.misses.add(name)
        return u

    def _resolve_in(self, scope: _Scope, name: str) -> str | None:
        r = self._range_of(scope, name)
        if r is None:
            # ptxas reads `%r015` as `%r15` of `%r<16>` (a fuzzed name it accepts)
            canonical = _unpadded(name)
            u = canonical and (scope.names.get(canonical) or self._resolve_in(scope, canonical))
            if u:
                scope.names[name] = u
            return u or None
        u = name + scope.tag
        scope.names[name] = u  # resolved once per scope
        fn = self.fn
        assert fn is not None
        fn.regs[u] = r[1]
        if r[2] > 1:
            fn.reg_vec[u] = r[2]
        return u


def _rename_scope(body: list, locals_: list, b0: int, l0: int, names: set[str], tag: str) -> None:
    """Give the labels and variables an inner scope declared a unique suffix, in that scope."""

    def ren(o):
        if isinstance(o, ir.Sym) and o.name in names:
            return ir.Sym(o.name + tag)
        if isinstance(o, ir.Mem) and isinstance(o.base, ir.Sym) and o.base.name in names:
            return ir.Mem(ir.Sym(o.base.name + tag), o.offset)
        if isinstance(o, ir.SymAddr) and o.name in names:
            return ir.SymAddr(o.name + tag, o.offset, o.generic)
        if isinstance(o, ir.Args):
            return ir.Args(tuple(ren(x) for x in o.items))
        if isinstance(o, ir.TexAddr):
            return ir.TexAddr(tuple(ren(x) for x in o.items))
        if isinstance(o, ir.Vec):
            return ir.Vec(tuple(ren(x) for x in o.items))
        return o

    for j in range(b0, len(body)):
        st = body[j]
        if isinstance(st, ir.Label):
            if st.name in names:
                st.name += tag
        else:
            st.args = [ren(a) for a in st.args]
    for j in range(l0, len(locals_)):
        if locals_[j].name in names:
            locals_[j].name += tag


_HEADER_DIRECTIVES = (".version", ".target", ".address_size")


def _unpadded(name: str) -> str | None:
    """`%r015` -> `%r15`, `%r00` -> `%r0`; None for a name without zeros to drop."""
    j = len(name)
    while j > 0 and name[j - 1].isdigit():
        j -= 1
    digits = name[j:]
    if len(digits) < 2 or digits[0] != "0" or j == 0:
        return None
    return name[:j] + str(int(digits))


def _in_range(name: str, prefix: str, count: int) -> bool:
    """Whether `name` is one of `prefix<count>`'s registers."""
    digits = name[len(prefix):]
    return (name.startswith(prefix) and digits.isdigit() and (digits == "0" or digits[0] != "0")
            and int(digits) < count)
