"""Integer arithmetic (PTX ISA §9.7.1, §9.7.2): expected values computed in plain Python.

Cases marked note="gpu" are where the manual leaves the answer to the hardware (division by
zero, INT_MIN / -1, the carry flag after a subtraction, sm_90-only forms); `expect` there is
what ptxas's sm_90 expansion computes, and the H200 recording is the oracle.
"""

import random

from ptxgen import Case

M = {n: (1 << n) - 1 for n in (8, 16, 32, 64)}


def u(v: int, n: int) -> int:
    return v & M[n]


def s(v: int, n: int) -> int:
    v &= M[n]
    return v - (1 << n) if v >> (n - 1) else v


def val(v: int, t: str) -> int:
    """The value of bits `v` as PTX type t (u/s and width from the name)."""
    n = int(t[1:])
    return s(v, n) if t[0] == "s" else u(v, n)


#: Edge inputs per width (as signed Python ints; the harness reduces them to the width).
EDGE = {
    16: [0, 1, -1, 2, -2, 7, 0x7FFF, -0x8000, 0x1234, -0x1234],
    32: [0, 1, -1, 2, -2, 7, 0x7FFFFFFF, -0x80000000, 0x12345678, -0x789ABCDE, 0xFFFF],
    64: [0, 1, -1, 2, -2, 7, 2**63 - 1, -(2**63), 0x123456789ABCDEF0, -0x0FEDCBA987654321, 2**32],
}
PAIRS = [(a, b) for a in [0, 1, -1, 7, 0x7FFFFFFF, -0x80000000, 0x12345678] for b in [0, 1, -1, 3, -0x80000000, 0x9ABCDEF]]

CASES: list[Case] = []
add = CASES.append


def pairs(n: int) -> list[tuple[int, int]]:
    e = EDGE[n]
    return [(a, b) for a in e for b in e[::2]]


# ---------------------------------------------------------------- add, sub, .sat, 16x2
for t in ("u16", "s32", "u64"):
    n = int(t[1:])
    for a, b in pairs(n):
        add(Case(f"add.{t}", t, [t, t], [a, b], [a + b]))
        add(Case(f"sub.{t}", t, [t, t], [a, b], [a - b]))
for a, b in pairs(32):
    a, b = s(a, 32), s(b, 32)
    add(Case("add.sat.s32", "s32", ["s32", "s32"], [a, b], [max(-2**31, min(2**31 - 1, a + b))]))
    add(Case("sub.sat.s32", "s32", ["s32", "s32"], [a, b], [max(-2**31, min(2**31 - 1, a - b))]))
add(Case("add.s32", "s32", ["s32"], [0x7FFFFFFF], [0x7FFFFFFF + 10], template="{d}, {a}, 10"))
add(Case("add.s32", "s32", ["s32"], [5], [0], template="{d}, {a}, -5"))
add(Case("sub.u64", "u64", ["u64"], [3], [2**64 - 2], template="{d}, 1, {a}"))


def halves(x: int) -> list[int]:
    return [x & 0xFFFF, (x >> 16) & 0xFFFF]


def pack(h: list[int]) -> int:
    return (h[0] & 0xFFFF) | (h[1] & 0xFFFF) << 16


# add/min/max on .u16x2/.s16x2 (and .relu) exist from sm_90 on (PTX ISA 8.0): their kernels target sm_90
for a, b in [(0x7FFF0001, 0x0001FFFF), (0x80008000, 0xFFFF0001), (0x12345678, 0xFEDCBA98), (0, 0xFFFFFFFF)]:
    ha, hb = halves(a), halves(b)
    add(Case("add.u16x2", "b32", ["b32", "b32"], [a, b], [pack([x + y for x, y in zip(ha, hb, strict=True)])], note="gpu", target="sm_90"))
    add(Case("add.s16x2", "b32", ["b32", "b32"], [a, b], [pack([x + y for x, y in zip(ha, hb, strict=True)])], note="gpu", target="sm_90"))
    for t, f in (("u16x2", lambda x: x), ("s16x2", lambda x: s(x, 16))):
        mins = [min(f(x), f(y)) for x, y in zip(ha, hb, strict=True)]
        maxs = [max(f(x), f(y)) for x, y in zip(ha, hb, strict=True)]
        add(Case(f"min.{t}", ["b32", "b32"], ["b32", "b32"], [a, b], [pack(mins), pack(maxs)],
                 template=f"{{d0}}, {{a}}, {{b}}; max.{t} {{d1}}, {{a}}, {{b}}", note="gpu", target="sm_90"))
    relu = [max(0, min(s(x, 16), s(y, 16))) for x, y in zip(ha, hb, strict=True)]
    add(Case("min.relu.s16x2", "b32", ["b32", "b32"], [a, b], [pack(relu)], note="gpu", target="sm_90"))

