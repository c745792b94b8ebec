"""The driver API table, read from the generated `driver_api.txt` / `driver_types.txt`.

Everything C-facing is derived from here: the cffi declarations and exported
symbols (capi/build.py), the Python dispatch (capi/dispatch.py), cuGetProcAddress
(capi/proc_address.py), the trace printer and the coverage list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Self

HERE = Path(__file__).resolve().parent
API_FILE = HERE / "driver_api.txt"
TYPES_FILE = HERE / "driver_types.txt"

_LINE = re.compile(r"(?P<ret>\w+) (?P<sym>\w+)\((?P<params>.*)\)(?: @ (?P<variants>.*))?$")
_PARAM = re.compile(r"(?P<out>out )?(?P<ctype>.*?)\s*(?P<name>\w+)$")


@dataclass(frozen=True)
class CParam:
    """A parameter as a table line spells it (`[out ]ctype name`): the driver's and the
    libraries' tables (libs/table.py) alike."""

    name: str
    ctype: str  # as the header spells it: "const CUDA_MEMCPY2D *", "CUdeviceptr"
    out: bool  # a pointer through which the dispatcher writes the implementation's result

    @classmethod
    def parse_all(cls, text: str) -> tuple[Self, ...]:
        """The parameters between a table line's parentheses."""
        params = []
        for item in filter(None, (t.strip() for t in text.split(","))):
            pm = _PARAM.match(item)
            params.append(cls(pm["name"], pm["ctype"].strip(), bool(pm["out"])))
        return tuple(params)

    @property
    def is_pointer(self) -> bool:
        return self.ctype.endswith("*")

    @property
    def pointee(self) -> str:
        """`CUcontext` for `CUcontext *`: the type an out-parameter holds."""
        return self.ctype[:-1].strip()

    def declaration(self) -> str:
        sep = "" if self.is_pointer else " "
        return f"{self.ctype}{sep}{self.name}"


@dataclass(frozen=True)
class Param(CParam):
    """A driver API parameter, with how it crosses into Python."""

    @property
    def by_address(self) -> bool:
        """An in-parameter that reaches Python as its address, an int (uintptr_t): pointers,
        handles and function pointers, but for `const char *` (a string). cffi hands an int
        over for a fraction of what a pointer object and its conversion cost."""
        return not self.out and self.ctype != "const char *" and (
            self.is_pointer or self.ctype in address_types())

    def python_declaration(self) -> str:
        """Its declaration in the `extern "Python"` entry's signature."""
        return f"uintptr_t {self.name}" if self.by_address else self.declaration()

    def python_arg(self) -> str:
        """The C expression that passes it to the `extern "Python"` entry."""
        return f"(uintptr_t){self.name}" if self.by_address else self.name


@dataclass(frozen=True)
class Variant:
    """One ABI variant: cuGetProcAddress(name, version >= since, ptds?) answers this symbol."""

    name: str
    since: int
    ptds: bool


@dataclass(frozen=True)
class Function:
    symbol: str
    ret: str
    params: tuple[Param, ...]
    variants: tuple[Variant, ...]

    @property
    def ptds(self) -> bool:
        """A per-thread-default-stream symbol: stream 0 means CU_STREAM_PER_THREAD."""
        return self.symbol.endswith(("_ptds", "_ptsz"))

    def c_params(self) -> str:
        return ", ".join(p.declaration() for p in self.params) or "void"

    def c_args(self) -> str:
        return ", ".join(p.name for p in self.params)

    def python_params(self) -> str:
        """The `extern "Python"` entry's parameters (Param.by_address ones as uintptr_t)."""
        return ", ".join(p.python_declaration() for p in self.params) or "void"

    def python_args(self) -> str:
        return ", ".join(p.python_arg() for p in self.params)


def _parse_function(line: str) -> Function:
    m = _LINE.match(line)
    if not m:
        raise ValueError(f"bad table line: {line!r}")
    return Function(m["sym"], m["ret"], Param.parse_all(m["params"]), _variants(m["variants"] or ""))


