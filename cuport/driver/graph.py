"""CUDA graphs: nodes and dependency edges, built explicitly or by stream capture.

A graph (CUgraph) is a list of nodes in the order they were added; each node keeps its
dependencies in the order they were given, which is the "edge order" that
cuGraphExecUpdate pairs nodes by. Edges may carry CUgraphEdgeData (programmatic ports);
cuport keeps and reports it but runs every edge as a full dependency, which is always
a valid execution. Nothing checks for cycles until cuGraphInstantiate, as with
NVIDIA's driver.

A child graph node owns a copy of the graph it was given (cuGraphChildGraphNodeGetGraph
hands out that copy, which the program must not destroy). User objects
(cuUserObjectCreate) are reference-counted; a graph holds references until it is
destroyed, an executable graph until its last launch is done. Graph objects are not
thread-safe (NVIDIA's rule); only capture (capture.py) adds nodes from several threads,
under its own lock.

Handles of graphs and nodes are checked like other handles, but a bad one answers
CUDA_ERROR_INVALID_VALUE: the only error NVIDIA documents for these calls.
"""

from __future__ import annotations

import ctypes
import queue
import threading
from collections.abc import Callable, Iterable

from cuport.capi import types
from cuport.driver import context, device, event, handles, launch
from cuport.driver import graph_nodes as gn
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E

EDGE_BYTES = 8  # sizeof(CUgraphEdgeData)
DEFAULT_EDGE = bytes(EDGE_BYTES)


class Node:
    def __init__(self, graph: Graph, params: gn.Params) -> None:
        self.graph = graph
        self.params = params
        self.deps: list[Node] = []
        self.dependents: list[Node] = []
        self.handle = handles.new(self)

    @property
    def type(self) -> int:
        return self.params.type

    def describe(self) -> str:
        return f"{self.params.kind} node {hex(self.handle)}"


class Graph:
    def __init__(self, owner: Node | None = None) -> None:
        self.nodes: list[Node] = []
        self.edge_data: dict[tuple[Node, Node], bytes] = {}  # non-default edges only
        self.user_refs: dict[UserObject, int] = {}
        self.owner = owner  # the child graph node that owns this graph
        self.clone_of: dict[Node, Node] = {}  # original node -> its clone here
        self.handle = handles.new(self)

    # -- structure ---------------------------------------------------------------------

    def add(self, params: gn.Params, deps: Iterable[tuple[Node, bytes]] = ()) -> Node:
        node = Node(self, params)
        if isinstance(params, gn.Child):
            params.graph.owner = node
        self.nodes.append(node)
        for dep, data in deps:
            self.connect(dep, node, data)
        return node

    def connect(self, a: Node, b: Node, data: bytes = DEFAULT_EDGE) -> None:
        a.dependents.append(b)
        b.deps.append(a)
        if data != DEFAULT_EDGE:
            self.edge_data[(a, b)] = data

    def disconnect(self, a: Node, b: Node) -> None:
        a.dependents.remove(b)
        b.deps.remove(a)
        self.edge_data.pop((a, b), None)

    def edge(self, a: Node, b: Node) -> bytes:
        return self.edge_data.get((a, b), DEFAULT_EDGE)

    def remove(self, node: Node) -> None:
        for d in list(node.deps):
            self.disconnect(d, node)
        for d in list(node.dependents):
            self.disconnect(node, d)
        self.nodes.remove(node)
        _drop_node(node)

    def destroy(self) -> None:
        for node in self.nodes:
            _drop_node(node)
        self.nodes = []
        handles.drop(self.handle)
        refs, self.user_refs = self.user_refs, {}
        for obj, count in refs.items():
            obj.release(count)

    def clone(self) -> Graph:
        new = Graph()
        for node in self.nodes:
            params = node.params
            if isinstance(params, gn.Child):
                params = gn.Child(params.graph.clone())
            new.clone_of[node] = new.add(params)
        for node in self.nodes:
            for dep in node.deps:
                new.connect(new.clone_of[dep], new.clone_of[node], self.edge(dep, node))
        for obj, count in self.user_refs.items():
            obj.retain(count)
            new.user_refs[obj] = count
        return new

    def set_params(self, node: Node, params: gn.Params) -> None:
        old = node.params
        if isinstance(params, gn.Child):
            params.graph.owner = node
        node.params = params
        if isinstance(old, gn.Child) and old.graph is not getattr(params, "graph", None):
            old.graph.destroy()

    def all_user_refs(self) -> dict[UserObject, int]:
        """This graph's user-object references and those of its child graphs."""
        refs = dict(self.user_refs)
        for node in self.nodes:
            if isinstance(node.params, gn.Child):
                for obj, count in node.params.graph.all_user_refs().items():
                    refs[obj] = refs.get(obj, 0) + count
        return refs


