"""Executable graphs: instantiation, launch into a stream, and updates in place.

cuGraphInstantiate takes a snapshot of a graph: its nodes in a topological order
(ready nodes in the order they were added, so a run is deterministic), each with the
parameters the graph node had then. Later changes to the graph do not reach the
executable graph; cuGraphExec*SetParams and cuGraphExecUpdate change the snapshot.
A cycle, a kernel that is no longer loaded or that cuport cannot compile fails here.

cuGraphLaunch queues one operation on the stream that runs the nodes in that order
(each kernel itself on all cores), so it is asynchronous and stream-ordered like any
work; launches of one executable graph run one after the other, as on NVIDIA's
driver. Event record nodes take effect for waiters when the launch is queued and
complete when the node runs; event wait nodes wait for the event's record as of the
launch (an event recorded by the same launch would otherwise wait on itself).
"""

from __future__ import annotations

import ctypes
import heapq
import threading
import time

from cuport.capi import types
from cuport.driver import context, event, graph, graph_params, handles, stream, user_objects
from cuport.driver import graph_nodes as gn
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E, from_exception

FLAGS = (K.CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | K.CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD
         | K.CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH
         | K.CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)
ENABLEABLE = (gn.Kernel, gn.Memcpy, gn.Memset)  # what cuGraphNodeSetEnabled may switch off


class ExecNode:
    __slots__ = ("node", "params", "deps", "dependents", "enabled", "child", "bodies")

    def __init__(self, node: graph.Node, deps: list[ExecNode]) -> None:
        self.node = node  # the graph's node: how the program names this one
        self.params = node.params
        self.deps = deps
        self.dependents: list[ExecNode] = []
        self.enabled = True
        self.child = plan(node.params.graph) if isinstance(node.params, gn.Child) else None
        # a conditional node's body graphs, instantiated with it
        self.bodies = [plan(b) for b in node.params.bodies] \
            if isinstance(node.params, gn.Conditional) else None
        for d in deps:
            d.dependents.append(self)


class Plan:
    """One graph level: nodes in run order, and by the node they were made from."""

    def __init__(self, added: list[ExecNode], order: list[ExecNode]) -> None:
        self.added = added  # in the graph's order of addition
        self.order = order  # topological: the run order
        self.by_node = {en.node: en for en in added}

    def walk(self):
        for en in self.order:
            yield en
            if en.child is not None:
                yield from en.child.walk()
            for body in en.bodies or ():
                yield from body.walk()


class InstantiateError(CudaError):
    def __init__(self, code: int, message: str, node: graph.Node | None, result: int) -> None:
        super().__init__(code, message)
        self.node = node
        self.result = result


def topological(g: graph.Graph) -> list[graph.Node]:
    """Kahn's algorithm, ready nodes in order of addition; a cycle is an InstantiateError."""
    index = {n: i for i, n in enumerate(g.nodes)}
    waiting = {n: len(n.deps) for n in g.nodes}
    ready = [i for i, n in enumerate(g.nodes) if not n.deps]
    heapq.heapify(ready)
    order = []
    while ready:
        n = g.nodes[heapq.heappop(ready)]
        order.append(n)
        for d in n.dependents:
            waiting[d] -= 1
            if waiting[d] == 0:
                heapq.heappush(ready, index[d])
    if len(order) < len(g.nodes):
        stuck = next(n for n in g.nodes if waiting[n] > 0)
        raise InstantiateError(E.INVALID_VALUE, f"the graph has a cycle through {stuck.describe()}",
                               stuck, K.CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE)
    return order


def plan(g: graph.Graph) -> Plan:
    order = topological(g)
    made: dict[graph.Node, ExecNode] = {}
    for n in order:
        made[n] = ExecNode(n, [made[d] for d in n.deps])
    return Plan([made[n] for n in g.nodes], [made[n] for n in order])


