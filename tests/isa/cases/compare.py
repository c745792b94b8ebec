"""Comparison and selection (PTX ISA §9.7.6, §9.7.7): setp, set, selp, slct on integer,
f32/f64 and f16/bf16 types; expected values from Python comparisons.

All fourteen float comparisons of one type run in one kernel (one predicate each).
"""

import math

from fpref import bits_f32, rnd, uniform_variants
from ptxgen import Case, bits

CASES: list[Case] = []
add = CASES.append
INF, NAN = math.inf, math.nan
MIN_SUB32 = bits_f32(1)

FCMP = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b and not (math.isnan(a) or math.isnan(b)),
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    "num": lambda a, b: not (math.isnan(a) or math.isnan(b)), "nan": lambda a, b: math.isnan(a) or math.isnan(b),
}
for _c in ("eq", "ne", "lt", "le", "gt", "ge"):
    FCMP[_c + "u"] = (lambda c: lambda a, b: math.isnan(a) or math.isnan(b) or FCMP[c](a, b))(_c)
FPAIRS = [(1.0, 2.0), (2.0, 1.0), (1.0, 1.0), (0.0, -0.0), (NAN, 1.0), (1.0, NAN), (NAN, NAN), (-INF, INF),
          (INF, INF), (MIN_SUB32, 0.0), (-1.5, -1.25)]


def all_cmps(t: str, ftz: str = "") -> list[tuple[str, str, list[str]]]:
    """Kernels running every comparison (seven per kernel: the harness has 8 result slots)."""
    out = []
    names = list(FCMP)
    for ops in (names[:7], names[7:]):
        tmpl = "{d0}, {a}, {b}" + "".join(f"; setp.{op}{ftz}.{t} {{d{i + 1}}}, {{a}}, {{b}}" for i, op in enumerate(ops[1:]))
        out.append((f"setp.{ops[0]}{ftz}.{t}", tmpl, ops))
    return out


def flushed(x: float) -> float:
    return 0.0 if x != 0 and abs(x) < 2.0 ** -126 else x


for t in ("f32", "f64"):
    for instr, tmpl, ops in all_cmps(t):
        for a, b in FPAIRS:
            add(Case(instr, ["pred"] * len(ops), [t, t], [a, b], [FCMP[op](a, b) for op in ops], template=tmpl))
for instr, tmpl, ops in all_cmps("f32", ".ftz"):
    for a, b in [(MIN_SUB32, 0.0), (MIN_SUB32, -MIN_SUB32), (1.0, MIN_SUB32)]:
        add(Case(instr, ["pred"] * len(ops), ["f32", "f32"], [a, b], [FCMP[op](flushed(a), flushed(b)) for op in ops],
                 template=tmpl))

# integers: signed, unsigned (lo/ls/hi/hs), bit-size eq/ne
ICMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
        "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}
UCMP = {"lo": ICMP["lt"], "ls": ICMP["le"], "hi": ICMP["gt"], "hs": ICMP["ge"]}


def ival(x: int, t: str) -> int:
    n = int(t[1:])
    x &= (1 << n) - 1
    return x - (1 << n) if t[0] == "s" and x >> (n - 1) else x


for t in ("s16", "s32", "u32", "s64", "u64", "u16"):
    cmps = dict(ICMP, **(UCMP if t[0] == "u" else {}))
    ops = list(cmps)[:8]
    tmpl = "{d0}, {a}, {b}" + "".join(f"; setp.{op}.{t} {{d{i + 1}}}, {{a}}, {{b}}" for i, op in enumerate(ops[1:]))
    for a, b in [(1, 2), (-1, 1), (5, 5), (-(2 ** 31), 2 ** 31 - 1), (0x8000, 0x7FFF), (-(2 ** 63), 1)]:
        x, y = ival(a, t), ival(b, t)
        add(Case(f"setp.{ops[0]}.{t}", ["pred"] * len(ops), [t, t], [a, b], [cmps[op](x, y) for op in ops], template=tmpl))
for a, b in [(0xFFFF, 0xFFFF), (0x8000, 0)]:
    add(Case("setp.eq.b16", ["pred", "pred"], ["b16", "b16"], [a, b], [a == b, a != b],
             template="{d0}, {a}, {b}; setp.ne.b16 {d1}, {a}, {b}"))

