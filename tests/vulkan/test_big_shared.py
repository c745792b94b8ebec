"""Shared memory beyond the device's workgroup memory (backends/vulkan/slices.py): nvcc's
kernels (big_shared.cu) with 40 KiB of static and 100 KiB of dynamic shared memory, checked
against a host reference and the CPU backend's answers; a block's slice reused by later
chunks of a grid; generic pointers into it; an index past its end; CUDA's shared-memory
attributes on a Vulkan device. Every kernel built here goes through spirv-val.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import types
from pathlib import Path

import numpy as np
import pytest
from nvcc_ptx import ptx_of
from spvtools import validate

import cuport
from cuport.backends.base import CUDA_ERROR_ILLEGAL_ADDRESS, BackendError
from cuport.backends.vulkan import slices
from cuport.backends.vulkan.compiler import compile_kernel
from cuport.backends.vulkan.lower import DeviceCaps

HERE = Path(__file__).resolve().parent
TILE, GEN = 10240, 9216


def _backend():
    from cuport.backends.vulkan import runtime
    from cuport.backends.vulkan.backend import get_vulkan_backend

    if not runtime.devices():
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    return get_vulkan_backend()


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of(tmp_path_factory, HERE / "big_shared.cu", "sm_90")


@pytest.fixture(autouse=True)
def _validated(monkeypatch):
    monkeypatch.setenv("CUPORT_SPIRV_VALIDATE", "1")


def _vulkan(ptx: str, name: str, workgroup_memory: int | None = None, monkeypatch=None):
    """The kernel on the Vulkan device (as for a device with `workgroup_memory` bytes)."""
    be = _backend()
    if workgroup_memory is not None:
        monkeypatch.setattr(be, "caps", dataclasses.replace(be.caps, workgroup_memory=workgroup_memory))
    return cuport.Module(ptx, device="vulkan").kernel(name)


def _in_memory(kernel, block, dyn: int = 0) -> bool:
    return kernel._k.slice_bytes(block, dyn) > 0


def _tile_reference(x: np.ndarray) -> np.ndarray:
    """tile40k on the host, block by block."""
    t = x.reshape(-1, TILE)
    v = t * 2 + np.roll(t, -1, axis=1) - np.roll(t, 1, axis=1)
    r = v[:, ::-1]
    return (r + r[:, (np.arange(TILE) * 37) % TILE]).reshape(-1)


def _tile_input(blocks: int) -> np.ndarray:
    rng = np.random.default_rng(40)
    return rng.integers(-1000, 1000, blocks * TILE).astype(np.float32)


def test_static_shared_over_the_workgroup_memory(ptx):
    """40 KiB of static shared memory, more than lavapipe's 32: barriers order the tile's
    reads and writes in the block's slice; the host's and the CPU backend's answers."""
    be = _backend()
    blocks = 6
    x = _tile_input(blocks)
    k = _vulkan(ptx, "tile40k")
    out = np.zeros_like(x)
    k((blocks, 1, 1), (256, 1, 1), (x, out))
    assert _in_memory(k, (256, 1, 1)) == (be.caps.workgroup_memory < 40 * 1024)
    assert np.array_equal(out, _tile_reference(x))
    cpu = np.zeros_like(x)
    cuport.Module(ptx).kernel("tile40k")((blocks, 1, 1), (256, 1, 1), (x, cpu))
    assert np.array_equal(out, cpu)


@pytest.mark.parametrize("slots", [None, "1", "4", "12", "40"])
def test_more_blocks_than_slices(ptx, monkeypatch, slots):
    """A 5x7x3 grid in chunks of at most `slots` blocks (x ranges, rows, planes; None: the
    device's own number): every block's result is right, so no two blocks that ran at once
    shared a slice, and a slice's next block found nothing missing."""
    if slots is None:
        monkeypatch.delenv("CUPORT_VK_SHARED_SLOTS", raising=False)
    else:
        monkeypatch.setenv("CUPORT_VK_SHARED_SLOTS", slots)
    grid = (5, 7, 3)
    x = _tile_input(105)
    out = np.zeros_like(x)
    k = _vulkan(ptx, "tile40k", 32 * 1024, monkeypatch)
    k(grid, (256, 1, 1), (x, out))
    assert _in_memory(k, (256, 1, 1))
    assert np.array_equal(out, _tile_reference(x))


def test_many_blocks_reuse_the_slices(ptx, monkeypatch):
    """More blocks than the launch has slices, by the device's own count (up to ten times)."""
    monkeypatch.delenv("CUPORT_VK_SHARED_SLOTS", raising=False)
    be = _backend()
    n = slices.WAVES * (slices.resident(be.info, 256) or slices.UNKNOWN_RESIDENT)
    blocks = min(10 * n, 4096)
    assert slices.slots(be.info, 256, slices.slice_bytes(TILE * 4), blocks) < blocks
    x = _tile_input(blocks)
    out = np.zeros_like(x)
    _vulkan(ptx, "tile40k", 32 * 1024, monkeypatch)((blocks, 1, 1), (256, 1, 1), (x, out))
    assert np.array_equal(out, _tile_reference(x))


