"""Liveness (passes/liveness.py) of registers written under a guard: a register's first
write leaves the lanes it skips without a value, so nothing before it is live through
them, and a barrier does not keep it; a write that an earlier one reaches keeps the old
value of the lanes it skips. Checked on what a barrier saves and on the kernels' answers."""

from __future__ import annotations

import numpy as np
import pytest
from nvcc_source import needs_nvcc, ptx_of_source

import cuport
from cuport.backends import facts
from cuport.backends.cpu import compiler
from cuport.isa.operands import defs
from cuport.passes import cfg as cfgmod

pytestmark = needs_nvcc

SOURCE = r"""
// a shared-memory tree: each step's `if (t < w)` becomes loads and a store under one guard
// (passes/predicate.py), the loads' registers written nowhere else
extern "C" __global__ void tree(const float* x, float* out) {
  __shared__ float s[256];
  int t = threadIdx.x;
  s[t] = x[blockIdx.x * 256 + t];
  __syncthreads();
  for (int w = 128; w > 0; w >>= 1) {
    if (t < w) s[t] += s[t + w];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// v's guarded write is reached by its earlier values: the lanes that skip it keep them
extern "C" __global__ void keep(const int* x, int* out, int rounds) {
  __shared__ int s[128];
  int t = threadIdx.x, v = -1;
  for (int r = 0; r < rounds; r++) {
    s[t] = x[t] * r;
    __syncthreads();
    if ((t + r) % 3 == 0) v = s[(t + 1) % 128];
    __syncthreads();
  }
  out[t] = v;
}
"""


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of_source(tmp_path_factory, "liveness", SOURCE)


def _kept_at_barriers(ptx: str, kernel: str, block) -> tuple[set[str], set[str]]:
    """The registers live where warps resume after a barrier, and those whose every write
    is guarded."""
    mc = compiler.ModuleCompiler(facts.load_ptx([ptx]), kernel, block)
    compiler.run_pipeline(mc, until="liveness")
    g = mc.kernel_cfg
    kept: set[str] = set()
    for b in g.blocks:
        if b.term is not None and cfgmod.is_suspend(b.term):
            kept |= mc.kernel_live[b.succs[0]]
    writes: dict[str, list[bool]] = {}
    for b in g.blocks:
        for ins in b.instrs:
            for r in defs(ins):
                writes.setdefault(r.name, []).append(ins.guard is not None)
    return kept, {name for name, guarded in writes.items() if all(guarded)}


def test_guarded_first_writes_are_not_kept_across_barriers(ptx):
    kept, guarded_only = _kept_at_barriers(ptx, "tree", (256, 1, 1))
    assert len(guarded_only) >= 14  # two loads in each of the tree's steps
    assert not kept & guarded_only
    x = np.random.default_rng(0).random(4 * 256, dtype=np.float32)
    out = np.zeros(4, np.float32)
    cuport.Module(ptx).kernel("tree")(4, 256, (x, out))
    s = x.reshape(4, 256).copy()
    w = 128
    while w:
        s[:, :w] = s[:, :w] + s[:, w:2 * w]
        w //= 2
    assert out.tobytes() == s[:, 0].tobytes()


def test_a_guarded_write_reached_by_earlier_ones_keeps_the_skipped_lanes(ptx):
    rounds = 7
    x = np.arange(128, dtype=np.int32) * 3 - 100
    out = np.zeros(128, np.int32)
    cuport.Module(ptx).kernel("keep")(1, 128, (x, out, rounds))
    t = np.arange(128)
    v = np.full(128, -1)
    for r in range(rounds):
        take = (t + r) % 3 == 0
        v[take] = (x * r)[(t + 1) % 128][take]
    assert out.tolist() == v.tolist()
