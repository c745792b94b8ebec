"""A reference model of the texture unit for the tests: the documents plus an H200's recordings.

CUDA Programming Guide, "Texture Fetching": point sampling picks texel floor(x); linear
filtering blends texels floor(x - 0.5) and the next with weight frac(x - 0.5) "stored in
9-bit fixed point format with 8 bits of fractional value"; address modes clamp, wrap
(normalized coordinates only), mirror (same) and border. What the documents leave open was
measured on an H200 (.device_exp/texprobe.cu; every rule below reproduces its recorded
rows bit for bit):

- coordinates: an unnormalized x is used exactly: point takes floor(x), linear rounds
  (x - 0.5) * 256 to an integer, ties up. A normalized u is first truncated to fixed point,
  q = floor(u * 2^F) with F = 21 (sizes up to 4096; 22 for 65535), and the texel coordinate is
  the exact q * N / 2^F. Denormal coordinates are zero. In clamp mode the linear filter's
  fixed-point coordinate is clamped to [0, N - 1] before it is split (the weights of a
  clamped axis become 256 and 0).
- weights (integers summing to 256): z first (256 - c, c); each part P splits along x into
  q8(P * a) and P minus that; each (x, z) part P then splits along y: for x = 1 into
  q8(P * b) (y = 1) and the rest, for x = 0 into q8(P * (256 - b)) (y = 0) and the rest,
  q8(p) = floor((p + 128) / 256). In 2D (c = 0) this is W11 = q8(a b), W10 = a - W11,
  W01 = b - W11.
- f32 (and sRGB) texels: the texels of nonzero weight are truncated (toward zero) to
  multiples of 2^(E - 27), E the largest exponent among them (denormals are zero); the
  weighted sum of those is exact and rounds once to f32, ties away from zero; a denormal
  result is zero. A NaN among them gives NaN (0x7fffffff), infinities of both signs NaN.
- f16 texels: the same with 2^(E - 14) and the result rounded to f16, ties away.
- 8/16-bit integers read as normalized floats: filtered as 16-bit integers (an 8-bit
  unsigned k is k * 257, signed k * 32767 / 127 rounded), n = floor((sum w t + 128) / 256),
  result n / 65535 (n / 32767, at least -1 when signed) rounded to f32. The unsigned and
  16-bit forms are exact on the H200; 8-bit signed is close (1 unit of n in ~15% of rows).

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

from cuport.isa import texture_layout as T

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
        for k, (u, n) in enumerate(zip(coords, sizes, strict=False)):
            if int_coords:
                axes.append((u, 0))
                continue
            fx = self.axis_fixed(float(np.float32(u)), n, k, normalized, filtering)
            axes.append((fx >> 8, fx & 255))
        if not filtering:
            idx = [self.resolve(i, sizes[k], self.mode(k)) for k, (i, _) in enumerate(axes)]
            return self.fetch(level, idx, layer)
        integer = self.fmt in ("u8", "s8", "u16", "s16") and not self.srgb
        taps = []
        for corner, w in corner_weights([a for _, a in axes]).items():
            idx = [self.resolve(i + corner[k], sizes[k], self.mode(k))
                   for k, (i, _) in enumerate(axes)]
            taps.append((w, self.fetch16(level, idx, layer) if integer
                         else self.fetch(level, idx, layer)))
        if integer:
            scale = 32767 if self.fmt[0] == "s" else 65535
            return [blend_normalized([(w, v[c]) for w, v in taps], scale) if c < self.channels
                    else 1.0 if c == 3 else 0.0 for c in range(4)]
        return [blend_float([(w, v[c]) for w, v in taps], 11 if self.fmt == "f16" else 24)
                for c in range(4)]

    def axis_fixed(self, u: float, n: int, axis: int, normalized: bool, linear: bool,
                   clamp_coordinate: bool = True) -> int:
        """texel_fixed reduced modulo the period (wrap, mirror) or clamped to the first and
        last texel (clamp, linear), then saturated to 32 bits."""
        fx = texel_fixed(u, n, normalized, linear)
        mode = self.mode(axis)
        if mode in (WRAP, MIRROR):
            fx %= (2 * n if mode == MIRROR else n) * 256
        elif mode == CLAMP and linear and clamp_coordinate:
            fx = min(max(fx, 0), (n - 1) * 256)
        return max(min(fx, 2**31 - 1), -(2**31))

    def fetch(self, level: int, idx: list, layer: int) -> list:
        if None in idx:
            return self.border_value()
        x = idx[0]
        y = idx[1] if len(idx) > 1 else 0
        z = (idx[2] if len(idx) > 2 else 0) + layer
        return self.texel(level, x, y, z)

    def fetch16(self, level: int, idx: list, layer: int) -> list:
        """An 8/16-bit integer texel as the 16-bit integers the filter uses (border: the
        color times 65535 or 32767, rounded)."""
        scale = 32767 if self.fmt[0] == "s" else 65535
        if None in idx:
            return [round(f32(b) * scale) for b in self.border]
        x = idx[0]
        y = idx[1] if len(idx) > 1 else 0
        z = (idx[2] if len(idx) > 2 else 0) + layer
        data = self.levels[level]
        out = []
        for c in range(min(self.channels, 4)):
            k = int(data[z, y, x, c])
            out.append(k * 257 if self.fmt == "u8" else expand_s8(k) if self.fmt == "s8" else k)
        return out

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
        fixed = snap_lod(f32(lod))
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
            i0 = self.axis_fixed(float(np.float32(coords[k])), n, k, self.normalized, True,
                                 False) >> 8
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


def texel_fixed(u: float, n: int, normalized: bool, linear: bool) -> int:
    """Coordinate -> texel-space fixed point with 8 fractional bits (minus half a texel when
    linear): u exact, or a normalized u truncated to F fraction bits, q = floor(u * 2^F),
    times n; linear rounds ties up, point truncates. NaN and denormals read as 0; |q| is at
    most 2^46, an unnormalized |x * 256| at most 2^62 (infinities saturate there)."""
    if math.isnan(u) or (u != 0 and abs(u) < 2.0**-126):
        u = 0.0
    big = 2**46 if normalized else 2**62
    if math.isinf(u):
        v = big if u > 0 else -big
    else:
        v = max(min(math.floor(Fraction(u) * (2 ** norm_fraction_bits(n) if normalized else 256)
                               + (Fraction(1, 2) if linear and not normalized else 0)), big), -big)
    if normalized:
        f = norm_fraction_bits(n)
        v = (v * n + (2 ** (f - 9) if linear else 0)) >> (f - 8)
    return v - 128 if linear else v


def snap_lod(lod: float) -> int:
    """Level of detail -> fixed point with 8 fractional bits (round half to even; not measured)."""
    scaled = lod * 256.0
    if math.isnan(scaled):
        return 0
    return max(min(round(scaled), 2**31 - 1), -(2**31))


def norm_fraction_bits(n: int) -> int:
    """Fraction bits a normalized coordinate keeps (H200: 21 for sizes 2..4096, 22 for 65535;
    sizes in between were not recorded)."""
    return 21 if n <= 4096 else 22


def q8(p: int) -> int:
    return (p + 128) >> 8


def corner_weights(fracs: list) -> dict:
    """Per-axis 8-bit fractions -> {corner (0/1 per axis): integer weight}, summing to 256."""
    dims = len(fracs)
    a, b, c = (list(fracs) + [0, 0])[:3]
    out = {}
    for z, zw in ((0, 256 - c), (1, c)):
        if dims < 3 and z:
            continue
        p1 = q8(zw * a)
        for x, p in ((0, zw - p1), (1, p1)):
            if x:
                hi = q8(p * b)
                lo = p - hi
            else:
                lo = q8(p * (256 - b))
                hi = p - lo
            for y, w in ((0, lo), (1, hi)):
                if dims < 2 and y:
                    continue
                out[(x, y, z)[:dims]] = w
    return out


def _round_away(x: Fraction, precision: int, min_exp: int) -> Fraction:
    """x rounded to `precision` significant bits (ulp at least 2^min_exp), ties away from 0."""
    if x == 0:
        return x
    m = abs(x)
    e = m.numerator.bit_length() - m.denominator.bit_length()
    if Fraction(2) ** e > m:
        e -= 1
    ulp = Fraction(2) ** max(e - precision + 1, min_exp)
    r = math.floor(m / ulp + Fraction(1, 2)) * ulp
    return r if x > 0 else -r


def blend_float(taps: list, precision: int) -> float:
    """f32 (precision 24) or f16 (11) texels: truncate to 3 bits below the precision of the
    largest, sum exactly, round ties away (f32: denormals read and written as zero)."""
    vals = []
    for w, v in taps:
        if not w:
            continue
        v = float(v)
        if precision == 24 and v != 0 and abs(v) < 2.0**-126:
            v = math.copysign(0.0, v)
        vals.append((w, v))
    if any(math.isnan(v) for _, v in vals):
        return from_bits(0x7FFFFFFF)
    infs = {v for _, v in vals if math.isinf(v)}
    if infs:
        return infs.pop() if len(infs) == 1 else from_bits(0x7FFFFFFF)
    nonzero = [Fraction(v) for _, v in vals if v != 0]
    if not nonzero:
        return -0.0 if all(math.copysign(1, v) < 0 for _, v in vals) else 0.0
    top = max(abs(v) for v in nonzero)
    e = top.numerator.bit_length() - top.denominator.bit_length()
    if Fraction(2) ** e > top:
        e -= 1
    g = Fraction(2) ** (e - precision - 3)
    s = sum(w * math.trunc(Fraction(v) / g) * g for w, v in vals) / 256
    if precision == 24:
        r = _round_away(s, 24, -149)
        if abs(r) >= 2**128:
            return math.copysign(math.inf, r)
        out = float(r)
        return math.copysign(0.0, out) if abs(out) < 2.0**-126 else out
    r = _round_away(s, 11, -24)
    return math.copysign(math.inf, r) if abs(r) > 65504 else float(r)


def expand_s8(k: int) -> int:
    """A signed 8-bit normalized integer as 16 bits: k * 32767 / 127 rounded half away."""
    m = (abs(k) * 32767 * 2 + 127) // 254
    return m if k >= 0 else -m


def blend_normalized(taps: list, scale: int) -> float:
    """8/16-bit integer texels read as normalized floats, as 16-bit integers t (taps of
    (weight, t)): n = floor((sum w t + 128) / 256), result n / scale (at least -1)."""
    n = (sum(w * t for w, t in taps) + 128) >> 8
    return max(float(_round_away(Fraction(n, scale), 24, -149)), -1.0)


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
