"""Build cuport's libcuda.so.1 with cffi's embedding mode.

    python -m cuport.capi.build [OUT_DIR]

Every symbol of the driver API table becomes an exported C function (soname
libcuda.so.1) that makes sure Python is running (capi/boot.c) and calls an
`extern "Python"` entry; the Python side (capi/runtime.py) attaches an
implementation or a not-implemented reporter to each. The export-table slots are
C entries too. The generated C is written to a temporary directory and compiled
with the C compiler Python was built with; it is never kept.

The library lands in cuport/_native/<interpreter>/ (installed package or source
tree), with a `libcuda.so` link, a BUILD_ID stamp and cuport's NVRTC shim
(cuport/shims/nvrtc.py); `library_dir()` rebuilds it when the inputs changed (editable
installs) and falls back to a cache directory when the package directory is
read-only. The folder is one per interpreter and environment (the library embeds
both), so that virtual environments sharing an editable checkout each keep theirs
instead of rebuilding at every switch; folders of environments that are gone are
removed at the next build.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from cuport.capi import export_layout, table
from cuport.shims import nvrtc as nvrtc_shim

HERE = Path(__file__).resolve().parent
PACKAGE_NATIVE = HERE.parent / "_native"
MODULE_NAME = "_cuport_libcuda"
SONAME = "libcuda.so.1"

# The collector is off while cuport starts: its imports and the driver's set-up make some
# 100,000 objects that live as long as the process, and the collections they set off walk
# all of them and free nothing (a tenth of the interpreter's start-up CPU).
INIT_CODE = """
import gc
_cuport_collecting = gc.isenabled()
gc.disable()
try:
    from _cuport_libcuda import ffi, lib
    from cuport.capi import runtime
    runtime.attach(ffi, lib)
finally:
    if _cuport_collecting:
        gc.enable()
"""


def site_dirs() -> list[str]:
    """Where this environment's packages live: the embedded interpreter adds them."""
    paths = sysconfig.get_paths()
    dirs = [paths["purelib"], paths["platlib"]]
    return list(dict.fromkeys(d for d in dirs if d))


def python_link() -> tuple[list[str], str]:
    """Linker arguments for libpython, and the soname the constructor re-opens."""
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    version = sysconfig.get_config_var("LDVERSION") or f"{sys.version_info[0]}.{sys.version_info[1]}"
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        # A statically linked interpreter has no libpython to link: the library can
        # then only be loaded into that Python process, which provides the symbols.
        return [], ""
    soname = sysconfig.get_config_var("INSTSONAME") or f"libpython{version}.so"
    return [f"-L{libdir}", f"-lpython{version}", f"-Wl,-rpath,{libdir}"], soname


def slot_stubs() -> list[tuple[int, int]]:
    return [(t, s) for t, tab in enumerate(export_layout.TABLES) for s in range(tab.slots)]


def cdef_text() -> str:
    """What cffi must know: types, the Python entries, the C tables Python reads."""
    funcs = table.functions()
    lines = [table.types_cdef()]
    lines.append("extern int cuport_attached;")
    lines.append("extern int cuport_interrupted;")
    lines.append("extern int cuport_driver_version;")
    lines.append("extern int cuport_shut_down;")
    lines.append("extern uint64_t cuport_cls_generation;")
    lines.append("struct cuport_symbol { const char *name; void *fn; };")
    lines.append(f"extern const struct cuport_symbol cuport_symbols[{len(funcs)}];")
    lines.append(f"extern void *const cuport_unknown_slots[{len(slot_stubs())}];")
    lines.append(f"extern void *const cuport_slot_entries[{len(export_layout.SLOT_SIGNATURES)}];")
    lines.append('extern "Python" {')
    for f in funcs.values():
        lines.append(f"  {f.ret} cuport_py_{f.symbol}({f.python_params()});")
    for name, (ret, params) in export_layout.SLOT_SIGNATURES.items():
        lines.append(f"  {ret} cuport_slot_{name}({params});")
    lines.append("  CUresult cuport_unknown_slot(int, int);")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def boot_source(libpython: str) -> list[str]:
    """boot.c, which starts the embedded Python, and the paths it needs: the head of both
    libcuda's C and libcuport_libs.so's (libs/build.py)."""
    return [
        f"#define CUPORT_LIBPYTHON {_c_string(libpython)}",
        f"#define CUPORT_PYTHON_HOME {_c_string(sys.base_prefix)}",
        f"#define CUPORT_SITE_DIRS {_c_string(chr(10).join(site_dirs()))}",
        (HERE / "boot.c").read_text(),
    ]