# ---------------------------------------------------------------- carry chain
# {d1} first receives the carry-in (cin + 0xffffffff carries iff cin != 0), then the carry-out.
for n in (32, 64):
    t = f"u{n}"
    for a, b in [(0, 0), (1, -1), (-1, -1), (-1, 0), (2**(n - 1), 2**(n - 1)), (5, 3), (3, 5), (0, 1), (7, 0)]:
        a, b = u(a, n), u(b, n)
        add(Case(f"add.cc.{t}", [t, t], [t, t], [a, b], [a + b, (a + b) >> n],
                 template=f"{{d0}}, {{a}}, {{b}}; addc.{t} {{d1}}, 0, 0"))
        # the flag after a subtraction is the adder's carry: 1 when there was no borrow
        add(Case(f"sub.cc.{t}", [t, t], [t, t], [a, b], [a - b, int(a >= b)],
                 template=f"{{d0}}, {{a}}, {{b}}; addc.{t} {{d1}}, 0, 0", note="gpu"))
        # subc after sub.cc: 0 - 0 - borrow
        add(Case(f"sub.cc.{t}", [t, t], [t, t], [a, b], [a - b, -int(a < b)],
                 template=f"{{d0}}, {{a}}, {{b}}; subc.{t} {{d1}}, 0, 0"))
        for cin in (0, 1):
            add(Case(f"add.cc.{t}", [t, t], [t, t, t], [a, b, cin], [a + b + cin, (a + b + cin) >> n],
                     template=f"{{d1}}, {{c}}, -1; addc.cc.{t} {{d0}}, {{a}}, {{b}}; addc.{t} {{d1}}, 0, 0"))
            # cin is the adder's carry, so the borrow-in of subc is 1 - cin
            bor = 1 - cin
            add(Case(f"sub.cc.{t}", [t, t], [t, t, t], [a, b, 1 - cin], [a - b - bor, -int(a < b + bor)],
                     template=f"{{d1}}, 0, {{c}}; subc.cc.{t} {{d0}}, {{a}}, {{b}}; subc.{t} {{d1}}, 0, 0"))
# 64-bit product with mad.lo.cc / madc.hi, the idiom of multi-word multiplication
for a, b, c in [(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), (0x12345678, 0x9ABCDEF0, 0x80000000), (0, 5, 7), (1, 1, 0xFFFFFFFF)]:
    p = a * b + c
    add(Case("mad.lo.cc.u32", ["u32", "u32"], ["u32", "u32", "u32"], [a, b, c], [p, p >> 32],
             template="{d0}, {a}, {b}, {c}; madc.hi.u32 {d1}, {a}, {b}, 0"))
    add(Case("mad.hi.cc.u32", ["u32", "u32"], ["u32", "u32", "u32"], [a, b, c],
             [(a * b >> 32) + c, ((a * b >> 32) + c) >> 32],
             template="{d0}, {a}, {b}, {c}; addc.u32 {d1}, 0, 0"))
for a, b, c, cin in [(2**64 - 1, 2**64 - 1, 2**64 - 1, 1), (2**40 + 3, 2**30 + 5, 17, 0), (3, 4, 2**64 - 1, 1)]:
    hi = (a * b >> 64) + c + cin
    add(Case("add.cc.u64", ["u64", "u64"], ["u64", "u64", "u64", "u64"], [a, b, c, cin], [hi, hi >> 64],
             template="{d1}, {d}, -1; madc.hi.cc.u64 {d0}, {a}, {b}, {c}; addc.u64 {d1}, 0, 0"))

# ---------------------------------------------------------------- mul, mad
for t in ("s16", "u32", "s32", "u64", "s64"):
    n = int(t[1:])
    for a, b in pairs(n):
        p = val(a, t) * val(b, t)
        add(Case(f"mul.lo.{t}", [t, t], [t, t], [a, b], [p, p >> n],
                 template=f"{{d0}}, {{a}}, {{b}}; mul.hi.{t} {{d1}}, {{a}}, {{b}}"))
for t in ("u16", "s16", "u32", "s32"):
    n = int(t[1:])
    w = t[0] + str(2 * n)
    for a, b in pairs(n):
        add(Case(f"mul.wide.{t}", w, [t, t], [a, b], [val(a, t) * val(b, t)]))
add(Case("mul.lo.u32", "u32", ["u32"], [0x10000001], [0x10000001 * 3], template="{d}, {a}, 3"))
add(Case("mul.wide.s32", "s64", ["s32"], [-5], [-5 * 1000], template="{d}, {a}, 1000"))
for t in ("s32", "u64"):
    n = int(t[1:])
    for a, b in pairs(n)[::3]:
        for c in (0, 1, -1):
            p = val(a, t) * val(b, t)
            add(Case(f"mad.lo.{t}", [t, t], [t, t, t], [a, b, c], [p + c, (p >> n) + c],
                     template=f"{{d0}}, {{a}}, {{b}}, {{c}}; mad.hi.{t} {{d1}}, {{a}}, {{b}}, {{c}}"))
