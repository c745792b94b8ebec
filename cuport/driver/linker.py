"""cuLink*: linking device code at run time.

NVIDIA's driver links PTX, cubins, fatbins, objects and libraries into one cubin.
cuport runs PTX, so it links PTX: every input contributes the PTX the device can run
(from PTX text, a fatbin, a host object or library built with `-rdc=true`), and
cuLinkComplete answers the modules one after another as a single PTX text. That text
is self-contained, so it can be cached on disk by the program (numba-cuda does) and
loaded in another process; cuModuleLoadData reads several `.version` directives as
several modules and links them as it does a `-rdc=true` program. The modules are
parsed and linked at cuLinkComplete so that a link error is reported there, into the
program's error log buffer, as NVIDIA's driver does. Measured on an H200 (driver 580):
PTX with a syntax error fails cuLinkAddData with CUDA_ERROR_INVALID_PTX and is left out
of the link; a second definition of a function fails cuLinkAddData and then
cuLinkComplete with CUDA_ERROR_INVALID_SOURCE; an undefined reference fails cuLinkComplete
with CUDA_ERROR_INVALID_SOURCE; completing an empty link succeeds; the logs name the
symbol and the input (`error   : Undefined reference to 'f' in 'a.ptx'`), and a
successful link leaves both logs empty (size 0).

numba-cuda, CuPy and cuda.core use these calls when nvJitLink is not installed.
"""

from __future__ import annotations

import ctypes
import os
import time
from dataclasses import dataclass, field

from cuport import loader, ptx
from cuport.driver import context, device, handles, module
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E
from cuport.loader.archive import members
from cuport.ptx import devrt, ir
from cuport.ptx.lexer import PtxSyntaxError
from cuport.ptx.link import link_modules

_INPUT_NAMES = {
    K.CU_JIT_INPUT_CUBIN: "a cubin",
    K.CU_JIT_INPUT_PTX: "PTX",
    K.CU_JIT_INPUT_FATBINARY: "a fatbin",
    K.CU_JIT_INPUT_OBJECT: "a host object",
    K.CU_JIT_INPUT_LIBRARY: "a library",
    K.CU_JIT_INPUT_NVVM: "LTO-IR",
}


_LOGS = ((K.CU_JIT_ERROR_LOG_BUFFER, K.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES),
         (K.CU_JIT_INFO_LOG_BUFFER, K.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES))

# Options that change what the link means and that cuport cannot honour: refused.
_REFUSED = {
    K.CU_JIT_LTO: "link-time optimisation (LTO-IR inputs) is not supported: link PTX",
    K.CU_JIT_GLOBAL_SYMBOL_NAMES: "resolving symbols to host addresses "
                                  "(CU_JIT_GLOBAL_SYMBOL_NAMES) is not supported",
}


@dataclass
class JitOptions:
    """A program's option arrays: cuport writes the logs and wall time back into them."""

    kinds: list[int]
    slots: ctypes.Array | None
    capacity: dict[int, int] = field(default_factory=dict)  # log buffer -> its size as given

    @classmethod
    def read(cls, count: int, options: int, values: int, call: str) -> JitOptions:
        if count == 0:
            return cls([], None)
        if not options or not values:
            raise CudaError(E.INVALID_VALUE, f"{call}: numOptions is {count} but options or "
                                             "optionValues is NULL")
        kinds = list((ctypes.c_int * count).from_address(options))
        for kind in kinds:
            if not 0 <= kind < K.CU_JIT_NUM_OPTIONS:
                raise CudaError(E.INVALID_VALUE, f"{kind} is not a CUjit_option")
            if kind in _REFUSED:
                slots = (ctypes.c_uint64 * count).from_address(values)
                value = slots[kinds.index(kind)]
                if value:
                    raise CudaError(E.NOT_SUPPORTED, _REFUSED[kind])
        slots = (ctypes.c_uint64 * count).from_address(values)
        capacity = {buffer: int(slots[kinds.index(size)]) & 0xFFFFFFFF
                    for buffer, size in _LOGS if buffer in kinds and size in kinds}
        return cls(kinds, slots, capacity)

    @property
    def verbose(self) -> bool:
        i = self._slot(K.CU_JIT_LOG_VERBOSE)
        return i is not None and self.slots is not None and bool(self.slots[i])

    def _slot(self, kind: int) -> int | None:
        return self.kinds.index(kind) if kind in self.kinds else None

    def write_log(self, buffer_kind: int, size_kind: int, text: str) -> None:
        """Copy `text` (NUL-terminated, cut to the buffer) and store the bytes written."""
        b, s = self._slot(buffer_kind), self._slot(size_kind)
        if b is None or s is None or self.slots is None:
            return
        size = self.capacity.get(buffer_kind, 0)
        if not self.slots[b] or size == 0:
            return
        data = text.encode()[: size - 1] + b"\0"
        ctypes.memmove(int(self.slots[b]), data, len(data))
        self.slots[s] = len(data) - 1  # what NVIDIA reports: the text, not its NUL

    def write_wall_time(self, milliseconds: float) -> None:
        i = self._slot(K.CU_JIT_WALL_TIME)
        if i is not None and self.slots is not None:
            self.slots[i] = ctypes.c_uint32.from_buffer(ctypes.c_float(milliseconds)).value