def _drop_node(node: Node) -> None:
    handles.drop(node.handle)
    if isinstance(node.params, gn.Child):
        node.params.graph.destroy()


def lookup_graph(handle: int, what: str = "hGraph") -> Graph:
    return handles.lookup(handle, Graph, what, E.INVALID_VALUE)


def lookup_node(handle: int, what: str = "hNode") -> Node:
    node = handles.lookup(handle, Node, what, E.INVALID_VALUE)
    return node


def node_of(handle: int, kind: type[gn.Params], what: str = "hNode") -> Node:
    node = lookup_node(handle, what)
    if not isinstance(node.params, kind):
        raise CudaError(E.INVALID_VALUE, f"{what} {hex(handle)} is a {node.params.kind} node, "
                                         f"not a {kind.kind} node")
    return node


def read_edges(address: int, count: int) -> list[bytes]:
    if not address:
        return [DEFAULT_EDGE] * count
    data = [ctypes.string_at(address + EDGE_BYTES * i, EDGE_BYTES) for i in range(count)]
    for i, d in enumerate(data):
        if d[1] != 0:
            raise CudaError(E.INVALID_VALUE, f"edgeData[{i}].to_port is {d[1]}: no node kind "
                                             "defines incoming ports")
        if d[2] not in (K.CU_GRAPH_DEPENDENCY_TYPE_DEFAULT, K.CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC):
            raise CudaError(E.INVALID_VALUE, f"edgeData[{i}].type {d[2]} is not a "
                                             "CUgraphDependencyType")
    return data


def read_nodes(address: int, count: int, what: str) -> list[Node]:
    if count and not address:
        raise CudaError(E.INVALID_VALUE, f"{what} is NULL but {count} nodes are counted")
    return [lookup_node(h, f"{what}[{i}]")
            for i, h in enumerate(types.read_pointers(address, count))]


def dependencies(g: Graph, address: int, count: int, edges: int = 0,
                 what: str = "dependencies") -> list[tuple[Node, bytes]]:
    """The dependency list of a new node: nodes of g, each once, with their edge data."""
    nodes = read_nodes(address, count, what)
    seen: set[Node] = set()
    for i, n in enumerate(nodes):
        if n.graph is not g:
            raise CudaError(E.INVALID_VALUE, f"{what}[{i}] is a node of another graph")
        if n in seen:
            raise CudaError(E.INVALID_VALUE, f"{what}[{i}] appears twice")
        seen.add(n)
    return list(zip(nodes, read_edges(edges, count), strict=True))


def write_nodes(nodes: list[Node], array: int, count_ptr: int, what: str,
                edges: list[bytes] | None = None, edge_array: int = 0) -> None:
    """NVIDIA's array protocol: NULL array -> the count; else up to *count entries, the rest
    of the array NULL, and *count the number written."""
    if not count_ptr:
        raise CudaError(E.INVALID_VALUE, f"num{what} is NULL")
    count = ctypes.c_size_t.from_address(count_ptr)
    if not array:
        if edge_array:
            raise CudaError(E.INVALID_VALUE, f"edgeData is given but {what} is NULL")
        count.value = len(nodes)
        return
    capacity = count.value
    slots = (ctypes.c_uint64 * capacity).from_address(array) if capacity else []
    for i in range(capacity):
        slots[i] = nodes[i].handle if i < len(nodes) else 0
    if edge_array:
        for i in range(min(capacity, len(nodes))):
            ctypes.memmove(edge_array + EDGE_BYTES * i, (edges or [])[i], EDGE_BYTES)
    count.value = min(capacity, len(nodes))


def _lossless(edges: list[bytes], edge_array: int) -> None:
    if not edge_array and any(e != DEFAULT_EDGE for e in edges):
        raise CudaError(E.LOSSY_QUERY, "some edges carry edge data: use the _v2 call with an "
                                       "edgeData array")


