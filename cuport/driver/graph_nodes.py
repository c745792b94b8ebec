"""What each kind of graph node does: its parameters, read from and written to C structs.

A node's parameters are an immutable value (one dataclass per CUgraphNodeType), checked
completely when made, as NVIDIA's driver checks them when a node is added or set. A
graph, its clones and its executable graphs share these values; setting parameters
replaces the value, so an executable graph never sees later changes to its graph.

`run()` does the node's work on a stream's worker thread (graph_exec.py orders the
calls); `label()` describes it for cuGraphDebugDotPrint; `update_error(new)` says why
an executable graph's node could not take `new` (a CUgraphExecUpdateResult), or None.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

from cuport.capi import types
from cuport.driver import context, copy, event, graph_conditional, handles, launch, memory, module
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E


def handle_of(cdata) -> int:
    """A C pointer or handle field as an int."""
    return int(types.ffi().cast("uintptr_t", cdata))


class Params:
    """The parameters of one node kind (a frozen dataclass below)."""

    type: ClassVar[int]
    kind: ClassVar[str]  # as cuGraphDebugDotPrint and messages name it

    def run(self) -> None:
        """The node's work, on the launching stream's worker (most kinds have none)."""

    def label(self) -> str:
        return self.kind

    def update_error(self, new: Params) -> int | None:
        """Why an instantiated node cannot take `new` instead (None: it can)."""
        return None


# -- kernels ---------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Kernel(Params):
    type: ClassVar[int] = K.CU_GRAPH_NODE_TYPE_KERNEL
    kind: ClassVar[str] = "kernel"
    function: module.Function
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    args: bytes  # the packed parameter buffer, copied when the node was made
    kern: int = 0  # the CUkernel it was named by, echoed by the v2 GetParams
    attrs: tuple[tuple[int, bytes], ...] = ()  # cuGraphKernelNodeSetAttribute values

    def run(self) -> None:
        self.function.kernel.launch(self.grid, self.block, self.shared, self.args,
                                    **self.function.launch_options(self.args))

    def label(self) -> str:
        g, b = self.grid, self.block
        return (f"kernel {self.function.name}\\n<<<({g[0]},{g[1]},{g[2]}), ({b[0]},{b[1]},{b[2]}), "
                f"{self.shared}>>>")

    def update_error(self, new: Params) -> int | None:
        if new.function.context is not self.function.context:
            return K.CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE
        return None

    @cached_property
    def _arg_pointers(self) -> tuple[Any, Any]:
        """kernelParams for GetParams: one pointer per argument, into a copy the node owns."""
        buffer = ctypes.create_string_buffer(self.args, max(1, len(self.args)))
        base = ctypes.addressof(buffer)
        params = self.function.info.params
        pointers = (ctypes.c_void_p * max(1, len(params)))(*[base + p.offset for p in params])
        return buffer, pointers

    def write(self, q, v2: bool) -> None:
        ffi = types.ffi()
        q.func = ffi.cast("CUfunction", self.function.handle)
        q.gridDimX, q.gridDimY, q.gridDimZ = self.grid
        q.blockDimX, q.blockDimY, q.blockDimZ = self.block
        q.sharedMemBytes = self.shared
        q.kernelParams = ffi.cast("void **", ctypes.addressof(self._arg_pointers[1]))
        q.extra = ffi.NULL
        if v2:
            q.kern = ffi.cast("CUkernel", self.kern)
            q.ctx = ffi.cast("CUcontext", self.function.context.handle)

    def with_attribute(self, attr: int, value: bytes) -> Kernel:
        attrs = tuple((a, v) for a, v in self.attrs if a != attr) + ((attr, value),)
        return Kernel(self.function, self.grid, self.block, self.shared, self.args, self.kern,
                      attrs)

    def prepare(self) -> None:
        """Compile for this block shape (a kernel cuport cannot translate fails here)."""
        prepare = getattr(self.function.kernel, "prepare", None)
        if prepare is not None:
            try:
                prepare(self.block, **self.function.launch_options(self.args))
            except Exception as e:
                code, message = getattr(e, "code", None), getattr(e, "message", None)
                if isinstance(code, int) and isinstance(message, str):
                    raise CudaError(code, message, subject=self.function.name) from None
                raise


def kernel_params(p, v2: bool) -> Kernel:
    """A CUDA_KERNEL_NODE_PARAMS (v1 without kern/ctx; v2 and v3 with), checked as a launch."""
    func = handle_of(p.func)
    kern = handle_of(p.kern) if v2 else 0
    if func:
        f = module.resolve_function(func)
    elif kern:
        ctx = handle_of(p.ctx)
        f = module.lookup_kernel(kern).function(context.resolve(ctx) if ctx else None)
    else:
        raise CudaError(E.INVALID_VALUE, "func (and kern) of the kernel node parameters is NULL")
    if isinstance(handles.peek(func), module.Kernel):
        kern = func  # CUDA 13's runtime may pass the CUkernel where the CUfunction goes
    grid = (p.gridDimX, p.gridDimY, p.gridDimZ)
    block = (p.blockDimX, p.blockDimY, p.blockDimZ)
    launch.check_geometry(f, grid, block, p.sharedMemBytes)
    args = launch.pack_params(f, handle_of(p.kernelParams), handle_of(p.extra))
    return Kernel(f, grid, block, p.sharedMemBytes, args, kern)


# -- memory copies and fills -----------------------------------------------------------------

MEMCPY3D = "CUDA_MEMCPY3D"
_COMMON_2D_3D = ("XInBytes", "Y", "MemoryType", "Host", "Device", "Array", "Pitch")


@dataclass(frozen=True, eq=False)
class Memcpy(Params):
    type: ClassVar[int] = K.CU_GRAPH_NODE_TYPE_MEMCPY
    kind: ClassVar[str] = "memcpy"
    desc: bytes  # the CUDA_MEMCPY3D it was made from, for GetParams
    rows: tuple[tuple[int, int, int], ...]  # (dst, src, bytes), checked
    context: context.Context | None

    def run(self) -> None:
        for dst, src, n in self.rows:
            memory.move(dst, src, n)

    @property
    def struct(self):
        return types.ffi().from_buffer(MEMCPY3D + " *", bytearray(self.desc))

    def label(self) -> str:
        p = self.struct
        names = {K.CU_MEMORYTYPE_HOST: "host", K.CU_MEMORYTYPE_DEVICE: "device",
                 K.CU_MEMORYTYPE_ARRAY: "array", K.CU_MEMORYTYPE_UNIFIED: "unified"}
        return (f"memcpy {names.get(p.srcMemoryType, '?')} to {names.get(p.dstMemoryType, '?')}"
                f"\\n{p.WidthInBytes}x{p.Height}x{p.Depth} bytes")

    def update_error(self, new: Params) -> int | None:
        old_p, new_p = self.struct, new.struct
        if (old_p.srcMemoryType, old_p.dstMemoryType) != (new_p.srcMemoryType,
                                                          new_p.dstMemoryType):
            return K.CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED
        return None


def memcpy_params(address: int, ctx: context.Context | None) -> Memcpy:
    """A CUDA_MEMCPY3D the program passed, copied and checked now."""
    if not address:
        raise CudaError(E.INVALID_VALUE, "the copy parameters are NULL")
    ffi = types.ffi()
    own = ffi.new(MEMCPY3D + " *")
    ffi.memmove(own, ffi.cast("void *", address), ffi.sizeof(MEMCPY3D))
    rows = copy.plan(own, True)
    return Memcpy(bytes(ffi.buffer(own)), tuple(rows), ctx)


def captured_memcpy(rows, desc, ctx: context.Context) -> Memcpy:
    """A copy submitted to a capturing stream: its checked rows, described as a CUDA_MEMCPY3D
    (from the program's 2D/3D struct, or a 1D unified copy)."""
    ffi = types.ffi()
    own = ffi.new(MEMCPY3D + " *")
    if desc is None:
        dst, src, n = rows[0] if rows else (0, 0, 0)
        own.srcMemoryType = own.dstMemoryType = K.CU_MEMORYTYPE_UNIFIED
        own.srcDevice, own.dstDevice = src, dst
        own.WidthInBytes, own.Height, own.Depth = n, 1, 1
    elif ffi.typeof(desc) is ffi.typeof(MEMCPY3D + " *"):
        ffi.memmove(own, desc, ffi.sizeof(MEMCPY3D))
    else:  # a CUDA_MEMCPY2D
        for side in ("src", "dst"):
            for name in _COMMON_2D_3D:
                setattr(own, side + name, getattr(desc, side + name))
        own.WidthInBytes, own.Height, own.Depth = desc.WidthInBytes, desc.Height, 1
    return Memcpy(bytes(ffi.buffer(own)), tuple(rows), ctx)


@dataclass(frozen=True, eq=False)
class Memset(Params):
    type: ClassVar[int] = K.CU_GRAPH_NODE_TYPE_MEMSET
    kind: ClassVar[str] = "memset"
    dst: int
    pitch: int
    value: int
    element_size: int
    width: int
    height: int
    context: context.Context | None
    fill: Any = field(repr=False)  # the checked fill (copy.fill_plan)

    def run(self) -> None:
        self.fill()

    def label(self) -> str:
        return (f"memset {hex(self.dst)}\\n{self.width}x{self.height} x {self.element_size} bytes "
                f"= {self.value:#x}")

    def update_error(self, new: Params) -> int | None:
        if self.height > 1 or new.height > 1:  # 2D: only the address and value may change
            if (self.pitch, self.element_size, self.width, self.height) != \
                    (new.pitch, new.element_size, new.width, new.height):
                return K.CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED
        return None

    def write(self, q) -> None:
        q.dst, q.pitch, q.value = self.dst, self.pitch, self.value
        q.elementSize, q.width, q.height = self.element_size, self.width, self.height


def memset_values(dst: int, pitch: int, value: int, size: int, width: int, height: int,
                  ctx: context.Context | None) -> Memset:
    if size not in (1, 2, 4):
        raise CudaError(E.INVALID_VALUE, f"elementSize {size} is not 1, 2 or 4")
    if width == 0 or height == 0:
        raise CudaError(E.INVALID_VALUE, f"a memset node of {width}x{height} elements")
    value &= (1 << (8 * size)) - 1
    fill = copy.fill_plan(dst, pitch, value, width, height, size)
    return Memset(dst, pitch, value, size, width, height, ctx, fill)


def memset_params(p, ctx: context.Context | None) -> Memset:
    return memset_values(p.dst, p.pitch, p.value, p.elementSize, p.width, p.height, ctx)


# -- host functions, child graphs, empty nodes, events ------------------------------------

@dataclass(frozen=True, eq=False)
class Host(Params):
    type: ClassVar[int] = K.CU_GRAPH_NODE_TYPE_HOST
    kind: ClassVar[str] = "host"
    fn: int
    user_data: int

    def run(self) -> None:
        call = types.c_function(self.fn, "CUhostFn")
        call(types.ffi().cast("void *", self.user_data))

    def label(self) -> str:
        return f"host function {hex(self.fn)}\\n(userData {hex(self.user_data)})"

    def write(self, q) -> None:
        ffi = types.ffi()
        q.fn = ffi.cast("CUhostFn", self.fn)
        q.userData = ffi.cast("void *", self.user_data)


def host_params(p) -> Host:
    fn = handle_of(p.fn)
    if not fn:
        raise CudaError(E.INVALID_VALUE, "the host node's fn is NULL")
    return Host(fn, handle_of(p.userData))


@dataclass(frozen=True, eq=False)
class Child(Params):
    type: ClassVar[int] = K.CU_GRAPH_NODE_TYPE_GRAPH
    kind: ClassVar[str] = "child graph"
    graph: Any  # graph.Graph, owned by the node


@dataclass(frozen=True, eq=False)
class Empty(Params):
    type: ClassVar[int] = K.CU_GRAPH_NODE_TYPE_EMPTY
    kind: ClassVar[str] = "empty"


@dataclass(frozen=True, eq=False)
class EventRecord(Params):
    type: ClassVar[int] = K.CU_GRAPH_NODE_TYPE_EVENT_RECORD
    kind: ClassVar[str] = "event record"
    event: event.Event

    def label(self) -> str:
        return f"event record\\n{hex(self.event.handle)}"


@dataclass(frozen=True, eq=False)
class EventWait(Params):
    type: ClassVar[int] = K.CU_GRAPH_NODE_TYPE_WAIT_EVENT
    kind: ClassVar[str] = "event wait"
    event: event.Event

    def label(self) -> str:
        return f"event wait\\n{hex(self.event.handle)}"


@dataclass(frozen=True, eq=False)
class Conditional(Params):
    """An IF / WHILE / SWITCH node over its body graphs (graph_conditional.py)."""

    type: ClassVar[int] = K.CU_GRAPH_NODE_TYPE_CONDITIONAL
    kind: ClassVar[str] = "conditional"
    var: Any  # graph_conditional.ConditionVariable
    cond_type: int
    bodies: tuple  # graph.Graph, owned by the node
    out: Any = field(default=None, repr=False)  # the phGraph_out array handed to the program

    def label(self) -> str:
        name = graph_conditional.TYPE_NAMES[self.cond_type]
        return f"conditional {name}\\nhandle {hex(self.var.handle)}"

    def update_error(self, new) -> int | None:
        if new.var is not self.var or new.cond_type != self.cond_type or \
                len(new.bodies) != len(self.bodies):
            return K.CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED
        return None

    def choose(self) -> int | None:
        """Which body runs now (IF, SWITCH): its index, or None."""
        v = self.var.value
        if self.cond_type == K.CU_GRAPH_COND_TYPE_IF:
            return 0 if v else (1 if len(self.bodies) > 1 else None)
        return v if v < len(self.bodies) else None


def subgraphs(params: Params) -> tuple:
    """The graphs a node owns: a child graph node's graph, a conditional node's bodies."""
    if isinstance(params, Child):
        return (params.graph,)
    if isinstance(params, Conditional):
        return params.bodies
    return ()


def with_subgraphs(params: Params, graphs: tuple) -> Params:
    """The same node kind over other graphs (a clone's, an executable graph's)."""
    if isinstance(params, Child):
        return Child(graphs[0])
    if isinstance(params, Conditional):
        out = (ctypes.c_uint64 * len(graphs))(*(g.handle for g in graphs))
        return Conditional(params.var, params.cond_type, tuple(graphs), out)
    return params


# -- graph memory ------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class MemAlloc(Params):
    """Graph memory: mapped when the node is made, at the address the node reports, and
    kept (not returned between launches) until its context goes."""

    type: ClassVar[int] = K.CU_GRAPH_NODE_TYPE_MEM_ALLOC
    kind: ClassVar[str] = "mem alloc"
    allocation: memory.Allocation
    desc: bytes  # the CUDA_MEM_ALLOC_NODE_PARAMS as filled in, for GetParams

    def label(self) -> str:
        return f"mem alloc\\n{self.allocation.size} bytes at {hex(self.allocation.base)}"

    def update_error(self, new: Params) -> int | None:
        return None if new.allocation is self.allocation else \
            K.CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED


@dataclass(frozen=True, eq=False)
class MemFree(Params):
    type: ClassVar[int] = K.CU_GRAPH_NODE_TYPE_MEM_FREE
    kind: ClassVar[str] = "mem free"
    dptr: int

    def label(self) -> str:
        return f"mem free\\n{hex(self.dptr)}"

    def update_error(self, new: Params) -> int | None:
        return None if new.dptr == self.dptr else K.CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED


GRAPH_MEMORY: list[memory.Allocation] = []  # every graph allocation, for the mem attributes
_graph_memory_high = [0]


def graph_memory_in_use() -> int:
    return sum(a.size for a in GRAPH_MEMORY if memory.TABLE.find(a.base) is a)


def _reusable(deps: list, size: int) -> memory.Allocation | None:
    """Graph memory that a new mem alloc node after `deps` may take over, as CUDA reuses
    a virtual address within a graph: an allocation large enough whose mem free node
    comes before the new node, every earlier mem alloc node of it before that free."""
    seen: set = set()
    todo = list(deps)
    ancestors = []
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            ancestors.append(n)
            todo.extend(n.deps)
    for free in ancestors:
        if not isinstance(free.params, MemFree):
            continue
        a = memory.TABLE.find(free.params.dptr)
        if a is None or a.size < size:
            continue
        users = [n for n in free.graph.nodes
                 if isinstance(n.params, MemAlloc) and n.params.allocation is a]
        if users and all(_precedes(u, free) for u in users):
            return a
    return None


def _precedes(a, b) -> bool:
    todo, seen = list(b.deps), set()
    while todo:
        n = todo.pop()
        if n is a:
            return True
        if n not in seen:
            seen.add(n)
            todo.extend(n.deps)
    return False


def mem_alloc_params(p, ctx: context.Context, deps: list | None = None) -> MemAlloc:
    """Check a CUDA_MEM_ALLOC_NODE_PARAMS, map its memory and write its address (dptr).
    `deps` (graph nodes the new node will follow) lets it reuse a freed address."""
    if p.bytesize == 0:
        raise CudaError(E.INVALID_VALUE, "bytesize of the mem alloc node is 0")
    props = p.poolProps
    if props.allocType != K.CU_MEM_ALLOCATION_TYPE_PINNED:
        raise CudaError(E.INVALID_VALUE, "poolProps.allocType must be "
                                         "CU_MEM_ALLOCATION_TYPE_PINNED")
    if props.location.type != K.CU_MEM_LOCATION_TYPE_DEVICE or props.location.id != 0:
        raise CudaError(E.INVALID_VALUE, "poolProps.location must be device 0")
    a = _reusable(deps or [], p.bytesize)
    if a is None:
        # Mapped directly, not through memory.allocate: making a graph is no unsafe call
        # during a stream capture.
        a = memory.Allocation(memory.map_pages(p.bytesize, ctx), p.bytesize, "device", ctx,
                              graph_memory=True)
        memory.track(a)
        GRAPH_MEMORY.append(a)
        _graph_memory_high[0] = max(_graph_memory_high[0], graph_memory_in_use())
    p.dptr = a.base
    ffi = types.ffi()
    pointer = p if ffi.typeof(p).kind == "pointer" else ffi.addressof(p)
    return MemAlloc(a, bytes(ffi.buffer(pointer, ffi.sizeof("CUDA_MEM_ALLOC_NODE_PARAMS_v1"))))


def graph_memory_high() -> int:
    return _graph_memory_high[0]


def reset_graph_memory_high() -> None:
    _graph_memory_high[0] = graph_memory_in_use()


def mem_free_params(dptr: int) -> MemFree:
    a = memory.TABLE.find(dptr)
    if a is None or a.base != dptr or a not in GRAPH_MEMORY:
        raise CudaError(E.INVALID_VALUE, f"{hex(dptr)} is not the address of a graph allocation "
                                         "(a mem alloc node's dptr)")
    return MemFree(dptr)


KINDS: dict[int, type[Params]] = {c.type: c for c in (
    Kernel, Memcpy, Memset, Host, Child, Empty, EventRecord, EventWait, MemAlloc, MemFree,
    Conditional)}

UNSUPPORTED_KINDS = {
    K.CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL: "external semaphore signal nodes",
    K.CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT: "external semaphore wait nodes",
    K.CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: "batch memory operation nodes",
}


def kind_name(node_type: int) -> str:
    cls = KINDS.get(node_type)
    return cls.kind if cls else UNSUPPORTED_KINDS.get(node_type, f"type {node_type}")
