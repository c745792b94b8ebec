"""Test support for the structurizer: run a CFG and its structured tree side by side on the
same branch decisions and compare what they execute (blocks, and edges taken)."""

from __future__ import annotations

import random

from cuport.backends.vulkan.spirv import structurize as st


class _Stop(Exception):
    pass


def oracle(seed: int):
    """A branch decision for the n-th visit of block b, the same for both runs."""
    def choose(b: int, n: int, k: int) -> int:
        return random.Random(hash((seed, b, n))).randrange(k)
    return choose


def run_cfg(cfg: st.CFG, choose, limit: int) -> list[tuple]:
    trace: list[tuple] = []
    visits: dict[int, int] = {}
    b = 0
    while len(trace) < limit:
        trace.append(("code", b))
        n = visits[b] = visits.get(b, -1) + 1
        kind = cfg.kinds[b]
        if kind in ("ret", "unreachable"):
            trace.append((kind,))
            break
        succ = cfg.succs[b]
        i = 0 if kind == "br" else choose(b, n, len(succ))
        trace.append(("edge", b, i))
        b = succ[i]
    return trace[:limit]


class _Tree:
    def __init__(self, cfg: st.CFG, choose, limit: int):
        self.cfg, self.choose, self.limit = cfg, choose, limit
        self.trace: list[tuple] = []
        self.visits: dict[int, int] = {}
        self.dest = 0

    def run(self, node) -> str | None:
        """Execute `node`; the result is None (fall through) or 'break', 'continue', 'ret'."""
        if isinstance(node, st.Seq):
            for item in node.items:
                r = self.run(item)
                if r is not None:
                    return r
            return None
        if isinstance(node, st.Code):
            if len(self.trace) >= self.limit:
                raise _Stop
            self.trace.append(("code", node.block))
            self.visits[node.block] = self.visits.get(node.block, -1) + 1
            return None
        if isinstance(node, st.Copy):
            self.trace.append(("edge", node.src, node.index))
            return None
        if isinstance(node, st.Branch):
            b = node.block
            i = self.choose(b, self.visits[b], len(node.arms))
            return self.run(node.arms[i])
        if isinstance(node, (st.Return, st.Unreachable)):
            self.trace.append(("ret" if isinstance(node, st.Return) else "unreachable",))
            return "ret"
        if isinstance(node, st.Loop):
            while True:
                r = self.run(node.body)
                if r == "ret":
                    return r
                if r == "break":
                    break
            return self.dispatch(node)
        if isinstance(node, st.Block):
            r = self.run(node.body)
            if node.do_once:
                assert r != "continue", "continue inside a once-only loop"
                if r == "break":
                    r = None
            if r is not None:
                return r
            return self.dispatch(node)
        if isinstance(node, st.Goto):
            for a in node.action:
                r = self.run(a)
                if r is not None:
                    return r
            return None
        if isinstance(node, st.Break):
            return "break"
        if isinstance(node, st.Continue):
            return "continue"
        if isinstance(node, st.SetDest):
            assert (self.dest == 0) != (node.value == 0), "dispatch variable set twice or reset twice"
            self.dest = node.value
            return None
        raise TypeError(node)

    def dispatch(self, node) -> str | None:
        acts = node.dispatch.get(self.dest)
        if acts is None:
            return None
        for a in acts:
            r = self.run(a)
            if r is not None:
                return r
        return None


def run_tree(cfg: st.CFG, root, choose, limit: int) -> list[tuple]:
    t = _Tree(cfg, choose, limit)
    try:
        with st.deep_recursion():
            t.run(root)
        assert t.dest == 0, "dispatch variable left set"
    except _Stop:
        pass
    return t.trace[:limit]


def same_behaviour(cfg: st.CFG, root, seeds: range, limit: int = 300) -> None:
    for seed in seeds:
        choose = oracle(seed)
        a = run_cfg(cfg, choose, limit)
        b = run_tree(cfg, root, choose, limit)
        n = min(len(a), len(b))
        assert a[:n] == b[:n], f"seed {seed}: first difference at step {next(i for i in range(n) if a[i] != b[i])}"
        assert len(a) == len(b) or n == limit or (a and a[-1][0] in ("ret", "unreachable")), f"seed {seed}: lengths {len(a)} {len(b)}"


def make(edges: dict[int, list[int]], kinds: dict[int, str] | None = None) -> st.CFG:
    """A CFG from {block: successors}; the kind follows from the count unless given."""
    n = max(list(edges) + [s for ss in edges.values() for s in ss]) + 1
    succs = [list(edges.get(b, [])) for b in range(n)]
    kk = []
    for b in range(n):
        if kinds and b in kinds:
            kk.append(kinds[b])
        else:
            kk.append({0: "ret", 1: "br", 2: "cbr"}.get(len(succs[b]), "switch"))
    return st.CFG(succs, kk)


def random_cfg(rng: random.Random, n: int) -> st.CFG | None:
    """A random CFG of n blocks, or None when it is irreducible."""
    edges = {}
    for b in range(n):
        r = rng.random()
        if b == n - 1 or r < 0.1:
            edges[b] = []
        elif r < 0.4:
            edges[b] = [rng.randrange(n)]
        elif r < 0.9:
            edges[b] = [rng.randrange(n), rng.randrange(n)]
        else:
            edges[b] = [rng.randrange(n) for _ in range(rng.randrange(3, 5))]
    try:
        return make(edges)
    except st.Irreducible:
        return None
