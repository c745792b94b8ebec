"""Predication of short stretches behind divergent branches (passes/predicate.py): which
stretches the pass rewrites, and that kernels give the same answers with it as without it
(CUPORT_NO_PREDICATE=1) and as a host computation says: guarded loads and stores touch
only the lanes that took the stretch, in global, shared and local memory."""

from __future__ import annotations

import numpy as np
import pytest
from nvcc_source import jacobi_ref, jacobi_source, needs_nvcc, ptx_of_source

import cuport
from cuport.backends import facts
from cuport.backends.cpu import compiler
from cuport.ptx import ir

pytestmark = needs_nvcc

# bench's 5-point stencil (nvcc_source.jacobi_source): the halo rows (`ty == 0`, `ty == T - 1`)
# are stretches that one warp of the block runs, the halo columns (`tx == 0`, lanes 0 and 16)
# run in every warp
SOURCE = jacobi_source("stencil") + r"""
// CUB's guarded blocked load and store (the last, partial tile of a sort): nvcc writes each
// `if` as `@p bra` around one load, store or atomic
extern "C" __global__ void tile(const int* in, int* out, int* hist, int valid) {
  __shared__ int s[128 * 4];
  int t = threadIdx.x, base = blockIdx.x * blockDim.x * 4;
  int items[4];
  #pragma unroll
  for (int i = 0; i < 4; i++) items[i] = -1;
  #pragma unroll
  for (int i = 0; i < 4; i++)
    if (base + t * 4 + i < valid) items[i] = in[base + t * 4 + i];
  #pragma unroll
  for (int i = 0; i < 4; i++) {
    if (items[i] & 1) atomicAdd(&hist[items[i] & 15], 1);
    s[t * 4 + i] = items[i];
  }
  __syncthreads();
  #pragma unroll
  for (int i = 0; i < 4; i++) {
    int j = (t * 4 + i + 5) % (blockDim.x * 4);
    if (base + t * 4 + i < valid) out[base + t * 4 + i] = s[j] * 3 + items[i];
  }
  atomicAdd(&hist[16], 1);  // (so that no stretch ends at the exit, where lanes just finish)
}

// a per-thread array indexed at run time lives in .local: guarded local stores and loads
extern "C" __global__ void local_array(const int* in, int* out, int k) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int a[16];
  #pragma unroll
  for (int i = 0; i < 16; i++) a[i] = t + i;
  int v = in[t];
  if (v % 3 == 0) a[(v >> 2) & 15] = v * 5;
  if (t % 5 < 2) a[(t + k) & 15] += 7;
  out[t] = a[(t * 3 + k) & 15] + a[v & 15];
}

// Hillis-Steele: `t >= off ? buf[p][t - off] : 0` becomes a guarded shared load whose
// address, in the warps where no lane takes it, wraps below the shared window
extern "C" __global__ void scan(const int* in, int* out) {
  __shared__ int buf[2][256];
  int t = threadIdx.x, p = 0;
  buf[0][t] = in[blockIdx.x * 256 + t];
  __syncthreads();
  for (int off = 1; off < 256; off <<= 1) {
    buf[1 - p][t] = buf[p][t] + (t >= off ? buf[p][t - off] : 0);
    p = 1 - p;
    __syncthreads();
  }
  out[blockIdx.x * 256 + t] = buf[p][t];
}


// warp-level work in the stretch keeps its branch: which lanes shuffle together matters
extern "C" __global__ void shuffle_in_branch(const int* in, int* out) {
  int t = threadIdx.x, v = in[t];
  if (t & 2) v += __shfl_xor_sync(__activemask(), v, 1);
  out[t] = v;
}
"""

# nvcc's output for `if (v >= 10) out[t] = v < 20 ? 1 : 2;` and a use of the flag after it,
# edited so that the stretch writes its branch's predicate and holds guarded instructions
# (nvcc does both; this is the smallest kernel that has them)
OWN_PREDICATE = r"""
.version 7.0
.target sm_75
.address_size 64

.visible .entry own_pred(.param .u64 in, .param .u64 out)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<8>;

	ld.param.u64 	%rd1, [in];
	ld.param.u64 	%rd2, [out];
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd3, %rd5;
	ld.global.u32 	%r2, [%rd6];
	add.s64 	%rd7, %rd4, %rd5;
	mov.u32 	%r3, 0;
	setp.lt.s32 	%p1, %r2, 10;
	BRANCH 	$L__BB0_2;

	setp.lt.s32 	%p1, %r2, 20;
	@%p1 mov.u32 	%r3, 1;
	@!%p1 mov.u32 	%r3, 2;
	st.global.u32 	[%rd7], %r3;

$L__BB0_2:
	selp.u32 	%r4, 100, 0, %p1;
	add.s32 	%r5, %r4, %r3;
	st.global.u32 	[%rd7+256], %r5;
	ret;
}
"""


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of_source(tmp_path_factory, "predicate", SOURCE)


def _kernel_after(ptx: str, kernel: str, block, step: str) -> ir.Function:
    mc = compiler.ModuleCompiler(facts.load_ptx([ptx]), kernel, block)
    return compiler.run_pipeline(mc, until=step).kernel


