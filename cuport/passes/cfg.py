"""Split a function body into basic blocks and order them so that warps reconverge.

Invariant left: `Cfg.blocks` is in *execution priority order*: a topological order of the
forward edges in which every loop's blocks are contiguous and come before the loop's exits.
The warp executor always runs the lowest-numbered block that has pending lanes (min-PC
scheduling), so with this order lanes that split at a branch meet again at its
post-dominator, and lanes leaving a loop wait at the exit until the whole warp has left.

Blocks end at branches, `ret`/`exit`/`trap`, and CTA barriers (`bar.sync` and friends are
terminators: a warp may suspend there). Blocks that hold nothing but `ret`/`exit` are
*exit sinks*: lanes that branch to one simply finish, which the convergence analysis uses
so that `if (i >= n) return;` does not make the rest of the kernel divergent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..ptx import ir, opcodes

#: Opcodes that end a block and may suspend the warp (CTA-wide barriers).
BARRIER_OPS = {"bar", "barrier"}


def is_barrier(ins: ir.Instr) -> bool:
    """A CTA barrier that blocks (not bar.warp.sync, not bar.arrive)."""
    if ins.op not in BARRIER_OPS:
        return False
    m = ins.mods
    if "warp" in m or "arrive" in m:
        return False
    return True


def barrier_number(ins: ir.Instr) -> ir.Operand:
    """The number of the CTA barrier `ins` (a blocking barrier: `is_barrier`) waits at.
    barrier.cluster.wait has none: a cluster is one block (isa/cluster.py), so it waits at
    the block's barrier 0, as `__syncthreads` does."""
    if "cluster" in ins.mods:
        return ir.Imm(0)
    return ins.args[1] if "red" in ins.mods else ins.args[0]


def is_suspend(ins: ir.Instr) -> bool:
    """A point where a warp may suspend: a CTA barrier, or a `yield` (passes/yields.py)."""
    return ins.op == "yield" or is_barrier(ins)


@dataclass
class Block:
    index: int
    label: str | None
    instrs: list[ir.Instr] = field(default_factory=list)
    succs: list[int] = field(default_factory=list)  # successor indices (taken first, then fallthrough)
    preds: list[int] = field(default_factory=list)
    term: ir.Instr | None = None  # last instruction when it is a control instruction
    exit_sink: bool = False  # only ret/exit: lanes arriving here finish
    line: int = 0

    @property
    def name(self) -> str:
        return self.label or f"bb{self.index}"


@dataclass
class Cfg:
    fn: ir.Function
    blocks: list[Block]
    loops: dict[int, set[int]]  # header index → blocks of the loop (header included)
    reducible: bool


class CfgError(Exception):
    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.line = line


def build(fn: ir.Function) -> Cfg:
    assert fn.body is not None
    raw: list[Block] = []
    cur = Block(0, None)
    pending_labels: list[str] = []
    aliases: dict[str, str] = {}

    def close() -> None:
        nonlocal cur
        if cur.instrs or cur.label is not None:
            raw.append(cur)
        cur = Block(len(raw), None)

    for st in fn.body:
        if isinstance(st, ir.Label):
            if cur.instrs:
                close()
            if cur.label is None:
                cur.label = st.name
                cur.line = st.line
            else:
                aliases[st.name] = cur.label  # two labels on one spot
            pending_labels.append(st.name)
            continue
        if st.op == "branchtargets":
            continue
        if not cur.instrs and not cur.line:
            cur.line = st.line
        cur.instrs.append(st)
        if opcodes.ends_block(st) or is_suspend(st):
            cur.term = st
            close()
    close()
    last = raw[-1].term if raw else None
    if not raw or (last is not None and (is_suspend(last) or (
            last.guard is not None and last.op in ("bra", "ret", "exit")))):
        # falling off the end of a function (after a barrier, or where a guarded branch
        # or return does not go) is an implicit return
        line = last.line if last is not None else 0
        raw.append(Block(len(raw), None, [ir.Instr("ret", (), [], line=line)]))
        raw[-1].term = raw[-1].instrs[0]

    by_label = {b.label: i for i, b in enumerate(raw) if b.label is not None}
    for a, target in aliases.items():
        by_label[a] = by_label[target]

    def target_of(ins: ir.Instr) -> int:
        sym = ins.args[-1] if ins.args else None
        if not isinstance(sym, ir.Sym) or sym.name not in by_label:
            raise CfgError(f"branch to an unknown label in `{ins.text()}`", ins.line)
        return by_label[sym.name]

    for i, b in enumerate(raw):
        b.index = i
        t = b.term
        nxt = i + 1 if i + 1 < len(raw) else None
        if t is None or is_suspend(t):
            if nxt is not None:
                b.succs = [nxt]
            elif t is not None:
                raise CfgError("a barrier at the end of a function", t.line)
            else:
                # falling off the end of a function is an implicit return
                b.instrs.append(ir.Instr("ret", (), [], line=b.instrs[-1].line if b.instrs else 0))
                b.term = b.instrs[-1]
        elif t.op == "bra":
            tgt = target_of(t)
            if t.guard is not None:
                b.succs = [tgt] + ([nxt] if nxt is not None and nxt != tgt else [])
                if nxt is None:
                    raise CfgError("a conditional branch at the end of a function", t.line)
            else:
                b.succs = [tgt]
        elif t.op == "brx":
            raise CfgError("brx.idx (indirect branch through a table) is not supported", t.line)
        elif t.op in ("ret", "exit", "trap"):
            if t.guard is not None:
                if nxt is None:
                    raise CfgError(f"a guarded {t.op} at the end of a function", t.line)
                b.succs = [nxt]
    for b in raw:
        b.exit_sink = (
            len(b.instrs) == 1 and b.instrs[0].op in ("ret", "exit") and b.instrs[0].guard is None
        )

    # keep only blocks reachable from the entry
    seen = [False] * len(raw)
    stack = [0]
    seen[0] = True
    while stack:
        i = stack.pop()
        for s in raw[i].succs:
            if not seen[s]:
                seen[s] = True
                stack.append(s)
    order, loops, reducible = _loop_order(raw, seen)
    remap = {old: new for new, old in enumerate(order)}
    blocks = []
    for new, old in enumerate(order):
        b = raw[old]
        b.index = new
        b.succs = [remap[s] for s in b.succs]
        blocks.append(b)
    for b in blocks:
        for s in b.succs:
            blocks[s].preds.append(b.index)
    new_loops = {remap[h]: {remap[x] for x in body} for h, body in loops.items()}
    return Cfg(fn, blocks, new_loops, reducible)


