"""Structured control flow for SPIR-V from any reducible CFG.

Needs: a CFG of blocks numbered from 0 (the entry), each with its successors in terminator
order and its terminator kind ("br", "cbr", "switch", "ret", "unreachable").
Leaves: a tree of statements (the classes below) that `translate` emits as SPIR-V
selections and loops, block by block, with each CFG edge's phi copies (`Copy`) on the way.
Legal: for reducible CFGs; an irreducible one raises `Irreducible` naming a branch into
the cycle.

The method is Ramsey's "Beyond Relooper" (JFP 2022): walk the dominator tree in reverse
postorder; a block that is the target of two or more forward edges (a merge node) is
placed after its immediate dominator's code, wrapped in a `Block` whose end it follows;
a loop header's code is wrapped in a `Loop`; other blocks are placed inline at their one
incoming edge. Two changes for SPIR-V:
- every block outside a loop whose immediate dominator is inside it (the loop's exits) is
  placed after the `Loop` of the outermost loop it leaves, never inside it: invocations
  that leave a loop reconverge at its merge, as they do in the input, so a barrier or a
  subgroup operation after a loop is still reached by all invocations together;
- SPIR-V can leave only the innermost loop (and continue only it), so the gotos of
  Ramsey's tree are lowered here: a goto to the end of the enclosing `Block` with nothing
  left to skip falls through; one that must skip code makes its `Block` a once-only loop
  (`do_once`) and breaks out of it; one that must leave inner loops first stores its
  target in the function's dispatch variable (`SetDest`), breaks, and is sent on by the
  dispatch placed after each loop it leaves (`Loop.dispatch`; the variable is reset to 0
  when the goto arrives). Uniform branches stay uniform: no state machine.
"""

from __future__ import annotations

import contextlib
import sys

from ....passes.cfg import add_loop_body, dfs_postorder, immediate_dominators


class Irreducible(Exception):
    """The CFG has a cycle with more than one entry; `edge` is (source, target) of a branch
    into the cycle that is not its header."""

    def __init__(self, edge: tuple[int, int]):
        super().__init__(f"irreducible control flow: the branch from block {edge[0]} to block {edge[1]} enters a loop other than through its header")
        self.edge = edge


# ---------------------------------------------------------------------- statements
class Node:
    __slots__ = ("parent",)

    def __init__(self) -> None:
        self.parent: Node | None = None


class Seq(Node):
    __slots__ = ("items",)

    def __init__(self, items: list[Node]):
        super().__init__()
        self.items = items


class Code(Node):
    """The instructions of CFG block `block`, its terminator excluded."""
    __slots__ = ("block",)

    def __init__(self, block: int):
        super().__init__()
        self.block = block


class Copy(Node):
    """The phi copies of the CFG edge src -> dst (index `index` among src's successors)."""
    __slots__ = ("src", "dst", "index")

    def __init__(self, src: int, dst: int, index: int):
        super().__init__()
        self.src, self.dst, self.index = src, dst, index


class Branch(Node):
    """Block `block`'s conditional branch or switch; arms[i] runs for its successor i, and
    an arm that ends without a jump continues after the Branch (a SPIR-V selection)."""
    __slots__ = ("block", "arms")

    def __init__(self, block: int, arms: list[Node]):
        super().__init__()
        self.block, self.arms = block, arms


class Return(Node):
    __slots__ = ("block",)

    def __init__(self, block: int):
        super().__init__()
        self.block = block


class Unreachable(Node):
    __slots__ = ("block",)

    def __init__(self, block: int):
        super().__init__()
        self.block = block


class Loop(Node):
    """A SPIR-V loop headed by CFG block `header`; `Continue` goes back to the top, `Break`
    leaves it, falling off the end of the body continues. `dispatch` (dest value ->
    statements) runs after the loop when the dispatch variable holds that value."""
    __slots__ = ("header", "body", "dispatch")

    def __init__(self, header: int, body: Node):
        super().__init__()
        self.header, self.body = header, body
        self.dispatch: dict[int, list[Node]] = {}


class Block(Node):
    """Ramsey's block: gotos to `label` leave `body` and continue after it. With `do_once`
    it is a SPIR-V loop that runs once (gotos become `Break`), else a plain sequence."""
    __slots__ = ("label", "body", "do_once", "dispatch")

    def __init__(self, label: int, body: Node):
        super().__init__()
        self.label, self.body = label, body
        self.do_once = False
        self.dispatch: dict[int, list[Node]] = {}


