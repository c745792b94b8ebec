"""wmma on the Vulkan backend against the CPU backend, bit for bit (isa/wmma.py: one
semantics, per lane, for both), with nvcc's PTX of wmma_kernels.cu: every shape and type,
a and b row- and column-major, c and d in either layout, ld larger than the tile, fragments
changed element-wise between load and mma, several warps per block, shared and generic
addresses. Each result is also checked against numpy (exactly for integers, to a few ulps
of the sum for floats), so that the two backends cannot agree on a wrong answer.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from nvcc_ptx import ptx_of

import cuport

HERE = Path(__file__).resolve().parent
WARPS, BLOCK = 4, 64  # two blocks of two warps, a tile each
PAD = 3  # ld = the tile's extent + PAD


@dataclass(frozen=True)
class Case:
    name: str
    m: int
    n: int
    k: int
    ab: str  # f16 bf16 tf32 f64 s8 u8
    cd: str  # f32 f16 f64 s32
    a_row: bool
    b_row: bool
    sat: bool = False


CASES = [Case(*c) for c in (
    ("f16_16_rc", 16, 16, 16, "f16", "f32", True, False),
    ("f16_16_cr", 16, 16, 16, "f16", "f32", False, True),
    ("f16_32x8_rc", 32, 8, 16, "f16", "f32", True, False),
    ("f16_32x8_cr", 32, 8, 16, "f16", "f32", False, True),
    ("f16_8x32_rc", 8, 32, 16, "f16", "f32", True, False),
    ("f16_8x32_cr", 8, 32, 16, "f16", "f32", False, True),
    ("f16acc_16_rr", 16, 16, 16, "f16", "f16", True, True),
    ("f16acc_32x8_cc", 32, 8, 16, "f16", "f16", False, False),
    ("bf16_16_rc", 16, 16, 16, "bf16", "f32", True, False),
    ("bf16_32x8_cr", 32, 8, 16, "bf16", "f32", False, True),
    ("bf16_8x32_rr", 8, 32, 16, "bf16", "f32", True, True),
    ("f64_rc", 8, 8, 4, "f64", "f64", True, False),
    ("f64_cr", 8, 8, 4, "f64", "f64", False, True),
    ("tf32_rc", 16, 16, 8, "tf32", "f32", True, False),
    ("tf32_cr", 16, 16, 8, "tf32", "f32", False, True),
    ("s8_16_rc", 16, 16, 16, "s8", "s32", True, False),
    ("s8_32x8_cr", 32, 8, 16, "s8", "s32", False, True),
    ("s8_8x32_rr_sat", 8, 32, 16, "s8", "s32", True, True, True),
    ("u8_16_cc_sat", 16, 16, 16, "u8", "s32", False, False, True),
    ("u8_32x8_rc", 32, 8, 16, "u8", "s32", True, False),
)]
#: device buffers hold the elements' bits; bf16 as uint16
STORE = {"f16": np.float16, "bf16": np.uint16, "tf32": np.float32, "f64": np.float64,
         "s8": np.int8, "u8": np.uint8, "f32": np.float32, "s32": np.int32}


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of(tmp_path_factory, HERE / "wmma_kernels.cu", "sm_80")


def _vulkan():
    from cuport.backends.vulkan import runtime
    from cuport.backends.vulkan.backend import get_vulkan_backend

    if not runtime.devices():
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    return get_vulkan_backend()


@pytest.fixture(scope="module")
def cpu_module(ptx):
    return cuport.Module(ptx, device="cpu")


@pytest.fixture(scope="module")
def vk_module(ptx):
    be = _vulkan()
    return be, be.load_module([ptx])


def run_cpu(mod, name: str, grid: int, block: int, arrays: list[np.ndarray], ints: list[int]) -> None:
    mod.kernel(name)((grid, 1, 1), (block, 1, 1), (*arrays, *(np.int32(i) for i in ints)))


def run_vulkan(vk, name: str, grid: int, block: int, arrays: list[np.ndarray], ints: list[int]) -> None:
    """Launch through the backend (device memory need not be the host's), results copied back."""
    be, mod = vk
    addrs = []
    for a in arrays:
        p = be.allocate(max(a.nbytes, 4))
        be.copy_htod(p, a.ctypes.data, a.nbytes)
        addrs.append(p)
    params = struct.pack(f"<{len(addrs)}Q{len(ints)}i", *addrs, *ints)
    mod.kernel(name).launch((grid, 1, 1), (block, 1, 1), 0, params)
    for a, p in zip(arrays, addrs, strict=True):
        be.copy_dtoh(a.ctypes.data, p, a.nbytes)
        be.free(p, max(a.nbytes, 4))


# ---------------------------------------------------------------- data and reference


def _dims(c: Case) -> dict[str, int]:
    """Leading dimensions and the elements between two warps' tiles."""
    lda = (c.k if c.a_row else c.m) + PAD
    ldb = (c.n if c.b_row else c.k) + PAD
    ldc = max(c.m, c.n) + PAD  # serves c and d in either layout
    stride = max(lda * max(c.m, c.k), ldb * max(c.k, c.n), ldc * max(c.m, c.n))
    return {"lda": lda, "ldb": ldb, "ldc": ldc, "stride": stride}


def _values(t: str, size: int, rng: np.random.Generator, spread: int = 6) -> np.ndarray:
    if t in ("s8", "u8"):
        info = np.iinfo(STORE[t])
        return rng.integers(info.min, info.max + 1, size).astype(STORE[t])
    if t == "s32":  # some near the ends, so that .satfinite and wrapping both matter
        v = rng.integers(-(1 << 31), 1 << 31, size, dtype=np.int64)
        return np.where(rng.random(size) < 0.5, v, rng.integers(-3000, 3000, size)).astype(np.int32)
    x = rng.standard_normal(size) * np.exp2(rng.integers(-6, spread + 1, size))
    if t == "bf16":
        return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return x.astype(STORE[t])


def _as_float(t: str, bits: np.ndarray) -> np.ndarray:
    """The values products use (f64): bf16 widened, tf32 cut to its 19 bits."""
    if t == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if t == "tf32":
        return (bits.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    return bits.astype(np.float64)


def _tile(arr: np.ndarray, w: int, stride: int, rows: int, cols: int, ld: int, row_major: bool) -> np.ndarray:
    flat = arr[w * stride:]
    if row_major:
        return np.stack([flat[r * ld:r * ld + cols] for r in range(rows)])
    return np.stack([flat[col * ld:col * ld + rows] for col in range(cols)]).T


def _reference(c: Case, A, B, C, cd_col: bool) -> list[np.ndarray]:
    """Each warp's d tile (numpy: exact integers, float64 sums for floats)."""
    d = _dims(c)
    out = []
    for w in range(WARPS):
        a = _tile(A, w, d["stride"], c.m, c.k, d["lda"], c.a_row)
        b = _tile(B, w, d["stride"], c.k, c.n, d["ldb"], c.b_row)
        cc = _tile(C, w, d["stride"], c.m, c.n, d["ldc"], not cd_col)
        if c.ab in ("s8", "u8"):  # the kernel adds 1 to every element (wrapping in 8 bits)
            a1 = (a + STORE[c.ab](1)).astype(np.int64)
            b1 = (b + STORE[c.ab](1)).astype(np.int64)
            s = cc.astype(np.int64) + a1 @ b1
            out.append(np.clip(s, -(1 << 31), (1 << 31) - 1) if c.sat else (s + (1 << 31)) % (1 << 32) - (1 << 31))
        elif c.ab == "tf32":  # the kernel negates a
            out.append(cc.astype(np.float64) - _as_float("tf32", a) @ _as_float("tf32", b))
        else:  # the kernel doubles a and b
            out.append(cc.astype(np.float64) + (2 * _as_float(c.ab, a)) @ (2 * _as_float(c.ab, b)))
    return out


def _check_reference(c: Case, D: np.ndarray, want: list[np.ndarray], A, B, cd_col: bool) -> None:
    d = _dims(c)
    for w, ref in enumerate(want):
        got = _tile(D, w, d["stride"], c.m, c.n, d["ldc"], not cd_col)
        if c.cd == "s32":
            assert (got.astype(np.int64) == ref).all(), (c.name, w)
            continue
        # floats: the sum of |terms| bounds the rounding of k-ordered f32 (f64) fmas
        a = np.abs(_as_float(c.ab, _tile(A, w, d["stride"], c.m, c.k, d["lda"], c.a_row)))
        b = np.abs(_as_float(c.ab, _tile(B, w, d["stride"], c.k, c.n, d["ldb"], c.b_row)))
        mag = 4 * a @ b + np.abs(ref)
        eps = {"f32": 2.0 ** -22, "f16": 2.0 ** -9, "f64": 2.0 ** -50}[c.cd]
        assert (np.abs(got.astype(np.float64) - ref) <= c.k * eps * mag).all(), (c.name, w)


# ---------------------------------------------------------------- the tests


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_wmma_matches_the_cpu_backend(case: Case, cpu_module, vk_module):
    rng = np.random.default_rng(sum(map(ord, case.name)))
    d = _dims(case)
    size = WARPS * d["stride"] + 64
    spread = 2 if case.cd == "f16" else 6  # sums within f16's range
    A, B = _values(case.ab, size, rng, spread), _values(case.ab, size, rng, spread)
    C = _values(case.cd, size, rng, spread)
    for cd_col in (0, 1):
        ints = [d["lda"], d["ldb"], d["ldc"], d["stride"], cd_col]
        results = []
        for run in (run_cpu, run_vulkan):
            D = np.zeros(size, STORE[case.cd])
            run(cpu_module if run is run_cpu else vk_module, case.name, WARPS * 32 // BLOCK, BLOCK,
                [A, B, C, D], ints)
            results.append(D)
        cpu, vk = results
        assert cpu.tobytes() == vk.tobytes(), f"{case.name} (cd {'col' if cd_col else 'row'}): " \
            f"{np.flatnonzero(cpu.view(np.uint8) != vk.view(np.uint8))[:8]} differ"
        _check_reference(case, cpu, _reference(case, A, B, C, bool(cd_col)), A, B, bool(cd_col))


@pytest.mark.parametrize("b_shared", [1, 0])
def test_wmma_from_shared_and_generic_addresses(b_shared: int, cpu_module, vk_module):
    rng = np.random.default_rng(7 + b_shared)
    A = _values("f16", 2 * 16 * 24, rng)
    B = _values("f16", 2 * 256, rng)
    results = []
    for run in (run_cpu, run_vulkan):
        D = np.zeros(2 * 256, np.float32)
        run(cpu_module if run is run_cpu else vk_module, "mma_shared", 1, 64,
            [A, B, np.zeros(1, np.float32), D], [b_shared])
        results.append(D)
    assert results[0].tobytes() == results[1].tobytes()
    for w in range(2):
        a = A[w * 384:(w + 1) * 384].reshape(16, 24)[:, :16].astype(np.float64)
        b = B[w * 256:(w + 1) * 256].reshape(16, 16).T.astype(np.float64)  # column-major b
        got = results[0][w * 256:(w + 1) * 256].reshape(16, 16)
        assert np.allclose(got, 0.5 + a @ b, rtol=1e-5, atol=1e-4)


def test_wmma_in_code_part_of_the_block_skips(cpu_module, vk_module):
    """Warps of a block that skip an mma: fine with 32-wide subgroups; refused by name where
    warps exchange through workgroup memory (lavapipe's 8-wide subgroups), like the other
    warp collectives."""
    be, _ = vk_module
    rng = np.random.default_rng(3)
    A, B = _values("f16", 256, rng), _values("f16", 256, rng)
    want = np.zeros(256 + 64, np.float32)
    run_cpu(cpu_module, "mma_first_warp", 1, 64, [A, B, want], [])
    assert np.allclose(want[:256].reshape(16, 16), A.reshape(16, 16).astype(np.float64)
                       @ B.reshape(16, 16).astype(np.float64), rtol=1e-5, atol=1e-4)
    assert (want[256:] == 1).all()
    got = np.zeros(256 + 64, np.float32)
    if be.caps.subgroup_size == 32:
        run_vulkan(vk_module, "mma_first_warp", 1, 64, [A, B, got], [])
        assert got.tobytes() == want.tobytes()
        return
    with pytest.raises(Exception, match=r"a warp collective \(wmma\) in code that part of the block may skip"):
        run_vulkan(vk_module, "mma_first_warp", 1, 64, [A, B, got], [])


def test_syncwarp_in_code_part_of_the_block_skips(cpu_module, vk_module):
    """bar.warp.sync is a barrier of the block where a warp spans several subgroups (what
    mma_shared's warps stage needs it): in code part of the block skips it is refused."""
    be, _ = vk_module
    A = np.arange(32, dtype=np.float32)
    want = np.zeros(96, np.float32)
    run_cpu(cpu_module, "sync_first_warp", 1, 64, [A, want], [])
    assert (want[:32] == A[::-1]).all() and (want[32:] == 1).all()
    got = np.zeros(96, np.float32)
    if be.caps.subgroup_size == 32:
        run_vulkan(vk_module, "sync_first_warp", 1, 64, [A, got], [])
        assert (got == want).all()
        return
    with pytest.raises(Exception, match=r"a warp barrier \(bar.warp.sync\) in code that part of the block"):
        run_vulkan(vk_module, "sync_first_warp", 1, 64, [A, got], [])


@pytest.mark.parametrize("subgroup", [32, 8])
def test_spirv_validates(ptx, subgroup: int):
    """Every kernel's SPIR-V for both warp mappings: subgroup shuffles (NVIDIA's 32-wide
    subgroups, not run here on lavapipe) and exchanges through workgroup memory."""
    from spvtools import validate

    from cuport.backends.vulkan.compiler import compile_kernel
    from cuport.backends.vulkan.lower import DeviceCaps
    from cuport.ptx.parser import parse

    module = parse(ptx)
    caps = DeviceCaps(subgroup_size=subgroup, sink_page=4096, zero_page=8192)  # address checks
    for fn in module.kernels():
        if fn.name == "mma_s4" or (subgroup != 32 and fn.name in ("mma_first_warp", "sync_first_warp")):
            continue  # refused (tested above and below)
        validate(compile_kernel(module, fn.name, (BLOCK, 1, 1), 0, caps).shader.spirv)


def test_sub_byte_shapes_are_refused_by_name(cpu_module, vk_module):
    args = [np.zeros(64, np.int32)] * 3
    for run, mod in ((run_cpu, cpu_module), (run_vulkan, vk_module)):
        with pytest.raises(Exception, match=r"wmma shape \.m8n8k32 is not supported \(sub-byte"):
            run(mod, "mma_s4", 1, 32, args, [])
