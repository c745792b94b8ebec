"""Regressions found by the differential test (tests/differential), one per bug class, each
a small kernel built as that test builds its kernels (nvcc -O3 -arch=sm_90 -fmad=false) and
checked against what the H200 computed for the same operands in that test's recording
(the kernel and element are named with each case).
"""

from __future__ import annotations

import functools
import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from nvcc import nvcc_path

import cuport

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from device_limits import devices  # noqa: E402 (tests/device_limits.py)

_DIR = Path(tempfile.mkdtemp(prefix="cuport-isa-diffreg-"))
FLAGS = ("-O3", "-arch=sm_90", "-std=c++17", "-fmad=false")  # tests/differential/gen.py NVCC_FLAGS


@functools.cache
def module(source: str, device: str | None = None) -> cuport.Module:
    nvcc = nvcc_path()
    if nvcc is None:
        pytest.skip("nvcc is not installed")
    h = hashlib.sha1(source.encode()).hexdigest()[:16]
    cu, ptx = _DIR / f"k{h}.cu", _DIR / f"k{h}.ptx"
    cu.write_text(source)
    subprocess.run([nvcc, "-ptx", *FLAGS, "-o", str(ptx), str(cu)], check=True, capture_output=True, text=True)
    return cuport.Module(ptx.read_text(), **({"device": device} if device else {}))


HALF = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void bf16_div(const unsigned short* a, const unsigned short* b, unsigned short* out) {
    int i = threadIdx.x;
    out[i] = __bfloat16_as_ushort(__hdiv(__ushort_as_bfloat16(a[i]), __ushort_as_bfloat16(b[i])));
}
extern "C" __global__ void bf16_fma(const unsigned short* a, const unsigned short* b, const unsigned short* c,
                                    unsigned short* out) {
    int i = threadIdx.x;
    out[i] = __bfloat16_as_ushort(__hfma(__ushort_as_bfloat16(a[i]), __ushort_as_bfloat16(b[i]),
                                         __ushort_as_bfloat16(c[i])));
}
extern "C" __global__ void bf16x2_fma(const unsigned* a, const unsigned* b, const unsigned* c, unsigned* out) {
    int i = threadIdx.x;
    __nv_bfloat162 x = *(const __nv_bfloat162*)&a[i], y = *(const __nv_bfloat162*)&b[i], z = *(const __nv_bfloat162*)&c[i];
    __nv_bfloat162 r = __hfma2(x, y, z);
    out[i] = *(unsigned*)&r;
}
extern "C" __global__ void f16_max_self(const unsigned short* a, unsigned short* out) {
    int i = threadIdx.x;
    __half x = __ushort_as_half(a[i]);
    out[i] = __half_as_ushort(__hmax(x, x));
}
extern "C" __global__ void f32_remainder(const float* a, float* out) {
    int i = threadIdx.x;
    out[i] = remainderf(a[i], a[i]);
}
"""


def _run(name: str, outs: np.ndarray, *ins: np.ndarray) -> np.ndarray:
    module(HALF).kernel(name)((1,), (len(outs),), (*ins, outs))
    return outs


def test_bf16_division_by_a_denormal_scales_as_ptxas_does():
    """__hdiv(bf16) is div.approx.f32 of the widened operands; ptxas scales a and b by 2^24
    when |b| < 2^-126, so a denormal divisor divides like a normal one. The H200:
    -0 / -denormal 0x8004 = +0 (d01_k037 o12[19]), 0x0001 / 0x0001 = 1 (d05_k019 o4[10]);
    cuport gave 0x7fff (NaN) and 0x7f80 (inf) from 1/b overflowing."""
    a = np.array([0x8000, 0x0001, 0x3F80, 0x807F], np.uint16)
    b = np.array([0x8004, 0x0001, 0x0001, 0x807F], np.uint16)
    got = _run("bf16_div", np.zeros(4, np.uint16), a, b)
    assert [hex(x) for x in got[:2]] == ["0x0", "0x3f80"]
    assert got[3] == 0x3F80  # x / x of the largest denormal
    assert got[2] == 0x7F80  # 1 / 2^-133: beyond bf16's range (f32's too)


def test_remainderf_of_a_denormal_by_itself_is_zero():
    """libdevice's remainderf uses div.approx.f32 for the quotient: remainderf(x, x) of the
    denormal 0x190a7e is 0 on the H200 (d05_k018 o4[20]); cuport gave -inf."""
    x = np.array([0x190A7E, 0x1, 0x807FFFFF, 0x3F800000], np.uint32).view(np.float32)
    got = _run("f32_remainder", np.zeros(4, np.float32), x)
    assert got.view(np.uint32).tolist() == [0, 0, 0x80000000, 0]


def test_bf16_fma_rounds_once_when_the_addend_is_far_below_the_product():
    """fma.rn.bf16: 0x7d96 * -2.5 is a tie of bf16 that the tiny addend 0x3ac0 breaks; the
    H200 gives 0xfe3b (d04_k032 o11[305]); the sum rounded to nearest in f64 lost the addend
    and the tie went to even, 0xfe3c."""
    a, b, c = (np.array([v], np.uint16) for v in (0x7D96, 0xC020, 0x3AC0))
    assert _run("bf16_fma", np.zeros(1, np.uint16), a, b, c)[0] == 0xFE3B
    # both halves of bf16x2 (d05_k026 o7: 0x47e3 where cuport gave 0x47e4), here the same case twice
    x2, y2, z2 = (np.array([v << 16 | v], np.uint32) for v in (0x7D96, 0xC020, 0x3AC0))
    assert _run("bf16x2_fma", np.zeros(1, np.uint32), x2, y2, z2)[0] == 0xFE3BFE3B


def test_f16_max_of_a_value_with_itself_keeps_its_nan():
    """ptxas folds max.f16 x, x into x: __hmax(x, x) of the NaN 0xfe01 is 0xfe01 on the H200
    (d07_k015 o8[15]), not HMNMX2's canonical 0x7fff."""
    a = np.array([0xFE01, 0x7C01, 0x3C00, 0x8001], np.uint16)
    assert [hex(x) for x in _run("f16_max_self", np.zeros(4, np.uint16), a)] == ["0xfe01", "0x7c01", "0x3c00", "0x8001"]