class Goto(Node):
    """A jump to the end of Block `target` (kind "block") or the top of Loop `target`
    ("continue"); after lowering, `action` holds what it becomes."""
    __slots__ = ("target", "kind", "action")

    def __init__(self, target: int, kind: str):
        super().__init__()
        self.target, self.kind = target, kind
        self.action: list[Node] = []


class Break(Node):
    """Leave the innermost Loop or do_once Block."""
    __slots__ = ()


class Continue(Node):
    """Go to the continue target of the innermost Loop."""
    __slots__ = ()


class SetDest(Node):
    """Store `value` into the dispatch variable."""
    __slots__ = ("value",)

    def __init__(self, value: int):
        super().__init__()
        self.value = value


# ---------------------------------------------------------------------- analysis
class CFG:
    """The CFG model: succs[b] in terminator order, kinds[b] the terminator kind."""

    def __init__(self, succs: list[list[int]], kinds: list[str]):
        self.succs = succs
        self.kinds = kinds
        n = len(succs)
        # reverse postorder of the blocks reachable from 0
        order, retreating = dfs_postorder(succs)
        order.reverse()
        self.rpo = order
        self.num = [-1] * n
        for i, b in enumerate(order):
            self.num[b] = i
        self.preds: list[list[int]] = [[] for _ in range(n)]
        for b in order:
            for s in succs[b]:
                self.preds[s].append(b)
        self._dominators()
        for u, h in retreating:
            if not self.dominates(h, u):
                raise Irreducible(self._entry_edge(h, u))
        self._loops(retreating)

    def _dominators(self) -> None:
        """The dominator tree, and each block's depth in it."""
        idom = immediate_dominators(self.rpo, self.preds)
        self.idom = idom
        self.children: list[list[int]] = [[] for _ in self.succs]
        for b in self.rpo[1:]:
            self.children[idom[b]].append(b)
        # dominator-tree depths, for dominates()
        self.depth = [0] * len(self.succs)
        for b in self.rpo[1:]:
            self.depth[b] = self.depth[idom[b]] + 1

    def dominates(self, a: int, b: int) -> bool:
        while self.depth[b] > self.depth[a]:
            b = self.idom[b]
        return a == b

    def _entry_edge(self, h: int, u: int) -> tuple[int, int]:
        """An edge into the cycle through u -> h from outside it, to a block other than h
        (h does not dominate u, so there is one): the cycle's blocks are those reached from
        h that reach u."""
        fwd = {h}
        work = [h]
        while work:
            for s in self.succs[work.pop()]:
                if s not in fwd:
                    fwd.add(s)
                    work.append(s)
        cyc = {h, u}
        work = [u]
        while work:
            for p in self.preds[work.pop()]:
                if p in fwd and p not in cyc:
                    cyc.add(p)
                    work.append(p)
        for x in self.rpo:
            if x in cyc and x != h:
                for p in self.preds[x]:
                    if p not in cyc:
                        return (p, x)
        return (u, h)

    def _loops(self, back_edges: list[tuple[int, int]]) -> None:
        """Natural loops: body[h] for each loop header h; loops_of[b] the headers whose body
        holds b, innermost first."""
        body: dict[int, set[int]] = {}
        for u, h in back_edges:
            add_loop_body(body.setdefault(h, {h}), u, self.preds)
        self.body = body
        self.loops_of: list[list[int]] = [[] for _ in self.succs]
        for h in sorted(body, key=lambda h: len(body[h]), reverse=True):  # outer first
            for x in body[h]:
                self.loops_of[x].insert(0, h)


# ---------------------------------------------------------------------- Ramsey's tree
def _seq(items: list[Node]) -> Seq:
    """A sequence with nested sequences spliced in: chains of merge nodes stay flat (the
    tree's depth, and so the emitter's recursion, follows nesting, not program length)."""
    out: list[Node] = []
    for i in items:
        if isinstance(i, Seq):
            out.extend(i.items)
        else:
            out.append(i)
    return Seq(out)


