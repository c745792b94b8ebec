"""Libraries, modules, functions and kernels: from a program's image to launchable code.

An image (fatbin wrapper, fatbin, ELF, PTX text; a pointer or a file) goes through
the loader, which picks the PTX for the device's compute capability; `-rdc=true`
programs whose fatbin holds only SASS get their relocatable PTX from the ELF file
the image lives in. The PTX goes to the backend (cuport.backends), which compiles
it into a module image with kernels and globals.

A CUlibrary is context-independent: it keeps its PTX and loads one module per
context on demand (cuLibraryGetModule, cuKernelGetFunction, a launch). A CUkernel
is accepted wherever a CUfunction is and means its function in the current context.

cuModuleUnload and cuLibraryUnload wait until the launches already queued with the
module's functions have finished, then unload (NVIDIA leaves this undefined; waiting
keeps a running kernel from losing its code).
"""

from __future__ import annotations

import ctypes
import importlib
import itertools
import os
import re
import threading
from pathlib import Path

from cuport import loader
from cuport.backends.base import BackendError
from cuport.driver import context, device, device_heap, handles, memory, stream, texture
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E

_dump_counter = itertools.count(1)
_ENTRY = re.compile(r"\.entry\s+([\w$]+)")


# -- the backend ----------------------------------------------------------------------------

_backends: dict[tuple[str, int], object] = {}
_backend_lock = threading.Lock()


def backend_for(dev) -> object:
    """The backend of device `dev`: CUPORT_BACKEND="module:factory" if set (tests' fake
    backends), else cuport's own for the device's kind (backends.get_backend)."""
    key = (dev.kind, dev.index)
    with _backend_lock:
        b = _backends.get(key)
        if b is None:
            spec = os.environ.get("CUPORT_BACKEND")
            if spec:
                module_name, _, attr = spec.partition(":")
                b = getattr(importlib.import_module(module_name), attr or "get_backend")()
            else:
                import cuport.backends as backends

                b = backends.get_backend(dev.kind, dev.index)
            _backends[key] = b
        return b


def loaded_backend(dev) -> object | None:
    """The backend of device `dev` if it was made, else None: nothing of the device's has
    run, so there is nothing to wait for (and nothing is built at exit, when the libraries
    a backend needs may have shut down)."""
    with _backend_lock:
        return _backends.get((dev.kind, dev.index))


def backend():
    """The backend of the current context's device; of the first device when no context is
    current (the library API, cuLibraryLoadData and friends, needs none)."""
    s = context.stack()
    return (s[-1].device if s else device.devices()[0]).backend()


# -- PTX from images --------------------------------------------------------------------------

def _device_cc() -> int:
    major, minor = device.compute_capability()
    return major * 10 + minor


def ptx_of(image: loader.Image, address: int | None, source: str) -> list[loader.PtxEntry]:
    """The PTX modules to compile for an image (several for -rdc programs)."""
    cc = _device_cc()
    if image.ptx:
        return [loader.choose_ptx(image, cc)]
    if image.relocatable:
        return loader.choose_relocatable_ptx(image.relocatable, cc, source)
    if address is not None:
        path = loader.file_containing_address(address)
        if path:
            linked = loader.relocatable_ptx_in_file(path, cc)
            if linked:
                return linked
    return [loader.choose_ptx(image, cc)]  # raises the error that says how to rebuild


def _dump(entries: list[loader.PtxEntry]) -> None:
    """`cuport trace --ptx-dir DIR`: keep the PTX of every module the program loads."""
    directory = os.environ.get("CUPORT_PTX_DIR")
    if not directory:
        return
    Path(directory).mkdir(parents=True, exist_ok=True)
    n = next(_dump_counter)
    for i, entry in enumerate(entries):
        suffix = f"-{i + 1}" if len(entries) > 1 else ""
        (Path(directory) / f"module-{os.getpid()}-{n}{suffix}.ptx").write_text(entry.text)


def _from_address(address: int) -> list[loader.PtxEntry]:
    entries = ptx_of(loader.read_image_at(address), address, f"image at {hex(address)}")
    _dump(entries)
    return entries