VECTOR_ATOMIC = r"""
extern "C" __global__ void add4(float4* acc, const float* x) {
    int i = threadIdx.x;
    atomicAdd(acc + (i & 1), make_float4(x[i], 2.0f * x[i], -x[i], 0.5f));
}
extern "C" __global__ void add2_old(float2* acc, const float* x, float2* olds) {
    int i = threadIdx.x;
    olds[i] = atomicAdd(acc, make_float2(x[i], 1.0f));
}
"""


def test_vector_atomic_add_on_sm90():
    """atomicAdd(float4*) / (float2*) is atom.global.add.v4/.v2.f32 on sm_90 (d09ftz_k004
    was refused: 'vector atom is not supported'); each element is atomic on its own."""
    m = module(VECTOR_ATOMIC)
    x = np.arange(64, dtype=np.float32)
    acc = np.zeros(8, np.float32)
    m.kernel("add4")((1,), (64,), (acc, x))
    even, odd = x[0::2].sum(), x[1::2].sum()
    assert acc.tolist() == [even, 2 * even, -even, 16.0, odd, 2 * odd, -odd, 16.0]
    acc2, olds = np.zeros(2, np.float32), np.zeros(128, np.float32)
    m.kernel("add2_old")((1,), (64,), (acc2, x, olds))
    assert acc2.tolist() == [x.sum(), 64.0]
    assert sorted(olds[1::2].tolist()) == [float(k) for k in range(64)]  # each lane saw a distinct count


ATTRIBUTES = r"""
__constant__ unsigned CT[64];
extern __shared__ __align__(16) unsigned char dsm[];
extern "C" __global__ void plain(unsigned* out) { __shared__ unsigned s[130]; s[threadIdx.x] = threadIdx.x;
    __syncthreads(); out[threadIdx.x] = s[129 - threadIdx.x]; }
extern "C" __global__ void reads_ct(unsigned* out) { out[threadIdx.x] = CT[threadIdx.x & 63]; }
extern "C" __global__ void dynamic(unsigned* out) { dsm[threadIdx.x] = 1; __syncthreads(); out[threadIdx.x] = dsm[0]; }
"""


def test_function_attributes_as_the_h200_reports_them():
    """cudaFuncGetAttributes on the H200 (tests/differential, every file): constSizeBytes is
    the module's constant bank (256 for its CT[64]) for every kernel, reading it or not;
    with `extern __shared__` in the module, a kernel's 520 bytes of static shared memory
    report 528 (rounded to where dynamic shared memory starts; d04_k012)."""
    m = module(ATTRIBUTES)
    for name in ("plain", "reads_ct", "dynamic"):
        assert m.kernel(name).info.attributes["const_size_bytes"] == 256, name
    assert m.kernel("plain").info.static_shared_bytes == 528
    assert m.kernel("reads_ct").info.static_shared_bytes == 0


