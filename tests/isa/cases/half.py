"""Half-precision arithmetic (PTX ISA §9.7.4): f16, f16x2, bf16, bf16x2.

Expected values: the exact rational result rounded once to nearest-even by fpref.rnd (an fma
of halves is a single rounding); `.ftz` flushes results that are tiny after rounding
(fpref.tiny, the rule the H200 follows for f32). NaN results are the canonical 0x7fff, from
neg/abs too (note="exact-nan"); approximate forms use the documented bound. bf16 add/sub/mul and ex2/tanh on bf16 need sm_90:
the sm_80 recording kernel cannot record them.
"""

import math
from fractions import Fraction as Q

from fpref import rnd, tiny, uniform_variants, val
from ptxgen import Case, bits

CASES: list[Case] = []
add = CASES.append
INF, NAN = math.inf, math.nan
CANON = bits(0x7FFF)
SUB16 = 2.0 ** -24  # smallest f16 subnormal
NORM16 = 2.0 ** -14


def hb(x: float, e: str) -> int:
    """Bits of x in format e (x representable, or ±inf/NaN)."""
    if math.isnan(x):
        return 0x7E00 if e == "f16" else 0x7FC0
    if math.isinf(x):
        return (0x7C00 if e == "f16" else 0x7F80) | (0x8000 if x < 0 else 0)
    return rnd(Q(x), e, neg_zero=math.copysign(1, x) < 0)


def hv(x: float, e: str) -> float:
    """x rounded to format e (the value the harness passes in)."""
    return val(hb(x, e), e)


def neg(x: float) -> bool:
    return math.copysign(1.0, x) < 0


def ftz16(x: float) -> float:
    return math.copysign(0.0, x) if x != 0 and abs(x) < NORM16 else x


def arith(op: str, e: str, xs: list[float], ftz: bool = False, sat: bool = False, relu: bool = False) -> int:
    """Bits of the single-rounded result of op on format-e values xs."""
    if ftz:
        xs = [ftz16(x) for x in xs]
    fn = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "fma": lambda a, b, c: a * b + c}[op]
    if not all(math.isfinite(x) for x in xs):
        try:
            r = fn(*xs)
        except (ValueError, ZeroDivisionError):
            r = NAN
        if op == "fma" and (math.isinf(xs[0]) and xs[1] == 0 or math.isinf(xs[1]) and xs[0] == 0):
            r = NAN
        if math.isnan(r):
            return 0 if sat else 0x7FFF
        return hb(min(max(r, 0.0), 1.0) if sat else (max(r, 0.0) if relu else r), e)
    q = fn(*(Q(x) for x in xs))
    if op in ("add", "sub"):
        b = xs[1] if op == "add" else -xs[1]
        negz = neg(xs[0]) and neg(b)
    elif op == "mul":
        negz = neg(xs[0]) != neg(xs[1])
    else:
        negz = (neg(xs[0]) != neg(xs[1])) and neg(xs[2])
    if sat:
        q = min(max(q, Q(0)), Q(1))
        negz = False
    if relu and q <= 0:
        q, negz = Q(0), False
    if ftz and e == "f16" and tiny(q, e):
        return 0x8000 if q < 0 else 0
    return rnd(q, e, neg_zero=negz)


PAIRS16 = [(1.0, 2.0), (1.0, 2.0 ** -11), (1.0, 3 * 2.0 ** -12), (65504.0, 32.0), (65504.0, 16.0), (SUB16, SUB16),
           (NORM16, -SUB16), (0.1, 0.2), (-0.0, -0.0), (0.0, -0.0), (1.5, -1.5), (INF, -INF), (INF, 1.0),
           (NAN, 1.0), (3.0, 1 / 3), (-7.25, 0.001)]
PAIRSBF = [(1.0, 2.0), (1.0, 2.0 ** -8), (1.0, 3 * 2.0 ** -9), (3e38, 3e38), (2.0 ** -133, 2.0 ** -133),
           (2.0 ** -70, 2.0 ** -70), (0.1, 0.2), (1.5, -1.5), (INF, -INF), (NAN, 2.0), (3.0, 1 / 3)]
for e, pairs in (("f16", PAIRS16), ("bf16", PAIRSBF)):
    for x, y in pairs:
        x, y = hv(x, e), hv(y, e)
        want = [arith(op, e, [x, y]) for op in ("add", "sub", "mul")]
        nan = math.isnan(x) or math.isnan(y) or (math.isinf(x) and math.isinf(y))
        add(Case(f"add.{e}", [e, e, e], [e, e], [bits(hb(x, e)), bits(hb(y, e))], [bits(w) for w in want],
                 template=f"{{d0}}, {{a}}, {{b}}; sub.{e} {{d1}}, {{a}}, {{b}}; mul.rn.{e} {{d2}}, {{a}}, {{b}}",
                 note="exact-nan" if nan else ""))