def _loop_order(raw: list[Block], live: list[bool]) -> tuple[list[int], dict[int, set[int]], bool]:
    """A topological order of forward edges with each natural loop contiguous."""
    n = len(raw)
    post, back = dfs_postorder([b.succs for b in raw])
    preds: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        if live[i]:
            for s in raw[i].succs:
                preds[s].append(i)
    dom = _dominators(raw, live, post)
    reducible = True
    loops: dict[int, set[int]] = {}
    for u, h in back:
        if not _dominates(dom, h, u):
            reducible = False
            continue
        add_loop_body(loops.setdefault(h, {h}), u, preds)
    back_set = set(back)
    if not reducible:
        # Irreducible control flow: plain reverse postorder. Convergence analysis will treat
        # every block as possibly divergent, which stays correct.
        return list(reversed(post)), {}, False

    # parent loop of each block = the smallest loop containing it
    headers = sorted(loops, key=lambda h: len(loops[h]))
    innermost: dict[int, int] = {}
    for h in headers:
        for x in loops[h]:
            innermost.setdefault(x, h)

    def order_region(nodes: set[int], header: int | None) -> list[int]:
        # collapse immediate sub-loops into their headers
        rep: dict[int, int] = {}
        for x in nodes:
            r = x
            # climb to the outermost loop inside this region containing x
            best = None
            for h in loops:
                if h != header and x in loops[h] and loops[h] <= nodes:
                    if best is None or len(loops[h]) > len(loops[best]):
                        best = h
            if best is not None:
                r = best
            rep[x] = r
        supers = sorted(set(rep.values()))
        indeg = {s: 0 for s in supers}
        edges: dict[int, set[int]] = {s: set() for s in supers}
        for x in nodes:
            for s in raw[x].succs:
                if s not in nodes or (x, s) in back_set and s == header:
                    continue
                a, c = rep[x], rep[s]
                if a == c or (x, s) in back_set:
                    continue
                if c not in edges[a]:
                    edges[a].add(c)
                    indeg[c] += 1
        import heapq

        ready = [s for s in supers if indeg[s] == 0]
        if header is not None:
            ready = [header] if header in indeg and indeg[header] == 0 else ready
        heapq.heapify(ready)
        out: list[int] = []
        while ready:
            s = heapq.heappop(ready)
            if s in loops and s != header and loops[s] <= nodes:
                out.extend(order_region(loops[s], s))
            else:
                out.append(s)
            for c in sorted(edges[s]):
                indeg[c] -= 1
                if indeg[c] == 0:
                    heapq.heappush(ready, c)
        return out

    everything = {i for i in range(n) if live[i]}
    return order_region(everything, None), loops, True