def _from_file(path: str | None) -> list[loader.PtxEntry]:
    if not path:
        raise CudaError(E.INVALID_VALUE, "the file name is NULL")
    if not os.path.exists(path):
        raise CudaError(E.FILE_NOT_FOUND, f"{path} does not exist")
    entries = ptx_of(loader.parse_file(path), None, path)
    if not entries or not entries[0].text:
        raise CudaError(E.INVALID_IMAGE, f"{path} holds no PTX")
    _dump(entries)
    return entries


# -- objects --------------------------------------------------------------------------------

class Module:
    """Compiled code in one context."""

    def __init__(self, ctx: context.Context, entries: list[loader.PtxEntry],
                 library: Library | None = None) -> None:
        self.context = ctx
        self.entries = entries
        self.library = library
        self.image = backend().load_module([e.text for e in entries])
        self.functions: dict[str, Function] = {}
        self.globals: dict[str, memory.Allocation] = {}
        self._ptx_versions: dict[str, int] = {}  # kernel -> ptx_version
        self.inflight = 0
        self.idle = threading.Condition()
        self.handle = handles.new(self)

    def ptx_version(self, kernel: str) -> int:
        """What cudaFuncAttributes.ptxVersion means: the virtual architecture the kernel's
        PTX was compiled for (75 for compute_75), not the PTX ISA version; CUB/Thrust pick
        their tuning policies (and kernels) from it. The PTX module that defines the kernel
        answers: a -rdc program links libcudadevrt's PTX for sm_121 beside its own
        compute_90 (cuda-samples radixSortThrust: CUB read 121 and failed with
        cudaErrorInvalidDeviceFunction)."""
        arch = self._ptx_versions.get(kernel)
        if arch is None:
            entry = re.compile(rf"\.entry\s+{re.escape(kernel)}(?![\w$])")
            arch = next((e.arch for e in self.entries if entry.search(e.text)),
                        max(e.arch for e in self.entries))
            self._ptx_versions[kernel] = arch
        return arch

    def function(self, name: str | None) -> Function:
        if name is None:
            raise CudaError(E.INVALID_VALUE, "the function name is NULL")
        f = self.functions.get(name)
        if f is None:
            try:
                kernel = self.image.kernel(name)
            except KeyError:
                raise CudaError(E.NOT_FOUND, f"the module has no kernel named {name!r}; it has "
                                             f"{', '.join(self.image.kernel_names()) or 'none'}",
                                subject=name) from None
            f = self.functions[name] = Function(self, name, kernel)
        return f

    def global_symbol(self, name: str | None) -> tuple[int, int]:
        if name is None:
            raise CudaError(E.INVALID_VALUE, "the variable name is NULL")
        try:
            address, size = self.image.global_symbol(name)
        except KeyError:
            raise CudaError(E.NOT_FOUND, f"the module has no global variable named {name!r}",
                            subject=name) from None
        if name not in self.globals and memory.TABLE.find(address) is None:
            # Module globals are device memory the program may copy to and from.
            self.globals[name] = memory.register_range(address, size, "global", self.context)
        return address, size

    def launch_started(self) -> None:
        with self.idle:
            self.inflight += 1

    def launch_finished(self) -> None:
        with self.idle:
            self.inflight -= 1
            self.idle.notify_all()

    def unload(self) -> None:
        """Wait for queued launches, then free the module's globals and code."""
        with self.idle:
            self.idle.wait_for(lambda: self.inflight == 0)  # (those queued on streams)
        stream.drain(self.context)  # (those handed to the device's queue)
        handles.drop(self.handle)
        for f in self.functions.values():
            handles.drop(f.handle)
        for a in self.globals.values():
            if memory.TABLE.find(a.base) is a:
                memory.TABLE.remove(a)
        self.image.unload()


