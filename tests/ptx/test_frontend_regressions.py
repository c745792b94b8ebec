"""PTX front-end bugs found by real programs (issue 8), each made from nvcc's or numba's output.

- `.reg.b16 h, r` with no space after `.reg` (cuda_fp16.hpp/cuda_bf16.hpp inline asm), and
  register declarations inside `{ }` blocks: refused with an empty instruction name.
- `__syncthreads_count` twice in a row gave 0 for the first: nvcc wraps each `bar.red.popc`
  in `{ .reg .pred %p1; ... }`, and the first result was not kept across the second barrier.
- `mad.lo.cc.u32` in a kernel whose carry flag is varying: `internal: uniform register
  written in vector mode`.
- local and shared arrays with `.align 256` / `.align 1024` were misaligned.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cuport
from cuport.ptx import ir
from cuport.ptx.parser import parse

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "capi"))

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="the cases are nvcc's output")


def nvcc_ptx(tmp_path: Path, source: str, arch: str = "sm_90") -> str:
    cu = tmp_path / "k.cu"
    cu.write_text(source)
    out = tmp_path / "k.ptx"
    subprocess.run(["nvcc", "-ptx", "-O2", f"-arch={arch}", "-o", str(out), str(cu)], check=True,
                   capture_output=True)
    return out.read_text()


def ulps(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    r16 = ref.astype(np.float16)
    return np.abs(got.astype(np.float64) - ref) / np.spacing(np.abs(r16)).astype(np.float64)


HALF = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void k(const __half *in, __half *out, const __nv_bfloat16 *b,
                             signed char *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[3 * i] = hsin(in[i]);
    out[3 * i + 1] = hcos(in[i]);
    out[3 * i + 2] = __high2half(h2sin(__halves2half2(in[i], in[i])));
    c[i] = __bfloat162char_rz(b[i]);
  }
}
"""