def _variants(text: str) -> tuple[Variant, ...]:
    """A table line's ABI variants (what follows its " @ ")."""
    out = []
    for item in filter(None, (t.strip() for t in text.split(";"))):
        name, since, *rest = item.split()
        out.append(Variant(name, int(since), rest == ["ptds"]))
    return tuple(out)


@cache
def _lines() -> dict[str, str]:
    """Each exported symbol's line of the table, in the table's order."""
    out = {}
    for line in API_FILE.read_text().splitlines():
        if line and not line.startswith("#"):
            out[line[line.index(" ") + 1:line.index("(")]] = line
    return out


def symbols() -> list[str]:
    """Every exported symbol, without parsing their parameters (0.7 ms instead of 20: a
    program's start binds every symbol and calls a few dozen, capi/runtime.py)."""
    return list(_lines())


@cache
def function(symbol: str) -> Function:
    """One exported symbol's entry."""
    return _parse_function(_lines()[symbol])


@cache
def functions() -> dict[str, Function]:
    """Every exported symbol, by name."""
    return {symbol: function(symbol) for symbol in _lines()}


@cache
def header_version() -> int:
    """The CUDA_VERSION of the headers the table was generated from."""
    return int(re.search(r"CUDA (\d+) headers", API_FILE.read_text()).group(1))


def read_sections(path: Path) -> dict[str, list[str]]:
    """A types file's lines by `[section]` (comments and blank lines dropped): the
    driver's and each library's (libs/table.py)."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in path.read_text().splitlines():
        if line.startswith("#") or not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
        elif current is None:
            raise ValueError(f"{path}: a line before the first [section]: {line!r}")
        else:
            current.append(line)
    return sections


@cache
def _sections() -> dict[str, list[str]]:
    return read_sections(TYPES_FILE)


def types_cdef() -> str:
    """C declarations of every type the signatures use (cffi's and the C compiler's)."""
    return "\n".join(_sections()["types"]) + "\n"


@cache
def enums() -> dict[str, dict[str, int]]:
    """Every enum of the headers: enum type name -> {constant: value}."""
    out = {}
    for line in _sections()["enums"]:
        name, *items = line.split()
        out[name] = {k: int(v) for k, v in (i.split("=") for i in items)}
    return out


@cache
def constants() -> dict[str, int]:
    """Every enum constant and integer #define of the headers, by name."""
    out: dict[str, int] = {}
    for values in enums().values():
        out.update(values)
    for line in _sections()["defines"]:
        name, value = line.split()
        out[name] = int(value)
    return out


@cache
def handle_types() -> frozenset[str]:
    """Typedef names of opaque handles (`typedef struct CUctx_st *CUcontext;`)."""
    pattern = re.compile(r"typedef struct \w+ \*(\w+);")
    return frozenset(m[1] for line in _sections()["types"] if (m := pattern.fullmatch(line)))


@cache
def address_types() -> frozenset[str]:
    """Typedef names of pointers: handles, `void *` typedefs and function pointers."""
    pointer = re.compile(r"typedef [^;(]*\*\s*(\w+);")
    function = re.compile(r"typedef [^;]*\(\s*(?:CUDA_CB\s*)?\*\s*(\w+)\)\s*\(.*")
    return frozenset(m[1] for line in _sections()["types"]
                     if (m := pointer.fullmatch(line) or function.fullmatch(line)))


@cache
def proc_variants() -> dict[str, list[tuple[int, bool, str]]]:
    """cuGetProcAddress's view: name -> [(since version, ptds, symbol)], oldest first."""
    out: dict[str, list[tuple[int, bool, str]]] = {}
    for symbol, line in _lines().items():  # (the variants alone: no parameters parsed)
        for v in _variants(line.partition(") @ ")[2]):
            out.setdefault(v.name, []).append((v.since, v.ptds, symbol))
    for variants in out.values():
        variants.sort()
    return out