F64_NAN = r"""
extern "C" __global__ void f64_fma(const double* x, const unsigned* ia, const unsigned* ib, const unsigned* ic,
                                   double* out) {
    unsigned i = threadIdx.x;
    const double a = x[ia[i]];
    const double c = x[ic[i]];
    const double b = x[ib[i]];
    out[i] = __fma_rn(b, a, c);
}
"""


def test_f64_nan_of_the_operand_ptxas_puts_in_the_b_slot():
    """Of several NaN operands, DFMA returns its b slot's. nvcc writes `fma.rn.f64 d, %fd3,
    %fd1, %fd2` here (b, a, c), and ptxas puts the earlier-loaded %fd1 in the first slot:
    `DFMA R2, R4(fd1), R12(fd3), R8`, so the NaN returned is b's, not a's (as in d00_k011
    o17[31], __fma_rd(a31, a25, v28): the H200 gave a31's NaN 0x7ff8000000000000 where
    cuport gave v28's 0x7ffc000000000000)."""
    x = np.array([0x7FF4000000000001, 0xFFF8000000000002, 0x3FF0000000000000, 0x7FF8000000000003],
                 np.uint64)
    ia, ib, ic = (np.array(v, np.uint32) for v in ([0, 0, 0], [1, 2, 2], [2, 3, 2]))
    out = np.zeros(3, np.uint64)
    module(F64_NAN).kernel("f64_fma")((1,), (3,), (x.view(np.float64), ia, ib, ic, out))
    # b's NaN; a's quieted when b is not NaN (then c's: DFMA's order b, c, a); c's over a's
    assert [hex(v) for v in out] == ["0xfff8000000000002", "0x7ff8000000000003", "0x7ffc000000000001"]


CVT_SAT = r"""
static __device__ __forceinline__ unsigned sat_u32_s16(short a) { unsigned d; asm("cvt.sat.u32.s16 %0, %1;" : "=r"(d) : "h"(a)); return d; }
static __device__ __forceinline__ short sat_s16_u64(unsigned long long a) { unsigned short d; asm("cvt.sat.s16.u64 %0, %1;" : "=h"(d) : "l"(a)); return (short)d; }
static __device__ __forceinline__ unsigned long long sat_u64_s16(short a) { unsigned long long d; asm("cvt.sat.u64.s16 %0, %1;" : "=l"(d) : "h"(a)); return d; }
static __device__ __forceinline__ long long sat_s64_u64(unsigned long long a) { long long d; asm("cvt.sat.s64.u64 %0, %1;" : "=l"(d) : "l"(a)); return d; }
static __device__ __forceinline__ unsigned char sat_u8_s8(signed char a) { unsigned d; asm("{ .reg .u16 t; cvt.sat.u8.s8 t, %1; cvt.u32.u16 %0, t; }" : "=r"(d) : "h"((short)a)); return (unsigned char)d; }
extern "C" __global__ void cvt_sat(const long long* x, unsigned long long* out) {
    int i = threadIdx.x;
    long long v = x[i];
    out[5 * i] = sat_u32_s16((short)v);
    out[5 * i + 1] = (unsigned short)sat_s16_u64((unsigned long long)v);
    out[5 * i + 2] = sat_u64_s16((short)v);
    out[5 * i + 3] = (unsigned long long)sat_s64_u64((unsigned long long)v);
    out[5 * i + 4] = sat_u8_s8((signed char)v);
}
"""


@pytest.mark.parametrize("device", devices())
def test_integer_cvt_sat_on_every_device(device):
    """cvt.sat between integer types clamped at one bit wider than both (i17, i65), which
    SPIR-V has no type for: the Vulkan backend refused 9 of 250 differential kernels
    (`no SPIR-V type for i65`). The clamp bounds are the ISA's."""
    nvcc = nvcc_path()
    if nvcc is None:
        pytest.skip("nvcc is not installed")
    h = hashlib.sha1(CVT_SAT.encode()).hexdigest()[:16]
    cu, ptx = _DIR / f"c{h}.cu", _DIR / f"c{h}.ptx"
    cu.write_text(CVT_SAT)
    subprocess.run([nvcc, "-ptx", *FLAGS, "-o", str(ptx), str(cu)], check=True, capture_output=True, text=True)
    m = cuport.Module(ptx.read_text(), device=device)
    xs = [0, 1, -1, 0x7FFF, -0x8000, 0x8000, 0x1FFFF, -(1 << 63), (1 << 63) - 1, 200, -100, 127]
    x = np.array(xs, np.int64)
    out = np.zeros(5 * len(xs), np.uint64)
    m.kernel("cvt_sat")((1,), (len(xs),), (x, out))
    want = []
    for v in xs:
        s16 = (v & 0xFFFF) - ((v & 0x8000) << 1)
        s8 = (v & 0xFF) - ((v & 0x80) << 1)
        u64 = v & ((1 << 64) - 1)
        want += [max(0, s16), min(u64, 0x7FFF), max(0, s16), min(u64, (1 << 63) - 1), max(0, s8)]
    assert out.tolist() == want


