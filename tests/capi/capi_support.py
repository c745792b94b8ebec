"""Shared by tests/capi and tests/driver: cuport's libcuda.so.1, C and CUDA toolchains.

Programs under test run in subprocesses with a clean cuport environment, the way a
user's program would: a C program dlopens the library (which starts Python inside
itself), an nvcc-built program goes through `cuport run`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def library() -> Path:
    from cuport.capi import build

    return build.library_dir() / build.SONAME


def cuda_home() -> Path | None:
    for candidate in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if candidate and (Path(candidate) / "include" / "cuda.h").exists():
            return Path(candidate)
    nvcc = shutil.which("nvcc")
    if nvcc and (Path(nvcc).resolve().parents[1] / "include" / "cuda.h").exists():
        return Path(nvcc).resolve().parents[1]
    return None


def need_cuda_home() -> Path:
    home = cuda_home()
    if home is None:
        pytest.skip("no CUDA toolkit (cuda.h) on this machine")
    return home


def need_nvcc() -> str:
    home = need_cuda_home()
    nvcc = shutil.which("nvcc") or str(home / "bin" / "nvcc")
    if not Path(nvcc).exists():
        pytest.skip("nvcc is not available")
    return nvcc


def clean_env(**extra: str) -> dict[str, str]:
    """The environment a user's program gets: no cuport switches left over from the tests,
    and the CPU device unless `extra` names one (a GPU is the default device where there is
    one; the tests that want it say CUPORT_DEVICE=vulkan)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUPORT_")}
    env["CUPORT_DEVICE"] = "cpu"
    env.update(extra)
    return env


def run(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 120,
        cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=env if env is not None else clean_env(), cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def compile_c(sources: list[Path], out: Path, *flags: str) -> Path:
    home = need_cuda_home()
    cmd = ["gcc", "-O1", "-Wall", "-Wno-unused-parameter", "-Wno-deprecated-declarations",
           f"-I{home / 'include'}", *map(str, sources), "-o", str(out), *flags, "-ldl",
           "-lpthread"]
    result = run(cmd)
    assert result.returncode == 0, result.stderr
    return out


def cuport_command() -> list[str]:
    return [sys.executable, "-m", "cuport.cli"]


def wheel_runtimes() -> dict[str, Path]:
    """{"12": dir, "13": dir} of the CUDA runtimes installed from PyPI (their lib/ and include/)."""
    try:
        import nvidia
    except ImportError:
        return {}
    found = {}
    for base in map(Path, nvidia.__path__):
        for major, sub in (("12", "cuda_runtime"), ("13", "cu13")):
            if (base / sub / "lib" / f"libcudart.so.{major}").exists():
                found[major] = base / sub
    return found


def build_flags(runtime: str) -> list[str]:
    """nvcc options for one runtime: "toolkit-static", "toolkit-shared", "12-static", ..."""
    if runtime == "toolkit-static":
        return []
    if runtime == "toolkit-shared":
        return ["-cudart", "shared"]
    if runtime == "toolkit-rdc":  # separate compilation: the driver finds and links the PTX
        return ["-rdc=true"]
    major, kind = runtime.split("-")
    home = wheel_runtimes().get(major)
    if home is None:
        pytest.skip(f"the CUDA {major} runtime wheel is not installed (pip install '.[test]')")
    lib = home / "lib"
    flags = [f"-I{home / 'include'}", "-cudart", "none"]
    if kind == "static":
        return flags + [str(lib / "libcudart_static.a"), "-ldl", "-lpthread", "-lrt"]
    return flags + ["-Xlinker", f"-L{lib}", "-Xlinker", f"-l:libcudart.so.{major}",
                    "-Xlinker", f"-rpath,{lib}"]
