"""cvt (PTX ISA §9.7.9.21): expected values from Python integers and fpref's exact rounding.

note="gpu": NaN → integer (the manual: 0, or 1 << (width-1) when the source is f64 or the
destination 64-bit), .relu of -0.0, and predictions the recordings do not cover yet. NaN
results (note="exact-nan" compares their bits) follow the instruction ptxas picks
(cuport/isa/convert.py; the H200 recordings): F2F with f64 on either side keeps the sign and
the top of the payload, quieted (fpref.nan_convert); every other conversion to f32, f16,
bf16 or tf32 gives the canonical NaN (F2F f16 <-> bf16, F2FP, HADD2.F32: 0x7fffffff, 0x7fff,
tf32 0x7fffe000); cvt.f32.bf16 is a shift and cvt.f32.f32 a move (the bits kept);
cvt.rna.tf32.f32 is ptxas's integer sequence (`tf32_rna`); cvt.ftz.f64.f32 flushes with
FMUL.FTZ first (the canonical f32 NaN, widened). The exact-nan cases marked "unrecorded" are
the rules' predictions for instructions the recordings do not cover yet (FRND, moves, ...).
ptxas folds a conversion of a constant at compile time; its folder widens a 16-bit NaN as the
canonical f32 NaN (`ptxas_folding`), so those uniform copies are checked against the rule.
Several rounding modes share a kernel through templates.
"""

import math
from fractions import Fraction as Q

from fpref import bits_f32, f32, f32_bits, max_bits, nan_convert, rnd, tiny, uniform_variants, val
from ptxgen import Bits, Case, bits

CASES: list[Case] = []
add = CASES.append
INF, NAN = math.inf, math.nan
MIN_SUB32, MAX32 = bits_f32(1), bits_f32(0x7F7FFFFF)
CANON16, CANON32, CANON_TF32 = 0x7FFF, 0x7FFFFFFF, 0x7FFFE000  # the canonical NaNs


def irange(t: str) -> tuple[int, int]:
    n = int(t[1:])
    return (-(1 << (n - 1)), (1 << (n - 1)) - 1) if t[0] == "s" else (0, (1 << n) - 1)


def wrap(v: int, t: str) -> int:
    n = int(t[1:])
    v &= (1 << n) - 1
    return v - (1 << n) if t[0] == "s" and v >> (n - 1) else v


def multi(first: str, others: list[str], n: int = 1) -> tuple[str, str]:
    """Instruction and template running `first` then each of `others` on the same operands."""
    ops = ", ".join("{" + "abc"[i] + "}" for i in range(n))
    rest = "".join(f"; {o} {{d{i + 1}}}, {ops}" for i, o in enumerate(others))
    return first, f"{{d0}}, {ops}{rest}"


# ---------------------------------------------------------------- integer → integer
for dt, st, xs in [("u8", "s32", [300, -1, 255]), ("s32", "s8", [-1, 127, 0x80]), ("u32", "s16", [-1, 0x7FFF]),
                   ("s64", "u32", [0xFFFFFFFF, 5]), ("u16", "u64", [0x123456789, 65535])]:
    for x in xs:
        v = wrap(x, st)
        add(Case(f"cvt.{dt}.{st}", dt, [st], [x], [wrap(v, dt)]))
for dt, st in [("u8", "s32"), ("s8", "s32"), ("s8", "u32"), ("u32", "s32"), ("s32", "u32"), ("s32", "s64"),
               ("u16", "u64"), ("u64", "s64"), ("s64", "u64"), ("u8", "s8"), ("s16", "u16")]:
    lo, hi = irange(dt)
    for x in [0, 1, -1, 127, 128, 255, 256, -129, 0x7FFF, 0x8000, 0x7FFFFFFF, -0x80000000, 2**63 - 1, -(2**63)]:
        v = wrap(x, st)
        add(Case(f"cvt.sat.{dt}.{st}", dt, [st], [x], [max(lo, min(hi, v))]))

