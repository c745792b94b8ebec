"""Region loops (passes/regions.py, backends/cpu/region_loops.py): a kernel whose barriers
are all converged runs each stretch between barriers as a loop over the block's warps.
These check where the CPU backend uses them, and rounds in which warps wait at different
barriers, against the results PTX's barrier semantics give."""

from __future__ import annotations

import numpy as np
import pytest
from nvcc_source import needs_nvcc, ptx_of_source

import cuport
from cuport.backends import facts
from cuport.backends.cpu import compiler, region_loops
from cuport.isa.operands import defs
from cuport.passes import barrier_state
from cuport.passes import cfg as cfgmod

pytestmark = needs_nvcc

SOURCE = r"""
#define T 16
// two barriers in a loop: the code before the first is part of two regions
extern "C" __global__ void tiled(const float* A, const float* B, float* C, int n) {
  __shared__ float As[T][T], Bs[T][T];
  int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < n; k0 += T) {
    As[ty][tx] = A[row * n + k0 + tx];
    Bs[ty][tx] = B[(k0 + ty) * n + col];
    __syncthreads();
    for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[row * n + col] = acc;
}

__device__ unsigned warp_index() { unsigned w; asm("mov.u32 %0, %%warpid;" : "=r"(w)); return w; }

// %warpid is the same in every lane of a warp, so these barriers are in converged code, yet
// only even warps reach the first (PTX counts arrivals at barrier 0 whichever bar.sync or
// bar.red a warp executes). Completion 1: even warps at the first, odd ones at the
// second. Then, in one round, even warps run to the second and odd ones to the
// __syncthreads_count, which completion 2 answers with the odd threads' 128 arrivals (had
// the even warps run on past the second in the same round, 256). Completion 3: even warps
// at the __syncthreads_count (odd ones finished): 128.
extern "C" __global__ void uneven(int* out) {
  __shared__ int s[256];
  int t = threadIdx.x;
  bool even = (warp_index() & 1) == 0;
  s[t] = t;
  if (even) {
    __syncthreads();
    s[t] += s[t ^ 32] * 1000;  // the odd partner's slot, which it does not write again
  }
  __syncthreads();
  if (even) s[t] += 7;
  out[blockIdx.x * blockDim.x + t] = s[t] + 100000 * __syncthreads_count(1);
}

// three barriers of which a block reaches one (the condition is the same for the block),
// each followed by the same long stretch: emitting it once per region would triple it
extern "C" __global__ void three_ways(const float* x, float* out, int which) {
  __shared__ float s[128];
  int t = threadIdx.x;
  s[t] = x[t];
  if (which == 0) { s[t] *= 2.0f; __syncthreads(); }
  else if (which == 1) { s[t] *= 3.0f; __syncthreads(); }
  else { s[t] *= 5.0f; __syncthreads(); }
  float v = s[(t + 1) % 128];
  #pragma unroll
  for (int i = 0; i < 40; i++) v = v * 1.0001f + s[(t + i) % 128];
  out[t] = v;
}

// a loop reading global memory whose trips differ per lane (lanes pending while others loop):
// warps step aside in it every few iterations, then the block meets at a tree of barriers
extern "C" __global__ void uneven_strides(const int* x, int n, int* out, int* block_out) {
  __shared__ int s[128];
  int t = threadIdx.x;
  int acc = 0;
  for (int i = blockIdx.x * 128 + t; i < n; i += gridDim.x * 128 * (1 + t % 3)) acc += x[i] * (i % 7);
  s[t] = acc;
  __syncthreads();
  for (int w = 64; w > 0; w >>= 1) {
    if (t < w) s[t] += s[t + w];
    __syncthreads();
  }
  out[blockIdx.x * 128 + t] = acc;
  if (t == 0) block_out[blockIdx.x] = s[0];
}

// no barrier: the loop is interleaved all the same
extern "C" __global__ void gather_loop(const int* idx, const float* x, float* y, int n, int m) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  float acc = 0.0f;
  for (int j = 0; j < m + t % 5; j++) acc += x[idx[(t * 7 + j) % n]];
  y[t] = acc;
}

// lanes of the else wait while the others loop: the warp steps aside with lanes pending
// outside the loop, and the warp after it starts with none
extern "C" __global__ void loop_in_branch(const int* x, int* out, int n) {
  int t = threadIdx.x, acc = 0;
  if (t % 3 != 0) {
    for (int i = t; i < n; i += 96) acc += x[i] * (i & 7);
    acc *= 2;
  } else {
    acc = x[t] - 1000;
    out[blockDim.x + t] = acc;
  }
  out[t] = acc;
}

// lanes leave a loop with barriers in it, after the first barrier of a round: the warp
// resumes at both barriers without them (the exits come before the barriers' later rounds)
extern "C" __global__ void exit_in_loop(const int* x, int* out, int rounds) {
  __shared__ int s[128];
  int t = threadIdx.x, acc = 0;
  for (int r = 0; r < rounds; r++) {
    s[t] = x[t] + r;
    __syncthreads();
    acc += s[(t + 1) % 128];
    out[t] = acc;
    if (acc > 5 * x[t] + 20) return;
    __syncthreads();
  }
}

// every exit comes after the one barrier: the warp gets past it with all its lanes
extern "C" __global__ void exit_after(const float* in, float* out, int n) {
  __shared__ float s[128];
  int t = threadIdx.x, i = blockIdx.x * 128 + t;
  s[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  if (i >= n) return;
  out[i] = s[t] + s[(t + 1) % 128];
}

// lanes exit after the barrier, then the others vote: the vote leaves the exited ones out
extern "C" __global__ void exit_then_vote(const int* x, unsigned* out) {
  __shared__ int s[128];
  int t = threadIdx.x;
  s[t] = x[t];
  __syncthreads();
  if (s[(t + 5) % 128] % 3 == 0) return;
  out[t] = __ballot_sync(__activemask(), s[t] & 1);
}
"""


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of_source(tmp_path_factory, "regions", SOURCE)


