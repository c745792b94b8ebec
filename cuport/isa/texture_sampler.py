"""The texture unit in LLVM IR: samplers, gathers and surface addressing, for one lane or a
warp.

The lowerings in cuport/isa/texture.py call these functions; each is generated into the
kernel's LLVM module the first time it is needed and reads the object's descriptor
(texture_layout.py) at run time, so one function serves every texture of a given geometry;
or, given a `spec` (texture_layout.Sampling: what the one object it samples is), takes the
descriptor's format, filter and address modes as constants, and builds only the code they
choose (`_Fn.branch`/`switch` on a constant, lanes.py's folding), named for the spec.
No Python runs while a kernel samples. Each sampler comes in two shapes built from the same
code (lanes.py): per thread (scalar arguments: the Vulkan backend, and a CPU warp whose
lanes hold different texture objects, lane by lane) and per warp (`lanes` = 32: the CPU
backend where the executing lanes share one texture object; coordinates and everything
computed from them are vectors, texels are gathered, and what the descriptor decides, its
format, filter and address modes, stays scalar: branches the warp takes once).

What the sampler does, in the order the hardware does it (CUDA Programming Guide,
"Texture Fetching"; PTX ISA `tex`; the details an H200 showed, .device_exp/texprobe.cu,
whose filtering, weight and coordinate rows this reproduces bit for bit):
- cube coordinates pick a face (the major axis) and become normalized (s, t) on it;
- the texel-space coordinate becomes fixed point with 8 fractional bits (texel_fixed):
  an unnormalized x exactly (point: floor; linear: (x - 0.5) * 256 rounded, ties up); a
  normalized u is first truncated to NORM_FRACTION_BITS fraction bits (one more above
  NORM_SMALL_SIZE texels) and multiplied by the size exactly; denormals are zero;
- wrap and mirror reduce that modulo their period; in clamp mode the linear filter's
  coordinate is clamped to [0, size - 1] (which matters for the 3D weights);
- the integer part picks the texel(s), the fraction (8 bits) the weights: integers summing
  to 256 (_corner_weights: z splits first, then x, then y, each split rounding one side
  with q8(p) = (p + 128) >> 8 and giving the other the rest; "9-bit fixed point with 8
  bits of fractional value");
- address modes act on texel indices: clamp to the edge, wrap (modulo), mirror (period
  2N), border (the border color for a texel outside);
- each texel's channels decode (8/16-bit integers to [0, 1] or [-1, 1] floats when the
  read mode promotes them, half to float, sRGB to linear); missing channels read as
  (0, 0, 0, 1);
- filtering (_filter_float): float texels of nonzero weight are truncated to multiples of
  2^(E - p - 3) (E their largest exponent, p = 24, 11 for half), summed exactly and
  rounded once to p bits, ties away from zero; 8/16-bit normalized formats are filtered
  as 16-bit integers (_filter_int: u8 k as 257 k), n = (sum + 128) >> 8, result n / 65535
  (n / 32767 signed; 8-bit signed is close, not exact);
- mip levels: level of detail (explicit, from gradients, or 0) plus bias, clamped, then
  the nearest level or a blend of two with an 8-bit fractional weight (not measured: the
  blend is the exact weighted sum rounded once).

Unknowns, kept in one place so that a recording on a real GPU can settle them:
- SNAP: how the level of detail becomes 8 fractional bits (rounds to nearest here).
- NORM_FRACTION_BITS for sizes between 4097 and 65534 (21 fits 2..4096, 22 fits 65535).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from llvmlite import ir as ll

from . import texture_layout as T
from .lanes import LaneBuilder, constant_int, lanes_of, scalar_type
from .types import F16, F32, F64, I1, I8, I16, I32, I64, PTR, vec

SNAP = "nearest"  # level of detail -> 8 fractional bits: "nearest" (half even) or "truncate"
NORM_FRACTION_BITS = 21  # a normalized coordinate's fraction bits (one more above NORM_SMALL_SIZE)
NORM_SMALL_SIZE = 4096

V4 = vec(I32, 4)
_FRAC = 1 << T.SUBTEXEL_BITS  # 256

Words = list[ll.Value]  # a texel's or a result's four 32-bit words, one value per channel
Build = Callable[[], list[ll.Value]]


def _i32(v: int) -> ll.Constant:
    return ll.Constant(I32, v & 0xFFFFFFFF)


def _i64(v: int) -> ll.Constant:
    return ll.Constant(I64, v & 0xFFFFFFFFFFFFFFFF)


def _f32(v: float) -> ll.Constant:
    return ll.Constant(F32, v)


def _f64(v: float) -> ll.Constant:
    return ll.Constant(F64, v)


def srgb_table() -> list[float]:
    """sRGB-encoded byte -> linear value, as f32 (IEC 61966-2-1)."""
    out = []
    for v in range(256):
        c = v / 255.0
        lin = c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
        out.append(struct.unpack("<f", struct.pack("<f", lin))[0])
    return out


def words_type(lanes: int) -> ll.Type:
    """How four result words cross a function boundary: <4 x i32> for one lane, an array
    of four <lanes x i32> vectors for a warp."""
    return V4 if lanes == 1 else ll.ArrayType(vec(I32, lanes), 4)


def lane_type(t: ll.Type, lanes: int) -> ll.Type:
    """The type of a per-lane value in a function of that shape."""
    return vec(t, lanes) if lanes > 1 else t


def shaped(name: str, lanes: int, spec: T.Sampling | None = None) -> str:
    """A runtime function's name for its shape (per thread or per warp) and the descriptor
    facts it takes as constants (spec; none: it reads them)."""
    if spec is not None:
        name = f"{name}_k{spec.tag}"
    return name if lanes == 1 else f"{name}_w{lanes}"


class _Fn:
    """One runtime function under construction, with the IR helpers the samplers share.
    `lanes` > 1: a warp's function, whose argument types are given per lane and whose
    last argument is the executing lanes (<lanes x i1>, see lanes.py)."""

    def __init__(self, module: ll.Module, name: str, ret: ll.Type, args: list[ll.Type],
                 lanes: int = 1, spec: T.Sampling | None = None) -> None:
        self.module = module
        self.lanes = lanes
        self.spec = spec  # descriptor facts known when the kernel was compiled: constants
        types = args + ([vec(I1, lanes)] if lanes > 1 else [])
        self.fn = ll.Function(module, ll.FunctionType(ret, types), name=name)
        self.fn.linkage = "internal"
        self.args = self.fn.args[:len(args)]
        mask = self.fn.args[-1] if lanes > 1 else None
        self.b = LaneBuilder(ll.IRBuilder(self.fn.append_basic_block("entry")), lanes, mask)

    def vary(self, t: ll.Type) -> ll.Type:
        return lane_type(t, self.lanes)

    def call(self, fn: ll.Function, args: list[ll.Value], inline: bool = False) -> ll.Value:
        """Call another runtime function of this shape (scalars splatted where it takes
        per-lane values; the executing lanes passed on). `inline`: a warp's call is always
        inlined (a hot path where the call's vectors through memory cost more than the
        code's size)."""
        params = fn.function_type.args
        if self.lanes > 1:
            args = [*args, self.b.mask]
        args = [self.b.splat(a, p.count) if isinstance(p, ll.VectorType) else a
                for a, p in zip(args, params, strict=True)]
        return self.b.call(fn, args, attrs=("alwaysinline",) if inline and self.lanes > 1 else ())

    # -- memory and fields
    def at(self, base: ll.Value, off) -> ll.Value:
        return self.b.offset(base, _i64(off) if isinstance(off, int) else off)

    def field(self, desc: ll.Value, name: str, t: ll.Type = I32, index: int = 0) -> ll.Value:
        """Descriptor field `name` (element `index` of an array field) as type t: a
        constant where the function's spec knows it."""
        known = self.spec.field(name, index) if self.spec is not None and t == I32 else None
        if known is not None:
            return _i32(known)
        size = 8 if t == I64 else 4
        return self.b.load(self.at(desc, T.offset(name) + index * size), typ=t)

    def level_ptr(self, desc: ll.Value, level: ll.Value) -> ll.Value:
        b = self.b
        off = b.add(_i64(T.offset("levels")), b.mul(b.zext(level, I64), _i64(T.LEVEL_SIZE)))
        return self.at(desc, off)

    def lfield(self, lvl: ll.Value, name: str, t: ll.Type = I32) -> ll.Value:
        return self.b.load(self.at(lvl, T.level_offset(name)), typ=t)

    def flag(self, flags: ll.Value, bit: int) -> ll.Value:
        b = self.b
        return b.icmp_unsigned("!=", b.and_(flags, _i32(bit)), _i32(0))

    def return_if_null(self, desc: ll.Value, answer: ll.Value) -> None:
        """A NULL descriptor (an object that does not exist): return `answer` at once. Not
        where the spec was a live object's: the handle is that object's."""
        if self.spec is not None:
            return
        b = self.b
        null = b.icmp_unsigned("==", b.ptrtoint(desc, I64), _i64(0))
        bad = self.fn.append_basic_block("null")
        go = self.fn.append_basic_block("go")
        b.cbranch(null, bad, go)
        b.position_at_end(bad)
        b.ret(answer)
        b.position_at_end(go)

    def words(self, desc: ll.Value, name: str) -> Words:
        return [self.field(desc, name, I32, c) for c in range(4)]

    def pack(self, words: Words) -> ll.Value:
        """Four words as one value of words_type (to return them)."""
        b = self.b
        out = ll.Constant(words_type(self.lanes), None)
        for c, w in enumerate(words):
            if self.lanes == 1:
                out = b.insert_element(out, w, _i32(c))
            else:
                out = b.insert_value(out, b.splat(w), c)
        return out

    def unpack(self, v: ll.Value) -> Words:
        b = self.b
        if self.lanes == 1:
            return [b.extract_element(v, _i32(c)) for c in range(4)]
        return [b.extract_value(v, c) for c in range(4)]

    def store_words(self, out: ll.Value, words: Words) -> None:
        """The result words to `out` (4 x i32, or 4 x <lanes x i32> one after the other)."""
        b = self.b
        for k, w in enumerate(words):
            b.store(b.splat(w), self.at(out, 4 * self.lanes * k), align=4)

    # -- intrinsics
    def fmin(self, a, c):
        return self.b.intrinsic("llvm.minnum", [a, c], F32)

    def fmax(self, a, c):
        return self.b.intrinsic("llvm.maxnum", [a, c], F32)

    def fabs(self, a):
        return self.b.intrinsic("llvm.fabs", [a], F32)

    def floor64(self, a):
        return self.b.intrinsic("llvm.floor", [a], F64)

    def fptosi_sat(self, a: ll.Value, t: ll.IntType) -> ll.Value:
        """llvm.fptosi.sat: NaN is 0, values beyond the integer type its extremes. A warp's
        lanes clamp and convert (LLVM's x86 code for the vector intrinsic goes lane by lane:
        a fifth of a 2D linear sample's time)."""
        b = self.b
        if lanes_of(a) == 1:
            return b.intrinsic("llvm.fptosi.sat", [a], t, overload_ret=True)
        ft = scalar_type(a.type)
        lo, hi = ll.Constant(ft, -2.0 ** (t.width - 1)), ll.Constant(ft, 2.0 ** (t.width - 1))
        big = b.fcmp_ordered(">=", a, hi)
        x = b.select(b.fcmp_ordered("<", a, lo), lo, a)
        x = b.select(b.or_(big, b.fcmp_unordered("uno", a, a)), ll.Constant(ft, 0.0), x)
        return b.select(big, ll.Constant(t, (1 << (t.width - 1)) - 1), b.fptosi(x, t))

    def smin(self, a, c):
        return self.b.select(self.b.icmp_signed("<", a, c), a, c)

    def smax(self, a, c):
        return self.b.select(self.b.icmp_signed(">", a, c), a, c)

    def umin(self, a, c):
        return self.b.select(self.b.icmp_unsigned("<", a, c), a, c)

    def floor_mod(self, x: ll.Value, p: ll.Value) -> ll.Value:
        """x mod p in [0, p), for an integer x and a positive p (i32 or i64, p < 2^28 for
        i32, 2^42 for i64). Per thread srem; a warp's lanes (x86 has no vector division):
        one step where they all lie within a period of [0, p) (a coordinate a little
        outside the texture, the texel after the last), else through an f64 quotient, exact
        where |x| < 2^52 (below), else srem lane by lane."""
        b = self.b
        t = scalar_type(x.type)

        def by_srem() -> list[ll.Value]:
            d = p
            if lanes_of(p) > 1 and b.mask is not None:  # a lane that does not execute may hold 0
                d = b.select(b.mask, p, ll.Constant(t, 1))
            r = b.srem(x, d)
            return [b.select(b.icmp_signed("<", r, ll.Constant(t, 0)), b.add(r, p), r)]

        if lanes_of(x) == 1 and lanes_of(p) == 1:
            return by_srem()[0]

        def by_f64() -> list[ll.Value]:
            # x * (1 / p), two roundings, errs by less than |x / p| 2^-52 < 1 / p (|x| < 2^52,
            # exact in f64), less than the distance from x / p to the next integer above
            # unless x / p is an integer, which it may fall short of (x = p = 49): then
            # floor() is one less and r = p
            pf = b.sitofp(p, F64)
            q = self.fptosi_sat(self.floor64(b.fmul(b.sitofp(x, F64), b.fdiv(_f64(1.0), pf))), t)
            r = b.sub(x, b.mul(q, p))
            return [b.select(b.icmp_signed(">=", r, p), b.sub(r, p), r)]

        def by_step() -> list[ll.Value]:
            r = b.select(b.icmp_signed("<", x, ll.Constant(t, 0)), b.add(x, p), x)
            return [b.select(b.icmp_signed(">=", r, p), b.sub(r, p), r)]

        def far() -> list[ll.Value]:
            if t.width == 32:
                return by_f64()
            # i64: exact in f64 only within 2^52 (a coordinate beyond 2^44 texels, or infinite)
            near = b.icmp_unsigned("<", b.add(x, _i64(1 << 52)), _i64(1 << 53))
            return self.branch(b.any(b.not_(near)), by_srem, by_f64)

        # -p <= x < 2p (x + p wrapping past the type's maximum is not)
        within = b.icmp_unsigned("<", b.add(x, p), b.mul(p, ll.Constant(t, 3)))
        return self.branch(b.any(b.not_(within)), far, by_step)[0]

    def fixed(self, u: ll.Value) -> ll.Value:
        """A level of detail (f32) -> fixed point with 8 fractional bits (i32), per SNAP."""
        scaled = self.b.fmul(u, _f32(float(_FRAC)))
        name = "llvm.rint" if SNAP == "nearest" else "llvm.floor"
        rounded = self.b.intrinsic(name, [scaled], F32)
        return self.fptosi_sat(rounded, I32)

    def texel_fixed(self, u: ll.Value, n: ll.Value, normalized: ll.Value,
                    linear: ll.Value) -> ll.Value:
        """Coordinate (f32) -> texel-space fixed point with 8 fractional bits (i64), minus half
        a texel when linear, as the H200 forms it: an unnormalized x exactly (point: floor,
        linear: (x - 0.5) * 256 rounded ties up); a normalized u truncated to F fraction
        bits, q = floor(u * 2^F) (F = 21 for sizes up to 4096, else 22; |q| <= 2^46), times
        the size exactly. Denormals are zero, NaN is 0, infinities saturate (|x| <= 2^62)."""
        b = self.b
        tiny = b.fcmp_ordered("<", self.fabs(u), _f32(2.0**-126))
        u = b.fpext(b.select(tiny, _f32(0.0), u), F64)

        def unnormalized() -> list[ll.Value]:
            # floor(x * 256 + 1/2) (linear) or floor(x * 256), exact in f64
            half = b.select(linear, _f64(0.5), _f64(0.0))
            plain = self.fptosi_sat(self.floor64(b.fadd(b.fmul(u, _f64(256.0)), half)), I64)
            plain = b.select(b.icmp_signed(">", plain, _i64(1 << 62)), _i64(1 << 62), plain)
            return [b.select(b.icmp_signed("<", plain, _i64(-(1 << 62))), _i64(-(1 << 62)), plain)]

        def scaled() -> list[ll.Value]:
            # q * n / 2^(F - 8), rounded the same way (i64; q kept below 2^40)
            small = b.icmp_unsigned("<=", n, _i32(NORM_SMALL_SIZE))
            fbits = b.select(small, _i64(NORM_FRACTION_BITS), _i64(NORM_FRACTION_BITS + 1))
            scale = b.select(small, _f64(2.0**NORM_FRACTION_BITS),
                             _f64(2.0**(NORM_FRACTION_BITS + 1)))
            q = self.fptosi_sat(self.floor64(b.fmul(u, scale)), I64)
            q = b.select(b.icmp_signed(">", q, _i64(1 << 46)), _i64(1 << 46), q)
            q = b.select(b.icmp_signed("<", q, _i64(-(1 << 46))), _i64(-(1 << 46)), q)
            shift = b.sub(fbits, _i64(T.SUBTEXEL_BITS))
            rnd = b.select(linear, b.shl(_i64(1), b.sub(shift, _i64(1))), _i64(0))
            return [b.ashr(b.add(b.mul(q, b.zext(n, I64)), rnd), shift)]

        fx = self.branch(normalized, scaled, unnormalized)[0]
        return b.select(linear, b.sub(fx, _i64(_FRAC // 2)), fx)

    def axis_fixed(self, u: ll.Value, n: ll.Value, mode: ll.Value, normalized: ll.Value,
                   linear: ll.Value, clamp_coordinate: bool = True) -> ll.Value:
        """texel_fixed as i32: wrap and mirror reduce it modulo their period first; in clamp
        mode the linear filter's coordinate stays within the first and last texel (the
        weights of a clamped axis are 256 and 0, as the H200's 3D weights show). A warp's
        unnormalized coordinates on an axis that does not wrap: see held_fixed."""
        b = self.b
        mirror = b.icmp_unsigned("==", mode, _i32(T.ADDRESS_MIRROR))
        periodic = b.or_(mirror, b.icmp_unsigned("==", mode, _i32(T.ADDRESS_WRAP)))
        clamp = ll.Constant(I1, 0)
        if clamp_coordinate:
            clamp = b.and_(linear, b.icmp_unsigned("==", mode, _i32(T.ADDRESS_CLAMP)))

        def exact() -> list[ll.Value]:
            fx = self.texel_fixed(u, n, normalized, linear)
            period = b.mul(b.zext(b.select(mirror, b.shl(n, _i32(1)), n), I64), _i64(_FRAC))
            fx = self.branch(periodic, lambda: [self.floor_mod(fx, period)], lambda: [fx])[0]
            last = b.mul(b.zext(b.sub(n, _i32(1)), I64), _i64(_FRAC))
            held = b.select(b.icmp_signed("<", fx, _i64(0)), _i64(0),
                            b.select(b.icmp_signed(">", fx, last), last, fx))
            fx = b.select(clamp, held, fx)
            fx = b.select(b.icmp_signed(">", fx, _i64(2**31 - 1)), _i64(2**31 - 1), fx)
            fx = b.select(b.icmp_signed("<", fx, _i64(-(2**31))), _i64(-(2**31)), fx)
            return [b.trunc(fx, I32)]

        if lanes_of(u) == 1:
            return exact()[0]
        return self.branch(b.or_(normalized, periodic), exact,
                           lambda: [self.held_fixed(u, n, linear, clamp)])[0]

    def texel_centres(self, us: list[ll.Value], modes: list[ll.Value], normalized: ll.Value
                      ) -> tuple[ll.Value, list[ll.Value]] | None:
        """For a warp: (whether every executing lane's unnormalized coordinates on axes that do
        not wrap are texel centres i + 0.5 (convolutionTexture's x + 0.5; |i| <= 2^23, as
        every such f32 is), i per axis as i32): axis_fixed would give 256 i (linear: one
        tap, at texel i) or 256 i + 128 (point: texel i), clamped where the linear filter
        clamps to what the clamp address mode gives i. None where that cannot hold (per
        thread, normalized, wrap or mirror known). Each axis's f64 lanes and address modes
        were a third of a centred sample."""
        b = self.b
        plain = b.xor(normalized, ll.Constant(I1, 1))
        for m in modes:
            plain = b.and_(plain, b.and_(b.icmp_unsigned("!=", m, _i32(T.ADDRESS_WRAP)),
                                         b.icmp_unsigned("!=", m, _i32(T.ADDRESS_MIRROR))))
        if self.lanes == 1 or constant_int(plain) == 0:
            return None
        floors, ok = [], ll.Constant(I1, 1)
        for u in us:
            fl = b.intrinsic("llvm.floor", [u], F32)
            # u - floor(u), u's fraction, is exact: 0.5 only for an integer plus a half (not
            # for a denormal, an infinity (NaN) or NaN)
            ok = b.and_(ok, b.fcmp_ordered("==", b.fsub(u, fl), _f32(0.5)))
            floors.append(fl)
        go = b.and_(plain, b.not_(b.any(b.not_(ok))))
        # (poison in a lane that does not execute, as any of its values may be; the ones
        # that do are integers of at most 2^23 where go holds)
        return go, [b.fptosi(fl, I32) for fl in floors]

    def held_fixed(self, u: ll.Value, n: ll.Value, linear: ll.Value, clamp: ll.Value) -> ll.Value:
        """axis_fixed of an unnormalized coordinate on an axis that does not wrap, clamped in
        f64 and converted to i32 once: texel_fixed's floor is exact in f64, and every value
        its i64 steps give beyond i32 (or beyond [0, last] where `clamp`) clamps to the same
        end (a warp's i64 lanes took twice the vectors, and half of a centred sample)."""
        b = self.b
        tiny = b.fcmp_ordered("<", self.fabs(u), _f32(2.0**-126))
        x = b.fpext(b.select(tiny, _f32(0.0), u), F64)
        v = self.floor64(b.fadd(b.fmul(x, _f64(256.0)), b.select(linear, _f64(0.5), _f64(0.0))))
        v = b.select(b.fcmp_unordered("uno", v, v), _f64(0.0), v)  # NaN reads as 0
        v = b.fsub(v, b.select(linear, _f64(_FRAC // 2), _f64(0.0)))
        top = _f64(2.0**31 - 1)
        last = b.fmul(b.uitofp(b.sub(n, _i32(1)), F64), _f64(float(_FRAC)))
        hi = b.select(clamp, self.b.intrinsic("llvm.minnum", [last, top], F64), top)
        lo = b.select(clamp, _f64(0.0), _f64(-2.0**31))
        v = b.intrinsic("llvm.minnum", [b.intrinsic("llvm.maxnum", [v, lo], F64), hi], F64)
        return b.fptosi(v, I32)

    # -- control flow
    def branch(self, cond: ll.Value, then: Build, otherwise: Build) -> list[ll.Value]:
        """then() if cond else otherwise(), each a list of values. A uniform (scalar) cond
        branches; one that varies between lanes computes both sides, lane by lane, so each
        side must be safe to compute for every lane. A constant cond builds its side only."""
        k = constant_int(cond)
        if k is not None:
            return then() if k else otherwise()
        if lanes_of(cond) > 1:
            tv, ev = then(), otherwise()
            return [self.b.select(cond, x, y) for x, y in zip(tv, ev, strict=True)]
        tb = self.fn.append_basic_block("then")
        eb = self.fn.append_basic_block("else")
        self.b.cbranch(cond, tb, eb)
        return self._join([(tb, then), (eb, otherwise)])

    def switch(self, key: ll.Value, cases: dict[int | tuple[int, ...], Build],
               default: Build) -> list[ll.Value]:
        """The values cases[key]() builds (a tuple: for any of its keys; default() for any
        other key); key is uniform. A constant key builds its case only."""
        k = constant_int(key)
        if k is not None:
            for ks, build in cases.items():
                if k in (ks if isinstance(ks, tuple) else (ks,)):
                    return build()
            return default()
        db = self.fn.append_basic_block("default")
        sw = self.b.switch(key, db)
        arms = [(db, default)]
        for ks, build in cases.items():
            blk = self.fn.append_basic_block("case")
            for k in ks if isinstance(ks, tuple) else (ks,):
                sw.add_case(ll.Constant(key.type, k), blk)
            arms.append((blk, build))
        return self._join(arms)

    def each_value(self, k: ll.Value, body: Callable[[ll.Value], list[ll.Value]]
                   ) -> list[ll.Value]:
        """body(v) -> values for each distinct value v (a scalar) of k among the executing
        lanes, run under the mask of the lanes that hold it, the results lane by lane (a
        warp samples the mip levels its lanes chose one after the other); body(k) where k
        is uniform. Lanes that do not execute get 0."""
        if lanes_of(k) == 1:
            return body(k)
        b, n = self.b, self.lanes
        it = ll.IntType(n)
        outer = b.mask
        start = b.ir.bitcast(outer, it)
        pre = b.block
        head = self.fn.append_basic_block("values")
        step = self.fn.append_basic_block("value")
        done = self.fn.append_basic_block("values_done")
        b.branch(head)
        b.position_at_end(head)
        rem = b.phi(it)
        b.cbranch(b.icmp_unsigned("==", rem, ll.Constant(it, 0)), done, step)
        b.position_at_end(step)
        left = b.bitcast(rem, vec(I1, n))
        v = b.extract_element(k, b.cttz(rem, ll.Constant(I1, 1)))
        mine = b.select(left, b.icmp_unsigned("==", k, v), ll.Constant(vec(I1, n), [0] * n))
        b.mask = mine
        try:
            results = [b.splat(r) for r in body(v)]
        finally:
            b.mask = outer
        end = b.block
        b.position_at_start(head)
        accs = [b.phi(r.type) for r in results]
        b.position_at_end(end)
        nxt = [b.select(mine, r, acc) for r, acc in zip(results, accs, strict=True)]
        rest = b.and_(rem, b.not_(b.ir.bitcast(mine, it)))
        b.branch(head)
        rem.add_incoming(start, pre)
        rem.add_incoming(rest, end)
        for acc, x in zip(accs, nxt, strict=True):
            acc.add_incoming(ll.Constant(acc.type, None), pre)
            acc.add_incoming(x, end)
        b.position_at_end(done)
        return accs

    def _join(self, arms: list[tuple[ll.Block, Build]]) -> list[ll.Value]:
        """Build each arm in its block and join their values with phis (at the widest shape
        any arm gives a value)."""
        b = self.b
        ends = []
        for blk, build in arms:
            b.position_at_end(blk)
            ends.append((build(), b.block))
        widths = [max(lanes_of(vals[i]) for vals, _ in ends) for i in range(len(ends[0][0]))]
        jb = self.fn.append_basic_block("join")
        for vals, end in ends:
            b.position_at_end(end)
            vals[:] = [b.splat(v, n) for v, n in zip(vals, widths, strict=True)]
            b.branch(jb)
        b.position_at_end(jb)
        out = []
        for i in range(len(widths)):
            p = b.phi(ends[0][0][i].type)
            for vals, end in ends:
                p.add_incoming(vals[i], end)
            out.append(p)
        return out


def _get(module: ll.Module, name: str, build) -> ll.Function:
    try:
        return module.get_global(name)
    except KeyError:
        return build()


# -- channel decode and texel fetch --------------------------------------------------------

def _srgb(f: _Fn, byte: ll.Value) -> ll.Value:
    """The linear value (f32) of an sRGB-encoded byte (i8), from a table in the module."""
    module, b = f.module, f.b
    try:
        table = module.get_global("cuport_srgb_table")
    except KeyError:
        table = ll.GlobalVariable(module, ll.ArrayType(F32, 256), name="cuport_srgb_table")
        table.linkage = "internal"
        table.global_constant = True
        table.initializer = ll.Constant(ll.ArrayType(F32, 256), [_f32(v) for v in srgb_table()])
    index = b.zext(byte, I32)
    if lanes_of(index) == 1:
        return b.load(b.gep(table, [_i32(0), index]), typ=F32)
    return b.load(f.at(table, b.mul(b.zext(index, I64), _i64(4))), typ=F32)


#: decodes to floats in [0, 1] or [-1, 1] -> (the stored integer's scale, signed)
_NORMALIZED = {T.DECODE_UNORM8: (255.0, False), T.DECODE_SNORM8: (127.0, True),
               T.DECODE_UNORM16: (65535.0, False), T.DECODE_SNORM16: (32767.0, True)}
_INTEGER = {T.DECODE_U8: False, T.DECODE_S8: True, T.DECODE_U16: False, T.DECODE_S16: True}


def _decode(f: _Fn, raw: ll.Value, decode: ll.Value) -> ll.Value:
    """One stored channel (zero-extended to i32; its width CHANNEL_BYTES[decode]) as a result
    word, per the uniform `decode` (an unknown one: the bits as they are). The 8/16-bit
    formats share one path each, told apart by scalars: the sign, the width, the scale."""
    b = f.b
    signed, scale, shift = ll.Constant(I1, 0), _f32(1.0), _i32(0)
    for code, (sc, sgn) in _NORMALIZED.items():
        this = b.icmp_unsigned("==", decode, _i32(code))
        scale = b.select(this, _f32(sc), scale)
        signed = b.or_(signed, b.and_(this, ll.Constant(I1, int(sgn))))
    for code, sgn in _INTEGER.items():
        signed = b.or_(signed, b.and_(b.icmp_unsigned("==", decode, _i32(code)),
                                      ll.Constant(I1, int(sgn))))
    for code, nbytes in T.CHANNEL_BYTES.items():
        if nbytes < 4:
            shift = b.select(b.icmp_unsigned("==", decode, _i32(code)), _i32(32 - 8 * nbytes),
                             shift)

    def extended() -> ll.Value:  # sign-extended from its width where signed
        wide = b.ashr(b.shl(raw, shift), shift)
        return b.select(signed, wide, raw)

    def word(x: ll.Value) -> list[ll.Value]:
        return [b.bitcast(x, I32)]

    def normalized() -> list[ll.Value]:
        x = b.select(signed, b.sitofp(extended(), F32), b.uitofp(raw, F32))
        return word(f.fmax(b.fdiv(x, scale), _f32(-1.0)))  # max: -128 / 127 reads as -1

    cases = {
        T.DECODE_F16: lambda: word(b.fpext(b.bitcast(b.trunc(raw, I16), F16), F32)),
        T.DECODE_SRGB8: lambda: word(_srgb(f, b.trunc(raw, I8))),
        tuple(_NORMALIZED): normalized,
        tuple(_INTEGER): lambda: [extended()],
    }
    return f.switch(decode, cases, lambda: [raw])[0]


def _texel_offset(f: _Fn, desc, lvl, x: ll.Value, y: ll.Value, z: ll.Value
                  ) -> tuple[ll.Value, ll.Value | None]:
    """(bytes (i64) from a level's first texel to element (x, y, z) of it (indices inside the
    level, z counting slices and layers), for a warp whether the executing lanes' elements
    follow each other 4 bytes apart in runs (LaneBuilder.runs_of), else None). A warp's
    lanes compute both in i32 where the level's sum of extents (slices, rows, a row's
    elements) is below 2^31 bytes: half the vectors of i64 lanes, and no 64-bit multiplies
    (a tenth of a centred sample)."""
    b = f.b
    elem = b.zext(f.field(desc, "elem_bytes"), I64)
    spitch, rpitch = f.lfield(lvl, "slice_pitch", I64), f.lfield(lvl, "row_pitch", I64)

    def wide() -> list[ll.Value]:
        off = b.add(b.mul(z, spitch), b.add(b.mul(y, rpitch), b.mul(x, elem)))
        return [off, b.runs_of(off)] if f.lanes > 1 else [off]

    if f.lanes == 1:
        return wide()[0], None

    def narrow() -> list[ll.Value]:
        def i32(v: ll.Value) -> ll.Value:
            return b.trunc(v, I32)

        off = b.add(b.mul(i32(z), i32(spitch)), b.add(b.mul(i32(y), i32(rpitch)),
                                                      b.mul(i32(x), i32(elem))))
        return [b.zext(off, I64), b.runs_of(off)]

    def extent(n: ll.Value, pitch: ll.Value) -> ll.Value:
        return b.mul(b.zext(n, I64), pitch)  # (each below 2^32 times a pitch below 2^32)

    # (the level's memory exists: slices times their pitch does not wrap)
    slices = b.mul(b.zext(f.lfield(lvl, "depth"), I64), b.zext(f.field(desc, "layers"), I64))
    bound = b.add(b.mul(slices, spitch), b.add(extent(f.lfield(lvl, "height"), rpitch),
                                               extent(f.lfield(lvl, "width"), elem)))
    small = b.and_(b.icmp_unsigned("<", bound, _i64(1 << 31)),
                   b.icmp_unsigned("<", b.or_(spitch, rpitch), _i64(1 << 31)))
    off, runs = f.branch(small, narrow, wide)
    return off, runs


def _fetch_fn(module: ll.Module, lanes: int = 1, spec: T.Sampling | None = None,
              decode_as: int | None = None) -> ll.Function:
    """words fetch(ptr desc, ptr level, i64 x, i64 y, i64 z, i32 decode): one element's
    result words (channels decoded by `decode`, normally the descriptor's; an unknown one
    reads bytes); the indices are inside the level (z counts 3D slices and layers alike).
    Per warp: x, y, z per lane. With a spec, `decode_as` is the decode, a constant."""
    name = shaped("cuport_tex_fetch" + ("" if decode_as is None else f"_d{decode_as}"), lanes, spec)

    def build() -> ll.Function:
        f = _Fn(module, name, words_type(lanes),
                [PTR, PTR] + [lane_type(I64, lanes)] * 3 + [I32], lanes, spec)
        b = f.b
        desc, lvl, x, y, z, decode = f.args
        if decode_as is not None:
            decode = _i32(decode_as)
        channels = f.field(desc, "channels")
        off, runs = _texel_offset(f, desc, lvl, x, y, z)
        base = b.inttoptr(b.add(f.lfield(lvl, "data", I64), off), PTR)
        # the channel width from the decode: 4, 2 or 1 bytes
        width = _i32(1)
        for code, nbytes in T.CHANNEL_BYTES.items():
            if nbytes != 1:
                width = b.select(b.icmp_unsigned("==", decode, _i32(code)), _i32(nbytes), width)

        def channel(c: int) -> list[ll.Value]:
            def load(nbytes: int) -> Build:
                def build_raw() -> list[ll.Value]:
                    raw = b.load(f.at(base, b.mul(_i64(c), b.zext(width, I64))),
                                 typ=ll.IntType(8 * nbytes), align=1,
                                 runs=True if runs is None else runs)
                    return [b.zext(raw, I32) if nbytes < 4 else raw]

                return build_raw

            raw = f.switch(width, {4: load(4), 2: load(2)}, load(1))[0]
            dc = decode
            if c == 3:  # alpha of sRGB data is linear
                dc = b.select(b.icmp_unsigned("==", decode, _i32(T.DECODE_SRGB8)),
                              _i32(T.DECODE_UNORM8), decode)
            return [_decode(f, raw, dc)]

        out = []
        for c in range(4):
            # a channel the format lacks is never loaded (it may lie past the allocation)
            out += f.branch(b.icmp_unsigned("<", _i32(c), channels), lambda c=c: channel(c),
                            lambda c=c: [f.field(desc, "fill", I32, c)])
        b.ret(f.pack(out))
        return f.fn

    return _get(module, name, build)


# -- addressing ----------------------------------------------------------------------------

def _resolve(f: _Fn, i: ll.Value, n: ll.Value, mode: ll.Value) -> tuple[ll.Value, ll.Value]:
    """Texel index i on an axis of n texels under an address mode -> (index in [0, n), inside)."""
    b = f.b
    zero = _i32(0)
    true = ll.Constant(I1, 1)

    def clamped() -> list[ll.Value]:
        return [f.smax(f.smin(i, b.sub(n, _i32(1))), zero), true]

    def wrapped() -> list[ll.Value]:
        return [f.floor_mod(i, n), true]

    def mirrored() -> list[ll.Value]:
        n2 = b.shl(n, _i32(1))
        m = f.floor_mod(i, n2)
        return [b.select(b.icmp_signed(">=", m, n), b.sub(b.sub(n2, _i32(1)), m), m), true]

    def border() -> list[ll.Value]:
        inside = b.and_(b.icmp_signed(">=", i, zero), b.icmp_signed("<", i, n))
        return [b.select(inside, i, zero), inside]

    idx, ok = f.switch(mode, {T.ADDRESS_WRAP: wrapped, T.ADDRESS_MIRROR: mirrored,
                              T.ADDRESS_BORDER: border}, clamped)
    return idx, ok


def _tap(f: _Fn, desc, lvl, idx: list, ok: list, layer: ll.Value,
         decode: ll.Value | None = None, inline: bool = False) -> Words:
    """Result words of the texel at per-axis (index, inside) pairs: fetched (in place where
    `inline`: point sampling and the float filter, whose fetches in a warp's function then
    overlap: bench texconv 320 -> 265 ms, compile 0.8 -> 1.0 s), or the border."""
    b = f.b
    if decode is None:
        decode = f.field(desc, "decode")
    fetch = _fetch_fn(f.module, f.lanes, f.spec, constant_int(decode) if f.spec else None)
    x = b.zext(idx[0], I64)
    y = b.zext(idx[1], I64) if len(idx) > 1 else _i64(0)
    z = b.zext(idx[2], I64) if len(idx) > 2 else _i64(0)
    z = b.add(z, b.zext(layer, I64))
    inside = _all(f, ok)
    words = f.unpack(f.call(fetch, [desc, lvl, x, y, z, decode], inline))
    if constant_int(inside) == 1:  # no address mode here has a border
        return words

    def bordered() -> list[ll.Value]:
        return [b.select(inside, w, bw) for w, bw in zip(words, f.words(desc, "border"), strict=True)]

    if f.lanes == 1:
        return bordered()
    # a warp whose texels are all inside (every one in clamp mode) skips the selects
    return f.branch(b.any(b.not_(inside)), bordered, lambda: words)


def _all(f: _Fn, ok: list[ll.Value]) -> ll.Value:
    """Whether every axis's index is inside the texture (i1, per lane)."""
    inside = ok[0]
    for o in ok[1:]:
        inside = f.b.and_(inside, o)
    return inside


def _blend(f: _Fn, taps: list[tuple[ll.Value, Words]], scale: float) -> Words:
    """Sum of weight (i32) x texel (f32 words) in double, times scale, rounded to f32 words."""
    b = f.b
    acc = [_f64(0.0)] * 4
    for w, words in taps:
        wd = b.uitofp(w, F64)
        nonzero = b.icmp_unsigned("!=", w, _i32(0))
        for c in range(4):
            v = b.fpext(b.bitcast(words[c], F32), F64)
            # a tap of weight 0 does not contribute, even when it holds an infinity or NaN
            acc[c] = b.fadd(acc[c], b.select(nonzero, b.fmul(wd, v), _f64(0.0)))
    return [b.bitcast(b.fptrunc(b.fmul(acc[c], _f64(scale)), F32), I32) for c in range(4)]


def _corner_weights(f: _Fn, fracs: list[ll.Value]) -> dict[tuple, ll.Value]:
    """Per-axis 8-bit fractions (i32) -> {corner: i32 weight}, the weights summing to 256, as
    the H200 splits them: z first (256 - c, c); each part P along x into q8(P a) and the
    rest; each (x, z) part P along y: x = 1 into q8(P b) (y = 1) and the rest, x = 0 into
    q8(P (256 - b)) (y = 0) and the rest; q8(p) = (p + 128) >> 8. In 2D (c = 0): W11 =
    q8(a b), W10 = a - W11, W01 = b - W11, W00 the rest."""
    b = f.b
    dims = len(fracs)
    a = fracs[0]
    by = fracs[1] if dims > 1 else _i32(0)
    c = fracs[2] if dims > 2 else _i32(0)

    def q8(p: ll.Value) -> ll.Value:
        return b.lshr(b.add(p, _i32(_FRAC // 2)), _i32(T.SUBTEXEL_BITS))

    out = {}
    for z, zw in ((0, b.sub(_i32(_FRAC), c)), (1, c)):
        if dims < 3 and z:
            continue
        p1 = q8(b.mul(zw, a))
        for x, p in ((0, b.sub(zw, p1)), (1, p1)):
            if dims < 2:
                out[(x,)] = p
                continue
            if x:
                hi = q8(b.mul(p, by))
                lo = b.sub(p, hi)
            else:
                lo = q8(b.mul(p, b.sub(_i32(_FRAC), by)))
                hi = b.sub(p, lo)
            out[(x, 0, z)[:dims]] = lo
            out[(x, 1, z)[:dims]] = hi
    return out


def _pow2(f: _Fn, e: ll.Value) -> ll.Value:
    """2^e as f64 for an i32 e in the normal range."""
    b = f.b
    return b.bitcast(b.shl(b.zext(b.add(e, _i32(1023)), I64), _i64(52)), F64)


def _filter_float(f: _Fn, taps: list[tuple[ll.Value, ll.Value]], half: ll.Value) -> ll.Value:
    """One channel of the linear filter on float texels, as the H200 does it: the texels of
    nonzero weight are truncated toward zero to multiples of 2^(E - p - 3) (E the largest
    exponent among them, p = 24, or 11 for half textures (`half`)), the weighted sum of
    those (exact) rounds once to p bits, ties away from zero. f32: denormal texels and
    results are zero; half: the result is a half (its denormals kept, overflow infinite).
    Any NaN among them gives NaN (0x7fffffff), infinities of both signs too.
    taps: (i32 weight, f32 value); the weights sum to 256. Returns the f32 word."""
    b = f.b
    false, true = ll.Constant(I1, 0), ll.Constant(I1, 1)
    prec = b.select(half, _i32(11), _i32(24))
    emax, nan, pinf, ninf, all_neg = _i32(0), false, false, false, true
    parts = []
    for w, v in taps:
        act = b.icmp_unsigned("!=", w, _i32(0))
        bits = b.bitcast(v, I32)
        e = b.and_(b.lshr(bits, _i32(23)), _i32(0xFF))
        special = b.icmp_unsigned("==", e, _i32(0xFF))
        mant0 = b.icmp_unsigned("==", b.and_(bits, _i32(0x7FFFFF)), _i32(0))
        neg = b.icmp_signed("<", bits, _i32(0))
        nan = b.or_(nan, b.and_(act, b.and_(special, b.not_(mant0))))
        inf = b.and_(act, b.and_(special, mant0))
        pinf = b.or_(pinf, b.and_(inf, b.not_(neg)))
        ninf = b.or_(ninf, b.and_(inf, neg))
        live = b.and_(act, b.and_(b.not_(special), b.icmp_unsigned("!=", e, _i32(0))))
        emax = b.select(b.and_(live, b.icmp_unsigned(">", e, emax)), e, emax)
        all_neg = b.and_(all_neg, b.or_(b.not_(act), neg))
        parts.append((w, v, live))
    # texels in units of 2^(E - p - 3): |t| < 2^(p + 4), exact in f64; fptosi truncates
    unit = b.sub(b.sub(emax, _i32(127)), b.add(prec, _i32(3)))
    up = _pow2(f, b.sub(_i32(0), unit))
    s = _i64(0)
    for w, v, live in parts:
        t = b.fptosi(b.fmul(b.fpext(v, F64), up), I64)
        s = b.add(s, b.select(live, b.mul(b.zext(w, I64), t), _i64(0)))
    neg_s = b.icmp_signed("<", s, _i64(0))
    m = b.select(neg_s, b.sub(_i64(0), s), s)
    length = b.trunc(b.sub(_i64(64), b.intrinsic("llvm.ctlz", [m], I64, immediate=(false,))), I32)
    sc = b.sub(unit, _i32(T.SUBTEXEL_BITS))  # the exponent of m's unit (the weights' 1/256)
    min_exp = b.select(half, _i32(-24), _i32(-149))
    sh = f.smax(b.sub(length, prec), b.sub(min_exp, sc))
    sh = f.smin(f.smax(sh, _i32(0)), _i32(62))
    sh64 = b.zext(sh, I64)
    rnd = b.select(b.icmp_signed(">", sh, _i32(0)), b.shl(_i64(1), b.sub(sh64, _i64(1))), _i64(0))
    m = b.lshr(b.add(m, rnd), sh64)
    r = b.fptrunc(b.fmul(b.uitofp(m, F64), _pow2(f, b.add(sc, sh))), F32)
    mag = f.fabs(r)
    r = b.select(b.and_(half, b.fcmp_ordered(">", mag, _f32(65504.0))), _f32(float("inf")), r)
    r = b.select(b.and_(b.not_(half), b.fcmp_ordered("<", mag, _f32(2.0**-126))), _f32(0.0), r)
    r = b.select(neg_s, b.fneg(r), r)
    zero = b.select(all_neg, _f32(-0.0), _f32(0.0))
    r = b.select(b.icmp_unsigned("==", emax, _i32(0)), zero, r)
    word = b.bitcast(r, I32)
    word = b.select(ninf, b.bitcast(_f32(float("-inf")), I32), word)
    word = b.select(pinf, b.bitcast(_f32(float("inf")), I32), word)
    return b.select(b.or_(nan, b.and_(pinf, ninf)), _i32(0x7FFFFFFF), word)


def _filter_one(f: _Fn, v: ll.Value, half: ll.Value) -> ll.Value:
    """_filter_float of one tap of weight 256, v (f32): for an f32 texture the texel itself
    (its 24 bits truncate and round to themselves), but a denormal reads as a zero of its
    sign and a NaN as 0x7fffffff; a half texture's taps (a border color may have more bits
    than a half) go through _filter_float."""
    b = f.b

    bits = b.bitcast(v, I32)

    def special() -> list[ll.Value]:
        e = b.and_(b.lshr(bits, _i32(23)), _i32(0xFF))
        nan = b.and_(b.icmp_unsigned("==", e, _i32(0xFF)),
                     b.icmp_unsigned("!=", b.and_(bits, _i32(0x7FFFFF)), _i32(0)))
        word = b.select(b.icmp_unsigned("==", e, _i32(0)), b.and_(bits, _i32(1 << 31)), bits)
        return [b.select(nan, _i32(0x7FFFFFFF), word)]

    def single() -> list[ll.Value]:
        if lanes_of(v) == 1:
            return special()
        # a warp whose texels are all normal numbers (exponent neither 0 nor 255: the
        # exponent field minus one, unsigned, below 254) reads them as they are
        e = b.and_(bits, _i32(0x7F800000))
        odd = b.icmp_unsigned(">=", b.sub(e, _i32(0x00800000)), _i32(0x7F000000))
        return f.branch(b.any(odd), special, lambda: [bits])

    return f.branch(half, lambda: [_filter_float(f, [(_i32(_FRAC), v)], half)], single)[0]


def _filter_call(f: _Fn, kind: str, taps: list[tuple[ll.Value, ll.Value]],
                 extra: list[ll.Value]) -> ll.Value:
    """_filter_float (kind "float", extra [half]) or _filter_int ("int", [scale, signed]) of
    one channel. Trilinear (eight taps): as a function of the module, built once per kind and
    shape and called for each channel (a kernel sampling a 3D texture compiles in 1.15 s
    instead of 1.5); fewer taps in place (a call costs a 2D linear sample 9% of its time)."""
    if len(taps) <= 4:
        return _filter_float(f, taps, extra[0]) if kind == "float" else _filter_int(f, taps, *extra)
    # with a spec the extra operands follow from the descriptor's decode: constants
    known = f.spec is not None and all(isinstance(e, ll.Constant) for e in extra)
    name = shaped(f"cuport_tex_filter_{kind}{len(taps)}", f.lanes, f.spec if known else None)
    value_t = F32 if kind == "float" else I32

    def build() -> ll.Function:
        g = _Fn(f.module, name, f.vary(I32), [f.vary(I32), f.vary(value_t)] * len(taps)
                + [t.type for t in extra], f.lanes)
        args = list(g.args)
        pairs = [(args[2 * k], args[2 * k + 1]) for k in range(len(taps))]
        rest = extra if known else args[2 * len(taps):]
        if kind == "float":
            word = _filter_float(g, pairs, rest[0])
        else:
            word = _filter_int(g, pairs, rest[0], rest[1])
        g.b.ret(g.b.splat(word))
        return g.fn

    fn = _get(f.module, name, build)
    return f.call(fn, [x for pair in taps for x in pair] + extra)


#: decode when read as normalized floats -> (decode giving the stored integer, scale)
_INT_FILTER = {T.DECODE_UNORM8: (T.DECODE_U8, 65535), T.DECODE_SNORM8: (T.DECODE_S8, 32767),
               T.DECODE_UNORM16: (T.DECODE_U16, 65535), T.DECODE_SNORM16: (T.DECODE_S16, 32767)}


def _tap16(f: _Fn, desc, lvl, idx: list, ok: list, layer: ll.Value, decode: ll.Value,
           raw_decode: ll.Value, scale: ll.Value) -> list[ll.Value]:
    """An 8/16-bit integer texel as the 16-bit integers (i32 per channel) the filter uses:
    u8 k -> 257 k, s8 k -> 32767 k / 127 rounded half away, 16-bit k as is; a border
    texel: its color times the scale (65535 or 32767), rounded."""
    b = f.b
    words = _tap(f, desc, lvl, idx, ok, layer, raw_decode)
    inside = _all(f, ok)
    out = []
    for c in range(4):
        k = words[c]
        t = b.select(b.icmp_unsigned("==", decode, _i32(T.DECODE_UNORM8)),
                     b.mul(k, _i32(257)), k)
        snorm8 = b.icmp_unsigned("==", decode, _i32(T.DECODE_SNORM8))
        if constant_int(snorm8) != 0:  # (a known decode other than SNORM8 needs none of it)
            mag = b.select(b.icmp_signed("<", k, _i32(0)), b.sub(_i32(0), k), k)
            s8 = b.udiv(b.add(b.mul(mag, _i32(65534)), _i32(127)), _i32(254))
            s8 = b.select(b.icmp_signed("<", k, _i32(0)), b.sub(_i32(0), s8), s8)
            t = b.select(snorm8, s8, t)
        if constant_int(inside) == 1:
            out.append(t)
            continue
        border = b.bitcast(f.field(desc, "border", I32, c), F32)
        border = f.fptosi_sat(b.intrinsic("llvm.rint", [b.fmul(border, scale)], F32), I32)
        out.append(b.select(inside, t, border))
    return out


def _filter_int(f: _Fn, taps: list[tuple[ll.Value, ll.Value]], scale: ll.Value,
                signed: ll.Value) -> ll.Value:
    """One channel of the filter on 16-bit integers t (8/16-bit normalized formats):
    n = (sum w t + 128) >> 8, result n / scale as f32 (at least -1 when signed)."""
    b = f.b
    s = _i64(_FRAC // 2)
    for w, t in taps:
        s = b.add(s, b.mul(b.zext(w, I64), b.sext(t, I64)))
    n = b.ashr(s, _i64(T.SUBTEXEL_BITS))
    r = b.fdiv(b.sitofp(n, F32), scale)
    r = b.select(b.and_(signed, b.fcmp_ordered("<", r, _f32(-1.0))), _f32(-1.0), r)
    return b.bitcast(r, I32)


def _level_fn(module: ll.Module, dims: int, int_coords: bool, lanes: int = 1,
              spec: T.Sampling | None = None, normalized_as: int | None = None) -> ll.Function:
    """words level(ptr desc, ptr lvl, c0, c1, c2, i32 layer, i1 normalized): sample one
    mip level at coordinates c (f32, or s32 texel indices) of `dims` axes. Per warp: the
    coordinates and the layer per lane. With a spec, `normalized_as` is normalized, a
    constant."""
    suffix = "" if normalized_as is None else f"_n{normalized_as}"
    name = shaped(f"cuport_tex_level{dims}{'i' if int_coords else 'f'}{suffix}", lanes, spec)

    def build() -> ll.Function:
        ct = lane_type(I32 if int_coords else F32, lanes)
        f = _Fn(module, name, words_type(lanes), [PTR, PTR, ct, ct, ct, lane_type(I32, lanes), I1],
                lanes, spec)
        b = f.b
        desc, lvl, c0, c1, c2, layer, normalized = f.args
        if normalized_as is not None:
            normalized = ll.Constant(I1, normalized_as)
        coords = [c0, c1, c2][:dims]
        sizes = [f.lfield(lvl, n) for n in ("width", "height", "depth")][:dims]
        modes = [f.field(desc, "address", I32, k) for k in range(dims)]
        if int_coords:
            pairs = [_resolve(f, c, n, m) for c, n, m in zip(coords, sizes, modes, strict=True)]
            b.ret(f.pack(_tap(f, desc, lvl, [p[0] for p in pairs], [p[1] for p in pairs], layer,
                              inline=True)))
            return f.fn
        flags = f.field(desc, "flags")
        linear = f.flag(flags, T.F_LINEAR_FILTER)
        def fixed_axes() -> list[tuple]:
            """((index, inside) of the first texel, of the second, 8-bit fraction) per axis."""
            axes = []
            for u, n, m in zip(coords, sizes, modes, strict=True):
                fx = f.axis_fixed(u, n, m, normalized, linear)
                i0 = b.ashr(fx, _i32(T.SUBTEXEL_BITS))
                a = b.and_(fx, _i32(_FRAC - 1))
                axes.append((_resolve(f, i0, n, m), _resolve(f, b.add(i0, _i32(1)), n, m), a))
            return axes

        def point(axes: list) -> list[ll.Value]:
            return _tap(f, desc, lvl, [ax[0][0] for ax in axes], [ax[0][1] for ax in axes],
                        layer, inline=True)

        decode = f.field(desc, "decode")
        channels = f.field(desc, "channels")
        integer = ll.Constant(I1, 0)  # 8/16-bit normalized formats: _filter_int
        for code in _INT_FILTER:
            integer = b.or_(integer, b.icmp_unsigned("==", decode, _i32(code)))

        def corners(axes: list, centred: bool) -> list[tuple[ll.Value, list, list]]:
            if centred:  # the weights are 256 for the first corner, 0 for the others
                return [(_i32(_FRAC), [ax[0][0] for ax in axes], [ax[0][1] for ax in axes])]
            weights = _corner_weights(f, [ax[2] for ax in axes])
            out = []
            for corner, w in weights.items():
                ends = [t1 if hi else t0 for hi, (t0, t1, _) in zip(corner, axes, strict=True)]
                out.append((w, [e[0] for e in ends], [e[1] for e in ends]))
            return out

        # no border texels: every tap of a channel the format lacks reads its fill word
        filled = ll.Constant(I1, 1)
        for m in modes:
            filled = b.and_(filled, b.icmp_unsigned("!=", m, _i32(T.ADDRESS_BORDER)))

        def filtered_float(axes: list, centred: bool) -> list[ll.Value]:
            half = b.icmp_unsigned("==", decode, _i32(T.DECODE_F16))
            taps = [(w, _tap(f, desc, lvl, idx, ok, layer, inline=True))
                    for w, idx, ok in corners(axes, centred)]
            out = []
            for c in range(4):
                def taken(c: int = c) -> list[ll.Value]:
                    if centred:
                        return [_filter_one(f, b.bitcast(taps[0][1][c], F32), half)]
                    return [_filter_call(f, "float", [(w, b.bitcast(v[c], F32)) for w, v in taps],
                                         [half])]

                def fill(c: int = c) -> list[ll.Value]:
                    # taps of one value v filter as v with weight 256 (_filter_float reads
                    # the weights only through which are nonzero and their sum)
                    return [_filter_one(f, b.bitcast(f.field(desc, "fill", I32, c), F32), half)]

                lacking = b.and_(filled, b.icmp_unsigned(">=", _i32(c), channels))
                out += f.branch(lacking, fill, taken) if c else taken()
            return out

        def filtered_int(axes: list, centred: bool) -> list[ll.Value]:
            raw, scale = _i32(T.DECODE_U8), _f32(65535.0)
            for code, (raw_code, sc) in _INT_FILTER.items():
                this = b.icmp_unsigned("==", decode, _i32(code))
                raw = b.select(this, _i32(raw_code), raw)
                scale = b.select(this, _f32(float(sc)), scale)
            signed = b.fcmp_ordered("<", scale, _f32(40000.0))
            taps = [(w, _tap16(f, desc, lvl, idx, ok, layer, decode, raw, scale))
                    for w, idx, ok in corners(axes, centred)]
            out = []
            for c in range(4):
                out += f.branch(b.icmp_unsigned("<", _i32(c), channels),
                                lambda c=c: [_filter_call(f, "int", [(w, t[c]) for w, t in taps],
                                                          [scale, signed])],
                                lambda c=c: [f.field(desc, "fill", I32, c)])
            return out

        def by_format(axes: list, centred: bool) -> list[ll.Value]:
            return f.branch(integer, lambda: filtered_int(axes, centred),
                            lambda: filtered_float(axes, centred))

        if f.lanes == 1:
            axes = fixed_axes()
            b.ret(f.pack(f.branch(linear, lambda: by_format(axes, False), lambda: point(axes))))
            return f.fn
        # A warp samples one texel per lane (point sampling, or the linear filter where every
        # executing lane samples at texel centres, convolutionTexture's x + 0.5: one tap of
        # weight 256, the others weigh 0 and add nothing) in one place, reached from
        # texel_centres (unnormalized coordinates on axes that do not wrap, the texels taken
        # from the f32 coordinates) or from the fixed-point coordinates; four taps elsewhere.
        # Values joined: [one texel?, its index and inside per axis, four taps' words].
        dims_here = len(sizes)
        no_words = [_i32(0)] * 4

        def general() -> list[ll.Value]:
            axes = fixed_axes()
            off_centre = ll.Constant(I1, 0)
            for ax in axes:
                off_centre = b.or_(off_centre, b.icmp_unsigned("!=", ax[2], _i32(0)))
            four = b.and_(linear, b.any(off_centre))
            return f.branch(four,
                            lambda: [ll.Constant(I1, 0)] + [_i32(0)] * dims_here
                            + [ll.Constant(I1, 1)] * dims_here + by_format(axes, False),
                            lambda: [ll.Constant(I1, 1)] + [ax[0][0] for ax in axes]
                            + [ax[0][1] for ax in axes] + no_words)

        def centred(ks: list[ll.Value]) -> list[ll.Value]:
            pairs = [_resolve(f, k, n, m) for k, n, m in zip(ks, sizes, modes, strict=True)]
            return [ll.Constant(I1, 1)] + [p[0] for p in pairs] + [p[1] for p in pairs] + no_words

        known = f.texel_centres(coords, modes, normalized)
        vals = general() if known is None else f.branch(known[0], lambda: centred(known[1]),
                                                        general)
        one, words = vals[0], vals[1 + 2 * dims_here:]
        axes = [((i, o), None, _i32(0)) for i, o in
                zip(vals[1:1 + dims_here], vals[1 + dims_here:1 + 2 * dims_here], strict=True)]
        b.ret(f.pack(f.branch(one, lambda: f.branch(linear, lambda: by_format(axes, True),
                                                     lambda: point(axes)),
                              lambda: words)))
        return f.fn

    return _get(module, name, build)


# -- the samplers the instructions call ------------------------------------------------------

#: geometry -> (axes sampled, layered, cube)
GEOMETRIES = {
    "1d": (1, False, False), "2d": (2, False, False), "3d": (3, False, False),
    "a1d": (1, True, False), "a2d": (2, True, False),
    "cube": (2, False, True), "acube": (2, True, True),
}


def _cube_face(f: _Fn, x, y, z) -> tuple[ll.Value, ll.Value, ll.Value]:
    """Direction (x, y, z) -> (face, s, t) with s, t normalized on the face (CUDA's table)."""
    b = f.b
    ax, ay, az = (f.fabs(v) for v in (x, y, z))
    use_x = b.and_(b.fcmp_ordered(">=", ax, ay), b.fcmp_ordered(">=", ax, az))
    use_y = b.and_(b.not_(use_x), b.fcmp_ordered(">=", ay, az))

    def neg(v: ll.Value) -> ll.Value:
        return b.fsub(_f32(-0.0), v)

    def pos(v: ll.Value) -> ll.Value:
        return b.fcmp_ordered(">=", v, _f32(0.0))

    # +x: (-z, -y)  -x: (z, -y)  +y: (x, z)  -y: (x, -z)  +z: (x, -y)  -z: (-x, -y)
    sc_x = b.select(pos(x), neg(z), z)
    tc_x = neg(y)
    sc_y = x
    tc_y = b.select(pos(y), z, neg(z))
    sc_z = b.select(pos(z), x, neg(x))
    tc_z = neg(y)
    face_x = b.select(pos(x), _i32(0), _i32(1))
    face_y = b.select(pos(y), _i32(2), _i32(3))
    face_z = b.select(pos(z), _i32(4), _i32(5))

    def pick(vx, vy, vz):
        return b.select(use_x, vx, b.select(use_y, vy, vz))

    sc, tc, ma = pick(sc_x, sc_y, sc_z), pick(tc_x, tc_y, tc_z), pick(ax, ay, az)
    face = pick(face_x, face_y, face_z)
    s = b.fmul(b.fadd(b.fdiv(sc, ma), _f32(1.0)), _f32(0.5))
    t = b.fmul(b.fadd(b.fdiv(tc, ma), _f32(1.0)), _f32(0.5))
    return face, s, t


def _layer(f: _Fn, desc, index: ll.Value, cube: bool) -> ll.Value:
    """The first layer of array element `index` (u32, clamped to the last)."""
    b = f.b
    layers = f.field(desc, "layers")
    if cube:
        count = b.udiv(layers, _i32(6))
        return b.mul(f.umin(index, b.sub(count, _i32(1))), _i32(6))
    return f.umin(index, b.sub(layers, _i32(1)))


def sampler(module: ll.Module, geom: str, int_coords: bool, lod: str,
            lanes: int = 1, spec: T.Sampling | None = None) -> ll.Function:
    """i32 tex(ptr desc, c0, c1, c2, c3, f32 lod, f32 gx0, gx1, gx2, gy0, gy1, gy2, ptr out):
    sample with the PTX coordinate vector (c, as f32 or s32; array index first for a1d, a2d
    and acube) and write four result words to out. `lod` is "none", "level", "grad" or
    "base". Returns 0, or 1 for a NULL texture object (nothing is written). Per warp
    (`lanes` = 32): every argument but desc and out per lane, then the executing lanes
    (<32 x i1>); out holds four <32 x i32>. `spec`: the facts of the one texture object it
    samples, as constants (texture_layout.Sampling; the code for other formats, filters and
    address modes is not made)."""
    dims, layered, cube = GEOMETRIES[geom]
    name = shaped(f"cuport_tex_{geom}_{'s32' if int_coords else 'f32'}_{lod}", lanes, spec)

    def build() -> ll.Function:
        ct = I32 if int_coords else F32
        f = _Fn(module, name, I32, [PTR] + [lane_type(t, lanes) for t in [ct] * 4 + [F32] * 7]
                + [PTR], lanes, spec)
        b = f.b
        desc, *c, lod_arg = f.args[:6]
        grads = f.args[6:12]
        out = f.args[12]
        f.return_if_null(desc, _i32(1))
        flags = f.field(desc, "flags")
        normalized = f.flag(flags, T.F_NORMALIZED)
        layer = _i32(0)
        coords = list(c)
        if layered and not cube:
            layer = _layer(f, desc, b.bitcast(coords.pop(0), I32) if not int_coords
                           else coords.pop(0), False)
        if cube:
            if int_coords:
                raise ValueError("cubemaps take f32 coordinates")
            index = _i32(0)
            if layered:
                index = b.bitcast(coords.pop(0), I32)
            face, s, t = _cube_face(f, coords[0], coords[1], coords[2])
            layer = b.add(_layer(f, desc, index, True), face)
            coords = [s, t]
            normalized = ll.Constant(I1, 1)
        zero = ll.Constant(I32 if int_coords else F32, 0)
        coords = (coords[:dims] + [zero, zero, zero])[:3]

        level = _level_fn(module, dims, int_coords, lanes, spec,
                          constant_int(normalized) if spec is not None else None)

        def sample(k: ll.Value) -> Words:
            return f.each_value(k, lambda k: f.unpack(
                f.call(level, [desc, f.level_ptr(desc, k), *coords, layer, normalized])))

        nlevels = f.field(desc, "num_levels")
        if lod == "base" or int_coords:
            result = sample(_i32(0))
        else:
            result = f.branch(b.icmp_unsigned("<=", nlevels, _i32(1)), lambda: sample(_i32(0)),
                              lambda: _mip(f, desc, flags, nlevels, lod, lod_arg, grads, dims,
                                           sample))
        f.store_words(out, result)
        b.ret(_i32(0))
        return f.fn

    return _get(module, name, build)


def _mip(f: _Fn, desc, flags, nlevels, lod_kind: str, lod_arg, grads, dims: int, sample) -> Words:
    """Pick (and blend) mip levels for a level of detail; `sample(level)` samples one."""
    b = f.b
    if lod_kind == "level":
        lod = lod_arg
    elif lod_kind == "grad":
        lvl0 = f.level_ptr(desc, _i32(0))
        sizes = [b.uitofp(f.lfield(lvl0, n), F32) for n in ("width", "height", "depth")][:dims]
        lengths = []
        for g in (grads[:3], grads[3:]):
            sq = _f32(0.0)
            for k in range(dims):
                d = b.fmul(g[k], sizes[k])
                sq = b.fadd(sq, b.fmul(d, d))
            lengths.append(b.intrinsic("llvm.sqrt", [sq], F32))
        lod = b.intrinsic("llvm.log2", [f.fmax(lengths[0], lengths[1])], F32)
    else:
        lod = _f32(0.0)
    lod = b.fadd(lod, f.field(desc, "lod_bias", F32))
    lod = f.fmin(f.fmax(lod, f.field(desc, "min_lod", F32)), f.field(desc, "max_lod", F32))
    lod = f.fmin(f.fmax(lod, _f32(0.0)), b.uitofp(b.sub(nlevels, _i32(1)), F32))
    fixed = f.fixed(lod)
    l0 = b.ashr(fixed, _i32(T.SUBTEXEL_BITS))
    frac = b.and_(fixed, _i32(_FRAC - 1))
    mip_linear = f.flag(flags, T.F_MIP_LINEAR)

    def nearest() -> Words:
        return sample(b.ashr(b.add(fixed, _i32(_FRAC // 2)), _i32(T.SUBTEXEL_BITS)))

    def blended() -> Words:
        r0 = sample(l0)
        whole = b.icmp_unsigned("==", frac, _i32(0))

        def two() -> Words:
            # l0 + 1 exists where frac > 0; a warp computes this for its other lanes too
            r1 = sample(b.select(whole, l0, b.add(l0, _i32(1))))
            return _blend(f, [(b.sub(_i32(_FRAC), frac), r0), (frac, r1)], 2.0 ** -T.SUBTEXEL_BITS)

        return f.branch(whole, lambda: r0, two)

    return f.branch(mip_linear, blended, nearest)


def gather(module: ll.Module, geom: str, comp: int, lanes: int = 1,
           spec: T.Sampling | None = None) -> ll.Function:
    """i32 tld4(ptr desc, c0, c1, c2, c3 (f32), ptr out): the four texels of the bilinear
    footprint, channel `comp` of each, counter-clockwise from the lower left:
    (i0, j1), (i1, j1), (i1, j0), (i0, j0). Returns 1 for a NULL texture object. Per warp
    as sampler()."""
    dims, layered, cube = GEOMETRIES[geom]
    if dims != 2 or cube:
        raise ValueError(f"tld4 on .{geom}")
    name = shaped(f"cuport_tld4_{geom}_{'rgba'[comp]}", lanes, spec)

    def build() -> ll.Function:
        ct = lane_type(F32, lanes)
        f = _Fn(module, name, I32, [PTR, ct, ct, ct, ct, PTR], lanes, spec)
        b = f.b
        desc, *c, out = f.args
        f.return_if_null(desc, _i32(1))
        coords = list(c)
        layer = _layer(f, desc, b.bitcast(coords.pop(0), I32), False) if layered else _i32(0)
        lvl = f.level_ptr(desc, _i32(0))
        normalized = f.flag(f.field(desc, "flags"), T.F_NORMALIZED)
        ends = []
        for k, n in enumerate(("width", "height")):
            size = f.lfield(lvl, n)
            mode = f.field(desc, "address", I32, k)
            fx = f.axis_fixed(coords[k], size, mode, normalized, ll.Constant(I1, 1), False)
            i0 = b.ashr(fx, _i32(T.SUBTEXEL_BITS))
            ends.append((_resolve(f, i0, size, mode), _resolve(f, b.add(i0, _i32(1)), size, mode)))
        words = []
        for hx, hy in ((0, 1), (1, 1), (1, 0), (0, 0)):
            (ix, okx), (iy, oky) = ends[0][hx], ends[1][hy]
            words.append(_tap(f, desc, lvl, [ix, iy], [okx, oky], layer)[comp])
        f.store_words(out, words)
        b.ret(_i32(0))
        return f.fn

    return _get(module, name, build)


# -- surfaces ------------------------------------------------------------------------------

SURF_TRAP, SURF_CLAMP, SURF_ZERO = 0, 1, 2
ADDR_DROP, ADDR_TRAP = 0, 1  # what surface_address returns instead of an address


def surface_address(module: ll.Module, geom: str) -> ll.Function:
    """i64 addr(ptr desc, i32 x, i32 y, i32 z, i32 layer, i32 size, i32 mode, i1 formatted):
    the host address of a `size`-byte surface access at x (bytes, or elements when
    formatted), y, z of a layer; out of bounds: the clamped address (.clamp), ADDR_DROP
    (.zero: loads read 0, stores do nothing) or ADDR_TRAP (.trap). A NULL surface object
    traps. x is aligned down to the access size, as the ISA allows for misaligned x."""
    dims, layered, _ = GEOMETRIES[geom]
    name = f"cuport_surf_addr_{geom}"

    def build() -> ll.Function:
        f = _Fn(module, name, I64, [PTR, I32, I32, I32, I32, I32, I32, I1])
        b = f.b
        desc, x, y, z, layer, size, mode, formatted = f.args
        f.return_if_null(desc, _i64(ADDR_TRAP))
        lvl = f.level_ptr(desc, _i32(0))
        elem = f.field(desc, "elem_bytes")
        x = b.select(formatted, b.mul(x, elem), x)
        x = b.and_(x, b.not_(b.sub(size, _i32(1))))
        row = b.mul(f.lfield(lvl, "width"), elem)
        zero = _i32(0)
        limits = [(x, b.sub(row, size))]
        if dims > 1:
            limits.append((y, b.sub(f.lfield(lvl, "height"), _i32(1))))
        if dims > 2:
            limits.append((z, b.sub(f.lfield(lvl, "depth"), _i32(1))))
        inside = ll.Constant(I1, 1)
        clamped = []
        for v, hi in limits:
            inside = b.and_(inside, b.and_(b.icmp_signed(">=", v, zero), b.icmp_signed("<=", v, hi)))
            clamped.append(f.smax(f.smin(v, hi), zero))
        lay = _i32(0)
        if layered:
            last = b.sub(f.field(desc, "layers"), _i32(1))
            inside = b.and_(inside, b.icmp_unsigned("<=", layer, last))
            lay = f.umin(layer, last)
        xs = clamped[0]
        ys = clamped[1] if dims > 1 else zero
        zs = b.add(clamped[2] if dims > 2 else zero, lay)
        addr = b.add(f.lfield(lvl, "data", I64),
                     b.add(b.mul(b.zext(zs, I64), f.lfield(lvl, "slice_pitch", I64)),
                           b.add(b.mul(b.zext(ys, I64), f.lfield(lvl, "row_pitch", I64)),
                                 b.zext(xs, I64))))
        out_of_bounds = b.select(b.icmp_unsigned("==", mode, _i32(SURF_ZERO)), _i64(ADDR_DROP),
                                 b.select(b.icmp_unsigned("==", mode, _i32(SURF_CLAMP)), addr,
                                          _i64(ADDR_TRAP)))
        b.ret(b.select(inside, addr, out_of_bounds))
        return f.fn

    return _get(module, name, build)


def formatted_store(module: ll.Module) -> ll.Function:
    """void store(ptr desc, i64 addr, <4 x i32> words): sust.p, the components converted to
    the surface's format (f32 to half rounds to nearest even; integers saturate)."""
    name = "cuport_sust_p"

    def build() -> ll.Function:
        f = _Fn(module, name, ll.VoidType(), [PTR, I64, V4])
        b = f.b
        desc, addr, words = f.args
        decode = f.field(desc, "decode")
        channels = f.field(desc, "channels")
        base = b.inttoptr(addr, PTR)
        for c in range(4):
            w = b.extract_element(words, _i32(c))
            ch = f.fn.append_basic_block(f"ch{c}")
            nxt = f.fn.append_basic_block(f"after{c}")
            b.cbranch(b.icmp_unsigned("<", _i32(c), channels), ch, nxt)
            b.position_at_end(ch)
            done = f.fn.append_basic_block(f"stored{c}")
            sw = b.switch(decode, done)
            for code, bits in ((T.DECODE_BITS32, 32), (T.DECODE_F16, 16), (T.DECODE_U8, 8),
                               (T.DECODE_S8, 8), (T.DECODE_U16, 16), (T.DECODE_S16, 16)):
                blk = f.fn.append_basic_block(f"fmt{code}_{c}")
                sw.add_case(_i32(code), blk)
                b.position_at_end(blk)
                p = b.gep(base, [b.mul(_i64(c), _i64(bits // 8))], source_etype=I8)
                if code == T.DECODE_BITS32:
                    v = w
                elif code == T.DECODE_F16:
                    v = b.bitcast(b.fptrunc(b.bitcast(w, F32), F16), I16)
                elif code in (T.DECODE_U8, T.DECODE_U16):
                    v = b.trunc(f.umin(w, _i32((1 << bits) - 1)), ll.IntType(bits))
                else:
                    hi, lo = (1 << (bits - 1)) - 1, -(1 << (bits - 1))
                    v = b.trunc(f.smax(f.smin(w, _i32(hi)), _i32(lo)), ll.IntType(bits))
                b.store(v, p, align=1)
                b.branch(done)
            b.position_at_end(done)
            b.branch(nxt)
            b.position_at_end(nxt)
        b.ret_void()
        return f.fn

    return _get(module, name, build)