# ---------------------------------------------------------------- float → integer
IROUND = {"rni": lambda q: round(q), "rzi": math.trunc, "rmi": math.floor, "rpi": math.ceil}  # round(): ties even
FLOATS = [0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.7, -2.7, 1e10, -1e10, 2.0 ** 31, -(2.0 ** 31) - 256,
          4294967040.0, MIN_SUB32, -MIN_SUB32, INF, -INF]


def f2i(x: float, t: str, r: str, src: str = "f32", ftz: bool = False) -> int:
    lo, hi = irange(t)
    if math.isnan(x):
        n = int(t[1:])
        return 1 << (n - 1) if src == "f64" or n == 64 else 0
    if math.isinf(x):
        return hi if x > 0 else lo
    if ftz and abs(x) < 2.0 ** -126:
        x = 0.0
    return max(lo, min(hi, IROUND[r](Q(x))))


for dt in ("s32", "u32", "s64", "u64", "s8", "u16"):
    first, tmpl = multi(f"cvt.rni.{dt}.f32", [f"cvt.{r}.{dt}.f32" for r in ("rzi", "rmi", "rpi")])
    for x in FLOATS:
        add(Case(first, [dt] * 4, ["f32"], [x], [f2i(f32(x), dt, r) for r in IROUND], template=tmpl))
    add(Case(first, [dt] * 4, ["f32"], [NAN], [f2i(NAN, dt, r) for r in IROUND], template=tmpl, note="gpu"))
for dt in ("s32", "u64", "s64", "u8"):
    first, tmpl = multi(f"cvt.rni.{dt}.f64", [f"cvt.{r}.{dt}.f64" for r in ("rzi", "rmi", "rpi")])
    for x in [0.5, -2.5, 3.7, 1e300, -1e300, 2.0 ** 63, 2.0 ** 64 - 2048, -(2.0 ** 63) - 4096, 4e-320, -4e-320]:
        add(Case(first, [dt] * 4, ["f64"], [x], [f2i(x, dt, r, "f64") for r in IROUND], template=tmpl))
    add(Case(first, [dt] * 4, ["f64"], [NAN], [f2i(NAN, dt, r, "f64") for r in IROUND], template=tmpl, note="gpu"))
for x in [MIN_SUB32, -MIN_SUB32, 1.5]:
    add(Case("cvt.rpi.ftz.s32.f32", "s32", ["f32"], [x], [f2i(x, "s32", "rpi", ftz=True)]))
    add(Case("cvt.rmi.ftz.s32.f32", "s32", ["f32"], [x], [f2i(x, "s32", "rmi", ftz=True)]))
for x in [2.5, -3.5, 65504.0, -65504.0, 0.25]:
    add(Case("cvt.rni.s16.f16", "s16", ["f16"], [x], [f2i(x, "s16", "rni")]))
    add(Case("cvt.rzi.u32.f16", "u32", ["f16"], [x], [f2i(x, "u32", "rzi")]))
for x in [2.5, -3.5, 3e38, 1.0e9]:
    add(Case("cvt.rni.s32.bf16", "s32", ["bf16"], [x], [f2i(val(rnd(Q(x), "bf16"), "bf16"), "s32", "rni")]))

# ---------------------------------------------------------------- integer → float
MODES = ("rn", "rz", "rm", "rp")
INTS32 = [0, 1, -1, 16777217, -16777217, 16777219, 0x7FFFFFFF, -0x80000000, 123456789, -123456789]
INTS64 = [0, -1, 2**53 + 1, -(2**53) - 1, 2**63 - 1, -(2**63), 2**62 + 2**40 + 1, 0x123456789ABCDEF, -3 * 2**60 - 7]
for st, xs in (("s32", INTS32), ("u32", [x & 0xFFFFFFFF for x in INTS32]), ("s64", INTS64),
               ("u64", [x & (2**64 - 1) for x in INTS64])):
    for dt in ("f32", "f64", "f16"):
        if dt == "f64" and st in ("s32", "u32"):
            continue
        first, tmpl = multi(f"cvt.rn.{dt}.{st}", [f"cvt.{m}.{dt}.{st}" for m in MODES[1:]])
        for x in xs:
            v = wrap(x, st)
            add(Case(first, [dt] * 4, [st], [x], [bits(rnd(v, dt, m)) for m in MODES], template=tmpl))
