"""The cuGraph*Node* calls: adding nodes of each kind, reading and setting their parameters.

Each call reads the program's C struct into a node parameter value (graph_nodes.py),
which checks it completely, as NVIDIA's driver does when a node is added or set; a
node's parameters are replaced, never changed in place, so clones and executable
graphs made earlier keep theirs.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

from cuport.capi import types
from cuport.driver import context, device, event, graph_conditional, launch
from cuport.driver import graph_nodes as gn
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E
from cuport.driver.graph import Graph, dependencies, lookup_graph, lookup_node, node_of

# -- adding nodes --------------------------------------------------------------------------

def _add(graph_handle: int, deps: int, count: int, make: Callable[[Graph], gn.Params],
         edges: int = 0) -> int:
    g = lookup_graph(graph_handle)
    dep_list = dependencies(g, deps, count, edges)
    return g.add(make(g), dep_list).handle


def _context(handle: int) -> context.Context:
    return context.resolve(handle)


@implements("cuGraphAddKernelNode")
def add_kernel_node(g: int, deps: int, n: int, params: int) -> int:
    return _add(g, deps, n, lambda _: gn.kernel_params(_struct(params, "CUDA_KERNEL_NODE_PARAMS_v1"),
                                                        False))


@implements("cuGraphAddKernelNode_v2")
def add_kernel_node_v2(g: int, deps: int, n: int, params: int) -> int:
    return _add(g, deps, n, lambda _: gn.kernel_params(_struct(params, "CUDA_KERNEL_NODE_PARAMS_v2"),
                                                        True))


@implements("cuGraphAddMemcpyNode")
def add_memcpy_node(g: int, deps: int, n: int, params: int, ctx: int) -> int:
    return _add(g, deps, n, lambda _: gn.memcpy_params(params, _context(ctx)))


@implements("cuGraphAddMemsetNode")
def add_memset_node(g: int, deps: int, n: int, params: int, ctx: int) -> int:
    return _add(g, deps, n, lambda _: gn.memset_params(_struct(params, "CUDA_MEMSET_NODE_PARAMS"),
                                                        _context(ctx)))


@implements("cuGraphAddHostNode")
def add_host_node(g: int, deps: int, n: int, params: int) -> int:
    return _add(g, deps, n, lambda _: gn.host_params(_struct(params, "CUDA_HOST_NODE_PARAMS")))


@implements("cuGraphAddChildGraphNode")
def add_child_graph_node(g: int, deps: int, n: int, child: int) -> int:
    def make(parent: Graph) -> gn.Params:
        return gn.Child(_child_copy(parent, child))
    return _add(g, deps, n, make)


def _child_copy(parent: Graph, child_handle: int, move: bool = False) -> Graph:
    child = lookup_graph(child_handle, "childGraph")
    if child is parent:
        raise CudaError(E.INVALID_VALUE, "a graph cannot be its own child")
    if any(isinstance(node.params, (gn.MemAlloc, gn.MemFree)) for node in child.nodes):
        raise CudaError(E.INVALID_VALUE, "a child graph cannot hold mem alloc or mem free nodes")
    if move:
        if child.owner is not None:
            raise CudaError(E.INVALID_VALUE, "childGraph already belongs to a node")
        return child
    return child.clone()


@implements("cuGraphAddEmptyNode")
def add_empty_node(g: int, deps: int, n: int) -> int:
    return _add(g, deps, n, lambda _: gn.Empty())


@implements("cuGraphAddEventRecordNode")
def add_event_record_node(g: int, deps: int, n: int, ev: int) -> int:
    return _add(g, deps, n, lambda _: gn.EventRecord(event.lookup(ev)))


@implements("cuGraphAddEventWaitNode")
def add_event_wait_node(g: int, deps: int, n: int, ev: int) -> int:
    return _add(g, deps, n, lambda _: gn.EventWait(event.lookup(ev)))


@implements("cuGraphAddMemAllocNode")
def add_mem_alloc_node(g: int, deps: int, n: int, params: int) -> int:
    graph = lookup_graph(g)
    dep_list = dependencies(graph, deps, n)
    made = gn.mem_alloc_params(_struct(params, "CUDA_MEM_ALLOC_NODE_PARAMS_v1"),
                               context.current(), [d for d, _ in dep_list])
    return graph.add(made, dep_list).handle


@implements("cuGraphAddMemFreeNode")
def add_mem_free_node(g: int, deps: int, n: int, dptr: int) -> int:
    return _add(g, deps, n, lambda _: gn.mem_free_params(dptr))


def _struct(address: int, ctype: str):
    if not address:
        raise CudaError(E.INVALID_VALUE, "nodeParams is NULL")
    return types.struct_at(address, ctype)


def generic_params(p, parent: Graph | None) -> gn.Params:
    """The parameters a CUgraphNodeParams describes (cuGraphAddNode, cuGraphNodeSetParams)."""
    t = p.type
    ffi = types.ffi()
    if t == K.CU_GRAPH_NODE_TYPE_KERNEL:
        return gn.kernel_params(p.kernel, True)
    if t == K.CU_GRAPH_NODE_TYPE_MEMCPY:
        if p.memcpy.flags != 0:
            raise CudaError(E.INVALID_VALUE, "memcpy.flags must be 0")
        ctx = gn.handle_of(p.memcpy.copyCtx)
        return gn.memcpy_params(int(ffi.cast("uintptr_t", ffi.addressof(p.memcpy, "copyParams"))),
                                _context(ctx))
    if t == K.CU_GRAPH_NODE_TYPE_MEMSET:
        return gn.memset_params(p.memset, _context(gn.handle_of(p.memset.ctx)))
    if t == K.CU_GRAPH_NODE_TYPE_HOST:
        return gn.host_params(p.host)
    if t == K.CU_GRAPH_NODE_TYPE_GRAPH:
        move = p.graph.ownership == K.CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE
        if p.graph.ownership not in (K.CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE,
                                     K.CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE):
            raise CudaError(E.INVALID_VALUE, f"graph.ownership {p.graph.ownership} is not a "
                                             "CUgraphChildGraphNodeOwnership")
        return gn.Child(_child_copy(parent, gn.handle_of(p.graph.graph), move))
    if t == K.CU_GRAPH_NODE_TYPE_EMPTY:
        return gn.Empty()
    if t == K.CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        return gn.EventWait(event.lookup(gn.handle_of(p.eventWait.event)))
    if t == K.CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        return gn.EventRecord(event.lookup(gn.handle_of(p.eventRecord.event)))
    if t == K.CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        return gn.mem_alloc_params(p.alloc, context.current())
    if t == K.CU_GRAPH_NODE_TYPE_MEM_FREE:
        return gn.mem_free_params(p.free.dptr)
    if t == K.CU_GRAPH_NODE_TYPE_CONDITIONAL:
        return graph_conditional.conditional_params(p.conditional, parent)
    if t in gn.UNSUPPORTED_KINDS:
        raise CudaError(E.NOT_SUPPORTED, f"{gn.UNSUPPORTED_KINDS[t]} are not supported by cuport")
    raise CudaError(E.INVALID_VALUE, f"nodeParams.type {t} is not a CUgraphNodeType")


@implements("cuGraphAddNode")
def add_node(g: int, deps: int, n: int, params: int) -> int:
    return add_node_v2(g, deps, 0, n, params)


@implements("cuGraphAddNode_v2")
def add_node_v2(g: int, deps: int, edges: int, n: int, params: int) -> int:
    return _add(g, deps, n, lambda parent: generic_params(_struct(params, "CUgraphNodeParams"),
                                                          parent), edges)


@implements("cuGraphNodeSetParams")
def node_set_params(node_handle: int, params: int) -> None:
    node = lookup_node(node_handle)
    p = _struct(params, "CUgraphNodeParams")
    if p.type != node.type:
        raise CudaError(E.INVALID_VALUE, f"nodeParams.type is {gn.kind_name(p.type)}, the node "
                                         f"is a {node.params.kind} node")
    if isinstance(node.params, (gn.MemAlloc, gn.MemFree)):
        raise CudaError(E.INVALID_VALUE, f"the parameters of {node.params.kind} nodes cannot "
                                         "be changed")
    node.graph.set_params(node, generic_params(p, node.graph))


# -- node parameters ----------------------------------------------------------------------

def _out(address: int, ctype: str):
    if not address:
        raise CudaError(E.INVALID_VALUE, "nodeParams is NULL")
    return types.struct_at(address, ctype)


@implements("cuGraphKernelNodeGetParams")
def kernel_node_get_params(handle: int, out: int) -> None:
    node_of(handle, gn.Kernel).params.write(_out(out, "CUDA_KERNEL_NODE_PARAMS_v1"), False)


@implements("cuGraphKernelNodeGetParams_v2")
def kernel_node_get_params_v2(handle: int, out: int) -> None:
    node_of(handle, gn.Kernel).params.write(_out(out, "CUDA_KERNEL_NODE_PARAMS_v2"), True)


def _keep_attrs(old: gn.Kernel, new: gn.Kernel) -> gn.Kernel:
    for attr, value in old.attrs:
        new = new.with_attribute(attr, value)
    return new


@implements("cuGraphKernelNodeSetParams")
def kernel_node_set_params(handle: int, params: int) -> None:
    node = node_of(handle, gn.Kernel)
    new = gn.kernel_params(_struct(params, "CUDA_KERNEL_NODE_PARAMS_v1"), False)
    node.graph.set_params(node, _keep_attrs(node.params, new))


@implements("cuGraphKernelNodeSetParams_v2")
def kernel_node_set_params_v2(handle: int, params: int) -> None:
    node = node_of(handle, gn.Kernel)
    new = gn.kernel_params(_struct(params, "CUDA_KERNEL_NODE_PARAMS_v2"), True)
    node.graph.set_params(node, _keep_attrs(node.params, new))


ATTR_VALUE = "CUkernelNodeAttrValue"


def _check_attribute(attr: int, value: bytes, subject: str) -> None:
    if attr not in launch.LAUNCH_ATTRIBUTES:
        raise CudaError(E.INVALID_VALUE, f"{attr} is not a CUkernelNodeAttrID", subject=subject)
    check = launch.LAUNCH_ATTRIBUTES[attr]
    if attr == K.CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
        if types.ffi().from_buffer(ATTR_VALUE + " *", bytearray(value)).deviceUpdatableKernelNode \
                .deviceUpdatable:
            raise CudaError(E.NOT_SUPPORTED, "device-updatable kernel nodes (updated from device "
                                             "code) are not supported by cuport", subject=subject)
    elif attr == K.CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        if types.ffi().from_buffer(ATTR_VALUE + " *", bytearray(value)).cooperative:
            raise CudaError(E.NOT_SUPPORTED, "cooperative kernel nodes are not supported by "
                                             "cuport (cooperative stream launches are)",
                            subject=subject)
    elif check is not None:
        check(types.ffi().from_buffer(ATTR_VALUE + " *", bytearray(value))[0])


@implements("cuGraphKernelNodeSetAttribute")
def kernel_node_set_attribute(handle: int, attr: int, value: int) -> None:
    node = node_of(handle, gn.Kernel)
    if not value:
        raise CudaError(E.INVALID_VALUE, "value is NULL")
    data = ctypes.string_at(value, types.sizeof(ATTR_VALUE))
    _check_attribute(attr, data, node.params.function.name)
    node.params = node.params.with_attribute(attr, data)


@implements("cuGraphKernelNodeGetAttribute")
def kernel_node_get_attribute(handle: int, attr: int, out: int) -> None:
    node = node_of(handle, gn.Kernel)
    if attr not in launch.LAUNCH_ATTRIBUTES:
        raise CudaError(E.INVALID_VALUE, f"{attr} is not a CUkernelNodeAttrID")
    if not out:
        raise CudaError(E.INVALID_VALUE, "value_out is NULL")
    value = dict(node.params.attrs).get(attr, bytes(types.sizeof(ATTR_VALUE)))
    ctypes.memmove(out, value, len(value))


@implements("cuGraphKernelNodeCopyAttributes")
def kernel_node_copy_attributes(dst: int, src: int) -> None:
    d, s = node_of(dst, gn.Kernel, "dst"), node_of(src, gn.Kernel, "src")
    params = gn.Kernel(d.params.function, d.params.grid, d.params.block, d.params.shared,
                       d.params.args, d.params.kern, s.params.attrs)
    d.params = params


@implements("cuGraphMemcpyNodeGetParams")
def memcpy_node_get_params(handle: int, out: int) -> None:
    params = node_of(handle, gn.Memcpy).params
    if not out:
        raise CudaError(E.INVALID_VALUE, "nodeParams is NULL")
    ctypes.memmove(out, params.desc, len(params.desc))


@implements("cuGraphMemcpyNodeSetParams")
def memcpy_node_set_params(handle: int, params: int) -> None:
    node = node_of(handle, gn.Memcpy)
    node.graph.set_params(node, gn.memcpy_params(params, node.params.context))


@implements("cuGraphMemsetNodeGetParams")
def memset_node_get_params(handle: int, out: int) -> None:
    node_of(handle, gn.Memset).params.write(_out(out, "CUDA_MEMSET_NODE_PARAMS"))


@implements("cuGraphMemsetNodeSetParams")
def memset_node_set_params(handle: int, params: int) -> None:
    node = node_of(handle, gn.Memset)
    node.graph.set_params(node, gn.memset_params(_struct(params, "CUDA_MEMSET_NODE_PARAMS"),
                                                 node.params.context))


@implements("cuGraphHostNodeGetParams")
def host_node_get_params(handle: int, out: int) -> None:
    node_of(handle, gn.Host).params.write(_out(out, "CUDA_HOST_NODE_PARAMS"))


@implements("cuGraphHostNodeSetParams")
def host_node_set_params(handle: int, params: int) -> None:
    node = node_of(handle, gn.Host)
    node.graph.set_params(node, gn.host_params(_struct(params, "CUDA_HOST_NODE_PARAMS")))


@implements("cuGraphChildGraphNodeGetGraph")
def child_graph_node_get_graph(handle: int) -> int:
    return node_of(handle, gn.Child).params.graph.handle


@implements("cuGraphEventRecordNodeGetEvent")
def event_record_node_get_event(handle: int) -> int:
    return node_of(handle, gn.EventRecord).params.event.handle


@implements("cuGraphEventRecordNodeSetEvent")
def event_record_node_set_event(handle: int, ev: int) -> None:
    node = node_of(handle, gn.EventRecord)
    node.params = gn.EventRecord(event.lookup(ev))


@implements("cuGraphEventWaitNodeGetEvent")
def event_wait_node_get_event(handle: int) -> int:
    return node_of(handle, gn.EventWait).params.event.handle


@implements("cuGraphEventWaitNodeSetEvent")
def event_wait_node_set_event(handle: int, ev: int) -> None:
    node = node_of(handle, gn.EventWait)
    node.params = gn.EventWait(event.lookup(ev))


@implements("cuGraphMemAllocNodeGetParams")
def mem_alloc_node_get_params(handle: int, out: int) -> None:
    params = node_of(handle, gn.MemAlloc).params
    if not out:
        raise CudaError(E.INVALID_VALUE, "params_out is NULL")
    ctypes.memmove(out, params.desc, len(params.desc))


@implements("cuGraphMemFreeNodeGetParams")
def mem_free_node_get_params(handle: int) -> int:
    return node_of(handle, gn.MemFree).params.dptr


# -- graph memory attributes ----------------------------------------------------------------

_MEM_ATTRIBUTES = {
    K.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT: gn.graph_memory_in_use,
    K.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: gn.graph_memory_high,
    K.CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT: gn.graph_memory_in_use,
    K.CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: gn.graph_memory_high,
}


@implements("cuDeviceGetGraphMemAttribute")
def get_graph_mem_attribute(dev: int, attr: int, value: int) -> None:
    device.get(dev)
    if attr not in _MEM_ATTRIBUTES or not value:
        raise CudaError(E.INVALID_VALUE, f"{attr} is not a CUgraphMem_attribute, or value is NULL")
    ctypes.c_uint64.from_address(value).value = _MEM_ATTRIBUTES[attr]()


@implements("cuDeviceSetGraphMemAttribute")
def set_graph_mem_attribute(dev: int, attr: int, value: int) -> None:
    device.get(dev)
    if attr not in (K.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, K.CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH):
        raise CudaError(E.INVALID_VALUE, "only the high watermarks can be set (reset to 0)")
    if not value or ctypes.c_uint64.from_address(value).value != 0:
        raise CudaError(E.INVALID_VALUE, "a high watermark can only be reset, to 0")
    gn.reset_graph_memory_high()


@implements("cuDeviceGraphMemTrim")
def graph_mem_trim(dev: int) -> None:
    device.get(dev)  # graph memory stays mapped while its graphs may run: nothing to trim
