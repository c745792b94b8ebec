"""What a masked access does for the lanes that do not make it.

- No blend (emit.write): `x = c ? p[i] : 0`, which nvcc writes as `mov %f, 0; @!c bra L; ld
  %f; L:` and passes/predicate.py as `mov %f, 0; @c ld %f`, loads zero into the lanes that
  skip (a masked load's or gather's pass-through), so the register's old zero need not be
  blended back in; other defaults (-0, 7), and loads whose value reaches every lane (one
  address for the warp), still are.
- No dummy slot (lane_forms._in_static_shared): a run of a masked shared access in which no
  lane executes loads from or stores to its own address, masked off, where every lane's
  address lies inside the block's static shared memory in every warp, known at compile time
  (a stencil's tile reads under its border test); elsewhere (an index from a parameter, rows
  past the array in lanes that do not read them) it uses the dummy slot, as before.
Answers against a host computation, with partial warps and lanes that skip in every warp."""

from __future__ import annotations

import numpy as np
import pytest
from nvcc_source import jacobi_ref, jacobi_source, needs_nvcc, ptx_of_source

import cuport
from cuport.backends import facts
from cuport.backends.cpu import compiler, emit

pytestmark = needs_nvcc

SOURCE = jacobi_source("stencil") + r"""
extern "C" __global__ void defaults(const float* in, float* out, int n, int stride) {
  int t = blockIdx.x * blockDim.x + threadIdx.x, m = blockDim.x * gridDim.x;
  out[t] = t % 7 != 2 ? in[t] : 1.0f;                     // (an if/else: no guarded load)
  out[m + t] = t < n ? in[t + 3] : 0.0f;                  // runs of contiguous lanes
  out[2 * m + t] = t < n - 3 ? in[(t * stride) % n] : 0.0f;  // a gather
  out[3 * m + t] = t % 3 != 0 ? in[t + 1] : -0.0f;        // -0 has its sign bit set
  out[4 * m + t] = t % 5 != 1 ? in[t + 2] : 7.0f;
  out[5 * m + t] = t > 40 ? in[blockIdx.x] : 0.0f;        // one address for the warp
}


// rows 12..27 of a 16-row array, read only where they exist (ty < 4): the other warps'
// lanes' addresses lie past the array; and a row offset from a parameter
extern "C" __global__ void shared_rows(const float* in, float* out, int k) {
  __shared__ float s[16][16];
  int tx = threadIdx.x, ty = threadIdx.y;
  s[ty][tx] = in[ty * 16 + tx];
  __syncthreads();
  float v = -1.0f, w = -1.0f;
  if (ty < 4 && tx != 3) v = s[ty + 12][tx];
  if (ty + k < 16 && tx != 5) w = s[ty + k][tx];
  out[ty * 16 + tx] = v;
  out[256 + ty * 16 + tx] = w;
}
"""


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of_source(tmp_path_factory, "guarded_loads", SOURCE)


def _defaults(ptx: str) -> dict[str, str]:
    """Each guarded load's destination -> the constant nvcc set it to before (the load's
    default): a `mov` of a constant, then a guarded branch, then the load."""
    consts, guarded, out = {}, set(), {}
    for line in ptx.splitlines():
        words = line.replace(",", " ").replace(";", " ").split()
        if words[:1] == ["mov.f32"] and words[2].startswith("0f"):
            consts[words[1]] = words[2]
        elif words[:1] == ["mov.f32"] and words[2] in consts:
            consts[words[1]] = consts[words[2]]
        elif words[:1] and words[0].startswith("@") and words[1:2] == ["bra"]:
            guarded |= set(consts)
        elif words[:1] == ["ld.global.f32"] and words[1] in guarded:
            out[words[1]] = consts[words[1]]
    return out