# NORM16 * (1 - 2^-11) is exact in 11 bits, so tiny (flushed) though it rounds to NORM16 among the
# subnormals; 2^-14 (1 - 2^-12) rounds up to NORM16 at 11 bits, so it is kept (predictions)
for x, y in [(SUB16, SUB16), (NORM16, -SUB16), (2.0 ** -13, -(2.0 ** -14) - SUB16), (1.0, 2.0), (0.25, 2.0 ** -13),
             (NORM16, 1 - 2.0 ** -11), (NORM16 * (1 + 2.0 ** -6), 1 - 2.0 ** -6)]:
    add(Case("add.ftz.f16", ["f16", "f16"], ["f16", "f16"], [x, y],
             [bits(arith("add", "f16", [x, y], ftz=True)), bits(arith("mul", "f16", [x, y], ftz=True))],
             template="{d0}, {a}, {b}; mul.ftz.f16 {d1}, {a}, {b}", note="gpu" if 0.9 < y < 1 else ""))
for x, y in [(0.25, 0.5), (0.75, 0.5), (-1.0, 0.5), (NAN, 1.0), (INF, 1.0), (-0.0, 0.0)]:
    add(Case("add.sat.f16", "f16", ["f16", "f16"], [x, y], [bits(arith("add", "f16", [x, y], sat=True))]))

# packed: each half independently, low half first
for e in ("f16", "bf16"):
    pairs = PAIRS16 if e == "f16" else PAIRSBF
    for (x0, y0), (x1, y1) in zip(pairs[0::2], pairs[1::2], strict=False):
        vs = [hv(v, e) for v in (x0, y0, x1, y1)]
        a = hb(vs[0], e) | hb(vs[2], e) << 16
        b = hb(vs[1], e) | hb(vs[3], e) << 16
        want = [arith(op, e, [vs[0], vs[1]]) | arith(op, e, [vs[2], vs[3]]) << 16 for op in ("add", "mul")]
        add(Case(f"add.{e}x2", ["b32", "b32"], ["b32", "b32"], [a, b], want,
                 template=f"{{d0}}, {{a}}, {{b}}; mul.rn.{e}x2 {{d1}}, {{a}}, {{b}}"))

# ---------------------------------------------------------------- fma: one rounding
FMA16 = [(1.0 + 2.0 ** -10, 1.0 + 2.0 ** -10, -1.0), (1.0, 1.0, 2.0 ** -11), (1.0, 1.0 + 2.0 ** -10, 2.0 ** -11 + 2.0 ** -24),
         (65504.0, 2.0, -65504.0), (SUB16, 0.5, 0.0), (SUB16, 1.5, 0.0), (-1.0, 1.0, 1.0), (-0.0, 1.0, -0.0),
         (INF, 0.0, 1.0), (256.0, 256.0, -65504.0), (0.1, 10.0, -1.0), (NAN, 1.0, 1.0), (1024.0, 1.0, 0.5 + 2.0 ** -20)]
FMABF = [(1.0 + 2.0 ** -7, 1.0 + 2.0 ** -7, -1.0), (1.0, 1.0, 2.0 ** -8), (1.0, 1.0 + 2.0 ** -7, 2.0 ** -8 + 2.0 ** -30),
         (3e38, 2.0, -3e38), (2.0 ** -133, 0.5, 0.0), (2.0 ** -100, 2.0 ** -40, 0.0), (0.1, 10.0, -1.0),
         (1.0, 1.0, 2.0 ** -8 + 2.0 ** -120)]
for e, rows in (("f16", FMA16), ("bf16", FMABF)):
    for xs in rows:
        vs = [hv(x, e) for x in xs]
        nan = any(math.isnan(v) for v in vs) or (math.isinf(vs[0]) and vs[1] == 0)
        add(Case(f"fma.rn.{e}", [e, e], [e, e, e], [bits(hb(v, e)) for v in vs],
                 [bits(arith("fma", e, vs)), bits(arith("fma", e, vs, relu=True))],
                 template=f"{{d0}}, {{a}}, {{b}}, {{c}}; fma.rn.relu.{e} {{d1}}, {{a}}, {{b}}, {{c}}",
                 note="exact-nan" if nan else ""))
    for r0, r1 in zip(rows[0::2], rows[1::2], strict=False):
        v0, v1 = [hv(x, e) for x in r0], [hv(x, e) for x in r1]
        ins = [hb(v0[i], e) | hb(v1[i], e) << 16 for i in range(3)]
        add(Case(f"fma.rn.{e}x2", "b32", ["b32"] * 3, ins, [arith("fma", e, v0) | arith("fma", e, v1) << 16]))
