"""PTX text: recognising it and reading the `.version` and `.target` it declares."""

from __future__ import annotations

import re

from .errors import CUDA_ERROR_INVALID_PTX, LoaderError
from .model import PtxEntry

# Leading whitespace and comments, as nvcc, NVRTC and hand-written PTX put them.
_PREAMBLE = re.compile(rb"(?:\s+|//[^\n]*(?:\n|$)|/\*.*?\*/)*", re.S)
_VERSION = re.compile(r"^\s*\.version\s+(\d+)\.(\d+)", re.M)
_TARGET = re.compile(r"^\s*\.target\s+([A-Za-z0-9_]+)", re.M)
_SM = re.compile(r"sm_(\d+)[af]?")


def looks_like_ptx(data: bytes | memoryview) -> bool:
    """True when the first thing after whitespace and comments is a directive and
    `.version` appears: how cuModuleLoadData tells PTX text from a binary."""
    head = bytes(data[:65536])
    start = _PREAMBLE.match(head).end()
    return head[start : start + 1] == b"." and b".version" in head


def decode(raw: bytes) -> str:
    """PTX is ASCII; file names in `.file` may be in any encoding, so never fail."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def ptx_entry(raw: bytes, arch: int | None, where: str) -> PtxEntry:
    """Build a PtxEntry from PTX bytes; `arch` None means take it from `.target`."""
    text = decode(raw.rstrip(b"\0"))
    if "\0" in text:
        raise LoaderError(CUDA_ERROR_INVALID_PTX, f"{where}: PTX text contains a NUL byte inside")
    version = _VERSION.search(text)
    if version is None:
        raise LoaderError(CUDA_ERROR_INVALID_PTX, f"{where}: PTX text has no .version directive")
    target = _TARGET.search(text)
    if target is None:
        if arch is None:  # the PTX front end says what ptxas says, naming the line
            return PtxEntry(text=text, arch=0, version=(int(version.group(1)),
                                                        int(version.group(2))), target="")
        raise LoaderError(CUDA_ERROR_INVALID_PTX, f"{where}: PTX text has no .target directive")
    sm = _SM.fullmatch(target.group(1))
    if arch is None:
        if sm is None:
            raise LoaderError(
                CUDA_ERROR_INVALID_PTX,
                f"{where}: PTX .target {target.group(1)} names no sm_XX architecture",
            )
        arch = int(sm.group(1))
    return PtxEntry(
        text=text,
        arch=arch,
        version=(int(version.group(1)), int(version.group(2))),
        target=target.group(1),
    )