def dfs_postorder(succs: Sequence[Sequence[int]]) -> tuple[list[int], list[tuple[int, int]]]:
    """The postorder of the nodes reachable from 0 (an iterative DFS taking each node's
    successors in order) and the retreating edges (from, to) it meets: the start of both
    this CFG's loop order and the SPIR-V structurizer's (backends/vulkan/spirv)."""
    state = [0] * len(succs)  # 0 new, 1 on stack, 2 done
    back: list[tuple[int, int]] = []
    post: list[int] = []
    stack: list[tuple[int, int]] = [(0, 0)]
    state[0] = 1
    while stack:
        node, k = stack[-1]
        if k < len(succs[node]):
            stack[-1] = (node, k + 1)
            s = succs[node][k]
            if state[s] == 0:
                state[s] = 1
                stack.append((s, 0))
            elif state[s] == 1:
                back.append((node, s))
        else:
            state[node] = 2
            post.append(node)
            stack.pop()
    return post, back


def add_loop_body(body: set[int], tail: int, preds: list[list[int]]) -> None:
    """Add to `body`, a natural loop's (holding its header), the nodes that reach `tail`, the
    source of one of its back edges, without passing the header."""
    work = [tail]
    while work:
        x = work.pop()
        if x not in body:
            body.add(x)
            work.extend(preds[x])


def _dominators(raw: list[Block], live: list[bool], post: list[int]) -> list[int]:
    """Immediate dominators; -1 for unreachable blocks."""
    rpo = list(reversed(post))
    preds: list[list[int]] = [[] for _ in range(len(raw))]
    for i in rpo:
        for s in raw[i].succs:
            preds[s].append(i)
    return immediate_dominators(rpo, preds)


def immediate_dominators(rpo: list[int], preds: list[list[int]]) -> list[int]:
    """Each node's immediate dominator, by Cooper, Harvey and Kennedy's iterative algorithm
    on the reverse postorder `rpo` (the entry, 0, first); -1 for nodes not in it."""
    num = {b: i for i, b in enumerate(rpo)}
    idom = [-1] * len(preds)
    idom[0] = 0
    changed = True
    while changed:
        changed = False
        for b in rpo[1:]:
            new = -1
            for p in preds[b]:
                if idom[p] == -1:
                    continue
                if new == -1:
                    new = p
                else:
                    x, y = p, new
                    while x != y:
                        while num[x] > num[y]:
                            x = idom[x]
                        while num[y] > num[x]:
                            y = idom[y]
                    new = x
            if new != idom[b]:
                idom[b] = new
                changed = True
    return idom


def _dominates(idom: list[int], a: int, b: int) -> bool:
    while True:
        if a == b:
            return True
        if b == 0 or idom[b] == -1:
            return False
        b = idom[b]


def _keep_ways_out(blocks: list[Block], succs: list[list[int]]) -> None:
    """Put back dropped edges into exit sinks where they were the only way out: when the
    function's last `ret` is itself an exit sink, dropping every edge into it would leave
    no block able to reach the exit (and every post-dominator the virtual exit). Edges are
    restored latest block first, so an early `return` keeps being ignored once the rest of
    the function can reach the exit again."""
    n = len(blocks)
    while True:
        reach = [not succs[i] for i in range(n)]
        changed = True
        while changed:
            changed = False
            for i in range(n - 1, -1, -1):
                if not reach[i] and any(reach[s] for s in succs[i]):
                    reach[i] = True
                    changed = True
        stuck = [i for i in range(n) if not reach[i] and len(succs[i]) < len(blocks[i].succs)]
        if not stuck:
            return
        i = max(stuck)
        succs[i] = list(blocks[i].succs)