for xs in [(SUB16, 1.0, 0.0), (NORM16, 0.5, 0.0), (2.0, 0.25, 0.125), (0.5, 0.5, 0.75), (-1.0, 1.0, 0.5),
           (-NORM16, 1 - 2.0 ** -11, 0.0), (NORM16 * (1 + 2.0 ** -6), 1 - 2.0 ** -6, -0.0)]:
    add(Case("fma.rn.ftz.f16", ["f16", "f16"], ["f16"] * 3, list(xs),
             [bits(arith("fma", "f16", list(xs), ftz=True)), bits(arith("fma", "f16", list(xs), sat=True))],
             template="{d0}, {a}, {b}, {c}; fma.rn.sat.f16 {d1}, {a}, {b}, {c}"))

# ---------------------------------------------------------------- neg, abs (sign bit), min, max
for x in [1.5, -2.0, 0.0, -0.0, INF, SUB16]:
    add(Case("neg.f16", ["f16", "f16", "bf16", "bf16"], ["f16", "bf16"], [x, x], [-x, abs(x), -x, abs(x)],
             template="{d0}, {a}; abs.f16 {d1}, {a}; neg.bf16 {d2}, {b}; abs.bf16 {d3}, {b}"))
add(Case("neg.f16x2", ["b32", "b32"], ["b32"], [0xBC003C00], [0x3C00BC00, 0x3C003C00],
         template="{d0}, {a}; abs.f16x2 {d1}, {a}"))
add(Case("neg.bf16x2", ["b32", "b32"], ["b32"], [0xBF803F80], [0x3F80BF80, 0x3F803F80],
         template="{d0}, {a}; abs.bf16x2 {d1}, {a}"))
# NaN: neg/abs are HADD2 -RZ, -a (f16) and HFMA2.BF16 -RZ, RZ, -a (bf16): the canonical NaN
for x in (0x7E01, 0xFD00):
    add(Case("neg.f16", ["f16", "f16"], ["f16"], [bits(x)], [CANON, CANON], template="{d0}, {a}; abs.f16 {d1}, {a}",
             note="exact-nan"))
for x in (0x7FC1, 0xFF81):
    add(Case("neg.bf16", ["bf16", "bf16"], ["bf16"], [bits(x)], [CANON, CANON], template="{d0}, {a}; abs.bf16 {d1}, {a}",
             note="exact-nan"))
add(Case("neg.bf16x2", "b32", ["b32"], [0x7FC1BF80], [0x7FFF3F80], note="exact-nan"))
add(Case("neg.ftz.f16", ["f16", "f16"], ["f16"], [SUB16], [-0.0, 0.0], template="{d0}, {a}; abs.ftz.f16 {d1}, {a}"))

MM = [(1.0, 2.0), (-1.0, -2.0), (0.0, -0.0), (-0.0, 0.0), (NAN, 3.0), (3.0, NAN), (NAN, NAN), (INF, -INF)]


def mm(x: float, y: float, nanprop: bool) -> tuple:
    nx, ny = math.isnan(x), math.isnan(y)
    if (nx and ny) or (nanprop and (nx or ny)):
        return CANON, CANON
    if nx or ny:
        return (y, y) if nx else (x, x)
    lo = x if (x < y or (x == y and neg(x))) else y
    hi = x if (x > y or (x == y and not neg(x))) else y
    return lo, hi


for e in ("f16", "bf16"):
    for x, y in MM:
        lo, hi = mm(x, y, False)
        nlo, nhi = mm(x, y, True)
        nan = math.isnan(x) or math.isnan(y)
        add(Case(f"min.{e}", [e] * 4, [e, e], [x, y], [lo, hi, nlo, nhi],
                 template=f"{{d0}}, {{a}}, {{b}}; max.{e} {{d1}}, {{a}}, {{b}}; min.NaN.{e} {{d2}}, {{a}}, {{b}};"
                          f" max.NaN.{e} {{d3}}, {{a}}, {{b}}", note="exact-nan" if nan else ""))
add(Case("min.f16x2", ["b32", "b32"], ["b32", "b32"], [0x7E00BC00, 0x3C007E00], [0x3C00BC00, 0x3C00BC00],
         template="{d0}, {a}, {b}; max.f16x2 {d1}, {a}, {b}"))
