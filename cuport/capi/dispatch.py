"""The Python side of every exported symbol: C arguments in, CUresult out.

For each table entry the dispatcher builds one function that cffi calls with the C
arguments. It converts them (handles and pointers to ints, `const char *` to str),
checks that out-pointers are not NULL and that cuInit came first, calls the driver
implementation, writes the returned values through the out-pointers, and turns
every failure into a CUresult: a CudaError into its code and one line on stderr
naming the call, any other exception into CUDA_ERROR_UNKNOWN with its traceback
(once per symbol). Nothing raised in Python ever reaches C.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from cuport.capi import table
from cuport.driver import device, errors, stream, trace
from cuport.driver.api import IMPLEMENTATIONS, Implementation
from cuport.driver.errors import CudaError, E

UNKNOWN = int(E.UNKNOWN)
NOT_SUPPORTED = int(E.NOT_SUPPORTED)
INVALID_CONTEXT = int(E.INVALID_CONTEXT)

# Calls programs make to ask whether a context is current: "none" is an answer, not a
# misuse, so it is not reported (cuda.core and CuPy ask at start-up, the runtime at
# exit). Symbol -> the context parameter that must be NULL (None: there is none).
CONTEXT_PROBES: dict[str, str | None] = {"cuCtxGetDevice": None, "cuCtxGetDevice_v2": "ctx"}


def tracing() -> bool:
    return os.environ.get("CUPORT_TRACE", "") not in ("", "0")


class Dispatcher:
    def __init__(self, ffi) -> None:
        self.ffi = ffi
        self._unimplemented_shown: set[str] = set()
        self.trace = tracing()

    # -- conversions, decided once per parameter --------------------------------------

    def _reader(self, param: table.Param) -> Callable | None:
        ffi = self.ffi
        if param.ctype == "const char *":
            def read_str(a):
                return None if a == ffi.NULL else ffi.string(a).decode("utf-8", "surrogateescape")
            return read_str
        if ffi.typeof(param.ctype).kind in ("pointer", "function"):
            cast, uintptr = ffi.cast, ffi.typeof("uintptr_t")

            def read_address(a):
                return int(cast(uintptr, a))
            return read_address
        return None  # numbers, and structs passed by value (cdata)

    def _writer(self, param: table.Param) -> Callable:
        ffi, pointee = self.ffi, param.pointee
        if ffi.typeof(pointee).kind in ("pointer", "function"):
            def write_pointer(p, v):
                p[0] = ffi.cast(pointee, v or 0)
            return write_pointer

        def write_value(p, v):
            p[0] = v
        return write_value

    # -- the entry ---------------------------------------------------------------------

    def entry(self, func: table.Function) -> Callable:
        impl = IMPLEMENTATIONS.get(func.symbol)
        if impl is None:
            return self._unimplemented(func)
        NULL = self.ffi.NULL
        readers = [self._reader(p) for p in func.params]
        ins = [(i, readers[i]) for i, p in enumerate(func.params) if not p.out]
        outs = [(i, p.name, p.name in impl.optional_outs, self._writer(p))
                for i, p in enumerate(func.params) if p.out]
        # the in-parameters' positions, and those to convert (by position among them)
        positions = tuple(i for i, _ in ins) if outs else None
        convert = tuple((k, r) for k, (_, r) in enumerate(ins) if r)
        single_out = len(outs) == 1
        symbol, ptds = func.symbol, func.ptds
        fn, before_init = impl.fn, impl.before_init
        do_trace = self.trace
        probe = symbol in CONTEXT_PROBES
        probe_arg = next((i for i, p in enumerate(func.params)
                          if p.name == CONTEXT_PROBES.get(symbol)), None)

        def probe_answered(code: int, args) -> bool:
            return probe and code == INVALID_CONTEXT and (
                probe_arg is None or args[probe_arg] == NULL)

        def write_outs(args, values) -> None:
            for (i, _, _, write), value in zip(outs, values, strict=True):
                if args[i] != NULL:
                    write(args[i], value)

        def call(*args):
            start = time.perf_counter() if do_trace else 0.0
            values = ()
            result = None
            try:
                if not before_init and not device.initialized():
                    raise CudaError(E.NOT_INITIALIZED, "cuInit(0) has not been called yet")
                errors.check_usable(symbol)
                for i, name, optional, _ in outs:
                    if args[i] == NULL and not optional:
                        raise CudaError(E.INVALID_VALUE, f"{name} is NULL")
                values = list(args) if positions is None else [args[i] for i in positions]
                for k, r in convert:
                    values[k] = r(values[k])
                if ptds:
                    with stream.per_thread_default():
                        result = fn(*values)
                else:
                    result = fn(*values)
                if outs:
                    write_outs(args, (result,) if single_out else result)
                code = 0
            except CudaError as e:
                code = e.code
                if e.outs is not None:
                    write_outs(args, e.outs)
                if not e.quiet and not probe_answered(e.code, args):
                    errors.report(symbol, e.code, e.message, e.subject)
            except Exception as e:  # noqa: BLE001 - nothing may reach C
                err = errors.from_exception(e, symbol)
                code = err.code
                errors.report(symbol, err.code, err.message)
            except KeyboardInterrupt:  # ^C in a Python program while cuport waited
                code = stream.interrupted(symbol)
            if do_trace:
                trace.print_call(func, values, ins, result, outs, code,
                                 time.perf_counter() - start)
            return code

        call.__name__ = symbol
        return call

    def _unimplemented(self, func: table.Function) -> Callable:
        symbol, do_trace = func.symbol, self.trace
        shown = self._unimplemented_shown

        def call(*args):
            if symbol not in shown:
                shown.add(symbol)
                if not errors.quiet_mode():
                    print(f"cuport: {symbol} is not implemented", file=sys.stderr, flush=True)
            if do_trace:
                trace.print_unimplemented(func)
            return NOT_SUPPORTED

        call.__name__ = symbol
        return call


def load_implementations() -> None:
    """Import every module that registers implementations (the driver, and capi's own)."""
    import cuport.driver  # noqa: F401
    from cuport.capi import export_tables, proc_address  # noqa: F401


def coverage() -> tuple[list[str], list[str]]:
    """(implemented, not implemented) symbols of the table."""
    load_implementations()
    done, missing = [], []
    for symbol in table.functions():
        (done if symbol in IMPLEMENTATIONS else missing).append(symbol)
    return done, missing


__all__ = ["Dispatcher", "Implementation", "coverage"]