class _Builder:
    def __init__(self, cfg: CFG):
        self.cfg = cfg
        c = cfg
        forward_in = [0] * len(c.succs)
        for b in c.rpo:
            for s in c.succs[b]:
                if c.num[s] > c.num[b]:
                    forward_in[s] += 1
        self.follows_in: list[list[int]] = [[] for _ in c.succs]  # merge children
        self.follows_out: list[list[int]] = [[] for _ in c.succs]  # placed after a Loop
        self.is_follow = [False] * len(c.succs)
        for y in c.rpo[1:]:
            p = c.idom[y]
            left = [h for h in c.loops_of[p] if y not in c.body[h]]
            if left:
                self.follows_out[left[-1]].append(y)
                self.is_follow[y] = True
            elif forward_in[y] >= 2:
                self.follows_in[p].append(y)
                self.is_follow[y] = True
        for lst in self.follows_in + self.follows_out:
            lst.sort(key=lambda b: c.num[b])
        self.gotos: list[Goto] = []

    def tree(self, x: int) -> Node:
        c = self.cfg
        s = self.within(x, self.follows_in[x])
        if x in c.body:
            s = Loop(x, s)
            for y in self.follows_out[x]:
                s = _seq([Block(y, s), self.tree(y)])
        return s

    def within(self, x: int, ys: list[int]) -> Node:
        s = _seq(self.code_and_term(x))
        for y in ys:  # the earliest merge node innermost: its code follows first
            s = _seq([Block(y, s), self.tree(y)])
        return s

    def code_and_term(self, x: int) -> list[Node]:
        """x's code and terminator; a `br` to an inline block continues the same list."""
        c = self.cfg
        items: list[Node] = []
        while True:
            items.append(Code(x))
            kind = c.kinds[x]
            if kind == "ret":
                items.append(Return(x))
                return items
            if kind == "unreachable":
                items.append(Unreachable(x))
                return items
            succ = c.succs[x]
            if kind == "br":
                y = succ[0]
                items.append(Copy(x, y, 0))
                if self.inline(x, y):
                    # y's only entry is this edge: its code continues this sequence
                    if y in c.body or self.follows_in[y]:
                        items.append(self.tree(y))
                        return items
                    x = y
                    continue
                items.append(self.branch(x, y))
                return items
            arms = []
            for i, y in enumerate(succ):
                arms.append(_seq([Copy(x, y, i), self.branch(x, y)]))
            items.append(Branch(x, arms))
            return items

    def inline(self, x: int, y: int) -> bool:
        c = self.cfg
        return not (c.num[y] <= c.num[x] or self.is_follow[y])

    def branch(self, x: int, y: int) -> Node:
        c = self.cfg
        if c.num[y] <= c.num[x]:
            g = Goto(y, "continue")
        elif self.is_follow[y]:
            g = Goto(y, "block")
        else:
            return self.tree(y)
        self.gotos.append(g)
        return g


# ---------------------------------------------------------------------- goto lowering
def _link(node: Node, parent: Node | None) -> None:
    """Set parent pointers (iteratively: trees can be deep)."""
    stack = [(node, parent)]
    while stack:
        n, p = stack.pop()
        n.parent = p
        if isinstance(n, Seq):
            stack.extend((i, n) for i in n.items)
        elif isinstance(n, Branch):
            stack.extend((a, n) for a in n.arms)
        elif isinstance(n, (Loop, Block)):
            stack.append((n.body, n))


def _route(g: Goto) -> list[tuple[str, Node, bool]]:
    """The way from goto `g` to its target, as segments: ("break", B, skips) for each
    breakable construct B it must leave, then ("arrive", T, skips); `skips` says whether
    code would be skipped between the segment's start and its end."""
    segs: list[tuple[str, Node, bool]] = []
    c: Node = g
    skips = False
    while True:
        p = c.parent
        if p is None:
            raise AssertionError(f"goto {g.kind} {g.target} outside its target")
        if isinstance(p, Seq):
            if p.items[-1] is not c:
                skips = True
        elif isinstance(p, Block):
            if g.kind == "block" and p.label == g.target:
                segs.append(("arrive", p, skips))
                return segs
            if p.do_once:
                segs.append(("break", p, skips))
                skips = False
        elif isinstance(p, Loop):
            if g.kind == "continue" and p.header == g.target:
                segs.append(("arrive", p, skips))
                return segs
            segs.append(("break", p, skips))
            skips = False
        c = p


