"""The `cuport` command: run CUDA programs on the CPU, trace them, say what is there.

    cuport run PROGRAM [ARGS...]                 run with cuport's libcuda.so.1
    cuport trace [--ptx-dir DIR] [--all] PROGRAM [...]   the same, logging every driver call
    cuport info [--coverage]                     the device cuport presents, and where things are
                                                 (--coverage: every driver function, implemented or not)
    cuport ptx --dump-after STEP [--device cpu|vulkan] [--kernel NAME] [--block X,Y,Z] FILE
                                                 a kernel's state after a named step of a backend's
                                                 pass pipeline (FILE: PTX text or a CUDA binary);
                                                 --list-steps names the steps and why they are there

`run` puts the directory of cuport's libcuda.so.1 first on LD_LIBRARY_PATH (so the
program's CUDA runtime, or cuda-python, dlopens ours), and preloads cuport's stand-ins
for NVIDIA's libraries (libcublas.so.13, libcufft.so.12, ...: cuport/libs) and passes this Python's
sys.path in CUPORT_PYTHONPATH (so the interpreter embedded in a C program finds
cuport and its dependencies). It also puts cuport/shims first on PATH: its `nvcc`
turns a request for a cubin (SASS, which cuport cannot run) into PTX, for programs that
compile CUDA at run time (PyCUDA); and it preloads cuport's NVRTC, which does the same
for NVRTC (CuPy, cuda.core), forwarding to NVIDIA's (CUPORT_NVRTC). The program's exit
status is passed through; death by a signal that writes no core (^C, SIGTERM, SIGHUP,
SIGKILL) ends cuport by the same signal; death by a core-writing signal N gives 128+N, as
a shell would report it. The program keeps the signal dispositions cuport was started
with, and the signals cuport is sent reach it (run_program).
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


def program_env(trace: bool | str = False, ptx_dir: str | None = None) -> dict[str, str]:
    from cuport.capi import build
    from cuport.libs import build as libs_build

    env = dict(os.environ)
    native = build.library_dir()
    library_dir = str(native)
    old = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = library_dir + (os.pathsep + old if old else "")
    # cuport's cuBLAS, cuFFT, ... stand-ins, preloaded so that they win over NVIDIA's
    # copies a program or a Python package loads by path (cuda-pathfinder looks for an
    # already loaded library of the soname first); the stubs load nothing until called
    preload = libs_build.preload(libs_build.ensure(native))
    env["LD_PRELOAD"] = " ".join(preload + ([env["LD_PRELOAD"]] if env.get("LD_PRELOAD") else []))
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
    # NVRTC asked for a cubin by the program (CuPy, cuda.core) makes PTX (shims/nvrtc.py)
    if env.get("CUPORT_NVRTC_SHIM", "1") != "0":
        from cuport.shims import nvrtc

        real = env.get("CUPORT_NVRTC") or nvrtc.find_real()
        if real:
            env["CUPORT_NVRTC"] = str(real)
            preload = env.get("LD_PRELOAD")
            shim = str(nvrtc.shim_path(Path(library_dir)))
            env["LD_PRELOAD"] = shim + (os.pathsep + preload if preload else "")
    if trace:
        env["CUPORT_TRACE"] = "all" if trace == "all" else "1"
    if ptx_dir:
        env["CUPORT_PTX_DIR"] = os.path.abspath(ptx_dir)
    return env


# Signals sent to `cuport run` with kill(2) that it passes on to the program. Those the
# terminal sends (^C, ^\\, a hang-up) reach the program directly: it is in the same process
# group, so they are not passed on a second time.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
             signal.SIGUSR2, signal.SIGALRM)
# Deaths by these write a core: reported as 128+N instead of dying the same way again.
CORE_SIGNALS = {signal.SIGQUIT, signal.SIGILL, signal.SIGTRAP, signal.SIGABRT, signal.SIGBUS,
                signal.SIGFPE, signal.SIGSEGV, signal.SIGXCPU, signal.SIGXFSZ, signal.SIGSYS}
SI_KERNEL = 0x80  # siginfo.si_code of a signal the kernel sent (the terminal's)


def run_program(argv: list[str], env: dict[str, str]) -> int:
    """Run the program with the signal dispositions cuport was given, pass on the signals
    cuport is sent, and end as the program did.

    The program is started with cuport's own signal mask and dispositions (fork and exec:
    what Python handles is at its default again, what cuport's caller ignored, nohup or a
    background job, stays ignored; SIGPIPE and SIGXFSZ, which Python ignores, are restored),
    so ^C stops the program exactly as without cuport. cuport blocks the
    signals it passes on and takes them with sigwaitinfo, so none is lost or handled in
    Python between two checks. A program killed by a signal that writes no core makes
    cuport die by the same signal (a calling shell script then stops on ^C as it would);
    otherwise its exit status is cuport's, death by a core-writing signal N giving 128+N.
    """
    program = argv[0]
    path = program if os.sep in program else shutil.which(program, path=env.get("PATH"))
    if path is None:
        print(f"cuport: {program}: command not found", file=sys.stderr)
        return 127
    forwarded = [s for s in FORWARDED if signal.getsignal(s) is not signal.SIG_IGN]
    if signal.getsignal(signal.SIGCHLD) is signal.SIG_IGN:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # else the child is reaped unseen
    watched = {*forwarded, signal.SIGCHLD}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    try:
        try:
            proc = subprocess.Popen(argv, executable=path, env=env, restore_signals=True,
                                    preexec_fn=lambda: signal.pthread_sigmask(
                                        signal.SIG_SETMASK, mask))
        except OSError as e:
            print(f"cuport: {program}: {e.strerror}", file=sys.stderr)
            return 126 if os.path.exists(path) else 127
        pid = proc.pid
        while True:
            info = signal.sigtimedwait(watched, 1.0)  # (the timeout: a SIGCHLD that was lost)
            if info is None or info.si_signo == signal.SIGCHLD:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done == pid:
                    proc.returncode = os.waitstatus_to_exitcode(status)
                    break
            elif info.si_code != SI_KERNEL:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, info.si_signo)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in CORE_SIGNALS:
            sys.stdout.flush()
            sys.stderr.flush()
            if sig != signal.SIGKILL:
                signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
            os.kill(os.getpid(), sig)
        return 128 + sig
    return os.waitstatus_to_exitcode(status)


def _with_device(env: dict[str, str], device: str | None) -> dict[str, str]:
    """--device cpu|vulkan[:N][,...]: what CUPORT_DEVICE says (driver/device.py)."""
    if device:
        env["CUPORT_DEVICE"] = device
    return env


def cmd_run(args: argparse.Namespace) -> int:
    return run_program([args.program, *args.args], _with_device(program_env(), args.device))


def cmd_trace(args: argparse.Namespace) -> int:
    trace = "all" if args.all else True
    return run_program([args.program, *args.args],
                       _with_device(program_env(trace, args.ptx_dir), args.device))


def _device_lines() -> list[str]:
    """Every device cuport can run on: the CPU, and each Vulkan device with its limits and
    what it lacks."""
    from cuport.driver import device

    default = device.default_device()
    name = device.devices()[0].name if device.device_spec()[0][0] == "cpu" else "the host CPU"
    out = [f"cpu       {name}, {device.core_count()} cores (CUPORT_DEVICE=cpu"
           + (", the default)" if default[0] == "cpu" else ")")]
    try:
        from cuport.backends.vulkan import runtime

        infos = runtime.devices()
        if not infos:
            out.append(f"vulkan    none: {runtime.unavailable_reason()}")
        for info in infos:
            lines = info.describe()
            if default == ("vulkan", info.index):
                lines[0] += " (the default)"
            out += lines
    except Exception as e:  # noqa: BLE001 - a broken Vulkan setup is worth showing, not raising
        out.append(f"vulkan    unavailable: {e}")
    return out


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
        ("device", d.name + ("" if len(device.devices()) == 1 else
                             f" (and {len(device.devices()) - 1} more: CUPORT_DEVICE)")),
        ("compute capability", f"{major}.{minor}" + (" (CUPORT_CC)" if "CUPORT_CC" in os.environ
                                                     else " (default; set CUPORT_CC)")),
        ("multiprocessors", f"{d.multiprocessors}" + (" (one per core this process may use)"
                                                      if d.kind == "cpu" else "")),
        ("memory", f"{d.total_memory() / 2**30:.1f} GiB"),
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
        from cuport.backends import cache

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
    print("\ndevices cuport can run on (choose with CUPORT_DEVICE or cuport run --device):")
    for line in _device_lines():
        print("  " + line)
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
    run = sub.add_parser("run", help="run a CUDA program on the CPU or a Vulkan device")
    run.add_argument("--device", help="cpu, vulkan, vulkan:N or auto (default: a GPU if there is one, else cpu); a comma-separated "
                                      "list presents several devices (sets CUPORT_DEVICE)")
    run.add_argument("program")
    run.add_argument("args", nargs=argparse.REMAINDER)
    run.set_defaults(fn=cmd_run)
    trace = sub.add_parser("trace", help="run a program, logging every driver call to stderr")
    trace.add_argument("--ptx-dir", help="write the PTX of every module the program loads here")
    trace.add_argument("--device", help="as for run")
    trace.add_argument("--all", action="store_true",
                       help="print every cuGetProcAddress lookup (folded into one line by default)")
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
    try:
        return args.fn(args)
    except BrokenPipeError:
        # `cuport info | head`: the reader is gone; say nothing more, as other tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a tool killed by it


if __name__ == "__main__":
    sys.exit(main())