def _check_kernel(params: gn.Params, node: graph.Node | None) -> None:
    if not isinstance(params, gn.Kernel):
        return
    f = params.function
    if handles.peek(f.handle) is not f:
        raise InstantiateError(E.INVALID_VALUE, f"kernel {f.name} of {node.describe() if node else 'a node'} "
                               "was unloaded", node, K.CUDA_GRAPH_INSTANTIATE_ERROR)
    try:
        params.prepare()
    except CudaError as e:
        raise InstantiateError(e.code, e.message, node, K.CUDA_GRAPH_INSTANTIATE_ERROR) from None


class Exec:
    def __init__(self, g: graph.Graph, flags: int, ctx: context.Context) -> None:
        if flags & ~FLAGS:
            raise InstantiateError(E.INVALID_VALUE, f"flags {flags:#x} are not "
                                   "CUgraphInstantiate_flags", None, K.CUDA_GRAPH_INSTANTIATE_ERROR)
        self.plan = plan(g)
        for en in self.plan.walk():
            _check_kernel(en.params, en.node)
        self.flags = flags
        self.context = ctx
        self.last: stream.Op | None = None
        self.lock = threading.Lock()
        self.user_refs = g.all_user_refs()
        for obj, count in self.user_refs.items():
            obj.retain(count)
        self.handle = handles.new(self)

    def as_graph(self) -> graph.Graph:
        """A graph with this executable graph's nodes (a launch captured into a stream)."""
        return _graph_of(self.plan)


def _graph_of(p: Plan) -> graph.Graph:
    g = graph.Graph()
    made: dict[ExecNode, graph.Node] = {}
    for en in p.added:
        params = gn.Child(_graph_of(en.child)) if en.child is not None else en.params
        if en.bodies is not None:
            params = gn.with_subgraphs(en.params, tuple(_graph_of(b) for b in en.bodies))
        if not en.enabled:
            params = gn.Empty()
        made[en] = g.add(params)
    for en in p.added:
        for d in en.deps:
            g.connect(made[d], made[en], en.node.graph.edge(d.node, en.node))
    return g


def lookup(handle: int, what: str = "hGraphExec") -> Exec:
    return handles.lookup(handle, Exec, what, E.INVALID_VALUE)


# -- instantiation ------------------------------------------------------------------------

def _instantiate(graph_handle: int, flags: int) -> Exec:
    g = graph.lookup_graph(graph_handle)
    from cuport.driver import capture

    capture.check_not_captured_into(g, "still ")
    return Exec(g, flags, context.current())


@implements("cuGraphInstantiate", "cuGraphInstantiate_v2", optional_outs=("phErrorNode",))
def instantiate(graph_handle: int, log: int, log_size: int) -> tuple[int, int]:
    try:
        return _instantiate(graph_handle, 0).handle, 0
    except InstantiateError as e:
        if log and log_size:
            text = e.message.encode()[:log_size - 1] + b"\0"
            ctypes.memmove(log, text, len(text))
        raise CudaError(e.code, e.message, outs=(0, e.node.handle if e.node else 0)) from None


@implements("cuGraphInstantiateWithFlags")
def instantiate_with_flags(graph_handle: int, flags: int) -> int:
    return _instantiate(graph_handle, flags).handle


@implements("cuGraphInstantiateWithParams", "cuGraphInstantiateWithParams_ptsz")
def instantiate_with_params(graph_handle: int, params: int) -> int:
    if not params:
        raise CudaError(E.INVALID_VALUE, "instantiateParams is NULL")
    p = types.struct_at(params, "CUDA_GRAPH_INSTANTIATE_PARAMS")
    ffi = types.ffi()
    try:
        if p.flags & K.CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD:
            stream.resolve(gn.handle_of(p.hUploadStream))  # uploading is nothing on the CPU
        x = _instantiate(graph_handle, p.flags)
    except InstantiateError as e:
        p.hErrNode_out = ffi.cast("CUgraphNode", e.node.handle if e.node else 0)
        p.result_out = e.result
        raise CudaError(e.code, e.message) from None
    p.hErrNode_out = ffi.NULL
    p.result_out = K.CUDA_GRAPH_INSTANTIATE_SUCCESS
    return x.handle


