"""A reference model of the texture unit for the tests, written from the documents, not the code.

CUDA Programming Guide, "Texture Fetching": point sampling picks texel floor(x); linear
filtering blends texels floor(x - 0.5) and the next with weight frac(x - 0.5) "stored in
9-bit fixed point format with 8 bits of fractional value"; address modes clamp, wrap
(normalized coordinates only), mirror (same) and border. Coordinates become fixed point
with 8 fractional bits (`SNAP`, round to nearest even as Direct3D specifies for the same
hardware) before the texel is picked, so the weights are exactly k/256. The model
computes the weighted sum exactly (fractions) and rounds once to f32.

`Tex` also builds the descriptor the generated code reads (texture_layout.py), so a test
can hand its address to a kernel without a CUDA context.
"""

from __future__ import annotations

import ctypes
import math
import struct
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from cuport.backends.cpu import texture_layout as T

SNAP = "nearest"
WRAP, CLAMP, MIRROR, BORDER = 0, 1, 2, 3

# format name -> (NumPy dtype, decode when promoted to float, decode when read as integer)
FORMATS = {
    "f32": (np.float32, T.DECODE_BITS32, T.DECODE_BITS32),
    "f16": (np.float16, T.DECODE_F16, T.DECODE_F16),
    "u8": (np.uint8, T.DECODE_UNORM8, T.DECODE_U8),
    "s8": (np.int8, T.DECODE_SNORM8, T.DECODE_S8),
    "u16": (np.uint16, T.DECODE_UNORM16, T.DECODE_U16),
    "s16": (np.int16, T.DECODE_SNORM16, T.DECODE_S16),
    "u32": (np.uint32, T.DECODE_BITS32, T.DECODE_BITS32),
    "s32": (np.int32, T.DECODE_BITS32, T.DECODE_BITS32),
}


def f32(x) -> float:
    return float(np.float32(x))


def bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def from_bits(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def srgb_to_linear(v: int) -> float:
    c = v / 255
    return f32(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4)


@dataclass
class Tex:
    """A texture: mip levels of shape (slices, height, width, channels) in a NumPy dtype."""

    levels: list[np.ndarray]
    fmt: str = "f32"
    normalized: bool = False
    linear: bool = False
    address: tuple[int, int, int] = (CLAMP, CLAMP, CLAMP)
    border: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    read_as_integer: bool = False
    srgb: bool = False
    layered: bool = False
    cube: bool = False
    dims: int = 2
    mip_linear: bool = False
    lod_bias: float = 0.0
    min_lod: float = 0.0
    max_lod: float = 0.0
    linear_memory: bool = False
    _keep: list = field(default_factory=list)

    # -- decoding
    @property
    def float_result(self) -> bool:
        return self.fmt in ("f32", "f16") or (not self.read_as_integer and self.fmt in
                                              ("u8", "s8", "u16", "s16"))

    @property
    def channels(self) -> int:
        return self.levels[0].shape[-1]

    def decode(self, raw, c: int):
        """One stored channel as the result value (float or int)."""
        v = raw.item()
        if self.fmt in ("f32", "f16"):
            return float(v)
        if self.fmt in ("u32", "s32") or self.read_as_integer:
            return int(v)
        if self.srgb and self.fmt == "u8" and c < 3:
            return srgb_to_linear(v)
        scale = {"u8": 255, "s8": 127, "u16": 65535, "s16": 32767}[self.fmt]
        return max(f32(Fraction(v, scale)), -1.0)

    def texel(self, level: int, x: int, y: int, z: int) -> list:
        data = self.levels[level]
        fill = [0, 0, 0, 1.0 if self.float_result else 1]
        return [self.decode(data[z, y, x, c], c) if c < self.channels else fill[c]
                for c in range(4)]

    # -- addressing
    def mode(self, axis: int) -> int:
        if self.linear_memory:
            return BORDER
        m = self.address[axis]
        if not self.normalized and m in (WRAP, MIRROR):
            return CLAMP
        return m

    def border_value(self) -> list:
        if self.linear_memory:
            return [0.0] * 4 if self.float_result else [0] * 4
        if self.float_result:
            return [f32(b) for b in self.border]
        return [bits(f32(b)) for b in self.border]  # integer results: the color's bits

    @staticmethod
    def resolve(i: int, n: int, mode: int) -> int | None:
        if mode == WRAP:
            return i % n
        if mode == MIRROR:
            m = i % (2 * n)
            return 2 * n - 1 - m if m >= n else m
        if mode == BORDER:
            return i if 0 <= i < n else None
        return min(max(i, 0), n - 1)

    def level_size(self, level: int) -> tuple[int, int, int]:
        s, h, w, _ = self.levels[level].shape
        return w, h, (s if self.dims == 3 else 1)

    # -- sampling
    def sample_level(self, level: int, coords: list, layer: int, normalized: bool,
                     int_coords: bool = False) -> list:
        sizes = self.level_size(level)[:self.dims]
        filtering = self.linear and self.float_result and not int_coords and not self.linear_memory
        axes = []
        for u, n in zip(coords, sizes, strict=False):
            if int_coords:
                axes.append([(u, 1)])
                continue
            u = np.float32(u)
            if normalized:
                u = np.float32(u * np.float32(n))
            fx = snap(float(u))
            if filtering:
                fx -= 128
                i, a = fx >> 8, fx & 255
                axes.append([(i, 256 - a), (i + 1, a)])
            else:
                axes.append([(fx >> 8, 1)])
        taps = [[]]
        for ax in axes:
            taps = [t + [p] for t in taps for p in ax]
        total = [Fraction(0)] * 4
        for t in taps:
            w = 1
            idx = []
            for k, (i, wk) in enumerate(t):
                w *= wk
                idx.append(self.resolve(i, sizes[k], self.mode(k)))
            if None in idx:
                value = self.border_value()
            else:
                x = idx[0]
                y = idx[1] if len(idx) > 1 else 0
                z = (idx[2] if len(idx) > 2 else 0) + layer
                value = self.texel(level, x, y, z)
            if not filtering:
                return value
            for c in range(4):
                if w:
                    total[c] += w * Fraction(value[c])
        scale = Fraction(1, 256 ** len(axes))
        return [f32(t * scale) for t in total]

    def sample(self, coords: list, lod: float | None = None, grad=None,
               int_coords: bool = False) -> list:
        """tex / tex.level / tex.grad with PTX's coordinate vector (array index first)."""
        coords = list(coords)
        layer = 0
        normalized = self.normalized
        if self.layered and not self.cube:
            layer = min(int(coords.pop(0)) & 0xFFFFFFFF, self.levels[0].shape[0] - 1)
        if self.cube:
            index = int(coords.pop(0)) & 0xFFFFFFFF if self.layered else 0
            face, s, t = cube_face(*coords[:3])
            ncubes = self.levels[0].shape[0] // 6
            layer = 6 * min(index, ncubes - 1) + face
            coords = [s, t]
            normalized = True
        nlevels = len(self.levels)
        if nlevels == 1 or int_coords:
            return self.sample_level(0, coords, layer, normalized, int_coords)
        if grad is not None:
            w, h, d = self.level_size(0)
            sizes = [w, h, d][:self.dims]
            rho = max(math.sqrt(sum((f32(g[k]) * s) ** 2 for k, s in enumerate(sizes)))
                      for g in grad)
            lod = math.log2(rho) if rho > 0 else -math.inf
        lod = (lod or 0.0) + self.lod_bias
        lod = min(max(lod, self.min_lod), self.max_lod)
        lod = min(max(lod, 0.0), nlevels - 1)
        fixed = snap(f32(lod))
        if not (self.mip_linear and self.float_result):
            return self.sample_level((fixed + 128) >> 8, coords, layer, normalized)
        l0, frac = fixed >> 8, fixed & 255
        r0 = self.sample_level(l0, coords, layer, normalized)
        if frac == 0:
            return r0
        r1 = self.sample_level(l0 + 1, coords, layer, normalized)
        return [f32((Fraction(256 - frac) * Fraction(a) + frac * Fraction(b)) / 256)
                for a, b in zip(r0, r1, strict=True)]

    def gather(self, coords: list, comp: int) -> list:
        """tld4: channel comp of the 2x2 footprint, (i0,j1) (i1,j1) (i1,j0) (i0,j0)."""
        coords = list(coords)
        layer = min(int(coords.pop(0)), self.levels[0].shape[0] - 1) if self.layered else 0
        w, h, _ = self.level_size(0)
        ends = []
        for k, n in enumerate((w, h)):
            u = np.float32(coords[k])
            if self.normalized:
                u = np.float32(u * np.float32(n))
            i0 = (snap(float(u)) - 128) >> 8
            ends.append((self.resolve(i0, n, self.mode(k)), self.resolve(i0 + 1, n, self.mode(k))))
        out = []
        for hx, hy in ((0, 1), (1, 1), (1, 0), (0, 0)):
            x, y = ends[0][hx], ends[1][hy]
            v = self.border_value() if x is None or y is None else self.texel(0, x, y, layer)
            out.append(v[comp])
        return out

    # -- the descriptor the generated code reads
    def descriptor(self) -> int:
        d = T.Descriptor()
        dtype, promoted, integer = FORMATS[self.fmt]
        d.magic = T.MAGIC_TEXTURE
        d.decode = integer if (self.read_as_integer or self.fmt in ("u32", "s32")) else promoted
        if self.srgb and self.fmt == "u8" and not self.read_as_integer:
            d.decode = T.DECODE_SRGB8
        d.channels = self.channels
        d.elem_bytes = np.dtype(dtype).itemsize * self.channels
        d.flags = ((T.F_NORMALIZED if self.normalized else 0)
                   | (T.F_FLOAT_RESULT if self.float_result else 0)
                   | (T.F_LINEAR_FILTER if self.linear and self.float_result
                      and not self.linear_memory else 0)
                   | (T.F_MIP_LINEAR if self.mip_linear and self.float_result else 0)
                   | (T.F_LAYERED if self.layered else 0) | (T.F_CUBE if self.cube else 0))
        for k in range(3):
            d.address[k] = self.mode(k)
        border = [0.0] * 4 if self.linear_memory else self.border
        for c in range(4):
            d.border[c] = bits(f32(border[c]))
        d.fill[3] = bits(1.0) if self.float_result else 1
        d.num_levels = len(self.levels)
        d.layers = self.levels[0].shape[0] if (self.layered or self.cube) else 1
        d.lod_bias, d.min_lod, d.max_lod = self.lod_bias, self.min_lod, self.max_lod
        d.query_normalized = int(self.normalized)
        d.query_filter = int(self.linear)
        for k in range(3):
            d.query_address[k] = self.address[k]
        if self.layered:
            d.query_array_size = d.layers // 6 if self.cube else d.layers
        for k, lv in enumerate(self.levels):
            lv = np.ascontiguousarray(lv, dtype=dtype)
            self._keep.append(lv)
            s, h, w, c = lv.shape
            d.levels[k] = T.Level(data=lv.ctypes.data, row_pitch=w * c * lv.itemsize,
                                  slice_pitch=h * w * c * lv.itemsize, width=w, height=h,
                                  depth=s if self.dims == 3 else 1)
        self._keep.append(d)
        return ctypes.addressof(d)

    def surface(self) -> int:
        """The descriptor of a surface object over level 0 (formats read as integers)."""
        saved = self.read_as_integer, self.linear, self.normalized
        self.read_as_integer, self.linear, self.normalized = True, False, False
        address = self.descriptor()
        self.read_as_integer, self.linear, self.normalized = saved
        d = T.Descriptor.from_address(address)
        d.magic = T.MAGIC_SURFACE
        d.num_levels = 1
        return address


def snap(u: float) -> int:
    """Texel-space f32 coordinate -> fixed point with 8 fractional bits."""
    scaled = u * 256.0  # exact in double
    if math.isnan(scaled):
        return 0
    v = round(scaled) if SNAP == "nearest" else math.floor(scaled)  # round(): half to even
    return max(min(v, 2**31 - 1), -(2**31))


def cube_face(x: float, y: float, z: float) -> tuple[int, float, float]:
    """CUDA Programming Guide, "Cubemap Textures": the face and (s, t) in [0, 1]."""
    x, y, z = np.float32(x), np.float32(y), np.float32(z)
    ax, ay, az = abs(x), abs(y), abs(z)
    if ax >= ay and ax >= az:
        face, sc, tc, ma = (0, -z, -y, ax) if x >= 0 else (1, z, -y, ax)
    elif ay >= az:
        face, sc, tc, ma = (2, x, z, ay) if y >= 0 else (3, x, -z, ay)
    else:
        face, sc, tc, ma = (4, x, -y, az) if z >= 0 else (5, -x, -y, az)
    one, half = np.float32(1), np.float32(0.5)
    s = (np.float32(sc / ma) + one) * half
    t = (np.float32(tc / ma) + one) * half
    return face, float(np.float32(s)), float(np.float32(t))


def words(values: list, float_result: bool) -> list[int]:
    """Result values as the 32-bit words a kernel stores."""
    return [bits(v) if float_result else int(v) & 0xFFFFFFFF for v in values]


def ulps(a: int, b: int) -> int:
    def key(w: int) -> int:
        return w if w < 0x80000000 else 0x80000000 - w
    return abs(key(a) - key(b))