def _arrive(t: Node, skips: bool) -> list[Node]:
    """What a goto does once nothing lies between it and its target t but code to skip."""
    if isinstance(t, Loop):
        return [Continue()]
    if t.do_once:
        return [Break()]
    assert not skips
    return []


def _lower(gotos: list[Goto]) -> None:
    # 1. a Block reached by a goto that must skip code becomes a once-only loop; that can
    #    turn other gotos' ways into breaks, so repeat until nothing changes
    changed = True
    while changed:
        changed = False
        for g in gotos:
            kind, t, skips = _route(g)[-1]
            if isinstance(t, Block) and skips and not t.do_once:
                t.do_once = True
                changed = True
    # 2. each goto's action, and the dispatch entries after the constructs it leaves
    for g in gotos:
        segs = _route(g)
        _, t, skips = segs[-1]
        breaks = segs[:-1]
        if not breaks:
            g.action = _arrive(t, skips)
            continue
        if len(breaks) == 1 and not skips:
            g.action = [Break()]  # falling through after the construct left reaches t
            continue
        dest = 2 * g.target + (2 if g.kind == "continue" else 1)
        g.action = [SetDest(dest), Break()]
        for k, (_, b, _) in enumerate(breaks):
            if k + 1 < len(breaks):
                b.dispatch[dest] = [Break()]
            else:
                b.dispatch[dest] = [SetDest(0)] + _arrive(t, skips)


@contextlib.contextmanager
def deep_recursion():
    """Room for recursing over the tree, whose depth follows the nesting of the dominator
    tree (a long ladder of early exits nests); Python 3.11+ recurses without the C stack."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000 if sys.version_info >= (3, 11) else 6000))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def structurize(cfg: CFG) -> Node:
    """The structured statement tree of `cfg` (see the module docstring)."""
    with deep_recursion():
        b = _Builder(cfg)
        root = b.tree(0)
    _link(root, None)
    _lower(b.gotos)
    return root


def uses_dispatch(root: Node) -> bool:
    """Whether any construct in the tree dispatches (the function needs the variable)."""
    stack = [root]
    while stack:
        n = stack.pop()
        if isinstance(n, (Loop, Block)):
            if n.dispatch:
                return True
            stack.append(n.body)
        elif isinstance(n, Seq):
            stack.extend(n.items)
        elif isinstance(n, Branch):
            stack.extend(n.arms)
    return False


def dump(node: Node, indent: int = 0) -> str:
    """A readable form of the tree, for tests and debugging."""
    pad = "  " * indent
    if isinstance(node, Seq):
        return "".join(dump(i, indent) for i in node.items)
    if isinstance(node, Code):
        return f"{pad}code {node.block}\n"
    if isinstance(node, Copy):
        return ""
    if isinstance(node, Branch):
        out = f"{pad}branch {node.block}\n"
        for i, a in enumerate(node.arms):
            out += f"{pad} arm {i}:\n" + dump(a, indent + 1)
        return out
    if isinstance(node, Return):
        return f"{pad}return\n"
    if isinstance(node, Unreachable):
        return f"{pad}unreachable\n"
    if isinstance(node, Loop):
        out = f"{pad}loop {node.header}\n" + dump(node.body, indent + 1)
        return out + _dump_dispatch(node, indent)
    if isinstance(node, Block):
        kind = "once" if node.do_once else "block"
        out = f"{pad}{kind} {node.label}\n" + dump(node.body, indent + 1) + f"{pad}end {node.label}\n"
        return out + _dump_dispatch(node, indent)
    if isinstance(node, Goto):
        return "".join(dump(a, indent) for a in node.action)
    if isinstance(node, Break):
        return f"{pad}break\n"
    if isinstance(node, Continue):
        return f"{pad}continue\n"
    if isinstance(node, SetDest):
        return f"{pad}dest = {node.value}\n"
    raise TypeError(node)


def _dump_dispatch(node: Loop | Block, indent: int) -> str:
    pad = "  " * indent
    out = ""
    for k, acts in node.dispatch.items():
        out += f"{pad}if dest == {k}:\n" + "".join(dump(a, indent + 1) for a in acts)
    return out