def test_zero_defaults_skip_the_blend(ptx, monkeypatch):
    blended = []
    real = emit.FunctionEmitter._blend

    def spy(self, m, new, old, executing=False):
        if self.ins is not None and self.ins.op == "ld":
            blended.append(self.ins.args[0].name)
        return real(self, m, new, old, executing)
    monkeypatch.setattr(emit.FunctionEmitter, "_blend", spy)
    compiler.run_pipeline(compiler.ModuleCompiler(facts.load_ptx([ptx]), "defaults", (64, 1, 1)), until="emit")
    monkeypatch.undo()
    defaults = _defaults(ptx)
    # zero (directly or through a copy) for the contiguous load, the gather and the uniform
    # one; -0 and 7 for the others
    assert sorted(defaults.values()) == ["0f00000000"] * 3 + ["0f40E00000", "0f80000000"], defaults
    zero = {r for r, c in defaults.items() if c == "0f00000000"}
    # the uniform address's load is one scalar, its value in every lane: blended
    assert len(zero - set(blended)) == 2
    assert {r for r, c in defaults.items() if c != "0f00000000"} <= set(blended)


@pytest.mark.parametrize("grid,block,n", [(3, 64, 150), (2, 96, 170), (1, 50, 37)])
def test_guarded_loads_match_host(ptx, grid, block, n):
    stride = 7
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n + 3 + grid * block).astype(np.float32)
    m = grid * block
    out = np.full(6 * m, np.nan, np.float32)
    cuport.Module(ptx).kernel("defaults")(grid, block, (x, out, n, stride))
    t = np.arange(m)
    expect = np.concatenate([
        np.where(t % 7 != 2, x[t], np.float32(1)),
        np.where(t < n, x[np.minimum(t + 3, len(x) - 1)], np.float32(0)),
        np.where(t < n - 3, x[(t * stride) % n], np.float32(0)),
        np.where(t % 3 != 0, x[t + 1], np.float32(-0.0)),
        np.where(t % 5 != 1, x[t + 2], np.float32(7)),
        np.where(t > 40, x[t // block], np.float32(0)),
    ])
    assert out.view(np.uint32).tolist() == expect.astype(np.float32).view(np.uint32).tolist()


def test_shared_runs_inside_the_tile_need_no_dummy(ptx, monkeypatch):
    from cuport.backends.cpu import lane_forms

    proved = {}
    real = lane_forms.LaneForms._in_static_shared_now

    def spy(self, name, offset, size):
        proved[(self.fn.name, name, offset)] = real(self, name, offset, size)
        return proved[(self.fn.name, name, offset)]
    monkeypatch.setattr(lane_forms.LaneForms, "_in_static_shared_now", spy)
    for kernel in ("stencil", "shared_rows"):
        compiler.run_pipeline(compiler.ModuleCompiler(facts.load_ptx([ptx]), kernel, (16, 16, 1)), until="emit")
    monkeypatch.undo()
    stencil = {off: ok for (k, _, off), ok in proved.items() if k == "stencil"}
    rows = {(r, off): ok for (k, r, off), ok in proved.items() if k == "shared_rows"}
    # the tile's store and the interior's and border's reads (nvcc's [%r5+4/72/76/80/148])
    assert {4, 72, 76, 80, 148} <= set(stencil) and all(stencil.values()), stencil
    # s[ty][tx] is inside; s[ty + 12][tx] and s[ty + k][tx] are not known to be
    assert sorted(rows.values()) == [False, False, True], rows
    assert {off for (_, off), ok in rows.items() if ok} == {0}
    assert {off for (_, off), ok in rows.items() if not ok} == {0, 768}


@pytest.mark.parametrize("n", [41, 64, 17])
def test_stencil_matches_host(ptx, n):
    rng = np.random.default_rng(n)
    u = rng.random((n, n), dtype=np.float32)
    v = np.full((n, n), -1, np.float32)
    g = (n + 15) // 16
    cuport.Module(ptx).kernel("stencil")((g, g), (16, 16), (u, v, n))
    ref = jacobi_ref(u)
    assert np.array_equal(v, ref)


@pytest.mark.parametrize("k", [0, 3, 15, 16])
def test_shared_rows_match_host(ptx, k):
    x = np.arange(256, dtype=np.float32) * 0.5
    out = np.zeros(512, np.float32)
    cuport.Module(ptx).kernel("shared_rows")(1, (16, 16), (x, out, k))
    s = x.reshape(16, 16)
    ty, tx = np.mgrid[0:16, 0:16]
    v = np.where((ty < 4) & (tx != 3), s[np.minimum(ty + 12, 15), tx], -1)
    w = np.where((ty + k < 16) & (tx != 5), s[np.minimum(ty + k, 15), tx], -1)
    assert out.tolist() == np.concatenate([v.reshape(-1), w.reshape(-1)]).astype(np.float32).tolist()
