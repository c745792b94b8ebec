"""The PTX front end: text -> checked, linked cuport.ptx.ir.Module.

`load` is what the loading path calls: each text is parsed and validated as ptxas would
(cuport.ptx.validate), then the modules of an `-rdc` program are linked into one.
Every failure is a PtxError carrying NVIDIA's CUresult and ptxas' log.
"""

from __future__ import annotations

from . import ir
from .lexer import PtxSyntaxError
from .validate import CUDA_ERROR_INVALID_PTX, Limits, PtxError, syntax_log

CUDA_ERROR_INVALID_SOURCE = 300

__all__ = ["CUDA_ERROR_INVALID_PTX", "Limits", "PtxError", "PtxSyntaxError", "load", "log_of"]


def load(texts: list[str], limits: Limits | None = None) -> ir.Module:
    from . import devrt
    from .link import LinkError, link_modules
    from .parser import parse
    from .validate import validate

    mods = []
    for i, text in enumerate(texts):
        try:
            m = parse(text)
            validate(m, limits)
        except PtxError as e:
            if len(texts) > 1:
                e.summary = f"PTX module {i + 1} of {len(texts)}: {e.summary}"
            raise
        mods.append(m)
    if devrt.needed(mods):
        mods.append(devrt.library())  # the driver's code for libcudadevrt's syscalls
    if len(mods) == 1:
        return mods[0]
    try:
        return link_modules(mods)
    except LinkError as e:
        raise PtxError([(0, str(e), "")], CUDA_ERROR_INVALID_SOURCE) from None


def log_of(e: PtxSyntaxError) -> str:
    """The text NVIDIA's JIT writes into the program's error log for this failure."""
    return e.log if isinstance(e, PtxError) else syntax_log(e)
