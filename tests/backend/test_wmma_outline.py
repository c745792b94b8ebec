"""wmma on the CPU backend is built once per module (isa/wmma.py through em.outline and
em.outline_access, backends/cpu/lane_ops.py): a kernel with many wmma sites calls one
function per kind of load, store and mma, which LLVM must not inline back. It did: each
column-major 16-bit fragment load was 8 gathers, which codegen makes 32 tested scalar loads
each, and cudaTensorCoreGemm's kernel (1029 such loads) did not finish compiling in 15
minutes. Column-major fragments are vector loads and stores of their columns, never
gathers or scatters of 8- or 16-bit elements. The results are checked against numpy."""

from __future__ import annotations

import re

import numpy as np
import pytest
from nvcc_source import needs_nvcc, ptx_of_source

import cuport
from cuport.backends import facts
from cuport.backends.cpu import compiler

pytestmark = needs_nvcc

STEPS = 8  # k steps, unrolled: 8 sites of each load and of mma per kernel

SOURCE = r"""
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;
// a (16 x 16*STEPS, row-major) times b (16*STEPS x 16, column-major), d column-major
template <typename T, typename ACC>
__device__ __forceinline__ void tiles(const T* A, const T* B, ACC* D) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, ACC> c;
  wmma::fill_fragment(c, 0);
  #pragma unroll
  for (int k = 0; k < STEPS; k++) {
    wmma::load_matrix_sync(a, A + k * 16, 16 * STEPS);
    wmma::load_matrix_sync(b, B + k * 16, 16 * STEPS);
    wmma::mma_sync(c, a, b, c);
  }
  wmma::store_matrix_sync(D, c, 16, wmma::mem_col_major);
}
extern "C" __global__ void gemm_f16(const half* A, const half* B, float* D) { tiles(A, B, D); }
extern "C" __global__ void gemm_u8(const unsigned char* A, const unsigned char* B, int* D) {
  tiles(A, B, D);
}
""".replace("STEPS", str(STEPS))


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of_source(tmp_path_factory, "wmma_outline", SOURCE, arch="sm_80")


def _optimized(ptx: str, kernel: str) -> str:
    mc = compiler.ModuleCompiler(facts.load_ptx([ptx]), kernel, (32, 1, 1))
    return str(compiler.run_pipeline(mc, until="optimize").llvm_module)


def _calls(ir_text: str) -> dict[str, int]:
    """Calls of each outlined function from the kernel's code (the warp function, or the
    worker it was inlined into)."""
    names = []
    for fn in re.split(r"\ndefine ", ir_text)[1:]:
        if not fn.split("(")[0].split("@")[-1].strip('"').startswith("cuport.outlined."):
            names += re.findall(r"call [^@\n]*@\"?cuport\.outlined\.([\w.]+)", fn)
    return {n: names.count(n) for n in set(names)}


@pytest.mark.parametrize("kernel, t", [("gemm_f16", "f16"), ("gemm_u8", "u8")])
def test_each_kind_of_wmma_is_one_function_called_at_every_site(ptx: str, kernel: str, t: str):
    text = _optimized(ptx, kernel)
    calls = _calls(text)
    kinds = {re.sub(r"\.[uv]+$", "", n): c for n, c in calls.items()}
    acc = "f32" if t == "f16" else "s32"
    assert kinds == {f"wmma.load.16x16.{t}.row": STEPS, f"wmma.load.16x16.{t}.col": STEPS,
                     f"wmma.16x16x16.{acc}.{t}.{t}.{acc}": STEPS,
                     f"wmma.store.16x16.{acc}.col": 1}, calls
    for name in calls:
        assert re.search(rf"define internal [^@\n]*@\"?cuport\.outlined\.{re.escape(name)}\b", text)
    # no gathers or scatters of 8- or 16-bit elements: columns are vector loads and stores
    assert not re.search(r"@llvm\.masked\.(gather|scatter)\.v32i(8|16)\b", text)


def test_the_results(ptx: str):
    mod = cuport.Module(ptx)
    rng = np.random.default_rng(5)
    k = 16 * STEPS
    a = rng.integers(-4, 5, (16, k))
    bt = rng.integers(-4, 5, (16, k))  # b column-major: its columns are rows here
    want = a @ bt.T
    d = np.zeros((16, 16), np.float32)
    mod.kernel("gemm_f16")(1, 32, (a.astype(np.float16), bt.astype(np.float16), d))
    assert (d.T == want).all()  # (d column-major)
    au, bu = rng.integers(0, 256, (16, k)), rng.integers(0, 256, (16, k))
    di = np.zeros((16, 16), np.int32)
    mod.kernel("gemm_u8")(1, 32, (au.astype(np.uint8), bu.astype(np.uint8), di))
    assert (di.T == au @ bu.T).all()
