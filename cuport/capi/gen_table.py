"""Generate cuport's driver API table from NVIDIA's CUDA headers.

    python -m cuport.capi.gen_table [--include /usr/local/cuda/include] [--check]

The headers are only read, never copied: the output is our own compact table
(`driver_api.txt`: one exported symbol a line with its signature, out-parameters
and the CUDA versions cuGetProcAddress maps to it; `driver_types.txt`: the C types
those signatures need, every enum's constants and the integer #defines). Everything
else in cuport/capi (cffi declarations, exported symbols, dispatch, trace, coverage)
is derived from these two files at build or import time.

How the table is derived:
- The exported symbols are the functions the headers declare when preprocessed with
  `__CUDA_API_VERSION_INTERNAL` (what libcuda itself is compiled with): that brings
  the `_v2`/`_v3` symbols, the `_ptds`/`_ptsz` per-thread-default-stream symbols, and
  the legacy symbols (`cuMemAlloc`, `cuCtxCreate`, 32-bit `CUdeviceptr_v1` forms).
- `cudaTypedefs.h` names each ABI variant `PFN_<name>_v<version>[_ptds|_ptsz]`. A
  variant is matched to the symbol among `<name>`, `<name>_v2`, ... and the header's
  `#define <name> <target>` whose signature (typedefs resolved) is the same; when
  several match, variants in version order take the lowest-numbered unused symbol.
- Directions: a non-const pointer to a scalar, enum, handle or pointer is `out`
  (the dispatcher writes what the implementation returns); other pointers are
  passed through. OVERRIDES below correct the heuristic where it is wrong.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from pycparser import c_ast, c_generator, c_parser

HERE = Path(__file__).resolve().parent
API_FILE = HERE / "driver_api.txt"
TYPES_FILE = HERE / "driver_types.txt"

HEADERS = [
    "cuda.h", "cudaProfiler.h", "cudaGL.h", "cudaVDPAU.h", "cudaEGL.h",
    "cudaTypedefs.h", "cudaProfilerTypedefs.h", "cudaGLTypedefs.h",
    "cudaVDPAUTypedefs.h", "cudaEGLTypedefs.h",
]

# Stand-ins for the system and window-system headers the CUDA headers include: only
# the names they use, with the C types that fix their ABI.
FAKE_HEADERS = {
    "stdlib.h": "typedef unsigned long size_t;",
    "stddef.h": "typedef unsigned long size_t;",
    "stdint.h": (
        "typedef unsigned char uint8_t; typedef unsigned short uint16_t;"
        " typedef unsigned int uint32_t; typedef unsigned long uint64_t;"
        " typedef signed char int8_t; typedef short int16_t; typedef int int32_t;"
        " typedef long int64_t;"
    ),
    "GL/gl.h": "typedef unsigned int GLuint; typedef unsigned int GLenum;",
    "EGL/egl.h": (
        "typedef void *EGLImageKHR; typedef void *EGLStreamKHR; typedef void *EGLSyncKHR;"
        " typedef int EGLint; typedef unsigned int EGLenum; typedef void *EGLDisplay;"
    ),
    "EGL/eglext.h": "",
    "vdpau/vdpau.h": (
        "typedef unsigned int VdpDevice; typedef unsigned int VdpVideoSurface;"
        " typedef unsigned int VdpOutputSurface; typedef unsigned int VdpFuncId;"
        " typedef int VdpStatus; typedef VdpStatus VdpGetProcAddress(VdpDevice device,"
        " VdpFuncId function_id, void **function_pointer);"
        " typedef unsigned int VdpChromaType; typedef unsigned int VdpRGBAFormat;"
    ),
}
BUILTIN_TYPEDEFS = {"size_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
                    "int8_t", "int16_t", "int32_t", "int64_t"}

# Structs whose fields the driver reads or writes (besides those passed by value,
# which the ABI needs anyway): their layout goes into the table.
FULL_STRUCTS = {
    "CUuuid", "CUdevprop", "CUDA_MEMCPY2D", "CUDA_MEMCPY3D", "CUDA_MEMCPY3D_PEER",
    "CUDA_ARRAY_DESCRIPTOR", "CUDA_ARRAY3D_DESCRIPTOR", "CUlaunchConfig",
    "CUlaunchAttribute", "CUctxCreateParams", "CUexecAffinityParam",
    "CUmemLocation", "CUDA_POINTER_ATTRIBUTE_P2P_TOKENS",
    # virtual memory management (driver/vmm.py) and pools (driver/mempool.py)
    "CUmemAllocationProp", "CUmemAccessDesc",
    # graphs (driver/graph.py)
    "CUDA_KERNEL_NODE_PARAMS_v1", "CUDA_KERNEL_NODE_PARAMS_v2", "CUDA_MEMSET_NODE_PARAMS",
    "CUDA_HOST_NODE_PARAMS", "CUDA_MEM_ALLOC_NODE_PARAMS_v1", "CUgraphNodeParams",
    "CUgraphEdgeData", "CUgraphExecUpdateResultInfo", "CUDA_GRAPH_INSTANTIATE_PARAMS",
}

# (symbol, parameter) -> direction, where the pointer heuristic is wrong: arrays the
# caller fills (in), and in/out counts.
OVERRIDES = {
    ("cuModuleLoadDataEx", "options"): "in",
    ("cuModuleLoadDataEx", "optionValues"): "in",
    ("cuLinkCreate", "options"): "in",
    ("cuLinkCreate", "optionValues"): "in",
    ("cuLinkAddData", "options"): "in",
    ("cuLinkAddData", "optionValues"): "in",
    ("cuLinkAddFile", "options"): "in",
    ("cuLinkAddFile", "optionValues"): "in",
    ("cuLinkCreate_v2", "options"): "in",
    ("cuLinkCreate_v2", "optionValues"): "in",
    ("cuLinkAddData_v2", "options"): "in",
    ("cuLinkAddData_v2", "optionValues"): "in",
    ("cuLinkAddFile_v2", "options"): "in",
    ("cuLinkAddFile_v2", "optionValues"): "in",
    ("cuLibraryLoadData", "jitOptions"): "in",
    ("cuLibraryLoadData", "jitOptionsValues"): "in",
    ("cuLibraryLoadData", "libraryOptions"): "in",
    ("cuLibraryLoadData", "libraryOptionValues"): "in",
    ("cuLibraryLoadFromFile", "jitOptions"): "in",
    ("cuLibraryLoadFromFile", "jitOptionsValues"): "in",
    ("cuLibraryLoadFromFile", "libraryOptions"): "in",
    ("cuLibraryLoadFromFile", "libraryOptionValues"): "in",
    ("cuPointerGetAttributes", "attributes"): "in",
    ("cuPointerGetAttributes", "data"): "in",
    ("cuLaunchKernel", "kernelParams"): "in",
    ("cuLaunchKernel", "extra"): "in",
    ("cuLaunchKernel_ptsz", "kernelParams"): "in",
    ("cuLaunchKernel_ptsz", "extra"): "in",
    ("cuLaunchKernelEx", "kernelParams"): "in",
    ("cuLaunchKernelEx", "extra"): "in",
    ("cuLaunchKernelEx_ptsz", "kernelParams"): "in",
    ("cuLaunchKernelEx_ptsz", "extra"): "in",
    ("cuLaunchCooperativeKernel", "kernelParams"): "in",
    ("cuLaunchCooperativeKernel_ptsz", "kernelParams"): "in",
    ("cuPointerGetAttribute", "data"): "in",
    ("cuCtxCreate_v3", "paramsArray"): "in",
    ("cuLibraryEnumerateKernels", "kernels"): "in",
    ("cuModuleEnumerateFunctions", "functions"): "in",
    # graphs: node arrays the caller passes or sizes, in/out counts, an in/out mode
    ("cuGraphGetNodes", "nodes"): "in",
    ("cuGraphGetNodes", "numNodes"): "in",
    ("cuGraphGetRootNodes", "rootNodes"): "in",
    ("cuGraphGetRootNodes", "numRootNodes"): "in",
    ("cuGraphGetEdges", "from"): "in",
    ("cuGraphGetEdges", "to"): "in",
    ("cuGraphGetEdges", "numEdges"): "in",
    ("cuGraphGetEdges_v2", "from"): "in",
    ("cuGraphGetEdges_v2", "to"): "in",
    ("cuGraphGetEdges_v2", "numEdges"): "in",
    ("cuGraphNodeGetDependencies", "dependencies"): "in",
    ("cuGraphNodeGetDependencies", "numDependencies"): "in",
    ("cuGraphNodeGetDependencies_v2", "dependencies"): "in",
    ("cuGraphNodeGetDependencies_v2", "numDependencies"): "in",
    ("cuGraphNodeGetDependentNodes", "dependentNodes"): "in",
    ("cuGraphNodeGetDependentNodes", "numDependentNodes"): "in",
    ("cuGraphNodeGetDependentNodes_v2", "dependentNodes"): "in",
    ("cuGraphNodeGetDependentNodes_v2", "numDependentNodes"): "in",
    ("cuStreamUpdateCaptureDependencies", "dependencies"): "in",
    ("cuStreamUpdateCaptureDependencies_ptsz", "dependencies"): "in",
    ("cuStreamUpdateCaptureDependencies_v2", "dependencies"): "in",
    ("cuStreamUpdateCaptureDependencies_v2_ptsz", "dependencies"): "in",
    ("cuThreadExchangeStreamCaptureMode", "mode"): "in",
}


def preprocess(include: Path, tmp: Path) -> str:
    for name, text in FAKE_HEADERS.items():
        path = tmp / "fake" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    # The window-system stand-ins first: cudaVDPAU.h uses VDPAU types it does not include.
    umbrella = tmp / "all.h"
    umbrella.write_text("".join(f"#include <{h}>\n" for h in
                                ["vdpau/vdpau.h", "GL/gl.h", "EGL/egl.h", *HEADERS]))
    out = subprocess.run(
        ["gcc", "-E", "-nostdinc", "-I", str(tmp / "fake"), "-I", str(include),
         "-D__CUDA_API_VERSION_INTERNAL", str(umbrella)],
        check=True, capture_output=True, text=True)
    return out.stdout


def const_int(node: c_ast.Node, names: dict[str, int]) -> int:
    """Value of an integer constant expression from the headers (enum values, array sizes)."""
    if isinstance(node, c_ast.Constant):
        text = node.value.rstrip("uUlL")
        if text.startswith("'"):
            return ord(text[1])
        return int(text, 0) if not (len(text) > 1 and text[0] == "0" and text[1].isdigit()) else int(text, 8)
    if isinstance(node, c_ast.ID):
        return names[node.name]
    if isinstance(node, c_ast.UnaryOp) and node.op == "sizeof":
        # Only sizeof(enum) and sizeof(pointer) occur in the headers' array sizes.
        inner = node.expr.type
        return 8 if isinstance(inner, c_ast.PtrDecl) else 4
    if isinstance(node, c_ast.UnaryOp):
        v = const_int(node.expr, names)
        return {"-": -v, "+": v, "~": ~v}[node.op]
    if isinstance(node, c_ast.BinaryOp):
        a, b = const_int(node.left, names), const_int(node.right, names)
        ops = {"+": a + b, "-": a - b, "*": a * b, "<<": a << b if b >= 0 else 0,
               ">>": a >> b if b >= 0 else 0, "|": a | b, "&": a & b}
        return ops[node.op]
    if isinstance(node, c_ast.Cast):
        return const_int(node.expr, names)
    raise ValueError(f"not a constant: {node!r}")


@dataclass
class Param:
    name: str
    ctype: str  # C type as the header spells it, e.g. "const CUDA_MEMCPY2D *"
    canon: str  # the same with every typedef resolved: compares ABI variants
    direction: str  # "out" or "in"


@dataclass
class Func:
    symbol: str
    ret: str
    params: list[Param]
    variants: list[tuple[str, int, bool]] = field(default_factory=list)  # (name, version, ptds)


class Headers:
    """The parsed headers: typedefs, struct/union definitions, enums and functions."""

    def __init__(self, ast: c_ast.FileAST) -> None:
        self.typedefs: dict[str, c_ast.Typedef] = {}
        self.tags: dict[str, c_ast.Node] = {}  # "struct X" / "union X" -> definition
        self.enums: dict[str, list[tuple[str, int]]] = {}
        self.enum_values: dict[str, int] = {}
        self.funcs: dict[str, c_ast.Decl] = {}
        self.pfns: dict[str, c_ast.Typedef] = {}
        self.gen = c_generator.CGenerator()
        for ext in ast.ext:
            self._collect(ext)

    def _collect(self, ext: c_ast.Node) -> None:
        for node in self._walk_types(ext):
            if isinstance(node, (c_ast.Struct, c_ast.Union)) and node.decls is not None and node.name:
                self.tags[f"{self._kw(node)} {node.name}"] = node
            if isinstance(node, c_ast.Enum) and node.values is not None:
                self._enum(node, ext)
        if isinstance(ext, c_ast.Typedef):
            if ext.name.startswith("PFN_"):
                self.pfns[ext.name] = ext
            else:
                self.typedefs[ext.name] = ext
        elif isinstance(ext, c_ast.Decl) and isinstance(ext.type, c_ast.FuncDecl):
            self.funcs[ext.name] = ext

    @staticmethod
    def _kw(node: c_ast.Node) -> str:
        return "struct" if isinstance(node, c_ast.Struct) else "union"

    def _walk_types(self, node: c_ast.Node):
        yield node
        for _, child in node.children():
            yield from self._walk_types(child)

    def _enum(self, node: c_ast.Enum, ext: c_ast.Node) -> None:
        values, nxt = [], 0
        for item in node.values.enumerators:
            nxt = const_int(item.value, self.enum_values) if item.value is not None else nxt
            self.enum_values[item.name] = nxt
            values.append((item.name, nxt))
            nxt += 1
        name = ext.name if isinstance(ext, c_ast.Typedef) else node.name
        self.enums[name or node.name] = values

    # -- type rendering and resolution ------------------------------------------------

    def ctype(self, node: c_ast.Node) -> str:
        """C spelling of a parameter type without its name ("const void *")."""
        text = self.gen._generate_type(node, emit_declname=False)
        return re.sub(r"\s+", " ", text).replace("* ", "*").strip()

    def canon(self, node: c_ast.Node) -> str:
        """The type with typedefs resolved, for comparing two signatures' ABI."""
        if isinstance(node, c_ast.TypeDecl):
            quals = " ".join(node.quals)
            return (quals + " " if quals else "") + self.canon(node.type)
        if isinstance(node, c_ast.PtrDecl):
            return f"ptr({self.canon(node.type)})"
        if isinstance(node, c_ast.ArrayDecl):
            return f"ptr({self.canon(node.type)})"
        if isinstance(node, c_ast.IdentifierType):
            name = " ".join(node.names)
            if name in self.typedefs and name not in BUILTIN_TYPEDEFS:
                return self.canon(self.typedefs[name].type)
            return name
        if isinstance(node, (c_ast.Struct, c_ast.Union)):
            return f"{self._kw(node)} {node.name or id(node)}"
        if isinstance(node, c_ast.Enum):
            return "enum"
        if isinstance(node, c_ast.FuncDecl):
            args = node.args.params if node.args else []
            return "fn(" + ",".join(self.canon(a.type) for a in args
                                    if not isinstance(a, c_ast.EllipsisParam)) + ")"
        if isinstance(node, c_ast.Typename):
            return self.canon(node.type)
        raise TypeError(node)

    def resolve(self, node: c_ast.Node) -> c_ast.Node:
        """Follow typedef names to the underlying type node."""
        while isinstance(node, c_ast.TypeDecl) and isinstance(node.type, c_ast.IdentifierType):
            name = " ".join(node.type.names)
            if name not in self.typedefs or name in BUILTIN_TYPEDEFS:
                return node
            node = self.typedefs[name].type
        return node

    def is_scalar_like(self, node: c_ast.Node) -> bool:
        """Arithmetic, enum or pointer: a value an out-parameter can hand back."""
        node = self.resolve(node)
        if isinstance(node, c_ast.PtrDecl):
            return True
        if isinstance(node, c_ast.TypeDecl):
            inner = node.type
            if isinstance(inner, c_ast.Enum):
                return True
            if isinstance(inner, c_ast.IdentifierType):
                name = " ".join(inner.names)
                return name not in ("void", "char", "signed char", "unsigned char")
        return False

    def direction(self, symbol: str, param: c_ast.Decl) -> str:
        if (symbol, param.name) in OVERRIDES:
            return OVERRIDES[(symbol, param.name)]
        node = param.type
        if not isinstance(node, c_ast.PtrDecl):
            return "in"
        pointee = node.type
        if isinstance(pointee, c_ast.TypeDecl) and "const" in pointee.quals:
            return "in"
        return "out" if self.is_scalar_like(pointee) else "in"

    def func(self, symbol: str, decl: c_ast.Node) -> Func:
        fdecl = decl.type if isinstance(decl.type, c_ast.FuncDecl) else decl.type.type
        ret = self.ctype(fdecl.type)
        params = []
        for i, p in enumerate(fdecl.args.params if fdecl.args else []):
            if isinstance(p, c_ast.Typename) and self.ctype(p.type) == "void":
                continue
            name = p.name or f"arg{i}"
            params.append(Param(name, self.ctype(p.type), self.canon(p.type),
                                self.direction(symbol, p)))
        return Func(symbol, ret, params)


