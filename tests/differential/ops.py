"""The operations the generator combines: one table entry per operation.

An `Op` is a typed CUDA C++ expression template (`{0}`, `{1}`, `{2}` are the operands), the
device helpers it needs (inline PTX where C++ cannot name the instruction, or where C++
would make the case undefined behaviour that nvcc may fold: division by zero, INT_MIN / -1,
shifts by the register width or more), and optionally its semantics on bit patterns
(hostref) so that cuport can be checked without a GPU. Every operation here is exact: its
result is a function of its operands that the GPU computes bit for bit. Approximate
operations are in APPROX, with their documented error bounds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import hostref as H
from dtypes import INTS, TYPES

Ref = Callable[..., object]


@dataclass
class Op:
    name: str
    out: str
    args: tuple[str, ...]
    expr: str
    ref: Ref | None = None
    helpers: tuple[str, ...] = ()
    tags: frozenset[str] = field(default_factory=frozenset)


OPS: dict[str, Op] = {}
HELPERS: dict[str, str] = {}


def add(name: str, out: str, args, expr: str, ref: Ref | None = None, helpers=(), tags=()) -> None:
    assert name not in OPS, name
    OPS[name] = Op(name, out, tuple(args), expr, ref, tuple(helpers), frozenset(tags))


# ---------------------------------------------------------------- inline PTX helpers
# How a value of each type travels into and out of an asm statement: (constraint, C type of
# the carrier, value -> carrier, carrier -> value).
CARRIER = {
    "i8": ("r", "int", "(int)({})", "(int8_t)({})"),
    "u8": ("r", "unsigned", "(unsigned)({})", "(uint8_t)({})"),
    "i16": ("h", "unsigned short", "(unsigned short)({})", "(int16_t)({})"),
    "u16": ("h", "unsigned short", "(unsigned short)({})", "(uint16_t)({})"),
    "i32": ("r", "int", "{}", "{}"),
    "u32": ("r", "unsigned", "{}", "{}"),
    "i64": ("l", "long long", "{}", "{}"),
    "u64": ("l", "unsigned long long", "{}", "{}"),
    "f16": ("h", "unsigned short", "__half_as_ushort({})", "__ushort_as_half({})"),
    "bf16": ("h", "unsigned short", "__bfloat16_as_ushort({})", "__ushort_as_bfloat16({})"),
    "f32": ("f", "float", "{}", "{}"),
    "f64": ("d", "double", "{}", "{}"),
    "h2": ("r", "unsigned", "h2_bits({})", "bits_h2({})"),
    "bf2": ("r", "unsigned", "bf2_bits({})", "bits_bf2({})"),
    "pred": ("r", "unsigned", "(unsigned)({})", "(({}) != 0u)"),
}


def asm_fn(fname: str, out: str, args, ptx: str) -> str:
    """Define (once) a device function running `ptx` (%0 the result, %1.. the operands)."""
    if fname not in HELPERS:
        params = ", ".join(f"{TYPES[t].c} a{i}" for i, t in enumerate(args))
        oc, octype, _, from_c = CARRIER[out]
        ins = ", ".join(f'"{CARRIER[t][0]}"({CARRIER[t][2].format(f"a{i}")})' for i, t in enumerate(args))
        body = ptx.replace('"', '\\"')
        HELPERS[fname] = (f"static __device__ __forceinline__ {TYPES[out].c} {fname}({params}) {{ {octype} d; "
                          f'asm("{body}" : "={oc}"(d) : {ins}); return {from_c.format("d")}; }}')
    return fname


def ptx_op(name: str, out: str, args, ptx: str, ref: Ref | None = None, tags=()) -> None:
    """An operation that is one inline PTX sequence."""
    fname = "p_" + "".join(c if c.isalnum() else "_" for c in name)
    asm_fn(fname, out, args, ptx)
    add("ptx " + name, out, args, fname + "(" + ", ".join(f"{{{i}}}" for i in range(len(args))) + ")", ref, (fname,),
        ("ptx", *tags))


PTX_INT = {"i8": "s8", "u8": "u8", "i16": "s16", "u16": "u16", "i32": "s32", "u32": "u32", "i64": "s64",
           "u64": "u64", "f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64"}


def bits(t: str) -> int:
    return TYPES[t].bits


def m(t: str) -> int:
    return TYPES[t].mask


def sv(t: str, v: int) -> int:
    return TYPES[t].signed_value(v)


def unsigned_of(t: str) -> str:
    return {"i8": "u8", "i16": "u16", "i32": "u32", "i64": "u64"}.get(t, t)


# ---------------------------------------------------------------- integer arithmetic in C++
def _int_ops() -> None:
    for t in INTS:
        c = TYPES[t].c
        u = TYPES[unsigned_of(t)].c
        n = bits(t)
        wide = "unsigned long long" if n == 64 else "unsigned"
        sh = 63 if n == 64 else 31
        add(f"add.{t}", t, (t, t), f"({c})(({wide}){{0}} + ({wide}){{1}})", lambda a, b, t=t: (a + b) & m(t), tags=("int",))
        add(f"sub.{t}", t, (t, t), f"({c})(({wide}){{0}} - ({wide}){{1}})", lambda a, b, t=t: (a - b) & m(t), tags=("int",))
        add(f"mul.{t}", t, (t, t), f"({c})(({wide}){{0}} * ({wide}){{1}})", lambda a, b, t=t: (a * b) & m(t), tags=("int",))
        add(f"neg.{t}", t, (t,), f"({c})(({wide})0 - ({wide}){{0}})", lambda a, t=t: -a & m(t), tags=("int",))
        add(f"and.{t}", t, (t, t), f"({c})({{0}} & {{1}})", lambda a, b: a & b, tags=("int",))
        add(f"or.{t}", t, (t, t), f"({c})({{0}} | {{1}})", lambda a, b: a | b, tags=("int",))
        add(f"xor.{t}", t, (t, t), f"({c})({{0}} ^ {{1}})", lambda a, b: a ^ b, tags=("int",))
        add(f"not.{t}", t, (t,), f"({c})(~{{0}})", lambda a, t=t: ~a & m(t), tags=("int",))
        add(f"andnot_or.{t}", t, (t, t, t), f"({c})(({{0}} & ~{{1}}) | ({{1}} & {{2}}))",
            lambda a, b, d, t=t: ((a & ~b) | (b & d)) & m(t), tags=("int",))
        add(f"shl.{t}", t, (t, "u32"), f"({c})(({wide}){{0}} << ({{1}} & {sh}u))",
            lambda a, s, t=t, sh=sh: (a << (s & sh)) & m(t), tags=("int",))
        if TYPES[t].signed:
            add(f"shr.{t}", t, (t, "u32"), f"({c})({{0}} >> ({{1}} & {sh}u))",
                lambda a, s, t=t, sh=sh: (sv(t, a) >> (s & sh)) & m(t), tags=("int",))
        else:
            add(f"shr.{t}", t, (t, "u32"), f"({c})({{0}} >> ({{1}} & {sh}u))",
                lambda a, s, sh=sh: a >> (s & sh), tags=("int",))
        add(f"div.{t}", t, (t, t), "gdiv({0}, {1})", lambda a, b, t=t: _gdiv(t, a, b), ("gdiv",), ("int",))
        add(f"rem.{t}", t, (t, t), "grem({0}, {1})", lambda a, b, t=t: _grem(t, a, b), ("grem",), ("int",))
        add(f"min.{t}", t, (t, t), f"({c})min({{0}}, {{1}})",
            lambda a, b, t=t: a if sv(t, a) <= sv(t, b) else b, tags=("int",))
        add(f"max.{t}", t, (t, t), f"({c})max({{0}}, {{1}})",
            lambda a, b, t=t: a if sv(t, a) >= sv(t, b) else b, tags=("int",))
        for cop, f in (("<", lambda x, y: x < y), ("<=", lambda x, y: x <= y), ("==", lambda x, y: x == y),
                       ("!=", lambda x, y: x != y), (">", lambda x, y: x > y)):
            add(f"cmp{cop}.{t}", "pred", (t, t), f"({{0}} {cop} {{1}})",
                lambda a, b, t=t, f=f: int(f(sv(t, a), sv(t, b))), tags=("int", "cmp"))
        add(f"select.{t}", t, ("pred", t, t), "({0} ? {1} : {2})", lambda p, a, b: a if p else b, tags=("int",))
        if TYPES[t].signed:
            add(f"abs.{t}", t, (t,), f"({c})({{0}} < 0 ? ({wide})0 - ({wide}){{0}} : ({wide}){{0}})",
                lambda a, t=t: abs(sv(t, a)) & m(t), tags=("int",))
        add(f"rotl.{t}", t, (t, "u32"),
            f"({c})((({u}){{0}} << ({{1}} % {n}u)) | (({u}){{0}} >> (({n}u - {{1}} % {n}u) % {n}u)))",
            lambda a, s, t=t, n=n: ((a << (s % n)) | (a >> ((n - s % n) % n))) & m(t), tags=("int",))
    # integer <-> integer casts in C++ (wrap, sign- or zero-extend)
    for s in INTS:
        for d in INTS:
            if s != d:
                add(f"cast.{d}.{s}", d, (s,), f"({TYPES[d].c}){{0}}", lambda a, s=s, d=d: sv(s, a) & m(d), tags=("int", "conv"))


def _gdiv(t: str, a: int, b: int) -> int:
    x, y = sv(t, a), sv(t, b)
    if y == 0:
        return a
    if TYPES[t].signed and y == -1:
        return -x & m(t)
    return H.trunc_div(x, y) & m(t)


def _grem(t: str, a: int, b: int) -> int:
    x, y = sv(t, a), sv(t, b)
    if y == 0:
        return a
    if TYPES[t].signed and y == -1:
        return 0
    return H.trunc_rem(x, y) & m(t)


HELPERS["gdiv"] = """template <class T> static __device__ __forceinline__ T gdiv(T a, T b) {
  if (b == 0) return a;
  if ((T)-1 < (T)0 && b == (T)-1) return (T)(0ull - (unsigned long long)a);
  return (T)(a / b);
}"""
HELPERS["grem"] = """template <class T> static __device__ __forceinline__ T grem(T a, T b) {
  if (b == 0) return a;
  if ((T)-1 < (T)0 && b == (T)-1) return (T)0;
  return (T)(a % b);
}"""


# ---------------------------------------------------------------- CUDA integer intrinsics
def _u(a: int, n: int = 32) -> int:
    return a & ((1 << n) - 1)


def _intrinsics() -> None:
    s32 = lambda v: H.sx(v, 32)  # noqa: E731
    s64 = lambda v: H.sx(v, 64)  # noqa: E731
    I = ("int", "bits")  # noqa: E741
    add("__popc", "i32", ("u32",), "__popc({0})", lambda a: bin(a).count("1"), tags=I)
    add("__popcll", "i32", ("u64",), "__popcll({0})", lambda a: bin(a).count("1"), tags=I)
    add("__clz", "i32", ("i32",), "__clz({0})", lambda a: H.clz(a, 32), tags=I)
    add("__clzll", "i32", ("i64",), "__clzll({0})", lambda a: H.clz(a, 64), tags=I)
    add("__ffs", "i32", ("i32",), "__ffs({0})", lambda a: (a & -a).bit_length(), tags=I)
    add("__ffsll", "i32", ("i64",), "__ffsll({0})", lambda a: (a & -a).bit_length(), tags=I)
    add("__brev", "u32", ("u32",), "__brev({0})", lambda a: H.brev(a, 32), tags=I)
    add("__brevll", "u64", ("u64",), "__brevll({0})", lambda a: H.brev(a, 64), tags=I)
    add("__byte_perm", "u32", ("u32", "u32", "u32"), "__byte_perm({0}, {1}, {2})", lambda a, b, s: H.prmt(a, b, s & 0x7777), tags=I)
    add("__funnelshift_l", "u32", ("u32", "u32", "u32"), "__funnelshift_l({0}, {1}, {2})",
        lambda lo, hi, s: _u(((hi << 32 | lo) << (s & 31)) >> 32), tags=I)
    add("__funnelshift_lc", "u32", ("u32", "u32", "u32"), "__funnelshift_lc({0}, {1}, {2})",
        lambda lo, hi, s: _u(((hi << 32 | lo) << min(s, 32)) >> 32), tags=I)
    add("__funnelshift_r", "u32", ("u32", "u32", "u32"), "__funnelshift_r({0}, {1}, {2})",
        lambda lo, hi, s: _u((hi << 32 | lo) >> (s & 31)), tags=I)
    add("__funnelshift_rc", "u32", ("u32", "u32", "u32"), "__funnelshift_rc({0}, {1}, {2})",
        lambda lo, hi, s: _u((hi << 32 | lo) >> min(s, 32)), tags=I)
    add("__mulhi", "i32", ("i32", "i32"), "__mulhi({0}, {1})", lambda a, b: _u((s32(a) * s32(b)) >> 32), tags=I)
    add("__umulhi", "u32", ("u32", "u32"), "__umulhi({0}, {1})", lambda a, b: (a * b) >> 32, tags=I)
    add("__mul64hi", "i64", ("i64", "i64"), "__mul64hi({0}, {1})", lambda a, b: _u((s64(a) * s64(b)) >> 64, 64), tags=I)
    add("__umul64hi", "u64", ("u64", "u64"), "__umul64hi({0}, {1})", lambda a, b: (a * b) >> 64, tags=I)
    add("__mul24", "i32", ("i32", "i32"), "__mul24({0}, {1})", lambda a, b: _u(H.sx(a, 24) * H.sx(b, 24)), tags=I)
    add("__umul24", "u32", ("u32", "u32"), "__umul24({0}, {1})", lambda a, b: _u((a & 0xFFFFFF) * (b & 0xFFFFFF)), tags=I)
    add("__sad", "u32", ("i32", "i32", "u32"), "__sad({0}, {1}, {2})", lambda a, b, c: _u(abs(s32(a) - s32(b)) + c), tags=I)
    add("__usad", "u32", ("u32", "u32", "u32"), "__usad({0}, {1}, {2})", lambda a, b, c: _u(abs(a - b) + c), tags=I)
    add("__hadd.i32", "i32", ("i32", "i32"), "__hadd({0}, {1})", lambda a, b: _u((s32(a) + s32(b)) >> 1), tags=I)
    add("__rhadd", "i32", ("i32", "i32"), "__rhadd({0}, {1})", lambda a, b: _u((s32(a) + s32(b) + 1) >> 1), tags=I)
    add("__uhadd", "u32", ("u32", "u32"), "__uhadd({0}, {1})", lambda a, b: (a + b) >> 1, tags=I)
    add("__urhadd", "u32", ("u32", "u32"), "__urhadd({0}, {1})", lambda a, b: (a + b + 1) >> 1, tags=I)
    add("__dp4a.s", "i32", ("i32", "i32", "i32"), "__dp4a({0}, {1}, {2})",
        lambda a, b, c: _u(sum(H.sx(a >> 8 * i, 8) * H.sx(b >> 8 * i, 8) for i in range(4)) + s32(c)), tags=I)
    add("__dp4a.u", "u32", ("u32", "u32", "u32"), "__dp4a({0}, {1}, {2})",
        lambda a, b, c: _u(sum((a >> 8 * i & 255) * (b >> 8 * i & 255) for i in range(4)) + c), tags=I)
    add("__dp2a_lo.s", "i32", ("i32", "i32", "i32"), "__dp2a_lo({0}, {1}, {2})",
        lambda a, b, c: _u(sum(H.sx(a >> 16 * i, 16) * H.sx(b >> 8 * i, 8) for i in range(2)) + s32(c)), tags=I)
    add("__dp2a_hi.u", "u32", ("u32", "u32", "u32"), "__dp2a_hi({0}, {1}, {2})",
        lambda a, b, c: _u(sum((a >> 16 * i & 0xFFFF) * (b >> (8 * i + 16) & 255) for i in range(2)) + c), tags=I)
    add("__fns", "u32", ("u32", "u32", "i32"), "__fns({0}, {1} & 31u, {2} % 40)", tags=I)

    # SIMD-within-a-word intrinsics (reference for a few of each shape)
    def lanes(n):
        w = 32 // n
        return w, (1 << w) - 1

    def simd(f, n, signed=False):
        w, mk = lanes(n)

        def r(a, b):
            out = 0
            for i in range(n):
                x, y = a >> (w * i) & mk, b >> (w * i) & mk
                if signed:
                    x, y = H.sx(x, w), H.sx(y, w)
                out |= (f(x, y, w) & mk) << (w * i)
            return out
        return r

    sat_s = lambda v, w: max(min(v, (1 << (w - 1)) - 1), -(1 << (w - 1)))  # noqa: E731
    sat_u = lambda v, w: max(min(v, (1 << w) - 1), 0)  # noqa: E731
    table = [
        ("__vadd2", 2, False, lambda x, y, w: x + y), ("__vadd4", 4, False, lambda x, y, w: x + y),
        ("__vaddss2", 2, True, lambda x, y, w: sat_s(x + y, w)), ("__vaddss4", 4, True, lambda x, y, w: sat_s(x + y, w)),
        ("__vaddus2", 2, False, lambda x, y, w: sat_u(x + y, w)), ("__vaddus4", 4, False, lambda x, y, w: sat_u(x + y, w)),
        ("__vsub2", 2, False, lambda x, y, w: x - y), ("__vsubss4", 4, True, lambda x, y, w: sat_s(x - y, w)),
        ("__vsubus2", 2, False, lambda x, y, w: sat_u(x - y, w)),
        ("__vabsdiffs2", 2, True, lambda x, y, w: abs(x - y)), ("__vabsdiffu4", 4, False, lambda x, y, w: abs(x - y)),
        ("__vavgu2", 2, False, lambda x, y, w: (x + y + 1) >> 1), ("__vavgs4", 4, True, None),
        ("__vhaddu4", 4, False, lambda x, y, w: (x + y) >> 1),
        ("__vcmpeq2", 2, False, lambda x, y, w: -(x == y)), ("__vcmpges4", 4, True, lambda x, y, w: -(x >= y)),
        ("__vcmpgtu2", 2, False, lambda x, y, w: -(x > y)), ("__vcmplts2", 2, True, lambda x, y, w: -(x < y)),
        ("__vcmpneu4", 4, False, None), ("__vcmpne4", 4, False, lambda x, y, w: -(x != y)),
        ("__vmaxs2", 2, True, lambda x, y, w: max(x, y)), ("__vmaxu4", 4, False, lambda x, y, w: max(x, y)),
        ("__vmins4", 4, True, lambda x, y, w: min(x, y)), ("__vminu2", 2, False, lambda x, y, w: min(x, y)),
        ("__vseteq4", 4, False, lambda x, y, w: int(x == y)), ("__vsetles2", 2, True, lambda x, y, w: int(x <= y)),
        ("__vsetgtu4", 4, False, lambda x, y, w: int(x > y)),
    ]
    for name, n, signed, f in table:
        if name == "__vcmpneu4":
            continue
        add(name, "u32", ("u32", "u32"), f"{name}({{0}}, {{1}})", simd(f, n, signed) if f else None, tags=("int", "simd"))
    add("__vsads2", "u32", ("u32", "u32"), "__vsads2({0}, {1})",
        lambda a, b: sum(abs(H.sx(a >> 16 * i, 16) - H.sx(b >> 16 * i, 16)) for i in range(2)), tags=("int", "simd"))
    add("__vsadu4", "u32", ("u32", "u32"), "__vsadu4({0}, {1})",
        lambda a, b: sum(abs((a >> 8 * i & 255) - (b >> 8 * i & 255)) for i in range(4)), tags=("int", "simd"))
    add("__vneg2", "u32", ("u32",), "__vneg2({0})", lambda a: simd(lambda x, y, w: -x, 2)(a, 0), tags=("int", "simd"))
    add("__vabsss4", "u32", ("u32",), "__vabsss4({0})",
        lambda a: simd(lambda x, y, w: sat_s(abs(x), w), 4, True)(a, 0), tags=("int", "simd"))
    # sm_90 DPX
    add("__vimax3_s32", "i32", ("i32", "i32", "i32"), "__vimax3_s32({0}, {1}, {2})",
        lambda a, b, c: _u(max(s32(a), s32(b), s32(c))), tags=("int", "dpx"))
    add("__vimin3_u32", "u32", ("u32", "u32", "u32"), "__vimin3_u32({0}, {1}, {2})", lambda a, b, c: min(a, b, c),
        tags=("int", "dpx"))
    add("__viaddmax_s32", "i32", ("i32", "i32", "i32"), "__viaddmax_s32({0}, {1}, {2})",
        lambda a, b, c: _u(max(s32(_u(a + b)), s32(c))), tags=("int", "dpx"))
    add("__viaddmin_u32", "u32", ("u32", "u32", "u32"), "__viaddmin_u32({0}, {1}, {2})",
        lambda a, b, c: min(_u(a + b), c), tags=("int", "dpx"))
    add("__vimax_s32_relu", "i32", ("i32", "i32"), "__vimax_s32_relu({0}, {1})",
        lambda a, b: _u(max(s32(a), s32(b), 0)), tags=("int", "dpx"))
    add("__vimin3_s16x2_relu", "u32", ("u32", "u32", "u32"), "__vimin3_s16x2_relu({0}, {1}, {2})",
        lambda a, b, c: sum((max(min(H.sx(a >> 16 * i, 16), H.sx(b >> 16 * i, 16), H.sx(c >> 16 * i, 16)), 0) & 0xFFFF)
                            << 16 * i for i in range(2)), tags=("int", "dpx"))
    add("__viaddmax_u16x2", "u32", ("u32", "u32", "u32"), "__viaddmax_u16x2({0}, {1}, {2})",
        lambda a, b, c: sum(max((a >> 16 * i) + (b >> 16 * i) & 0xFFFF, c >> 16 * i & 0xFFFF) << 16 * i for i in range(2)),
        tags=("int", "dpx"))
    add("__vibmax_s32.v", "i32", ("i32", "i32"), "vibmax_v({0}, {1})", lambda a, b: _u(max(s32(a), s32(b))),
        ("vibmax",), tags=("int", "dpx"))
    add("__vibmax_s32.p", "pred", ("i32", "i32"), "vibmax_p({0}, {1})", lambda a, b: int(s32(a) >= s32(b)),
        ("vibmax",), tags=("int", "dpx"))


HELPERS["vibmax"] = """static __device__ __forceinline__ int vibmax_v(int a, int b) { bool p; return __vibmax_s32(a, b, &p); }
static __device__ __forceinline__ bool vibmax_p(int a, int b) { bool p; __vibmax_s32(a, b, &p); return p; }"""


# ---------------------------------------------------------------- integer PTX
def _ptx_int() -> None:
    for t in ("i16", "u16", "i32", "u32", "i64", "u64"):
        p = PTX_INT[t]
        n = bits(t)

        def div(a, b, t=t, n=n):
            x, y = sv(t, a), sv(t, b)
            if y == 0:
                return m(t)  # the H200: all ones
            if TYPES[t].signed and y == -1:
                return -x & m(t)
            return H.trunc_div(x, y) & m(t)

        def rem(a, b, t=t):
            x, y = sv(t, a), sv(t, b)
            if y == 0:
                return m(t)
            if TYPES[t].signed and y == -1:
                return 0
            return H.trunc_rem(x, y) & m(t)

        ptx_op(f"div.{p}", t, (t, t), f"div.{p} %0, %1, %2;", div, ("int",))
        ptx_op(f"rem.{p}", t, (t, t), f"rem.{p} %0, %1, %2;", rem, ("int",))
        b = f"b{n}"
        ptx_op(f"shl.{b}.{p}", t, (t, "u32"), f"shl.{b} %0, %1, %2;",
               lambda a, s, t=t, n=n: (a << min(s, n)) & m(t), ("int",))
        ptx_op(f"shr.{p}", t, (t, "u32"), f"shr.{p} %0, %1, %2;",
               lambda a, s, t=t, n=n: (sv(t, a) >> min(s, n)) & m(t), ("int",))
        ptx_op(f"mul.hi.{p}", t, (t, t), f"mul.hi.{p} %0, %1, %2;",
               lambda a, b, t=t, n=n: ((sv(t, a) * sv(t, b)) >> n) & m(t), ("int",))
        ptx_op(f"sad.{p}", t, (t, t, t), f"sad.{p} %0, %1, %2, %3;",
               lambda a, b, c, t=t: (abs(sv(t, a) - sv(t, b)) + c) & m(t), ("int",))
        ptx_op(f"min.{p}", t, (t, t), f"min.{p} %0, %1, %2;", lambda a, b, t=t: a if sv(t, a) <= sv(t, b) else b, ("int",))
        ptx_op(f"max.{p}", t, (t, t), f"max.{p} %0, %1, %2;", lambda a, b, t=t: a if sv(t, a) >= sv(t, b) else b, ("int",))
        if TYPES[t].signed:
            ptx_op(f"abs.{p}", t, (t,), f"abs.{p} %0, %1;", lambda a, t=t: abs(sv(t, a)) & m(t), ("int",))
            ptx_op(f"neg.{p}", t, (t,), f"neg.{p} %0, %1;", lambda a, t=t: -a & m(t), ("int",))
        if not TYPES[t].signed:
            if n >= 32:
                ptx_op(f"popc.{b}", "u32", (t,), f"popc.{b} %0, %1;", lambda a: bin(a).count("1"), ("int", "bits"))
                ptx_op(f"clz.{b}", "u32", (t,), f"clz.{b} %0, %1;", lambda a, n=n: H.clz(a, n), ("int", "bits"))
                ptx_op(f"brev.{b}", t, (t,), f"brev.{b} %0, %1;", lambda a, n=n: H.brev(a, n), ("int", "bits"))
            ptx_op(f"cnot.{b}", t, (t,), f"cnot.{b} %0, %1;", lambda a: int(a == 0), ("int", "bits"))
        if n >= 32:
            ptx_op(f"bfe.{p}", t, (t, "u32", "u32"), f"bfe.{p} %0, %1, %2, %3;",
                   lambda a, pos, ln, n=n, s=TYPES[t].signed: H.bfe(a, pos, ln, n, s), ("int", "bits"))
            ptx_op(f"bfind.{p}", "u32", (t,), f"bfind.{p} %0, %1;",
                   lambda a, n=n, s=TYPES[t].signed: H.bfind(a, n, s, False), ("int", "bits"))
            ptx_op(f"bfind.shiftamt.{p}", "u32", (t,), f"bfind.shiftamt.{p} %0, %1;",
                   lambda a, n=n, s=TYPES[t].signed: H.bfind(a, n, s, True), ("int", "bits"))
        if n == 16 or n == 32:
            w = f"{p[0]}{2 * n}"
            wt = {"s32": "i32", "u32": "u32", "s64": "i64", "u64": "u64"}[w]
            ptx_op(f"mul.wide.{p}", wt, (t, t), f"mul.wide.{p} %0, %1, %2;",
                   lambda a, b, t=t, wt=wt: (sv(t, a) * sv(t, b)) & m(wt), ("int",))
            ptx_op(f"mad.wide.{p}", wt, (t, t, wt), f"mad.wide.{p} %0, %1, %2, %3;",
                   lambda a, b, c, t=t, wt=wt: (sv(t, a) * sv(t, b) + c) & m(wt), ("int",))
            ptx_op(f"mad.hi.{p}", t, (t, t, t), f"mad.hi.{p} %0, %1, %2, %3;",
                   lambda a, b, c, t=t, n=n: (((sv(t, a) * sv(t, b)) >> n) + c) & m(t), ("int",))
    for b in ("b32", "b64"):
        t = "u32" if b == "b32" else "u64"
        n = bits(t)
        ptx_op(f"bfi.{b}", t, (t, t, "u32", "u32"), f"bfi.{b} %0, %1, %2, %3, %4;",
               lambda a, bb, pos, ln, n=n: H.bfi(a, bb, pos, ln, n), ("int", "bits"))
    ptx_op("add.sat.s32", "i32", ("i32", "i32"), "add.sat.s32 %0, %1, %2;",
           lambda a, b: _u(max(min(H.sx(a, 32) + H.sx(b, 32), 2**31 - 1), -2**31)), ("int",))
    ptx_op("sub.sat.s32", "i32", ("i32", "i32"), "sub.sat.s32 %0, %1, %2;",
           lambda a, b: _u(max(min(H.sx(a, 32) - H.sx(b, 32), 2**31 - 1), -2**31)), ("int",))
    ptx_op("mul24.hi.s32", "i32", ("i32", "i32"), "mul24.hi.s32 %0, %1, %2;",
           lambda a, b: _u((H.sx(a, 24) * H.sx(b, 24)) >> 16), ("int",))
    ptx_op("mul24.hi.u32", "u32", ("u32", "u32"), "mul24.hi.u32 %0, %1, %2;",
           lambda a, b: _u(((a & 0xFFFFFF) * (b & 0xFFFFFF)) >> 16), ("int",))
    ptx_op("mad24.lo.s32", "i32", ("i32", "i32", "i32"), "mad24.lo.s32 %0, %1, %2, %3;",
           lambda a, b, c: _u(H.sx(a, 24) * H.sx(b, 24) + c), ("int",))
    ptx_op("min.relu.s32", "i32", ("i32", "i32"), "min.relu.s32 %0, %1, %2;",
           lambda a, b: _u(max(min(H.sx(a, 32), H.sx(b, 32)), 0)), ("int",))
    ptx_op("max.relu.s32", "i32", ("i32", "i32"), "max.relu.s32 %0, %1, %2;",
           lambda a, b: _u(max(H.sx(a, 32), H.sx(b, 32), 0)), ("int",))
    ptx_op("min.s16x2", "u32", ("u32", "u32"), "min.s16x2 %0, %1, %2;",
           lambda a, b: sum((min(H.sx(a >> 16 * i, 16), H.sx(b >> 16 * i, 16)) & 0xFFFF) << 16 * i for i in range(2)),
           ("int", "simd"))
    ptx_op("max.u16x2", "u32", ("u32", "u32"), "max.u16x2 %0, %1, %2;",
           lambda a, b: sum(max(a >> 16 * i & 0xFFFF, b >> 16 * i & 0xFFFF) << 16 * i for i in range(2)), ("int", "simd"))
    ptx_op("max.relu.s16x2", "u32", ("u32", "u32"), "max.relu.s16x2 %0, %1, %2;",
           lambda a, b: sum((max(H.sx(a >> 16 * i, 16), H.sx(b >> 16 * i, 16), 0) & 0xFFFF) << 16 * i for i in range(2)),
           ("int", "simd"))
    ptx_op("add.s16x2", "u32", ("u32", "u32"), "add.s16x2 %0, %1, %2;",
           lambda a, b: sum(((a >> 16 * i) + (b >> 16 * i) & 0xFFFF) << 16 * i for i in range(2)), ("int", "simd"))
    for mode in ("clamp", "wrap"):
        def bmsk(a, b, mode=mode):
            pos, ln = (min(a, 32), min(b, 32)) if mode == "clamp" else (a & 31, b & 31)
            return ((1 << ln) - 1 << pos) & 0xFFFFFFFF if pos < 32 else 0
        ptx_op(f"bmsk.{mode}.b32", "u32", ("u32", "u32"), f"bmsk.{mode}.b32 %0, %1, %2;", bmsk, ("int", "bits"))
        for t in ("s32", "u32"):
            def szext(a, b, mode=mode, t=t):
                n = min(b, 32) if mode == "clamp" else b & 31
                if n == 0:
                    return 0
                v = a & ((1 << n) - 1)
                return _u(H.sx(v, n)) if t == "s32" else v
            ptx_op(f"szext.{mode}.{t}", "u32", ("u32", "u32"), f"szext.{mode}.{t} %0, %1, %2;", szext, ("int", "bits"))
        ptx_op(f"shf.l.{mode}.b32", "u32", ("u32", "u32", "u32"), f"shf.l.{mode}.b32 %0, %1, %2, %3;",
               lambda lo, hi, s, mode=mode: _u(((hi << 32 | lo) << (min(s, 32) if mode == "clamp" else s & 31)) >> 32),
               ("int", "bits"))
        ptx_op(f"shf.r.{mode}.b32", "u32", ("u32", "u32", "u32"), f"shf.r.{mode}.b32 %0, %1, %2, %3;",
               lambda lo, hi, s, mode=mode: _u((hi << 32 | lo) >> (min(s, 32) if mode == "clamp" else s & 31)),
               ("int", "bits"))
    for mode in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16"):
        ptx_op(f"prmt.b32.{mode}", "u32", ("u32", "u32", "u32"), f"prmt.b32.{mode} %0, %1, %2, %3;",
               lambda a, b, s, mode=mode: _prmt_mode(a, b, s, mode), ("int", "bits"))
    ptx_op("prmt.b32", "u32", ("u32", "u32", "u32"), "prmt.b32 %0, %1, %2, %3;", H.prmt, ("int", "bits"))
    # mixed-signedness dot products, which the C++ intrinsics cannot express
    ptx_op("dp4a.u32.s32", "i32", ("u32", "i32", "i32"), "dp4a.u32.s32 %0, %1, %2, %3;",
           lambda a, b, c: _u(sum((a >> 8 * i & 255) * H.sx(b >> 8 * i, 8) for i in range(4)) + H.sx(c, 32)), ("int",))
    ptx_op("dp2a.hi.s32.u32", "i32", ("i32", "u32", "i32"), "dp2a.hi.s32.u32 %0, %1, %2, %3;",
           lambda a, b, c: _u(sum(H.sx(a >> 16 * i, 16) * (b >> (8 * i + 16) & 255) for i in range(2)) + H.sx(c, 32)),
           ("int",))
    # carry chains: a 64-bit add and a 32x32 multiply-accumulate built from 32-bit limbs
    asm_fn("p_add64cc", "u64", ("u64", "u64"),
           "{ .reg .u32 al, ah, bl, bh, rl, rh; mov.b64 {al, ah}, %1; mov.b64 {bl, bh}, %2; "
           "add.cc.u32 rl, al, bl; addc.u32 rh, ah, bh; mov.b64 %0, {rl, rh}; }")
    add("add64.cc", "u64", ("u64", "u64"), "p_add64cc({0}, {1})", lambda a, b: (a + b) & (2**64 - 1),
        ("p_add64cc",), ("ptx", "int", "carry"))
    asm_fn("p_sub64cc", "u64", ("u64", "u64"),
           "{ .reg .u32 al, ah, bl, bh, rl, rh; mov.b64 {al, ah}, %1; mov.b64 {bl, bh}, %2; "
           "sub.cc.u32 rl, al, bl; subc.u32 rh, ah, bh; mov.b64 %0, {rl, rh}; }")
    add("sub64.cc", "u64", ("u64", "u64"), "p_sub64cc({0}, {1})", lambda a, b: (a - b) & (2**64 - 1),
        ("p_sub64cc",), ("ptx", "int", "carry"))
    # (a*b + c) as 64 bits from mad.lo.cc/madc.hi (the numba complex-sin chain)
    asm_fn("p_madcc", "u64", ("u32", "u32", "u64"),
           "{ .reg .u32 cl, ch, rl, rh; mov.b64 {cl, ch}, %3; mad.lo.cc.u32 rl, %1, %2, cl; "
           "madc.hi.u32 rh, %1, %2, ch; mov.b64 %0, {rl, rh}; }")
    add("mad.lo.cc.u32", "u64", ("u32", "u32", "u64"), "p_madcc({0}, {1}, {2})",
        lambda a, b, c: (a * b + c) & (2**64 - 1), ("p_madcc",), ("ptx", "int", "carry"))
    # 96-bit add: carry through a middle limb (addc.cc)
    asm_fn("p_add96", "u32", ("u64", "u64", "u32"),
           "{ .reg .u32 al, ah, bl, bh, r0, r1, r2; mov.b64 {al, ah}, %1; mov.b64 {bl, bh}, %2; "
           "add.cc.u32 r0, al, bl; addc.cc.u32 r1, ah, bh; addc.u32 r2, %3, 0; xor.b32 %0, r2, r1; }")
    add("add96.cc", "u32", ("u64", "u64", "u32"), "p_add96({0}, {1}, {2})",
        lambda a, b, c: _u((a + b) >> 64) + c & 0xFFFFFFFF ^ ((a + b) >> 32 & 0xFFFFFFFF), ("p_add96",),
        ("ptx", "int", "carry"))


def _prmt_mode(a: int, b: int, s: int, mode: str) -> int:
    """prmt.b32 with a mode: the byte table of the PTX ISA (selector's two low bits)."""
    src = (b << 32 | a).to_bytes(8, "little")
    c = s & 3
    tables = {
        "f4e": [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
        "b4e": [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]],
        "rc8": [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
        "ecl": [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]],
        "ecr": [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]],
        "rc16": [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]],
    }
    sel = tables[mode][c]
    return sum(src[sel[i]] << (8 * i) for i in range(4))