@dataclass
class LinkState:
    context: context.Context
    options: JitOptions
    entries: list[loader.PtxEntry] = field(default_factory=list)
    modules: list[tuple[ir.Module, str]] = field(default_factory=list)  # (module, input name)
    defined: dict[str, str] = field(default_factory=dict)  # function -> input defining it
    error: CudaError | None = None  # a failed add that also fails cuLinkComplete
    output: ctypes.Array | None = None
    handle: int = 0

    def fail(self, error: CudaError | loader.LoaderError, log: str | None = None) -> None:
        """Put the message into the program's error log, then raise it."""
        message = error.message if isinstance(error, CudaError) else str(error)
        self.options.write_log(K.CU_JIT_ERROR_LOG_BUFFER, K.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                               log or message)
        raise error


def _lookup(handle: int) -> LinkState:
    return handles.lookup(handle, LinkState, "link state")


def _ptx_of_input(kind: int, data: bytes, name: str) -> list[loader.PtxEntry]:
    what = f"{name} ({_INPUT_NAMES.get(kind, kind)})"
    if kind == K.CU_JIT_INPUT_NVVM:
        raise CudaError(E.NOT_SUPPORTED, f"{what}: LTO-IR cannot be linked by cuport, which "
                                         "runs PTX: compile to PTX instead (numba-cuda: do not "
                                         "ask for link-time optimisation)")
    if kind == K.CU_JIT_INPUT_LIBRARY:
        found = []
        for member, body in members(data):
            image = loader.parse_image(body)
            if image.ptx or image.relocatable:
                found.extend(module.ptx_of(image, None, f"{name}({member})"))
        if not found:
            raise CudaError(E.NO_BINARY_FOR_GPU, f"{what}: no member holds PTX (SASS only?); "
                                                 "rebuild the library with PTX embedded")
        return found
    if kind not in _INPUT_NAMES:
        raise CudaError(E.INVALID_VALUE, f"{kind} is not a CUjitInputType")
    return module.ptx_of(loader.parse_image(data), None, what)


def _add(state: LinkState, kind: int, data: bytes, name: str) -> None:
    try:
        entries = _ptx_of_input(kind, data, name)
    except (CudaError, loader.LoaderError) as error:
        state.fail(error)
    parsed = []
    for number, entry in enumerate(entries):
        where = name if len(entries) == 1 else f"{name} (module {number + 1})"
        try:
            parsed.append((ptx.load([entry.text]), where))  # parsed and checked as by ptxas
        except PtxSyntaxError as error:
            code = getattr(error, "code", E.INVALID_PTX)
            state.fail(CudaError(code, f"{where}: {getattr(error, 'summary', error)}"),
                       ptx.log_of(error))
    for ptx_module, where in parsed:
        for fname, fn in ptx_module.functions.items():
            if not fn.is_definition or fn.linkage == "weak":
                continue
            first = state.defined.get(fname)
            if first is not None:
                log = (f"error   : Multiple definition of '{fname}' in '{where}', "
                       f"first defined in '{first}'")
                state.error = CudaError(E.INVALID_SOURCE, log.removeprefix("error   : "))
                state.fail(state.error, log)
            if fn.linkage in ("visible", "extern"):
                state.defined[fname] = where
    state.entries.extend(entries)
    state.modules.extend(parsed)
    for buffer, size in _LOGS:
        state.options.write_log(buffer, size, "")


