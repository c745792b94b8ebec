"""Dynamic parallelism (kernels that launch kernels, CUDA 12 semantics: CDP2): the rules
every backend follows. How a backend hears of a device-side launch is its own business
(the CPU backend: host calls from the kernel, cpu/device_launch.py; the Vulkan backend: a
queue in device memory read when the grid is done, vulkan/device_launch.py); what the
launch means is here, once.

A launch from device code is recorded, in the order threads issue it, in the queue of the
grid being run, and runs when that grid is done: first the grids launched into any stream
but the tail-launch stream (each with the grids it launches in turn), then those of
cudaStreamTailLaunch (`schedule`). That is one of the schedules CUDA 12 allows: a parent
cannot wait for its children (cudaDeviceSynchronize is gone from device code), every child
grid completes before its parent grid counts as complete, a tail launch starts after all
other work of the grid that launched it, and work in one stream (the NULL stream of a
block, a stream the kernel created, cudaStreamFireAndForget) runs in the order it was
launched. So a stream or event made in device code needs nothing behind it: its handle is
a fresh number (STREAM_HANDLE_BASE + n). Nesting stops at CUDA's 24 levels, with CUDA's
error (`may_launch`). A grid's launches all wait until it is done, where a GPU starts them
meanwhile, so CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT (what a GPU keeps pending at once)
is not applied; a grid that launches more than a backend can hold (at most PENDING_CAP)
gets CUDA's pending-count error instead of exhausting memory, never a silent drop.

A kernel's address in device code (`mov.u64 %rd, kernel`) is a token the host maps back to
the kernel (`function_token`, `kernel_of_token`), the same in every compiled kernel of a
module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..ptx import ir

TAIL_LAUNCH = 0x3  # cudaStreamTailLaunch
MAX_DEPTH = 24  # grids nested in all, the host's launch included
PENDING_CAP = 1 << 20  # launches of one grid a backend may hold at most
PARAM_ALIGN = 64  # a parameter buffer's alignment (cudaGetParameterBuffer's)
MIN_PARAM_BYTES = 8  # a parameter buffer's least size (a kernel without parameters too)
STREAM_HANDLE_BASE = 0x5000  # streams and events made in device code: this plus a count
DEVICE = 0  # cudaGetDevice in device code
DEVICE_COUNT = 1  # cudaGetDeviceCount in device code

# CNPerror codes, what the __cuda_syscall_cnpv2Launch* functions return (libcudadevrt's
# cudartErrorCnpMap turns them into cudaError values: 1 -> 1, 5 -> 65, 7 -> 9, 12 -> 69)
CNP_SUCCESS = 0
CNP_INVALID_VALUE = 1
CNP_MAX_DEPTH = 5
CNP_INVALID_CONFIGURATION = 7
CNP_PENDING_COUNT = 12

# cudaError values a syscall sets as the thread's last error itself (no CNP code passes
# through the map there): cudaGetParameterBufferV2 of something that is not a kernel, and of
# a buffer the backend has no room left for (the error the same launch gets at the cap)
ERROR_INVALID_DEVICE_FUNCTION = 98  # cudaErrorInvalidDeviceFunction
ERROR_PENDING_COUNT = 69  # cudaErrorLaunchPendingCountExceeded

#: the checks of a device-side launch, in the order CUDA makes them: the first that fails is
#: the launch's CNP result. "buffer": a parameter buffer of this grid, not launched before
#: (a launch consumes it, whatever the result); "depth": `may_launch`; "pending": room in
#: the grid's queue; "kernel": the buffer (or the V1 call) names a kernel; "configuration":
#: no zero grid or block dimension, at most the kernel's threads per block.
CHECKS = (("buffer", CNP_INVALID_VALUE), ("depth", CNP_MAX_DEPTH), ("pending", CNP_PENDING_COUNT),
          ("kernel", CNP_INVALID_VALUE), ("configuration", CNP_INVALID_CONFIGURATION))


def launch_result(passed: dict[str, bool]) -> int:
    """The CNP code of a launch whose CHECKS came out as `passed`."""
    for name, code in CHECKS:
        if not passed[name]:
            return code
    return CNP_SUCCESS


def may_launch(depth: int) -> bool:
    """Whether a grid `depth` levels below the host's launch may launch grids."""
    return depth + 1 < MAX_DEPTH


def good_configuration(grid, block, max_threads: int) -> bool:
    return min(grid) >= 1 and min(block) >= 1 and block[0] * block[1] * block[2] <= max_threads


def param_buffer_bytes(param_size: int) -> int:
    """The bytes a parameter buffer takes: the kernel's parameters, whole PARAM_ALIGN units."""
    n = max(param_size, MIN_PARAM_BYTES)
    return (n + PARAM_ALIGN - 1) // PARAM_ALIGN * PARAM_ALIGN


#: Function "addresses" are tokens, the same in every compiled kernel of a module (a
#: pointer stored by one kernel may be used by another); the base keeps them far from any
#: real address.
FUNC_TOKEN_BASE = 0x7F0F_0000_0000_0000


def function_token(module: ir.Module, name: str) -> int:
    return FUNC_TOKEN_BASE + list(module.functions).index(name)


def kernel_of_token(module: ir.Module, token: int) -> str | None:
    """The kernel (a defined .entry) whose token this is, else None."""
    names = list(module.functions)
    i = token - FUNC_TOKEN_BASE
    if 0 <= i < len(names):
        fn = module.functions[names[i]]
        if fn.is_entry and fn.is_definition:
            return names[i]
    return None


@dataclass
class DeviceLaunch:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    params: bytes
    stream: int


def schedule(launches: list[DeviceLaunch]) -> list[DeviceLaunch]:
    """A finished grid's launches in the order they run: the tail launches last."""
    return [x for x in launches if x.stream != TAIL_LAUNCH] + \
        [x for x in launches if x.stream == TAIL_LAUNCH]


def run_children(launches: list[DeviceLaunch], depth: int,
                 launch: Callable[[DeviceLaunch, int], None]) -> None:
    """Run a finished grid's launches (`launch(child, its depth)`, which returns once the
    child and everything it launched are done), in `schedule`'s order."""
    for x in schedule(launches):
        launch(x, depth + 1)