# -- graphs ------------------------------------------------------------------------------

@implements("cuGraphCreate")
def create(flags: int) -> int:
    if flags != 0:
        raise CudaError(E.INVALID_VALUE, "flags must be 0")
    return Graph().handle


@implements("cuGraphDestroy")
def destroy(handle: int) -> None:
    g = lookup_graph(handle)
    if g.owner is not None:
        raise CudaError(E.INVALID_VALUE, f"graph {hex(handle)} belongs to child graph node "
                                         f"{hex(g.owner.handle)}; destroy that node instead")
    from cuport.driver import capture

    capture.check_graph_destroy(g)
    g.destroy()


@implements("cuGraphClone")
def clone(handle: int) -> int:
    return lookup_graph(handle, "originalGraph").clone().handle


@implements("cuGraphNodeFindInClone")
def find_in_clone(node_handle: int, graph_handle: int) -> int:
    node = lookup_node(node_handle, "hOriginalNode")
    g = lookup_graph(graph_handle, "hClonedGraph")
    found = g.clone_of.get(node)
    if found is None or handles.peek(found.handle) is not found:
        raise CudaError(E.INVALID_VALUE, f"hClonedGraph is no clone of the graph of node "
                                         f"{hex(node_handle)}, or its copy was destroyed")
    return found.handle


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
    return _add(g, deps, n, lambda _: gn.mem_alloc_params(
        _struct(params, "CUDA_MEM_ALLOC_NODE_PARAMS_v1"), context.current()))


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


@implements("cuGraphDestroyNode")
def destroy_node(handle: int) -> None:
    node = lookup_node(handle)
    from cuport.driver import capture

    capture.check_graph_destroy(node.graph)
    node.graph.remove(node)


# -- edges and queries ------------------------------------------------------------------

def _edge_pairs(g: Graph, src: int, dst: int, n: int) -> list[tuple[Node, Node]]:
    froms, tos = read_nodes(src, n, "from"), read_nodes(dst, n, "to")
    for i, (a, b) in enumerate(zip(froms, tos, strict=True)):
        if a.graph is not g or b.graph is not g:
            raise CudaError(E.INVALID_VALUE, f"edge {i}: a node of another graph")
        if a is b:
            raise CudaError(E.INVALID_VALUE, f"edge {i}: a node cannot depend on itself")
    return list(zip(froms, tos, strict=True))


@implements("cuGraphAddDependencies")
def add_dependencies(g: int, src: int, dst: int, n: int) -> None:
    add_dependencies_v2(g, src, dst, 0, n)


@implements("cuGraphAddDependencies_v2")
def add_dependencies_v2(handle: int, src: int, dst: int, edges: int, n: int) -> None:
    g = lookup_graph(handle)
    pairs = _edge_pairs(g, src, dst, n)
    data = read_edges(edges, n)
    for i, (a, b) in enumerate(pairs):
        if a in b.deps or (a, b) in pairs[:i]:
            raise CudaError(E.INVALID_VALUE, f"edge {i} ({a.describe()} -> {b.describe()}) "
                                             "already exists")
    for (a, b), d in zip(pairs, data, strict=True):
        g.connect(a, b, d)


@implements("cuGraphRemoveDependencies")
def remove_dependencies(g: int, src: int, dst: int, n: int) -> None:
    remove_dependencies_v2(g, src, dst, 0, n)


@implements("cuGraphRemoveDependencies_v2")
def remove_dependencies_v2(handle: int, src: int, dst: int, edges: int, n: int) -> None:
    g = lookup_graph(handle)
    pairs = _edge_pairs(g, src, dst, n)
    data = read_edges(edges, n)
    for i, ((a, b), d) in enumerate(zip(pairs, data, strict=True)):
        if a not in b.deps:
            raise CudaError(E.INVALID_VALUE, f"edge {i} ({a.describe()} -> {b.describe()}) does "
                                             "not exist")
        if edges and g.edge(a, b) != d:
            raise CudaError(E.INVALID_VALUE, f"edge {i} exists with other edge data")
    for a, b in pairs:
        g.disconnect(a, b)


