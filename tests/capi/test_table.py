"""The driver API table: generated from NVIDIA's headers, and true to them.

The committed table must be what the generator makes from the installed headers
(when they are the same CUDA version); its signatures must be the headers' (a C
file redeclaring every function after including them compiles); the struct layouts
it carries must match the C compiler's; and the library must export every symbol.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import pytest
from capi_support import library, need_cuda_home, run

from cuport.capi import export_layout, gen_table, table, types
from cuport.capi.dispatch import coverage
from cuport.driver import device, errors
from cuport.driver.api import IMPLEMENTATIONS


def test_regenerating_changes_nothing():
    include = need_cuda_home() / "include"
    version = int(re.search(r"#define CUDA_VERSION (\d+)", (include / "cuda.h").read_text())[1])
    if version != table.header_version():
        pytest.skip(f"the headers here are CUDA {version}, the table is from "
                    f"{table.header_version()}")
    api, types_text, problems = gen_table.write_tables(include)
    assert problems == []
    assert api == table.API_FILE.read_text(), "driver_api.txt is stale: run gen_table"
    assert types_text == table.TYPES_FILE.read_text(), "driver_types.txt is stale: run gen_table"


def test_table_covers_every_cuda_h_name():
    functions = table.functions()
    assert len(functions) >= 670
    # legacy symbols that cuda.h #defines away, and the per-thread variants, are exported too
    for name in ("cuMemAlloc", "cuMemAlloc_v2", "cuCtxCreate", "cuCtxCreate_v2", "cuCtxCreate_v4",
                 "cuTexRefSetAddress", "cuMemcpyHtoD_v2_ptds", "cuLaunchKernel_ptsz",
                 "cuGetProcAddress", "cuGetProcAddress_v2", "cuProfilerStart",
                 "cuGraphicsGLRegisterBuffer", "cuVDPAUGetDevice", "cuEGLStreamConsumerConnect"):
        assert name in functions, name
    # every symbol is reachable through cuGetProcAddress under some name and version
    assert all(f.variants for f in functions.values())


def test_signatures_match_the_headers(tmp_path):
    """Redeclaring each function with the table's signature after cuda.h must compile."""
    include = need_cuda_home() / "include"
    with tempfile.TemporaryDirectory() as tmp:
        gen_table.preprocess(include, Path(tmp))  # writes the window-system stand-ins
        lines = ['#include "all.h"']
        lines += [f"{f.ret} {f.symbol}({f.c_params()});" for f in table.functions().values()]
        source = Path(tmp) / "check.c"
        source.write_text("\n".join(lines) + "\n")
        result = run(["gcc", "-fsyntax-only", "-nostdinc", "-I", str(Path(tmp) / "fake"), "-I",
                      str(include), "-D__CUDA_API_VERSION_INTERNAL", str(source)])
    assert result.returncode == 0, result.stderr[:4000]


def test_parameters_passed_by_address_are_the_pointers():
    """The C entries hand every pointer, handle and function pointer to Python as an int
    (Param.by_address): what the table's regular expressions call one must be exactly what
    the types' declarations make a pointer or a function (cffi's reading of them)."""
    ffi = types.ffi()
    for f in table.functions().values():
        for p in f.params:
            if p.out or p.ctype == "const char *":
                assert not p.by_address, (f.symbol, p)
            else:
                kind = ffi.typeof(p.ctype).kind
                assert p.by_address == (kind in ("pointer", "function")), (f.symbol, p, kind)


def test_struct_layouts_match_the_compiler(tmp_path):
    include = need_cuda_home() / "include"
    ffi = types.ffi()
    structs = re.findall(r"^struct (\w+) \{", table.types_cdef(), re.M)
    checks = []
    for tag in structs:
        checks.append(f'printf("{tag} %zu\\n", sizeof(struct {tag}));')
        for name, _ in ffi.typeof(f"struct {tag}").fields:
            if name:
                checks.append(f'printf("{tag}.{name} %zu\\n", offsetof(struct {tag}, {name}));')
    # With the same stand-ins for the window-system headers as the generator, so that the
    # EGL structs are seen too.
    gen_table.preprocess(include, tmp_path)
    source = tmp_path / "layout.c"
    source.write_text('#include "all.h"\nint printf(const char *, ...);\n'
                      "#define offsetof(t, m) __builtin_offsetof(t, m)\n"
                      "int main(void) {\n" + "\n".join(checks) + "\nreturn 0; }\n")
    exe = tmp_path / "layout"
    result = run(["gcc", "-nostdinc", "-I", str(tmp_path / "fake"), "-I", str(include),
                  "-D__CUDA_API_VERSION_INTERNAL", str(source), "-o", str(exe)])
    assert result.returncode == 0, result.stderr[:4000]
    compiled = dict(line.rsplit(" ", 1) for line in run([str(exe)]).stdout.splitlines())
    for tag in structs:
        assert int(compiled[tag]) == ffi.sizeof(f"struct {tag}"), tag
        for name, field in ffi.typeof(f"struct {tag}").fields:
            if name:
                assert int(compiled[f"{tag}.{name}"]) == field.offset, f"{tag}.{name}"


def test_library_exports_every_symbol():
    path = library()
    nm = subprocess.run(["nm", "-D", "--defined-only", str(path)], capture_output=True, text=True)
    if nm.returncode != 0:
        pytest.skip("nm is not available")
    exported = {line.split()[-1] for line in nm.stdout.splitlines() if line.strip()}
    assert set(table.functions()) <= exported
    assert {s for s in exported if s.startswith("cu")} == set(table.functions())
    readelf = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True)
    assert "Library soname: [libcuda.so.1]" in readelf.stdout
    assert (path.parent / "libcuda.so").resolve() == path.resolve()


def test_implementations_name_real_symbols():
    assert set(IMPLEMENTATIONS) <= set(table.functions()), \
        set(IMPLEMENTATIONS) - set(table.functions())
    done, missing = coverage()
    assert len(done) + len(missing) == len(table.functions())
    # what cudart needs to start, and the rest of the brief, is implemented
    for name in ("cuGetProcAddress_v2", "cuGetExportTable", "cuInit", "cuDriverGetVersion",
                 "cuModuleGetLoadingMode", "cuDeviceGetUuid_v2", "cuCtxSynchronize_v2",
                 "cuLibraryLoadData", "cuLibraryGetKernel", "cuLaunchKernel", "cuLaunchKernelEx",
                 "cuStreamIsCapturing", "cuMemcpy3DPeerAsync", "cuMemsetD2D16Async",
                 "cuPointerGetAttributes", "cuProfilerStart"):
        assert name in done, name


def test_every_cuda_error_has_a_name_and_text():
    for name, code in table.enums()["CUresult"].items():
        assert errors.NAMES[code] == name
        assert errors.TEXTS.get(name), name


def test_every_device_attribute_has_a_value():
    d = device.devices()[0]
    for name, value in table.enums()["CUdevice_attribute"].items():
        if name == "CU_DEVICE_ATTRIBUTE_MAX":
            continue
        assert isinstance(d.attribute(value), int), name


def test_export_layout_matches_the_reference():
    sizes = {t.name: t.slots for t in export_layout.TABLES}
    assert sizes["CUDART_INTERFACE"] == 13 and sizes["TOOLS_RUNTIME_CALLBACK_HOOKS"] == 7
    assert sizes["UNNAMED_21318C60"] >= 52
    cls = next(t for t in export_layout.TABLES if t.name.startswith("CONTEXT_LOCAL"))
    assert not cls.size_in_slot0 and cls.null_slots == {3}