def pfn_signature(h: Headers, typedef: c_ast.Typedef) -> list[str]:
    fdecl = typedef.type.type  # PtrDecl -> FuncDecl
    return [h.canon(p.type) for p in (fdecl.args.params if fdecl.args else [])
            if not (isinstance(p, c_ast.Typename) and h.ctype(p.type) == "void")]


def header_defines(include: Path) -> dict[str, str]:
    """`#define cuName target` lines: the symbol a plain name means in the newest API."""
    out = {}
    pattern = re.compile(r"#define\s+(cu\w+)\s+(?:__CUDA_API_PT(?:DS|SZ)\((\w+)\)|(cu\w+))")
    for line in (include / "cuda.h").read_text().splitlines():
        m = pattern.match(line.strip())
        if m:
            out[m.group(1)] = m.group(2) or m.group(3)
    return out


def match_variants(h: Headers, funcs: dict[str, Func], defines: dict[str, str]) -> list[str]:
    """Attach each PFN variant to its symbol; return the problems found."""
    problems: list[str] = []
    by_name: dict[str, list[tuple[int, bool, c_ast.Typedef]]] = {}
    for pfn, td in h.pfns.items():
        m = re.fullmatch(r"PFN_(\w+)_v(\d+)(_ptds|_ptsz)?", pfn)
        if not m:
            continue
        by_name.setdefault(m.group(1), []).append((int(m.group(2)), bool(m.group(3)), td))
    for name, variants in sorted(by_name.items()):
        for want_ptds in (False, True):
            used: set[str] = set()
            for version, ptds, td in sorted(v for v in variants if v[1] == want_ptds):
                sig = pfn_signature(h, td)
                bases = [name] + [f"{name}_v{i}" for i in range(2, 10)]
                if name in defines:
                    bases.append(defines[name])
                suffixes = ["_ptds", "_ptsz"] if ptds else [""]
                candidates = [b + s for b in bases for s in suffixes if b + s in funcs]
                matching = [c for c in candidates
                            if [p.canon for p in funcs[c].params] == sig and c not in used]
                if not matching:
                    problems.append(f"PFN_{name}_v{version}{'_ptds' if ptds else ''}: no symbol "
                                    f"with its signature among {candidates}")
                    continue
                used.add(matching[0])
                funcs[matching[0]].variants.append((name, version, ptds))
    return problems


