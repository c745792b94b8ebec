"""Shared by tests/libs: where NVIDIA's library headers are, building against cuport's stubs."""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PROGRAMS = REPO / "tests" / "programs" / "libs"
sys.path.insert(0, str(REPO / "tests" / "capi"))


def header_dirs() -> list[Path]:
    """Directories holding the libraries' headers: CUPORT_LIB_HEADERS, pip's nvidia wheels."""
    dirs = [Path(p) for p in os.environ.get("CUPORT_LIB_HEADERS", "").split(os.pathsep) if p]
    for site in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        dirs += sorted(Path(site).glob("nvidia/*/include"))
    return [d for d in dirs if d.is_dir()]


def find_header(name: str) -> Path | None:
    return next((d for d in header_dirs() if (d / name).exists()), None)


def native_dir() -> Path:
    from cuport.capi import build
    from cuport.libs import build as libs_build

    return libs_build.ensure(build.library_dir())
