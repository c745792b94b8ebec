"""Generate the API tables of cuport's library stand-ins from NVIDIA's headers.

    python -m cuport.libs.gen_tables --include DIR [--include DIR ...] [--check]

DIR holds the libraries' headers (cublas_v2.h, cufft.h, curand.h, ...: PyPI's
nvidia-cublas, -cufft, -curand, -cusparse and -cusolver wheels carry them in
nvidia/cu13/include) and the toolkit's (cuda_runtime_api.h, library_types.h); the
toolkit's include directory is added by default. The headers are only read: the output
is cuport's own compact table per library (`tables/<lib>_api.txt`: one exported
function a line with its signature and out-parameters; `tables/<lib>_types.txt`: the
C types those signatures need, every enum's constants, the integer #defines), in the
driver table's format (cuport/capi/gen_table.py, whose parser this reuses).
Everything else (the C entry points of every soname, the dispatch into Python, the
coverage list) is derived from these files.

Directions: a non-const pointer is `out` (the dispatcher writes what the
implementation returns through it) when it points to a handle, an enum, a size_t, a
cufftHandle or a pointer, or to a plain number in a function whose
name says it hands values back (Get, Create, bufferSize, Version, Property). Other
pointers (device data, host scalars read or written according to the pointer mode) are
passed to the implementation as addresses.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from pycparser import c_ast, c_parser

from cuport.capi import gen_table as driver_gen
from cuport.libs.catalog import LIBRARIES, Library

HERE = Path(__file__).resolve().parent
TABLES = HERE / "tables"

FAKE = ("typedef unsigned long size_t; typedef unsigned char uint8_t; typedef unsigned short"
        " uint16_t; typedef unsigned int uint32_t; typedef unsigned long uint64_t; typedef signed"
        " char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t;")
FAKE_HEADERS = {name: FAKE for name in ("stdlib.h", "stddef.h", "stdint.h", "inttypes.h",
                                        "math.h", "limits.h", "string.h")}
FAKE_HEADERS["stdio.h"] = FAKE + " typedef struct _IO_FILE FILE;"

GETTER = re.compile(r"Get|Create|BufferSize|bufferSize|_buffersize|Version|Property")
BUFFER_SIZE = re.compile(r"[Bb]ufferSize|_buffersize")
WORK_SIZE = re.compile(r"work|size|buffer", re.IGNORECASE)  # which numbers a sizing call returns
PLAIN_NUMBERS = {"int", "unsigned int", "long", "long long", "unsigned long long", "short",
                 "float", "double", "int64_t", "int32_t", "uint32_t", "uint64_t", "char",
                 "signed char", "unsigned char", "unsigned short", "uint8_t", "int8_t"}

# (symbol, parameter) -> direction, where the rule above is wrong.
OVERRIDES: dict[tuple[str, str], str] = {
    # arrays the caller fills or sizes
    ("cufftMakePlanMany", "n"): "in",
    ("cufftMakePlanMany", "inembed"): "in",
    ("cufftMakePlanMany", "onembed"): "in",
    ("cufftGetSizeMany", "n"): "in",
    ("cufftGetSizeMany", "inembed"): "in",
    ("cufftGetSizeMany", "onembed"): "in",
    ("cufftGetSizeMany64", "n"): "in",
    ("cufftGetSizeMany64", "inembed"): "in",
    ("cufftGetSizeMany64", "onembed"): "in",
    ("cufftPlanMany", "n"): "in",
    ("cufftPlanMany", "inembed"): "in",
    ("cufftPlanMany", "onembed"): "in",
    ("cufftMakePlanMany64", "n"): "in",
    ("cufftMakePlanMany64", "inembed"): "in",
    ("cufftMakePlanMany64", "onembed"): "in",
    ("cufftXtMakePlanMany", "n"): "in",
    ("cufftXtMakePlanMany", "inembed"): "in",
    ("cufftXtMakePlanMany", "onembed"): "in",
    ("cufftXtGetSizeMany", "n"): "in",
    ("cufftXtGetSizeMany", "inembed"): "in",
    ("cufftXtGetSizeMany", "onembed"): "in",
    # cufftSetWorkArea-style and multi-GPU arrays: the caller's
    ("cufftXtSetGPUs", "whichGPUs"): "in",
    ("cufftXtSetWorkArea", "workArea"): "in",
    ("cufftXtSetWorkAreaPolicy", "workSize"): "in",
    ("cublasLtMatmulAlgoGetIds", "algoIdsArray"): "in",
    ("cublasLtMatmulAlgoGetIds", "returnAlgoCount"): "out",
    ("cublasLtMatmulAlgoGetHeuristic", "returnAlgoCount"): "out",
    ("cusparseCreateIdentityPermutation", "p"): "in",
    ("curandGetDirectionVectors32", "vectors"): "out",
    ("curandGetDirectionVectors64", "vectors"): "out",
}


# The half-precision types, which cuda_fp16.h/cuda_bf16.h declare only for C++: their ABI
# is one 16-bit integer.
PRELUDE = ("typedef struct __half { unsigned short x; } __half;"
           " typedef struct __half2 { unsigned short x, y; } __half2;"
           " typedef struct __nv_bfloat16 { unsigned short x; } __nv_bfloat16;")
CPLUSPLUS_ONLY = re.compile(r"#if defined\(__cplusplus\)(?=\s*\n\s*cublasStatus_t)")


def patched_headers(lib: Library, includes: list[Path], tmp: Path) -> Path:
    """Copies of the library's headers whose C++-only declarations (cublasHgemm and the
    other __half functions, exported by NVIDIA's C library all the same) are read too."""
    out = tmp / "patched"
    out.mkdir(exist_ok=True)
    for header in dict.fromkeys(lib.umbrella + lib.declared_in):  # "" includes look beside
        path = next((d / header for d in includes if (d / header).exists()), None)
        if path is not None:
            (out / header).write_text(CPLUSPLUS_ONLY.sub("#if 1", path.read_text()))
    return out