# -- types --------------------------------------------------------------------------

class TypeWriter:
    """Writes the C declarations the function signatures need, dependencies first."""

    def __init__(self, h: Headers) -> None:
        self.h = h
        self.lines: list[str] = []
        self.done: set[str] = set()
        self.full_tags: set[str] = set()

    def need_name(self, name: str, full: bool = False) -> None:
        if name in BUILTIN_TYPEDEFS or name not in self.h.typedefs:
            return
        key = name + ("!" if full else "")
        if key in self.done:
            return
        self.done.add(key)
        td = self.h.typedefs[name]
        node = td.type
        # Follow pure renames first (CUdeviceptr -> CUdeviceptr_v2).
        if isinstance(node, c_ast.TypeDecl) and isinstance(node.type, c_ast.IdentifierType):
            target = " ".join(node.type.names)
            self.need_name(target, full)
            if name + "" not in self.done or not full:
                self.done.add(name)
            self._emit(f"typedef {target} {name};", name)
            return
        if isinstance(node, c_ast.TypeDecl) and isinstance(node.type, c_ast.Enum):
            values = self.h.enums.get(name, [])
            base = "int" if any(v < 0 for _, v in values) else "unsigned int"
            self._emit(f"typedef {base} {name};", name)
            return
        if isinstance(node, c_ast.TypeDecl) and isinstance(node.type, (c_ast.Struct, c_ast.Union)):
            su = node.type
            tag = self._tag(su, name)
            if full:
                self.need_tag(tag, su)
            self._emit(f"typedef {tag} {name};", name)
            return
        # Pointers (handles, function pointers) and function types.
        self.need_in(node)
        text = self.h.gen.visit(td)
        self._emit(re.sub(r"\s+", " ", text).strip() + ";", name)

    def _emit(self, line: str, name: str) -> None:
        if line not in self.lines:
            self.lines.append(line)

    def _tag(self, su: c_ast.Node, typedef_name: str) -> str:
        kw = Headers._kw(su)
        if su.name:
            return f"{kw} {su.name}"
        return f"{kw} {typedef_name}_anon"

    def need_tag(self, tag: str, node: c_ast.Node | None = None) -> None:
        if tag in self.full_tags:
            return
        self.full_tags.add(tag)
        node = self.h.tags.get(tag, node)
        if node is None or node.decls is None:
            raise KeyError(f"no definition of {tag}")
        fields = []
        for d in node.decls:
            self.need_by_value(d.type)
            fields.append(self.field(d))
        self.lines.append(f"{tag} {{ {' '.join(fields)} }};")

    def field(self, d: c_ast.Decl) -> str:
        """One struct field, with array sizes evaluated and nested records inlined."""
        node = d.type
        if isinstance(node, (c_ast.Struct, c_ast.Union)) and node.decls is not None:
            # an anonymous member (CUgraphNodeParams' union): its fields are the parent's
            inner = " ".join(self.field(x) for x in node.decls)
            return f"{Headers._kw(node)} {{ {inner} }};"
        if isinstance(node, c_ast.TypeDecl) and isinstance(node.type, (c_ast.Struct, c_ast.Union)) \
                and node.type.decls is not None and not node.type.name:
            inner = " ".join(self.field(x) for x in node.type.decls)
            kw = Headers._kw(node.type)
            return f"{kw} {{ {inner} }}{' ' + d.name if d.name else ''};"
        dims = []
        while isinstance(node, c_ast.ArrayDecl):
            dims.append(const_int(node.dim, self.h.enum_values))
            node = node.type
        base = self.h.ctype(node)
        if isinstance(node, c_ast.TypeDecl) and isinstance(node.type, (c_ast.Struct, c_ast.Union)):
            base = self._tag(node.type, d.name) if node.type.name else base
        bits = f" : {const_int(d.bitsize, {})}" if d.bitsize is not None else ""
        sep = "" if base.endswith("*") else " "
        return f"{base}{sep}{d.name}{''.join(f'[{n}]' for n in dims)}{bits};"

    def need_by_value(self, node: c_ast.Node) -> None:
        """A type stored by value (a field or a by-value parameter): complete it."""
        if isinstance(node, c_ast.ArrayDecl):
            self.need_by_value(node.type)
        elif isinstance(node, (c_ast.Struct, c_ast.Union)) and node.decls is not None:
            for d in node.decls:  # an anonymous member
                self.need_by_value(d.type)
        elif isinstance(node, c_ast.PtrDecl):
            self.need_in(node.type)
        elif isinstance(node, c_ast.TypeDecl):
            inner = node.type
            if isinstance(inner, c_ast.IdentifierType):
                name = " ".join(inner.names)
                if name in self.h.typedefs and self.h.resolve(node) is not node:
                    self.need_name(name, full=True)
            elif isinstance(inner, (c_ast.Struct, c_ast.Union)):
                if inner.decls is not None and not inner.name:
                    for d in inner.decls:
                        self.need_by_value(d.type)
                else:
                    self.need_tag(f"{Headers._kw(inner)} {inner.name}")

    def need_in(self, node: c_ast.Node) -> None:
        """Names a type mentions behind a pointer: declared, possibly incomplete."""
        if isinstance(node, (c_ast.PtrDecl, c_ast.ArrayDecl)):
            self.need_in(node.type)
        elif isinstance(node, c_ast.TypeDecl) and isinstance(node.type, c_ast.IdentifierType):
            self.need_name(" ".join(node.type.names), full=" ".join(node.type.names) in FULL_STRUCTS)
        elif isinstance(node, c_ast.FuncDecl):
            self.need_in(node.type)
            for p in node.args.params if node.args else []:
                if not isinstance(p, c_ast.EllipsisParam):
                    self.need_by_value(p.type)
        elif isinstance(node, c_ast.Typename):
            self.need_in(node.type)


