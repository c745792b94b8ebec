"""What a texture or surface object is on the CPU backend: the address of a `Descriptor`.

A `CUtexObject` / `CUsurfObject` is an unsigned 64-bit value that a kernel receives as a
parameter and hands to `tex`, `tld4`, `txq`, `suld`, `sust`, `sured` and `suq`. Here it is
the host address of one `Descriptor` below: the driver (cuport/driver/texture.py) fills it
from the resource and texture descriptors, and the generated code (isa/texture_sampler.py) reads
its fields at the offsets this module gives. This is the one place the layout is defined.

The descriptor is normalised for sampling: the driver resolves formats, read modes and
resource kinds into a few numbers (how to decode a channel, what a missing channel reads
as, which address mode applies to which axis), so the sampler never needs CUDA's enums.
Texel (x, y, z) of layer l at mip level k lives at
    levels[k].data + (z + l) * levels[k].slice_pitch + y * levels[k].row_pitch + x * elem_bytes
(a texture is either 3D or layered, never both, so one of z and l is 0).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

MAX_LEVELS = 16  # mip levels a descriptor can hold (a 32768-texel axis has 16)

MAGIC_TEXTURE = 0x31584554  # "TEX1"
MAGIC_SURFACE = 0x31465253  # "SRF1"

# How one channel's stored bits become a 32-bit result word (`decode`).
DECODE_BITS32 = 0  # 32-bit channel: the bits as stored (f32, u32, s32)
DECODE_F16 = 1  # half -> f32
DECODE_UNORM8 = 2  # u8 -> f32 in [0, 1] (v / 255)
DECODE_SNORM8 = 3  # s8 -> f32 in [-1, 1] (max(v / 127, -1))
DECODE_UNORM16 = 4
DECODE_SNORM16 = 5
DECODE_U8 = 6  # zero-extended integer
DECODE_S8 = 7  # sign-extended integer
DECODE_U16 = 8
DECODE_S16 = 9
DECODE_SRGB8 = 10  # u8 sRGB-encoded -> linear f32 (red, green, blue; alpha as UNORM8)

#: bytes of one channel for each decode
CHANNEL_BYTES = {
    DECODE_BITS32: 4, DECODE_F16: 2, DECODE_UNORM8: 1, DECODE_SNORM8: 1, DECODE_UNORM16: 2,
    DECODE_SNORM16: 2, DECODE_U8: 1, DECODE_S8: 1, DECODE_U16: 2, DECODE_S16: 2,
    DECODE_SRGB8: 1,
}

# Address modes (`address[axis]`), CUDA's CUaddress_mode values.
ADDRESS_WRAP, ADDRESS_CLAMP, ADDRESS_MIRROR, ADDRESS_BORDER = 0, 1, 2, 3

# `flags`
F_NORMALIZED = 1  # coordinates in [0, 1) scale by the level's size
F_FLOAT_RESULT = 2  # result words are f32 (float/half formats, promoted 8/16-bit integers)
F_LINEAR_FILTER = 4  # bilinear / trilinear filtering (only with F_FLOAT_RESULT)
F_MIP_LINEAR = 8  # blend two mip levels
F_LAYERED = 16
F_CUBE = 32

FILTER_POINT, FILTER_LINEAR = 0, 1

#: Sub-texel precision of the texture unit: coordinates become fixed point with this many
#: fractional bits before texel selection, and linear-filter weights are multiples of
#: 1/256 (the CUDA Programming Guide's "9-bit fixed point format with 8 bits of
#: fractional value").
SUBTEXEL_BITS = 8


class Level(ctypes.Structure):
    """One mip level (level 0 for a texture without mipmaps)."""

    _fields_ = [
        ("data", ctypes.c_uint64),  # host address of texel (0, 0, 0) of layer 0
        ("row_pitch", ctypes.c_uint64),  # bytes from one row to the next
        ("slice_pitch", ctypes.c_uint64),  # bytes from one 3D slice (or layer) to the next
        ("width", ctypes.c_uint32),  # in elements; 1 for an axis the texture lacks
        ("height", ctypes.c_uint32),
        ("depth", ctypes.c_uint32),
        ("pad", ctypes.c_uint32),
    ]


class Descriptor(ctypes.Structure):
    _fields_ = [
        ("magic", ctypes.c_uint32),
        ("decode", ctypes.c_uint32),  # DECODE_*
        ("channels", ctypes.c_uint32),  # 1, 2 or 4
        ("elem_bytes", ctypes.c_uint32),  # bytes of one element (all channels)
        ("flags", ctypes.c_uint32),  # F_*
        ("address", ctypes.c_uint32 * 3),  # ADDRESS_* for x, y, z (as sampling applies them)
        ("num_levels", ctypes.c_uint32),
        ("layers", ctypes.c_uint32),  # layers (6 per cubemap) of a layered texture, else 1
        ("lod_bias", ctypes.c_float),
        ("min_lod", ctypes.c_float),  # level-of-detail clamp, already offset by a view's first level
        ("max_lod", ctypes.c_float),
        ("border", ctypes.c_uint32 * 4),  # result words of a tap outside a BORDER texture
        ("fill", ctypes.c_uint32 * 4),  # result words of the channels the format lacks
        # what txq / suq answer (CUDA's values, as the program set them)
        ("query_filter", ctypes.c_uint32),
        ("query_address", ctypes.c_uint32 * 3),
        ("query_normalized", ctypes.c_uint32),
        ("query_array_size", ctypes.c_uint32),
        ("levels", Level * MAX_LEVELS),
    ]


LEVEL_SIZE = ctypes.sizeof(Level)


def offset(name: str) -> int:
    """Byte offset of a Descriptor field (`levels` for the level array)."""
    return getattr(Descriptor, name).offset


def level_offset(name: str) -> int:
    return getattr(Level, name).offset


@dataclass(frozen=True)
class Sampling:
    """What a texture descriptor says about how to sample, as a compiled kernel may take it
    for constants (the Vulkan backend's per-launch variants: texture_params.py): the fields
    the sampler branches on. Sizes, pitches, addresses, layers, the border color and the
    level-of-detail clamps stay run-time fields, so one variant serves every image of a
    kind; `num_levels` is known only for a texture without mipmaps (1)."""

    decode: int
    channels: int
    elem_bytes: int
    flags: int
    address: tuple[int, int, int]
    fill: tuple[int, int, int, int]
    mipmapped: bool

    def field(self, name: str, index: int = 0) -> int | None:
        """The descriptor field `name` (element `index` of an array field) where this says
        it, else None (read it from the descriptor)."""
        if name in ("decode", "channels", "elem_bytes", "flags"):
            return getattr(self, name)
        if name in ("address", "fill"):
            return getattr(self, name)[index]
        if name == "num_levels" and not self.mipmapped:
            return 1
        return None

    @property
    def tag(self) -> str:
        """A name for generated functions: every field, so that two facts never share one."""
        a, f = self.address, self.fill
        return (f"d{self.decode}c{self.channels}e{self.elem_bytes}f{self.flags}"
                f"a{a[0]}{a[1]}{a[2]}w{f[0]:x}.{f[1]:x}.{f[2]:x}.{f[3]:x}{'m' if self.mipmapped else ''}")


def sampling_of(d: Descriptor) -> Sampling:
    """A texture descriptor's Sampling."""
    return Sampling(d.decode, d.channels, d.elem_bytes, d.flags, tuple(d.address), tuple(d.fill),
                    d.num_levels > 1)