# ---------------------------------------------------------------- floating point in C++
FMT = {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64"}
ROUND = {"rn": "rn", "rz": "rz", "ru": "rp", "rd": "rm"}


def _float_ops() -> None:
    F = ("float",)
    for t in ("f32", "f64"):
        # plain operators: nvcc may contract a*b+c into an fma, so no host reference
        add(f"+.{t}", t, (t, t), "({0} + {1})", tags=F)
        add(f"-.{t}", t, (t, t), "({0} - {1})", tags=F)
        add(f"*.{t}", t, (t, t), "({0} * {1})", tags=F)
        add(f"/.{t}", t, (t, t), "({0} / {1})", lambda a, b, t=t: H.f_div(a, b, t), tags=F)
        add(f"neg.{t}", t, (t,), "(-{0})", tags=F)
        fabs = "fabsf" if t == "f32" else "fabs"
        add(f"fabs.{t}", t, (t,), f"{fabs}({{0}})", tags=F)
        sq = "sqrtf" if t == "f32" else "sqrt"
        add(f"sqrt.{t}", t, (t,), f"{sq}({{0}})", lambda a, t=t: H.f_sqrt(a, t), tags=F)
        fm = "fmaf" if t == "f32" else "fma"
        add(f"fma.{t}", t, (t, t, t), f"{fm}({{0}}, {{1}}, {{2}})", lambda a, b, c, t=t: H.f_fma(a, b, c, t), tags=F)
        mn, mx = ("fminf", "fmaxf") if t == "f32" else ("fmin", "fmax")
        add(f"fmin.{t}", t, (t, t), f"{mn}({{0}}, {{1}})", lambda a, b, t=t: H.f_minmax(a, b, t, False), tags=F)
        add(f"fmax.{t}", t, (t, t), f"{mx}({{0}}, {{1}})", lambda a, b, t=t: H.f_minmax(a, b, t, True), tags=F)
        f = "f" if t == "f32" else ""
        for fn in ("rint", "trunc", "floor", "ceil", "round", "nearbyint"):
            mode = {"rint": "rni", "nearbyint": "rni", "trunc": "rzi", "floor": "rmi", "ceil": "rpi", "round": "rna"}[fn]
            add(f"{fn}.{t}", t, (t,), f"{fn}{f}({{0}})", lambda a, t=t, mode=mode: H.f_round_int(a, t, mode), tags=F)
        add(f"copysign.{t}", t, (t, t), f"copysign{f}({{0}}, {{1}})", tags=F)
        add(f"fmod.{t}", t, (t, t), f"fmod{f}({{0}}, {{1}})", tags=F)
        add(f"remainder.{t}", t, (t, t), f"remainder{f}({{0}}, {{1}})", tags=F)
        add(f"fdim.{t}", t, (t, t), f"fdim{f}({{0}}, {{1}})", tags=F)
        add(f"ldexp.{t}", t, (t, "i32"), f"ldexp{f}({{0}}, {{1}} % 300)", tags=F)
        add(f"ilogb.{t}", "i32", (t,), f"ilogb{f}({{0}})", tags=F)
        add(f"frexp.m.{t}", t, (t,), "frexp_m({0})", tags=F, helpers=("frexp_modf",))
        add(f"frexp.e.{t}", "i32", (t,), "frexp_e({0})", tags=F, helpers=("frexp_modf",))
        add(f"nextafter.{t}", t, (t, t), f"nextafter{f}({{0}}, {{1}})", tags=F)
        add(f"modf.{t}", t, (t,), "modf_frac({0})", tags=F, helpers=("frexp_modf",))
        add(f"modf.i.{t}", t, (t,), "modf_int({0})", tags=F, helpers=("frexp_modf",))
        add(f"logb.{t}", t, (t,), f"logb{f}({{0}})", tags=F)
        for rnd_name, mode in ROUND.items():
            if t == "f32":
                ops = [("__fadd", "add"), ("__fsub", "sub"), ("__fmul", "mul"), ("__fdiv", "div")]
                names = {op: f"{base}_{rnd_name}" for base, op in ops}
                fma_n, rcp_n, sqrt_n = f"__fmaf_{rnd_name}", f"__frcp_{rnd_name}", f"__fsqrt_{rnd_name}"
            else:
                ops = [("__dadd", "add"), ("__dsub", "sub"), ("__dmul", "mul"), ("__ddiv", "div")]
                names = {op: f"{base}_{rnd_name}" for base, op in ops}
                fma_n, rcp_n, sqrt_n = f"__fma_{rnd_name}", f"__drcp_{rnd_name}", f"__dsqrt_{rnd_name}"
            add(names["add"], t, (t, t), f"{names['add']}({{0}}, {{1}})", lambda a, b, t=t, mo=mode: H.f_add(a, b, t, mo), tags=F)
            add(names["sub"], t, (t, t), f"{names['sub']}({{0}}, {{1}})",
                lambda a, b, t=t, mo=mode: H.f_add(a, b, t, mo, negate_b=True), tags=F)
            add(names["mul"], t, (t, t), f"{names['mul']}({{0}}, {{1}})", lambda a, b, t=t, mo=mode: H.f_mul(a, b, t, mo), tags=F)
            add(names["div"], t, (t, t), f"{names['div']}({{0}}, {{1}})", lambda a, b, t=t, mo=mode: H.f_div(a, b, t, mo), tags=F)
            add(fma_n, t, (t, t, t), f"{fma_n}({{0}}, {{1}}, {{2}})",
                lambda a, b, c, t=t, mo=mode: H.f_fma(a, b, c, t, mo), tags=F)
            one = H.encode(1, t)
            add(rcp_n, t, (t,), f"{rcp_n}({{0}})", lambda a, t=t, mo=mode, one=one: H.f_div(one, a, t, mo), tags=F)
            add(sqrt_n, t, (t,), f"{sqrt_n}({{0}})", lambda a, t=t, mo=mode: H.f_sqrt(a, t, mo), tags=F)
        for cop, name in (("<", "lt"), ("<=", "le"), ("==", "eq"), ("!=", "ne"), (">=", "ge")):
            add(f"cmp{cop}.{t}", "pred", (t, t), f"({{0}} {cop} {{1}})", lambda a, b, t=t, n=name: H.f_cmp(a, b, t, n),
                tags=F + ("cmp",))
        add(f"unord<.{t}", "pred", (t, t), "!({0} >= {1})", lambda a, b, t=t: 1 - H.f_cmp(a, b, t, "ge"), tags=F + ("cmp",))
        add(f"isnan.{t}", "pred", (t,), "isnan({0})", lambda a, t=t: int(H.is_nan(a, t)), tags=F + ("cmp",))
        add(f"isinf.{t}", "pred", (t,), "isinf({0})", lambda a, t=t: int(H.is_inf(a, t)), tags=F + ("cmp",))
        add(f"isfinite.{t}", "pred", (t,), "isfinite({0})",
            lambda a, t=t: int(not H.is_inf(a, t) and not H.is_nan(a, t)), tags=F + ("cmp",))
        add(f"signbit.{t}", "pred", (t,), "signbit({0})", lambda a, t=t: H.sign(a, t), tags=F + ("cmp",))
        add(f"select.{t}", t, ("pred", t, t), "({0} ? {1} : {2})", lambda p, a, b: a if p else b, tags=F)
    add("__saturatef", "f32", ("f32",), "__saturatef({0})", tags=F)
    add("__frsqrt_rn", "f32", ("f32",), "__frsqrt_rn({0})", lambda a: H.f_rsqrt(a, "f32"), tags=F)
    add("__fmaf_ieee_rn", "f32", ("f32", "f32", "f32"), "__fmaf_ieee_rn({0}, {1}, {2})",
        lambda a, b, c: H.f_fma(a, b, c, "f32"), tags=F)
    add("__fmul_rn.f32pair", "f32", ("f32", "f32", "f32"), "__fadd_rn(__fmul_rn({0}, {1}), {2})",
        lambda a, b, c: _chain_mul_add(a, b, c), tags=F)
    # bit casts
    add("__float_as_uint", "u32", ("f32",), "__float_as_uint({0})", lambda a: a, tags=("float", "conv"))
    add("__uint_as_float", "f32", ("u32",), "__uint_as_float({0})", lambda a: a, tags=("float", "conv"))
    add("__double_as_longlong", "i64", ("f64",), "__double_as_longlong({0})", lambda a: a, tags=("float", "conv"))
    add("__longlong_as_double", "f64", ("i64",), "__longlong_as_double({0})", lambda a: a, tags=("float", "conv"))
    add("__double2hiint", "i32", ("f64",), "__double2hiint({0})", lambda a: a >> 32, tags=("float", "conv"))
    add("__double2loint", "i32", ("f64",), "__double2loint({0})", lambda a: a & 0xFFFFFFFF, tags=("float", "conv"))
    add("__hiloint2double", "f64", ("i32", "i32"), "__hiloint2double({0}, {1})", lambda h, lo: h << 32 | lo,
        tags=("float", "conv"))


def _chain_mul_add(a, b, c):
    p = H.f_mul(a, b, "f32")
    return H.ANYNAN if p == H.ANYNAN else H.f_add(p, c, "f32")


HELPERS["frexp_modf"] = """template <class T> static __device__ __forceinline__ T frexp_m(T x) { int e; return frexp(x, &e); }
template <class T> static __device__ __forceinline__ int frexp_e(T x) { int e; frexp(x, &e); return e; }
template <class T> static __device__ __forceinline__ T modf_frac(T x) { T i; return modf(x, &i); }
template <class T> static __device__ __forceinline__ T modf_int(T x) { T i; modf(x, &i); return i; }"""


# ---------------------------------------------------------------- half and bfloat16 in C++
def _half_ops() -> None:
    F = ("half",)
    for t in ("f16", "bf16"):
        # __hadd/__hsub/__hmul are add/sub/mul.f16 without .rn: ptxas may fuse a product into a
        # following sum (HFMA); the generator never feeds an "hmul" result to an "hadd" op
        add(f"__hadd.{t}", t, (t, t), "__hadd({0}, {1})", lambda a, b, t=t: H.f_add(a, b, t), tags=F + ("hadd",))
        add(f"__hsub.{t}", t, (t, t), "__hsub({0}, {1})", lambda a, b, t=t: H.f_add(a, b, t, negate_b=True),
            tags=F + ("hadd",))
        add(f"__hmul.{t}", t, (t, t), "__hmul({0}, {1})", lambda a, b, t=t: H.f_mul(a, b, t), tags=F + ("hmul",))
        add(f"__hfma.{t}", t, (t, t, t), "__hfma({0}, {1}, {2})", lambda a, b, c, t=t: H.f_fma(a, b, c, t), tags=F)
        add(f"__hadd_rn.{t}", t, (t, t), "__hadd_rn({0}, {1})", lambda a, b, t=t: H.f_add(a, b, t), tags=F)
        add(f"__hmul_rn.{t}", t, (t, t), "__hmul_rn({0}, {1})", lambda a, b, t=t: H.f_mul(a, b, t), tags=F)
        add(f"__hadd_sat.{t}", t, (t, t), "__hadd_sat({0}, {1})", tags=F)
        add(f"__hfma_sat.{t}", t, (t, t, t), "__hfma_sat({0}, {1}, {2})", tags=F)
        add(f"__hfma_relu.{t}", t, (t, t, t), "__hfma_relu({0}, {1}, {2})", tags=F)
        add(f"__hdiv.{t}", t, (t, t), "__hdiv({0}, {1})", tags=F)
        add(f"__hneg.{t}", t, (t,), "__hneg({0})", tags=F)
        add(f"__habs.{t}", t, (t,), "__habs({0})", tags=F)
        add(f"__hmin.{t}", t, (t, t), "__hmin({0}, {1})", lambda a, b, t=t: H.f_minmax(a, b, t, False), tags=F)
        add(f"__hmax.{t}", t, (t, t), "__hmax({0}, {1})", lambda a, b, t=t: H.f_minmax(a, b, t, True), tags=F)
        add(f"__hmin_nan.{t}", t, (t, t), "__hmin_nan({0}, {1})", lambda a, b, t=t: H.f_minmax(a, b, t, False, True), tags=F)
        add(f"__hmax_nan.{t}", t, (t, t), "__hmax_nan({0}, {1})", lambda a, b, t=t: H.f_minmax(a, b, t, True, True), tags=F)
        for fn, name in (("__hlt", "lt"), ("__hle", "le"), ("__heq", "eq"), ("__hne", "ne"), ("__hgeu", "geu"),
                         ("__hltu", "ltu"), ("__hneu", "neu")):
            def cmp(a, b, t=t, name=name):
                if name == "ne":  # __hne is ordered: false when either is NaN
                    return 0 if H.is_nan(a, t) or H.is_nan(b, t) else H.f_cmp(a, b, t, "ne")
                return H.f_cmp(a, b, t, name)
            add(f"{fn}.{t}", "pred", (t, t), f"{fn}({{0}}, {{1}})", cmp, tags=F + ("cmp",))
        add(f"__hisnan.{t}", "pred", (t,), "__hisnan({0})", lambda a, t=t: int(H.is_nan(a, t)), tags=F + ("cmp",))
        add(f"__hisinf.{t}", "i32", (t,), "__hisinf({0})", tags=F + ("cmp",))
        for fn, mode in (("hrint", "rni"), ("htrunc", "rzi"), ("hfloor", "rmi"), ("hceil", "rpi")):
            add(f"{fn}.{t}", t, (t,), f"{fn}({{0}})", lambda a, t=t, mode=mode: H.f_round_int(a, t, mode), tags=F)
        add(f"select.{t}", t, ("pred", t, t), "({0} ? {1} : {2})", lambda p, a, b: a if p else b, tags=F)
    for t, v in (("f16", "h2"), ("bf16", "bf2")):
        add(f"__hadd2.{v}", v, (v, v), "__hadd2({0}, {1})", lambda a, b, t=t: _pair(H.f_add, a, b, t),
            tags=F + ("hadd",))
        add(f"__hmul2.{v}", v, (v, v), "__hmul2({0}, {1})", lambda a, b, t=t: _pair(H.f_mul, a, b, t),
            tags=F + ("hmul",))
        add(f"__hfma2.{v}", v, (v, v, v), "__hfma2({0}, {1}, {2})", lambda a, b, c, t=t: _pair3(H.f_fma, a, b, c, t), tags=F)
        add(f"__hsub2.{v}", v, (v, v), "__hsub2({0}, {1})", tags=F + ("hadd",))
        add(f"__hmax2.{v}", v, (v, v), "__hmax2({0}, {1})", tags=F)
        add(f"__hmin2_nan.{v}", v, (v, v), "__hmin2_nan({0}, {1})", tags=F)
        add(f"__hfma2_relu.{v}", v, (v, v, v), "__hfma2_relu({0}, {1}, {2})", tags=F)
        add(f"__hneg2.{v}", v, (v,), "__hneg2({0})", tags=F)
        add(f"__hbgt2.{v}", "pred", (v, v), "__hbgt2({0}, {1})", tags=F + ("cmp",))
        add(f"__hle2.{v}", v, (v, v), "__hle2({0}, {1})", tags=F + ("cmp",))
        add(f"__low2.{v}", t, (v,), "__low2half({0})" if t == "f16" else "__low2bfloat16({0})", lambda a: a & 0xFFFF,
            tags=F)
        add(f"__high2.{v}", t, (v,), "__high2half({0})" if t == "f16" else "__high2bfloat16({0})", lambda a: a >> 16,
            tags=F)
        mk = "__halves2half2" if t == "f16" else "__halves2bfloat162"
        add(f"{mk}", v, (t, t), f"{mk}({{0}}, {{1}})", lambda lo, hi: hi << 16 | lo, tags=F)
    add("__hcmadd", "h2", ("h2", "h2", "h2"), "__hcmadd({0}, {1}, {2})", tags=F)


def _pair(f, a, b, t):
    lo, hi = f(a & 0xFFFF, b & 0xFFFF, t), f(a >> 16, b >> 16, t)
    if H.ANYNAN in (lo, hi) or None in (lo, hi):
        return None
    return hi << 16 | lo


def _pair3(f, a, b, c, t):
    lo, hi = f(a & 0xFFFF, b & 0xFFFF, c & 0xFFFF, t), f(a >> 16, b >> 16, c >> 16, t)
    if H.ANYNAN in (lo, hi) or None in (lo, hi):
        return None
    return hi << 16 | lo


# ---------------------------------------------------------------- conversions in C++
def _conversions() -> None:
    C = ("conv",)
    ints32 = {"int": ("i32", 32, True), "uint": ("u32", 32, False), "ll": ("i64", 64, True), "ull": ("u64", 64, False)}
    for rn, mode in ROUND.items():
        for nm, (it, n, s) in ints32.items():
            add(f"__float2{nm}_{rn}", it, ("f32",), f"__float2{nm}_{rn}({{0}})",
                lambda a, mode=mode, n=n, s=s: H.f2i(a, "f32", mode + "i" if mode != "rn" else "rni", n, s), tags=C)
            add(f"__double2{nm}_{rn}", it, ("f64",), f"__double2{nm}_{rn}({{0}})",
                lambda a, mode=mode, n=n, s=s: H.f2i(a, "f64", mode + "i" if mode != "rn" else "rni", n, s), tags=C)
            add(f"__{nm}2float_{rn}", "f32", (it,), f"__{nm}2float_{rn}({{0}})",
                lambda a, mode=mode, it=it: H.i2f(sv(it, a), "f32", mode), tags=C)
            if nm in ("ll", "ull"):
                add(f"__{nm}2double_{rn}", "f64", (it,), f"__{nm}2double_{rn}({{0}})",
                    lambda a, mode=mode, it=it: H.i2f(sv(it, a), "f64", mode), tags=C)
            hn = {"int": "int", "uint": "uint", "ll": "ll", "ull": "ull"}[nm]
            add(f"__half2{hn}_{rn}", it, ("f16",), f"__half2{hn}_{rn}({{0}})", tags=C)
            add(f"__{hn}2half_{rn}", "f16", (it,), f"__{hn}2half_{rn}({{0}})",
                lambda a, mode=mode, it=it: H.i2f(sv(it, a), "f16", mode), tags=C)
            add(f"__bfloat162{hn}_{rn}", it, ("bf16",), f"__bfloat162{hn}_{rn}({{0}})", tags=C)
            add(f"__{hn}2bfloat16_{rn}", "bf16", (it,), f"__{hn}2bfloat16_{rn}({{0}})",
                lambda a, mode=mode, it=it: H.i2f(sv(it, a), "bf16", mode), tags=C)
        add(f"__double2float_{rn}", "f32", ("f64",), f"__double2float_{rn}({{0}})",
            lambda a, mode=mode: H.f2f(a, "f64", "f32", mode), tags=C)
        add(f"__float2half_{rn}", "f16", ("f32",), f"__float2half_{rn}({{0}})",
            lambda a, mode=mode: H.f2f(a, "f32", "f16", mode), tags=C)
        add(f"__float2bfloat16_{rn}", "bf16", ("f32",), f"__float2bfloat16_{rn}({{0}})",
            lambda a, mode=mode: H.f2f(a, "f32", "bf16", mode), tags=C)
        add(f"__half2short_{rn}", "i16", ("f16",), f"__half2short_{rn}({{0}})", tags=C)
        add(f"__ushort2half_{rn}", "f16", ("u16",), f"__ushort2half_{rn}({{0}})", lambda a, mode=mode: H.i2f(a, "f16", mode),
            tags=C)
    add("__int2double_rn", "f64", ("i32",), "__int2double_rn({0})", lambda a: H.i2f(H.sx(a, 32), "f64", "rn"), tags=C)
    add("__uint2double_rn", "f64", ("u32",), "__uint2double_rn({0})", lambda a: H.i2f(a, "f64", "rn"), tags=C)
    add("__half2float", "f32", ("f16",), "__half2float({0})", lambda a: H.f2f(a, "f16", "f32"), tags=C)
    add("__bfloat162float", "f32", ("bf16",), "__bfloat162float({0})", lambda a: H.f2f(a, "bf16", "f32"), tags=C)
    add("__double2half", "f16", ("f64",), "__double2half({0})", lambda a: H.f2f(a, "f64", "f16"), tags=C)
    add("__double2bfloat16", "bf16", ("f64",), "__double2bfloat16({0})", lambda a: H.f2f(a, "f64", "bf16"), tags=C)
    add("__half2char_rz", "i8", ("f16",), "(int8_t)__half2char_rz({0})", tags=C)
    add("__half2uchar_rz", "u8", ("f16",), "__half2uchar_rz({0})", tags=C)
    add("__float22half2_rn", "h2", ("f32", "f32"), "__floats2half2_rn({0}, {1})",
        lambda a, b: _both(H.f2f(a, "f32", "f16"), H.f2f(b, "f32", "f16")), tags=C)
    add("__floats2bfloat162_rn", "bf2", ("f32", "f32"), "__floats2bfloat162_rn({0}, {1})",
        lambda a, b: _both(H.f2f(a, "f32", "bf16"), H.f2f(b, "f32", "bf16")), tags=C)
    add("(float)double", "f32", ("f64",), "(float){0}", lambda a: H.f2f(a, "f64", "f32"), tags=C)
    add("(double)float", "f64", ("f32",), "(double){0}", lambda a: H.f2f(a, "f32", "f64"), tags=C)
    for it in INTS:
        add(f"(float){it}", "f32", (it,), "(float){0}", lambda a, it=it: H.i2f(sv(it, a), "f32", "rn"), tags=C)
        add(f"(double){it}", "f64", (it,), "(double){0}", lambda a, it=it: H.i2f(sv(it, a), "f64", "rn"), tags=C)
        # C++ float -> int is undefined out of range: clamp first, as careful code does
        lo, hi = (-(1 << (bits(it) - 1)), (1 << (bits(it) - 1)) - 1) if TYPES[it].signed else (0, (1 << bits(it)) - 1)
        add(f"({it})clampf", it, ("f32",), f"(({{0}}) >= {float(hi)}f || ({{0}}) < {float(lo)}f || isnan({{0}}) ? "
                                           f"({TYPES[it].c})0 : ({TYPES[it].c})({{0}}))", tags=C)


def _both(lo, hi):
    if H.ANYNAN in (lo, hi) or None in (lo, hi):
        return None
    return hi << 16 | lo


# ---------------------------------------------------------------- conversions in PTX (cvt)
CVT_INT = ["s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64"]
CVT_FLT = ["f16", "bf16", "f32", "f64"]
DT = {"s8": "i8", "u8": "u8", "s16": "i16", "u16": "u16", "s32": "i32", "u32": "u32", "s64": "i64", "u64": "u64",
      "f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64"}
FBITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}
MODES = {"rn": "rn", "rz": "rz", "rm": "rm", "rp": "rp"}


