"""What libcuport_libs.so's Python runs first: attach an implementation to every entry."""

from __future__ import annotations

import os
import sys
import traceback

from cuport.libs import table
from cuport.libs.dispatch import Dispatcher, load_implementations


def _onerror(exception, value, tb) -> None:
    print("cuport: internal error in the library dispatcher:", file=sys.stderr)
    traceback.print_exception(exception, value, tb)


def attach(ffi, lib) -> None:
    load_implementations()
    dispatcher = Dispatcher(ffi, os.environ.get("CUPORT_TRACE", "") not in ("", "0"))
    for func in table.all_functions():
        code = table.constants(func.library.name)[func.library.internal]
        pointer = func.ret.endswith("*")
        error = code if func.returns_status else (None if func.ret == "void" or pointer else 0)
        kwargs = {"error": error} if error is not None else {}
        ffi.def_extern(name=f"cuport_py_{func.symbol}", onerror=_onerror,
                       **kwargs)(dispatcher.entry(func))
    lib.cuport_attached = 1