def _instrs(fn: ir.Function) -> list[ir.Instr]:
    return [s for s in fn.body if isinstance(s, ir.Instr)]


def _branches(fn: ir.Function) -> int:
    return sum(s.op == "bra" and s.guard is not None for s in _instrs(fn))


def _both_ways(monkeypatch, run):
    """run() with predication and with CUPORT_NO_PREDICATE=1: the two answers, which must agree."""
    with_it = run()
    monkeypatch.setenv("CUPORT_NO_PREDICATE", "1")
    without = run()
    monkeypatch.delenv("CUPORT_NO_PREDICATE")
    return with_it, without


def test_guarded_accesses_lose_their_branches(ptx):
    before = _kernel_after(ptx, "tile", (128, 1, 1), "divergence")
    after = _kernel_after(ptx, "tile", (128, 1, 1), "predicate")
    # four guarded loads, four atomics, four guarded shared loads and global stores: no
    # branch left
    assert _branches(before) >= 12 and _branches(after) == 0
    guarded = [(s.op, s.mods[0]) for s in _instrs(after) if s.guard is not None]
    assert guarded.count(("ld", "global")) == 4 and guarded.count(("atom", "global")) == 4
    assert guarded.count(("ld", "shared")) == 4 and guarded.count(("st", "global")) == 4
    # each atomic's address arithmetic is used by it alone: it stays unguarded
    unguarded = [s for s in _instrs(after) if s.guard is None]
    assert sum(s.op == "cvt" for s in unguarded) >= 4


def test_partial_tile_predicated_matches_host_and_branches(ptx, monkeypatch):
    rng = np.random.default_rng(3)
    nb, block = 3, 128
    n = nb * block * 4
    x = rng.integers(-1000, 1000, n, dtype=np.int32)
    for valid in (n, n - 1, n - 301, 5):
        def run(valid=valid):
            out = np.full(n, -777, np.int32)
            hist = np.zeros(17, np.int32)
            cuport.Module(ptx).kernel("tile")(nb, block, (x, out, hist, valid))
            return out, hist
        (out, hist), (out0, hist0) = _both_ways(monkeypatch, run)
        items = np.where(np.arange(n) < valid, x, -1)
        expect_hist = [*np.bincount(items[(items & 1) == 1] & 15, minlength=16).tolist(), nb * block]
        expect = np.full(n, -777, np.int32)
        for b in range(nb):
            tile = items[b * block * 4:(b + 1) * block * 4]
            for i in range(block * 4):
                g = b * block * 4 + i
                if g < valid:
                    expect[g] = tile[(i + 5) % (block * 4)] * 3 + tile[i]
        assert out.tolist() == expect.tolist() == out0.tolist()
        assert hist.tolist() == expect_hist == hist0.tolist()


def test_guarded_local_stores_and_loads(ptx, monkeypatch):
    assert _branches(_kernel_after(ptx, "local_array", (96, 1, 1), "predicate")) == 0
    rng = np.random.default_rng(4)
    n, k = 96 * 4, 11
    x = rng.integers(0, 1 << 20, n, dtype=np.int32)

    def run():
        out = np.zeros(n, np.int32)
        cuport.Module(ptx).kernel("local_array")(4, 96, (x, out, k))
        return out
    out, out0 = _both_ways(monkeypatch, run)
    expect = []
    for t in range(n):
        a = [t + i for i in range(16)]
        v = int(x[t])
        if v % 3 == 0:
            a[(v >> 2) & 15] = v * 5
        if t % 5 < 2:
            a[(t + k) & 15] += 7
        expect.append(a[(t * 3 + k) & 15] + a[v & 15])
    assert out.tolist() == expect == out0.tolist()


def test_warps_without_lanes_skip_predicated_accesses(ptx, monkeypatch):
    """A predicated load or store is not made by a warp none of whose lanes executes it, as
    its branch skipped it: a tree reduction's `if (t < w)` skips whole warps, and a masked
    access with no lane enabled still costs, hundreds of cycles where its address is
    unmapped (the guarded load here, at shared + 2^32 - 4 * off in warps that skip it, made
    the scan 2.6x slower)."""
    from cuport.backends.cpu import emit

    skipped = []  # each access, once: in a stretch jumped over whole, or on its own
    real, real_stretch = emit.FunctionEmitter._if_some_lane, emit.FunctionEmitter._skippable

    def counting(self, access):
        skipped.append(self.ins.op)
        return real(self, access)

    def stretches(self, body, i):
        n, run = real_stretch(self, body, i)
        skipped.extend(s.op for s in body[i:i + n] if s.op in ("ld", "st"))
        return n, run
    monkeypatch.setattr(emit.FunctionEmitter, "_if_some_lane", counting)
    monkeypatch.setattr(emit.FunctionEmitter, "_skippable", stretches)
    mc = compiler.run_pipeline(compiler.ModuleCompiler(facts.load_ptx([ptx]), "scan", (256, 1, 1)),
                               until="emit")
    monkeypatch.undo()
    assert _branches(mc.kernel) == 0
    guarded = [s.op for s in _instrs(mc.kernel) if s.guard is not None]
    assert len(guarded) == 8 and skipped == guarded == ["ld"] * 8
    x = np.random.default_rng(5).integers(-99, 99, 3 * 256, dtype=np.int32)

    def run():
        out = np.zeros(3 * 256, np.int32)
        cuport.Module(ptx).kernel("scan")(3, 256, (x, out))
        return out
    out, out0 = _both_ways(monkeypatch, run)
    expect = np.cumsum(x.reshape(3, 256), axis=1, dtype=np.int32).reshape(-1)
    assert out.tolist() == expect.tolist() == out0.tolist()