def _cvt_ref(d: str, s: str, rnd: str | None, ftz: bool, sat: bool):
    dt, st = DT[d], DT[s]

    def ref(a):
        if s in CVT_INT:
            v = sv(st, a)
            if d in CVT_INT:
                if sat:
                    lo, hi = ((-(1 << (bits(dt) - 1)), (1 << (bits(dt) - 1)) - 1) if TYPES[dt].signed
                              else (0, (1 << bits(dt)) - 1))
                    v = min(max(v, lo), hi)
                return v & m(dt)
            r = H.i2f(v, d, rnd)
            return _sat_float(r, d) if sat else r
        # float source
        if ftz and s == "f32" and _is_sub(a, s):
            a = H.zero_bits(s, bool(H.sign(a, s)))
        if d in CVT_INT:
            return H.f2i(a, s, rnd, bits(dt), TYPES[dt].signed)
        if d == s:
            r = H.f_round_int(a, s, rnd)
        elif FBITS[d] > FBITS[s] or (d == "f32" and s == "bf16"):
            r = H.f2f(a, s, d)
        else:
            r = H.f2f(a, s, d, rnd)
        if ftz and d == "f32" and isinstance(r, int) and _is_sub(r, d):
            r = H.zero_bits(d, bool(H.sign(r, d)))
        return _sat_float(r, d) if sat else r
    return ref