add(Case("min.NaN.bf16x2", "b32", ["b32", "b32"], [0x7FC0BF80, 0x3F804000], [0x7FFFBF80], note="exact-nan"))
for x, y, lo, hi in [(-2.0, 3.0, -2.0, -3.0), (-2.0, -3.0, 2.0, 3.0), (SUB16, -1.0, -SUB16, -1.0)]:
    add(Case("min.xorsign.abs.f16", ["f16", "f16"], ["f16", "f16"], [x, y], [lo, hi],
             template="{d0}, {a}, {b}; max.xorsign.abs.f16 {d1}, {a}, {b}"))
add(Case("max.ftz.f16", "f16", ["f16", "f16"], [SUB16, -1.0], [0.0]))

# ---------------------------------------------------------------- ex2, tanh (approximate)
for x in [0.5, -0.5, 3.3, -3.3, 10.0, 15.9, -14.0, -20.0, 0.001, 1.0]:
    v = hv(x, "f16")
    add(Case("ex2.approx.f16", "f16", ["f16"], [x], [bits(hb(2.0 ** v, "f16"))], tolerance_ulps=3))  # 2^-9.9
    add(Case("tanh.approx.f16", "f16", ["f16"], [x], [bits(hb(math.tanh(v), "f16"))], abs_tolerance=2 ** -10.987))
for x, want in [(-INF, 0.0), (-0.0, 1.0), (0.0, 1.0), (INF, INF), (16.0, INF), (-25.0, 0.0), (-24.0, SUB16)]:
    add(Case("ex2.approx.f16", "f16", ["f16"], [x], [want]))
for x, want in [(INF, 1.0), (-INF, -1.0), (-0.0, -0.0), (SUB16, SUB16)]:
    add(Case("tanh.approx.f16", "f16", ["f16"], [x], [want]))
add(Case("ex2.approx.f16", "f16", ["f16"], [NAN], [CANON], note="exact-nan"))
add(Case("ex2.approx.f16x2", ["f16", "f16"], ["b32"], [0x3C00C000], [0.25, 2.0], tolerance_ulps=3,
         template="%hx, {a}; mov.b32 {{{d0}, {d1}}}, %hx", extra_decls=".reg .b32 %hx;"))
for x in [0.5, -3.3, 100.0, -126.0]:
    v = hv(x, "bf16")
    add(Case("ex2.approx.ftz.bf16", "bf16", ["bf16"], [x], [bits(hb(2.0 ** v, "bf16"))], tolerance_ulps=2))  # 2^-7
    add(Case("tanh.approx.bf16", "bf16", ["bf16"], [x], [bits(hb(math.tanh(v), "bf16"))], abs_tolerance=2 ** -8))
for x, want in [(-INF, 0.0), (2.0 ** -130, 1.0), (-130.0, 0.0), (INF, INF)]:
    add(Case("ex2.approx.ftz.bf16", "bf16", ["bf16"], [x], [want]))
add(Case("ex2.approx.ftz.bf16x2", ["bf16", "bf16"], ["b32"], [0x3F80C000], [0.25, 2.0], tolerance_ulps=2,
         template="%hx, {a}; mov.b32 {{{d0}, {d1}}}, %hx", extra_decls=".reg .b32 %hx;"))

# ---------------------------------------------------------------- mixed precision (sm_100): f16/bf16 operands, f32 result
for e in ("f16", "bf16"):
    for x, y, z in [(1.0 + 2.0 ** -7, 3.0, 2.0 ** -24), (-2.5, 0.5, 1e-8), (65504.0 if e == "f16" else 3e38, 2.0, -1.0)]:
        x, y = hv(x, e), hv(y, e)
        z32 = val(rnd(Q(z), "f32"), "f32")
        want = [bits(rnd(Q(x) + Q(z32), "f32", "rn")), bits(rnd(Q(x) - Q(z32), "f32", "rz")),
                bits(rnd(Q(x) * Q(y) + Q(z32), "f32", "rm"))]
        add(Case(f"add.rn.f32.{e}", ["f32"] * 3, [e, e, "f32"], [bits(hb(x, e)), bits(hb(y, e)), z], want,
                 template=f"{{d0}}, {{a}}, {{c}}; sub.rz.f32.{e} {{d1}}, {{a}}, {{c}}; fma.rm.f32.{e} {{d2}}, {{a}}, {{b}}, {{c}}"))

# every kernel once more with its operands in uniform registers: the scalar code path
CASES += uniform_variants(CASES)