class Function:
    """A kernel of a module (CUfunction), with its per-function settings."""

    def __init__(self, module: Module, name: str, kernel) -> None:
        self.module = module
        self.name = name
        self.kernel = kernel
        self.info = kernel.info
        self.max_dynamic_shared = max(0, self.shared_limit("MAX_SHARED_MEMORY_PER_BLOCK")
                                      - self.info.static_shared_bytes)
        self.carveout = -1
        self.cache_config = K.CU_FUNC_CACHE_PREFER_NONE
        self.shared_config = K.CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE
        self.c_name = ctypes.create_string_buffer(name.encode())  # for cuFuncGetName
        # what every launch asks, looked up once (driver/launch.py)
        self.prepare = getattr(kernel, "prepare", None)
        self.launch_queued = getattr(kernel, "launch_queued", None)
        self.texture_params = getattr(kernel, "texture_params", ())
        self.param_layout = tuple((p.offset, p.offset + p.size, p.size, p.name)
                                  for p in self.info.params)
        self.packer = None  # the parameter packer made for the layout (launch.pack_params)
        self.labels: dict[str, str] = {}  # "cuLaunchKernel" -> "cuLaunchKernel(name)"
        self.checked: tuple | None = None  # the last (grid, block, shared) check_geometry passed
        self.prepared: tuple | None = None  # a block shape prepared without options (launch.py)
        self.on_device_queue: bool | None = None  # stream.queues_on_device (device_queue)
        # a kernel calling malloc/free: the context's heap is bound before its first launch
        self.heap_pending = bool(getattr(kernel, "uses_device_heap", False))
        self.handle = handles.new(self)

    @property
    def context(self) -> context.Context:
        return self.module.context

    def shared_limit(self, key: str) -> int:
        """The shared-memory attribute `key` of the device this function runs on (a Vulkan
        device has its own: NVIDIA's Vulkan 48 KiB of workgroup memory, lavapipe's 32)."""
        return self.module.context.device.value(key)

    def device_queue(self) -> bool:
        """Whether its context's backend queues launches itself (stream.queues_on_device),
        asked once: a function's context, and that context's device, are its for good."""
        self.on_device_queue = stream.queues_on_device(self.module.context)
        return self.on_device_queue

    def launch_options(self, params: bytes = b"") -> dict[str, object]:
        """What a launch with the packed parameters `params` tells the backend's kernel beside
        its shape: the context's stack limit, where the kernel's stack is compiled in
        (recursion on the Vulkan backend), and what the live texture objects its texture
        parameters hold are (`textures`, where the kernel has such parameters: the Vulkan
        backend compiles a variant for them). A kernel calling malloc or free gets the
        context's heap first (device_heap.py)."""
        if self.heap_pending:
            device_heap.launching(self.context, self.module.image)
            self.heap_pending = False
        opts: dict[str, object] = {}
        if getattr(self.kernel, "needs_stack_limit", False):
            opts["stack_bytes"] = self.context.limits[K.CU_LIMIT_STACK_SIZE]
        if self.texture_params:
            textures = texture.sampling_of(params, self.texture_params)
            if textures:
                opts["textures"] = textures
        return opts


class Library:
    """Context-independent code (CUlibrary): PTX, loaded into each context on demand."""

    def __init__(self, entries: list[loader.PtxEntry]) -> None:
        self.entries = entries
        self.modules: dict[int, Module] = {}  # context id -> module
        self.kernels: dict[str, Kernel] = {}
        self._kernel_names: list[str] | None = None
        self.lock = threading.RLock()
        self.handle = handles.new(self)
        ctx = context.current_or_none()
        if ctx is not None and ctx.active:
            self.module_for(ctx)  # compile now, so that errors surface at load time

    def module_for(self, ctx: context.Context) -> Module:
        with self.lock:
            m = self.modules.get(ctx.id)
            if m is None or handles.peek(m.handle) is not m:
                m = self.modules[ctx.id] = Module(ctx, self.entries, self)
            return m

    def managed_module(self) -> Module:
        """The module whose managed variables the library answers with: one already loaded,
        else the current context's, else the primary context's of device 0 (cuport
        compiles a module per context, so a second context's module has its own copies)."""
        with self.lock:
            for m in self.modules.values():
                if handles.peek(m.handle) is m:
                    return m
            ctx = context.current_or_none()
            if ctx is None or handles.peek(ctx.handle) is not ctx or not ctx.active:
                ctx = context.primary(0)
            return self.module_for(ctx)

    def kernel_names(self) -> list[str]:
        """Entry names, without compiling: a CUlibrary needs no context to be asked. Read
        from the PTX once (Thrust's 1.5 MB took 1 ms for each kernel asked for)."""
        if self._kernel_names is None:
            names: dict[str, None] = {}
            for entry in self.entries:
                names.update(dict.fromkeys(_ENTRY.findall(entry.text)))
            self._kernel_names = list(names)
        return self._kernel_names

    def kernel(self, name: str | None) -> Kernel:
        if name is None:
            raise CudaError(E.INVALID_VALUE, "the kernel name is NULL")
        with self.lock:
            k = self.kernels.get(name)
            if k is None:
                if name not in self.kernel_names():
                    raise CudaError(E.NOT_FOUND, f"the library has no kernel named {name!r}; it "
                                                 f"has {', '.join(self.kernel_names()) or 'none'}",
                                    subject=name)
                k = self.kernels[name] = Kernel(self, name)
            return k

    def unload(self) -> None:
        with self.lock:
            modules, self.modules = list(self.modules.values()), {}
            for k in self.kernels.values():
                handles.drop(k.handle)
        for m in modules:
            if handles.peek(m.handle) is m:
                m.unload()
        handles.drop(self.handle)


