"""CUDA arrays and mipmapped arrays: the storage textures and surfaces read and write.

An array is dense row-major host memory: element (x, y, z) of a 3D array, or of layer z
of a layered one (cubemap faces are layers), is at
    base + ((z * rows + y) * width + x) * element_bytes,   rows = max(height, 1)
which is also how cuMemcpyHtoA & co. address an array by byte offset and how the 2D/3D
copies in copy.py step through its rows and slices. Texture and surface objects
(texture.py) point the generated code at the same bytes.

A mipmapped array holds all its levels in one allocation, level after level; each level
is an ordinary `Array` (cuMipmappedArrayGetLevel returns it) that views its part.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuport.capi import types
from cuport.driver import context, device, handles, memory
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E

#: CUarray_format -> bytes of one channel
FORMAT_BYTES = {
    K.CU_AD_FORMAT_UNSIGNED_INT8: 1, K.CU_AD_FORMAT_SIGNED_INT8: 1,
    K.CU_AD_FORMAT_UNSIGNED_INT16: 2, K.CU_AD_FORMAT_SIGNED_INT16: 2,
    K.CU_AD_FORMAT_HALF: 2,
    K.CU_AD_FORMAT_UNSIGNED_INT32: 4, K.CU_AD_FORMAT_SIGNED_INT32: 4,
    K.CU_AD_FORMAT_FLOAT: 4,
}
FORMAT_NAMES = {v: k for k, v in vars(K).items()
                if k.startswith("CU_AD_FORMAT_") and k != "CU_AD_FORMAT_MAX"}

LAYERED = K.CUDA_ARRAY3D_LAYERED
SURFACE_LDST = K.CUDA_ARRAY3D_SURFACE_LDST
CUBEMAP = K.CUDA_ARRAY3D_CUBEMAP
TEXTURE_GATHER = K.CUDA_ARRAY3D_TEXTURE_GATHER
_ACCEPTED_FLAGS = LAYERED | SURFACE_LDST | CUBEMAP | TEXTURE_GATHER | K.CUDA_ARRAY3D_COLOR_ATTACHMENT
_UNSUPPORTED_FLAGS = {
    K.CUDA_ARRAY3D_DEPTH_TEXTURE: "CUDA_ARRAY3D_DEPTH_TEXTURE (depth textures)",
    K.CUDA_ARRAY3D_SPARSE: "CUDA_ARRAY3D_SPARSE (sparse arrays)",
    K.CUDA_ARRAY3D_DEFERRED_MAPPING: "CUDA_ARRAY3D_DEFERRED_MAPPING",
    K.CUDA_ARRAY3D_VIDEO_ENCODE_DECODE: "CUDA_ARRAY3D_VIDEO_ENCODE_DECODE",
}


def check_format(fmt: int, channels: int, what: str = "Format") -> int:
    """Bytes of one channel of `fmt`; CudaError for formats cuport does not store."""
    if fmt not in FORMAT_BYTES:
        if fmt in FORMAT_NAMES:
            raise CudaError(E.NOT_SUPPORTED, f"{what} {FORMAT_NAMES[fmt]} is not supported by cuport "
                                             "(8/16/32-bit integers, half and float are)")
        raise CudaError(E.INVALID_VALUE, f"{what} {fmt:#x} is not a CUarray_format")
    if channels not in (1, 2, 4):
        raise CudaError(E.INVALID_VALUE, f"NumChannels must be 1, 2 or 4, not {channels}")
    return FORMAT_BYTES[fmt]


@dataclass
class Shape:
    """What kind of array (dims 1-3, layered, cubemap) and its extents in elements."""

    width: int
    height: int  # 0 for 1D arrays
    depth: int  # 0 for 1D/2D; the number of layers of a layered array; 6 (per cube) for cubemaps
    flags: int

    @property
    def layered(self) -> bool:
        return bool(self.flags & LAYERED)

    @property
    def cubemap(self) -> bool:
        return bool(self.flags & CUBEMAP)

    @property
    def dims(self) -> int:
        """1, 2 or 3: the dimensions one layer has (a cubemap face is 2D)."""
        if self.height == 0:
            return 1
        if self.depth == 0 or self.layered or self.cubemap:
            return 2
        return 3

    @property
    def layers(self) -> int:
        return max(self.depth, 1) if (self.layered or self.cubemap) else 1

    def kind(self) -> str:
        if self.cubemap:
            return "cubemap layered" if self.layered else "cubemap"
        return f"{self.dims}D" + (" layered" if self.layered else "")


_LIMIT_NAMES = {
    # kind -> (texture limits, surface limits): device attribute names for width, height, depth
    "1D": (("TEXTURE1D_WIDTH", None, None), ("SURFACE1D_WIDTH", None, None)),
    "2D": (("TEXTURE2D_WIDTH", "TEXTURE2D_HEIGHT", None),
           ("SURFACE2D_WIDTH", "SURFACE2D_HEIGHT", None)),
    "3D": (("TEXTURE3D_WIDTH", "TEXTURE3D_HEIGHT", "TEXTURE3D_DEPTH"),
           ("SURFACE3D_WIDTH", "SURFACE3D_HEIGHT", "SURFACE3D_DEPTH")),
    "1D layered": (("TEXTURE1D_LAYERED_WIDTH", None, "TEXTURE1D_LAYERED_LAYERS"),
                   ("SURFACE1D_LAYERED_WIDTH", None, "SURFACE1D_LAYERED_LAYERS")),
    "2D layered": (("TEXTURE2D_LAYERED_WIDTH", "TEXTURE2D_LAYERED_HEIGHT",
                    "TEXTURE2D_LAYERED_LAYERS"),
                   ("SURFACE2D_LAYERED_WIDTH", "SURFACE2D_LAYERED_HEIGHT",
                    "SURFACE2D_LAYERED_LAYERS")),
    "cubemap": (("TEXTURECUBEMAP_WIDTH", "TEXTURECUBEMAP_WIDTH", None),
                ("SURFACECUBEMAP_WIDTH", "SURFACECUBEMAP_WIDTH", None)),
    "cubemap layered": (("TEXTURECUBEMAP_LAYERED_WIDTH", "TEXTURECUBEMAP_LAYERED_WIDTH",
                         "TEXTURECUBEMAP_LAYERED_LAYERS"),
                        ("SURFACECUBEMAP_LAYERED_WIDTH", "SURFACECUBEMAP_LAYERED_WIDTH",
                         "SURFACECUBEMAP_LAYERED_LAYERS")),
}


def check_shape(width: int, height: int, depth: int, flags: int) -> Shape:
    """The array kind these extents and flags make, as cuArray3DCreate decides it."""
    for flag, what in _UNSUPPORTED_FLAGS.items():
        if flags & flag:
            raise CudaError(E.NOT_SUPPORTED, f"Flags has {what}, which cuport does not support")
    if flags & ~_ACCEPTED_FLAGS:
        raise CudaError(E.INVALID_VALUE, f"Flags {flags:#x} has bits that are no CUDA_ARRAY3D_* flag")
    s = Shape(width, height, depth, flags)
    if width == 0:
        raise CudaError(E.INVALID_VALUE, "Width must not be 0")
    if height == 0 and depth != 0 and not s.layered:
        raise CudaError(E.INVALID_VALUE, f"Height is 0 but Depth is {depth}: a 1D array has Depth 0 "
                                         "(or set CUDA_ARRAY3D_LAYERED for a 1D layered array)")
    if s.layered and depth == 0:
        raise CudaError(E.INVALID_VALUE, "a layered array needs Depth (its number of layers) > 0")
    if s.cubemap:
        if width != height:
            raise CudaError(E.INVALID_VALUE, f"a cubemap's faces are square: Width {width} and "
                                             f"Height {height} differ")
        if (s.layered and (depth == 0 or depth % 6)) or (not s.layered and depth != 6):
            raise CudaError(E.INVALID_VALUE, f"a cubemap has Depth 6 (a multiple of 6 when layered), "
                                             f"not {depth}")
    if flags & TEXTURE_GATHER and s.kind() != "2D":
        raise CudaError(E.INVALID_VALUE, "CUDA_ARRAY3D_TEXTURE_GATHER is for 2D arrays only")
    limits = _LIMIT_NAMES[s.kind()][1 if flags & SURFACE_LDST else 0]
    for extent, name, axis in zip((width, height, depth), limits, ("Width", "Height", "Depth"),
                                  strict=True):
        if name is not None and extent > device.ATTRIBUTES["MAXIMUM_" + name]:
            raise CudaError(E.INVALID_VALUE, f"{axis} {extent} of a {s.kind()} array exceeds the "
                                             f"device's limit {device.ATTRIBUTES['MAXIMUM_' + name]} "
                                             f"(CU_DEVICE_ATTRIBUTE_MAXIMUM_{name})")
    return s


class _View:
    """The `.base` of an array whose bytes belong to another allocation (a mip level)."""

    def __init__(self, base: int) -> None:
        self.base = base


class Array:
    def __init__(self, ctx: context.Context, shape: Shape, fmt: int, channels: int,
                 base: int | None = None, parent: MipmappedArray | None = None) -> None:
        channel_bytes = check_format(fmt, channels)
        self.context = ctx
        self.shape = shape
        self.width, self.height, self.depth = shape.width, shape.height, shape.depth
        self.format, self.channels, self.flags = fmt, channels, shape.flags
        self.channel_bytes = channel_bytes
        self.element = channel_bytes * channels
        self.row_bytes = self.width * self.element
        self.rows = max(self.height, 1)
        self.slice_bytes = self.row_bytes * self.rows
        self.size = self.slice_bytes * max(self.depth, 1)
        self.parent = parent
        if base is None:
            self.storage = memory.allocate(self.size, "array", ctx)
        else:
            self.storage = _View(base)
        self.handle = handles.new(self)

    @property
    def base(self) -> int:
        return self.storage.base

    def check(self, offset: int, size: int, what: str) -> int:
        """Address of bytes [offset, offset+size) of the array, bounds-checked."""
        if offset < 0 or offset + size > self.size:
            raise CudaError(E.INVALID_VALUE, f"{what}: bytes {offset}..{offset + size} are outside "
                                             f"the {self.size}-byte array")
        return self.storage.base + offset


def lookup(handle: int, code: int = E.INVALID_HANDLE) -> Array:
    return handles.lookup(handle, Array, "array", code)


def _nonnull(p: int, what: str) -> int:
    if p == 0:
        raise CudaError(E.INVALID_VALUE, f"{what} is NULL")
    return p


@implements("cuArrayCreate_v2")
def create(desc: int) -> int:
    d = types.struct_at(_nonnull(desc, "pAllocateArray"), "CUDA_ARRAY_DESCRIPTOR")
    shape = check_shape(d.Width, d.Height, 0, 0)
    return Array(context.current(), shape, d.Format, d.NumChannels).handle


@implements("cuArray3DCreate_v2")
def create_3d(desc: int) -> int:
    d = types.struct_at(_nonnull(desc, "pAllocateArray"), "CUDA_ARRAY3D_DESCRIPTOR")
    shape = check_shape(d.Width, d.Height, d.Depth, d.Flags)
    return Array(context.current(), shape, d.Format, d.NumChannels).handle


@implements("cuArrayGetDescriptor_v2")
def get_descriptor(desc: int, handle: int) -> None:
    a = lookup(handle)
    d = types.struct_at(_nonnull(desc, "pArrayDescriptor"), "CUDA_ARRAY_DESCRIPTOR")
    d.Width, d.Height, d.Format, d.NumChannels = a.width, a.height, a.format, a.channels


@implements("cuArray3DGetDescriptor_v2")
def get_descriptor_3d(desc: int, handle: int) -> None:
    a = lookup(handle)
    d = types.struct_at(_nonnull(desc, "pArrayDescriptor"), "CUDA_ARRAY3D_DESCRIPTOR")
    d.Width, d.Height, d.Depth = a.width, a.height, a.depth
    d.Format, d.NumChannels, d.Flags = a.format, a.channels, a.flags


@implements("cuArrayDestroy")
def destroy(handle: int) -> None:
    a = lookup(handle)
    if a.parent is not None:
        raise CudaError(E.INVALID_VALUE, f"array {hex(handle)} is a level of a mipmapped array: "
                                         "destroy the mipmapped array instead")
    handles.drop(handle)
    memory.release(a.storage)


# -- mipmapped arrays ---------------------------------------------------------------------

def level_shape(shape: Shape, level: int) -> Shape:
    """Each level halves width, height and (for 3D arrays) depth, down to 1."""
    def halve(n: int) -> int:
        return max(n >> level, 1) if n else 0

    depth = halve(shape.depth) if shape.dims == 3 else shape.depth
    return Shape(halve(shape.width), halve(shape.height), depth, shape.flags)


class MipmappedArray:
    def __init__(self, ctx: context.Context, shape: Shape, fmt: int, channels: int,
                 num_levels: int) -> None:
        check_format(fmt, channels)
        extents = [shape.width, shape.height, shape.depth if shape.dims == 3 else 0]
        most = max(extents).bit_length()  # 1 + floor(log2(largest extent))
        if not 1 <= num_levels <= most:
            raise CudaError(E.INVALID_VALUE, f"numMipmapLevels {num_levels}: a {shape.width}x"
                                             f"{shape.height}x{shape.depth} array has 1..{most} levels")
        self.context = ctx
        self.shape, self.format, self.channels = shape, fmt, channels
        shapes = [level_shape(shape, k) for k in range(num_levels)]
        element = FORMAT_BYTES[fmt] * channels
        sizes = [s.width * element * max(s.height, 1) * max(s.depth, 1) for s in shapes]
        # levels start 512-byte aligned, like the arrays texture alignment asks for
        offsets, total = [], 0
        for size in sizes:
            offsets.append(total)
            total += -(-size // 512) * 512
        self.storage = memory.allocate(total, "array", ctx)
        self.levels = [Array(ctx, s, fmt, channels, self.storage.base + off, self)
                       for s, off in zip(shapes, offsets, strict=True)]
        self.handle = handles.new(self)


def lookup_mipmapped(handle: int, code: int = E.INVALID_HANDLE) -> MipmappedArray:
    return handles.lookup(handle, MipmappedArray, "mipmapped array", code)


@implements("cuMipmappedArrayCreate")
def mipmapped_create(desc: int, num_levels: int) -> int:
    d = types.struct_at(_nonnull(desc, "pMipmappedArrayDesc"), "CUDA_ARRAY3D_DESCRIPTOR")
    shape = check_shape(d.Width, d.Height, d.Depth, d.Flags)
    return MipmappedArray(context.current(), shape, d.Format, d.NumChannels, num_levels).handle


@implements("cuMipmappedArrayGetLevel")
def mipmapped_get_level(handle: int, level: int) -> int:
    m = lookup_mipmapped(handle)
    if level >= len(m.levels):
        raise CudaError(E.INVALID_VALUE, f"level {level} of a mipmapped array with "
                                         f"{len(m.levels)} levels")
    return m.levels[level].handle


@implements("cuMipmappedArrayDestroy")
def mipmapped_destroy(handle: int) -> None:
    m = lookup_mipmapped(handle)
    handles.drop(handle)
    for level in m.levels:
        handles.drop(level.handle)
    memory.release(m.storage)


def _release(ctx: context.Context) -> None:
    for kind in (Array, MipmappedArray):
        for handle in handles.owned_by(ctx, kind):
            handles.drop(handle)  # the storage goes with the context's allocations


context.RESOURCE_HOOKS.append(_release)