def postdominators(cfg: Cfg, ignore_exit_sinks: bool = True) -> list[int]:
    """Immediate post-dominators; -1 means the virtual exit.

    With `ignore_exit_sinks`, edges into exit sinks are dropped: lanes taking them finish
    and do not need to reconverge with anyone.
    """
    blocks = cfg.blocks
    n = len(blocks)
    succs = [
        [s for s in b.succs if not (ignore_exit_sinks and blocks[s].exit_sink)] for b in blocks
    ]
    if ignore_exit_sinks:
        _keep_ways_out(blocks, succs)
    EXIT = n
    rsuccs: list[list[int]] = [[] for _ in range(n + 1)]  # reverse graph: successors = preds
    for i in range(n):
        if not succs[i]:
            rsuccs[EXIT].append(i)
        for s in succs[i]:
            rsuccs[s].append(i)
    # blocks that cannot reach the exit (infinite loops) hang off the virtual exit too
    reach = [False] * (n + 1)
    reach[EXIT] = True
    stack = [EXIT]
    while stack:
        x = stack.pop()
        for p in rsuccs[x]:
            if not reach[p]:
                reach[p] = True
                stack.append(p)
    for i in range(n):
        if not reach[i]:
            rsuccs[EXIT].append(i)
    # postorder of the reverse graph from EXIT
    post: list[int] = []
    seen = [False] * (n + 1)
    st: list[tuple[int, int]] = [(EXIT, 0)]
    seen[EXIT] = True
    while st:
        x, k = st[-1]
        if k < len(rsuccs[x]):
            st[-1] = (x, k + 1)
            y = rsuccs[x][k]
            if not seen[y]:
                seen[y] = True
                st.append((y, 0))
        else:
            post.append(x)
            st.pop()
    rpo = list(reversed(post))
    num = {b: i for i, b in enumerate(rpo)}
    rpreds: list[list[int]] = [[] for _ in range(n + 1)]  # preds in the reverse graph = succs
    for x in range(n + 1):
        for y in rsuccs[x]:
            rpreds[y].append(x)
    ipdom = [-2] * (n + 1)
    ipdom[EXIT] = EXIT
    changed = True
    while changed:
        changed = False
        for b in rpo[1:]:
            new = -2
            for p in rpreds[b]:
                if ipdom[p] == -2:
                    continue
                if new == -2:
                    new = p
                else:
                    x, y = p, new
                    while x != y:
                        while num[x] > num[y]:
                            x = ipdom[x]
                        while num[y] > num[x]:
                            y = ipdom[y]
                    new = x
            if new != ipdom[b]:
                ipdom[b] = new
                changed = True
    return [(-1 if ipdom[i] in (EXIT, -2) else ipdom[i]) for i in range(n)]




def _reach(succs: list[list[int]], seeds, avoid: int | None = None) -> set[int]:
    """The blocks reachable from `seeds` (included) along `succs` without entering `avoid`."""
    seen: set[int] = set()
    stack = [x for x in seeds if x != avoid]
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        stack.extend(s for s in succs[x] if s != avoid)
    return seen


def may_finish(b: Block, calls_may_exit: bool) -> bool:
    """Whether threads may finish in block `b`: it ends in `ret`/`exit`, or it calls and a
    callee may execute `exit` (`calls_may_exit`)."""
    return (b.term is not None and b.term.op in ("ret", "exit")) or (
        calls_may_exit and any(ins.op == "call" for ins in b.instrs))


def exits_before(cfg: Cfg, varying: set[str], divergent: set[int], block: int,
                 calls_may_exit: bool) -> bool:
    """Whether some threads of a warp may have finished (`ret`/`exit`, or a call where a
    callee may execute `exit`: `calls_may_exit`) while the others run on to the end of
    `block` (a converged barrier's); `varying` and `divergent` are the Divergence record's.

    A thread that finished and one that goes on were together last at a block where the
    warp splits (a divergent branch, a branch or return under a varying guard, a call that
    may exit), and the finishing one went from there to its exit without passing the
    block (at a converged barrier they would have been together again). So some may have
    finished when such a split point reaches both an exit (without passing the block) and
    the block, and either comes before the block's first arrival or lies on a loop through
    it. Elsewhere a warp gets past the block with every thread it started with."""
    blocks = cfg.blocks
    succs = [b.succs for b in blocks]
    preds: list[list[int]] = [[] for _ in blocks]
    for b in blocks:
        for x in b.succs:
            preds[x].append(b.index)

    def has_call(b: Block) -> bool:
        return calls_may_exit and any(ins.op == "call" for ins in b.instrs)

    exits = [b.index for b in blocks if may_finish(b, calls_may_exit)]
    if not exits:
        return False
    splits = {b.index for b in blocks if b.index in divergent or has_call(b) or (
        b.term is not None and b.term.guard is not None and b.term.op in ("bra", "ret", "exit")
        and b.term.guard.name in varying)}
    # threads that part at a split point and pass its post-dominator meet again there: only
    # a split point whose own region (up to its post-dominator) holds an exit can leave
    # some of them finished. Where the post-dominator is itself an exit, threads reach it
    # one by one and finish there (a loop whose lanes leave to `ret` at different trips:
    # a compare-and-swap loop), so it does not bring them together
    ipdom = postdominators(cfg)
    exit_set = set(exits)
    splits = {s for s in splits
              if _reach(succs, [s], avoid=ipdom[s] if ipdom[s] not in (-1, *exit_set) else None)
              & exit_set}
    to_block = _reach(preds, [block])  # (reverse: the blocks that reach it)
    first = _reach(succs, [0], avoid=block)
    exit_avoiding = _reach(preds, exits, avoid=block)
    if splits & first & to_block & exit_avoiding:
        return True
    around = _reach(succs, succs[block])
    return block in around and bool(splits & around & to_block & _reach(preds, exits))
