"""The libraries' API tables (`tables/<lib>_api.txt`, `<lib>_types.txt`), read once.

Everything C-facing is derived from here: the cffi declarations and the exported
entries of libcuport_libs.so, the stubs of every soname (libs/build.py), the Python
dispatch (libs/dispatch.py) and the coverage list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from cuport.capi.table import CParam, read_sections
from cuport.libs.catalog import BY_NAME, LIBRARIES, Library

TABLES = Path(__file__).resolve().parent / "tables"

_LINE = re.compile(r"(?P<ret>.+?)\s*\b(?P<sym>\w+)\((?P<params>.*)\)$")
#: a parameter ("const float *", "cublasHandle_t"), spelt as in the driver's table
Param = CParam


@dataclass(frozen=True)
class Function:
    library: Library
    symbol: str
    ret: str
    params: tuple[Param, ...]

    @property
    def returns_status(self) -> bool:
        return self.ret == self.library.status

    def c_params(self) -> str:
        return ", ".join(p.declaration() for p in self.params) or "void"

    def c_args(self) -> str:
        return ", ".join(p.name for p in self.params)


def _parse(lib: Library, line: str) -> Function:
    m = _LINE.match(line)
    if not m:
        raise ValueError(f"bad table line: {line!r}")
    return Function(lib, m["sym"], m["ret"].strip(), Param.parse_all(m["params"]))


@cache
def functions(name: str) -> dict[str, Function]:
    """Every function of one library, by symbol."""
    lib = BY_NAME[name]
    out = {}
    for line in (TABLES / f"{name}_api.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            f = _parse(lib, line)
            out[f.symbol] = f
    return out


def all_functions() -> list[Function]:
    return [f for lib in LIBRARIES for f in functions(lib.name).values()]


@cache
def _sections(name: str) -> dict[str, list[str]]:
    return read_sections(TABLES / f"{name}_types.txt")


def types_cdef(names: tuple[str, ...] | None = None) -> str:
    """C declarations of the types of the given libraries (all by default), each once."""
    lines: list[str] = []
    seen: set[str] = set()
    for name in names or tuple(lib.name for lib in LIBRARIES):
        for line in _sections(name)["types"]:
            if line not in seen:
                seen.add(line)
                lines.append(line)
    return "\n".join(lines) + "\n"


@cache
def constants(name: str) -> dict[str, int]:
    """Every enum constant and integer #define of one library's headers."""
    out: dict[str, int] = {}
    for line in _sections(name)["enums"]:
        _, *items = line.split()
        out.update((k, int(v)) for k, v in (i.split("=") for i in items))
    for line in _sections(name).get("defines", []):
        key, value = line.split()
        out[key] = int(value)
    return out


@cache
def status_names(name: str) -> dict[int, str]:
    """Status code -> name for a library's status enum."""
    lib = BY_NAME[name]
    for line in _sections(name)["enums"]:
        enum, *items = line.split()
        if enum == lib.status or enum == lib.status.removesuffix("_t"):
            return {int(v): k for k, v in (i.split("=") for i in items)}
    raise KeyError(f"no enum {lib.status} in the {name} table")