F64_DIRECTED = r"""
extern "C" __global__ void f64_directed(const int* op, const double* a, const double* b, const double* c,
                                        double* out) {
    int i = threadIdx.x;
    double x = a[i], y = b[i], z = c[i], r = 0;
    switch (op[i]) {
    case 0: r = __ddiv_ru(x, y); break;
    case 1: r = __dsub_rd(x, y); break;
    case 2: r = __dmul_ru(x, y); break;
    case 3: r = __dsqrt_rd(x); break;
    case 4: r = __fma_rd(x, y, z); break;
    case 5: r = __drcp_rd(x); break;
    case 6: r = __dmul_rz(x, y); break;
    case 7: r = __fma_rz(x, y, z); break;
    case 8: r = __fma_ru(x, y, z); break;
    case 9: r = __ddiv_rz(x, y); break;
    }
    out[i] = r;
}
"""

#: (operation, a, b, c, the H200's result; where the differential recording has it)
F64_DIRECTED_CASES = [
    (0, 0xC3E0000000000000, 0x0000000000000000, 0, 0xFFF0000000000000),  # d00_k007 o11[26]: -x / +0 = -inf
    (0, 0x41F0000000000000, 0x8000000000000000, 0, 0xFFF0000000000000),  # d06_k010 o13[37]
    (9, 0xBFF0000000000000, 0x0000000000000000, 0, 0xFFF0000000000000),  # __ddiv_rz(-1, +0): -inf too
    (5, 0x0000000000000000, 0, 0, 0x7FF0000000000000),  # d10rdc_k017 o0[59]: 1 / +0 rounded down is +inf
    (1, 0x3FDE852550000003, 0x3FDE852550000003, 0, 0x8000000000000000),  # d00_k008 o8[1]: x - x = -0 (rm)
    (1, 0x0000000000000000, 0x0000000000000000, 0, 0x8000000000000000),  # d10rdc_k048 o17[20]
    (2, 0x096E73968EC3613B, 0x0000000000000001, 0, 0x0000000000000001),  # d00_k027 o13[2]: tiny, up
    (2, 0x800E3CC4642ECE1C, 0x800E3CC4642ECE1C, 0, 0x0000000000000001),  # d11mgd_k009 o4[65]
    (6, 0x3FE0000000000000, 0x000FFFFFFFFFFFFF, 0, 0x0007FFFFFFFFFFFF),  # d09ftz_k026 o2[12]: subnormal, rz
    (3, 0x000D5BECDB8ED82B, 0, 0, 0x1FFD3D74CB21A498),  # d06_k003 o0[3]: the root of a subnormal
    (4, 0x3690000000000000, 0x800E3CC4642ECE1C, 0x3690000000000000, 0x368FFFFFFFFFFFFF),  # d11mgd_k009 o2[2]
    (7, 0x800317AB2E9CB577, 0x80062F565D396AEE, 0x800317AB2E9CB577, 0x800317AB2E9CB576),  # d09ftz_k041 o3[50]
    (8, 0x92B6550A0C58B24D, 0x92B6550A0C58B24D, 0x92B6550A0C58B24D, 0x92B6550A0C58B24C),  # d05_k011 o1[6] (rp)
]


@pytest.mark.parametrize("device", devices())
def test_f64_directed_rounding_at_the_edges(device):
    """f64 .rz/.rm/.rp where the Vulkan backend's error-free emulation (TwoSum and FMA
    residuals in LLVM IR) was wrong on lavapipe: a division by zero clamped to the largest
    finite value as if it overflowed, the exact zero x - x as +0 rounding down, products and
    roots whose residual is below the subnormal range (0 instead of the smallest subnormal,
    an ulp off), and an fma off by an ulp. The H200's answers, from the differential
    recording (the kernel and element beside each case)."""
    cases = F64_DIRECTED_CASES
    op = np.array([c[0] for c in cases], np.int32)
    a, b, c = (np.array([x[k] for x in cases], np.uint64).view(np.float64) for k in (1, 2, 3))
    out = np.zeros(len(cases), np.uint64)
    module(F64_DIRECTED, device).kernel("f64_directed")((1,), (len(cases),), (op, a, b, c, out.view(np.float64)))
    got = [hex(v) for v in out]
    assert got == [hex(x[4]) for x in cases]