def _is_sub(b: int, fmt: str) -> bool:
    v = H.value(b, fmt)
    return v is not None and not isinstance(v, float) and v != 0 and abs(v) < Fraction_min_normal(fmt)


def Fraction_min_normal(fmt: str):
    from fractions import Fraction
    e = {"f16": 5, "bf16": 8, "f32": 8, "f64": 11}[fmt]
    return Fraction(2) ** (2 - (1 << (e - 1)))


def _sat_float(r, d):
    if r is None:
        return None
    if r == H.ANYNAN:
        return 0  # .sat: NaN -> +0
    v = H.value(r, d)
    if v < 0 or (v == 0):
        return 0
    if v > 1:
        return H.encode(1, d)
    return r


def _cvt_ops() -> None:
    for s in CVT_INT + CVT_FLT:
        for d in CVT_INT + CVT_FLT:
            for ins, rnd, ftz, sat in _cvt_forms(d, s):
                ref = None if "relu" in ins else _cvt_ref(d, s, rnd, ftz, sat)
                ptx_op(ins, DT[d], (DT[s],), f"{ins} %0, %1;", ref, ("conv",))
    # packed and narrow formats (sm_89/sm_90)
    ptx_op("cvt.rn.f16x2.f32", "h2", ("f32", "f32"), "cvt.rn.f16x2.f32 %0, %1, %2;",
           lambda a, b: _both(H.f2f(b, "f32", "f16"), H.f2f(a, "f32", "f16")), ("conv",))
    ptx_op("cvt.rz.bf16x2.f32", "bf2", ("f32", "f32"), "cvt.rz.bf16x2.f32 %0, %1, %2;",
           lambda a, b: _both(H.f2f(b, "f32", "bf16", "rz"), H.f2f(a, "f32", "bf16", "rz")), ("conv",))
    ptx_op("cvt.rn.relu.f16x2.f32", "h2", ("f32", "f32"), "cvt.rn.relu.f16x2.f32 %0, %1, %2;", tags=("conv",))
    ptx_op("cvt.rn.satfinite.bf16x2.f32", "bf2", ("f32", "f32"), "cvt.rn.satfinite.bf16x2.f32 %0, %1, %2;",
           tags=("conv",))
    ptx_op("cvt.rna.tf32.f32", "u32", ("f32",), "cvt.rna.tf32.f32 %0, %1;", tags=("conv",))
    for f8 in ("e4m3", "e5m2"):
        ptx_op(f"cvt.rn.satfinite.{f8}x2.f32", "u16", ("f32", "f32"), f"cvt.rn.satfinite.{f8}x2.f32 %0, %1, %2;",
               tags=("conv", "fp8"))
        ptx_op(f"cvt.rn.f16x2.{f8}x2", "u32", ("u16",), f"cvt.rn.f16x2.{f8}x2 %0, %1;", tags=("conv", "fp8"))
        ptx_op(f"cvt.rn.satfinite.{f8}x2.f16x2", "u16", ("h2",), f"cvt.rn.satfinite.{f8}x2.f16x2 %0, %1;",
               tags=("conv", "fp8"))
    ptx_op("cvt.pack.sat.s8.s32.b32", "u32", ("i32", "i32", "u32"), "cvt.pack.sat.s8.s32.b32 %0, %1, %2, %3;",
           lambda a, b, c: ((c << 16) & 0xFFFF0000) | (max(min(H.sx(a, 32), 127), -128) & 255) << 8
           | (max(min(H.sx(b, 32), 127), -128) & 255), ("conv",))
    ptx_op("cvt.pack.sat.u16.s32", "u32", ("i32", "i32"), "cvt.pack.sat.u16.s32 %0, %1, %2;",
           lambda a, b: (max(min(H.sx(a, 32), 65535), 0) << 16) | max(min(H.sx(b, 32), 65535), 0), ("conv",))