for st, xs in (("s16", [-32768, 2049, 32767]), ("u8", [255, 7]), ("s32", [65519, 65520, -70000, 2049, 4095])):
    for x in xs:
        add(Case(f"cvt.rn.f16.{st}", "f16", [st], [x], [bits(rnd(x, "f16"))]))
for st, xs in (("s32", [257, -259, 0x7FFFFFFF]), ("u64", [2**64 - 1, 12345])):
    first, tmpl = multi(f"cvt.rn.bf16.{st}", [f"cvt.{m}.bf16.{st}" for m in MODES[1:]])
    for x in xs:
        add(Case(first, ["bf16"] * 4, [st], [x], [bits(rnd(wrap(x, st), "bf16", m)) for m in MODES], template=tmpl))
add(Case("cvt.rn.sat.f32.s32", "f32", ["s32"], [5], [1.0]))
add(Case("cvt.rn.sat.f32.s32", "f32", ["s32"], [-5], [0.0]))

# ---------------------------------------------------------------- float → float
F64S = [1 / 3, -1 / 3, 1 + 2.0 ** -24, 1 + 3 * 2.0 ** -25, 1e-40, -1e-45, 1e-50, 3.5e38, -3.5e38, 1e300, 0.1,
        2.0 ** -149 * 1.5, 65520.0, 65519.0, 6e-8, 3e-8]
for dt in ("f32", "f16", "bf16"):
    first, tmpl = multi(f"cvt.rn.{dt}.f64", [f"cvt.{m}.{dt}.f64" for m in MODES[1:]])
    for x in F64S + [-0.0, INF, -INF]:
        add(Case(first, [dt] * 4, ["f64"], [x], [bits(rnd(Q(x), dt, m, neg_zero=x == 0 and math.copysign(1, x) < 0))
                                                 if math.isfinite(x) else x for m in MODES], template=tmpl))
    for x in (0x7FF8000000000000, 0xFFF4000123456789):  # F2F: sign and top of the payload, quieted
        add(Case(first, [dt] * 4, ["f64"], [bits(x)], [bits(nan_convert(x, "f64", dt))] * 4, template=tmpl,
                 note="exact-nan"))
F32S = [f32(x) for x in (1 / 3, -1 / 3, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -12, 1 + 2.0 ** -8 + 2.0 ** -20, 65520.0, 65519.0,
                         6e-8, 3e-8, -1e-6, 3.0e38, 1.00390625, 0.1)] + [MIN_SUB32, MAX32]
for dt in ("f16", "bf16"):
    first, tmpl = multi(f"cvt.rn.{dt}.f32", [f"cvt.{m}.{dt}.f32" for m in MODES[1:]])
    for x in F32S + [INF, -INF]:
        add(Case(first, [dt] * 4, ["f32"], [x], [bits(rnd(Q(x), dt, m)) if math.isfinite(x) else x for m in MODES],
                 template=tmpl))
    add(Case(first, [dt] * 4, ["f32"], [bits(0x7FC00001)], [bits(0x7FFF)] * 4, template=tmpl, note="exact-nan"))
# widening is exact; .ftz flushes f32 inputs
for x in [1.5, MIN_SUB32, -MIN_SUB32, INF, f32(1e38)]:
    add(Case("cvt.f64.f32", "f64", ["f32"], [x], [x]))
    add(Case("cvt.ftz.f64.f32", "f64", ["f32"], [x], [0.0 if x == MIN_SUB32 else -0.0 if x == -MIN_SUB32 else x]))
for x in [1.5, 2.0 ** -24 * 3, -65504.0, INF, -0.0, 2.0 ** -24]:
    add(Case("cvt.f32.f16", "f32", ["f16"], [x], [x]))
    add(Case("cvt.f64.f16", "f64", ["f16"], [x], [x]))