def test_stretches_no_lane_of_a_warp_runs_are_jumped_over(ptx, monkeypatch):
    """A predicated stretch with accesses that no lane must run is jumped over by a warp
    none of whose lanes runs it (emit._emit_body): the stencil's halo rows (a load and a
    store each), run by one warp of each 16x16 block, cost every warp their masks and checks;
    its halo columns, which lanes 0 and 16 of every warp run, keep no such branch, and the
    tile's lone guarded load checks for itself. Results match a host computation, with the
    grid's last blocks partly outside (n = 41) and predication off."""
    from cuport.backends.cpu import emit, jit

    jumped = []
    real = emit.FunctionEmitter._skippable
    monkeypatch.setattr(jit, "mask_registers", lambda: True)  # (AVX2: the lone load too)

    def spy(self, body, i):
        n, run = real(self, body, i)
        jumped.extend(s.text() for s in body[i:i + n] if s.op in ("ld", "st"))
        return n, run
    monkeypatch.setattr(emit.FunctionEmitter, "_skippable", spy)
    compiler.run_pipeline(compiler.ModuleCompiler(facts.load_ptx([ptx]), "stencil", (16, 16, 1)),
                          until="emit")
    monkeypatch.undo()
    loads = [s for s in jumped if s.split()[1].startswith("ld.global")]
    stores = [s for s in jumped if s.split()[1].startswith("st.shared")]
    assert len(jumped) == 4 and len(loads) == 2 and len(stores) == 2, jumped
    # rows 0 and 17, not the columns (tile + 72 * (ty + 1) and + 68 more: nvcc's [%r6+72/140])
    assert not any(s.split(",")[0].endswith(("+72]", "+140]")) for s in stores), stores

    n = 41
    rng = np.random.default_rng(3)
    u = rng.random((n, n), dtype=np.float32)

    def run():
        v = np.full((n, n), -1, np.float32)
        g = (n + 15) // 16
        cuport.Module(ptx).kernel("stencil")((g, g), (16, 16), (u, v, n))
        return v
    out, out0 = _both_ways(monkeypatch, run)
    ref = jacobi_ref(u)
    assert np.array_equal(out, ref) and np.array_equal(out0, ref)


def test_a_shuffle_keeps_its_branch(ptx, monkeypatch):
    before = _kernel_after(ptx, "shuffle_in_branch", (64, 1, 1), "divergence")
    after = _kernel_after(ptx, "shuffle_in_branch", (64, 1, 1), "predicate")
    assert _branches(before) >= 1 and _branches(after) == _branches(before)
    x = np.arange(64, dtype=np.int32) * 3

    def run():
        out = np.zeros(64, np.int32)
        cuport.Module(ptx).kernel("shuffle_in_branch")(1, 64, (x, out))
        return out
    out, out0 = _both_ways(monkeypatch, run)
    t = np.arange(64)
    expect = np.where(t & 2, x + x[t ^ 1], x)
    assert out.tolist() == expect.tolist() == out0.tolist()


@pytest.mark.parametrize("branch", ["@%p1 bra", "@!%p2 bra"])
def test_stretch_that_writes_its_predicate_and_holds_guards(branch, monkeypatch):
    text = OWN_PREDICATE.replace("BRANCH", branch)
    negated = branch.startswith("@!")
    if negated:  # the same condition, negated twice; the stretch then leaves it alone
        text = text.replace("setp.lt.s32 \t%p1, %r2, 10;",
                            "setp.lt.s32 \t%p1, %r2, 10;\n\tnot.pred \t%p2, %p1;")
    after = _kernel_after(text, "own_pred", (64, 1, 1), "predicate")
    assert _branches(after) == 0
    ops = [(s.op, s.mods) for s in _instrs(after)]
    # the branch's predicate copied before the stretch rewrites it; each guarded
    # instruction's guard combined with the stretch's
    assert (("mov", ("pred",)) in ops) == (not negated)
    assert ops.count(("and", ("pred",))) == 2
    x = np.arange(64, dtype=np.int32) - 5  # below 10, 10..19 and from 20 on

    def run():
        out = np.full(128, -1, np.int32)
        cuport.Module(text).kernel("own_pred")(1, 64, (x, out))
        return out
    out, out0 = _both_ways(monkeypatch, run)
    first = np.where(x < 10, -1, np.where(x < 20, 1, 2))
    second = np.where(x < 10, 100, np.where(x < 20, 101, 2))
    assert out.tolist() == [*first.tolist(), *second.tolist()] == out0.tolist()
