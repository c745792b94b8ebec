"""Kernels whose control flow is each hand-made CFG of test_spirv_structurize (and random
reducible ones), with phis at merge points: every module passes spirv-val."""

from __future__ import annotations

import random

import pytest

from .cfgkernel import cfg_kernel
from .cfgsim import make, random_cfg
from .spvtools import needs_spirv_val, translate_valid
from .test_spirv_structurize import CASES


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