@implements("cuGraphExecDestroy")
def destroy(handle: int) -> None:
    x = lookup(handle)
    handles.drop(handle)
    last, refs = x.last, x.user_refs
    if refs:
        def release() -> None:
            if last is not None:
                last.done.wait()
            for obj, count in refs.items():
                obj.release(count)
        user_objects.later(release)


@implements("cuGraphExecGetFlags")
def get_flags(handle: int) -> int:
    return lookup(handle).flags


# -- launch -----------------------------------------------------------------------------------

Step = tuple  # (exec node, its parameters as of the launch, the child graph's steps, or
#               a conditional node's list of each body's steps)


def _steps(p: Plan) -> list[Step]:
    """What a launch runs: taken when it is queued, so later changes do not reach it."""
    out = []
    for en in p.order:
        if not en.enabled:
            continue
        if en.bodies is not None:
            out.append((en, en.params, [_steps(b) for b in en.bodies]))
        else:
            out.append((en, en.params, _steps(en.child) if en.child is not None else None))
    return out


def _walk(steps: list[Step]):
    for step in steps:
        yield step
        if isinstance(step[1], gn.Conditional):
            for body in step[2]:
                yield from _walk(body)
        elif step[2] is not None:
            yield from _walk(step[2])


def _run_conditional(params: gn.Conditional, bodies: list[list[Step]], records, waits) -> None:
    if params.cond_type == K.CU_GRAPH_COND_TYPE_WHILE:
        while params.var.value:
            _run(bodies[0], records, waits)
        return
    chosen = params.choose()
    if chosen is not None:
        _run(bodies[chosen], records, waits)


def _run(steps: list[Step], records: dict[ExecNode, stream.Op],
         waits: dict[ExecNode, stream.Op]) -> None:
    for en, params, child in steps:
        if isinstance(params, gn.Conditional):
            _run_conditional(params, child, records, waits)
        elif child is not None:
            _run(child, records, waits)
        elif isinstance(params, gn.EventRecord):
            op = records[en]
            if params.event.op is op:
                params.event.time = time.perf_counter()
            op.done.set()
        elif isinstance(params, gn.EventWait):
            op = waits.get(en)
            if op is not None:
                op.done.wait()
        else:
            try:
                params.run()
            except Exception as e:  # named after the node that failed, as a launch is
                err = e if isinstance(e, CudaError) else from_exception(e, "cuGraphLaunch")
                if err.subject is None:
                    err.subject = params.function.name if isinstance(params, gn.Kernel) else \
                        en.node.describe()
                raise err from None


def _modules(steps: list[Step]) -> list:
    """The modules of the launch's kernels, which must still be loaded."""
    modules = []
    for en, params, _ in _walk(steps):
        if isinstance(params, gn.Kernel):
            f = params.function
            if handles.peek(f.handle) is not f:
                raise CudaError(E.INVALID_VALUE, f"kernel {f.name} of {en.node.describe()} was "
                                                 "unloaded after the graph was instantiated")
            modules.append(f.module)
    return modules


@implements("cuGraphLaunch", "cuGraphLaunch_ptsz")
def launch(handle: int, stream_handle: int) -> None:
    x = lookup(handle)
    s = stream.resolve(stream_handle)
    with x.lock:
        steps = _steps(x.plan)
    modules = _modules(steps)
    if s.capture is not None:  # a launch into a capturing stream records the graph as a child
        from cuport.driver import capture

        capture.add(s, gn.Child(x.as_graph()), "cuGraphLaunch")
        return
    waits = {en: params.event.op for en, params, _ in _walk(steps)
             if isinstance(params, gn.EventWait) and params.event.op is not None}
    records: dict[ExecNode, stream.Op] = {}
    for en, params, _ in _walk(steps):
        if isinstance(params, gn.EventRecord):
            e = params.event
            records[en] = op = stream.Op(lambda: None, [], "event record node")
            e.op, e.time, e.captured = op, None, None
    for m in modules:
        m.launch_started()

    def finish() -> None:
        for op in records.values():
            op.done.set()
        for m in modules:
            m.launch_finished()

    conditions = {params.var for _, params, _ in _walk(steps)
                  if isinstance(params, gn.Conditional)}

    def run() -> None:
        try:
            for var in conditions:  # CU_GRAPH_COND_ASSIGN_DEFAULT: the default first
                var.launch_starts()
            _run(steps, records, waits)
        finally:
            finish()

    with x.lock:
        try:
            x.last = stream.submit(s, run, "cuGraphLaunch", extra=[x.last] if x.last else None)
        except BaseException:
            finish()
            raise


