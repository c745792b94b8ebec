"""Textures and surfaces: tex, tld4, txq, suld, sust, sured, suq, against texref.py's model.

The kernels are nvcc's own texture and surface code (tex2D<float4>, tex2DGather, surf2Dread
with boundary modes...) plus hand-written PTX for forms CUDA C++ does not produce; the
objects are descriptors built directly (texref.Tex.descriptor), so these tests need no
CUDA context. Results must match the model bit for bit (texref models an H200's filter
arithmetic; test_filter_matches_h200_recordings replays rows that H200 recorded), except
gradient-chosen levels of detail (log2 and sqrt, within 2 ulps).
"""

from __future__ import annotations

import numpy as np
import pytest
from h200_texture_vectors import (
    H200_NORMALIZED,
    H200_ONEHOT_2D,
    H200_ONEHOT_3D,
    H200_TWO_TEXELS,
    H200_U8,
)
from nvcc import module_of, ptx_module, run
from texref import BORDER, CLAMP, MIRROR, WRAP, Tex, bits, from_bits, ulps, words

import cuport

CUDA = r"""
#define IDX int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;
extern "C" __global__ void t1d(cudaTextureObject_t t, const float4* c, float4* o, int n) {
    IDX o[i] = tex1D<float4>(t, c[i].x); }
extern "C" __global__ void t2d(cudaTextureObject_t t, const float4* c, float4* o, int n) {
    IDX o[i] = tex2D<float4>(t, c[i].x, c[i].y); }
extern "C" __global__ void t2du(cudaTextureObject_t t, const float4* c, uint4* o, int n) {
    IDX o[i] = tex2D<uint4>(t, c[i].x, c[i].y); }
extern "C" __global__ void t3d(cudaTextureObject_t t, const float4* c, float4* o, int n) {
    IDX o[i] = tex3D<float4>(t, c[i].x, c[i].y, c[i].z); }
extern "C" __global__ void t1dl(cudaTextureObject_t t, const float4* c, float4* o, int n) {
    IDX o[i] = tex1DLayered<float4>(t, c[i].x, (int)c[i].w); }
extern "C" __global__ void t2dl(cudaTextureObject_t t, const float4* c, float4* o, int n) {
    IDX o[i] = tex2DLayered<float4>(t, c[i].x, c[i].y, (int)c[i].w); }
extern "C" __global__ void tcube(cudaTextureObject_t t, const float4* c, float4* o, int n) {
    IDX o[i] = texCubemap<float4>(t, c[i].x, c[i].y, c[i].z); }
extern "C" __global__ void tcubel(cudaTextureObject_t t, const float4* c, float4* o, int n) {
    IDX o[i] = texCubemapLayered<float4>(t, c[i].x, c[i].y, c[i].z, (int)c[i].w); }
extern "C" __global__ void tlod(cudaTextureObject_t t, const float4* c, float4* o, int n) {
    IDX o[i] = tex2DLod<float4>(t, c[i].x, c[i].y, c[i].z); }
extern "C" __global__ void tgrad(cudaTextureObject_t t, const float4* c, float4* o, int n) {
    IDX o[i] = tex2DGrad<float4>(t, c[i].x, c[i].y, make_float2(c[i].z, 0.0f),
                                 make_float2(0.0f, c[i].w)); }
extern "C" __global__ void tgather(cudaTextureObject_t t, const float4* c, float4* o, int n) {
    IDX int comp = (int)c[i].w;
    o[i] = comp == 0 ? tex2Dgather<float4>(t, c[i].x, c[i].y, 0)
         : comp == 1 ? tex2Dgather<float4>(t, c[i].x, c[i].y, 1)
         : comp == 2 ? tex2Dgather<float4>(t, c[i].x, c[i].y, 2)
                     : tex2Dgather<float4>(t, c[i].x, c[i].y, 3); }
extern "C" __global__ void tfetch(cudaTextureObject_t t, const int* c, int4* o, int n) {
    IDX o[i] = tex1Dfetch<int4>(t, c[i]); }
extern "C" __global__ void tfetchf(cudaTextureObject_t t, const int* c, float4* o, int n) {
    IDX o[i] = tex1Dfetch<float4>(t, c[i]); }
// every thread samples the same place: the uniform (scalar) code path
extern "C" __global__ void tsame(cudaTextureObject_t t, float x, float y, float4* o) {
    o[threadIdx.x] = tex2D<float4>(t, x, y); }
// a third of the lanes sample, the others keep their value
extern "C" __global__ void tdiv(cudaTextureObject_t t, const float4* c, float4* o, int n) {
    IDX float4 v = o[i];
    if (i % 3 == 1) v = tex2D<float4>(t, c[i].x, c[i].y);
    o[i] = v; }
// a different texture per lane
extern "C" __global__ void tpick(const cudaTextureObject_t* ts, const float4* c, float4* o, int n) {
    IDX o[i] = tex2D<float4>(ts[i % 2], c[i].x, c[i].y); }

extern "C" __global__ void s2copy(cudaSurfaceObject_t src, cudaSurfaceObject_t dst, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x >= w) return;
    uchar4 v = surf2Dread<uchar4>(src, x * 4, y);
    surf2Dwrite(make_uchar4(v.w, v.z, v.y, v.x + 1), dst, x * 4, y);
}
extern "C" __global__ void s2modes(cudaSurfaceObject_t s, const int2* c, float* o, int n) {
    IDX o[3 * i] = surf2Dread<float>(s, c[i].x, c[i].y, cudaBoundaryModeZero);
    o[3 * i + 1] = surf2Dread<float>(s, c[i].x, c[i].y, cudaBoundaryModeClamp);
    surf2Dwrite(o[3 * i + 1] + 100.0f, s, c[i].x, c[i].y, cudaBoundaryModeZero);
}
extern "C" __global__ void s2trap(cudaSurfaceObject_t s, int x, int y, float* o) {
    o[0] = surf2Dread<float>(s, x, y, cudaBoundaryModeTrap); }
extern "C" __global__ void s3d(cudaSurfaceObject_t s, int w, int h, int d) {
    int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;
    short2 v = surf3Dread<short2>(s, x * 4, y, z);
    surf3Dwrite(make_short2(v.y, -v.x), s, x * 4, y, z);
}
extern "C" __global__ void s1dl(cudaSurfaceObject_t s, int w) {
    int x = threadIdx.x, l = blockIdx.x;
    float2 v = surf1DLayeredread<float2>(s, x * 8, l);
    surf1DLayeredwrite(make_float2(v.x * 2.0f, v.y + l), s, x * 8, l);
}
"""

