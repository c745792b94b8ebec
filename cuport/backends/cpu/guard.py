"""Kernels that fault stop their launch with CUDA_ERROR_ILLEGAL_ADDRESS instead of
killing the program (guard.c says how).

guard.c, with runtime.c (the worker pool, whose threads run their shares as guarded calls),
is compiled when cuport is installed (setup.py, as libcuda.so.1 is) into the
package's _native/ folder, under a name that carries a hash of its source and compile
command. An editable install whose guard.c changed rebuilds it there on first use, or,
where the package folder cannot be written, in a private temporary folder of the process.
The library is loaded only from a regular file owned by this user, root or the owner of
cuport's own files, and writable by nobody else, through the very descriptor that was
checked (/proc/self/fd/N): never from the kernel cache, whose contents are data, not code
to load. Without a compiler, launches run unguarded and a fault ends the process as a
segmentation fault would (said once on stderr).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shlex
import shutil
import stat
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path

SOURCE = Path(__file__).with_name("guard.c")
#: compiled into the same library: the worker pool (runtime.c runs each share as a guarded call)
SOURCES = [SOURCE, Path(__file__).with_name("runtime.c")]
NATIVE = Path(__file__).resolve().parents[2] / "_native"
_lock = threading.Lock()
_lib: ctypes.CDLL | None = None
_tried = False


class Untrusted(Exception):
    """A library file that someone else could have written."""


class BuildFailed(OSError):
    """guard.c did not compile: the compiler's message."""


def _command(sources: list[Path], target: Path) -> list[str]:
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    return [*cc, "-O2", "-shared", "-fPIC", "-o", str(target), *map(str, sources), "-lpthread"]


def library_name() -> str:
    h = hashlib.sha256(b"".join(p.read_bytes() for p in SOURCES))
    h.update(repr(_command([Path(p.name) for p in SOURCES], Path("guard.so"))).encode())
    return f"libcuport_guard-{h.hexdigest()[:16]}.so"


def build(out_dir: Path) -> Path:
    """Compile guard.c into out_dir (atomically: concurrent builders agree)."""
    if not out_dir.exists():
        out_dir.mkdir(parents=True, exist_ok=True)
        out_dir.chmod(0o755)  # whatever the umask
    target = out_dir / library_name()
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=out_dir)
    os.close(fd)
    import subprocess  # (here: only a build needs it, and its import was 5 ms of every start)

    try:
        done = subprocess.run(_command(SOURCES, Path(tmp)), capture_output=True, text=True)
        if done.returncode != 0:
            raise BuildFailed(done.stderr or f"the compiler exited with {done.returncode}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def trusted_owners() -> set[int]:
    return {os.geteuid(), 0, SOURCE.stat().st_uid}


def load(path: Path) -> ctypes.CDLL:
    """dlopen path if nobody but a trusted owner could have written it."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Untrusted(f"{path} is not a regular file")
        if st.st_uid not in trusted_owners():
            raise Untrusted(f"{path} is owned by uid {st.st_uid}")
        if st.st_mode & 0o022:
            raise Untrusted(f"{path} is writable by others (mode {stat.S_IMODE(st.st_mode):04o})")
        return ctypes.CDLL(f"/proc/self/fd/{fd}")  # the file checked, whatever its name holds now
    finally:
        os.close(fd)


def _load_or_build() -> ctypes.CDLL:
    target = NATIVE / library_name()
    try:
        return load(target)
    except FileNotFoundError:
        pass
    except Untrusted as e:
        print(f"cuport: not loading the memory-fault guard: {e}; building a private one",
              file=sys.stderr)
    if not target.exists():
        try:
            return load(build(NATIVE))
        except (OSError, Untrusted):
            pass  # a read-only install: build privately
    private = tempfile.mkdtemp(prefix="cuport-guard-")  # 0700
    try:
        return load(build(Path(private)))
    finally:
        shutil.rmtree(private, ignore_errors=True)


CANCELLED = 0x100  # what cuport_guarded_call returns for a call cuport_cancel stopped


def loaded() -> ctypes.CDLL | None:
    """The guard if library() has loaded it (no lock: for host calls during launches)."""
    return _lib


def library() -> ctypes.CDLL | None:
    """The compiled guard, or None where it cannot be built."""
    global _lib, _tried
    with _lock:
        if _tried:
            return _lib
        _tried = True
        try:
            lib = _load_or_build()
        except (OSError, Untrusted) as e:
            detail = str(e)
            print(f"cuport: kernels run without the memory-fault guard (a bad pointer in a "
                  f"kernel will end the program): building {SOURCE.name} failed: "
                  f"{detail.strip()[:300]}", file=sys.stderr)
            return None
        lib.cuport_guard_install.restype = None
        lib.cuport_guard_install.argtypes = []
        lib.cuport_guarded_call.restype = ctypes.c_int
        lib.cuport_guarded_call.argtypes = [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p,
            ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(ctypes.c_void_p)]
        lib.cuport_pool_start.restype = ctypes.c_int
        lib.cuport_pool_start.argtypes = [ctypes.c_int]
        lib.cuport_pool_run.restype = None
        lib.cuport_pool_run.argtypes = [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p,
            ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p]
        lib.cuport_fault_state.restype = ctypes.c_int
        lib.cuport_fault_state.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p,
                                           ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32)]
        lib.cuport_xsave_offset.restype = ctypes.c_int
        lib.cuport_xsave_offset.argtypes = [ctypes.c_uint]
        lib.cuport_cancel.restype = ctypes.c_int
        lib.cuport_cancel.argtypes = [ctypes.c_uint32]
        lib.cuport_interruptible.restype = None
        lib.cuport_interruptible.argtypes = [ctypes.c_uint32]
        # the short calls a launch makes, called without releasing the GIL: each release
        # lets the launching thread take the GIL back for up to a switch interval
        lib.quick_guard_install = ctypes.PYFUNCTYPE(None)(
            ctypes.cast(lib.cuport_guard_install, ctypes.c_void_p).value)
        lib.quick_interruptible = ctypes.PYFUNCTYPE(None, ctypes.c_uint32)(
            ctypes.cast(lib.cuport_interruptible, ctypes.c_void_p).value)
        for name in ("cuport_host_enter", "cuport_host_leave"):
            getattr(lib, name).restype = None
            getattr(lib, name).argtypes = []
        _lib = lib
        return lib