def c_source(libpython: str) -> str:
    """The C that goes ahead of cffi's generated code: boot, types, exported symbols."""
    funcs = table.functions()
    out = [*boot_source(libpython), table.types_cdef()]
    # Forward declarations of the extern "Python" entries cffi defines further down.
    for f in funcs.values():
        out.append(f"static {f.ret} cuport_py_{f.symbol}({f.python_params()});")
    out.append("static CUresult cuport_unknown_slot(int, int);")
    for f in funcs.values():
        body = f"    {f.ret} r = cuport_py_{f.symbol}({f.python_args()});\n"
        if f.symbol == "cuCtxGetCurrent":  # the memo in boot.c (its answer, per thread)
            body = ("    uint64_t g = __atomic_load_n(&cuport_cls_generation, __ATOMIC_ACQUIRE);\n"
                    "    int memo = pctx != NULL && !cuport_tracing;\n"
                    "    if (memo && cuport_current_memo.generation == g) {\n"
                    "        *pctx = cuport_current_memo.value;\n"
                    "        return 0;\n"
                    "    }\n" + body +
                    "    if (memo && r == 0) {\n"
                    "        cuport_current_memo.generation = g;\n"
                    "        cuport_current_memo.value = *pctx;\n"
                    "    }\n")
        if f.symbol == "cuInit":  # a child forked after it refuses every call (boot.c)
            body += "    if (r == 0) cuport_initialized = 1;\n"
        # a ^C that arrived inside the call: Python's handler ran, put cuport's back (guard.c)
        body += "    if (cuport_interrupted) cuport_rearm_interrupt();\n    return r;\n"
        out.append(
            f"CUPORT_EXPORT {f.ret} {f.symbol}({f.c_params()}) {{\n"
            f"    int refused = cuport_enter();\n"
            f"    if (refused) {{\n{_teardown(f)}    }}\n{body}}}")
    out.extend(_slot_entries())
    out.append("struct cuport_symbol { const char *name; void *fn; };")
    out.append(f"static const struct cuport_symbol cuport_symbols[{len(funcs)}] = {{")
    out.extend(f'    {{"{f.symbol}", (void *)&{f.symbol}}},' for f in funcs.values())
    out.append("};")
    for t, s in slot_stubs():
        out.append(f"static CUresult cuport_unknown_{t}_{s}(void) "
                   f"{{ int refused = cuport_enter(); return refused ? cuport_refused("
                   f"\"export table slot {s} of table {t}\", refused, refused) : "
                   f"cuport_unknown_slot({t}, {s}); }}")
    out.append(f"static void *const cuport_unknown_slots[{len(slot_stubs())}] = {{")
    out.extend(f"    (void *)&cuport_unknown_{t}_{s}," for t, s in slot_stubs())
    out.append("};")
    return "\n".join(out) + "\n"


# After the interpreter has ended (boot.c): calls that release something succeed, the
# context stack is an empty one per thread kept in C; everything else is DEINITIALIZED.
_RELEASES = re.compile(r"^cu(?!GraphAddMemFree|GraphMemFreeNode)\w*"
                       r"(Free|Destroy|Release|Unload|Unregister|Detach)(?![a-z])")
_DEINIT = "refused == CUPORT_DEINITIALIZED"
_TEARDOWN_STACK = {
    "cuCtxGetCurrent": f"if ({_DEINIT} && pctx) {{ *pctx = cuport_teardown_current; {{ok}} }}",
    "cuCtxSetCurrent": f"if ({_DEINIT}) {{ cuport_teardown_current = ctx; {{ok}} }}",
    "cuCtxPushCurrent": f"if ({_DEINIT}) {{ cuport_teardown_current = ctx; {{ok}} }}",
    "cuCtxPopCurrent": f"if ({_DEINIT}) {{ if (pctx) *pctx = cuport_teardown_current; "
                       "cuport_teardown_current = NULL; {ok} }",
}


def _teardown(f: table.Function) -> str:
    """C statements answering a call that cuport_enter() refused (`refused` is its code)."""
    name = _c_string(f.symbol)
    ok = f"return cuport_refused({name}, refused, 0);"
    if f.symbol == "cuDriverGetVersion":  # answered in a child forked after cuInit too
        return (f"        if (cuport_forked && cuport_driver_version) {{\n"
                f"            if (!driverVersion) return cuport_refused({name}, refused, 1);\n"
                f"            *driverVersion = cuport_driver_version; {ok}\n        }}\n"
                f"        return cuport_refused({name}, refused, refused);\n")
    stack = _TEARDOWN_STACK.get(f.symbol.removesuffix("_v2"))
    if stack:
        return f"        {stack.replace('{ok}', ok)}\n        return cuport_refused({name}, refused, refused);\n"
    answer = f"{_DEINIT} ? 0 : refused" if _RELEASES.search(f.symbol) else "refused"
    return f"        return cuport_refused({name}, refused, {answer});\n"


