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


def out_writer(ffi, param: table.CParam) -> Callable:
    """How an implementation's result is written through out-parameter `param` (the
    libraries' dispatcher, libs/dispatch.py, writes them the same way)."""
    pointee = param.pointee
    if ffi.typeof(pointee).kind in ("pointer", "function"):
        def write_pointer(p, v):
            p[0] = ffi.cast(pointee, v or 0)
        return write_pointer

    def write_value(p, v):
        p[0] = v
    return write_value


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
        return None  # numbers, addresses (Param.by_address), structs passed by value (cdata)

    # -- the entry ---------------------------------------------------------------------

    def entry(self, func: table.Function) -> Callable:
        """The function cffi calls for func: Python source generated for its parameters
        (no loops over them, no argument tuples, the checks a symbol does not need left
        out: a driver call's fixed cost is mostly this function's)."""
        impl = IMPLEMENTATIONS.get(func.symbol)
        if impl is None:
            return self._unimplemented(func)
        NULL = self.ffi.NULL
        params = func.params
        names = [f"a{i}" for i in range(len(params))]  # (C names may shadow Python's)
        readers = [self._reader(p) for p in params]
        ins = [(i, readers[i]) for i, p in enumerate(params) if not p.out]
        outs = [(i, p.name, p.name in impl.optional_outs, out_writer(self.ffi, p))
                for i, p in enumerate(params) if p.out]
        symbol, do_trace = func.symbol, self.trace
        probe = symbol in CONTEXT_PROBES
        probe_arg = next((i for i, p in enumerate(params)
                          if p.name == CONTEXT_PROBES.get(symbol)), None)

        def failed(e: CudaError, args: tuple) -> int:
            if e.outs is not None:
                for (i, _, _, write), value in zip(outs, e.outs, strict=True):
                    if args[i] != NULL:
                        write(args[i], value)
            answered = probe and e.code == INVALID_CONTEXT and (
                probe_arg is None or not args[probe_arg])  # (an address: 0 is NULL)
            if not e.quiet and not answered:
                errors.report(symbol, e.code, e.message, e.subject)
            return e.code

        def crashed(e: Exception) -> int:
            err = errors.from_exception(e, symbol)
            errors.report(symbol, err.code, err.message)
            return err.code

        space = {"NULL": NULL, "CudaError": CudaError, "E": E, "_device": device,
                 "_errors": errors, "_stream": stream, "_fn": impl.fn, "_symbol": symbol,
                 "_failed": failed, "_crashed": crashed, "_perf": time.perf_counter,
                 "_print": trace.print_call, "_func": func, "_ins": ins, "_outs": outs}
        body = []
        if not impl.before_init:
            body.append("if not _device._initialized: raise CudaError(E.NOT_INITIALIZED, "
                        "'cuInit(0) has not been called yet')")
        if not errors.UNAFFECTED.fullmatch(symbol):
            body.append("if _errors._fatal is not None: _errors.check_usable(_symbol)")
        for i, name, optional, _ in outs:
            if not optional:
                body.append(f"if a{i} == NULL: raise CudaError(E.INVALID_VALUE, {name + ' is NULL'!r})")
        values = []
        for i, reader in ins:
            if reader is None:
                values.append(f"a{i}")
            else:
                space[f"_r{i}"] = reader
                values.append(f"_r{i}(a{i})")
        if do_trace:  # (the trace shows the converted values)
            body.append(f"values = ({''.join(v + ', ' for v in values)})")
            values = [f"values[{k}]" for k in range(len(values))]
        call = f"_fn({', '.join(values)})"
        if func.ptds:  # stream 0 is the per-thread default stream (stream.thread_state)
            body += ["state = _stream.thread_state", "previous, state.ptds = state.ptds, True",
                     "try:", f"    result = {call}", "finally:", "    state.ptds = previous"]
        else:
            body.append(f"result = {call}")
        results = ["result"] if len(outs) == 1 else [f"o{k}" for k in range(len(outs))]
        if len(outs) > 1:  # (exactly one value per out-parameter)
            body.append(f"{', '.join(results)}, = result")
        for (i, _, optional, write), value in zip(outs, results, strict=True):
            space[f"_w{i}"] = write
            guard = f"if a{i} != NULL: " if optional else ""
            body.append(f"{guard}_w{i}(a{i}, {value})")
        body.append("code = 0")
        raw = "".join(n + ", " for n in names)
        lines = [f"def {symbol}({', '.join(names)}):"]
        if do_trace:
            lines.append("    start = _perf(); values = (); result = None")
        lines += ["    try:", *("        " + b for b in body),
                  "    except CudaError as e:", f"        code = _failed(e, ({raw}))",
                  "    except Exception as e:  # nothing may reach C",
                  "        code = _crashed(e)",
                  "    except KeyboardInterrupt:  # ^C in a Python program while cuport waited",
                  "        code = _stream.interrupted(_symbol)"]
        if do_trace:
            lines.append("    _print(_func, values, _ins, result, _outs, code, _perf() - start)")
        lines.append("    return code")
        exec(compile("\n".join(lines) + "\n", f"<cuport dispatch {symbol}>", "exec"), space)
        return space[symbol]

    def first_call(self, symbol: str, bind: Callable[[Callable], object]) -> Callable:
        """What cffi calls for `symbol` until the program first calls it: its entry, made
        then and put in its place with `bind` (ffi.def_extern for its name). A program
        calls a few dozen of the table's 672 symbols; making every entry at start-up
        (parsing their table rows, compiling 419 generated functions) was a tenth of a
        second of each run."""
        def first(*args):
            entry = self.entry(table.function(symbol))
            bind(entry)
            return entry(*args)

        first.__name__ = symbol
        return first

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
