"""The Python side of every library entry point: C arguments in, the library's status out.

For each table function the dispatcher builds one function that cffi calls with the C
arguments: it converts them (handles and pointers to ints), checks that out-pointers
are not NULL, calls the implementation, writes its results through the out-pointers
and turns every failure into the library's status: a Status into its code, an
Unsupported into the library's NOT_SUPPORTED, a driver error or anything else into
its INTERNAL_ERROR; each with one line on stderr naming the call. A function cuport
does not implement answers NOT_SUPPORTED and says so once. Nothing raised in Python
reaches C. Functions that return something other than a status (cublasGetStatusName,
cublasLtGetVersion) return the implementation's value, or 0/NULL after a failure.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable

from cuport.capi.dispatch import out_writer
from cuport.driver import errors
from cuport.driver.errors import CudaError
from cuport.libs import table
from cuport.libs.registry import IMPLEMENTATIONS, Status, Unsupported

_tracebacks_shown: set[str] = set()


def report(symbol: str, status: str, message: str) -> None:
    if not errors.quiet_mode():
        print(f"cuport: {symbol}: {status}: {message}", file=sys.stderr, flush=True)


class Dispatcher:
    def __init__(self, ffi, trace: bool = False) -> None:
        self.ffi = ffi
        self.trace = trace
        self._unimplemented_shown: set[str] = set()
        self._strings: dict[bytes, object] = {}  # C strings handed out live for good

    def _reader(self, param: table.Param) -> Callable | None:
        ffi = self.ffi
        if ffi.typeof(param.ctype).kind in ("pointer", "function"):
            def read_address(a):
                return int(ffi.cast("uintptr_t", a))
            return read_address
        return None  # numbers, and structs passed by value (cdata)

    def _returner(self, func: table.Function) -> tuple[Callable, object]:
        """How an implementation's value becomes the C return value, and the failure value."""
        ffi = self.ffi
        if func.ret == "void":
            return (lambda v: None), None
        if ffi.typeof(func.ret).kind == "pointer":
            strings = self._strings

            def to_pointer(v):
                if isinstance(v, str):
                    data = v.encode()
                    if data not in strings:
                        strings[data] = ffi.new("char[]", data)
                    return strings[data]
                return ffi.cast(func.ret, v or 0)
            return to_pointer, ffi.NULL
        return (lambda v: v), 0

    def entry(self, func: table.Function) -> Callable:
        impl = IMPLEMENTATIONS.get(func.symbol)
        lib = func.library
        codes = table.constants(lib.name)
        if impl is None:
            return self._unimplemented(func, codes[lib.unsupported])
        NULL = self.ffi.NULL
        readers = [self._reader(p) for p in func.params]
        ins = [(i, readers[i]) for i, p in enumerate(func.params) if not p.out]
        outs = [(i, p.name, p.name in impl.optional_outs, out_writer(self.ffi, p))
                for i, p in enumerate(func.params) if p.out]
        single_out = len(outs) == 1
        symbol, fn, status = func.symbol, impl.fn, func.returns_status
        internal, unsupported = lib.internal, lib.unsupported
        prefix = lib.internal.split("_")[0]
        invalid = next((n for n in (f"{prefix}_STATUS_INVALID_VALUE", f"{prefix}_INVALID_VALUE")
                        if n in codes), internal)
        returner, failed = self._returner(func)
        do_trace = self.trace

        def call(*args):
            start = time.perf_counter() if do_trace else 0.0
            code, result = 0, None
            try:
                for i, name, optional, _ in outs:
                    if args[i] == NULL and not optional:
                        raise Status(invalid, f"{name} is NULL")
                values = [r(args[i]) if r else args[i] for i, r in ins]
                result = fn(*values)
                if not status:
                    ret = returner(result)
                    if do_trace:
                        _trace(symbol, values, "->", result, start)
                    return ret
                if outs:
                    for (i, _, _, write), value in zip(outs, (result,) if single_out else result,
                                                       strict=True):
                        if args[i] != NULL:
                            write(args[i], value)
            except Unsupported as e:
                code = codes[unsupported]
                report(symbol, unsupported, e.message)
            except Status as e:
                code = codes[e.status]
                if not e.quiet:
                    report(symbol, e.status, e.message)
            except CudaError as e:
                code = codes[internal]
                report(symbol, internal, f"{errors.name_of(e.code)}: {e.message}")
            except Exception as e:  # noqa: BLE001 - nothing may reach C
                code = codes[internal]
                report(symbol, internal, f"internal error in cuport: {e!r}")
                if symbol not in _tracebacks_shown:
                    _tracebacks_shown.add(symbol)
                    traceback.print_exc()
            if do_trace:
                _trace(symbol, locals().get("values", ()), "->", code, start)
            return code if status else failed

        call.__name__ = symbol
        return call

    def _unimplemented(self, func: table.Function, code: int) -> Callable:
        symbol, shown = func.symbol, self._unimplemented_shown
        failed = code if func.returns_status else self._returner(func)[1]
        name = func.library.unsupported

        def call(*args):
            if symbol not in shown:
                shown.add(symbol)
                if not errors.quiet_mode():
                    print(f"cuport: {symbol} is not implemented ({name})", file=sys.stderr,
                          flush=True)
            return failed

        call.__name__ = symbol
        return call


def _trace(symbol: str, values, arrow: str, result, start: float) -> None:
    args = ", ".join(hex(v) if isinstance(v, int) and v > 0xFFFF else repr(v) for v in values)
    print(f"cuport trace: {symbol}({args}) {arrow} {result} "
          f"{(time.perf_counter() - start) * 1e6:.0f}us", file=sys.stderr, flush=True)


def load_implementations() -> None:
    """Import every module that registers library implementations."""
    from cuport.libs import implementations  # noqa: F401


def coverage() -> dict[str, tuple[list[str], list[str]]]:
    """Per library: (implemented, not implemented) symbols."""
    from cuport.libs.catalog import LIBRARIES

    load_implementations()
    out = {}
    for lib in LIBRARIES:
        done, missing = [], []
        for symbol in table.functions(lib.name):
            (done if symbol in IMPLEMENTATIONS else missing).append(symbol)
        out[lib.name] = (done, missing)
    return out