for t in ("u16", "s32"):
    n = int(t[1:])
    w = t[0] + str(2 * n)
    for a, b in pairs(n)[::3]:
        for c in (0, -1, 2**(2 * n - 1)):
            add(Case(f"mad.wide.{t}", w, [t, t, w], [a, b, c], [val(a, t) * val(b, t) + val(c, w)]))
for a, b in pairs(32)[::2]:
    for c in (0, 1, -1, 2**31 - 1, -(2**31)):
        h = (s(a, 32) * s(b, 32)) >> 32
        add(Case("mad.hi.sat.s32", "s32", ["s32", "s32", "s32"], [a, b, c],
                 [max(-(2**31), min(2**31 - 1, h + c))]))
add(Case("mad.lo.s32", "s32", ["s32", "s32"], [6, 7], [6 * 7 - 2], template="{d}, {a}, {b}, -2"))

# ---------------------------------------------------------------- mul24, mad24


def low24(v: int, sgn: bool) -> int:
    v &= 0xFFFFFF
    return v - (1 << 24) if sgn and v >> 23 else v


for t in ("u32", "s32"):
    sg = t == "s32"
    for a, b in PAIRS + [(0x7FFFFF, 0x7FFFFF), (0x800000, 0x800000), (0xFFFFFF, 0xFFFFFF), (0xFF123456, 0x00ABCDEF)]:
        p = low24(a, sg) * low24(b, sg)
        add(Case(f"mul24.lo.{t}", [t, t], [t, t], [a, b], [p, p >> 16],
                 template=f"{{d0}}, {{a}}, {{b}}; mul24.hi.{t} {{d1}}, {{a}}, {{b}}"))
        add(Case(f"mad24.lo.{t}", [t, t], [t, t, t], [a, b, 0x7FFFFFFF], [p + 0x7FFFFFFF, (p >> 16) + 0x7FFFFFFF],
                 template=f"{{d0}}, {{a}}, {{b}}, {{c}}; mad24.hi.{t} {{d1}}, {{a}}, {{b}}, {{c}}"))
for a, b in [(0x7FFFFF, 0x7FFFFF), (0x800000, 0x7FFFFF), (3, 5), (-1, -1)]:
    for c in (0x7FFFFFFF, -(2**31), 0):
        h = (low24(a, True) * low24(b, True)) >> 16
        add(Case("mad24.hi.sat.s32", "s32", ["s32", "s32", "s32"], [a, b, c], [max(-(2**31), min(2**31 - 1, h + c))]))

# ---------------------------------------------------------------- sad
for t in ("u16", "s32", "u32", "s64"):
    n = int(t[1:])
    for a, b in pairs(n)[::2]:
        for c in (0, 5, -1):
            add(Case(f"sad.{t}", t, [t, t, t], [a, b, c], [c + abs(val(a, t) - val(b, t))]))

# ---------------------------------------------------------------- div, rem


def divrem(a: int, b: int, t: str) -> tuple[int, int, str]:
    """C semantics (truncation); the GPU's all-ones for /0 and wrapping INT_MIN / -1."""
    n = int(t[1:])
    a, b = val(a, t), val(b, t)
    if b == 0:
        return -1, -1, "gpu"
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    note = "gpu" if t[0] == "s" and a == -(2**(n - 1)) and b == -1 else ""
    return q, a - q * b, note


for t in ("u16", "s16", "u32", "s32", "u64", "s64"):
    n = int(t[1:])
    for a, b in pairs(n) + [(-(2**(n - 1)), -1), (100, 7), (-100, 7), (100, -7), (-100, -7)]:
        q, r, note = divrem(a, b, t)
        add(Case(f"div.{t}", [t, t], [t, t], [a, b], [q, r], note=note,
                 template=f"{{d0}}, {{a}}, {{b}}; rem.{t} {{d1}}, {{a}}, {{b}}"))