def test_cuda_fp16_inline_asm_registers(tmp_path):
    text = nvcc_ptx(tmp_path, HALF)
    assert ".reg.b16" in text and ".reg.b8" in text  # what cuda_fp16.hpp/cuda_bf16.hpp write
    fn = parse(text).functions["k"]
    # every inline-asm scope's registers are its own, nested scopes included
    assert [r for r in fn.regs if r.split("$")[0] in ("i", "r", "t", "p", "spc", "ulp", "myreg")]
    assert all("$" in r for r in fn.regs if not r.startswith("%"))
    n = 700
    x = np.linspace(-7, 7, n).astype(np.float16)
    out = np.zeros(3 * n, np.float16)
    b = (np.linspace(-300, 300, n).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    c = np.zeros(n, np.int8)
    cuport.Module(text).kernel("k")(grid=6, block=128, args=(x, out, b, c, n))
    ref_sin, ref_cos = np.sin(x.astype(np.float64)), np.cos(x.astype(np.float64))
    assert ulps(out[0::3], ref_sin).max() <= 1 and ulps(out[2::3], ref_sin).max() <= 1
    assert ulps(out[1::3], ref_cos).max() <= 1
    bf = (b.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(c, np.clip(np.trunc(bf), -128, 127).astype(np.int8))


SYNCTHREADS_COUNT = r"""
extern "C" __global__ void k(const int *in, int *out) {
  __shared__ int s[128];
  int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  s[t] = in[t];
  __syncthreads();
  int neg = __syncthreads_count(s[t] < 0) + __syncthreads_count(s[t] < 0);
  out[t] = neg;
}
"""


@pytest.mark.parametrize("block", [(128, 1, 1), (4, 8, 4)])
def test_syncthreads_count_twice(tmp_path, block):
    text = nvcc_ptx(tmp_path, SYNCTHREADS_COUNT)
    assert text.count(".reg .pred \t%p1;") == 2  # nvcc's shadowing blocks, as in the issue
    x = np.arange(1, 129, dtype=np.int32)
    x[np.random.default_rng(8).choice(128, 25, replace=False)] *= -1
    out = np.zeros(128, np.int32)
    cuport.Module(text).kernel("k")(grid=1, block=block, args=(x, out))
    np.testing.assert_array_equal(out, np.full(128, 50))


SCOPED_SHADOW = r"""
extern "C" __global__ void k(const int *in, int *out) {
  int t = threadIdx.x, v = in[t];
  int a = __syncthreads_count(v > 10);
  if (v > 3) v += __syncthreads_or(v > 50);  // a divergent barrier: the general protocol
  int b = __syncthreads_count(v & 1);
  out[t] = a * 10000 + b * 10 + (v > 3);
}
"""


def test_bar_red_results_across_barriers_in_both_protocols(tmp_path):
    text = nvcc_ptx(tmp_path, SCOPED_SHADOW)
    x = np.arange(64, dtype=np.int32)
    out = np.zeros(64, np.int32)
    cuport.Module(text).kernel("k")(grid=1, block=64, args=(x, out))
    # every thread reaches the barrier under the branch (v > 3 for some only: undefined on a
    # GPU for the others, so the check keeps to what does not depend on it)
    assert set(out // 10000) == {53}


CARRY = r"""
extern "C" __global__ void k(const unsigned *in, unsigned *out, unsigned u) {
  unsigned t = threadIdx.x, x = in[t], lo = 0, hi = 0;
  if (x & 1)
    asm("add.cc.u32 %0, %2, %3;\n\taddc.u32 %1, 0, 0;" : "=r"(lo), "=r"(hi) : "r"(x), "r"(u));
  unsigned a, b;
  asm("mad.lo.cc.u32 %0, %2, %3, %4;\n\tmadc.hi.u32 %1, %2, %3, 0;"
      : "=r"(a), "=r"(b) : "r"(u), "r"(u + 1), "r"(u * 3));
  out[4 * t] = lo; out[4 * t + 1] = hi; out[4 * t + 2] = a; out[4 * t + 3] = b;
}
"""


def test_carry_chain_with_a_varying_carry_flag(tmp_path):
    text = nvcc_ptx(tmp_path, CARRY)
    x = (np.arange(64, dtype=np.uint64) * 0x9E3779B1 % 2**32).astype(np.uint32)
    out = np.zeros(256, np.uint32)
    u = 0xF0000001
    cuport.Module(text).kernel("k")(grid=1, block=64, args=(x, out, np.uint32(u)))
    for t in range(64):
        s = int(x[t]) + u
        lo, hi = (s % 2**32, s >> 32) if x[t] & 1 else (0, 0)
        p = u * (u + 1) % 2**32 + u * 3 % 2**32
        assert list(out[4 * t:4 * t + 4]) == [lo, hi, p % 2**32, (u * (u + 1) >> 32) + (p >> 32)]


ALIGNED = r"""
struct __align__(256) Big { float v[5]; };
__device__ __forceinline__ unsigned long long opaque(const volatile void *p) {
  unsigned long long x; asm volatile("mov.b64 %0, %1;" : "=l"(x) : "l"(p)); return x;
}
__device__ __noinline__ unsigned long long inner(int n) {
  Big b; volatile float *p = b.v; p[n % 5] = n; p[(n + 1) % 5] = 2;
  return (opaque(p) % 256) * 1000 + (unsigned)p[n % 5];
}
extern "C" __global__ void k(unsigned long long *out, int n) {
  __shared__ int small[3];
  __shared__ __align__(1024) int big[300];
  char c[20]; volatile char *vc = c; vc[threadIdx.x % 20] = n;
  small[threadIdx.x % 3] = 1; big[threadIdx.x % 300] = 2;
  __syncthreads();
  out[3 * threadIdx.x] = inner(n + threadIdx.x);
  out[3 * threadIdx.x + 1] = (opaque(vc) % 4) * 1000 + vc[threadIdx.x % 20];
  out[3 * threadIdx.x + 2] = opaque(big) % 1024 + opaque(small) % 4 + big[0];
}
"""


@pytest.mark.parametrize("threads", [32, 96, 300])
def test_local_and_shared_alignment(tmp_path, threads):
    text = nvcc_ptx(tmp_path, ALIGNED)
    assert ".local .align 256" in text and ".shared .align 1024" in text
    out = np.zeros(3 * threads, np.uint64)
    cuport.Module(text).kernel("k")(grid=2, block=threads, args=(out, np.int32(7)))
    t = np.arange(threads)
    np.testing.assert_array_equal(out[0::3], 7 + t)  # 256-aligned, value kept
    np.testing.assert_array_equal(out[1::3], np.full(threads, 7))
    np.testing.assert_array_equal(out[2::3], np.full(threads, 2))


def test_scoped_register_declarations_are_renamed_apart():
    m = parse(""".version 9.0
.target sm_90
.address_size 64
.visible .entry k() {
  .reg .pred %p<2>;
  .reg .b32 %r<3>;
  setp.eq.u32 %p1, %r1, 0;
  { .reg .pred %p1; setp.ne.u32 %p1, %r2, 0; { .reg.b32 x; mov.b32 x, %r1; } }
  { .reg .pred %p1; @%p1 bra L; L: }
  @%p1 ret;
  ret;
}""")
    fn = m.functions["k"]
    ins = [s for s in fn.body if isinstance(s, ir.Instr)]
    assert ins[0].args[0] == ir.Reg("%p1")  # the function's own
    assert ins[1].args[0].name.startswith("%p1$") and ins[3].guard.name.startswith("%p1$")
    assert ins[1].args[0] != ins[3].guard  # two scopes, two registers
    assert ins[2].args[0].name.startswith("x$") and fn.regs[ins[2].args[0].name] == "b32"
    assert ins[4].guard == ir.Reg("%p1")  # back in the function's scope


def test_numba_kernels_under_cuport_run(tmp_path):
    pytest.importorskip("numba.cuda")
    from capi_support import clean_env, cuport_command, run

    r = run([*cuport_command(), "run", sys.executable, str(HERE / "programs" / "numba_frontend.py")],
            env=clean_env(CUPORT_CACHE_DIR=str(tmp_path / "cache")), timeout=600)
    assert r.returncode == 0 and r.stdout.rstrip().endswith("PASS"), r.stdout + r.stderr[-3000:]
