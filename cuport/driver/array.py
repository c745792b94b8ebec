"""CUDA arrays, stored as dense row-major host memory.

Arrays here are plain storage for the copy functions (cuMemcpyHtoA, cuMemcpy2D/3D
with CU_MEMORYTYPE_ARRAY, ...); texture and surface sampling from them is not
implemented. Only the classic element formats are accepted.
"""

from __future__ import annotations

from cuport.capi import types
from cuport.driver import context, handles, memory
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E

FORMAT_BYTES = {
    K.CU_AD_FORMAT_UNSIGNED_INT8: 1, K.CU_AD_FORMAT_SIGNED_INT8: 1,
    K.CU_AD_FORMAT_UNSIGNED_INT16: 2, K.CU_AD_FORMAT_SIGNED_INT16: 2,
    K.CU_AD_FORMAT_HALF: 2,
    K.CU_AD_FORMAT_UNSIGNED_INT32: 4, K.CU_AD_FORMAT_SIGNED_INT32: 4,
    K.CU_AD_FORMAT_FLOAT: 4,
}


class Array:
    def __init__(self, ctx: context.Context, width: int, height: int, depth: int,
                 fmt: int, channels: int, flags: int) -> None:
        if fmt not in FORMAT_BYTES:
            raise CudaError(E.INVALID_VALUE, f"array format {fmt:#x} is not supported by cuport "
                                             "(8/16/32-bit integers, half and float are)")
        if channels not in (1, 2, 4):
            raise CudaError(E.INVALID_VALUE, f"NumChannels must be 1, 2 or 4, not {channels}")
        if width == 0:
            raise CudaError(E.INVALID_VALUE, "Width must not be 0")
        self.context = ctx
        self.width, self.height, self.depth = width, height, depth
        self.format, self.channels, self.flags = fmt, channels, flags
        self.element = FORMAT_BYTES[fmt] * channels
        self.row_bytes = width * self.element
        self.rows = max(height, 1)
        self.size = self.row_bytes * self.rows * max(depth, 1)
        self.storage = memory.allocate(self.size, "array", ctx)
        self.handle = handles.new(self)

    def check(self, offset: int, size: int, what: str) -> int:
        """Address of bytes [offset, offset+size) of the array, bounds-checked."""
        if offset < 0 or offset + size > self.size:
            raise CudaError(E.INVALID_VALUE, f"{what}: bytes {offset}..{offset + size} are outside "
                                             f"the {self.size}-byte array")
        return self.storage.base + offset


def lookup(handle: int) -> Array:
    return handles.lookup(handle, Array, "array")


@implements("cuArrayCreate_v2")
def create(desc: int) -> int:
    d = types.struct_at(desc, "CUDA_ARRAY_DESCRIPTOR")
    return Array(context.current(), d.Width, d.Height, 0, d.Format, d.NumChannels, 0).handle


@implements("cuArray3DCreate_v2")
def create_3d(desc: int) -> int:
    d = types.struct_at(desc, "CUDA_ARRAY3D_DESCRIPTOR")
    return Array(context.current(), d.Width, d.Height, d.Depth, d.Format, d.NumChannels,
                 d.Flags).handle


@implements("cuArrayGetDescriptor_v2")
def get_descriptor(desc: int, handle: int) -> None:
    a = lookup(handle)
    d = types.struct_at(desc, "CUDA_ARRAY_DESCRIPTOR")
    d.Width, d.Height, d.Format, d.NumChannels = a.width, a.height, a.format, a.channels


@implements("cuArray3DGetDescriptor_v2")
def get_descriptor_3d(desc: int, handle: int) -> None:
    a = lookup(handle)
    d = types.struct_at(desc, "CUDA_ARRAY3D_DESCRIPTOR")
    d.Width, d.Height, d.Depth = a.width, a.height, a.depth
    d.Format, d.NumChannels, d.Flags = a.format, a.channels, a.flags


@implements("cuArrayDestroy")
def destroy(handle: int) -> None:
    a = lookup(handle)
    handles.drop(handle)
    memory.release(a.storage)


def _release(ctx: context.Context) -> None:
    for handle in handles.owned_by(ctx, Array):
        handles.drop(handle)  # the storage goes with the context's allocations


context.RESOURCE_HOOKS.append(_release)