class Kernel:
    """A kernel of a library (CUkernel): its function in whichever context is current."""

    def __init__(self, library: Library, name: str) -> None:
        self.library = library
        self.name = name
        self.c_name = ctypes.create_string_buffer(name.encode())
        self.settings: dict[int, int] = {}  # cuKernelSetAttribute, applied to each function
        self._functions: dict[int, Function] = {}  # context id -> its function, settings applied
        self.handle = handles.new(self)

    def function(self, ctx: context.Context | None = None) -> Function:
        """Its function in ctx (the current context), with the settings made so far applied
        (each once: a launch through a CUkernel asks every time)."""
        ctx = ctx or context.current()
        f = self._functions.get(ctx.id)
        if f is not None and handles.peek(f.handle) is f:
            return f
        f = self.library.module_for(ctx).function(self.name)
        for attrib, value in self.settings.items():
            set_function_attribute(f, attrib, value)
        self._functions[ctx.id] = f
        return f


def lookup_module(handle: int) -> Module:
    return handles.lookup(handle, Module, "module")


def lookup_library(handle: int) -> Library:
    return handles.lookup(handle, Library, "library")


def lookup_kernel(handle: int) -> Kernel:
    return handles.lookup(handle, Kernel, "kernel")


def resolve_function(handle: int) -> Function:
    """A CUfunction argument; a CUkernel means its function in the current context."""
    obj = handles.peek(handle)
    if obj.__class__ is Function and obj.module.context.active:
        return obj
    if isinstance(obj, Kernel):
        return obj.function()
    f = handles.lookup(handle, Function, "function")
    f.context.require_active()
    return f


def _release(ctx: context.Context) -> None:
    for handle in handles.owned_by(ctx, Module):
        m = handles.peek(handle)
        if m is not None:
            m.unload()


context.RESOURCE_HOOKS.insert(0, _release)  # before memory: globals first


# -- JIT options (cuModuleLoadDataEx): report errors into the program's log buffer -------

def _write_log(count: int, options: int, values: int, buffer_kind: int, size_kind: int,
               text: str) -> None:
    """Copy `text` into a JIT log buffer the program passed, NUL-terminated and cut to its
    size, and store the length written (without the NUL, as NVIDIA's driver does)."""
    if not (count and options and values):
        return
    kinds = list((ctypes.c_int * count).from_address(options))
    slots = (ctypes.c_uint64 * count).from_address(values)
    if buffer_kind not in kinds or size_kind not in kinds:
        return
    b, s = kinds.index(buffer_kind), kinds.index(size_kind)
    size = int(slots[s]) & 0xFFFFFFFF
    if not slots[b] or size == 0:
        return
    data = text.encode()[: size - 1] + b"\0"
    ctypes.memmove(int(slots[b]), data, len(data))
    slots[s] = len(data) - 1


