"""`cuport trace`: one stderr line per driver call (name, arguments, result, time).

Switched on by CUPORT_TRACE=1 (which `cuport trace` sets); the dispatcher calls
print_call after every call. Pointers and handles print in hex, strings quoted,
out-parameters after the result as they were written.
"""

from __future__ import annotations

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


def _emit(text: str) -> None:
    with _lock:
        print(text, file=sys.stderr, flush=True)


def print_call(func, values, ins, result, outs, code: int, seconds: float) -> None:
    args = ", ".join(f"{func.params[i].name}={_format(func.params[i].ctype, v)}"
                     for (i, _), v in zip(ins, values, strict=False))
    text = f"cuport trace: {(time.perf_counter() - _START) * 1e3:10.3f}ms " \
           f"{func.symbol}({args}) -> {name_of(code)}"
    if code == 0 and outs:
        results = (result,) if len(outs) == 1 else result
        text += " [" + ", ".join(f"{name}={_format(func.params[i].pointee, v)}"
                                 for (i, name, _, _), v in zip(outs, results, strict=False)) + "]"
    text += f" {seconds * 1e6:.0f}us"
    _emit(text)


def print_unimplemented(func) -> None:
    _emit(f"cuport trace: {(time.perf_counter() - _START) * 1e3:10.3f}ms "
          f"{func.symbol}(...) -> CUDA_ERROR_NOT_SUPPORTED (not implemented)")


def print_slot(name: str, result) -> None:
    """A call through one of the private export tables (cudart's start-up protocol)."""
    shown = "" if result is None else f" -> {result}"
    _emit(f"cuport trace: {(time.perf_counter() - _START) * 1e3:10.3f}ms "
          f"export table slot {name}{shown}")
