"""Cooperative launches on Vulkan: how many workgroups a device keeps running at once.

A cooperative launch (cuLaunchCooperativeKernel, CU_LAUNCH_ATTRIBUTE_COOPERATIVE) may wait
in grid.sync() for every other block of its grid, so all of them must run at the same time:
NVIDIA's rule is "at most the occupancy calculator's blocks per multiprocessor times the
multiprocessors", else CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE. Vulkan states no such
number; cuport gives one only where it knows it, and reports COOPERATIVE_LAUNCH 0 (and
refuses the launch) elsewhere:

- lavapipe (Mesa's llvmpipe): a dispatch's workgroups are tasks of one thread pool
  (gallium/drivers/llvmpipe/lp_cs_tpool.c: each worker takes a workgroup and runs it to its
  end), of LP_NUM_THREADS threads if that is set, else as many as the CPUs in the process'
  affinity mask when there are more than one, else none (the dispatching thread runs the
  workgroups one after another); at most LP_MAX_THREADS, 32 (lp_screen.c,
  util/u_cpu_detect.c, lp_limits.h). So a "multiprocessor" is a worker thread holding one
  workgroup. Measured on Mesa 22.3.6 (tests/vulkan/test_cooperative.py): 2 CPUs -> 2
  workgroups wait for each other, 3 cannot; LP_NUM_THREADS=40 -> 32, not 33;
  LP_NUM_THREADS=0 -> 1.
- NVIDIA: multiprocessors from VK_NV_shader_sm_builtins (shaderSMCount), blocks per
  multiprocessor from the kernel's threads (shaderWarpsPerSM), its shared memory, and its
  registers; Vulkan does not say how many registers a pipeline uses, so the count assumes
  the most the compiler may give each thread of such a block (65536 per multiprocessor,
  255 per thread, 256-register granules per warp), and at most 16 blocks per
  multiprocessor (the least of NVIDIA's architectures since Turing). That may be fewer
  blocks than CUDA's calculator gives on the same GPU (a smaller grid), never more.

The grid workspace that cooperative groups find through %envreg1/%envreg2 ({wsSize,
barrier}, as the CPU backend's) is one device word pair per backend, reset before each
cooperative launch on the launch's stream.
"""

from __future__ import annotations

import os

from ..base import CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, CUDA_ERROR_NOT_SUPPORTED, BackendError

LAVAPIPE_MAX_THREADS = 32  # lp_limits.h LP_MAX_THREADS (measured: 32 resident, not 33)
NVIDIA_REGISTERS_PER_SM = 65536
NVIDIA_MAX_REGISTERS_PER_THREAD = 255
NVIDIA_MAX_BLOCKS_PER_SM = 16
WORKSPACE_BYTES = 8


def _mesa_num(value: str | None, default: int) -> int:
    """debug_get_num_option: strtol(value, 0) when it parses, else the default."""
    if value is None:
        return default
    try:
        return int(value.strip(), 0)
    except ValueError:
        return default


def lavapipe_threads() -> int:
    """The workgroups lavapipe runs at once in this process (see the module docstring)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    n = cpus if cpus > 1 else 0
    n = _mesa_num(os.environ.get("LP_NUM_THREADS"), n)
    if n < 0:
        n = LAVAPIPE_MAX_THREADS  # an unsigned option: negative values are huge
    return max(min(n, LAVAPIPE_MAX_THREADS), 1)


def kind(info) -> str | None:
    """'lavapipe', 'nvidia', or None where cuport does not know the device's residency."""
    if info.driver_id == "MESA_LLVMPIPE":
        return "lavapipe"
    if info.driver_id.startswith("NVIDIA") and info.multiprocessors and info.warps_per_multiprocessor:
        return "nvidia"
    return None


def multiprocessors(info) -> int | None:
    k = kind(info)
    if k == "lavapipe":
        return lavapipe_threads()
    if k == "nvidia":
        return info.multiprocessors
    return None


