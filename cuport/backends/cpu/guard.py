"""Kernels that fault stop their launch with CUDA_ERROR_ILLEGAL_ADDRESS instead of
killing the program (guard.c says how).

guard.c is compiled on first use with the C compiler Python was built with, into the
kernel cache directory, keyed by its source; without a compiler, launches run unguarded
and a fault ends the process as a segmentation fault would (said once on stderr).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path

from . import cache

SOURCE = Path(__file__).with_name("guard.c")
#: compiled into the same library: the worker pool (runs each share as a guarded call)
SOURCES = [SOURCE, Path(__file__).with_name("runtime.c")]
_lock = threading.Lock()
_lib: ctypes.CDLL | None = None
_tried = False


def _build(target: Path) -> None:
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(fd)
    try:
        subprocess.run([*cc, "-O2", "-shared", "-fPIC", "-o", tmp, *map(str, SOURCES), "-lpthread"],
                       check=True, capture_output=True, text=True)
        os.replace(tmp, target)  # atomic: concurrent builders agree
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def library() -> ctypes.CDLL | None:
    """The compiled guard, or None where it cannot be built."""
    global _lib, _tried
    with _lock:
        if _tried:
            return _lib
        _tried = True
        digest = hashlib.sha256(b"".join(p.read_bytes() for p in SOURCES)).hexdigest()[:16]
        target = cache.cache_dir() / f"guard-{digest}.so"
        try:
            if not target.exists():
                _build(target)
            lib = ctypes.CDLL(str(target))
        except (OSError, subprocess.CalledProcessError) as e:
            detail = getattr(e, "stderr", "") or str(e)
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
            ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p]
        _lib = lib
        return lib