def _split_params(params: str) -> list[str]:
    """C parameter declarations, split at the commas outside parentheses."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(params + ","):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(params[start:i].strip())
            start = i + 1
    return [p for p in out if p and p != "void"]


def _slot_entries() -> list[str]:
    """A C entry in front of each implemented export-table slot: the slots are called
    like driver functions (the static runtime's exit handler deletes its CLS entry after
    the interpreter has gone), so they pass cuport_enter() first too."""
    out = []
    for name, (ret, params) in export_layout.SLOT_SIGNATURES.items():
        decls = _split_params(params)
        named = []
        for i, d in enumerate(decls):
            named.append(d.replace("(*)", f"(*a{i})", 1) if "(*)" in d else f"{d} a{i}")
        args = ", ".join(f"a{i}" for i in range(len(decls)))
        what = _c_string(f"export table slot {name}")
        answer = f"{_DEINIT} ? 0 : refused" if name == "cls_delete" else "refused"
        refused = {"void": f"{{ cuport_refused({what}, refused, refused); return; }}",
                   "uint32_t": f"return cuport_refused({what}, refused, refused), 0;"
                   }.get(ret, f"return cuport_refused({what}, refused, {answer});")
        call = f"cuport_slot_{name}({args});"
        body = call if ret == "void" else "return " + call
        if name == "cls_get":  # (void **value, CUcontext, void *key): the memo in boot.c
            body = (
                "if (a1 == NULL && a0 != NULL && !cuport_tracing) {\n"
                "        uint64_t g = __atomic_load_n(&cuport_cls_generation, __ATOMIC_ACQUIRE);\n"
                "        if (cuport_cls_memo.generation == g && cuport_cls_memo.key == a2) {\n"
                "            *a0 = cuport_cls_memo.value;\n"
                "            return 0;\n"
                "        }\n"
                f"        {ret} r = cuport_slot_cls_get({args});\n"
                "        if (r == 0) {\n"
                "            cuport_cls_memo.generation = g;\n"
                "            cuport_cls_memo.key = a2;\n"
                "            cuport_cls_memo.value = *a0;\n"
                "        }\n"
                "        return r;\n"
                "    }\n"
                f"    return {call}")
        elif name == "checks_context":  # (CUcontext, uint32_t *, void **): the runtime asks
            # at every cudaDeviceSynchronize; the answer is always 0, so no entry into Python
            # for it (export_tables.py's checks_context gives the same) unless tracing
            body = ("if (!cuport_tracing) {\n"
                    "        if (a1 != NULL)\n"
                    "            *a1 = 0;\n"
                    "        return 0;\n"
                    "    }\n"
                    f"    return {call}")
        out.append(f"static {ret} cuport_slot_{name}({params});")
        out.append(f"static {ret} cuport_c_slot_{name}({', '.join(named) or 'void'}) {{\n"
                   f"    int refused = cuport_enter();\n"
                   f"    if (refused) {refused}\n"
                   f"    {body}\n}}")
    out.append(f"static void *const cuport_slot_entries[{len(export_layout.SLOT_SIGNATURES)}] = {{")
    out.extend(f"    (void *)&cuport_c_slot_{name}," for name in export_layout.SLOT_SIGNATURES)
    out.append("};")
    return out


def _interpreter() -> str:
    return repr((sys.version, sys.base_prefix, site_dirs()))


def build_id() -> str:
    """Changes whenever the library would come out differently."""
    h = hashlib.sha256()
    for path in (table.API_FILE, table.TYPES_FILE, HERE / "boot.c", Path(__file__),
                 HERE / "export_layout.py", nvrtc_shim.SOURCE, Path(nvrtc_shim.__file__)):
        h.update(path.read_bytes())
    h.update(_interpreter().encode())
    return h.hexdigest()[:16]


def native_dir(base: Path = PACKAGE_NATIVE) -> Path:
    """This interpreter's and environment's folder under base."""
    key = hashlib.sha256(_interpreter().encode()).hexdigest()[:12]
    return base / f"py{sys.version_info[0]}{sys.version_info[1]}-{key}"


def _remove_abandoned(base: Path, keep: Path) -> None:
    """Folders of environments whose site directories are all gone (and the files of the
    layout before folders per environment)."""
    for name in (SONAME, "libcuda.so", "BUILD_ID"):
        old = base / name
        if old.is_file() or old.is_symlink():
            old.unlink(missing_ok=True)
    for d in base.glob("py*-*"):
        sites = d / "SITE_DIRS"
        if d == keep or not d.is_dir() or not sites.exists():
            continue
        if not any(Path(s).is_dir() for s in sites.read_text().splitlines() if s):
            shutil.rmtree(d, ignore_errors=True)


def build(out_dir: Path, verbose: bool = False) -> Path:
    """Generate and compile the library into out_dir; return its path."""
    import cffi

    header = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not header.exists():
        raise RuntimeError(f"cuport's libcuda.so.1 embeds Python and needs its development files: "
                           f"{header} is missing (on Debian/Ubuntu: apt install python3-dev)")
    link, libpython = python_link()
    ffi = cffi.FFI()
    ffi.cdef(cdef_text())
    ffi.embedding_api("")
    ffi.embedding_init_code(INIT_CODE)
    ffi.set_source(MODULE_NAME, c_source(libpython))
    if not out_dir.exists():
        out_dir.mkdir(parents=True, exist_ok=True)
        out_dir.chmod(0o755)  # whatever the umask: nobody else may put a library here
    with tempfile.TemporaryDirectory(prefix="cuport-build-") as tmp:
        c_file = Path(tmp) / f"{MODULE_NAME}.c"
        with contextlib.redirect_stdout(io.StringIO()):  # cffi announces what it generates
            ffi.emit_c_code(str(c_file))
        target = Path(tmp) / SONAME
        cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
        cmd = [
            *cc, "-shared", "-fPIC", "-O1", "-fvisibility=hidden", "-w",
            f"-I{sysconfig.get_paths()['include']}", str(c_file), "-o", str(target),
            f"-Wl,-soname,{SONAME}", *link, "-ldl", "-lpthread",
        ]
        if verbose:
            print(" ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True)
        # Move into place atomically: a program may be loading the old one right now.
        staged = out_dir / f".{SONAME}.{os.getpid()}"
        shutil.copyfile(target, staged)
        os.chmod(staged, 0o755)
        os.replace(staged, out_dir / SONAME)
    link_path = out_dir / "libcuda.so"
    if not link_path.is_symlink():
        link_path.unlink(missing_ok=True)
        link_path.symlink_to(SONAME)
    nvrtc_shim.build(out_dir)
    (out_dir / "SITE_DIRS").write_text("\n".join(site_dirs()) + "\n")
    (out_dir / "BUILD_ID").write_text(build_id() + "\n")
    if out_dir.parent == PACKAGE_NATIVE:
        _remove_abandoned(PACKAGE_NATIVE, out_dir)
    return out_dir / SONAME


def _is_current(directory: Path) -> bool:
    stamp = directory / "BUILD_ID"
    return (directory / SONAME).exists() and stamp.exists() and \
        nvrtc_shim.shim_path(directory).exists() and stamp.read_text().strip() == build_id()


def _is_private(directory: Path) -> bool:
    """A fallback build outside the package is used only if nobody else could have put it
    there: the folder and the library this user's and writable by nobody else."""
    from cuport.backends.cache import untrusted_because

    try:
        return not any(untrusted_because(os.lstat(p)) for p in (directory, directory / SONAME))
    except OSError:
        return False


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cuport" / "native" / build_id()


