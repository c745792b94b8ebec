"""CUDA graphs: nodes and dependency edges, built explicitly or by stream capture.

A graph (CUgraph) is a list of nodes in the order they were added; each node keeps its
dependencies in the order they were given, which is the "edge order" that
cuGraphExecUpdate pairs nodes by. Edges may carry CUgraphEdgeData (programmatic ports);
cuport keeps and reports it but runs every edge as a full dependency, which is always
a valid execution. Nothing checks for cycles until cuGraphInstantiate, as with
NVIDIA's driver.

A child graph node owns a copy of the graph it was given (cuGraphChildGraphNodeGetGraph
hands out that copy, which the program must not destroy). A graph holds references to
user objects (user_objects.py) until it is destroyed. Graph objects are not thread-safe
(NVIDIA's rule); only capture (capture.py) adds nodes from several threads, under its
own lock. Nodes are added, and their parameters read and set, in graph_params.py.

Handles of graphs and nodes are checked like other handles, but a bad one answers
CUDA_ERROR_INVALID_VALUE: the only error NVIDIA documents for these calls.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable
from typing import TYPE_CHECKING

from cuport.capi import types
from cuport.driver import graph_conditional, handles
from cuport.driver import graph_nodes as gn
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E

if TYPE_CHECKING:
    from cuport.driver.user_objects import UserObject

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
        for sub in gn.subgraphs(params):
            sub.owner = node
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
        graph_conditional.forget_graph(self)
        refs, self.user_refs = self.user_refs, {}
        for obj, count in refs.items():
            obj.release(count)

    def clone(self) -> Graph:
        new = Graph()
        for node in self.nodes:
            params = node.params
            subs = gn.subgraphs(params)
            if subs:
                params = gn.with_subgraphs(params, tuple(g.clone() for g in subs))
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
        for sub in gn.subgraphs(params):
            sub.owner = node
        node.params = params
        keep = gn.subgraphs(params)
        for sub in gn.subgraphs(old):
            if sub not in keep:
                sub.destroy()

    def all_user_refs(self) -> dict[UserObject, int]:
        """This graph's user-object references and those of its child graphs."""
        refs = dict(self.user_refs)
        for node in self.nodes:
            for sub in gn.subgraphs(node.params):
                for obj, count in sub.all_user_refs().items():
                    refs[obj] = refs.get(obj, 0) + count
        return refs


def _drop_node(node: Node) -> None:
    handles.drop(node.handle)
    for sub in gn.subgraphs(node.params):
        sub.destroy()


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

    capture.check_not_captured_into(g)
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


@implements("cuGraphDestroyNode")
def destroy_node(handle: int) -> None:
    node = lookup_node(handle)
    from cuport.driver import capture

    capture.check_not_captured_into(node.graph)
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


# -- DOT ----------------------------------------------------------------------------------------

def _dot_lines(g: Graph, prefix: str, lines: list[str], indent: str) -> None:
    for i, node in enumerate(g.nodes):
        name = f"{prefix}{i}"
        label = f"{i}: {node.params.label()}\\n{hex(node.handle)}"
        subs = gn.subgraphs(node.params)
        if subs:
            lines.append(f'{indent}subgraph "cluster_{name}" {{')
            lines.append(f'{indent}  label="{label}";')
            lines.append(f'{indent}  "{name}" [shape=point];')
            for j, sub in enumerate(subs):
                _dot_lines(sub, name + "_" + (f"{j}_" if len(subs) > 1 else ""), lines,
                           indent + "  ")
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
