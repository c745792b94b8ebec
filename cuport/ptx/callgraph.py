"""What a kernel can reach: the functions it may call and the module variables it names.

An `-rdc` program links every translation unit into one module, so module-scope
`.shared` variables of kernels that have nothing to do with each other sit side by
side (Thrust and CUB declare a large `temp_storage` per kernel). Like ptxas, a kernel
gets only the shared variables its own call graph names; counting the module's would
ask for more shared memory than a block has. (User `.const` memory is not counted this
way: the H200 reports the module's whole constant bank for every kernel, backends/facts.py.)

A symbol is reached when a reached function names it in an operand (a call target, an
address `[sym+4]`, `mov %rd, sym`, `cvta.shared %rd, sym`), or when the initialiser of a
reached variable holds its address (virtual-function tables).
"""

from __future__ import annotations

from collections.abc import Callable

from . import ir


def named_symbols(fn: ir.Function) -> set[str]:
    """Every symbol the instructions of `fn` name (known without reading the body of a
    function loaded from the kernel cache: backends/module_cache.py)."""
    known = getattr(fn, "symbols_named", None)
    if known is not None:
        return set(known)
    out: set[str] = set()
    for st in fn.body or ():
        if isinstance(st, ir.Instr):
            out |= ir.symbols_named(st.args)
    return out


def reached_symbols(module: ir.Module, kernel: ir.Function) -> set[str]:
    """The names of the functions and module variables `kernel` can reach (itself included)."""
    variables = {v.name: v for v in module.variables}
    seen: set[str] = {kernel.name}
    work = list(named_symbols(kernel))  # this body: the kernel may be a rewritten copy
    while work:
        name = work.pop()
        if name in seen:
            continue
        seen.add(name)
        f = module.functions.get(name)
        if f is not None:
            work.extend(named_symbols(f) - seen)
            continue
        v = variables.get(name)
        if v is not None and v.init:
            work.extend(x.name for x in v.init if isinstance(x, ir.SymAddr) and x.name not in seen)
    return seen


def reachable_functions(module: ir.Module, kernel: ir.Function,
                        transform: Callable[[ir.Function], ir.Function] | None = None) -> list[ir.Function]:
    """`kernel` and the functions defined in `module` (not entries) that it names, itself
    or through them, in the order a last-in-first-out worklist meets them: what a backend
    compiles for the kernel. `transform` rewrites each function met before the names in its
    body are followed (passes/indirect_calls.py: the targets of calls through registers)."""
    seen: dict[str, ir.Function] = {}
    work = [kernel]
    while work:
        f = work.pop()
        if f.name in seen:
            continue
        if transform is not None:
            f = transform(f)
        seen[f.name] = f
        for st in f.body or ():
            if isinstance(st, ir.Instr):
                for a in st.args:
                    if isinstance(a, (ir.Sym, ir.SymAddr)):
                        g = module.functions.get(a.name)
                        if g is not None and g.is_definition and not g.is_entry:
                            work.append(g)
    return list(seen.values())


def reachable_shared(module: ir.Module, kernel: ir.Function,
                     funcs: list[ir.Function] | None = None) -> list[ir.Var]:
    """The `.shared` variables of `kernel`'s call graph, module-scope ones in declaration
    order first, then those declared inside the reached functions (`funcs`: the functions
    whose bodies the caller lays out, by default every reached definition)."""
    reached = reached_symbols(module, kernel)
    if funcs is None:
        funcs = [f for n, f in module.functions.items() if n in reached and f.is_definition]
    out = [v for v in module.variables if v.space == "shared" and v.name in reached]
    for f in funcs:
        out += [v for v in f.locals if v.space == "shared"]
    return out


def call_target(ins: ir.Instr) -> str | None:
    """The function a `call` names directly (None for a call through a register)."""
    args = [a for a in ins.args if not isinstance(a, ir.Args)]
    if args and isinstance(args[0], ir.Sym):
        return args[0].name
    return None


def call_operands(ins: ir.Instr) -> tuple[tuple, ir.Operand, tuple, list]:
    """A `call`'s operands, split: (results, target, arguments, what follows them: the
    prototype, or the targets list of a call through a register)."""
    args = list(ins.args)
    rets = args.pop(0).items if args and isinstance(args[0], ir.Args) else ()
    target = args.pop(0)
    params = args.pop(0).items if args and isinstance(args[0], ir.Args) else ()
    return rets, target, params, args


def address_taken(module: ir.Module) -> set[str]:
    """The functions whose address the module takes (`mov %rd, f`, `generic(f)` in an
    initialiser: virtual-function tables), other than as a call's target: the only ones a
    call through a register can reach. (An -rdc program links libcudadevrt, whose device
    runtime functions would otherwise all be candidates of every indirect call, and one
    that calls a syscall cuport lacks made every kernel with a virtual call fail:
    cuda-samples newdelete.)"""
    out: set[str] = set()
    for fn in module.functions.values():
        for st in fn.body or ():
            if isinstance(st, ir.Instr):
                args = st.args
                if st.op == "call" and call_target(st) is not None:
                    first = next(i for i, a in enumerate(args) if not isinstance(a, ir.Args))
                    args = args[:first] + args[first + 1:]
                out |= ir.symbols_named(args)
        for v in fn.locals:
            out.update(x.name for x in v.init or () if isinstance(x, ir.SymAddr))
    for v in module.variables:
        out.update(x.name for x in v.init or () if isinstance(x, ir.SymAddr))
    return {n for n in out if n in module.functions}


def callees(fn: ir.Function) -> set[str]:
    """The functions `fn` calls by name."""
    return {t for st in fn.body or () if isinstance(st, ir.Instr) and st.op == "call"
            and (t := call_target(st)) is not None}


def recursive_components(funcs: list[ir.Function]) -> list[frozenset[str]]:
    """The strongly connected components of the call graph among `funcs` that hold a cycle
    (a function that calls itself, or functions that call each other): the functions a
    backend without a call stack cannot inline. Tarjan's algorithm, without recursion."""
    by_name = {f.name: f for f in funcs if f.is_definition}
    succ = {n: sorted(callees(f) & by_name.keys()) for n, f in by_name.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[frozenset[str]] = []
    for root in by_name:
        if root in index:
            continue
        work = [(root, 0)]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, k = work[-1]
            if k < len(succ[v]):
                work[-1] = (v, k + 1)
                w = succ[v][k]
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in succ[v]:
                    out.append(frozenset(comp))
    return out