def _atomics_args(keys: np.ndarray, grid: int):
    return [keys, np.int32(len(keys)), np.zeros(16384, np.uint32), np.zeros(256, np.uint64),
            np.zeros(512, np.float32), np.zeros(64, np.uint32),
            np.array([0xFFFFFFFF, 0], np.uint32), np.zeros(grid * 15360, np.uint8),
            np.zeros(grid * 8192, np.uint16)]


def test_dynamic_shared_atomics_and_narrow_stores(ptx):
    """100 KiB of dynamic shared memory: 32- and 64-bit integer atomics, float adds, 16-bit
    compare-and-swap, min/max, and bytes and half-words stored by neighbouring threads."""
    grid, block = 7, 256
    rng = np.random.default_rng(100)
    keys = rng.integers(0, 1 << 24, 50000, dtype=np.uint32)
    args = _atomics_args(keys, grid)
    k = _vulkan(ptx, "atomics_bytes")
    k((grid, 1, 1), (block, 1, 1), args, shared=100 * 1024)
    assert _in_memory(k, (block, 1, 1), 100 * 1024)
    hist, big, fsum, c16, minmax, bytes_, halves = args[2:]
    k64 = keys.astype(np.uint64)
    assert np.array_equal(hist, np.bincount(keys % 16384, minlength=16384))
    assert np.array_equal(big, np.array([(k64[keys % 256 == i] << 8).sum() for i in range(256)], np.uint64))
    assert np.array_equal(fsum, 0.5 * np.bincount(keys % 512, minlength=512).astype(np.float32))
    assert np.array_equal(c16, np.bincount(keys % 64, minlength=64))
    assert minmax.tolist() == [keys.min(), keys.max()]
    i = np.arange(15360)
    want_b = np.concatenate([((np.roll(i, -1) * 7 + b) & 0xFF) for b in range(grid)]).astype(np.uint8)
    assert np.array_equal(bytes_, want_b)
    j = np.arange(8192)
    want_h = np.concatenate([((np.roll(j, 1) * 3 + 1000 * b) & 0xFFFF) for b in range(grid)]).astype(np.uint16)
    assert np.array_equal(halves, want_h)
    cpu = _atomics_args(keys, grid)
    cuport.Module(ptx).kernel("atomics_bytes")((grid, 1, 1), (block, 1, 1), cpu, shared=100 * 1024)
    for got, want in zip(args[2:], cpu[2:], strict=True):
        assert np.array_equal(got, want)


@pytest.mark.parametrize("use_shared", [1, 0])
def test_generic_pointers_into_the_slice(ptx, use_shared):
    """Generic stores and loads through a pointer chosen at run time and kept in shared
    memory, isspacep.shared/.global, cvta to and from shared: as the CPU backend answers."""
    blocks = 3
    g = np.zeros(blocks * GEN, np.float32)
    info = np.zeros(blocks * 256 * 4, np.uint32)
    out = np.zeros(blocks * GEN, np.float32)
    k = _vulkan(ptx, "generic_ptrs")
    k((blocks, 1, 1), (256, 1, 1), (g, np.int32(use_shared), info, out))
    i = np.arange(GEN)
    want = np.concatenate([(i[::-1] + b) * 2.0 + 1.0 for b in range(blocks)]).astype(np.float32)
    assert np.array_equal(out, want)
    rows = info.reshape(blocks, 256, 4)
    t = np.arange(256)
    assert (rows[:, :, 0] == use_shared).all() and (rows[:, :, 1] == 1 - use_shared).all()
    if use_shared:
        assert (rows[:, :, 2] == 12 * t).all()
        assert (rows[:, :, 3] == 3 * t + np.arange(blocks)[:, None]).all()
    cg, ci, co = np.zeros_like(g), np.zeros_like(info), np.zeros_like(out)
    cuport.Module(ptx).kernel("generic_ptrs")((blocks, 1, 1), (256, 1, 1), (cg, np.int32(use_shared), ci, co))
    assert np.array_equal(info, ci) and np.array_equal(out, co) and np.array_equal(g, cg)