def _cvt_forms(d: str, s: str):
    """The cvt spellings that ptxas accepts for sm_90, with (rounding, ftz, sat)."""
    out = []
    if "bf16" in (s, d) and ({s, d} & {"s8", "u8"}):
        return []  # no 8-bit integer <-> bf16 conversion
    if s in CVT_INT and d in CVT_INT:
        if s == d:
            return []
        out.append((f"cvt.{d}.{s}", None, False, False))
        sb, db = int(s[1:]), int(d[1:])
        superset = db >= sb if s[0] == d[0] else (d[0] == "s" and db > sb)
        if not superset:  # ptxas refuses .sat where nothing can saturate
            out.append((f"cvt.sat.{d}.{s}", None, False, True))
        return out
    if s in CVT_FLT and d in CVT_INT:
        for r in ("rni", "rzi", "rmi", "rpi"):
            out.append((f"cvt.{r}.{d}.{s}", r, False, False))
        if s == "f32":
            out.append((f"cvt.rzi.ftz.{d}.{s}", "rzi", True, False))
        return out
    if s in CVT_INT and d in CVT_FLT:
        for r in ("rn", "rz", "rm", "rp"):
            out.append((f"cvt.{r}.{d}.{s}", r, False, False))
        if d in ("f32", "f64"):
            out.append((f"cvt.rn.sat.{d}.{s}", "rn", False, True))
        return out
    # float to float
    if s == d:
        if s in ("f32", "f64"):
            for r in ("rni", "rzi", "rmi", "rpi"):
                out.append((f"cvt.{r}.{d}.{s}", r, False, False))
            if s == "f32":
                out.append((f"cvt.rni.ftz.sat.{d}.{s}", "rni", True, True))
        return out
    widening = FBITS[d] > FBITS[s] or (s == "bf16" and d == "f32")
    if widening:
        out.append((f"cvt.{d}.{s}", None, False, False))
        if s == "f32":
            out.append((f"cvt.ftz.{d}.{s}", None, True, False))
        return out
    if {s, d} == {"f16", "bf16"}:
        out.append((f"cvt.rn.{d}.{s}", "rn", False, False))
        return out
    for r in ("rn", "rz", "rm", "rp"):
        out.append((f"cvt.{r}.{d}.{s}", r, False, False))
    if d == "f32":
        out.append((f"cvt.rn.ftz.sat.{d}.{s}", "rn", True, True))
    if d in ("f16", "bf16") and s == "f32":
        out.append((f"cvt.rn.relu.{d}.{s}", "rn", False, False))
    return out


