"""Kernels whose control flow is each hand-made CFG of test_spirv_structurize (and random
reducible ones), with phis at merge points: every module passes spirv-val."""

from __future__ import annotations

import random

import pytest
from cfgkernel import cfg_kernel
from cfgsim import make, random_cfg
from spvtools import needs_spirv_val, translate_valid
from test_spirv_structurize import CASES


@needs_spirv_val
@pytest.mark.parametrize("name", sorted(CASES))
def test_hand_made_cfg_validates(name: str) -> None:
    translate_valid(cfg_kernel(make(*CASES[name])))


@needs_spirv_val
def test_random_cfgs_validate() -> None:
    rng = random.Random(11)
    done = 0
    while done < 120:
        cfg = random_cfg(rng, rng.randrange(3, 16))
        if cfg is None:
            continue
        translate_valid(cfg_kernel(cfg, with_phis=rng.random() < 0.7))
        done += 1


def _run_trace(cfg, seed: int) -> None:
    import numpy as np
    from cfgkernel import CHOICES, MAX_TRACE, expected_trace
    from spvrun import Ptr, run

    rng = np.random.default_rng(seed)
    # decisions biased towards leaving loops after a few rounds
    choices = rng.integers(0, 2**31, CHOICES, dtype=np.uint32)
    want = expected_trace(cfg, choices)
    if want is None or cfg.kinds[next(iter(cfg.rpo))] == "unreachable":
        return
    if "unreachable" in (cfg.kinds[b] for b in want if 0 <= b < len(cfg.kinds)):
        return  # reaching `unreachable` is undefined behaviour
    sh = translate_valid(cfg_kernel(cfg), local=(8, 1, 1))
    traces, _ = run(sh, (1, 1, 1), [Ptr(np.zeros((8, MAX_TRACE + 2), np.uint32)), Ptr(choices)])
    for trace in traces:
        got = trace[1:1 + trace[0]].astype(np.int32).tolist()
        assert got == want


@pytest.mark.parametrize("name", sorted(CASES))
def test_hand_made_cfg_runs_like_the_cfg(name: str) -> None:
    """On the device, the structured kernel visits the blocks (and phis see the edges) that
    the CFG prescribes for the same branch decisions."""
    cfg = make(*CASES[name])
    for seed in range(3):
        _run_trace(cfg, seed)


def test_random_cfgs_run_like_the_cfg() -> None:
    rng = random.Random(5)
    done = 0
    while done < 40:
        cfg = random_cfg(rng, rng.randrange(3, 14))
        if cfg is None:
            continue
        _run_trace(cfg, done)
        done += 1
