"""The interface between the driver and a backend (CPU today; OpenCL and Metal later).

The driver never looks inside compiled code: it hands PTX text to a backend, gets a
module image back, asks it for kernels and globals, and launches kernels with a
packed parameter buffer laid out exactly as the PTX `.param` space declares it.
Device memory is owned by the driver (on the CPU backend it is host memory, so a
`CUdeviceptr` is a real address); the backend only reads and writes it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

# The CUresult codes a backend reports (the driver's table in cuport.driver.errors has them all).
CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_INVALID_IMAGE = 200
CUDA_ERROR_INVALID_PTX = 218
CUDA_ERROR_NOT_FOUND = 500
CUDA_ERROR_ILLEGAL_ADDRESS = 700
CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720
CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701
CUDA_ERROR_ASSERT = 710
CUDA_ERROR_HARDWARE_STACK_ERROR = 714
CUDA_ERROR_ILLEGAL_INSTRUCTION = 715
CUDA_ERROR_MISALIGNED_ADDRESS = 716
CUDA_ERROR_LAUNCH_FAILED = 719
CUDA_ERROR_NOT_SUPPORTED = 801
CUDA_ERROR_UNKNOWN = 999


class BackendError(Exception):
    """A failure the driver turns into a CUresult.

    `code` is the CUresult value (an int from cuport.driver.errors), `message` the
    human-readable cause that the driver prints after the failing call's name.
    """

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ParamInfo:
    """One kernel parameter as the PTX declares it (`.param .u64 p` or `.param .align 8 .b8 s[24]`)."""

    name: str
    offset: int  # byte offset inside the packed parameter buffer
    size: int  # bytes
    align: int
    is_pointer_sized: bool = False  # .u64/.b64/.s64: what a pointer argument looks like
    ptype: str = ""  # PTX type of a scalar parameter (u32, f32, ...); "" for byte arrays


@dataclass
class KernelInfo:
    """What cuFuncGetAttribute and the launch checks need to know about a kernel."""

    name: str
    params: list[ParamInfo]
    param_size: int  # total bytes of the packed parameter buffer
    static_shared_bytes: int
    local_bytes_per_thread: int
    max_threads_per_block: int  # 1024 unless .maxntid / .reqntid lower it
    reqntid: tuple[int, int, int] | None = None
    cluster: tuple[int, int, int] = (1, 1, 1)  # .reqnctapercluster (__cluster_dims__)
    attributes: dict[str, int] = field(default_factory=dict)
    registers: Callable[[], int] | None = None  # CU_FUNC_ATTRIBUTE_NUM_REGS, when asked

    def num_regs(self) -> int:
        if self.registers is None:
            return 32
        if "num_regs" not in self.attributes:
            self.attributes["num_regs"] = self.registers()
        return self.attributes["num_regs"]


class Kernel(Protocol):
    info: KernelInfo

    def prepare(self, block: tuple[int, int, int]) -> None:
        """Optional: compile ahead of a launch with this block shape (errors surface here)."""

    def launch(
        self,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        dynamic_shared_bytes: int,
        params: bytes,
    ) -> None:
        """Run the whole grid to completion; raise BackendError on a trap or fault."""


class ModuleImage(Protocol):
    def kernel(self, name: str) -> Kernel:
        """The kernel named `name` (its PTX `.entry` name); KeyError if absent."""

    def kernel_names(self) -> list[str]: ...

    def global_symbol(self, name: str) -> tuple[int, int]:
        """(address, size in bytes) of a module-scope `.global`/`.const` variable; KeyError if absent."""

    def unload(self) -> None: ...


class PtxModule:
    """What the backends' module images share (ModuleImage): a kernel object made on first
    request for each `.entry` the linked PTX defines (`_make_kernel`), the module-scope
    variables' (address, size) by name (`globals`)."""

    ptx: Any  # the linked ptx.ir.Module
    globals: dict[str, tuple[int, int]]
    _kernels: dict[str, Any]

    def _make_kernel(self, fn: Any) -> Any:
        raise NotImplementedError

    def kernel(self, name: str) -> Any:
        k = self._kernels.get(name)
        if k is None:
            fn = self.ptx.functions.get(name)
            if fn is None or not fn.is_entry or not fn.is_definition:
                raise KeyError(name)
            k = self._kernels[name] = self._make_kernel(fn)
        return k

    def kernel_names(self) -> list[str]:
        return [f.name for f in self.ptx.kernels()]

    def global_symbol(self, name: str) -> tuple[int, int]:
        return self.globals[name]

    def unload(self) -> None:
        self._kernels.clear()


class Backend(Protocol):
    name: str

    def load_module(self, ptx_texts: list[str]) -> ModuleImage:
        """Compile (or fetch from the cache) and link PTX modules into one image.

        Several texts are linked together (`-rdc` programs); raise BackendError with
        CUDA_ERROR_INVALID_PTX / CUDA_ERROR_NOT_SUPPORTED etc. on failure.
        """