def _is_installed_safely(directory: Path) -> bool:
    """The package's own build is used only if no one but its owner (or root, or you) can
    replace the library: neither the folder nor the file writable by others."""
    return _is_folder_safe(directory) and _is_folder_safe(directory / SONAME)


def _is_folder_safe(path: Path) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return st.st_uid in {os.geteuid(), 0, HERE.stat().st_uid} and not st.st_mode & 0o022


def library_dir(rebuild: bool = True) -> Path:
    """The directory holding a current libcuda.so.1 (building it if needed)."""
    own = native_dir()
    if _is_current(own) and _is_installed_safely(own):
        return own
    cached = cache_dir()
    if _is_current(cached) and _is_private(cached):
        return cached
    if not rebuild:
        raise FileNotFoundError("cuport's libcuda.so.1 is not built; run `cuport info`")
    print("cuport: building libcuda.so.1 (its inputs changed since the last build)",
          file=sys.stderr)
    try:
        for folder in (PACKAGE_NATIVE, own):
            if folder.exists() and not _is_folder_safe(folder):
                raise PermissionError(f"{folder} is writable by others")
        build(own)
        return own
    except PermissionError:
        from cuport.backends.cache import make_private_dirs, untrusted_because

        make_private_dirs(cached)
        why = untrusted_because(os.lstat(cached))
        if why:
            raise PermissionError(f"cuport's libcuda.so.1 cannot be built in {cached}: "
                                  f"{why}") from None
        build(cached)
        return cached


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else native_dir()
    path = build(out, verbose=True)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