@implements("cuGraphUpload", "cuGraphUpload_ptsz")
def upload(handle: int, stream_handle: int) -> None:
    lookup(handle)
    stream.resolve(stream_handle)  # the CPU needs no upload


# -- updates ----------------------------------------------------------------------------------

class UpdateError(Exception):
    def __init__(self, result: int, message: str, node: graph.Node | None = None,
                 from_node: graph.Node | None = None) -> None:
        super().__init__(message)
        self.result, self.message, self.node, self.from_node = result, message, node, from_node


def pair(p: Plan, g: graph.Graph) -> list[tuple[ExecNode, graph.Node]]:
    """NVIDIA's pairing of g's nodes with an instantiated graph's: exit nodes in order, then
    dependencies in edge order; raises UpdateError where the topology differs."""
    topology = K.CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED
    if len(p.added) != len(g.nodes):
        raise UpdateError(topology, f"the graph has {len(g.nodes)} nodes, the executable "
                                    f"graph {len(p.added)}")
    old_exits = [en for en in p.added if not en.dependents]
    new_exits = [n for n in g.nodes if not n.dependents]
    if len(new_exits) != len(old_exits):
        extra = new_exits[len(old_exits)] if len(new_exits) > len(old_exits) else None
        raise UpdateError(topology, f"the graph has {len(new_exits)} exit nodes, the "
                                    f"executable graph {len(old_exits)}", extra)
    to_old: dict[graph.Node, ExecNode] = {}
    to_new: dict[ExecNode, graph.Node] = {}
    todo = list(zip(old_exits, new_exits, strict=True))
    for o, n in todo:
        to_old[n], to_new[o] = o, n
    while todo:
        o, n = todo.pop(0)
        if len(o.deps) != len(n.deps):
            raise UpdateError(topology, f"{n.describe()} has {len(n.deps)} dependencies, its "
                                        f"counterpart {len(o.deps)}", n)
        for od, nd in zip(o.deps, n.deps, strict=True):
            if to_old.get(nd, od) is not od or to_new.get(od, nd) is not nd:
                raise UpdateError(topology, f"a dependency of {n.describe()} differs", n, nd)
            if nd not in to_old:
                to_old[nd], to_new[od] = od, nd
                todo.append((od, nd))
    return [(to_old[n], n) for n in g.nodes]


def _changes(p: Plan, g: graph.Graph) -> list:
    """Every (exec node, new params, child changes) an update of p to g makes; raises
    UpdateError if one is not allowed."""
    changes = []
    for en, n in pair(p, g):
        if en.params.type != n.type:
            raise UpdateError(K.CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED,
                              f"{n.describe()} was a {en.params.kind} node", n)
        if en.child is not None:
            changes.append((en, n.params, _changes(en.child, n.params.graph)))
            continue
        if en.bodies is not None:
            why = en.params.update_error(n.params)
            if why is not None:
                raise UpdateError(why, f"{n.describe()}: its handle, type or number of bodies "
                                       "changed", n)
            changes += [c for body, g in zip(en.bodies, n.params.bodies, strict=True)
                        for c in _changes(body, g)]
            continue
        why = en.params.update_error(n.params)
        if why is not None:
            raise UpdateError(why, f"{n.describe()}: its parameters changed in a way an "
                                   "executable graph cannot take", n)
        try:
            _check_kernel(n.params, n)
        except InstantiateError as e:
            raise UpdateError(K.CU_GRAPH_EXEC_UPDATE_ERROR, e.message, n) from None
        changes.append((en, n.params, None))
    return changes