for x in [1.5, -(2.0 ** 127) * 1.5, 2.0 ** -133, INF]:
    add(Case("cvt.f32.bf16", "f32", ["bf16"], [x], [x]))
add(Case("cvt.f32.f16", "f32", ["f16"], [bits(0x7E01)], [bits(0x7FFFFFFF)], note="exact-nan"))  # HADD2.F32
# NaN through F2F with f64 on one side (f32/f16/bf16 → f64, FRND.F64: the payload kept), F2F
# between f16 and bf16 (canonical) and the shift of cvt.f32.bf16 (the bits kept)
for dt, st, x in [("f64", "f32", 0xFFC12345), ("f64", "f32", 0x7F800001), ("f64", "f16", 0x7E01), ("f64", "bf16", 0xFF81)]:
    add(Case(f"cvt.{dt}.{st}", dt, [st], [bits(x)], [bits(nan_convert(x, st, dt))], note="exact-nan"))
for dt, st, x in [("bf16", "f16", 0xFD01), ("f16", "bf16", 0x7FC1)]:
    add(Case(f"cvt.rn.{dt}.{st}", dt, [st], [bits(x)], [bits(CANON16)], note="exact-nan"))
for x in (0x7FC12345, 0xFF800001):
    add(Case("cvt.f32.bf16", "f32", ["bf16"], [bits(x >> 16)], [bits(x & 0xFFFF0000)], note="exact-nan"))
add(Case("cvt.rni.f64.f64", "f64", ["f64"], [bits(0xFFF0000000000123)], [bits(0xFFF8000000000123)], note="exact-nan"))
def ftz_f32(x: float, mode: str = "rn"):
    """cvt.ftz.f32.f64: zero when tiny after rounding (rounded to 24 bits, below 2^-126)."""
    q = Q(x)
    return math.copysign(0.0, x) if tiny(q, "f32", mode) else bits(rnd(q, "f32", mode, neg_zero=x < 0))


# 2^-126 (1 - 2^-30) rounds up to 2^-126 at 24 bits: kept (the H200); 2^-126 (1 - 2^-24) is
# exact at 24 bits: tiny, flushed, although it rounds to 2^-126 in the subnormal range
for x in [1e-45, -1e-45, 2.0 ** -126, 2.0 ** -126 * (1 - 2.0 ** -30), -(2.0 ** -126) * (1 - 2.0 ** -24)]:
    add(Case("cvt.rn.ftz.f32.f64", "f32", ["f64"], [x], [ftz_f32(x)], note="gpu" if x == -(2.0 ** -126) * (1 - 2.0 ** -24)
             else ""))
add(Case("cvt.rp.ftz.f32.f64", "f32", ["f64"], [2.0 ** -126 * (1 - 2.0 ** -24)], [ftz_f32(2.0 ** -126 * (1 - 2.0 ** -24),
                                                                                        "rp")], note="gpu"))
# round to integral in the same format, with .ftz and .sat
first, tmpl = multi("cvt.rni.f32.f32", ["cvt.rzi.f32.f32", "cvt.rmi.f32.f32", "cvt.rpi.f32.f32"])
for x in [0.5, 1.5, 2.5, -0.5, -1.5, -2.7, 8388609.0, 1e20, -0.0, MIN_SUB32, -MIN_SUB32, INF, 0.49999997]:
    x = f32(x)
    want = [math.copysign(float(IROUND[r](Q(x))), x) if math.isfinite(x) else x for r in IROUND]
    add(Case(first, ["f32"] * 4, ["f32"], [x], want, template=tmpl))
add(Case(first, ["f32"] * 4, ["f32"], [bits(0xFFC12345)], [bits(CANON32)] * 4, template=tmpl,
         note="exact-nan"))  # FRND, unrecorded
first, tmpl = multi("cvt.rni.f64.f64", ["cvt.rzi.f64.f64", "cvt.rmi.f64.f64", "cvt.rpi.f64.f64"])
for x in [0.5, 2.5, -1.5, 4503599627370497.0, -0.3, 1e300]:
    add(Case(first, ["f64"] * 4, ["f64"], [x], [math.copysign(float(IROUND[r](Q(x))), x) for r in IROUND],
             template=tmpl))