def _with_jit_log(load, count: int, options: int, values: int):
    """Run a load; fill the CU_JIT_ERROR_LOG_BUFFER option with what went wrong (ptxas'
    log for invalid PTX) and empty the info log, or leave both logs empty when it worked."""
    try:
        result = load()
    except (CudaError, loader.LoaderError, BackendError) as e:
        log = getattr(e, "log", None)  # the JIT's log ("" where the H200 writes none)
        _write_log(count, options, values, K.CU_JIT_ERROR_LOG_BUFFER,
                   K.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, e.message if log is None else log)
        _write_log(count, options, values, K.CU_JIT_INFO_LOG_BUFFER,
                   K.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, "")  # emptied too, as on the H200
        raise
    for buffer_kind, size_kind in ((K.CU_JIT_ERROR_LOG_BUFFER, K.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES),
                                   (K.CU_JIT_INFO_LOG_BUFFER, K.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)):
        _write_log(count, options, values, buffer_kind, size_kind, "")
    return result


# -- API --------------------------------------------------------------------------------------

@implements("cuModuleLoad")
def module_load(fname: str | None) -> int:
    ctx = context.current()
    return Module(ctx, _from_file(fname)).handle


@implements("cuModuleLoadData", "cuModuleLoadFatBinary")
def module_load_data(image: int) -> int:
    ctx = context.current()
    return Module(ctx, _from_address(image)).handle


@implements("cuModuleLoadDataEx")
def module_load_data_ex(image: int, count: int, options: int, values: int) -> int:
    return _with_jit_log(lambda: module_load_data(image), count, options, values)


@implements("cuModuleUnload")
def module_unload(handle: int) -> None:
    m = lookup_module(handle)
    if m.library is not None:
        raise CudaError(E.INVALID_HANDLE, "the module belongs to a library: unload the library "
                                          "with cuLibraryUnload")
    m.unload()


@implements("cuModuleGetFunction")
def module_get_function(handle: int, name: str | None) -> int:
    return lookup_module(handle).function(name).handle


@implements("cuModuleGetGlobal_v2", optional_outs=("dptr", "bytes"))
def module_get_global(handle: int, name: str | None) -> tuple[int, int]:
    return lookup_module(handle).global_symbol(name)


@implements("cuModuleGetLoadingMode")
def module_loading_mode() -> int:
    # The value NVIDIA's runtimes were measured against (cudart-protocol.md); in the
    # header's enum 1 reads CU_MODULE_EAGER_LOADING, which is what cuport does: a
    # module is compiled when it is loaded.
    return 1


@implements("cuModuleGetFunctionCount")
def module_function_count(handle: int) -> int:
    return len(lookup_module(handle).image.kernel_names())


@implements("cuModuleEnumerateFunctions")
def module_enumerate_functions(out: int, count: int, handle: int) -> None:
    m = lookup_module(handle)
    names = m.image.kernel_names()
    if count < len(names) or (names and out == 0):
        raise CudaError(E.INVALID_VALUE, f"room for {count} functions, the module has {len(names)}")
    slots = (ctypes.c_uint64 * len(names)).from_address(out) if names else []
    for i, name in enumerate(names):
        slots[i] = m.function(name).handle


def _library_options(count: int, options: int, values: int) -> None:
    if count == 0:
        return
    if not options:
        raise CudaError(E.INVALID_VALUE, "libraryOptions is NULL but numLibraryOptions is not 0")
    for kind in (ctypes.c_int * count).from_address(options):
        if kind not in (K.CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE,
                        K.CU_LIBRARY_BINARY_IS_PRESERVED):
            raise CudaError(E.INVALID_VALUE, f"{kind} is not a CUlibraryOption")


@implements("cuLibraryLoadData", before_init=False)
def library_load_data(code: int, jit_options: int, jit_values: int, n_jit: int,
                      lib_options: int, lib_values: int, n_lib: int) -> int:
    _library_options(n_lib, lib_options, lib_values)
    return _with_jit_log(lambda: Library(_from_address(code)).handle, n_jit, jit_options,
                         jit_values)