def preprocess(lib: Library, includes: list[Path], tmp: Path) -> str:
    for name, text in FAKE_HEADERS.items():
        path = tmp / "fake" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    (tmp / "fake" / "cuport_prelude.h").write_text(PRELUDE + "\n")
    umbrella = tmp / "all.h"
    umbrella.write_text("#include <cuport_prelude.h>\n"
                        + "".join(f"#include <{h}>\n" for h in lib.umbrella))
    flags = ["-nostdinc", "-D__attribute__(x)=", "-D__inline__=", "-D__inline=",
             "-I", str(patched_headers(lib, includes, tmp)), "-I", str(tmp / "fake")]
    for inc in includes:
        flags += ["-I", str(inc)]
    out = subprocess.run(["gcc", "-E", *flags, str(umbrella)], check=True,
                         capture_output=True, text=True)
    return out.stdout


class LibHeaders(driver_gen.Headers):
    """The driver generator's header model with the libraries' rule for directions."""

    def __init__(self, ast: c_ast.FileAST, lib: Library) -> None:
        self.lib = lib
        super().__init__(ast)

    def _collect(self, ext: c_ast.Node) -> None:
        super()._collect(ext)
        if isinstance(ext, c_ast.Decl) and isinstance(ext.type, c_ast.FuncDecl):
            if Path(ext.coord.file).name not in self.lib.declared_in:
                del self.funcs[ext.name]

    def ctype(self, node: c_ast.Node) -> str:
        """As the driver's, with array parameters spelled as the pointers they are."""
        return re.sub(r"\s*\[\d*\]", " *", super().ctype(node)).replace("* *", "**")

    def direction(self, symbol: str, param: c_ast.Decl) -> str:
        if (symbol, param.name) in OVERRIDES:
            return OVERRIDES[(symbol, param.name)]
        node = param.type
        if not isinstance(node, c_ast.PtrDecl):
            return "in"
        pointee = node.type
        if isinstance(pointee, c_ast.PtrDecl):
            return "out" if GETTER.search(symbol) else "in"
        if not isinstance(pointee, c_ast.TypeDecl) or "const" in pointee.quals:
            return "in"
        if not isinstance(pointee.type, c_ast.IdentifierType):
            return "in"
        name = " ".join(pointee.type.names)
        resolved = self.resolve(pointee)
        if isinstance(resolved, c_ast.PtrDecl):
            return "out"  # a handle
        if isinstance(resolved, c_ast.TypeDecl) and isinstance(resolved.type, c_ast.Enum):
            return "out"
        if name in ("size_t", "cufftHandle"):
            return "out"
        base = " ".join(resolved.type.names) if isinstance(resolved, c_ast.TypeDecl) and \
            isinstance(resolved.type, c_ast.IdentifierType) else name
        if base in PLAIN_NUMBERS and GETTER.search(symbol):
            sizing = BUFFER_SIZE.search(symbol)
            return "out" if not sizing or WORK_SIZE.search(param.name) else "in"
        return "in"