def write_tables(include: Path) -> tuple[str, str, list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        text = preprocess(include, Path(tmp))
    ast = c_parser.CParser().parse(text, filename="cuda.h")
    h = Headers(ast)
    funcs = {name: h.func(name, decl) for name, decl in sorted(h.funcs.items())}
    problems = match_variants(h, funcs, header_defines(include))
    version = re.search(r"#define CUDA_VERSION (\d+)", (include / "cuda.h").read_text()).group(1)

    api = [
        f"# cuport driver API table: CUDA {version} headers, {len(funcs)} exported symbols.",
        "# Generated by `python -m cuport.capi.gen_table`; do not edit by hand.",
        "# One symbol a line: its C signature (`out` marks a pointer the dispatcher writes",
        "# the implementation's result through), then after `@` each `name version [ptds]`",
        "# that cuGetProcAddress answers with this symbol.",
    ]
    for f in funcs.values():
        params = ", ".join(
            ("out " if p.direction == "out" else "") + p.ctype
            + ("" if p.ctype.endswith("*") else " ") + p.name for p in f.params)
        variants = "; ".join(f"{n} {v}{' ptds' if p else ''}" for n, v, p in sorted(f.variants))
        api.append(f"{f.ret} {f.symbol}({params})" + (f" @ {variants}" if variants else ""))

    tw = TypeWriter(h)
    for f in funcs.values():
        decl = h.funcs[f.symbol]
        tw.need_by_value(decl.type.type)
        for p in decl.type.args.params if decl.type.args else []:
            if isinstance(p, c_ast.EllipsisParam):
                continue
            tw.need_by_value(p.type)
    for name in sorted(FULL_STRUCTS):
        tw.need_name(name, full=True)
    types = [
        f"# C types of the cuport driver API table (CUDA {version} headers), generated by",
        "# `python -m cuport.capi.gen_table`; do not edit. Enums are declared as their",
        "# integer type; structs appear with fields only where the ABI or the driver needs them.",
        "[types]",
        *tw.lines,
        "[enums]",
    ]
    for name, values in sorted(h.enums.items()):
        types.append(name + " " + " ".join(f"{k}={v}" for k, v in values))
    types.append("[defines]")
    for name, value in sorted(defines_of(include, h.enum_values).items()):
        types.append(f"{name} {value}")
    return "\n".join(api) + "\n", "\n".join(types) + "\n", problems


def defines_of(include: Path, enum_values: dict[str, int]) -> dict[str, int]:
    """Integer-valued `#define CU_*`/`CUDA_*` constants (casts dropped)."""
    raw: dict[str, str] = {}
    for header in ("cuda.h", "cudaProfiler.h", "cudaGL.h", "cudaEGL.h", "cudaVDPAU.h"):
        for line in (include / header).read_text().splitlines():
            m = re.match(r"\s*#define\s+((?:CU|CUDA)_\w+)\s+([^/]+?)\s*(?:/[*/].*)?$", line)
            if m:
                raw[m.group(1)] = m.group(2)
    names = dict(enum_values)
    out: dict[str, int] = {}
    parser = c_parser.CParser()
    for _ in range(3):  # defines that name later defines resolve on a later pass
        for name, expr in raw.items():
            if name in out:
                continue
            expr = re.sub(r"\(\s*(?:void|CUstream|CUdevice)\s*\*?\s*\)", "", expr)
            try:
                init = parser.parse(f"int x = {expr};").ext[0].init
                out[name] = names[name] = const_int(init, names)
            except Exception:
                continue
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--include", type=Path,
                    default=Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include")
    ap.add_argument("--check", action="store_true",
                    help="compare with the committed table instead of writing it")
    args = ap.parse_args(argv)
    api, types, problems = write_tables(args.include)
    for p in problems:
        print("gen_table:", p, file=sys.stderr)
    if args.check:
        same = API_FILE.read_text() == api and TYPES_FILE.read_text() == types
        print("table is current" if same else "table differs from the headers")
        return 0 if same else 1
    API_FILE.write_text(api)
    TYPES_FILE.write_text(types)
    print(f"wrote {API_FILE.name} ({api.count(chr(10))} lines), {TYPES_FILE.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