# .and/.or/.xor with a predicate (and its negation); p|q destinations get t and !t
for a, b, c in [(1.0, 2.0, True), (1.0, 2.0, False), (2.0, 1.0, True), (NAN, 1.0, True)]:
    t = a < b
    add(Case("setp.lt.and.f32", ["pred", "pred"], ["f32", "f32", "pred"], [a, b, c], [t and c, (not t) and c],
             template="{d0}|{d1}, {a}, {b}, {c}"))
    add(Case("setp.lt.or.f32", "pred", ["f32", "f32", "pred"], [a, b, c], [t or not c], template="{d}, {a}, {b}, !{c}"))
    add(Case("setp.ltu.xor.f64", ["pred", "pred"], ["f64", "f64", "pred"], [a, b, c],
             [FCMP["ltu"](a, b) != c, (not FCMP["ltu"](a, b)) != c], template="{d0}|{d1}, {a}, {b}, {c}"))
for a, b in [(3, 4), (4, 3), (-1, 0)]:
    add(Case("setp.gt.s32", ["pred", "pred"], ["s32", "s32"], [a, b], [a > b, not a > b], template="{d0}|{d1}, {a}, {b}"))
add(Case("setp.lt.f32", "pred", ["f32"], [0.5], [True], template="{d}, {a}, 0f3F800000"))
add(Case("setp.eq.s32", "pred", ["s32"], [-7], [True], template="{d}, {a}, -7"))


# ---------------------------------------------------------------- f16 / bf16
def h(x: float, e: str = "f16") -> int:
    return 0x7E00 if (e == "f16" and math.isnan(x)) else 0x7FC0 if math.isnan(x) else rnd(x, e) if not math.isinf(x) \
        else (0x7C00 if e == "f16" else 0x7F80) | (0x8000 if x < 0 else 0)


HPAIRS = [(1.0, 2.0), (2.0, 2.0), (0.0, -0.0), (NAN, 1.0), (-INF, 65504.0), (2.0 ** -24, 0.0)]
for e in ("f16", "bf16"):
    for instr, tmpl, ops in all_cmps(e):
        for a, b in HPAIRS:
            add(Case(instr, ["pred"] * len(ops), [e, e], [a, b], [FCMP[op](a, b) for op in ops], template=tmpl))
    # x2: p from the low halves, q from the high halves
    for (a0, b0), (a1, b1) in [(HPAIRS[0], HPAIRS[1]), (HPAIRS[3], HPAIRS[2]), (HPAIRS[4], HPAIRS[5])]:
        pa, pb = h(a0, e) | h(a1, e) << 16, h(b0, e) | h(b1, e) << 16
        add(Case(f"setp.le.{e}x2", ["pred", "pred"], ["b32", "b32"], [pa, pb], [a0 <= b0, a1 <= b1],
                 template="{d0}|{d1}, {a}, {b}"))
        for c in (True, False):
            add(Case(f"setp.ltu.and.{e}x2", ["pred", "pred"], ["b32", "b32", "pred"], [pa, pb, c],
                     [FCMP["ltu"](a0, b0) and c, FCMP["ltu"](a1, b1) and c], template="{d0}|{d1}, {a}, {b}, {c}"))
for a, b in [(2.0 ** -24, 0.0), (-(2.0 ** -24), 2.0 ** -24), (1.0, 0.5)]:
    add(Case("setp.gt.ftz.f16", ["pred", "pred"], ["f16", "f16"], [a, b], [a > b and abs(a) >= 2 ** -14, a == b or
             (abs(a) < 2 ** -14 and abs(b) < 2 ** -14)], template="{d0}, {a}, {b}; setp.eq.ftz.f16 {d1}, {a}, {b}"))

# ---------------------------------------------------------------- set
for a, b in [(1.0, 2.0), (2.0, 1.0), (NAN, 1.0)]:
    t = a < b
    add(Case("set.lt.u32.f32", ["u32", "s32", "f32"], ["f32", "f32"], [a, b], [0xFFFFFFFF * t, -1 * t, 1.0 * t],
             template="{d0}, {a}, {b}; set.lt.s32.f32 {d1}, {a}, {b}; set.lt.f32.f32 {d2}, {a}, {b}"))
    add(Case("set.ltu.and.u32.f64", "u32", ["f64", "f64", "pred"], [a, b, True], [0xFFFFFFFF * FCMP["ltu"](a, b)],
             template="{d}, {a}, {b}, {c}"))