@implements("cuLibraryLoadFromFile")
def library_load_from_file(path: str | None, jit_options: int, jit_values: int, n_jit: int,
                           lib_options: int, lib_values: int, n_lib: int) -> int:
    _library_options(n_lib, lib_options, lib_values)
    return _with_jit_log(lambda: Library(_from_file(path)).handle, n_jit, jit_options,
                         jit_values)


@implements("cuLibraryUnload")
def library_unload(handle: int) -> None:
    lookup_library(handle).unload()


@implements("cuLibraryGetKernel")
def library_get_kernel(handle: int, name: str | None) -> int:
    return lookup_library(handle).kernel(name).handle


@implements("cuLibraryGetModule")
def library_get_module(handle: int) -> int:
    return lookup_library(handle).module_for(context.current()).handle


@implements("cuLibraryGetGlobal", optional_outs=("dptr", "bytes"))
def library_get_global(handle: int, name: str | None) -> tuple[int, int]:
    return lookup_library(handle).module_for(context.current()).global_symbol(name)


@implements("cuLibraryGetManaged", optional_outs=("dptr", "bytes"))
def library_get_managed(handle: int, name: str | None) -> tuple[int, int]:
    """Managed variables belong to the library, not to a context: the runtime asks for
    them while registering `__managed__` variables, before any context is current."""
    lib = lookup_library(handle)
    if name is not None and not any(re.search(
            rf"\.global\s+[^;]*\.attribute\(\s*\.managed\s*\)[^;]*\s{re.escape(name)}\b",
            e.text) for e in lib.entries):
        raise CudaError(E.NOT_FOUND, f"the library has no managed variable named {name!r}",
                        subject=name)
    return lib.managed_module().global_symbol(name)


@implements("cuLibraryGetKernelCount")
def library_kernel_count(handle: int) -> int:
    return len(lookup_library(handle).kernel_names())


@implements("cuLibraryEnumerateKernels")
def library_enumerate_kernels(out: int, count: int, handle: int) -> None:
    lib = lookup_library(handle)
    names = lib.kernel_names()
    if count < len(names) or (names and out == 0):
        raise CudaError(E.INVALID_VALUE, f"room for {count} kernels, the library has {len(names)}")
    slots = (ctypes.c_uint64 * len(names)).from_address(out) if names else []
    for i, name in enumerate(names):
        slots[i] = lib.kernel(name).handle


@implements("cuKernelGetFunction")
def kernel_get_function(handle: int) -> int:
    return lookup_kernel(handle).function().handle


@implements("cuKernelGetLibrary")
def kernel_get_library(handle: int) -> int:
    return lookup_kernel(handle).library.handle


@implements("cuKernelGetName")
def kernel_get_name(handle: int) -> int:
    return ctypes.addressof(lookup_kernel(handle).c_name)


# -- function attributes ------------------------------------------------------------------

def function_attribute(f: Function, attrib: int) -> int:
    info = f.info
    if attrib == K.CU_FUNC_ATTRIBUTE_NUM_REGS:  # (a liveness pass: only when asked)
        return info.num_regs()
    values = {
        K.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: min(info.max_threads_per_block,
                                                       device.MAX_THREADS_PER_BLOCK),
        K.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: info.static_shared_bytes,
        K.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: info.attributes.get("const_size_bytes", 0),
        K.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: info.local_bytes_per_thread,
        K.CU_FUNC_ATTRIBUTE_PTX_VERSION: f.module.ptx_version(f.name),
        K.CU_FUNC_ATTRIBUTE_BINARY_VERSION: _device_cc(),
        K.CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: 0,
        K.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: f.max_dynamic_shared,
        K.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: f.carveout,
        K.CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET: 0,
        K.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH: 0,
        K.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT: 0,
        K.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: 0,
        K.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: 0,
        K.CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: 0,
    }
    if attrib not in values:
        raise CudaError(E.INVALID_VALUE, f"{attrib} is not a CUfunction_attribute", subject=f.name)
    return values[attrib]