def _regions(ptx: str, kernel: str, block) -> list | None:
    mc = compiler.ModuleCompiler(facts.load_ptx([ptx]), kernel, block)
    return compiler.run_pipeline(mc, until="regions").kernel_regions


def test_a_loop_with_two_barriers_is_three_regions(ptx):
    regions = _regions(ptx, "tiled", (16, 16, 1))
    assert regions is not None and len(regions) == 3
    start, after_load, after_use = regions
    assert start.barrier is None and after_load.barrier == 0 and after_use.barrier == 1
    # the loads before the first barrier follow both the entry and the loop's back edge
    assert set(start.blocks) & set(after_use.blocks)
    assert not set(after_load.blocks) & (set(start.blocks) | set(after_use.blocks))


def test_tiled_matmul_in_region_loops(ptx):
    n = 48
    rng = np.random.default_rng(0)
    A, B = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    C = np.zeros((n, n), np.float32)
    cuport.Module(ptx).kernel("tiled")((n // 16, n // 16), (16, 16), (A, B, C, n))
    np.testing.assert_allclose(C, A.astype(np.float64) @ B.astype(np.float64), rtol=1e-5)


def test_warps_waiting_at_different_barriers(ptx):
    assert _regions(ptx, "uneven", (256, 1, 1)) is not None
    out = np.zeros(2 * 256, np.int32)
    cuport.Module(ptx).kernel("uneven")(2, 256, (out,))
    t = np.arange(256)
    even = (t // 32) % 2 == 0
    expect = np.where(even, t + (t ^ 32) * 1000 + 7, t) + 100000 * 128
    assert out.tolist() == np.tile(expect, 2).tolist()


def test_code_that_would_more_than_double_keeps_warp_suspension(ptx):
    assert _regions(ptx, "three_ways", (128, 1, 1)) is None
    x = np.arange(128, dtype=np.float32)
    for which, f in ((0, 2.0), (1, 3.0), (2, 5.0)):
        out = np.zeros(128, np.float32)
        cuport.Module(ptx).kernel("three_ways")(1, 128, (x, out, which))
        s = (x * np.float32(f)).astype(np.float32)
        v = s[(np.arange(128) + 1) % 128]
        for i in range(40):
            v = (v * np.float32(1.0001)).astype(np.float32) + s[(np.arange(128) + i) % 128]
        np.testing.assert_allclose(out, v, rtol=1e-6)


def test_loops_reading_global_memory_interleave_warps(ptx):
    regions = _regions(ptx, "uneven_strides", (128, 1, 1))
    assert regions is not None and any(r.interleave for r in regions)
    rng = np.random.default_rng(1)
    n, grid = 30_000, 5
    x = rng.integers(-50, 50, n, dtype=np.int32)
    out = np.zeros(grid * 128, np.int32)
    block_out = np.zeros(grid, np.int32)
    cuport.Module(ptx).kernel("uneven_strides")(grid, 128, (x, n, out, block_out))
    expect = []
    for b in range(grid):
        for t in range(128):
            i, acc = b * 128 + t, 0
            while i < n:
                acc += int(x[i]) * (i % 7)
                i += grid * 128 * (1 + t % 3)
            expect.append(acc)
    assert out.tolist() == expect
    assert block_out.tolist() == [sum(expect[b * 128:(b + 1) * 128]) for b in range(grid)]


def test_a_kernel_without_barriers_interleaves_its_loop(ptx):
    regions = _regions(ptx, "gather_loop", (96, 1, 1))
    assert regions is not None and len(regions) > 1 and all(r.interleave for r in regions[1:])
    rng = np.random.default_rng(2)
    n, m = 1000, 21
    idx = rng.integers(0, n, n, dtype=np.int32)
    x = rng.random(n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    cuport.Module(ptx).kernel("gather_loop")((n + 95) // 96, 96, (idx, x, y, n, m))
    expect = np.zeros(n, np.float32)
    for t in range(n):
        acc = np.float32(0)
        for j in range(m + t % 5):
            acc = np.float32(acc + x[idx[(t * 7 + j) % n]])
        expect[t] = acc
    assert y.tobytes() == expect.tobytes()


def test_a_warp_steps_aside_with_lanes_waiting_outside_the_loop(ptx):
    regions = _regions(ptx, "loop_in_branch", (96, 1, 1))
    assert regions is not None and any(r.interleave for r in regions)
    n = 5000
    x = np.arange(n, dtype=np.int32) % 13
    out = np.zeros(192, np.int32)
    cuport.Module(ptx).kernel("loop_in_branch")(1, 96, (x, out, n))
    expect = np.zeros(192, np.int32)
    for t in range(96):
        if t % 3:
            expect[t] = 2 * sum(int(x[i]) * (i & 7) for i in range(t, n, 96))
        else:
            expect[t] = expect[96 + t] = x[t] - 1000
    assert out.tolist() == expect.tolist()


def _exits_before(ptx: str, kernel: str, block) -> list[bool]:
    mc = compiler.ModuleCompiler(facts.load_ptx([ptx]), kernel, block)
    compiler.run_pipeline(mc, until="regions")
    g = mc.kernel_cfg
    d = mc.kernel_div
    return [cfgmod.exits_before(g, d.varying, d.divergent_branches, b.index, mc.has_exit)
            for b in g.blocks if b.term is not None and cfgmod.is_suspend(b.term)]


def test_where_lanes_may_have_exited_at_a_barrier(ptx):
    assert _exits_before(ptx, "exit_after", (128, 1, 1)) == [False]
    assert _exits_before(ptx, "tiled", (16, 16, 1)) == [False, False]
    # an exit in the loop comes before the barriers' next rounds
    assert _exits_before(ptx, "exit_in_loop", (128, 1, 1)) == [True, True]


def test_lanes_that_left_a_loop_with_barriers_stay_gone(ptx):
    assert _regions(ptx, "exit_in_loop", (128, 1, 1)) is not None
    rng = np.random.default_rng(3)
    x = rng.integers(0, 40, 128, dtype=np.int32)
    rounds = 12
    out = np.full(128, -1, np.int32)
    cuport.Module(ptx).kernel("exit_in_loop")(1, 128, (x, out, rounds))
    t = np.arange(128)
    s = np.zeros(128, np.int64)
    acc = np.zeros(128, np.int64)
    alive = np.ones(128, bool)
    expect = np.full(128, -1, np.int64)
    for r in range(rounds):
        s[alive] = x[alive] + r  # a thread that left keeps its last value in s
        acc[alive] += s[(t + 1) % 128][alive]
        expect[alive] = acc[alive]
        alive &= ~(acc > 5 * x + 20)
    assert out.tolist() == expect.tolist()


def test_exits_after_the_barrier(ptx):
    n = 300
    x = np.arange(n, dtype=np.float32)
    out = np.full(n + 84, -1.0, np.float32)
    cuport.Module(ptx).kernel("exit_after")(3, 128, (x, out, n))
    padded = np.concatenate([x, np.zeros(84, np.float32)]).reshape(3, 128)
    expect = (padded + np.roll(padded, -1, axis=1)).reshape(-1)
    expect[n:] = -1.0
    assert out.tolist() == expect.tolist()


def test_exit_masks_are_kept_only_where_read(ptx, monkeypatch):
    """A warp's exited lanes (WS_EXITED) are written only where something reads them later
    (emit._exits_read): not in a kernel whose lanes exit after its only barrier (jacobi's
    `if (!inside) return;` and every kernel's final `ret`), but where a warp collective
    follows the exit, or a barrier does."""
    from cuport.backends.cpu import emit

    seen = {}
    real = emit.FunctionEmitter._exits_read

    def spy(self):
        seen[self.fn.name] = real(self)
        return seen[self.fn.name]
    monkeypatch.setattr(emit.FunctionEmitter, "_exits_read", spy)
    for kernel in ("exit_after", "exit_then_vote", "exit_in_loop"):
        compiler.run_pipeline(compiler.ModuleCompiler(facts.load_ptx([ptx]), kernel, (128, 1, 1)), until="emit")
    monkeypatch.undo()
    assert seen == {"exit_after": False, "exit_then_vote": True, "exit_in_loop": True}
    x = np.random.default_rng(5).integers(0, 1000, 128, dtype=np.int32)
    out = np.full(128, 7, np.uint32)
    cuport.Module(ptx).kernel("exit_then_vote")(1, 128, (x, out))
    t = np.arange(128)
    stay = x[(t + 5) % 128] % 3 != 0
    expect = np.full(128, 7, np.uint64)
    for w in range(4):
        lanes = range(32 * w, 32 * w + 32)
        ballot = sum(1 << (i % 32) for i in lanes if stay[i] and x[i] & 1)
        for i in lanes:
            if stay[i]:
                expect[i] = ballot
    assert out.tolist() == expect.tolist()


def _lockstep(ptx: str, kernel: str, block) -> bool:
    mc = compiler.ModuleCompiler(facts.load_ptx([ptx]), kernel, block)
    return compiler.run_pipeline(mc, until="regions").kernel_lockstep


def test_warps_in_lockstep_only_where_none_can_wait_elsewhere(ptx):
    # one barrier, exits only after it: every warp runs each region with the others
    assert _lockstep(ptx, "exit_after", (128, 1, 1))
    # a region that may finish warps or loop back to a barrier, on a trip count that is the
    # block's (a kernel parameter): every warp does the same
    assert _lockstep(ptx, "tiled", (16, 16, 1))
    # warps wait at different barriers; a loop whose warps step aside: each warp's own
    # region is asked
    assert not _lockstep(ptx, "uneven", (256, 1, 1))
    assert not _lockstep(ptx, "uneven_strides", (128, 1, 1))


def test_a_worker_rotates_blocks_whose_loops_interleave(ptx):
    """A worker holds several blocks of a kernel with interleave points and runs a round of
    each in turn (their grid-stride loops read neighbouring memory together); the answers
    of such kernels are checked above, with more blocks than a worker holds."""
    def slots(kernel: str, block) -> int:
        mc = compiler.ModuleCompiler(facts.load_ptx([ptx]), kernel, block)
        compiler.run_pipeline(mc, until="regions")
        return mc.resident_slots

    assert slots("uneven_strides", (128, 1, 1)) == region_loops.INTERLEAVE_BLOCKS > 1
    assert slots("gather_loop", (96, 1, 1)) == region_loops.INTERLEAVE_BLOCKS
    assert slots("tiled", (16, 16, 1)) == 1


TREE_SOURCE = r"""
// the shape of a binomial option pricer (HeCBench binomial, cuda-samples binomialOptions):
// each thread holds ELEMS nodes of the tree in registers, set by max(payoff, 0); at every
// step the block trades its edge nodes through shared memory between two barriers, and the
// threads whose part of the tree is still alive (a condition that differs between lanes)
// step their nodes with mul + fma. The loop around the barriers runs a trip count that is
// the block's own (a parameter); thread 0 stores the root after it. (With ELEMS of 8 or
// fewer the step is short enough to run predicated: passes/predicate.py.)
#define ELEMS 16
extern "C" __global__ void tree(const float* x, float* out, int steps, float pu, float pd) {
  __shared__ float edge[129];
  int t = threadIdx.x;
  const float* xb = x + blockIdx.x * (128 * ELEMS + 1);
  float v[ELEMS + 1];
#pragma unroll
  for (int j = 0; j < ELEMS; j++) v[j] = fmaxf(xb[t * ELEMS + j], 0.0f);
  if (t == 0) edge[128] = fmaxf(xb[128 * ELEMS], 0.0f);
  int last = max(0, t * ELEMS - 1);
#pragma unroll 4
  for (int i = steps; i > 0; --i) {
    edge[t] = v[0];
    __syncthreads();
    v[ELEMS] = edge[t + 1];
    __syncthreads();
    if (i > last) {
#pragma unroll
      for (int j = 0; j < ELEMS; j++) v[j] = pu * v[j + 1] + pd * v[j];
    }
  }
  if (t == 0) out[blockIdx.x] = v[0];
}

// thread 0 sets a flag every thread reads after the barrier, and sets it again in its next
// trip, before the barrier, without a second barrier between: a race (on a GPU, too). The
// warps that run a region after warp 0's next write read the new flag, so at the end warp
// 0 waits at the barrier once more while the others have finished: each warp's own region
// must be asked. Every thread counts its exit once.
extern "C" __global__ void racy_flag(const int* x, int* trips_out, int* exits) {
  __shared__ int go;
  int t = threadIdx.x, trips = 0;
  while (true) {
    if (t == 0) go = trips < x[0];
    __syncthreads();
    if (!go) break;
    trips++;
  }
  trips_out[blockIdx.x * blockDim.x + t] = trips;
  atomicAdd(exits, 1);
}
"""


@pytest.fixture(scope="module")
def tree_ptx(tmp_path_factory) -> str:
    return ptx_of_source(tmp_path_factory, "tree", TREE_SOURCE)


def test_a_tree_stepped_between_barriers_runs_in_lockstep(tree_ptx):
    """The loop's barriers: lanes part only where the tree's live part ends, and meet again
    before the next barrier, so no thread can have finished there (the exit comes after the
    loop), and the choice between looping and finishing is the block's."""
    assert _lockstep(tree_ptx, "tree", (128, 1, 1))
    assert not any(_exits_before(tree_ptx, "tree", (128, 1, 1)))
    elems, blocks = 16, 2
    n = 128 * elems + 1
    rng = np.random.default_rng(4)
    x = rng.integers(-64, 65, blocks * n).astype(np.float32)  # (pu = pd = 1/2: exact sums)
    for steps in (0, 1, 6, 13, 16):
        out = np.full(blocks, -1.0, np.float32)
        cuport.Module(tree_ptx).kernel("tree")(blocks, 128, (x, out, steps, np.float32(0.5), np.float32(0.5)))
        expect = []
        for b in range(blocks):
            xb = np.maximum(x[b * n:(b + 1) * n], 0).astype(np.float64)
            v = np.zeros((128, elems + 1))
            v[:, :elems] = xb[:128 * elems].reshape(128, elems)
            edge = np.append(np.zeros(128), xb[128 * elems])
            last = np.maximum(0, np.arange(128) * elems - 1)
            for i in range(steps, 0, -1):
                edge[:128] = v[:, 0]
                v[:, elems] = edge[1:]
                alive = i > last
                v[alive, :elems] = 0.5 * v[alive, 1:] + 0.5 * v[alive, :elems]
            expect.append(v[0, 0])
        assert out.tolist() == expect


def test_a_tree_step_saves_its_nodes_where_it_writes_them(tree_ptx):
    """A warp stores the nodes its lanes step into its state at the end of the step, not at
    the barrier after it: a warp whose lanes all branch around the step stores nothing."""
    mc = compiler.ModuleCompiler(facts.load_ptx([tree_ptx]), "tree", (128, 1, 1))
    compiler.run_pipeline(mc, until="regions")
    plan = barrier_state.plan(mc.kernel_cfg, mc.kernel_div, mc.kernel_live)
    blocks = mc.kernel_cfg.blocks
    steps = [b.index for b in blocks if any(ins.op == "fma" for ins in b.instrs)]
    assert steps and all(b in mc.kernel_div.split_blocks for b in steps)
    nodes = {r.name for b in steps for ins in blocks[b].instrs if ins.op == "fma" for r in defs(ins)}
    assert len(nodes) == 16 and all(set(plan.eager.get(b, [])) == nodes for b in steps)
    assert not nodes & {n for names in plan.save for n in names}


def test_a_flag_read_racily_keeps_warps_apart(tree_ptx):
    assert _regions(tree_ptx, "racy_flag", (128, 1, 1)) is not None
    assert not _lockstep(tree_ptx, "racy_flag", (128, 1, 1))
    x = np.array([5], np.int32)
    trips = np.full(2 * 128, -1, np.int32)
    exits = np.zeros(1, np.int32)
    cuport.Module(tree_ptx).kernel("racy_flag")(2, 128, (x, trips, exits))
    assert exits[0] == 2 * 128
    # thread 0 reads its own write; the others the flag of this trip or of the next
    assert set(trips.tolist()) <= {4, 5} and trips[0] == trips[128] == 5
