"""The launch API of CUDA 2.0 (deprecated, still what PyCUDA calls): a function keeps
a block shape, a dynamic shared memory size and a parameter buffer set piece by piece
(cuFuncSetBlockShape, cuFuncSetSharedSize, cuParamSet*), and cuLaunch, cuLaunchGrid and
cuLaunchGridAsync launch it with them, as cuLaunchKernel does with its arguments."""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass, field

from cuport.driver import launch, module
from cuport.driver.api import implements
from cuport.driver.errors import CudaError, E


@dataclass
class Setup:
    block: tuple[int, int, int] | None = None
    shared: int = 0
    size: int = 0  # cuParamSetSize
    params: bytearray = field(default_factory=bytearray)


def _setup(handle: int) -> tuple[module.Function, Setup]:
    f = module.resolve_function(handle)
    setup = getattr(f, "legacy_setup", None)
    if setup is None:
        setup = f.legacy_setup = Setup()
    return f, setup


def _put(handle: int, offset: int, data: bytes) -> None:
    f, setup = _setup(handle)
    if offset < 0:
        raise CudaError(E.INVALID_VALUE, f"offset {offset} is negative", subject=f.name)
    end = offset + len(data)
    if end > 4096:
        raise CudaError(E.INVALID_VALUE, f"parameter bytes {offset}..{end} are past the 4 KiB "
                                         "a kernel's parameters may take", subject=f.name)
    if len(setup.params) < end:
        setup.params.extend(bytes(end - len(setup.params)))
    setup.params[offset:end] = data


@implements("cuFuncSetBlockShape")
def set_block_shape(handle: int, x: int, y: int, z: int) -> None:
    f, setup = _setup(handle)
    launch.check_geometry(f, (1, 1, 1), (x, y, z), 0)
    setup.block = (x, y, z)


@implements("cuFuncSetSharedSize")
def set_shared_size(handle: int, size: int) -> None:
    _setup(handle)[1].shared = size


@implements("cuParamSetSize")
def param_set_size(handle: int, size: int) -> None:
    _setup(handle)[1].size = size


@implements("cuParamSeti")
def param_set_i(handle: int, offset: int, value: int) -> None:
    _put(handle, offset, struct.pack("<I", value & 0xFFFFFFFF))


@implements("cuParamSetf")
def param_set_f(handle: int, offset: int, value: float) -> None:
    _put(handle, offset, struct.pack("<f", value))


@implements("cuParamSetv")
def param_set_v(handle: int, offset: int, ptr: int, size: int) -> None:
    if size and not ptr:
        raise CudaError(E.INVALID_VALUE, "ptr is NULL")
    _put(handle, offset, ctypes.string_at(ptr, size) if size else b"")


def _launch(handle: int, grid: tuple[int, int, int], stream_handle: int, what: str) -> None:
    f, setup = _setup(handle)
    if setup.block is None:
        raise CudaError(E.INVALID_VALUE, "no block shape: call cuFuncSetBlockShape first",
                        subject=f.name)
    need = f.info.param_size
    if setup.size < need:
        raise CudaError(E.INVALID_VALUE, f"cuParamSetSize gave {setup.size} bytes of "
                                         f"parameters, the kernel's take {need}", subject=f.name)
    params = bytes(setup.params[:need].ljust(need, b"\0"))
    launch.check_geometry(f, grid, setup.block, setup.shared)
    launch.enqueue(f, grid, setup.block, setup.shared, stream_handle, params, what)


@implements("cuLaunch")
def launch_1(handle: int) -> None:
    _launch(handle, (1, 1, 1), 0, "cuLaunch")


@implements("cuLaunchGrid")
def launch_grid(handle: int, width: int, height: int) -> None:
    _launch(handle, (width, height, 1), 0, "cuLaunchGrid")


@implements("cuLaunchGridAsync")
def launch_grid_async(handle: int, width: int, height: int, stream_handle: int) -> None:
    _launch(handle, (width, height, 1), stream_handle, "cuLaunchGridAsync")