# ---------------------------------------------------------------- floating point in PTX
def _ptx_float() -> None:
    F = ("float",)
    for t in ("f32", "f64"):
        for r in ("rn", "rz", "rm", "rp"):
            ptx_op(f"add.{r}.{t}", t, (t, t), f"add.{r}.{t} %0, %1, %2;", lambda a, b, t=t, r=r: H.f_add(a, b, t, r), F)
            ptx_op(f"fma.{r}.{t}", t, (t, t, t), f"fma.{r}.{t} %0, %1, %2, %3;",
                   lambda a, b, c, t=t, r=r: H.f_fma(a, b, c, t, r), F)
        ptx_op(f"div.rn.{t}", t, (t, t), f"div.rn.{t} %0, %1, %2;", lambda a, b, t=t: H.f_div(a, b, t), F)
        ptx_op(f"copysign.{t}", t, (t, t), f"copysign.{t} %0, %1, %2;", tags=F)
        for tp in ("finite", "infinite", "number", "notanumber", "normal", "subnormal"):
            ptx_op(f"testp.{tp}.{t}", "pred", (t,),
                   f"{{ .reg .pred %%p1; testp.{tp}.{t} %%p1, %1; selp.u32 %0, 1, 0, %%p1; }}",
                   lambda a, t=t, tp=tp: _testp(a, t, tp), F + ("cmp",))
        ptx_op(f"setp.num.{t}", "pred", (t, t), f"{{ .reg .pred q; setp.num.{t} q, %1, %2; selp.u32 %0, 1, 0, q; }}",
               lambda a, b, t=t: int(not H.is_nan(a, t) and not H.is_nan(b, t)), F + ("cmp",))
        ptx_op(f"set.gtu.u32.{t}", "u32", (t, t), f"set.gtu.u32.{t} %0, %1, %2;",
               lambda a, b, t=t: 0xFFFFFFFF if H.f_cmp(a, b, t, "gtu") else 0, F + ("cmp",))
    for r in ("rn", "rz", "rm", "rp"):
        ptx_op(f"mul.{r}.ftz.f32", "f32", ("f32", "f32"), f"mul.{r}.ftz.f32 %0, %1, %2;", tags=F)
        ptx_op(f"sqrt.{r}.ftz.f32", "f32", ("f32",), f"sqrt.{r}.ftz.f32 %0, %1;", tags=F)
    ptx_op("add.rn.sat.f32", "f32", ("f32", "f32"), "add.rn.sat.f32 %0, %1, %2;", tags=F)
    ptx_op("fma.rn.ftz.sat.f32", "f32", ("f32", "f32", "f32"), "fma.rn.ftz.sat.f32 %0, %1, %2, %3;", tags=F)
    ptx_op("div.rn.ftz.f32", "f32", ("f32", "f32"), "div.rn.ftz.f32 %0, %1, %2;", tags=F)
    ptx_op("rcp.rn.ftz.f32", "f32", ("f32",), "rcp.rn.ftz.f32 %0, %1;", tags=F)
    ptx_op("rcp.rz.f64", "f64", ("f64",), "rcp.rz.f64 %0, %1;", tags=F)
    ptx_op("min.NaN.f32", "f32", ("f32", "f32"), "min.NaN.f32 %0, %1, %2;",
           lambda a, b: H.f_minmax(a, b, "f32", False, True), F)
    ptx_op("max.NaN.f32", "f32", ("f32", "f32"), "max.NaN.f32 %0, %1, %2;",
           lambda a, b: H.f_minmax(a, b, "f32", True, True), F)
    ptx_op("max.xorsign.abs.f32", "f32", ("f32", "f32"), "max.xorsign.abs.f32 %0, %1, %2;", tags=F)
    ptx_op("min.ftz.NaN.xorsign.abs.f32", "f32", ("f32", "f32"), "min.ftz.NaN.xorsign.abs.f32 %0, %1, %2;", tags=F)
    ptx_op("max.ftz.f32", "f32", ("f32", "f32"), "max.ftz.f32 %0, %1, %2;", tags=F)
    ptx_op("min.f32.3", "f32", ("f32", "f32", "f32"), "{ .reg .f32 t; min.f32 t, %1, %2; min.f32 %0, t, %3; }", tags=F)
    ptx_op("abs.ftz.f32", "f32", ("f32",), "abs.ftz.f32 %0, %1;", tags=F)
    ptx_op("neg.ftz.f32", "f32", ("f32",), "neg.ftz.f32 %0, %1;", tags=F)
    ptx_op("add.rn.ftz.f32", "f32", ("f32", "f32"), "add.rn.ftz.f32 %0, %1, %2;", tags=F)
    ptx_op("mad.rn.f64", "f64", ("f64", "f64", "f64"), "mad.rn.f64 %0, %1, %2, %3;",
           lambda a, b, c: H.f_fma(a, b, c, "f64"), F)
    # half precision
    HF = ("half",)
    for t in ("f16", "bf16"):
        ptx_op(f"add.rn.{t}", t, (t, t), f"add.rn.{t} %0, %1, %2;", lambda a, b, t=t: H.f_add(a, b, t), HF)
        ptx_op(f"mul.rn.{t}", t, (t, t), f"mul.rn.{t} %0, %1, %2;", lambda a, b, t=t: H.f_mul(a, b, t), HF)
        ptx_op(f"fma.rn.{t}", t, (t, t, t), f"fma.rn.{t} %0, %1, %2, %3;", lambda a, b, c, t=t: H.f_fma(a, b, c, t), HF)
        ptx_op(f"fma.rn.relu.{t}", t, (t, t, t), f"fma.rn.relu.{t} %0, %1, %2, %3;", tags=HF)
        ptx_op(f"min.NaN.{t}", t, (t, t), f"min.NaN.{t} %0, %1, %2;", lambda a, b, t=t: H.f_minmax(a, b, t, False, True), HF)
        ptx_op(f"max.xorsign.abs.{t}", t, (t, t), f"max.xorsign.abs.{t} %0, %1, %2;", tags=HF)
        ptx_op(f"neg.{t}", t, (t,), f"neg.{t} %0, %1;", tags=HF)
        ptx_op(f"abs.{t}", t, (t,), f"abs.{t} %0, %1;", tags=HF)
    ptx_op("add.rn.ftz.f16", "f16", ("f16", "f16"), "add.rn.ftz.f16 %0, %1, %2;", tags=HF)
    ptx_op("sub.rn.f16", "f16", ("f16", "f16"), "sub.rn.f16 %0, %1, %2;",
           lambda a, b: H.f_add(a, b, "f16", "rn", negate_b=True), HF)
    ptx_op("mul.rn.sat.f16", "f16", ("f16", "f16"), "mul.rn.sat.f16 %0, %1, %2;", tags=HF)
    ptx_op("fma.rn.sat.f16x2", "h2", ("h2", "h2", "h2"), "fma.rn.sat.f16x2 %0, %1, %2, %3;", tags=HF)
    ptx_op("add.rn.bf16x2", "bf2", ("bf2", "bf2"), "add.rn.bf16x2 %0, %1, %2;",
           lambda a, b: _pair(H.f_add, a, b, "bf16"), HF)
    ptx_op("min.NaN.bf16x2", "bf2", ("bf2", "bf2"), "min.NaN.bf16x2 %0, %1, %2;", tags=HF)
    ptx_op("setp.ltu.f16", "pred", ("f16", "f16"), "{ .reg .pred q; setp.ltu.f16 q, %1, %2; selp.u32 %0, 1, 0, q; }",
           lambda a, b: H.f_cmp(a, b, "f16", "ltu"), HF + ("cmp",))
    ptx_op("set.gt.u32.f16x2", "u32", ("h2", "h2"), "set.gt.u32.f16x2 %0, %1, %2;", tags=HF + ("cmp",))