def blocks_per_multiprocessor(info, threads: int, shared_bytes: int) -> int:
    """How many blocks of `threads` threads using `shared_bytes` of shared memory one
    multiprocessor runs at once (0: none, or not known for this device). Shared memory
    beyond the workgroup memory is device memory (slices.py), which limits nothing."""
    k = kind(info)
    lim = info.limits
    if threads <= 0 or threads > min(1024, lim.max_workgroup_invocations):
        return 0
    if shared_bytes > lim.max_shared_memory:
        shared_bytes = 0
    if k == "lavapipe":
        return 1
    if k != "nvidia":
        return 0
    warps = -(-threads // 32)
    by_warps = info.warps_per_multiprocessor // warps
    per_thread = min(NVIDIA_MAX_REGISTERS_PER_THREAD, NVIDIA_REGISTERS_PER_SM // (warps * 32))
    per_warp = -(-per_thread * 32 // 256) * 256
    by_registers = NVIDIA_REGISTERS_PER_SM // (warps * per_warp)
    by_shared = lim.max_shared_memory // shared_bytes if shared_bytes else NVIDIA_MAX_BLOCKS_PER_SM
    return max(0, min(NVIDIA_MAX_BLOCKS_PER_SM, by_warps, by_registers, by_shared))


def attributes(info) -> dict[str, int]:
    """The device attributes that describe residency (attributes.py)."""
    sms = multiprocessors(info)
    k = kind(info)
    out: dict[str, int] = {"COOPERATIVE_LAUNCH": int(sms is not None)}
    if sms is not None:
        out["MULTIPROCESSOR_COUNT"] = sms
    threads = min(1024, info.limits.max_workgroup_invocations)
    if k == "lavapipe":
        out["MAX_BLOCKS_PER_MULTIPROCESSOR"] = 1
        out["MAX_THREADS_PER_MULTIPROCESSOR"] = threads
    elif k == "nvidia":
        out["MAX_THREADS_PER_MULTIPROCESSOR"] = info.warps_per_multiprocessor * 32
    return out


def occupancy(kernel, threads: int, dynamic_shared: int) -> int | None:
    """cuOccupancyMaxActiveBlocksPerMultiprocessor for a VulkanKernel (None: the device's
    residency is not known, the driver's own table answers)."""
    info = kernel.module.backend.info
    if kind(info) is None:
        return None
    return blocks_per_multiprocessor(info, threads, kernel.info.static_shared_bytes + dynamic_shared)


def check(kernel, grid: tuple[int, int, int], block: tuple[int, int, int], dynamic_shared: int) -> None:
    """Refuse a cooperative launch whose blocks cannot all run at once."""
    info = kernel.module.backend.info
    sms = multiprocessors(info)
    if sms is None:
        raise BackendError(CUDA_ERROR_NOT_SUPPORTED,
                           f"cooperative launches on the Vulkan backend need a device whose "
                           f"concurrent workgroups cuport knows (lavapipe, NVIDIA); {info.name} "
                           "does not say how many it runs at once")
    threads = block[0] * block[1] * block[2]
    per_sm = occupancy(kernel, threads, dynamic_shared) or 0
    nblocks = grid[0] * grid[1] * grid[2]
    if nblocks > per_sm * sms:
        raise BackendError(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
                           f"a cooperative grid of {nblocks} blocks, at most {per_sm * sms} can "
                           f"run at once on {info.name} ({per_sm} per multiprocessor x {sms})")


def workspace(backend) -> int:
    """The grid workspace's address, reset ({wsSize 8, barrier 0}) on the backend's stream
    (call it with the launch lock held, just before the dispatch)."""
    buf = getattr(backend, "_grid_workspace", None)
    if buf is None:
        buf = backend._grid_workspace = backend.allocate_buffer(WORKSPACE_BYTES)
    backend.stream.fill(buf.address, WORKSPACE_BYTES, 1, 4)
    backend.stream.fill(buf.address + 4, 0, 1, 4)
    return buf.address