@implements("cuGraphGetNodes")
def get_nodes(handle: int, array: int, count: int) -> None:
    write_nodes(lookup_graph(handle).nodes, array, count, "Nodes")


@implements("cuGraphGetRootNodes")
def get_root_nodes(handle: int, array: int, count: int) -> None:
    g = lookup_graph(handle)
    write_nodes([n for n in g.nodes if not n.deps], array, count, "RootNodes")


def _edges(g: Graph) -> list[tuple[Node, Node]]:
    return [(d, n) for n in g.nodes for d in n.deps]


@implements("cuGraphGetEdges")
def get_edges(handle: int, src: int, dst: int, count: int) -> None:
    get_edges_v2(handle, src, dst, 0, count)


@implements("cuGraphGetEdges_v2")
def get_edges_v2(handle: int, src: int, dst: int, edge_array: int, count_ptr: int) -> None:
    g = lookup_graph(handle)
    if bool(src) != bool(dst):
        raise CudaError(E.INVALID_VALUE, "from and to must both be NULL or both be arrays")
    edges = _edges(g)
    data = [g.edge(a, b) for a, b in edges]
    if src:
        _lossless(data, edge_array)
    write_nodes([a for a, _ in edges], src, count_ptr, "Edges", data, edge_array)
    if dst:
        capacity = ctypes.c_size_t.from_address(count_ptr).value
        slots = (ctypes.c_uint64 * capacity).from_address(dst) if capacity else []
        for i in range(capacity):
            slots[i] = edges[i][1].handle if i < len(edges) else 0


@implements("cuGraphNodeGetType")
def node_get_type(handle: int) -> int:
    return lookup_node(handle).type


@implements("cuGraphNodeGetDependencies")
def node_get_dependencies(handle: int, array: int, count: int) -> None:
    node_get_dependencies_v2(handle, array, 0, count)


@implements("cuGraphNodeGetDependencies_v2")
def node_get_dependencies_v2(handle: int, array: int, edge_array: int, count: int) -> None:
    node = lookup_node(handle)
    data = [node.graph.edge(d, node) for d in node.deps]
    if array:
        _lossless(data, edge_array)
    write_nodes(node.deps, array, count, "Dependencies", data, edge_array)


@implements("cuGraphNodeGetDependentNodes")
def node_get_dependent_nodes(handle: int, array: int, count: int) -> None:
    node_get_dependent_nodes_v2(handle, array, 0, count)


@implements("cuGraphNodeGetDependentNodes_v2")
def node_get_dependent_nodes_v2(handle: int, array: int, edge_array: int, count: int) -> None:
    node = lookup_node(handle)
    data = [node.graph.edge(node, d) for d in node.dependents]
    if array:
        _lossless(data, edge_array)
    write_nodes(node.dependents, array, count, "DependentNodes", data, edge_array)


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


@implements("cuGraphConditionalHandleCreate")
def conditional_handle_create(g: int, ctx: int, default: int, flags: int) -> int:
    lookup_graph(g)
    raise CudaError(E.NOT_SUPPORTED, "conditional graph nodes (cudaGraphConditionalHandleCreate, "
                                     "cudaGraphSetConditional in device code) are not supported "
                                     "by cuport")


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


# -- DOT ----------------------------------------------------------------------------------------

def _dot_lines(g: Graph, prefix: str, lines: list[str], indent: str) -> None:
    for i, node in enumerate(g.nodes):
        name = f"{prefix}{i}"
        label = f"{i}: {node.params.label()}\\n{hex(node.handle)}"
        if isinstance(node.params, gn.Child):
            lines.append(f'{indent}subgraph "cluster_{name}" {{')
            lines.append(f'{indent}  label="{label}";')
            lines.append(f'{indent}  "{name}" [shape=point];')
            _dot_lines(node.params.graph, name + "_", lines, indent + "  ")
            lines.append(f"{indent}}}")
        else:
            shape = "box" if isinstance(node.params, gn.Kernel) else "ellipse"
            lines.append(f'{indent}"{name}" [shape={shape} label="{label}"];')
    index = {node: i for i, node in enumerate(g.nodes)}
    for node in g.nodes:
        for dep in node.deps:
            style = "" if g.edge(dep, node) == DEFAULT_EDGE else " [style=dashed]"
            lines.append(f'{indent}"{prefix}{index[dep]}" -> "{prefix}{index[node]}"{style};')