_rng = random.Random(1234)  # many ordinary quotients: division goes through f64 in vector code
for t in ("u16", "s16", "u32", "s32"):
    n = int(t[1:])
    for _ in range(200):
        a = _rng.getrandbits(n)
        b = _rng.getrandbits(_rng.choice((3, 8, n // 2, n))) or 1
        q, r, _ = divrem(a, b, t)
        add(Case(f"div.{t}", [t, t], [t, t], [a, b], [q, r],
                 template=f"{{d0}}, {{a}}, {{b}}; rem.{t} {{d1}}, {{a}}, {{b}}"))
add(Case("div.u32", "u32", ["u32"], [1000], [142], template="{d}, {a}, 7"))
add(Case("rem.s32", "s32", ["s32"], [-1000], [-6], template="{d}, {a}, 7"))
add(Case("div.s32", "s32", ["s32"], [1000], [-1], template="{d}, {a}, 0", note="gpu"))

# ---------------------------------------------------------------- min, max, abs, neg
for t in ("u16", "s16", "u32", "s32", "u64", "s64"):
    n = int(t[1:])
    for a, b in pairs(n):
        x, y = val(a, t), val(b, t)
        add(Case(f"min.{t}", [t, t], [t, t], [a, b], [min(x, y), max(x, y)],
                 template=f"{{d0}}, {{a}}, {{b}}; max.{t} {{d1}}, {{a}}, {{b}}"))
for t in ("s16", "s32", "s64"):
    n = int(t[1:])
    for a in EDGE[n]:
        x = val(a, t)
        add(Case(f"abs.{t}", [t, t], [t], [a], [abs(x), -x],  # abs(INT_MIN) wraps to INT_MIN
                 template=f"{{d0}}, {{a}}; neg.{t} {{d1}}, {{a}}"))
for a, b in pairs(32)[::2]:
    x, y = s(a, 32), s(b, 32)
    add(Case("max.relu.s32", "s32", ["s32", "s32"], [a, b], [max(0, x, y)], note="gpu", target="sm_90"))
add(Case("max.s32", "s32", ["s32"], [-5], [0], template="{d}, {a}, 0"))
add(Case("min.u32", "u32", ["u32"], [5], [3], template="{d}, 3, {a}"))

# ---------------------------------------------------------------- dp4a, dp2a


def lanes(x: int, w: int, sgn: bool) -> list[int]:
    out = [(x >> (w * i)) & ((1 << w) - 1) for i in range(32 // w)]
    return [v - (1 << w) if sgn and v >> (w - 1) else v for v in out]


DOT = [(0x01020304, 0x05060708, 0), (0xFF80807F, 0x7F80FF01, 100), (0xFFFFFFFF, 0xFFFFFFFF, -1),
       (0x80808080, 0x80808080, 0x7FFFFFFF), (0x12345678, 0x9ABCDEF0, -12345)]
for ta in ("u32", "s32"):
    for tb in ("u32", "s32"):
        for a, b, c in DOT:
            va, vb = lanes(a, 8, ta == "s32"), lanes(b, 8, tb == "s32")
            add(Case(f"dp4a.{ta}.{tb}", "u32", ["u32", "u32", "u32"], [a, b, c],
                     [c + sum(x * y for x, y in zip(va, vb, strict=True))]))
            ha = lanes(a, 16, ta == "s32")
            add(Case(f"dp2a.lo.{ta}.{tb}", ["u32", "u32"], ["u32", "u32", "u32"], [a, b, c],
                     [c + ha[0] * vb[0] + ha[1] * vb[1], c + ha[0] * vb[2] + ha[1] * vb[3]],
                     template=f"{{d0}}, {{a}}, {{b}}, {{c}}; dp2a.hi.{ta}.{tb} {{d1}}, {{a}}, {{b}}, {{c}}"))
add(Case("dp4a.s32.s32", "s32", ["s32", "s32"], [0x01010101, 0xFFFFFFFF], [-4 + 10], template="{d}, {a}, {b}, 10"))

# ---------------------------------------------------------------- all-immediate operands: uniform (scalar) code
add(Case("div.s32", "s32", [], [], [-1], template="{d}, 7, 0", note="gpu"))
add(Case("rem.s64", ["s64", "s64"], [], [], [0, -(2**63)], note="gpu",
         template="{d0}, 0x8000000000000000, -1; div.s64 {d1}, 0x8000000000000000, -1"))
add(Case("add.cc.u32", ["u32", "u32"], [], [], [0, 1], template="{d0}, -1, 1; addc.u32 {d1}, 0, 0"))
add(Case("sub.cc.u32", ["u32", "u32"], [], [], [M[32], -1], template="{d0}, 1, 2; subc.u32 {d1}, 0, 0"))
add(Case("mul.hi.u64", "u64", [], [], [(M[64] * M[64]) >> 64], template="{d}, -1, -1"))
add(Case("mul.hi.s64", "s64", [], [], [(-(2**63) * 3) >> 64], template="{d}, 0x8000000000000000, 3"))
add(Case("mul24.hi.s32", "s32", [], [], [(-(2**23) * -(2**23)) >> 16], template="{d}, 0x800000, 0xFF800000"))
add(Case("dp4a.s32.u32", "s32", [], [], [-1 * 255 * 4 + 5], template="{d}, -1, -1, 5"))
add(Case("min.s64", "s64", [], [], [-5], template="{d}, -5, 3"))
add(Case("sad.s16", "s16", [], [], [1 + 0x7FFF + 0x8000], template="{d}, 0x7FFF, -0x8000, 1"))
