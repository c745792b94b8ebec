"""Conditional graph nodes: cuGraphConditionalHandleCreate, and IF / WHILE / SWITCH nodes.

A conditional handle names a 32-bit condition variable. Its value is the address of
that variable in memory kernels can write, so `cudaGraphSetConditional(handle, value)`
in device code is one store (backends/cpu/devrt.py, backends/vulkan/calls.py): host
memory under the CPU backend, device memory of the handle's context where the backend
owns that (a GPU's under Vulkan; the host reads it once the kernels before have run).
A graph launch with the handle's CU_GRAPH_COND_ASSIGN_DEFAULT flag sets the variable to its default first; a conditional
node then reads it when its dependencies are done and runs
- IF: its first body graph when the value is not 0, else its second one (if it has two);
- WHILE: its body graph again and again while the value is not 0 (checked before each
  pass, so a loop that must run once starts from a default of 1);
- SWITCH: body graph number `value`, none when the value is `size` or more.
The bodies are graphs the node owns (phGraph_out), filled in by the program or by stream
capture (cuStreamBeginCaptureToGraph) and instantiated with their parent.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cuport.driver import context
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E

if TYPE_CHECKING:
    from cuport.driver import graph_nodes as gn

_SLOTS_PER_CHUNK = 512
_chunks: list[ctypes.Array] = []
_free: list[int] = []  # host cells
_device_free: dict[int, list[int]] = {}  # context handle -> cells in its device memory
_vars: dict[int, ConditionVariable] = {}
_lock = threading.Lock()

TYPE_NAMES = {K.CU_GRAPH_COND_TYPE_IF: "IF", K.CU_GRAPH_COND_TYPE_WHILE: "WHILE",
              K.CU_GRAPH_COND_TYPE_SWITCH: "SWITCH"}


@dataclass(eq=False)
class ConditionVariable:
    graph: Any  # graph.Graph it was made for
    default: int
    flags: int
    address: int = 0
    _cell: Any = field(default=None, repr=False)  # host memory: a ctypes view, else None

    @property
    def handle(self) -> int:
        return self.address

    @property
    def value(self) -> int:
        if self._cell is not None:
            return self._cell.value
        from cuport.driver import memory

        return int.from_bytes(memory.read(self.address, 4), "little")  # (after the kernels)

    @value.setter
    def value(self, v: int) -> None:
        if self._cell is not None:
            self._cell.value = v & 0xFFFFFFFF
            return
        from cuport.driver import memory

        memory.fill(self.address, v & 0xFFFFFFFF, 1, 4)

    def launch_starts(self) -> None:
        if self.flags & K.CU_GRAPH_COND_ASSIGN_DEFAULT:
            self.value = self.default


def _new_slot(ctx: context.Context | None) -> tuple[int, Any]:
    """A fresh 8-byte cell (the 32-bit variable and padding) kernels of `ctx` can write:
    (its address, a ctypes view where it is host memory)."""
    from cuport.driver import memory

    if ctx is not None and memory.device_allocates(ctx):
        free = _device_free.setdefault(ctx.handle, [])
        if not free:  # cuport's own memory, as a pool's: no capture forbids making a handle
            size = 8 * _SLOTS_PER_CHUNK
            base = memory.track(memory.Allocation(memory.map_pages(size, ctx), size, "device",
                                                  ctx)).base
            free.extend(_cells(base))
        return free.pop(), None
    if not _free:
        chunk = (ctypes.c_uint64 * _SLOTS_PER_CHUNK)()
        _chunks.append(chunk)
        _free.extend(_cells(ctypes.addressof(chunk)))
    address = _free.pop()
    return address, ctypes.c_uint32.from_address(address)


def _cells(base: int) -> list[int]:
    """A chunk's cells, the first last (free lists pop from the end)."""
    return [base + 8 * i for i in reversed(range(_SLOTS_PER_CHUNK))]


def lookup(handle: int) -> ConditionVariable:
    v = _vars.get(handle)
    if v is None:
        raise CudaError(E.INVALID_VALUE, f"{hex(handle)} is not a conditional handle from "
                                         "cuGraphConditionalHandleCreate")
    return v


@implements("cuGraphConditionalHandleCreate")
def handle_create(graph_handle: int, ctx_handle: int, default: int, flags: int) -> int:
    from cuport.driver import graph

    g = graph.lookup_graph(graph_handle)
    ctx = context.lookup(ctx_handle) if ctx_handle else context.current_or_none()
    if flags & ~K.CU_GRAPH_COND_ASSIGN_DEFAULT:
        raise CudaError(E.INVALID_VALUE, f"flags {flags:#x} are not CU_GRAPH_COND_* flags")
    with _lock:
        address, cell = _new_slot(ctx)
        v = ConditionVariable(g, default, flags, address, cell)
        v.value = default
        _vars[address] = v
    return v.handle


def forget_graph(g: Any) -> None:
    """The handles made for a destroyed graph can no longer name new nodes. Their cells
    stay: executable graphs (and clones) instantiated before may still use them."""
    with _lock:
        for address, v in list(_vars.items()):
            if v.graph is g:
                del _vars[address]


# -- the node --------------------------------------------------------------------------------

def _ancestors(g: Any):
    while g is not None:
        yield g
        g = g.owner.graph if g.owner is not None else None


def make_bodies(var: ConditionVariable, cond_type: int, size: int, parent: Any) -> tuple:
    """Check a CUDA_CONDITIONAL_NODE_PARAMS' handle, type and size; the empty body graphs."""
    from cuport.driver import graph

    if cond_type not in TYPE_NAMES:
        raise CudaError(E.INVALID_VALUE, f"conditional.type {cond_type} is not a "
                                         "CUgraphConditionalNodeType")
    limits = {K.CU_GRAPH_COND_TYPE_IF: (1, 2), K.CU_GRAPH_COND_TYPE_WHILE: (1, 1),
              K.CU_GRAPH_COND_TYPE_SWITCH: (1, 1 << 16)}
    lo, hi = limits[cond_type]
    if not lo <= size <= hi:
        raise CudaError(E.INVALID_VALUE, f"conditional.size {size} for a {TYPE_NAMES[cond_type]} "
                                         f"node must be {lo}" + (f"..{hi}" if hi != lo else ""))
    if parent is not None and var.graph not in list(_ancestors(parent)):
        raise CudaError(E.INVALID_VALUE, "the conditional handle was made for another graph")
    return tuple(graph.Graph() for _ in range(size))


def conditional_params(p, parent: Any) -> gn.Conditional:
    """A CUDA_CONDITIONAL_NODE_PARAMS: makes the body graphs and writes phGraph_out."""
    from cuport.driver import graph_nodes as gn

    var = lookup(int(p.handle))
    bodies = make_bodies(var, p.type, p.size, parent)
    if gn.handle_of(p.ctx):
        context.lookup(gn.handle_of(p.ctx))
    out = (ctypes.c_uint64 * len(bodies))(*(g.handle for g in bodies))
    from cuport.capi import types

    p.phGraph_out = types.ffi().cast("CUgraph *", ctypes.addressof(out))
    return gn.Conditional(var, p.type, bodies, out)
