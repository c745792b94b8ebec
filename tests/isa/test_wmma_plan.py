"""wmma.mma's gathering plan (isa/wmma.py), checked for every shape: each product's a and b
element is fetched from the lane and slot that hold it, and the fetches per lane are the
ones the module docstring counts (the costs the plan was chosen by)."""

from __future__ import annotations

import pytest

from cuport.isa.wmma import SHAPES, W, mma_plan

#: shape -> element types of a and b (elements per 32-bit register) as PTX has them
TYPES = {"m16n16k16": ("f16", "s8"), "m32n8k16": ("f16", "s8"), "m8n32k16": ("f16", "s8"),
         "m16n16k8": ("tf32",), "m8n8k4": ("f64",)}
PER = {"f16": 2, "s8": 4, "tf32": 1, "f64": 1}
#: (shape, type, elements per unit) -> (shuffles for a, for b): the docstring's table
#: (per thread: registers), and the CPU backend's fetches of converted elements (1)
COSTS = {
    ("m16n16k16", "f16", 2): (64, 8), ("m16n16k16", "s8", 4): (32, 4),
    ("m32n8k16", "f16", 2): (128, 8), ("m32n8k16", "s8", 4): (64, 4),
    ("m8n32k16", "f16", 2): (64, 0), ("m8n32k16", "s8", 4): (32, 0),
    ("m16n16k8", "tf32", 1): (64, 8), ("m8n8k4", "f64", 1): (8, 4),
    ("m16n16k16", "f16", 1): (128, 16), ("m32n8k16", "f16", 1): (256, 16),
    ("m8n32k16", "f16", 1): (128, 0),
}
CASES = [(shape, t, per) for shape, ts in TYPES.items() for t in ts for per in {PER[t], 1}]


def _fetches(use, slots: int, k: int) -> set:
    return {f for s in range(slots) for kk in range(k) for f in use(s, kk).fetches if not f.own}


@pytest.mark.parametrize("shape, t, per", CASES, ids=[f"{s}-{t}-{p}" for s, t, p in CASES])
def test_every_product_reads_its_elements(shape: str, t: str, per: int):
    m, n, k = SHAPES[shape]
    use_a, use_b = mma_plan(m, n, k, per, per)
    for s in range(m * n // W):
        for kk in range(k):
            for lane in range(W):
                i, j = divmod(s * W + lane, n)
                for use, e in ((use_a(s, kk), i * k + kk), (use_b(s, kk), kk * n + j)):
                    slot, holder = divmod(e, W)
                    assert use.src(lane) == holder
                    assert use.unit(lane) * per + use.pos(lane) == slot
                    assert use.unit(lane) in {f.unit for f in use.fetches}
                    assert all(f.src[lane] == holder for f in use.fetches)


@pytest.mark.parametrize("shape, t, per", CASES, ids=[f"{s}-{t}-{p}" for s, t, p in CASES])
def test_fetches_per_lane(shape: str, t: str, per: int):
    m, n, k = SHAPES[shape]
    use_a, use_b = mma_plan(m, n, k, per, per)
    slots = m * n // W
    if per > 1:  # the per-thread plan: one register, the same for every lane, per product
        assert all(len(use(s, kk).fetches) == 1 for use in (use_a, use_b)
                   for s in range(slots) for kk in range(k))
    got = (len(_fetches(use_a, slots, k)), len(_fetches(use_b, slots, k)))
    assert got == COSTS.get((shape, t, per), COSTS.get((shape, "f16", per))), got
