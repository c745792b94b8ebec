"""What libcuda.so.1's embedded Python runs first: attach Python to every C entry point.

Called from the library's init code (capi/build.py INIT_CODE) with the compiled
module's ffi and lib, in whichever interpreter runs it (embedded in a C program,
or the running Python that dlopened the library).
"""

from __future__ import annotations

import sys
import traceback

from cuport.capi import export_tables, proc_address, table, types
from cuport.capi.dispatch import UNKNOWN, Dispatcher, load_implementations
from cuport.driver import device, stream


def _onerror(exception, value, tb) -> None:
    # Reached only if the dispatcher itself failed: still, nothing may reach C.
    print("cuport: internal error in the dispatcher:", file=sys.stderr)
    traceback.print_exception(exception, value, tb)


def attach(ffi, lib) -> None:
    types.install(ffi)
    load_implementations()
    dispatcher = Dispatcher(ffi)
    symbols = table.symbols()
    for symbol in symbols:
        bind = ffi.def_extern(name=f"cuport_py_{symbol}", error=UNKNOWN, onerror=_onerror)
        bind(dispatcher.first_call(symbol, bind))
    for i in range(len(symbols)):
        entry = lib.cuport_symbols[i]
        proc_address.ADDRESSES[ffi.string(entry.name).decode()] = int(ffi.cast("uintptr_t",
                                                                                 entry.fn))
    export_tables.install(ffi, lib)
    stream.rearm_interrupt = lambda: setattr(lib, "cuport_interrupted", 1)
    device.on_shut_down = lambda: setattr(lib, "cuport_shut_down", 1)
    lib.cuport_driver_version = device.driver_version()  # (boot.c: a forked child's answer)
    lib.cuport_attached = 1