for x, want in [(-MIN_SUB32, -0.0), (MIN_SUB32, 0.0), (2.5, 2.0)]:
    add(Case("cvt.rni.ftz.f32.f32", "f32", ["f32"], [x], [want]))
for x, want in [(0.5, 0.5), (1.5, 1.0), (-2.0, 0.0), (NAN, 0.0), (-0.0, 0.0), (INF, 1.0)]:
    add(Case("cvt.sat.f32.f32", "f32", ["f32"], [x], [want]))
    add(Case("cvt.rn.sat.f16.f32", "f16", ["f32"], [x], [want]))
for x, want in [(MIN_SUB32, 0.0), (-MIN_SUB32, -0.0), (1.0, 1.0)]:
    add(Case("cvt.ftz.f32.f32", "f32", ["f32"], [x], [want]))
for x in [2.5, -3.5, 0.5, 1000.5, 1001.5, 1000.75]:
    add(Case("cvt.rni.f16.f16", "f16", ["f16"], [x], [float(round(Q(val(rnd(Q(x), "f16"), "f16"))))]))
add(Case("cvt.rni.f16.f16", "f16", ["f16"], [bits(0xFE01)], [bits(CANON16)], note="exact-nan"))  # FRND.F16, unrecorded
# f16 ↔ bf16 (sm_90): bf16 has the range, f16 the precision
for x in [1.0 + 2.0 ** -10, 65504.0, 6e-8, -3.140625]:
    add(Case("cvt.rn.bf16.f16", "bf16", ["f16"], [x], [bits(rnd(Q(val(rnd(Q(x), "f16"), "f16")), "bf16"))]))
for x in [1e5, 1.5, 2.0 ** -20, -3e38]:
    xb = val(rnd(Q(x), "bf16"), "bf16")
    add(Case("cvt.rn.f16.bf16", "f16", ["bf16"], [x], [bits(rnd(Q(xb), "f16"))]))
# .relu clamps negatives to +0, NaN stays NaN; .satfinite turns overflow into max finite
for x, want in [(-1.5, 0.0), (2.5, 2.5), (-0.0, 0.0), (NAN, NAN), (-INF, 0.0)]:
    add(Case("cvt.rn.relu.f16.f32", "f16", ["f32"], [x], [want], note="gpu" if x == 0 else ""))
    add(Case("cvt.rn.relu.bf16.f32", "bf16", ["f32"], [x], [want], note="gpu" if x == 0 else ""))
for x, want in [(1e5, 65504.0), (-INF, -65504.0), (NAN, NAN), (3.0, 3.0)]:
    add(Case("cvt.rn.satfinite.f16.f32", "f16", ["f32"], [x], [want]))

# unrecorded: moves keep a NaN's bits (cvt.f32.f32, cvt.f64.f64); FADD.FTZ, F2F.FTZ.F32.BF16,
# HADD2 and HFMA2.BF16 give the canonical NaN; cvt.ftz.f64.f32 is FMUL.FTZ then F2F
for x in (0x7FC12345, 0xFF800001):
    add(Case("cvt.f32.f32", "f32", ["f32"], [bits(x)], [bits(x)], note="exact-nan"))
    add(Case("cvt.ftz.f32.f32", "f32", ["f32"], [bits(x)], [bits(CANON32)], note="exact-nan"))
    add(Case("cvt.ftz.f64.f32", "f64", ["f32"], [bits(x)], [bits(nan_convert(CANON32, "f32", "f64"))], note="exact-nan"))
add(Case("cvt.f64.f64", "f64", ["f64"], [bits(0xFFF0000000000123)], [bits(0xFFF0000000000123)], note="exact-nan"))
add(Case("cvt.ftz.f32.bf16", "f32", ["bf16"], [bits(0xFF81)], [bits(CANON32)], note="exact-nan"))
for t, x in (("f16", 0xFE01), ("bf16", 0xFF81)):
    add(Case(f"cvt.{t}.{t}", t, [t], [bits(x)], [bits(CANON16)], note="exact-nan"))

