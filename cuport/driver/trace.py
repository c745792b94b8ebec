"""`cuport trace`: one stderr line per driver call (name, arguments, result, time).

Switched on by CUPORT_TRACE=1 (which `cuport trace` sets); the dispatcher calls
print_call after every call. Pointers and handles print in hex, strings quoted,
out-parameters after the result as they were written.

A CUDA runtime starts with some 440 cuGetProcAddress lookups: consecutive successful
ones are folded into one line (how many, and the names looked up); failed lookups and
every other call print as they come. CUPORT_TRACE=all (`cuport trace --all`) prints
every lookup.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time

from cuport.capi import table, types
from cuport.driver.errors import name_of

_START = time.perf_counter()
_lock = threading.Lock()


def _uuid(address: int) -> str:
    return types.read_bytes(address, 16).hex() if address else "NULL"


# How an argument of a C type prints, where the default (str) is not it.
FORMATS = {"const CUuuid *": _uuid}


def _format(ctype: str, value) -> str:
    if value is None:
        return "NULL"
    if ctype in FORMATS:
        return FORMATS[ctype](value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, int) and (ctype.endswith("*") or ctype in table.handle_types()):
        return hex(value)
    return str(value)


_LOOKUPS = ("cuGetProcAddress", "cuGetProcAddress_v2")
_NAMES_SHOWN = 6


class _Fold:
    """A run of successful cuGetProcAddress lookups, printed as one line."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.start = 0.0

    def add(self, name: str, at: float) -> None:
        if not self.names:
            self.start = at
        self.names.append(name)

    def line(self) -> str | None:
        if not self.names:
            return None
        distinct = list(dict.fromkeys(self.names))
        shown = ", ".join(distinct[:_NAMES_SHOWN]) + (", ..." if len(distinct) > _NAMES_SHOWN
                                                      else "")
        text = (f"cuport trace: {self.start * 1e3:10.3f}ms cuGetProcAddress x "
                f"{len(self.names)} -> CUDA_SUCCESS ({len(distinct)} names: {shown}; "
                f"`cuport trace --all` shows each)")
        self.names = []
        return text


_fold = _Fold()
_folding = os.environ.get("CUPORT_TRACE", "") != "all"


def _now() -> float:
    return time.perf_counter() - _START


def _emit(text: str | None) -> None:
    with _lock:
        folded = _fold.line()
        if folded:
            print(folded, file=sys.stderr)
        if text:
            print(text, file=sys.stderr)
        sys.stderr.flush()


atexit.register(_emit, None)


def print_call(func, values, ins, result, outs, code: int, seconds: float) -> None:
    if _folding and code == 0 and func.symbol in _LOOKUPS:
        with _lock:
            _fold.add(str(values[0]) if values else "?", _now())
        return
    args = ", ".join(f"{func.params[i].name}={_format(func.params[i].ctype, v)}"
                     for (i, _), v in zip(ins, values, strict=False))
    text = f"cuport trace: {_now() * 1e3:10.3f}ms {func.symbol}({args}) -> {name_of(code)}"
    if code == 0 and outs:
        results = (result,) if len(outs) == 1 else result
        text += " [" + ", ".join(f"{name}={_format(func.params[i].pointee, v)}"
                                 for (i, name, _, _), v in zip(outs, results, strict=False)) + "]"
    text += f" {seconds * 1e6:.0f}us"
    _emit(text)


def print_unimplemented(func) -> None:
    _emit(f"cuport trace: {_now() * 1e3:10.3f}ms "
          f"{func.symbol}(...) -> CUDA_ERROR_NOT_SUPPORTED (not implemented)")


def print_slot(name: str, result) -> None:
    """A call through one of the private export tables (cudart's start-up protocol)."""
    shown = "" if result is None else f" -> {result}"
    _emit(f"cuport trace: {_now() * 1e3:10.3f}ms export table slot {name}{shown}")