def _referenced(module: ir.Module) -> set[str]:
    """Every symbol the module's code and initialisers name."""
    names: set[str] = set()
    for fn in module.functions.values():
        for ins in fn.body or ():
            if isinstance(ins, ir.Instr):
                names |= ir.symbols_named(ins.args)
    for var in module.variables:
        names |= ir.symbols_named(var.init or ())
    return names


def _undefined(state: LinkState) -> tuple[str, str] | None:
    """The first (symbol, input) referenced but defined nowhere in the link."""
    linked = link_modules([m for m, _ in state.modules])
    missing = {name for name, fn in linked.functions.items()
               if not fn.is_definition and not devrt.driver_provides(name)}
    missing |= {v.name for v in linked.variables
                if v.linkage == "extern" and v.space in ("global", "const") and v.init is None}
    if not missing:
        return None
    for ptx_module, where in state.modules:
        hit = sorted(missing & _referenced(ptx_module))
        if hit:
            return hit[0], where
    return None


@implements("cuLinkCreate", "cuLinkCreate_v2")
def link_create(count: int, options: int, values: int) -> int:
    state = LinkState(context.current(), JitOptions.read(count, options, values, "cuLinkCreate"))
    state.handle = handles.new(state)
    return state.handle


@implements("cuLinkAddData", "cuLinkAddData_v2")
def link_add_data(handle: int, kind: int, data: int, size: int, name: str | None,
                  count: int, options: int, values: int) -> None:
    state = _lookup(handle)
    JitOptions.read(count, options, values, "cuLinkAddData")
    if not data:
        raise CudaError(E.INVALID_VALUE, "data is NULL")
    if kind == K.CU_JIT_INPUT_PTX:
        raw = ctypes.string_at(data, size) if size else ctypes.string_at(data)
        raw = raw.split(b"\0", 1)[0]
    else:
        if not size:
            raise CudaError(E.INVALID_VALUE, "size is 0")
        raw = ctypes.string_at(data, size)
    _add(state, kind, raw, name or "<data>")


@implements("cuLinkAddFile", "cuLinkAddFile_v2")
def link_add_file(handle: int, kind: int, path: str | None, count: int, options: int,
                  values: int) -> None:
    state = _lookup(handle)
    JitOptions.read(count, options, values, "cuLinkAddFile")
    if not path:
        raise CudaError(E.INVALID_VALUE, "path is NULL")
    if not os.path.isfile(path):
        state.fail(CudaError(E.FILE_NOT_FOUND, f"{path} does not exist"))
    with open(path, "rb") as f:
        raw = f.read()
    _add(state, kind, raw, path)


@implements("cuLinkComplete")
def link_complete(handle: int) -> tuple[int, int]:
    state = _lookup(handle)
    if state.error is not None:
        state.fail(state.error, f"error   : {state.error.message}")
    start = time.perf_counter()
    if state.modules:
        undefined = _undefined(state)
        if undefined is not None:
            log = f"error   : Undefined reference to '{undefined[0]}' in '{undefined[1]}'"
            state.fail(CudaError(E.INVALID_SOURCE, log.removeprefix("error   : ")), log)
        text = "\n".join(e.text.rstrip("\0").rstrip() for e in state.entries)
    else:  # NVIDIA's driver completes an empty link too: a module without code
        major, minor = device.compute_capability()
        text = f".version 7.0\n.target sm_{major}{minor}\n.address_size 64"
    data = text.encode() + b"\n\0"
    state.output = ctypes.create_string_buffer(data, len(data))
    state.options.write_wall_time((time.perf_counter() - start) * 1000.0)
    if state.options.verbose:
        state.options.write_log(
            K.CU_JIT_INFO_LOG_BUFFER, K.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            f"info    : cuport linked {len(state.entries)} PTX module(s) from "
            f"{', '.join(sorted({w for _, w in state.modules}))}")
    return ctypes.addressof(state.output), len(data)


@implements("cuLinkDestroy")
def link_destroy(handle: int) -> None:
    state = _lookup(handle)
    handles.drop(handle)
    state.output = None