RNG = np.random.default_rng(11)


def launch(kernel: str, tex: Tex, coords: np.ndarray, out_dtype=np.float32) -> np.ndarray:
    """Run a sampling kernel over `coords` (n x 4 float32 or n int32) -> n x 4 results."""
    n = len(coords)
    out = np.zeros((n, 4), out_dtype)
    run(module_of(CUDA), kernel, (n + 127) // 128, 128, tex.descriptor(), coords, out, n)
    return out


def check(tex: Tex, got: np.ndarray, expected: list[list], coords, tolerance: int = 0) -> None:
    bad = []
    float_result = tex.float_result
    for i, (g, e) in enumerate(zip(got.view(np.uint32), expected, strict=True)):
        want = words(e, float_result)
        for c in range(4):
            g_c = int(g[c])
            exact = g_c == want[c]
            close = float_result and tolerance and ulps(g_c, want[c]) <= tolerance
            if not (exact or close):
                shown = (from_bits(g_c), from_bits(want[c])) if float_result else (g_c, want[c])
                bad.append(f"{list(coords[i])}: channel {c} = {shown[0]!r}, expected {shown[1]!r}")
    assert not bad, "\n".join(bad[:20]) + f"\n({len(bad)} mismatches)"


def image(shape, fmt: str = "f32", lo=-8.0, hi=8.0) -> np.ndarray:
    if fmt in ("f32", "f16"):
        return RNG.uniform(lo, hi, shape).astype(np.float32 if fmt == "f32" else np.float16)
    info = np.iinfo({"u8": np.uint8, "s8": np.int8, "u16": np.uint16, "s16": np.int16,
                     "u32": np.uint32, "s32": np.int32}[fmt])
    return RNG.integers(info.min, int(info.max) + 1, shape, dtype=info.dtype)


def coords_2d(n: int, lo: float, hi: float) -> np.ndarray:
    c = np.zeros((n, 4), np.float32)
    c[:, :2] = RNG.uniform(lo, hi, (n, 2))
    return c


# -- sampling -----------------------------------------------------------------------------

@pytest.mark.parametrize("linear", [False, True])
@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("mode", [CLAMP, BORDER, WRAP, MIRROR])
def test_2d_float_filter_and_address_modes(linear, normalized, mode):
    tex = Tex([image((1, 5, 7, 4))], normalized=normalized, linear=linear,
              address=(mode, mode, mode), border=(0.25, -1.5, 3.0, 7.0))
    c = coords_2d(300, -1.3, 2.3) if normalized else coords_2d(300, -4.0, 11.0)
    got = launch("t2d", tex, c)
    check(tex, got, [tex.sample(list(row[:2])) for row in c], c)


@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("mode", [CLAMP, BORDER, WRAP, MIRROR])
def test_far_coordinates(normalized, mode):
    """Coordinates far outside the texture (|x| * 256 beyond 2^52, infinities, NaN) among
    ordinary ones in one warp: a warp reduces wrap and mirror coordinates through an f64
    quotient, exact only below 2^52, and lane by lane beyond."""
    far = np.array([1e20, -1e20, np.inf, -np.inf, np.nan, 3e9, -3e9, 2.0**44, -2.0**44,
                    2.0**45 + 77, 1e12, -7e15, 5.5, -3.25], np.float32)
    for linear in (False, True):
        tex = Tex([image((1, 5, 7, 1))], normalized=normalized, linear=linear,
                  address=(mode, mode, mode), border=(0.5, 0.0, 0.0, 0.0))
        c = np.zeros((200, 4), np.float32)
        c[:, 0] = RNG.choice(far, 200)
        c[:, 1] = RNG.uniform(-3, 9, 200)
        c[::7, 0] = 1.5
        check(tex, launch("t2d", tex, c), [tex.sample(list(r[:2])) for r in c], c)


@pytest.mark.parametrize("fmt", ["f32", "f16", "u8"])
@pytest.mark.parametrize("channels", [1, 2])
@pytest.mark.parametrize("mode", [CLAMP, BORDER])
def test_linear_filter_of_missing_channels(fmt, channels, mode):
    """The channels a format lacks read (0, 0, 1) where every tap is inside (a warp filters
    them once, as their fill value) and mix in the border color where a tap is outside."""
    tex = Tex([image((1, 4, 5, channels), fmt)], fmt=fmt, linear=True,
              address=(mode, mode, mode), border=(0.25, 0.75, 0.5, 0.125))
    c = coords_2d(200, -2.0, 7.0)
    check(tex, launch("t2d", tex, c), [tex.sample(list(row[:2])) for row in c], c)


PTX_INT_COORDS = r"""
.version 8.0
.target sm_75
.address_size 64
.visible .entry tint(.param .u64 t, .param .u64 c, .param .u64 o, .param .u32 n)
{
  .reg .pred %p1; .reg .b32 %r<8>; .reg .f32 %f<4>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [t]; ld.param.u64 %rd2, [c]; ld.param.u64 %rd3, [o]; ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mov.u32 %r4, %tid.x; mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.s32 %p1, %r5, %r1;
  @%p1 bra DONE;
  mul.wide.s32 %rd4, %r5, 8; add.u64 %rd5, %rd2, %rd4; ld.global.v2.u32 {%r6, %r7}, [%rd5];
  tex.2d.v4.f32.s32 {%f0, %f1, %f2, %f3}, [%rd1, {%r6, %r7}];
  mul.wide.s32 %rd6, %r5, 16; add.u64 %rd7, %rd3, %rd6; st.global.v4.f32 [%rd7], {%f0, %f1, %f2, %f3};
DONE:
  ret;
}
"""


@pytest.mark.parametrize("mode", [WRAP, MIRROR])
def test_integer_coordinates_far_and_at_multiples_of_the_size(mode):
    """tex.2d with .s32 texel indices (hand-written PTX) on a wrapping or mirroring texture:
    a warp reduces them through an f64 quotient, which falls one short at some multiples
    of the period (49 and 98, 75 and 150 among them)."""
    for w, h in ((49, 5), (75, 3), (3001, 3)):
        tex = Tex([image((1, h, w, 4))], normalized=True, address=(mode, mode, mode))
        ks = np.array([0, 1, 2, 3, 1000, 99991, 306783, 2**31 // w - 1, 2**31 // (2 * w) - 1])
        xs = np.concatenate([ks * w, ks * w - 1, ks * w + 1, ks * 2 * w, ks * 2 * w - 1,
                             -ks * w, -ks * w - 1, -ks * 2 * w + 1, [-2**31, 2**31 - 1]])
        xs = xs[(xs >= -2**31) & (xs < 2**31)].astype(np.int32)
        c = np.stack([xs, RNG.integers(-4 * h, 4 * h, len(xs), dtype=np.int32)], -1)
        out = np.zeros((len(xs), 4), np.float32)
        run(ptx_module(PTX_INT_COORDS), "tint", (len(xs) + 63) // 64, 64, tex.descriptor(), c,
            out, len(xs))
        check(tex, out, [tex.sample([int(x), int(y)], int_coords=True) for x, y in c], c)


SPECIAL_TEXELS = [0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, -1.1754942e-38, 1.1754944e-38,
                  -1.1754944e-38, np.inf, -np.inf, np.nan, 3.4028235e38, -3.4028235e38, 1.0000001,
                  -2.9999998]


@pytest.mark.parametrize("fmt", ["f32", "f16", "u8", "s8", "s16"])
@pytest.mark.parametrize("mode", [CLAMP, BORDER, WRAP, MIRROR])
def test_linear_filter_at_texel_centres(fmt, mode):
    """Linear filtering where every lane of a warp samples at texel centres (x + 0.5,
    convolutionTexture's coordinates): a warp then filters one tap of weight 256, which must
    give what four taps give: denormal f32 texels read as zeros of their sign, NaN as
    0x7fffffff, infinities kept; half textures' border colors rounded to half precision.
    Centres outside the texture (border texels, wrapping, mirroring), in 1D, 2D and 3D, and
    a warp with one lane off centre (four taps)."""
    for dims, kernel in ((1, "t1d"), (2, "t2d"), (3, "t3d")):
        shape = {1: (1, 1, 37, 4), 2: (1, 5, 7, 4), 3: (3, 4, 5, 4)}[dims]
        data = image(shape, fmt)
        if fmt == "f32":
            flat = data.reshape(-1)
            flat[RNG.choice(flat.size, len(SPECIAL_TEXELS), replace=False)] = SPECIAL_TEXELS
        border = (0.1, -1e-40, 3.0e5, -0.0) if fmt == "f32" else (0.1, -0.75, 0.5, -0.0)
        tex = Tex([data], fmt=fmt, dims=dims, linear=True, address=(mode, mode, mode),
                  border=border)
        sizes = [shape[2], shape[1], shape[0]][:dims]
        c = np.zeros((160, 4), np.float32)
        for k, n in enumerate(sizes):
            c[:, k] = RNG.integers(-n - 2, 2 * n + 2, 160) + 0.5
        c[100, 0] += 0.25  # the fourth warp: one lane between texels
        check(tex, launch(kernel, tex, c), [tex.sample(list(r[:dims])) for r in c], c)


@pytest.mark.parametrize("linear", [False, True])
@pytest.mark.parametrize("mode", [CLAMP, BORDER])
@pytest.mark.parametrize("dims", [1, 2, 3])
def test_texel_centres_at_the_limits_of_the_short_path(linear, mode, dims):
    """A warp whose unnormalized coordinates are all texel centres i + 0.5 (up to 2^23 -
    0.5), on axes that do not wrap, samples texel i of each axis straight from the f32
    coordinates (texture_sampler.texel_centres), point or linear. Warps of centres far
    outside the texture (clamped, border), and warps where one lane is not such a centre
    and the warp takes the general path: 2^23 and beyond (integers: i + 0.5 would round back
    to them), NaN, infinities, a denormal, 0.25, a lane off centre on the last axis only."""
    shape = {1: (1, 1, 37, 2), 2: (1, 5, 7, 2), 3: (3, 4, 5, 2)}[dims]
    tex = Tex([image(shape)], dims=dims, linear=linear, address=(mode, mode, mode),
              border=(0.75, -2.5, 0.0, 0.0))
    sizes = [shape[2], shape[1], shape[0]][:dims]
    odd = [2.0**23, -2.0**23, 2.0**23 + 2, 2.0**24 + 2, 3e9, np.nan, np.inf, -np.inf, 1e-45,
           0.25, None]
    c = np.zeros((32 * (2 + len(odd)), 4), np.float32)
    for k, n in enumerate(sizes):
        c[:, k] = RNG.integers(-n - 3, 2 * n + 3, len(c)) + 0.5
    c[:32:4, 0] = [2.0**23 - 0.5, -2.0**23 + 0.5, 2.0**22 + 0.5, -2.0**22 - 0.5, 4194303.5,
                   -0.5, 0.5, -1.5]
    c[32:64, 0] = np.arange(32) - 8.5  # a row across the texture's first texel
    for w, x in enumerate(odd):
        lane = 64 + 32 * w + 13
        if x is None:  # inside the texture, between two texels of the last axis
            c[lane, :dims] = 1.5
            c[lane, dims - 1] = 1.75
        else:
            c[lane, 0] = x
    check(tex, launch({1: "t1d", 2: "t2d", 3: "t3d"}[dims], tex, c),
          [tex.sample(list(r[:dims])) for r in c], c)


@pytest.mark.parametrize("linear", [False, True])
@pytest.mark.parametrize("mode", [CLAMP, BORDER])
def test_rows_of_texels(linear, mode):
    """Lanes reading consecutive texels of a row (x = i + 0.5 + offset, convolutionTexture's
    pattern): a warp loads runs of 8 such lanes instead of gathering them. Runs that cross
    the texture's edge (clamped or border texels), start mid-row or hold a lane off the
    row, and a kernel where only every third lane samples."""
    tex = Tex([image((1, 6, 40, 1))], linear=linear, address=(mode, mode, mode),
              border=(2.5, 0.0, 0.0, 0.0))
    c = np.zeros((256, 4), np.float32)
    c[:, 0] = np.arange(256) % 32 + 0.5 + np.repeat([0, 3, -7, 5, 8, 9, 2, 1], 32)
    c[:, 1] = np.arange(256) // 64 + 0.5
    c[77, 0] = 2.5  # a lane off its run
    c[140, 1] = 4.5  # a lane in another row
    c[200:208, 0] -= 8  # a run of lanes before the next one
    check(tex, launch("t2d", tex, c), [tex.sample(list(r[:2])) for r in c], c)
    out = np.full((256, 4), -7.0, np.float32)
    run(module_of(CUDA), "tdiv", 2, 128, tex.descriptor(), c, out, 256)
    expected = [tex.sample(list(c[i, :2])) if i % 3 == 1 else [-7.0] * 4 for i in range(256)]
    check(tex, out, expected, c)


def test_linear_weights_are_9_bit_fixed_point():
    """Between texels 0 and 1 there are exactly 256 steps, each k/256 of the difference."""
    tex = Tex([np.array([0.0, 1.0], np.float32).reshape(1, 1, 2, 1)], dims=1, linear=True)
    c = np.zeros((1024, 4), np.float32)
    c[:, 0] = 0.5 + np.arange(1024, dtype=np.float32) / 1024
    got = launch("t1d", tex, c)[:, 0]
    assert len(set(got.tolist())) == 257  # 0/256 .. 256/256
    assert np.all(got * 256 == np.round(got * 256))
    check(tex, launch("t1d", tex, c), [tex.sample([x]) for x in c[:, 0]], c, tolerance=0)


def _at(i: int, a: int) -> float:
    return float(np.float32(i + 0.5 + a / 256))


def _replay(kernel: str, tex: Tex, coords: list, expected: list, channels: int = 1) -> None:
    c = np.zeros((len(coords), 4), np.float32)
    c[:, :len(coords[0])] = coords
    got = launch(kernel, tex, c).view(np.uint32)
    bad = []
    for k, want in enumerate(expected):
        ref = words(tex.sample(list(c[k, :len(coords[0])])), True)
        for ch in range(channels):
            if int(got[k, ch]) != want[ch] or ref[ch] != want[ch]:
                bad.append(f"{coords[k]} channel {ch}: cuport {int(got[k, ch]):08x}, "
                           f"texref {ref[ch]:08x}, H200 {want[ch]:08x}")
    assert not bad, "\n".join(bad[:20]) + f"\n({len(bad)} mismatches)"


def test_filter_matches_h200_recordings():
    """Weights (2D and 3D splits), the truncate-and-sum arithmetic with ties away, 8-bit
    formats filtered as 16-bit integers and normalized coordinates kept to 21 fraction
    bits, on rows an H200 recorded."""
    t = np.zeros((1, 3, 3, 1), np.float32)
    t[0, 1, 1, 0] = from_bits(0xBF333333)
    _replay("t2d", Tex([t], linear=True), [[_at(i, a), _at(j, b)] for i, j, a, b, _ in
                                           H200_ONEHOT_2D], [[r[-1]] for r in H200_ONEHOT_2D])
    t = np.zeros((3, 3, 3, 1), np.float32)
    t[1, 1, 1, 0] = 1.0
    _replay("t3d", Tex([t], dims=3, linear=True),
            [[_at(r, a), _at(r, b), _at(r, c)] for r, a, b, c, _ in H200_ONEHOT_3D],
            [[r[-1]] for r in H200_ONEHOT_3D])
    for column in (0, 1):
        t = np.zeros((1, 2, 2, 1), np.float32)
        t[0, 0, 0, 0] = from_bits(0x3FFFFFFF)
        t[0, column, 1 - column, 0] = from_bits(0x3F800001)
        rows = [r for r in H200_TWO_TEXELS if r[0] == column]
        _replay("t2d", Tex([t], linear=True), [[_at(0, a), _at(0, b)] for _, a, b, _ in rows],
                [[r[-1]] for r in rows])
    u8 = [0, 255, 255, 0, 189, 32, 32, 167, 167, 130, 1, 0, 0, 1, 128, 127, 254, 255, 255, 255,
          3, 251, 85, 170]
    _replay("t1d", Tex([np.array(u8, np.uint8).reshape(1, 1, -1, 1)], fmt="u8", dims=1,
                       linear=True), [[_at(i, a)] for i, a, _ in H200_U8],
            [[r[-1]] for r in H200_U8])
    for n, mode, linear in sorted({r[:3] for r in H200_NORMALIZED}):
        i = np.arange(n)
        ramp = np.stack([i & 15, (i >> 4) & 15, i >> 8, np.ones(n)], -1).astype(np.float32)
        m = {"clamp": CLAMP, "wrap": WRAP}[mode]
        tex = Tex([ramp.reshape(1, 1, n, 4)], dims=1, normalized=True, linear=bool(linear),
                  address=(m, m, m))
        rows = [r for r in H200_NORMALIZED if r[:3] == (n, mode, linear)]
        _replay("t1d", tex, [[float.fromhex(r[3])] for r in rows],
                [[bits(v) for v in r[4:]] for r in rows], channels=3)


@pytest.mark.parametrize("fmt", ["u8", "s8", "u16", "s16"])
@pytest.mark.parametrize("linear", [False, True])
def test_promoted_integer_formats(fmt, linear):
    tex = Tex([image((1, 6, 9, 4), fmt)], fmt=fmt, linear=linear, address=(CLAMP, BORDER, CLAMP),
              border=(0.5, 0.5, 0.5, 0.5))
    c = coords_2d(300, -2.0, 10.0)
    check(tex, launch("t2d", tex, c), [tex.sample(list(row[:2])) for row in c], c)


def test_srgb_and_two_channels():
    tex = Tex([image((1, 4, 4, 4), "u8")], fmt="u8", linear=True, srgb=True)
    c = coords_2d(200, -0.5, 4.5)
    check(tex, launch("t2d", tex, c), [tex.sample(list(row[:2])) for row in c], c)
    tex2 = Tex([image((1, 4, 4, 2), "f32")], linear=True)  # b and a read as 0 and 1
    check(tex2, launch("t2d", tex2, c), [tex2.sample(list(row[:2])) for row in c], c)


def test_half_floats():
    tex = Tex([image((1, 5, 5, 4), "f16")], fmt="f16", linear=True, normalized=True,
              address=(WRAP, MIRROR, CLAMP))
    c = coords_2d(300, -1.5, 2.5)
    check(tex, launch("t2d", tex, c), [tex.sample(list(row[:2])) for row in c], c)


@pytest.mark.parametrize("fmt", ["u8", "s16", "u32", "s32"])
def test_integer_results_read_as_integers(fmt):
    """Element-type reads return the integer, sign- or zero-extended; linear filtering does
    not apply to them (the texel under the coordinate is returned)."""
    tex = Tex([image((1, 3, 5, 4), fmt)], fmt=fmt, read_as_integer=True, linear=True,
              address=(BORDER, CLAMP, CLAMP), border=(1.0, 2.0, -1.0, 0.0))
    c = coords_2d(200, -2.0, 7.0)
    got = launch("t2du", tex, c, np.uint32)
    check(tex, got, [tex.sample(list(row[:2])) for row in c], c)


def test_1d_fetch_from_linear_memory():
    """tex1Dfetch: integer coordinates, out of range reads zeros."""
    data = image((1, 1, 37, 4), "s16")
    tex = Tex([data], fmt="s16", read_as_integer=True, dims=1, linear_memory=True)
    c = np.arange(-5, 45, dtype=np.int32)
    got = launch("tfetch", tex, c, np.int32)
    check(tex, got, [tex.sample([int(x)], int_coords=True) for x in c], c.reshape(-1, 1))
    texf = Tex([image((1, 1, 37, 2), "u8")], fmt="u8", dims=1, linear_memory=True)
    check(texf, launch("tfetchf", texf, c), [texf.sample([int(x)], int_coords=True) for x in c],
          c.reshape(-1, 1))


def test_3d_trilinear():
    tex = Tex([image((4, 3, 5, 4))], dims=3, linear=True, normalized=True,
              address=(WRAP, CLAMP, MIRROR))
    c = np.zeros((300, 4), np.float32)
    c[:, :3] = RNG.uniform(-1.2, 2.2, (300, 3))
    check(tex, launch("t3d", tex, c), [tex.sample(list(row[:3])) for row in c], c)


def test_layered():
    tex1 = Tex([image((5, 1, 9, 4))], dims=1, layered=True, linear=True)
    c = np.zeros((200, 4), np.float32)
    c[:, 0] = RNG.uniform(-1, 10, 200)
    c[:, 3] = RNG.integers(0, 7, 200)  # layers 5 and 6 clamp to the last
    check(tex1, launch("t1dl", tex1, c), [tex1.sample([int(r[3]), r[0]]) for r in c], c)
    tex2 = Tex([image((3, 4, 6, 2), "u8")], fmt="u8", layered=True, linear=True, normalized=True,
               address=(WRAP, WRAP, WRAP))
    c[:, :2] = RNG.uniform(-1, 2, (200, 2))
    c[:, 3] = RNG.integers(0, 3, 200)
    check(tex2, launch("t2dl", tex2, c), [tex2.sample([int(r[3]), r[0], r[1]]) for r in c], c)


@pytest.mark.parametrize("linear", [False, True])
def test_cubemaps(linear):
    tex = Tex([image((6, 8, 8, 4))], cube=True, linear=linear, normalized=True)
    c = np.zeros((400, 4), np.float32)
    c[:, :3] = RNG.uniform(-1, 1, (400, 3))
    check(tex, launch("tcube", tex, c), [tex.sample(list(r[:3])) for r in c], c)
    texl = Tex([image((12, 4, 4, 4))], cube=True, layered=True, linear=linear, normalized=True)
    c[:, 3] = RNG.integers(0, 3, 400)
    check(texl, launch("tcubel", texl, c), [texl.sample([int(r[3]), *r[:3]]) for r in c], c)


def _pyramid(w: int, h: int, levels: int, fmt: str = "f32") -> list[np.ndarray]:
    return [image((1, max(h >> k, 1), max(w >> k, 1), 4), fmt) for k in range(levels)]


@pytest.mark.parametrize("mip_linear", [False, True])
def test_mipmap_level_and_grad(mip_linear):
    tex = Tex(_pyramid(16, 8, 5), normalized=True, linear=True, mip_linear=mip_linear,
              max_lod=3.5, lod_bias=0.25, address=(WRAP, CLAMP, CLAMP))
    c = np.zeros((300, 4), np.float32)
    c[:, :2] = RNG.uniform(-0.5, 1.5, (300, 2))
    c[:, 2] = RNG.uniform(-1, 5, 300)
    check(tex, launch("tlod", tex, c), [tex.sample(list(r[:2]), lod=float(r[2])) for r in c], c)
    c[:, 2] = RNG.uniform(0.0, 0.6, 300)
    c[:, 3] = RNG.uniform(0.0, 0.6, 300)
    expected = [tex.sample(list(r[:2]), grad=((r[2], 0.0), (0.0, r[3]))) for r in c]
    check(tex, launch("tgrad", tex, c), expected, c, tolerance=2)


def test_gather():
    tex = Tex([image((1, 5, 6, 4))], normalized=True, address=(WRAP, BORDER, CLAMP),
              border=(9.0, 8.0, 7.0, 6.0))
    c = coords_2d(200, -0.4, 1.4)
    c[:, 3] = RNG.integers(0, 4, 200)
    check(tex, launch("tgather", tex, c), [tex.gather(list(r[:2]), int(r[3])) for r in c], c,
          tolerance=0)


def test_uniform_coordinates_and_a_texture_per_lane():
    tex = Tex([image((1, 5, 7, 4))], linear=True)
    out = np.zeros((64, 4), np.float32)
    run(module_of(CUDA), "tsame", 1, 64, tex.descriptor(), np.float32(2.3), np.float32(1.7), out)
    expected = [tex.sample([2.3, 1.7])] * 64
    check(tex, out, expected, [[2.3, 1.7]] * 64)
    other = Tex([image((1, 3, 3, 4))], normalized=True, linear=True, address=(WRAP, WRAP, WRAP))
    handles = np.array([tex.descriptor(), other.descriptor()], np.uint64)
    c = coords_2d(100, -0.5, 6.0)
    out = np.zeros((100, 4), np.float32)
    run(module_of(CUDA), "tpick", 1, 100, handles, c, out, 100)
    check(tex, out, [(tex, other)[i % 2].sample(list(c[i, :2])) for i in range(100)], c)


def test_divergent_lanes():
    tex = Tex([image((1, 4, 4, 4))], linear=True, address=(BORDER, BORDER, BORDER),
              border=(1.0, 2.0, 3.0, 4.0))
    c = coords_2d(100, -1.0, 5.0)
    out = np.full((100, 4), -7.0, np.float32)
    run(module_of(CUDA), "tdiv", 1, 100, tex.descriptor(), c, out, 100)
    expected = [tex.sample(list(c[i, :2])) if i % 3 == 1 else [-7.0] * 4 for i in range(100)]
    check(tex, out, expected, c)


def test_null_texture_object_stops_the_kernel():
    c = coords_2d(4, 0, 1)
    out = np.zeros((4, 4), np.float32)
    with pytest.raises(cuport.BackendError, match="illegal address"):
        run(module_of(CUDA), "t2d", 1, 32, 0, c, out, 4)


# -- surfaces -----------------------------------------------------------------------------

def test_surface_2d_read_write_uchar4():
    w, h = 37, 5
    src = Tex([image((1, h, w, 4), "u8")], fmt="u8")
    dst = Tex([np.zeros((1, h, w, 4), np.uint8)], fmt="u8")
    run(module_of(CUDA), "s2copy", (2, h), 32, src.surface(), dst.surface(), w, h)
    s = src.levels[0]
    want = np.stack([s[..., 3], s[..., 2], s[..., 1], s[..., 0] + 1], axis=-1).astype(np.uint8)
    assert np.array_equal(dst.levels[0], want)


def test_surface_boundary_modes():
    w, h = 6, 4
    data = image((1, h, w, 1), "f32")
    surf = Tex([data.copy()])
    c = np.array([[0, 0], [4, 1], [20, 3], [-4, 2], [8, 7], [23, -1], [12, 2]], np.int32)
    out = np.zeros(3 * len(c), np.float32)
    run(module_of(CUDA), "s2modes", 1, 32, surf.surface(), c, out, len(c))
    mem = surf.levels[0]
    for i, (x, y) in enumerate(c):
        inside = 0 <= x <= 4 * (w - 1) and 0 <= y < h
        xc, yc = min(max(x, 0), 4 * (w - 1)) // 4, min(max(y, 0), h - 1)
        assert out[3 * i] == (data[0, y, x // 4, 0] if inside else 0.0)
        assert out[3 * i + 1] == data[0, yc, xc, 0]
        if inside:  # .zero drops the out-of-bounds stores
            assert mem[0, y, x // 4, 0] == np.float32(data[0, y, x // 4, 0] + 100.0)
    touched = {(y, x // 4) for x, y in c if 0 <= x <= 4 * (w - 1) and 0 <= y < h}
    for y in range(h):
        for x in range(w):
            if (y, x) not in touched:
                assert mem[0, y, x, 0] == data[0, y, x, 0]


def test_surface_trap():
    surf = Tex([image((1, 4, 4, 1), "f32")])
    out = np.zeros(1, np.float32)
    run(module_of(CUDA), "s2trap", 1, 1, surf.surface(), 12, 3, out)
    assert out[0] == surf.levels[0][0, 3, 3, 0]
    with pytest.raises(cuport.BackendError, match="illegal address"):
        run(module_of(CUDA), "s2trap", 1, 1, surf.surface(), 16, 0, out)


def test_surface_3d_and_layered():
    vol = image((3, 4, 5, 2), "s16")
    surf = Tex([vol.copy()], fmt="s16", dims=3)
    run(module_of(CUDA), "s3d", (4, 3), 5, surf.surface(), 5, 4, 3)
    mem = surf.levels[0]
    assert np.array_equal(mem[..., 0], vol[..., 1])
    assert np.array_equal(mem[..., 1], (-vol[..., 0].astype(np.int32)).astype(np.int16))
    lay = image((4, 1, 7, 2), "f32")
    surf = Tex([lay.copy()], dims=1, layered=True)
    run(module_of(CUDA), "s1dl", 4, 7, surf.surface(), 7)
    mem = surf.levels[0]
    assert np.array_equal(mem[..., 0], lay[..., 0] * 2)
    assert np.array_equal(mem[..., 1], lay[..., 1] + np.arange(4, dtype=np.float32)[:, None, None])


PTX_SURF = r"""
.version 8.0
.target sm_75
.address_size 64
.visible .entry red(.param .u64 s, .param .u64 vals)
{
  .reg .b32 %r<8>; .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [s]; ld.param.u64 %rd2, [vals];
  mov.u32 %r1, %tid.x; and.b32 %r2, %r1, 3; shl.b32 %r3, %r2, 2; shr.u32 %r4, %r1, 2;
  and.b32 %r4, %r4, 1;
  mul.wide.u32 %rd3, %r1, 4; add.u64 %rd4, %rd2, %rd3; ld.global.u32 %r5, [%rd4];
  sured.b.add.2d.u32.trap [%rd1, {%r3, %r4}], %r5;
  sured.b.max.2d.s32.zero [%rd1, {%r3, 2}], %r5;
  ret;
}
.visible .entry query(.param .u64 s, .param .u64 t, .param .u64 out)
{
  .reg .b32 %r<12>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [s]; ld.param.u64 %rd2, [t]; ld.param.u64 %rd3, [out];
  suq.width.b32 %r1, [%rd1]; suq.height.b32 %r2, [%rd1]; suq.depth.b32 %r3, [%rd1];
  txq.width.b32 %r4, [%rd2]; txq.height.b32 %r5, [%rd2];
  txq.num_mipmap_levels.b32 %r6, [%rd2]; txq.normalized_coords.b32 %r7, [%rd2];
  txq.level.width.b32 %r8, [%rd2], 2; txq.level.height.b32 %r9, [%rd2], 1;
  suq.array_size.b32 %r10, [%rd1];
  st.global.v4.u32 [%rd3], {%r1, %r2, %r3, %r4};
  st.global.v4.u32 [%rd3+16], {%r5, %r6, %r7, %r8};
  st.global.v2.u32 [%rd3+32], {%r9, %r10};
  ret;
}
.visible .entry store_half(.param .u64 s)
{
  .reg .b32 %r<4>; .reg .f32 %f<4>; .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [s];
  mov.u32 %r1, %tid.x; cvt.rn.f32.u32 %f1, %r1; mul.f32 %f2, %f1, 0f3FC00000;
  sust.p.1d.v2.b32.trap [%rd1, {%r1}], {%f2, %f1};
  ret;
}
.visible .entry store_byte(.param .u64 s)
{
  .reg .b32 %r<4>; .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [s];
  mov.u32 %r1, %tid.x; mul.lo.u32 %r2, %r1, 100;
  sust.p.1d.b32.trap [%rd1, {%r1}], {%r2};
  ret;
}
"""


def test_sured_suq_txq_and_formatted_store():
    mod = ptx_module(PTX_SURF)
    cells = Tex([np.zeros((1, 3, 4, 1), np.uint32)], fmt="u32")
    vals = RNG.integers(0, 1000, 32).astype(np.uint32)
    run(mod, "red", 1, 32, cells.surface(), vals)
    mem = cells.levels[0][0, :, :, 0]
    want_sum = np.zeros((2, 4), np.uint64)
    for t in range(32):
        want_sum[(t >> 2) & 1, t & 3] += vals[t]
    assert np.array_equal(mem[:2], want_sum.astype(np.uint32))
    assert np.array_equal(mem[2], [max(vals[t] for t in range(32) if t & 3 == x) for x in range(4)])

    surf = Tex([np.zeros((5, 4, 7, 1), np.float32)], layered=True)
    tex = Tex(_pyramid(16, 8, 4), normalized=True)
    out = np.zeros(10, np.uint32)
    run(mod, "query", 1, 1, surf.surface(), tex.descriptor(), out)
    assert out.tolist() == [7, 4, 1, 16, 8, 4, 1, 4, 4, 5]

    half = Tex([np.zeros((1, 1, 8, 2), np.float16)], fmt="f16", dims=1)
    run(mod, "store_half", 1, 8, half.surface())
    mem = half.levels[0][0, 0]
    assert np.array_equal(mem[:, 0], (np.arange(8) * 1.5).astype(np.float16))
    assert np.array_equal(mem[:, 1], np.arange(8).astype(np.float16))
    small = Tex([np.zeros((1, 1, 8, 1), np.uint8)], fmt="u8", dims=1)
    run(mod, "store_byte", 1, 8, small.surface())
    assert small.levels[0][0, 0, :, 0].tolist() == [min(100 * t, 255) for t in range(8)]
