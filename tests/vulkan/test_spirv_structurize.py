"""The CFG structurizer on hand-made CFGs: the structured tree must execute exactly the blocks
and edges the CFG does, for many branch decisions; loops' exits are placed after them;
irreducible flow is refused naming an entering branch."""

from __future__ import annotations

import random

import pytest
from cfgsim import make, random_cfg, same_behaviour

from cuport.backends.vulkan.spirv import structurize as st

# name: (edges, kinds)
CASES = {
    "straight": ({0: [1], 1: [2], 2: []}, None),
    "diamond": ({0: [1, 2], 1: [3], 2: [3], 3: []}, None),
    "if_then": ({0: [1, 2], 1: [2], 2: []}, None),
    "both_arms_same": ({0: [1, 1], 1: []}, None),
    "nested_diamonds": ({0: [1, 4], 1: [2, 3], 2: [5], 3: [5], 4: [5], 5: []}, None),
    "shared_tail": ({0: [1, 2], 1: [3, 4], 2: [3], 3: [4], 4: []}, None),
    "while_loop": ({0: [1], 1: [2, 3], 2: [1], 3: []}, None),
    "do_while": ({0: [1], 1: [1, 2], 2: []}, None),
    "loop_two_exits": ({0: [1], 1: [2, 4], 2: [3, 5], 3: [1], 4: [6], 5: [6], 6: []}, None),
    "loop_exits_to_different_code": ({0: [1], 1: [2, 4], 2: [3, 5], 3: [1], 4: [], 5: []}, None),
    "loop_continue_from_middle": ({0: [1], 1: [2, 6], 2: [3, 1], 3: [4, 5], 4: [1], 5: [1], 6: []}, None),
    "nested_loops": ({0: [1], 1: [2, 5], 2: [3], 3: [3, 4], 4: [1], 5: []}, None),
    "break_from_nested": ({0: [1], 1: [2, 6], 2: [3, 5], 3: [4, 6], 4: [2], 5: [1], 6: []}, None),
    "continue_outer_from_inner": ({0: [1], 1: [2, 6], 2: [3, 5], 3: [4, 1], 4: [2], 5: [1], 6: []}, None),
    "early_return_in_loop": ({0: [1], 1: [2, 4], 2: [3, 4], 3: [1], 4: []}, None),
    "triple_nest_break_all": ({0: [1], 1: [2, 9], 2: [3, 8], 3: [4, 7], 4: [5, 9], 5: [3], 7: [2], 8: [1], 9: []}, None),
    "switch": ({0: [1, 2, 3, 2], 1: [4], 2: [4], 3: [4], 4: []}, None),
    "switch_in_loop": ({0: [1], 1: [2, 3, 5, 1], 2: [1], 3: [4], 4: [1], 5: []}, None),
    "merge_into_loop_header": ({0: [1, 2], 1: [3], 2: [3], 3: [4, 5], 4: [3], 5: []}, None),
    "loop_exit_to_merge_of_outer_if": ({0: [1, 4], 1: [2], 2: [3, 4], 3: [2], 4: []}, None),
    "self_loop_entry": ({0: [0, 1], 1: []}, None),
    "unreachable_end": ({0: [1, 2], 1: [], 2: []}, {2: "unreachable"}),
    "ladder": ({0: [1, 5], 1: [2, 5], 2: [3, 5], 3: [4, 5], 4: [5], 5: []}, None),
    "multiple_merges": ({0: [1, 2], 1: [3, 4], 2: [3, 4], 3: [4, 5], 4: [5], 5: []}, None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_structured_tree_runs_like_the_cfg(name: str) -> None:
    edges, kinds = CASES[name]
    cfg = make(edges, kinds)
    root = st.structurize(cfg)
    same_behaviour(cfg, root, range(60))


def test_random_reducible_cfgs() -> None:
    rng = random.Random(7)
    done = 0
    while done < 300:
        cfg = random_cfg(rng, rng.randrange(3, 14))
        if cfg is None:
            continue
        root = st.structurize(cfg)
        same_behaviour(cfg, root, range(12), limit=200)
        done += 1


def _loop_nodes(node, out):
    if isinstance(node, st.Seq):
        for i in node.items:
            _loop_nodes(i, out)
    elif isinstance(node, st.Branch):
        for a in node.arms:
            _loop_nodes(a, out)
    elif isinstance(node, (st.Loop, st.Block)):
        out.append(node)
        _loop_nodes(node.body, out)
    return out


def _codes(node, out):
    if isinstance(node, st.Code):
        out.append(node.block)
    elif isinstance(node, st.Seq):
        for i in node.items:
            _codes(i, out)
    elif isinstance(node, st.Branch):
        for a in node.arms:
            _codes(a, out)
    elif isinstance(node, (st.Loop, st.Block)):
        _codes(node.body, out)
    return out


def test_loop_exits_are_placed_after_the_loop() -> None:
    """Invocations leaving a loop by different exits must meet after it: the exit blocks'
    code is never inside the loop construct."""
    for name in ("loop_two_exits", "break_from_nested", "triple_nest_break_all", "loop_exits_to_different_code"):
        edges, kinds = CASES[name]
        cfg = make(edges, kinds)
        root = st.structurize(cfg)
        for node in _loop_nodes(root, []):
            if isinstance(node, st.Loop):
                inside = set(_codes(node.body, []))
                assert inside <= cfg.body[node.header], (name, node.header, inside - cfg.body[node.header])


def test_no_dispatch_for_single_level_exits() -> None:
    """Plain loops with breaks and continues, ifs and early returns need no dispatch variable."""
    for name in ("diamond", "while_loop", "do_while", "loop_continue_from_middle", "early_return_in_loop",
                 "nested_diamonds", "switch_in_loop", "ladder"):
        edges, kinds = CASES[name]
        root = st.structurize(make(edges, kinds))
        assert not st.uses_dispatch(root), name


def test_break_from_nested_uses_dispatch() -> None:
    root = st.structurize(make(*CASES["break_from_nested"]))
    assert st.uses_dispatch(root)


@pytest.mark.parametrize("edges,entry_edge", [
    ({0: [1, 2], 1: [2], 2: [1, 3], 3: []}, {(0, 2), (0, 1)}),
    ({0: [1, 3], 1: [2], 2: [1, 4], 3: [2], 4: []}, {(3, 2), (0, 1)}),
])
def test_irreducible_is_refused(edges, entry_edge) -> None:
    with pytest.raises(st.Irreducible) as e:
        make(edges)
    assert e.value.edge in entry_edge


def test_deep_chain_does_not_overflow() -> None:
    n = 3000
    edges = {b: [b + 1, b + 1] if b % 2 else [b + 1] for b in range(n)}
    edges[n] = []
    cfg = make(edges)
    root = st.structurize(cfg)
    same_behaviour(cfg, root, range(2), limit=10000)