for a, b in [(-1, 1), (1, -1), (7, 7)]:
    uhi = (a & 0xFFFFFFFF) > (b & 0xFFFFFFFF)
    add(Case("set.gt.f32.s32", ["f32", "u32"], ["s32", "s32"], [a, b], [1.0 * (a > b), 0xFFFFFFFF * uhi],
             template="{d0}, {a}, {b}; set.hi.u32.u32 {d1}, {a}, {b}"))
    add(Case("set.gt.or.f32.s32", "f32", ["s32", "s32", "pred"], [a, b, False], [1.0], template="{d}, {a}, {b}, !{c}"))
for a, b in [(1.0, 2.0), (2.0, 1.0), (NAN, NAN)]:
    r = a < b
    add(Case("set.lt.f16.f16", ["f16", "u16", "u32", "bf16"], ["f16", "f16"], [a, b],
             [1.0 * r, 0xFFFF * r, 0xFFFFFFFF * r, 1.0 * r],
             template="{d0}, {a}, {b}; set.lt.u16.f16 {d1}, {a}, {b}; set.lt.u32.f16 {d2}, {a}, {b};"
                      " set.lt.bf16.f16 {d3}, {a}, {b}"))
    add(Case("set.lt.f16.f32", "f16", ["f32", "f32"], [a, b], [1.0 * r]))
for (a0, b0), (a1, b1) in [((1.0, 2.0), (2.0, 1.0)), ((NAN, 0.0), (-1.0, -1.0))]:
    pa, pb = h(a0) | h(a1) << 16, h(b0) | h(b1) << 16
    t0, t1 = FCMP["le"](a0, b0), FCMP["le"](a1, b1)
    add(Case("set.le.f16x2.f16x2", ["b32", "b32"], ["b32", "b32"], [pa, pb],
             [0x3C00 * t0 | (0x3C00 * t1) << 16, 0xFFFF * t0 | (0xFFFF * t1) << 16],
             template="{d0}, {a}, {b}; set.le.u32.f16x2 {d1}, {a}, {b}"))
    bpa, bpb = h(a0, "bf16") | h(a1, "bf16") << 16, h(b0, "bf16") | h(b1, "bf16") << 16
    add(Case("set.le.bf16x2.bf16x2", "b32", ["b32", "b32"], [bpa, bpb], [0x3F80 * t0 | (0x3F80 * t1) << 16]))

# ---------------------------------------------------------------- selp, slct
for p in (True, False):
    add(Case("selp.b32", "b32", ["b32", "b32", "pred"], [0x12345678, 0x9ABCDEF0, p], [0x12345678 if p else 0x9ABCDEF0]))
    add(Case("selp.f32", "f32", ["f32", "f32", "pred"], [1.5, bits(0x7FC00001), p], [1.5 if p else bits(0x7FC00001)]))
    add(Case("selp.f64", "f64", ["f64", "f64", "pred"], [-0.0, 2.5, p], [-0.0 if p else 2.5]))
    add(Case("selp.s16", "s16", ["s16", "s16", "pred"], [-2, 3, p], [-2 if p else 3]))
    add(Case("selp.u64", "u64", ["u64", "pred"], [2 ** 64 - 1, p], [2 ** 64 - 1 if p else 7], template="{d}, {a}, 7, {b}"))
    add(Case("selp.f32", "f32", ["pred"], [p], [1.0 if p else 0.0], template="{d}, 0f3F800000, 0f00000000, {a}"))
for c in [0, 1, -1, 2 ** 31 - 1, -(2 ** 31)]:
    add(Case("slct.u32.s32", "u32", ["u32", "u32", "s32"], [11, 22, c], [11 if c >= 0 else 22]))
    add(Case("slct.s64.s32", "s64", ["s64", "s64", "s32"], [-11, 2 ** 40, c], [-11 if c >= 0 else 2 ** 40]))
for c in [0.0, -0.0, 1.0, -1.0, NAN, INF, -INF, -MIN_SUB32]:
    want = 1.5 if (not math.isnan(c) and c >= 0) else -2.5
    add(Case("slct.f32.f32", "f32", ["f32", "f32", "f32"], [1.5, -2.5, c], [want]))
    add(Case("slct.f64.f32", "f64", ["f64", "f64", "f32"], [1.5, -2.5, c], [want]))
    add(Case("slct.ftz.b16.f32", "b16", ["b16", "b16", "f32"], [0x1111, 0x2222, c],
             [0x1111 if (not math.isnan(c) and (c >= 0 or c == -MIN_SUB32)) else 0x2222]))

# every kernel once more with its operands in uniform registers: the scalar code path
CASES += uniform_variants(CASES)