def set_function_attribute(f: Function, attrib: int, value: int) -> None:
    if attrib == K.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        optin = f.shared_limit("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
        limit = optin - f.info.static_shared_bytes
        if not 0 <= value <= limit:
            raise CudaError(E.INVALID_VALUE,
                            f"{value} bytes of dynamic shared memory asked for; with "
                            f"{f.info.static_shared_bytes} bytes of static shared memory at most "
                            f"{limit} are possible on this device ({optin} bytes per block "
                            "in all)", subject=f.name)
        f.max_dynamic_shared = value
        f.checked = None
    elif attrib == K.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        if not -1 <= value <= 100:
            raise CudaError(E.INVALID_VALUE, f"carveout {value} is not -1 or a percentage",
                            subject=f.name)
        f.carveout = value
    elif attrib in (K.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                    K.CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE):
        pass  # cluster hints: cuport launches no clusters
    elif attrib in (K.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
                    K.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
                    K.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH):
        if value > 1:
            raise CudaError(E.NOT_SUPPORTED, "thread block clusters are not supported by cuport",
                            subject=f.name)
    else:
        raise CudaError(E.INVALID_VALUE, f"function attribute {attrib} cannot be set",
                        subject=f.name)


@implements("cuFuncGetAttribute")
def func_get_attribute(attrib: int, handle: int) -> int:
    return function_attribute(resolve_function(handle), attrib)


@implements("cuFuncSetAttribute")
def func_set_attribute(handle: int, attrib: int, value: int) -> None:
    set_function_attribute(resolve_function(handle), attrib, value)


@implements("cuKernelGetAttribute")
def kernel_get_attribute(attrib: int, handle: int, dev: int) -> int:
    device.get(dev)
    return function_attribute(lookup_kernel(handle).function(), attrib)


@implements("cuKernelSetAttribute")
def kernel_set_attribute(attrib: int, value: int, handle: int, dev: int) -> None:
    device.get(dev)
    k = lookup_kernel(handle)
    set_function_attribute(k.function(), attrib, value)
    k.settings[attrib] = value
    k._functions.clear()  # (every context's function gets the setting at its next use)


@implements("cuFuncSetCacheConfig")
def func_set_cache_config(handle: int, config: int) -> None:
    if config not in (0, 1, 2, 3):
        raise CudaError(E.INVALID_VALUE, f"{config} is not a CUfunc_cache")
    resolve_function(handle).cache_config = config


@implements("cuKernelSetCacheConfig")
def kernel_set_cache_config(handle: int, config: int, dev: int) -> None:
    device.get(dev)
    func_set_cache_config(lookup_kernel(handle).function().handle, config)


@implements("cuFuncSetSharedMemConfig")
def func_set_shared_config(handle: int, config: int) -> None:
    if config not in (0, 1, 2):
        raise CudaError(E.INVALID_VALUE, f"{config} is not a CUsharedconfig")
    resolve_function(handle).shared_config = config


@implements("cuFuncGetName")
def func_get_name(handle: int) -> int:
    return ctypes.addressof(resolve_function(handle).c_name)


@implements("cuFuncGetModule")
def func_get_module(handle: int) -> int:
    return resolve_function(handle).module.handle


@implements("cuFuncIsLoaded")
def func_is_loaded(handle: int) -> int:
    resolve_function(handle)
    return K.CU_FUNCTION_LOADING_STATE_LOADED


@implements("cuFuncLoad")
def func_load(handle: int) -> None:
    resolve_function(handle)


def _param_info(f: Function, index: int) -> tuple[int, int]:
    if not 0 <= index < len(f.info.params):
        raise CudaError(E.INVALID_VALUE, f"{f.name} has {len(f.info.params)} parameters, "
                                         f"not a parameter {index}", subject=f.name)
    p = f.info.params[index]
    return p.offset, p.size


@implements("cuFuncGetParamInfo", optional_outs=("paramOffset", "paramSize"))
def func_param_info(handle: int, index: int) -> tuple[int, int]:
    return _param_info(resolve_function(handle), index)


@implements("cuKernelGetParamInfo", optional_outs=("paramOffset", "paramSize"))
def kernel_param_info(handle: int, index: int) -> tuple[int, int]:
    return _param_info(lookup_kernel(handle).function(), index)


__all__ = ["Function", "Kernel", "Library", "Module", "backend", "resolve_function"]
