"""The `cuport` command: run CUDA programs on the CPU, trace them, say what is there.

    cuport run PROGRAM [ARGS...]                 run with cuport's libcuda.so.1
    cuport trace [--ptx-dir DIR] PROGRAM [...]   the same, logging every driver call
    cuport info [--coverage]                     the device cuport presents, and where things are
                                                 (--coverage: every driver function, implemented or not)
    cuport ptx --dump-after STEP [--device cpu|vulkan] [--kernel NAME] [--block X,Y,Z] FILE
                                                 a kernel's state after a named step of a backend's
                                                 pass pipeline (FILE: PTX text or a CUDA binary);
                                                 --list-steps names the steps and why they are there

`run` puts the directory of cuport's libcuda.so.1 first on LD_LIBRARY_PATH (so the
program's CUDA runtime, or cuda-python, dlopens ours) and passes this Python's
sys.path in CUPORT_PYTHONPATH (so the interpreter embedded in a C program finds
cuport and its dependencies). It also puts cuport/shims first on PATH: its `nvcc`
turns a request for a cubin (SASS, which cuport cannot run) into PTX, for programs that
compile CUDA at run time (PyCUDA). The program's exit status is passed through; death
by signal N gives 128+N, as a shell would report it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path


def program_env(trace: bool = False, ptx_dir: str | None = None) -> dict[str, str]:
    from cuport.capi import build

    env = dict(os.environ)
    library_dir = str(build.library_dir())
    old = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = library_dir + (os.pathsep + old if old else "")
    env["CUPORT_PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env["CUPORT_PYTHON"] = sys.executable  # for compile workers (backends/cpu/compile_pool.py)
    # nvcc run by the program itself (PyCUDA) makes PTX where it would make a cubin
    shims = Path(__file__).resolve().parent / "shims"
    nvcc = shims / "nvcc"
    if not os.access(nvcc, os.X_OK):  # an install that dropped the mode bits
        with contextlib.suppress(OSError):
            nvcc.chmod(0o755)
    if os.access(nvcc, os.X_OK):
        env["PATH"] = str(shims) + os.pathsep + env.get("PATH", "")
    if trace:
        env["CUPORT_TRACE"] = "1"
    if ptx_dir:
        env["CUPORT_PTX_DIR"] = os.path.abspath(ptx_dir)
    return env


def run_program(argv: list[str], env: dict[str, str]) -> int:
    program = argv[0]
    if os.sep not in program and shutil.which(program, path=env.get("PATH")) is None:
        print(f"cuport: {program}: command not found", file=sys.stderr)
        return 127
    # The terminal's ^C goes to the program; cuport waits and reports what it did.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        proc = subprocess.Popen(argv, env=env, restore_signals=True)
    except OSError as e:
        print(f"cuport: {program}: {e.strerror}", file=sys.stderr)
        signal.signal(signal.SIGINT, previous)
        return 126 if os.path.exists(program) else 127
    try:
        code = proc.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    return 128 - code if code < 0 else code


def cmd_run(args: argparse.Namespace) -> int:
    return run_program([args.program, *args.args], program_env())


def cmd_trace(args: argparse.Namespace) -> int:
    return run_program([args.program, *args.args], program_env(True, args.ptx_dir))


def cmd_info(args: argparse.Namespace) -> int:
    import cuport
    from cuport.capi import build, dispatch, table
    from cuport.driver import device

    if args.coverage:
        implemented, _ = dispatch.coverage()
        done = set(implemented)
        for symbol in table.functions():
            print(f"{'implemented' if symbol in done else 'not implemented':<16} {symbol}")
        return 0

    major, minor = device.compute_capability()
    d = device.devices()[0]
    implemented, missing = dispatch.coverage()
    lines = [
        ("cuport", f"{cuport.__version__} ({os.path.dirname(cuport.__file__)})"),
        ("python", f"{sys.version.split()[0]} ({sys.executable})"),
        ("device", d.name),
        ("compute capability", f"{major}.{minor}" + (" (CUPORT_CC)" if "CUPORT_CC" in os.environ
                                                     else " (default; set CUPORT_CC)")),
        ("multiprocessors", f"{d.multiprocessors} (one per core this process may use)"),
        ("memory", f"{device.total_memory() / 2**30:.1f} GiB"),
        ("driver version", f"{device.driver_version()} (what cuDriverGetVersion answers)"),
        ("driver API", f"{len(implemented)} of {len(table.functions())} functions implemented "
                       f"(CUDA {table.header_version()} headers)"),
    ]
    try:
        import llvmlite.binding as llvm

        features = llvm.get_host_cpu_features()
        wanted = ("avx2", "avx512f", "fma", "sse4.2", "neon", "sve")
        present = [f for f in wanted if features.get(f)]
        lines.append(("LLVM", ".".join(map(str, llvm.llvm_version_info))
                      + f" (llvmlite {__import__('llvmlite').__version__})"))
        lines.append(("CPU", f"{llvm.get_host_cpu_name()}; " + (" ".join(present) or "baseline")))
    except ImportError as e:
        lines.append(("LLVM", f"unavailable: {e}"))
    try:
        from cuport.backends.cpu import cache

        lines.append(("kernel cache", str(cache.cache_dir())))
    except ImportError:
        pass
    try:
        lines.append(("libcuda.so.1", str(build.library_dir() / build.SONAME)))
    except Exception as e:  # noqa: BLE001 - a failed build is worth showing, not raising
        lines.append(("libcuda.so.1", f"cannot be built: {e}"))
    width = max(len(k) for k, _ in lines)
    for key, value in lines:
        print(f"{key:<{width}}  {value}")
    return 0


def _ptx_of(path: str) -> str:
    """PTX text from a .ptx file, or the newest PTX of a fat binary, ELF or CUDA program."""
    data = Path(path).read_bytes()
    if data.lstrip()[:1] in (b".", b"/") and b".version" in data[:65536]:
        return data.decode("utf-8", "surrogateescape")
    from cuport.loader.choose import choose_ptx
    from cuport.loader.image import parse_image

    return choose_ptx(parse_image(data), None).text


def _pipeline(device: str) -> list[tuple[str, object, str]]:
    if device == "vulkan":
        from cuport.backends.vulkan.compiler import PIPELINE
    else:
        from cuport.backends.cpu.compiler import PIPELINE
    return PIPELINE


def cmd_ptx(args: argparse.Namespace) -> int:
    if args.list_steps:
        for name, _, why in _pipeline(args.device):
            print(f"{name:<12} {why}")
        return 0
    if not args.file or not args.dump_after:
        print("cuport ptx: give --dump-after STEP and a FILE (--list-steps names the steps)",
              file=sys.stderr)
        return 2
    from cuport.ptx.errors import UnsupportedError
    from cuport.ptx.parser import parse

    try:
        module = parse(_ptx_of(args.file))
    except OSError as e:
        print(f"cuport ptx: {args.file}: {e.strerror}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - a loader or parser error, said in its words
        print(f"cuport ptx: {args.file}: {e}", file=sys.stderr)
        return 1
    kernels = [f for f in module.functions.values() if f.is_entry and f.is_definition]
    if args.kernel:  # the name, or a part of it that only one kernel's name has
        exact = [f for f in kernels if f.name == args.kernel]
        kernels = exact or [f for f in kernels if args.kernel in f.name]
        if len(kernels) > 1:
            print(f"cuport ptx: several kernels match {args.kernel}:\n  "
                  + "\n  ".join(f.name for f in kernels), file=sys.stderr)
            return 2
    elif len(kernels) > 1:
        print("cuport ptx: the module has several kernels; choose one with --kernel:\n  "
              + "\n  ".join(f.name for f in kernels), file=sys.stderr)
        return 2
    if not kernels:
        print(f"cuport ptx: no kernel {args.kernel or ''} in {args.file}".replace("  ", " "),
              file=sys.stderr)
        return 1
    fn = kernels[0]
    if args.block:
        block = tuple(int(x) for x in args.block.split(","))
    else:  # the shape the kernel declares, else a common one
        block = tuple(fn.reqntid or fn.maxntid or (256,))
    block = (tuple(block) + (1, 1, 1))[:3]
    try:
        if args.device == "vulkan":
            from cuport.backends.vulkan.compiler import compile_kernel

            compile_kernel(module, fn.name, block, dump_after=args.dump_after)
        else:
            from cuport.backends.cpu.compiler import ModuleCompiler, run_pipeline

            run_pipeline(ModuleCompiler(module, fn.name, block), dump_after=args.dump_after)
    except KeyError as e:
        print(f"cuport ptx: {e.args[0]}", file=sys.stderr)
        return 2
    except UnsupportedError as e:
        print(f"cuport ptx: {fn.name}: {e}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cuport", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a CUDA program on the CPU")
    run.add_argument("program")
    run.add_argument("args", nargs=argparse.REMAINDER)
    run.set_defaults(fn=cmd_run)
    trace = sub.add_parser("trace", help="run a program, logging every driver call to stderr")
    trace.add_argument("--ptx-dir", help="write the PTX of every module the program loads here")
    trace.add_argument("program")
    trace.add_argument("args", nargs=argparse.REMAINDER)
    trace.set_defaults(fn=cmd_trace)
    info = sub.add_parser("info", help="the device cuport presents and where things are")
    info.add_argument("--coverage", action="store_true",
                      help="list every driver API function and whether cuport implements it")
    info.set_defaults(fn=cmd_info)
    ptx = sub.add_parser("ptx", help="a kernel's IR after a named step of the pass pipeline")
    ptx.add_argument("--dump-after", metavar="STEP", help="the step after which to print")
    ptx.add_argument("--device", choices=("cpu", "vulkan"), default="cpu",
                     help="whose pipeline (default cpu)")
    ptx.add_argument("--kernel", help="the kernel, or a unique part of its name (default: the "
                     "module's only one)")
    ptx.add_argument("--block", help="block shape X[,Y[,Z]] (default: .reqntid, .maxntid or 256)")
    ptx.add_argument("--list-steps", action="store_true", help="name the steps, in order")
    ptx.add_argument("file", nargs="?", help="PTX text, or a fat binary / ELF / CUDA program")
    ptx.set_defaults(fn=cmd_ptx)
    args = parser.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