def test_generic_pointers_known_to_be_shared(ptx):
    """Generic accesses that address-space inference decides are shared (their address keeps
    the shared window's bits, which the slice's offset drops as workgroup memory's does)."""
    c = compile_kernel(cuport.Module(ptx)._m.ptx, "known_shared", (256, 1, 1), 0,
                       DeviceCaps(subgroup_size=8, workgroup_memory=0))
    assert any(s == frozenset({"shared"}) for s in c.spaces.regs.values())
    blocks = 4
    out = np.zeros(blocks * 256, np.uint32)
    k = _vulkan(ptx, "known_shared")
    k((blocks, 1, 1), (256, 1, 1), (out,))
    assert _in_memory(k, (256, 1, 1)) == (_backend().caps.workgroup_memory < GEN * 4)
    per = GEN // 256
    word = (np.arange(GEN) // per * 5 + np.arange(GEN) % per)[None, :] + np.arange(blocks)[:, None]
    at = GEN - 1 - np.arange(256) * per
    assert np.array_equal(out.reshape(blocks, 256), word[:, at] + 3 * word[:, at - 1])


def test_an_index_past_the_slice_is_an_illegal_address(ptx, monkeypatch):
    """On a GPU a shared access past the block's shared memory faults; in device memory it
    would reach another block's slice, so where addresses are checked it fails the launch."""
    be = _backend()
    if not be.caps.sink_page:
        pytest.skip("global addresses are not checked (CUPORT_VK_ADDRESS_CHECK=0)")
    k = _vulkan(ptx, "wild_shared", 32 * 1024, monkeypatch)
    index = np.arange(32, dtype=np.int32)[::-1].copy()
    out = np.zeros(32, np.float32)
    k((1, 1, 1), (32, 1, 1), (index, out))
    assert out.tolist() == index.astype(np.float32).tolist()
    index[5] = TILE + 4096
    with pytest.raises(BackendError, match=r"kernel wild_shared: illegal address 0x400000000000e000 \(PTX line [1-9]") as e:
        k((1, 1, 1), (32, 1, 1), (index, out))
    assert e.value.code == CUDA_ERROR_ILLEGAL_ADDRESS


@pytest.mark.parametrize("limit, in_memory", [(48 * 1024, False), (32 * 1024, False), (4 * 1024, True)])
def test_only_kernels_that_do_not_fit_leave_workgroup_memory(ptx, limit, in_memory):
    """An 8 KiB tile stays a Workgroup variable wherever it fits (no cost to it); over the
    limit the shader declares no workgroup memory at all."""
    c = compile_kernel(cuport.Module(ptx)._m.ptx, "sgemm_tiles", (32, 8, 1), 0,
                       DeviceCaps(subgroup_size=8, workgroup_memory=limit))
    validate(c.shader.spirv)
    assert c.plan.shared_in_memory == in_memory
    assert c.shader.shared_bytes == (0 if in_memory else c.plan.shared_bytes)
    assert c.plan.shared_bytes >= 8 * 1024


def test_the_tile_product_in_device_memory(ptx, monkeypatch):
    """The kernel the cost was measured with (DESIGN.md), forced into device memory."""
    n = 128
    rng = np.random.default_rng(7)
    a = rng.integers(-8, 8, (n, n)).astype(np.float32)
    b = rng.integers(-8, 8, (n, n)).astype(np.float32)
    c = np.zeros((n, n), np.float32)
    k = _vulkan(ptx, "sgemm_tiles", 0, monkeypatch)
    k((n // 32, n // 32, 1), (32, 8, 1), (a, b, c, np.int32(n)))
    assert _in_memory(k, (32, 8, 1))
    assert np.array_equal(c, a @ b)


def test_chunks_cover_the_grid_in_order():
    for grid in ((5, 7, 3), (1, 1, 9), (100, 1, 1), (3, 4, 5)):
        total = grid[0] * grid[1] * grid[2]
        for n in (1, 2, 3, 4, 5, 12, 20, 21, 59, 60, total, total + 1):
            seen = []
            for (bx, by, bz), (sx, sy, sz), first in slices.chunks(grid, n):
                assert sx * sy * sz <= n
                ids = [(x + grid[0] * (y + grid[1] * z)) for z in range(bz, bz + sz)
                       for y in range(by, by + sy) for x in range(bx, bx + sx)]
                assert sorted(ids) == list(range(first, first + len(ids)))
                seen += sorted(ids)
            assert seen == list(range(total)), (grid, n)


def test_cuda_shared_memory_attributes():
    """What CUDA programs expect of an H200: 48 KiB a block, 227 KiB by opt-in."""
    from cuport.backends.vulkan.attributes import device_attributes
    from cuport.driver import device

    a = device_attributes(_backend().info)
    assert a["MAX_SHARED_MEMORY_PER_BLOCK"] == device.STATIC_SHARED_PER_BLOCK == 49152
    assert a["MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"] == device.OPTIN_SHARED_PER_BLOCK == 232448
    assert a["MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"] >= device.SHARED_PER_MULTIPROCESSOR


@pytest.fixture(scope="module")
def optin_program(tmp_path_factory) -> Path:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is needed to build the program")
    out = tmp_path_factory.mktemp("shared_optin") / "shared_optin"
    subprocess.run([nvcc, "-O3", "-o", str(out), str(HERE / "shared_optin.cu")], check=True)
    return out


def test_a_program_opts_in_to_227_kib(optin_program):
    """The runtime's view on the Vulkan device is the CPU device's (an H200's): the limits,
    cudaFuncSetAttribute's and the launches' refusals, and blocks with 227 KiB that compute
    the host's sums."""
    import sys

    sys.path.insert(0, str(HERE.parent / "capi"))
    from capi_support import clean_env, cuport_command, run

    _backend()
    outs = {}
    for dev in ("cpu", "vulkan"):
        r = run([*cuport_command(), "run", str(optin_program)],
                env=clean_env(CUPORT_DEVICE=dev, CUPORT_SPIRV_VALIDATE="1"), timeout=600)
        assert r.returncode == 0 and r.stdout.rstrip().endswith("PASS"), (dev, r.stdout, r.stderr)
        outs[dev] = r.stdout
    assert "shared memory per block 49152, by opt-in 232448" in outs["vulkan"]
    assert outs["vulkan"] == outs["cpu"]


def _nvidia():
    heap = types.SimpleNamespace(size=140 << 30, device_local=True)
    limits = types.SimpleNamespace(max_workgroup_invocations=1024, max_shared_memory=48 * 1024)
    return types.SimpleNamespace(driver_id="NVIDIA_PROPRIETARY", multiprocessors=132,
                                 warps_per_multiprocessor=64, limits=limits, memory_heaps=[heap])


def test_slices_per_launch(monkeypatch):
    """WAVES waves of the blocks that run at once (an H200: 132 multiprocessors, one block of
    256 threads each by cooperative.py's register bound), more where the grid would take more
    than MAX_CHUNKS chunks, never past the budget; a cooperative grid all at once."""
    monkeypatch.delenv("CUPORT_VK_SHARED_SLOTS", raising=False)
    info = _nvidia()
    s40 = slices.slice_bytes(40 * 1024)
    assert slices.resident(info, 256) == 132
    assert slices.slots(info, 256, s40, 100) == 100
    assert slices.slots(info, 256, s40, 5000) == slices.WAVES * 132
    assert slices.slots(info, 256, s40, 200_000) == -(-200_000 // slices.MAX_CHUNKS)
    s227 = slices.slice_bytes(slices.OPTIN_BYTES)
    assert slices.slots(info, 256, s227, 10**6) == slices.POOL_BYTES // s227
    assert slices.slots(info, 256, s227, 10**6, cooperative_launch=True) == 10**6
    monkeypatch.setenv("CUPORT_VK_SHARED_SLOTS", "3")
    assert slices.slots(info, 256, s40, 100) == 3
    # memory that cannot hold the largest blocks' slices (attributes.py then offers the
    # workgroup memory's sizes)
    small = _nvidia()
    small.memory_heaps[0].size = 1 << 20
    assert slices.available(info) and not slices.available(small)


@pytest.mark.parametrize("which, at", [(0, 0), (1, 0), (2, 1)], ids=["load", "store", "local"])
def test_an_index_past_a_workgroup_array_fails_the_launch(ptx, which, at):
    """A shared or local index past its array (in workgroup or private memory): on a CPU
    driver (DeviceCaps.checked_arrays) the launch fails with CUDA_ERROR_ILLEGAL_ADDRESS at
    the array's window address, as a GPU faults, instead of the driver's code touching the
    process's memory beyond the array (lavapipe crashed with SIGSEGV)."""
    be = _backend()
    if not (be.caps.sink_page and be.caps.checked_arrays):
        pytest.skip("array indices are checked on CPU drivers only (a GPU faults by itself)")
    k = _vulkan(ptx, "wild_workgroup")
    lane = np.arange(32, dtype=np.int32)
    index = np.concatenate([lane[::-1], lane, lane]).astype(np.int32)
    out = np.zeros(32, np.float32)
    k((1, 1, 1), (32, 1, 1), (index, out))
    assert out.tolist() == (lane[::-1] + lane * lane).astype(np.float32).tolist()
    wild = 1 << 26  # words: 256 MiB past the array
    index[32 * which + 7] = wild
    window = (1 << 62) + (1 << 48) * at  # layout.SHARED_WINDOW, LOCAL_WINDOW
    with pytest.raises(BackendError, match=rf"illegal address {window + 4 * wild:#x} \(PTX line [1-9]") as e:
        k((1, 1, 1), (32, 1, 1), (index, out))
    assert e.value.code == CUDA_ERROR_ILLEGAL_ADDRESS