class LibTypeWriter(driver_gen.TypeWriter):
    def __init__(self, h: LibHeaders, full: tuple[str, ...]) -> None:
        super().__init__(h)
        self.full = set(full)

    def need_in(self, node: c_ast.Node) -> None:
        if isinstance(node, c_ast.TypeDecl) and isinstance(node.type, c_ast.IdentifierType):
            name = " ".join(node.type.names)
            self.need_name(name, full=name in self.full)
        else:
            super().need_in(node)


def defines_of(lib: Library, includes: list[Path], enum_values: dict[str, int]) -> dict[str, int]:
    """Integer-valued #defines of the library's own headers (CUFFT_FORWARD, versions)."""
    raw: dict[str, str] = {}
    for header in lib.declared_in:
        path = next((d / header for d in includes if (d / header).exists()), None)
        if path is None:
            continue
        for line in path.read_text().splitlines():
            m = re.match(r"\s*#\s*define\s+((?:CU|cu)\w+)\s+([^/]+?)\s*(?:/[*/].*)?$", line)
            if m:
                raw[m.group(1)] = m.group(2)
    names = dict(enum_values)
    out: dict[str, int] = {}
    parser = c_parser.CParser()
    for _ in range(3):
        for name, expr in raw.items():
            if name in out:
                continue
            try:
                init = parser.parse(f"int x = {expr};").ext[0].init
                out[name] = names[name] = driver_gen.const_int(init, names)
            except Exception:  # noqa: BLE001 - not an integer constant expression
                continue
    return out