# ---------------------------------------------------------------- packed: f16x2, bf16x2, tf32, fp8
for a, b in [(1.0, 2.0), (1 / 3, -65520.0), (NAN, 0.1), (-1e-8, 3e38)]:
    for e, mode in (("f16", "rn"), ("f16", "rz"), ("bf16", "rn"), ("bf16", "rz")):
        hi, lo = (0x7FFF if math.isnan(x) else rnd(Q(f32(x)), e, mode) for x in (a, b))
        add(Case(f"cvt.{mode}.{e}x2.f32", "b32", ["f32", "f32"], [a, b], [hi << 16 | lo],
                 note="exact-nan" if math.isnan(a) else ""))
for a, b in [(-1.0, 2.0), (NAN, -0.5)]:
    add(Case("cvt.rn.relu.bf16x2.f32", "b32", ["f32", "f32"], [a, b],
             [(0x7FFF if math.isnan(a) else 0) << 16 | (rnd(Q(b), "bf16") if b > 0 else 0)], note="gpu"))
for x in [1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 1.0 + 2.0 ** -11 + 2.0 ** -23, -(1.0 + 2.0 ** -11), MAX32, MIN_SUB32, 0.1,
          INF]:
    x = f32(x)
    rna, rn, rz = ((rnd(Q(x), "tf32", m) << 13 if math.isfinite(x) else f32_bits(x)) for m in ("rna", "rn", "rz"))
    add(Case("cvt.rna.tf32.f32", ["b32", "b32", "b32"], ["f32"], [x], [rna, rn, rz],
             template="{d0}, {a}; cvt.rn.tf32.f32 {d1}, {a}; cvt.rz.tf32.f32 {d2}, {a}"))
    sat = rnd(Q(x), "tf32", "rna", satfinite=True) << 13 if math.isfinite(x) else 0x7F7FE000
    add(Case("cvt.rna.satfinite.tf32.f32", "b32", ["f32"], [x], [sat]))


def tf32_rna(b: int, satfinite: bool = False) -> int:
    """ptxas's cvt.rna{.satfinite}.tf32.f32 (sm_90): add half an ulp to the magnitude of a finite
    value and cut the low 13 bits, cut them only for inf and NaN (so NaN 0x7f800001 becomes inf);
    .satfinite then takes 0x2000 off a result with the top exponent (inf → max, NaN stays NaN)."""
    r = ((b + 0x1000) if b & 0x7FFFFFFF < 0x7F800000 else b) & 0xFFFFE000
    return r - 0x2000 if satfinite and r & 0x7F800000 == 0x7F800000 else r


for x in (0x7FC00000, 0xFFC12345, 0x7F800001, 0x7F7FF000, 0x80001000):
    add(Case("cvt.rna.tf32.f32", "b32", ["f32"], [bits(x)], [tf32_rna(x)], note="exact-nan"))
    add(Case("cvt.rna.satfinite.tf32.f32", "b32", ["f32"], [bits(x)], [tf32_rna(x, True)], note="exact-nan"))
# .rn/.rz{.relu}: the F2FP instruction; its NaN is the canonical f32 NaN cut to tf32
add(Case("cvt.rn.tf32.f32", ["b32", "b32"], ["f32"], [bits(0x7FC12345)], [CANON_TF32] * 2,
         template="{d0}, {a}; cvt.rz.tf32.f32 {d1}, {a}", note="exact-nan"))
add(Case("cvt.rn.relu.tf32.f32", ["b32", "b32"], ["f32"], [bits(0xFFC12345)], [CANON_TF32] * 2,
         template="{d0}, {a}; cvt.rz.relu.tf32.f32 {d1}, {a}", note="exact-nan"))  # unrecorded


