"""cuport's NVRTC shim (nvrtc.c): how it is built, and which NVIDIA NVRTC it forwards to.

`cuport run` preloads the shim so that programs asking NVRTC for a cubin (CuPy by
default, cuda.core's Program.compile("cubin")) get PTX, which cuport runs, and names
NVIDIA's library in CUPORT_NVRTC. The shim is built beside libcuda.so.1, in a folder
of its own that is not on LD_LIBRARY_PATH: only the preload brings it in.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "nvrtc.c"
MAJOR = 13
SONAME = f"libnvrtc.so.{MAJOR}"
SUBDIR = "nvrtc"
# NVIDIA's symbols carry the version libnvrtc.so.13: the shim's do too, so that it
# never answers a program linked against another major version.
VERSION_SCRIPT = f"{SONAME} {{\n  global: nvrtc*;\n  local: *;\n}};\n"


def build(native_dir: Path) -> Path:
    """Compile the shim into native_dir/nvrtc/ (atomically replaced); return its path."""
    out_dir = native_dir / SUBDIR
    out_dir.mkdir(parents=True, exist_ok=True)
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    with tempfile.TemporaryDirectory(prefix="cuport-nvrtc-") as tmp:
        script = Path(tmp) / "nvrtc.map"
        script.write_text(VERSION_SCRIPT)
        target = Path(tmp) / SONAME
        subprocess.run([*cc, "-shared", "-fPIC", "-O2", "-fvisibility=hidden", str(SOURCE),
                        "-o", str(target), f"-Wl,-soname,{SONAME}",
                        f"-Wl,--version-script={script}", "-ldl", "-lpthread"], check=True)
        staged = out_dir / f".{SONAME}.{os.getpid()}"
        shutil.copyfile(target, staged)
        os.chmod(staged, 0o755)
        os.replace(staged, out_dir / SONAME)
    return out_dir / SONAME


def shim_path(native_dir: Path) -> Path:
    return native_dir / SUBDIR / SONAME


def _trusted(path: Path) -> bool:
    """Never load a file that another user could have written: the file and the folders
    above it belong to root or to us and are not writable by group or others."""
    try:
        real = path.resolve(strict=True)
    except OSError:
        return False
    uid = os.getuid()
    for p in (real, *real.parents):
        st = p.stat()
        if st.st_uid not in (0, uid) or (st.st_mode & 0o022 and not (st.st_mode & 0o1000)):
            return False
    return True


def candidates(paths: list[str] | None = None) -> list[Path]:
    """Where NVIDIA's NVRTC may be: the nvidia-cuda-nvrtc wheel of a site directory (as
    cuda.pathfinder looks first), then the CUDA toolkit."""
    out = []
    for entry in paths if paths is not None else sys.path:
        if entry:
            out.append(Path(entry) / "nvidia" / f"cu{MAJOR}" / "lib" / SONAME)
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    nvcc = shutil.which("nvcc")
    if nvcc:
        homes.append(str(Path(nvcc).resolve().parents[1]))
    for home in filter(None, homes):
        out.append(Path(home) / "lib64" / SONAME)
        out.extend(sorted((Path(home) / "targets").glob(f"*/lib/{SONAME}")))
    return out


def find_real(paths: list[str] | None = None) -> Path | None:
    """NVIDIA's NVRTC for the shim to forward to, or None."""
    for path in candidates(paths):
        if path.is_file() and _trusted(path):
            return path
    return None