def _apply(changes: list) -> None:
    for en, params, child in changes:
        if child is not None:
            _apply(child)
        else:
            en.params = params


def _update(handle: int, graph_handle: int) -> UpdateError | None:
    x = lookup(handle)
    g = graph.lookup_graph(graph_handle)
    try:
        changes = _changes(x.plan, g)
    except UpdateError as e:
        return e
    with x.lock:
        _apply(changes)
    return None


def _failure(e: UpdateError, outs: tuple | None = None) -> CudaError:
    # quiet: a refused update is an answer programs act on (they re-instantiate)
    return CudaError(E.GRAPH_EXEC_UPDATE_FAILURE, e.message, quiet=True, outs=outs)


@implements("cuGraphExecUpdate", optional_outs=("hErrorNode_out",))
def update(handle: int, graph_handle: int) -> tuple[int, int]:
    e = _update(handle, graph_handle)
    if e is not None:
        raise _failure(e, (e.node.handle if e.node else 0, e.result))
    return 0, K.CU_GRAPH_EXEC_UPDATE_SUCCESS


@implements("cuGraphExecUpdate_v2")
def update_v2(handle: int, graph_handle: int, info: int) -> None:
    if not info:
        raise CudaError(E.INVALID_VALUE, "resultInfo is NULL")
    r = types.struct_at(info, "CUgraphExecUpdateResultInfo")
    ffi = types.ffi()
    e = _update(handle, graph_handle)
    r.result = K.CU_GRAPH_EXEC_UPDATE_SUCCESS if e is None else e.result
    r.errorNode = ffi.cast("CUgraphNode", e.node.handle if e and e.node else 0)
    r.errorFromNode = ffi.cast("CUgraphNode", e.from_node.handle if e and e.from_node else 0)
    if e is not None:
        raise _failure(e)


# -- setting one node's parameters ------------------------------------------------------

def exec_node(x: Exec, node_handle: int, kind: type[gn.Params] | None = None) -> ExecNode:
    node = graph.lookup_node(node_handle)
    en = x.plan.by_node.get(node)
    if en is None:
        raise CudaError(E.INVALID_VALUE, f"{node.describe()} is not a node of the graph "
                                         "hGraphExec was instantiated from")
    if kind is not None and not isinstance(en.params, kind):
        raise CudaError(E.INVALID_VALUE, f"{node.describe()} is not a {kind.kind} node")
    return en


def _set(handle: int, node_handle: int, kind: type[gn.Params], make) -> None:
    x = lookup(handle)
    en = exec_node(x, node_handle, kind)
    new = make(en)
    why = en.params.update_error(new)
    if why is not None:
        raise CudaError(E.INVALID_VALUE, f"{en.node.describe()}: this change cannot be made to "
                                         "an instantiated graph (cuGraphExecUpdate would answer "
                                         f"{why})")
    try:
        _check_kernel(new, en.node)
    except InstantiateError as e:
        raise CudaError(e.code, e.message) from None
    with x.lock:
        en.params = new


def _struct(address: int, ctype: str):
    if not address:
        raise CudaError(E.INVALID_VALUE, "nodeParams is NULL")
    return types.struct_at(address, ctype)


def _kernel(en: ExecNode, new: gn.Kernel) -> gn.Kernel:
    for attr, value in en.params.attrs:
        new = new.with_attribute(attr, value)
    return new


@implements("cuGraphExecKernelNodeSetParams")
def kernel_node_set_params(handle: int, node: int, params: int) -> None:
    _set(handle, node, gn.Kernel, lambda en: _kernel(en, gn.kernel_params(
        _struct(params, "CUDA_KERNEL_NODE_PARAMS_v1"), False)))