@implements("cuGraphDebugDotPrint")
def debug_dot_print(handle: int, path: str | None, flags: int) -> None:
    g = lookup_graph(handle)
    if path is None:
        raise CudaError(E.INVALID_VALUE, "path is NULL")
    lines = [f'digraph "cuport graph {hex(handle)}" {{', "  compound=true;"]
    _dot_lines(g, "n", lines, "  ")
    lines.append("}")
    try:
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
    except OSError as e:
        raise CudaError(E.OPERATING_SYSTEM, f"cannot write {path}: {e.strerror}") from None


# -- user objects -------------------------------------------------------------------------------

_destructors: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
_destructor_thread: list[threading.Thread] = []


def later(fn: Callable[[], None]) -> None:
    """Run fn on the driver's destructor thread (user-object destructors are asynchronous)."""
    if not _destructor_thread:
        def drain() -> None:
            while True:
                _destructors.get()()
        t = threading.Thread(target=drain, daemon=True, name="cuport-user-objects")
        _destructor_thread.append(t)
        t.start()
    _destructors.put(fn)


class UserObject:
    def __init__(self, ptr: int, destroy_fn: int, count: int) -> None:
        self.ptr = ptr
        self.destroy = destroy_fn
        self.refs = count
        self.lock = threading.Lock()
        self.handle = handles.new(self)

    def retain(self, count: int) -> None:
        with self.lock:
            self.refs += count

    def release(self, count: int) -> None:
        with self.lock:
            if count > self.refs:
                raise CudaError(E.INVALID_VALUE, f"{count} references released, {self.refs} held")
            self.refs -= count
            dead = self.refs == 0
        if dead:
            handles.drop(self.handle)
            call = types.c_function(self.destroy, "CUhostFn")
            ptr = types.ffi().cast("void *", self.ptr)
            later(lambda: call(ptr))


def lookup_user_object(handle: int) -> UserObject:
    return handles.lookup(handle, UserObject, "object", E.INVALID_VALUE)


def _count(count: int) -> int:
    if not 0 < count <= 0x7FFFFFFF:
        raise CudaError(E.INVALID_VALUE, f"count {count} must be 1..INT_MAX")
    return count


@implements("cuUserObjectCreate")
def user_object_create(ptr: int, destroy_fn: int, initial: int, flags: int) -> int:
    if flags != K.CU_USER_OBJECT_NO_DESTRUCTOR_SYNC:
        raise CudaError(E.INVALID_VALUE, "flags must be CU_USER_OBJECT_NO_DESTRUCTOR_SYNC "
                                         "(cudaUserObjectNoDestructorSync)")
    if not destroy_fn:
        raise CudaError(E.INVALID_VALUE, "destroy is NULL")
    return UserObject(ptr, destroy_fn, _count(initial)).handle


@implements("cuUserObjectRetain")
def user_object_retain(handle: int, count: int) -> None:
    lookup_user_object(handle).retain(_count(count))


@implements("cuUserObjectRelease")
def user_object_release(handle: int, count: int) -> None:
    lookup_user_object(handle).release(_count(count))


@implements("cuGraphRetainUserObject")
def graph_retain_user_object(g: int, handle: int, count: int, flags: int) -> None:
    graph = lookup_graph(g, "graph")
    obj = lookup_user_object(handle)
    if flags not in (0, K.CU_GRAPH_USER_OBJECT_MOVE):
        raise CudaError(E.INVALID_VALUE, f"flags {flags:#x} are not CUuserObjectRetain_flags")
    _count(count)
    if not flags:  # CU_GRAPH_USER_OBJECT_MOVE takes over the caller's references instead
        obj.retain(count)
    graph.user_refs[obj] = graph.user_refs.get(obj, 0) + count


@implements("cuGraphReleaseUserObject")
def graph_release_user_object(g: int, handle: int, count: int) -> None:
    graph = lookup_graph(g, "graph")
    obj = lookup_user_object(handle)
    held = graph.user_refs.get(obj, 0)
    if _count(count) > held:
        raise CudaError(E.INVALID_VALUE, f"the graph holds {held} references to the object, "
                                         f"{count} released")
    if held == count:
        del graph.user_refs[obj]
    else:
        graph.user_refs[obj] = held - count
    obj.release(count)