def tables_for(lib: Library, includes: list[Path]) -> tuple[str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        text = preprocess(lib, includes, Path(tmp))
    ast = c_parser.CParser().parse(text, filename=lib.umbrella[0])
    h = LibHeaders(ast, lib)
    funcs = {name: h.func(name, decl) for name, decl in sorted(h.funcs.items())}
    version = ""
    for inc in includes:
        if (inc / "cuda.h").exists():
            version = re.search(r"#define CUDA_VERSION (\d+)", (inc / "cuda.h").read_text())[1]
    api = [
        f"# cuport {lib.name} API table: CUDA {version} headers, {len(funcs)} functions.",
        "# Generated by `python -m cuport.libs.gen_tables`; do not edit by hand.",
        "# One function a line: its C signature; `out` marks a pointer the dispatcher",
        "# writes the implementation's result through.",
    ]
    for f in funcs.values():
        params = ", ".join(("out " if p.direction == "out" else "") + p.ctype
                           + ("" if p.ctype.endswith("*") else " ") + p.name for p in f.params)
        api.append(f"{f.ret} {f.symbol}({params})")
    tw = LibTypeWriter(h, lib.full_structs)
    tw.need_name(lib.status)
    for f in funcs.values():
        decl = h.funcs[f.symbol]
        tw.need_by_value(decl.type.type)
        for p in decl.type.args.params if decl.type.args else []:
            if not isinstance(p, c_ast.EllipsisParam):
                tw.need_by_value(p.type)
    for name in lib.full_structs:
        tw.need_name(name, full=True)
    types = [
        f"# C types of the cuport {lib.name} API table (CUDA {version} headers), generated by",
        "# `python -m cuport.libs.gen_tables`; do not edit.",
        "[types]", *tw.lines, "[enums]",
    ]
    for name, values in sorted(h.enums.items()):
        if name and values:
            types.append(name + " " + " ".join(f"{k}={v}" for k, v in values))
    types.append("[defines]")
    for name, value in sorted(defines_of(lib, includes, h.enum_values).items()):
        types.append(f"{name} {value}")
    return "\n".join(api) + "\n", "\n".join(types) + "\n"


MTGP32_HEADER = "curand_mtgp32dc_p_11213.h"


def mtgp32_table(includes: list[Path]) -> str | None:
    """NVIDIA's MTGP32 parameter sets (curand_mtgp32dc_p_11213.h) as cuport's data table:
    one set a line, mexp pos sh1 sh2, tbl[16], tmp_tbl[16], flt_tmp_tbl[16], mask (the
    SHA-1 of the polynomial is left out); None when the header is not found."""
    path = next((d / MTGP32_HEADER for d in includes if (d / MTGP32_HEADER).exists()), None)
    if path is None:
        return None
    text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)
    body = text[text.index("mtgp32dc_params_fast_11213[]"):]
    body = body[body.index("=") + 1:body.index("};")]
    entries = re.findall(r"\{\s*(\d+\s*,.*?)\}\s*\}", body, flags=re.S)
    lines = [f"# NVIDIA's MTGP32 parameter sets for 2^11213-1 ({len(entries)} sets), from {MTGP32_HEADER};",
             "# generated by `python -m cuport.libs.gen_tables`; do not edit.",
             "# mexp pos sh1 sh2 tbl[16] tmp_tbl[16] flt_tmp_tbl[16] mask"]
    for e in entries:
        nums = re.findall(r"0x[0-9a-fA-F]+|\d+", e)[:53]
        if len(nums) != 53:
            raise ValueError(f"{MTGP32_HEADER}: a parameter set with {len(nums)} numbers")
        lines.append(" ".join(nums[:4]) + " " + " ".join(f"0x{int(x, 0):08x}" for x in nums[4:]))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--include", type=Path, action="append", default=[],
                    help="a directory with the libraries' headers (repeatable)")
    ap.add_argument("--toolkit", type=Path, default=Path("/usr/local/cuda/include"),
                    help="the CUDA toolkit's include directory")
    ap.add_argument("--check", action="store_true",
                    help="compare with the committed tables instead of writing them")
    args = ap.parse_args(argv)
    includes = [*args.include, args.toolkit]
    TABLES.mkdir(exist_ok=True)
    differs = []
    for lib in LIBRARIES:
        api, types = tables_for(lib, includes)
        api_file, types_file = TABLES / f"{lib.name}_api.txt", TABLES / f"{lib.name}_types.txt"
        if args.check:
            if not (api_file.exists() and api_file.read_text() == api
                    and types_file.read_text() == types):
                differs.append(lib.name)
            continue
        api_file.write_text(api)
        types_file.write_text(types)
        print(f"wrote {api_file.name} ({api.count(chr(10)) - 4} functions), {types_file.name}")
    mtgp = mtgp32_table(includes)
    if mtgp is not None:
        mtgp_file = TABLES / "mtgp32_11213.txt"
        if not args.check:
            mtgp_file.write_text(mtgp)
        elif not (mtgp_file.exists() and mtgp_file.read_text() == mtgp):
            differs.append("mtgp32")
    if args.check:
        print("tables differ from the headers: " + ", ".join(differs) if differs
              else "tables are current")
        return 1 if differs else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