def _testp(a: int, t: str, tp: str) -> int:
    nan, inf = H.is_nan(a, t), H.is_inf(a, t)
    v = H.value(a, t)
    sub = v is not None and not inf and v != 0 and _is_sub(a, t)
    normal = v is not None and not inf and not sub  # the H200: zero counts as normal (tests/isa/gpu)
    return int({"finite": not nan and not inf, "infinite": inf, "number": not nan, "notanumber": nan,
                "normal": normal, "subnormal": sub}[tp])


# ---------------------------------------------------------------- inline PTX spelled as the headers spell it
def _header_spellings() -> None:
    """Register declarations inside { } blocks as cuda_fp16.hpp, numba and CUTLASS write them:
    several names on one line, .b8 registers, `.reg.b16` without a space, names that shadow
    the function's own (%p1)."""
    T = ("ptx", "int", "spelling")
    asm_fn("p_swap_halves", "u32", ("u32",), "{ .reg .b16 i, r, t; mov.b32 {i, r}, %1; add.u16 t, i, r; "
           "mov.b32 %0, {t, i}; }")
    add("spell.b16list", "u32", ("u32",), "p_swap_halves({0})",
        lambda a: (a & 0xFFFF) << 16 | ((a & 0xFFFF) + (a >> 16) & 0xFFFF), ("p_swap_halves",), T)
    asm_fn("p_b8reg", "u32", ("u32",), "{ .reg .b8 myreg; cvt.u8.u32 myreg, %1; cvt.u32.u8 %0, myreg; }")
    add("spell.b8", "u32", ("u32",), "p_b8reg({0})", lambda a: a & 255, ("p_b8reg",), T)
    asm_fn("p_nospace", "u32", ("u32",), "{.reg.b16 h, r; mov.b32 {h, r}, %1; mov.b32 %0, {r, h}; }")
    add("spell.nospace", "u32", ("u32",), "p_nospace({0})", lambda a: (a >> 16) | (a & 0xFFFF) << 16, ("p_nospace",), T)
    asm_fn("p_shadow", "u32", ("u32", "u32"), "{ .reg .pred %%p1; .reg .pred %%p2; setp.ne.u32 %%p1, %1, 0; "
           "setp.lt.u32 %%p2, %1, %2; and.pred %%p1, %%p1, %%p2; selp.u32 %0, %2, %1, %%p1; }")
    add("spell.shadow", "u32", ("u32", "u32"), "p_shadow({0}, {1})", lambda a, b: b if (a != 0 and a < b) else a,
        ("p_shadow",), T)
    asm_fn("p_nested", "u32", ("u32", "u32"), "{ .reg .u32 t; { .reg .u32 t; add.u32 t, %1, %2; mov.u32 %0, t; } "
           "mov.u32 t, %0; shl.b32 %0, t, 1; }")
    add("spell.nested", "u32", ("u32", "u32"), "p_nested({0}, {1})", lambda a, b: (a + b) * 2 & 0xFFFFFFFF,
        ("p_nested",), T)
    asm_fn("p_h2bits", "u32", ("f32", "f32"), "{ .reg .b16 lo, hi; cvt.rn.f16.f32 lo, %1; cvt.rn.f16.f32 hi, %2; "
           "mov.b32 %0, {lo, hi}; }")
    add("spell.h2pack", "u32", ("f32", "f32"), "p_h2bits({0}, {1})",
        lambda a, b: _both(H.f2f(a, "f32", "f16"), H.f2f(b, "f32", "f16")), ("p_h2bits",), T)