@implements("cuGraphExecKernelNodeSetParams_v2")
def kernel_node_set_params_v2(handle: int, node: int, params: int) -> None:
    _set(handle, node, gn.Kernel, lambda en: _kernel(en, gn.kernel_params(
        _struct(params, "CUDA_KERNEL_NODE_PARAMS_v2"), True)))


@implements("cuGraphExecMemcpyNodeSetParams")
def memcpy_node_set_params(handle: int, node: int, params: int, ctx: int) -> None:
    _set(handle, node, gn.Memcpy, lambda en: gn.memcpy_params(params, context.resolve(ctx)))


@implements("cuGraphExecMemsetNodeSetParams")
def memset_node_set_params(handle: int, node: int, params: int, ctx: int) -> None:
    _set(handle, node, gn.Memset, lambda en: gn.memset_params(
        _struct(params, "CUDA_MEMSET_NODE_PARAMS"), context.resolve(ctx)))


@implements("cuGraphExecHostNodeSetParams")
def host_node_set_params(handle: int, node: int, params: int) -> None:
    _set(handle, node, gn.Host, lambda en: gn.host_params(_struct(params,
                                                                  "CUDA_HOST_NODE_PARAMS")))


@implements("cuGraphExecEventRecordNodeSetEvent")
def event_record_node_set_event(handle: int, node: int, ev: int) -> None:
    _set(handle, node, gn.EventRecord, lambda en: gn.EventRecord(event.lookup(ev)))


@implements("cuGraphExecEventWaitNodeSetEvent")
def event_wait_node_set_event(handle: int, node: int, ev: int) -> None:
    _set(handle, node, gn.EventWait, lambda en: gn.EventWait(event.lookup(ev)))


@implements("cuGraphExecChildGraphNodeSetParams")
def child_graph_node_set_params(handle: int, node: int, child: int) -> None:
    x = lookup(handle)
    en = exec_node(x, node, gn.Child)
    try:
        changes = _changes(en.child, graph.lookup_graph(child, "childGraph"))
    except UpdateError as e:
        raise CudaError(E.INVALID_VALUE, f"childGraph cannot replace the child graph of "
                                         f"{en.node.describe()}: {e.message}") from None
    with x.lock:
        _apply(changes)


@implements("cuGraphExecNodeSetParams")
def node_set_params(handle: int, node: int, params: int) -> None:
    x = lookup(handle)
    en = exec_node(x, node)
    p = _struct(params, "CUgraphNodeParams")
    if p.type != en.params.type:
        raise CudaError(E.INVALID_VALUE, f"nodeParams.type is {gn.kind_name(p.type)}, the node "
                                         f"is a {en.params.kind} node")
    if p.type == K.CU_GRAPH_NODE_TYPE_GRAPH:
        child_graph_node_set_params(handle, node, gn.handle_of(p.graph.graph))
        return
    if isinstance(en.params, (gn.MemAlloc, gn.MemFree)):
        raise CudaError(E.INVALID_VALUE, f"{en.params.kind} nodes cannot be changed")
    _set(handle, node, type(en.params), lambda en: graph_params.generic_params(p, None))


@implements("cuGraphNodeSetEnabled")
def node_set_enabled(handle: int, node: int, enabled: int) -> None:
    x = lookup(handle)
    en = exec_node(x, node)
    if not isinstance(en.params, ENABLEABLE):
        raise CudaError(E.INVALID_VALUE, f"only kernel, memcpy and memset nodes can be disabled; "
                                         f"{en.node.describe()} cannot")
    with x.lock:
        en.enabled = bool(enabled)


@implements("cuGraphNodeGetEnabled")
def node_get_enabled(handle: int, node: int) -> int:
    x = lookup(handle)
    en = exec_node(x, node)
    if not isinstance(en.params, ENABLEABLE):
        raise CudaError(E.INVALID_VALUE, f"only kernel, memcpy and memset nodes can be disabled; "
                                         f"{en.node.describe()} cannot")
    return int(en.enabled)