def fp8(x: float, fmt: str) -> int:
    """x → e4m3/e5m2 with .rn.satfinite: NaN → 0x7f, infinities → ±max finite."""
    if math.isnan(x):
        return 0x7F
    if math.isinf(x):
        return max_bits(fmt) | (0x80 if x < 0 else 0)
    return rnd(Q(x), fmt, "rn", satfinite=True)


for fmt in ("e4m3", "e5m2"):
    for a, b in [(1.0, -2.0), (448.0, 500.0), (1e6, -1e6), (0.001, 2.0 ** -9), (0.3, -0.7), (NAN, INF), (57344.0, 3e-5),
                 (-INF, 464.0)]:
        hi, lo = (fp8(f32(x) if math.isfinite(x) else x, fmt) for x in (a, b))
        add(Case(f"cvt.rn.satfinite.{fmt}x2.f32", "b16", ["f32", "f32"], [a, b], [hi << 8 | lo],
                 note="gpu" if math.isnan(a) else ""))
    add(Case(f"cvt.rn.satfinite.relu.{fmt}x2.f32", "b16", ["f32", "f32"], [-1.0, 2.0], [fp8(2.0, fmt)]))
    for code in [0x3C, 0x01, 0xFE, 0x7E, 0x80, 0x42C1]:
        want = 0
        for k in (0, 1):
            c = code >> (8 * k) & 0xFF
            v = val(c, fmt)
            want |= (0x7FFF if math.isnan(v) else rnd(Q(v), "f16", neg_zero=c == 0x80)) << (16 * k)
        add(Case(f"cvt.rn.f16x2.{fmt}x2", "b32", ["b16"], [code], [want]))
    for h in [0x3C00BC00, 0x7BFF0001]:  # f16x2 → fp8x2: upper half to the upper byte
        hv = [val(h >> 16, "f16"), val(h & 0xFFFF, "f16")]
        want = rnd(Q(hv[0]), fmt, "rn", satfinite=True) << 8 | rnd(Q(hv[1]), fmt, "rn", satfinite=True)
        add(Case(f"cvt.rn.satfinite.{fmt}x2.f16x2", "b16", ["b32"], [h], [want]))

# ---------------------------------------------------------------- cvt.pack: saturate two s32, pack a above b


def packed(a: int, b: int, c: int, t: str) -> int:
    n = {"2": 2, "4": 4, "8": 8, "16": 16}[t[1:]]
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if t[0] == "s" else (0, (1 << n) - 1)
    m = (1 << n) - 1
    d = (max(lo, min(hi, a)) & m) << n | (max(lo, min(hi, b)) & m)
    return d if n == 16 else (d | c << 2 * n) & 0xFFFFFFFF


for a, b in [(1, 2), (-1, 300), (-40000, 40000), (7, -8), (2**31 - 1, -(2**31))]:
    add(Case("cvt.pack.sat.s16.s32", ["u32", "u32"], ["s32", "s32"], [a, b], [packed(a, b, 0, "s16"), packed(a, b, 0, "u16")],
             template="{d0}, {a}, {b}; cvt.pack.sat.u16.s32 {d1}, {a}, {b}"))
    for t in ("u8", "s8", "u4", "s2"):
        add(Case(f"cvt.pack.sat.{t}.s32.b32", "u32", ["s32", "s32", "b32"], [a, b, 0xABCD1234], [packed(a, b, 0xABCD1234, t)]))



def ptxas_folding(c: Case) -> str:
    """Why the GPU's answer to the uniform copy of `c` is not c's: ptxas converts the constant."""
    x = c.inputs[0] if c.inputs else None
    if c.dsts == ["f64"] and c.srcs in (["f16"], ["bf16"]) and isinstance(x, Bits) and math.isnan(val(x.value, c.srcs[0])):
        return ("ptxas folds the conversion of a constant NaN at compile time and its folder widens the canonical "
                "f32 NaN (0x7fffffffe0000000); F2F at run time keeps the payload (recorded)")
    return ""


# every kernel once more with its operands in uniform registers: the scalar code path
CASES += uniform_variants(CASES, ptxas_folding)