def _libm() -> None:
    """libdevice functions whose code is IEEE arithmetic only (no .approx instruction in their
    PTX, checked with nvcc 13): the GPU and cuport must agree bit for bit."""
    one = {"f32": ["sinf", "cosf", "logf", "log2f", "log10f", "log1pf", "sinpif", "cospif"],
           "f64": ["sin", "cos", "exp", "exp2", "exp10", "expm1", "sinh", "sinpi", "cospi"]}
    two = {"f32": ["atan2f", "hypotf"], "f64": ["pow", "atan2"]}
    for t in ("f32", "f64"):
        for fn in one[t]:
            add(f"{fn}.{t}", t, (t,), f"{fn}({{0}})", tags=("float", "libm"))
        for fn in two[t]:
            add(f"{fn}.{t}", t, (t, t), f"{fn}({{0}}, {{1}})", tags=("float", "libm"))


_int_ops()
_intrinsics()
_ptx_int()
_float_ops()
_half_ops()
_conversions()
_cvt_ops()
_ptx_float()
_header_spellings()
_libm()


# ---------------------------------------------------------------- approximate operations
@dataclass
class Approx:
    """An approximate operation on f32: its C expression of one operand or two, the domain its
    operands are mapped into (C expressions of the raw input `x`), the exact function (Python),
    and the documented bound: ("ulp", n), ("abs", e), or ("abs_or_ulp", e, n, lo, hi) meaning
    absolute error e for operands in [lo, hi], n ulp elsewhere."""
    name: str
    expr: str
    domain: tuple[str, ...]
    exact: Callable
    bound: tuple
    helpers: tuple[str, ...] = ()
    tags: frozenset[str] = frozenset()


def _exp(v: float) -> float:
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def _exp2(v: float) -> float:
    try:
        return 2.0 ** v
    except OverflowError:
        return math.inf


def _exp10(v: float) -> float:
    try:
        return 10.0 ** v
    except OverflowError:
        return math.inf


def _log(f):
    def g(v: float) -> float:
        if v == 0:
            return -math.inf
        if v < 0 or math.isnan(v):
            return math.nan
        return math.inf if math.isinf(v) else f(v)
    return g


def _inf_nan(f):
    return lambda v: math.nan if math.isinf(v) else f(v)


def _tan(v: float) -> float:
    return math.nan if math.isinf(v) else math.tan(v)


def _sqrt(v: float) -> float:
    return math.nan if v < 0 else math.sqrt(v)


def _rsqrt(v: float) -> float:
    if v == 0:
        return math.copysign(math.inf, v)
    return math.nan if v < 0 else (0.0 if math.isinf(v) else 1 / math.sqrt(v))


def _rcp(v: float) -> float:
    return math.copysign(math.inf, v) if v == 0 else 1 / v


def _div(u: float, v: float) -> float:
    if v == 0:
        return math.nan if u == 0 or math.isnan(u) else math.copysign(math.inf, u) * math.copysign(1.0, v)
    if math.isinf(u) and math.isinf(v):
        return math.nan
    return u / v


def _pow(u: float, v: float) -> float:
    try:
        return math.pow(u, v)
    except ValueError:
        return math.inf if u == 0 else math.nan
    except OverflowError:
        return math.inf


def _sinpi(v: float) -> float:
    """sin(pi v) with the argument reduced exactly (v mod 2), so that integers give zeros."""
    if math.isinf(v) or math.isnan(v):
        return math.nan
    r = math.fmod(v, 2.0)
    if r == 0 or abs(r) == 1:
        return math.copysign(0.0, v) if r == 0 else math.copysign(0.0, -v)
    return math.sin(math.pi * r)


def _approx() -> list[Approx]:
    pi = "3.14159265f"
    unit = "__saturatef(fabsf({x})) * 2.0f - 1.0f"  # [-1, 1] from anything finite; NaN -> -1
    small = "fminf(fmaxf({x}, -80.0f), 80.0f)"
    pos = "fabsf({x})"
    rng = f"({unit}) * {pi}"
    a = [
        Approx("__sinf", "__sinf({0})", (rng,), math.sin, ("abs", 2 ** -21.41)),
        Approx("__cosf", "__cosf({0})", (rng,), math.cos, ("abs", 2 ** -21.19)),
        Approx("__expf", "__expf({0})", (small,), _exp, ("expf",)),
        Approx("__exp10f", "__exp10f({0})", ("fminf(fmaxf({x}, -35.0f), 35.0f)",), _exp10, ("exp10f",)),
        Approx("__logf", "__logf({0})", (pos,), _log(math.log), ("abs_or_ulp", 2 ** -21.41, 3, 0.5, 2.0)),
        Approx("__log2f", "__log2f({0})", (pos,), _log(math.log2), ("abs_or_ulp", 2 ** -22, 2, 0.5, 2.0)),
        Approx("__log10f", "__log10f({0})", (pos,), _log(math.log10), ("abs_or_ulp", 2 ** -24, 3, 0.5, 2.0)),
        Approx("__fdividef", "__fdividef({0}, {1})", ("{x}", "copysignf(fminf(fmaxf(fabsf({x}), 1e-30f), 1e30f), {x})"),
               _div, ("ulp", 2)),
        Approx("rsqrtf", "rsqrtf({0})", (pos,), _rsqrt, ("ulp", 2)),
        Approx("expf", "expf({0})", (small,), _exp, ("ulp", 2)),
        Approx("exp2f", "exp2f({0})", ("fminf(fmaxf({x}, -140.0f), 125.0f)",), _exp2, ("ulp", 2)),
        Approx("tanf", "tanf({0})", ("{x}",), _tan, ("ulp", 4)),
        Approx("atanf", "atanf({0})", ("{x}",), math.atan, ("ulp", 2)),
        Approx("tanhf", "tanhf({0})", ("{x}",), math.tanh, ("ulp", 2)),
        Approx("powf", "powf({0}, {1})", (pos, "fminf(fmaxf({x}, -20.0f), 20.0f)"), _pow, ("ulp", 4)),
        Approx("cbrtf", "cbrtf({0})", ("{x}",), lambda v: math.copysign(abs(v) ** (1 / 3), v), ("ulp", 1)),
        Approx("erff", "erff({0})", ("{x}",), math.erf, ("ulp", 2)),
        Approx("div.full.f32", "p_div_full({0}, {1})", ("{x}", "copysignf(fminf(fmaxf(fabsf({x}), 1e-30f), 1e30f), {x})"),
               _div, ("ulp", 2), ("p_div_full",)),
        Approx("rcp.approx.f32", "p_rcp_approx({0})", ("{x}",), _rcp, ("ulp", 1), ("p_rcp_approx",)),
        Approx("sqrt.approx.f32", "p_sqrt_approx({0})", (pos,), _sqrt, ("rel", 2 ** -23), ("p_sqrt_approx",)),
        Approx("ex2.approx.f32", "p_ex2_approx({0})", ("fminf(fmaxf({x}, -126.0f), 126.0f)",), _exp2,
               ("ulp", 2), ("p_ex2_approx",)),
        Approx("tanh.approx.f32", "p_tanh_approx({0})", ("{x}",), math.tanh, ("rel", 2 ** -11), ("p_tanh_approx",)),
    ]
    asm_fn("p_div_full", "f32", ("f32", "f32"), "div.full.f32 %0, %1, %2;")
    asm_fn("p_rcp_approx", "f32", ("f32",), "rcp.approx.f32 %0, %1;")
    asm_fn("p_sqrt_approx", "f32", ("f32",), "sqrt.approx.f32 %0, %1;")
    asm_fn("p_ex2_approx", "f32", ("f32",), "ex2.approx.f32 %0, %1;")
    asm_fn("p_tanh_approx", "f32", ("f32",), "tanh.approx.f32 %0, %1;")
    return a


APPROX: dict[str, Approx] = {a.name: a for a in _approx()}


def by_tag(*tags: str) -> list[Op]:
    return [o for o in OPS.values() if any(t in o.tags for t in tags)]
