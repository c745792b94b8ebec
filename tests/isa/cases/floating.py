"""Floating-point instructions on f32/f64 (PTX ISA §9.7.3).

Expected values: IEEE results are computed exactly with Python fractions and rounded by
fpref.rnd in the instruction's mode (zero signs by IEEE 754's rules); approximate functions
against Python's libm with the PTX ISA's documented bound as the tolerance.

The GPU's own rules, derived from the H200 recordings and ptxas's code (cuport/isa/fprt.py):
- NaN (note="exact-nan" compares the bits): f32 results are the canonical 0x7fffffff; f64
  results are a NaN operand quieted, sign and payload kept (fpref.nan64), 0xfff8000000000000
  when the operands are numbers. Several NaN operands: add/sub/mul/fma return b's, then a's,
  then c's (DADD/DMUL/DFMA prefer their second source), div a's then b's (ptxas's code),
  min/max b's; sub's negation and neg/abs do not touch the sign of the NaN returned.
- The uniform copies' operands are constants, which ptxas places and folds itself (an
  immediate goes to DADD's second slot, sub's negation is folded into a constant): where the
  NaN returned then depends on that placement, the copy is checked against the rule only
  (`ptxas_placement`).
- .ftz flushes results that are tiny after rounding (fpref.tiny): FLT_MIN * (1 - 2^-24) is
  flushed although it rounds to FLT_MIN in the subnormal range.
note="gpu" marks cases the manual leaves open; several pin a rule on inputs the recordings do
not cover yet (products just below FLT_MIN that round up to it; the exact-nan probes marked
"unrecorded" below: fma's a against c, signaling against quiet NaNs). Several rounding modes of one instruction share a kernel: the template runs each mode into
its own destination.
"""

import math
import random
from fractions import Fraction as Q

from fpref import bits_f32, bits_f64, f32, f32_bits, f64_bits, nan64, rnd, tiny, uniform_variants
from ptxgen import Bits, Case, bits

CASES: list[Case] = []
add = CASES.append
INF, NAN = math.inf, math.nan
MODES = ("rn", "rz", "rm", "rp")
CANON32 = bits(0x7FFFFFFF)
MIN_SUB32, MIN_NORM32, MAX32 = bits_f32(1), 2.0 ** -126, bits_f32(0x7F7FFFFF)
MIN_SUB64, MAX64 = bits_f64(1), bits_f64(0x7FEFFFFFFFFFFFFF)
PAYLOAD_NAN32 = bits(0x7FC12345)


def r32(x: float):
    """x rounded to nearest f32 (overflow to inf), as an expected value."""
    return x if not math.isfinite(x) else bits(rnd(Q(x), "f32"))


def fin(*xs) -> bool:
    return all(math.isfinite(x) for x in xs)


def neg(x: float) -> bool:
    return math.copysign(1.0, x) < 0


def ftz32(x: float) -> float:
    return math.copysign(0.0, x) if x != 0 and abs(x) < MIN_NORM32 else x


def ieee(t: str, mode: str, op: str, xs: list[float], ftz: bool = False):
    """The exactly rounded result (bits) of op on values xs, or NaN/inf for special operands.
    `ftz`: f32 subnormal operands count as zeros, and a result tiny after rounding is a zero."""
    if ftz:
        xs = [ftz32(x) for x in xs]
    if not fin(*xs):
        with_inf = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
                    "fma": lambda a, b, c: a * b + c if not (math.isinf(a) or math.isinf(b)) or (a and b)
                    else NAN, "div": lambda a, b: a / b if b else math.copysign(INF, a) * (1 if not neg(b) else -1),
                    "sqrt": lambda a: math.sqrt(a) if a >= 0 else NAN,
                    "rcp": lambda a: 1 / a}[op]
        try:
            return with_inf(*xs)
        except (ValueError, ZeroDivisionError):
            return NAN
    q = [Q(x) for x in xs]
    negz = False
    if op in ("add", "sub"):
        b = xs[1] if op == "add" else -xs[1]
        r = q[0] + Q(b)
        negz = (neg(xs[0]) and neg(b)) or (mode == "rm" and r == 0 and (neg(xs[0]) or neg(b)))
    elif op == "mul":
        r = q[0] * q[1]
        negz = neg(xs[0]) != neg(xs[1])
    elif op == "fma":
        r = q[0] * q[1] + q[2]
        pn = neg(xs[0]) != neg(xs[1])
        negz = (pn and neg(xs[2])) or (mode == "rm" and r == 0 and (pn or neg(xs[2])))
    elif op == "div":
        if xs[1] == 0:
            return NAN if xs[0] == 0 else (-INF if neg(xs[0]) != neg(xs[1]) else INF)
        r = q[0] / q[1]
        negz = neg(xs[0]) != neg(xs[1])
    elif op == "rcp":
        return ieee(t, mode, "div", [1.0, xs[0]])
    elif op == "sqrt":
        if xs[0] < 0:
            return NAN
        r = sqrt_q(q[0])
        negz = neg(xs[0])
    else:
        raise ValueError(op)
    if ftz and tiny(r, t, mode):
        return bits((r < 0) << 31)
    return bits(rnd(r, t, mode, neg_zero=negz))


def sqrt_q(q: Q) -> Q:
    """sqrt(q) exactly when it is rational, else a value strictly inside the same 2^-1300 cell."""
    k = 1300
    n = q * 4 ** k
    i = n.numerator // n.denominator
    r = math.isqrt(i)
    if r * r == i and n.denominator == 1:
        return Q(r, 2 ** k)
    return Q(2 * r + 1, 2 ** (k + 1))


def modes(op: str, t: str, n: int, ms=MODES, extra: str = "") -> tuple[str, str, list[str]]:
    """Instruction, template and destination types running `op` in every mode of `ms`."""
    ops = ", ".join("{" + "abc"[i] + "}" for i in range(n))
    first = f"{op}.{ms[0]}{extra}.{t}"
    rest = "".join(f"; {op}.{m}{extra}.{t} {{d{i + 1}}}, {ops}" for i, m in enumerate(ms[1:]))
    return first, f"{{d0}}, {ops}{rest}", [t] * len(ms)


def all_modes(op: str, t: str, xs: list[float], ms=MODES, note: str = "") -> None:
    instr, tmpl, dsts = modes(op, t, len(xs), ms)
    xs = [f32(x) if t == "f32" and math.isfinite(x) else x for x in xs]
    ins = [bits(f32_bits(x) if t == "f32" else f64_bits(x)) for x in xs]
    add(Case(instr, dsts, [t] * len(xs), ins, [ieee(t, m, op, xs) for m in ms], template=tmpl, note=note))


def rand32(rng: random.Random) -> float:
    k = rng.random()
    if k < 0.4:
        return f32(rng.uniform(-4, 4))
    if k < 0.6:
        return bits_f32(rng.getrandbits(23) | rng.getrandbits(1) << 31)  # subnormal
    b = rng.getrandbits(32)
    return bits_f32(b) if (b >> 23) & 0xFF != 0xFF else 1.5


def rand64(rng: random.Random) -> float:
    k = rng.random()
    if k < 0.4:
        return rng.uniform(-4, 4)
    if k < 0.6:
        return bits_f64(rng.getrandbits(52) | rng.getrandbits(1) << 63)
    b = rng.getrandbits(64)
    return bits_f64(b) if (b >> 52) & 0x7FF != 0x7FF else 1.5


# ---------------------------------------------------------------- add, sub, mul in every mode
E24 = 2.0 ** -24
ADD32 = [(1.0, E24), (1.0, 3 * E24 / 2), (-1.0, -E24), (1.0, -E24 / 2), (0.1, 0.2), (1e30, 1e-30), (MAX32, MAX32),
         (MAX32, -MAX32), (MIN_SUB32, MIN_SUB32), (MIN_NORM32, -MIN_SUB32), (0.0, -0.0), (-0.0, -0.0), (1.5, -1.5),
         (-MAX32, -bits_f32(0x73000000)), (3.0, f32(1 / 3))]
MUL32 = [(1 + 2 ** -23, 1 + 2 ** -23), (3.0, f32(1 / 3)), (2.0 ** -100, 2.0 ** -100), (-(2.0 ** -100), 2.0 ** -100),
         (MAX32, 2.0), (-0.0, 5.0), (MIN_SUB32, 0.5), (MIN_SUB32, 1.5), (f32(0.1), f32(0.1)), (-MAX32, 1.5)]
ADD64 = [(1.0, 2.0 ** -53), (1.0, 3 * 2.0 ** -54), (-1.0, -(2.0 ** -53)), (0.1, 0.2), (MAX64, MAX64),
         (MIN_SUB64, MIN_SUB64), (1.5, -1.5), (-0.0, -0.0), (1e300, 1e-300)]
MUL64 = [(1 + 2.0 ** -52, 1 + 2.0 ** -52), (3.0, 1 / 3), (1e-200, 1e-200), (-1e-200, 1e-200), (MAX64, 2.0),
         (MIN_SUB64, 0.5), (MIN_SUB64, 1.5), (0.1, 0.1)]
rng = random.Random(1234)
for x, y in ADD32 + [(rand32(rng), rand32(rng)) for _ in range(24)]:
    all_modes("add", "f32", [x, y])
    all_modes("sub", "f32", [x, y])
for x, y in MUL32 + [(rand32(rng), rand32(rng)) for _ in range(24)]:
    all_modes("mul", "f32", [x, y])
for x, y in ADD64 + [(rand64(rng), rand64(rng)) for _ in range(16)]:
    all_modes("add", "f64", [x, y])
    all_modes("sub", "f64", [x, y])
for x, y in MUL64 + [(rand64(rng), rand64(rng)) for _ in range(16)]:
    all_modes("mul", "f64", [x, y])
# infinities and NaN: the same in every mode; f32 NaN results are the canonical NaN
for x, y in [(INF, 1.0), (INF, -INF), (-INF, -INF)]:
    all_modes("add", "f32", [x, y])
for ins in (["add", "f32", [INF, -INF]], ["mul", "f32", [0.0, INF]], ["sub", "f32", [INF, INF]]):
    op, t, xs = ins
    add(Case(f"{op}.rn.f32", t, [t, t], xs, [CANON32], note="exact-nan"))
add(Case("add.rn.f32", "f32", ["f32", "f32"], [PAYLOAD_NAN32, 1.0], [CANON32], note="exact-nan"))
add(Case("mul.rz.f32", "f32", ["f32", "f32"], [2.0, PAYLOAD_NAN32], [CANON32], note="exact-nan"))
# f64 invalid operations give 0xfff8000000000000 (CUDA's CUDART_NAN; x86's default NaN too);
# a NaN operand propagates quieted, sign and payload kept; of several NaNs add/sub/mul/fma
# return b's, then a's, then c's, div a's then b's (fpref.NAN64_ORDER). Recorded on the H200:
# every pair below; unrecorded probes: fma's a against c, signaling against quiet NaNs.
NAN64_A, NAN64_B, NAN64_C = 0x7FF8000000012345, 0xFFFC0000ABCD0000, 0x7FF8000000000C00
SNAN64 = 0x7FF0000000000001  # signaling: the quiet bit clear
A64, B64, C64, S64 = bits(NAN64_A), bits(NAN64_B), bits(NAN64_C), bits(SNAN64)


def b64(x) -> int:
    return x.value if isinstance(x, Bits) else f64_bits(x)


def nan_case(instr: str, xs: list) -> None:
    op = instr.split(".")[0]
    add(Case(instr, "f64", ["f64"] * len(xs), xs, [bits(nan64(op, *map(b64, xs)))], note="exact-nan"))


for op, xs in [("add.rn", [INF, -INF]), ("div.rn", [0.0, 0.0]), ("add.rn", [A64, 1.0]), ("add.rn", [1.0, B64]),
               ("add.rn", [A64, B64]), ("add.rz", [B64, A64]), ("mul.rn", [S64, 2.0]), ("mul.rn", [B64, A64]),
               ("div.rn", [A64, B64]), ("div.rn", [1.0, B64]), ("sub.rn", [1.0, B64]), ("sub.rm", [A64, C64]),
               # unrecorded
               ("add.rn", [S64, A64]), ("add.rn", [A64, S64]), ("sub.rn", [B64, A64]), ("mul.rz", [A64, B64]),
               ("div.rn", [B64, A64]), ("div.rp", [A64, B64])]:
    nan_case(f"{op}.f64", xs)
for xs in ([1.0, 2.0, C64], [0.0, INF, C64], [A64, B64, C64], [1.0, B64, C64], [INF, 0.0, 1.0],
           [A64, 2.0, C64], [C64, 2.0, A64], [A64, 1.0, S64], [S64, 1.0, C64]):  # the last four unrecorded
    nan_case("fma.rn.f64", xs)
nan_case("fma.rz.f64", [A64, B64, C64])
nan_case("mad.rn.f64", [A64, 2.0, C64])
for op in ("sqrt.rn", "rcp.rn", "sqrt.rz"):
    nan_case(f"{op}.f64", [B64])
    if op.startswith("sqrt"):
        nan_case(f"{op}.f64", [-2.0])


def ptxas_placement(c: Case) -> str:
    """Why the GPU's answer to the uniform copy of `c` need not be c's: ptxas's placement of
    constant operands decides which NaN the hardware sees first."""
    op = c.instr.split(".")[0]
    if c.dsts != ["f64"] or op not in ("add", "sub", "mul", "fma", "mad"):
        return ""
    nans = [i for i, x in enumerate(c.inputs) if isinstance(x, Bits) and math.isnan(bits_f64(x.value))]
    if len(nans) < 2 and not (op == "sub" and 1 in nans):
        return ""
    return ("ptxas places constant operands itself: it may move one into DADD/DMUL/DFMA's second slot "
            "(add.rz(B, A) became DADD.RZ A, B: the H200 answers B) and folds sub's negation into the constant, "
            "flipping a NaN's sign (sub(1, B) became DADD -B, 1: 0x7ffc0000abcd0000); the rule is PTX order")


# .ftz: subnormal inputs become zeros of the same sign, and so do results that are tiny after
# rounding (see the module docstring); .sat clamps to [0, 1]
for x, y in [(MIN_SUB32, MIN_SUB32), (MIN_NORM32, -MIN_SUB32), (bits_f32(0x00400000), 1.0), (-MIN_SUB32, 0.0),
             (1.5 * MIN_NORM32, -MIN_NORM32), (1.0, 2.0)]:
    add(Case("add.ftz.f32", "f32", ["f32", "f32"], [x, y], [ieee("f32", "rn", "add", [x, y], ftz=True)]))
BELOW = 1 - 2 ** -24  # FLT_MIN * BELOW is exact in 24 bits: tiny, though it rounds to FLT_MIN in the subnormals
JUST_BELOW = (MIN_NORM32 * (1 + 2 ** -13), 1 - 2 ** -13)  # a product 2^-126 (1 - 2^-26): rounds up past it
for x, y in [(2.0 ** -70, 2.0 ** -70), (MIN_NORM32, BELOW), (-MIN_NORM32, 0.5), (MIN_SUB32, 2.0 ** 30), JUST_BELOW,
             (-JUST_BELOW[0], JUST_BELOW[1])]:
    add(Case("mul.rn.ftz.f32", "f32", ["f32", "f32"], [x, y], [ieee("f32", "rn", "mul", [x, y], ftz=True)],
             note="gpu" if y == JUST_BELOW[1] else ""))
for m in ("rp", "rz", "rm"):
    add(Case(f"mul.{m}.ftz.f32", "f32", ["f32", "f32"], [MIN_NORM32, BELOW], [ieee("f32", m, "mul", [MIN_NORM32, BELOW],
                                                                                     ftz=True)]))
    add(Case(f"mul.{m}.ftz.f32", "f32", ["f32", "f32"], list(JUST_BELOW), [ieee("f32", m, "mul", list(JUST_BELOW),
                                                                                   ftz=True)], note="gpu"))
# a*b + c = 2^-126 - 2^-151: the tie rounds up to FLT_MIN at 24 bits, so it is not tiny
for xs in ([MIN_NORM32, BELOW, 0.0], [-(2.0 ** -75), 2.0 ** -76, MIN_NORM32], [*JUST_BELOW, 0.0],
           [2.0 ** -100, 2.0 ** -27, -MIN_NORM32]):
    add(Case("fma.rn.ftz.f32", "f32", ["f32"] * 3, xs, [ieee("f32", "rn", "fma", xs, ftz=True)], note="gpu"))
add(Case("div.rn.ftz.f32", "f32", ["f32", "f32"], [MIN_NORM32 * (2 - 2 ** -23), 2.0],
         [ieee("f32", "rn", "div", [MIN_NORM32 * (2 - 2 ** -23), 2.0], ftz=True)], note="gpu"))
for x, y, want in [(0.25, 0.5, 0.75), (0.5, 0.75, 1.0), (-0.5, 0.25, 0.0), (-0.0, 0.0, 0.0), (-0.0, -0.0, 0.0),
                   (INF, -INF, 0.0), (MAX32, MAX32, 1.0), (1.0, -2.0, 0.0)]:
    add(Case("add.sat.f32", "f32", ["f32", "f32"], [x, y], [want]))

# ---------------------------------------------------------------- fma / mad
A, A2 = 1 + 2 ** -12, 1 + 2 ** -11
FMA32 = [(A, A, -A2), (2.0, 3.0, 4.0), (1.0, 1.0, E24), (1.0, 1.0, -(2.0 ** -25)), (1e38, 10.0, -1e38),
         (-1.0, 1.0, 1.0), (2.0 ** -75, 2.0 ** -75, 0.0), (-(2.0 ** -75), 2.0 ** -75, -0.0), (MAX32, 2.0, -MAX32),
         (MAX32, 1.5, 0.0), (f32(0.1), 10.0, -1.0), (-0.0, 1.0, 0.0), (0.0, -1.0, -0.0),
         # expf's first step: t = fma.rm(x, log2(e)/..., 0.5) style values
         (f32(0.7), f32(1.442695), 12582912.0), (f32(-3.3), bits_f32(0x3FB8AA3B), bits_f32(0x4B400001))]
FMA64 = [(1 + 2.0 ** -27, 1 + 2.0 ** -27, -(1 + 2.0 ** -26)), (2.0, 3.0, 4.0), (1.0, 1.0, 2.0 ** -53),
         (-1.0, 1.0, 1.0), (1e-200, 1e-200, 0.0), (MAX64, 2.0, -MAX64), (0.1, 10.0, -1.0)]
for xs in FMA32 + [(rand32(rng), rand32(rng), rand32(rng)) for _ in range(32)]:
    all_modes("fma", "f32", list(xs))
for xs in FMA64 + [(rand64(rng), rand64(rng), rand64(rng)) for _ in range(16)]:
    all_modes("fma", "f64", list(xs))
for xs in [(A, A, -A2), (1.0, 1.0, E24), (2.0, 3.0, 4.0)]:
    add(Case("mad.rn.f32", "f32", ["f32"] * 3, list(xs), [ieee("f32", "rn", "fma", list(xs))]))
    add(Case("mad.rm.f64", "f64", ["f64"] * 3, list(xs), [ieee("f64", "rm", "fma", list(xs))]))
# mul then add is never contracted: A*A rounds to A2 first, so the sum is 0 (the fma gives 2^-24)
add(Case("mul.rn.f32", "f32", ["f32", "f32", "f32"], [A, A, -A2], [0.0],
         template="{d}, {a}, {b}; add.rn.f32 {d}, {d}, {c}"))
add(Case("mul.f32", "f32", ["f32", "f32", "f32"], [A, A, -A2], [0.0], template="{d}, {a}, {b}; add.f32 {d}, {d}, {c}",
         gpu_differs="ptxas contracts mul.f32 + add.f32 without a rounding modifier into one FFMA (the H200 "
                     "answers 2^-24); cuport never fuses (cuport/isa/floating.py)"))
for xs, want in [((0.5, 0.5, 0.5), 0.75), ((2.0, 2.0, 0.0), 1.0), ((-1.0, 1.0, 0.5), 0.0), ((INF, 0.0, 1.0), 0.0),
                 ((MIN_SUB32, 1.0, 0.0), 0.0), ((MIN_NORM32, 1.0, 0.0), MIN_NORM32)]:
    add(Case("fma.rn.ftz.sat.f32", "f32", ["f32"] * 3, list(xs), [want]))
add(Case("fma.rn.f32", "f32", ["f32"] * 3, [INF, 0.0, 1.0], [CANON32], note="exact-nan"))

# ---------------------------------------------------------------- div, rcp, sqrt (IEEE)
DIV32 = [(1.0, 3.0), (-1.0, 3.0), (2.0, 3.0), (1.0, MAX32), (MAX32, 0.5), (MIN_SUB32, 2.0), (MIN_SUB32, -3.0),
         (1.0, MIN_SUB32), (0.0, -5.0), (7.0, 7.0), (f32(0.3), f32(0.1))]
for x, y in DIV32 + [(rand32(rng), rand32(rng)) for _ in range(24)]:
    all_modes("div", "f32", [x, y])
for x, y in [(1.0, 3.0), (-2.0, 3.0), (1.0, MAX64), (MIN_SUB64, 3.0), (0.3, 0.1)] + [(rand64(rng), rand64(rng))
                                                                                    for _ in range(8)]:
    all_modes("div", "f64", [x, y])
for x, y, want in [(1.0, 0.0, INF), (-1.0, 0.0, -INF), (1.0, -0.0, -INF), (0.0, 0.0, NAN), (INF, INF, NAN)]:
    add(Case("div.rn.f32", "f32", ["f32", "f32"], [x, y], [want]))
    add(Case("div.rz.f64", "f64", ["f64", "f64"], [x, y], [want]))
for x, y in [(MIN_SUB32, 1.0), (1.0, 3.0), (MIN_NORM32, 1.5), (1.0, MIN_SUB32)]:
    add(Case("div.rn.ftz.f32", "f32", ["f32", "f32"], [x, y], [ieee("f32", "rn", "div", [x, y], ftz=True)]))
for x in [3.0, -7.0, 0.1, MAX32, MIN_SUB32, -1e-30, 1.0, 2.0 ** -127] + [rand32(rng) for _ in range(12)]:
    all_modes("rcp", "f32", [x])
for x in [3.0, -7.0, 0.1, MAX64, MIN_SUB64, 1e-300] + [rand64(rng) for _ in range(8)]:
    all_modes("rcp", "f64", [x])
for x in [2.0, 3.0, 0.5, 1e-30, MIN_SUB32, bits_f32(0x7F7FFFFF), 1 + 2 ** -23, 4.0] + [abs(rand32(rng)) for _ in range(24)]:
    all_modes("sqrt", "f32", [x])
for x in [2.0, 3.0, 0.1, MIN_SUB64, MAX64, 1 + 2.0 ** -52] + [abs(rand64(rng)) for _ in range(12)]:
    all_modes("sqrt", "f64", [x])
for x, want in [(-0.0, -0.0), (0.0, 0.0), (-1.0, NAN), (INF, INF), (-INF, NAN)]:
    add(Case("sqrt.rn.f32", "f32", ["f32"], [x], [want]))
    add(Case("sqrt.rm.f64", "f64", ["f64"], [x], [want]))
    add(Case("sqrt.approx.f32", "f32", ["f32"], [x], [want]))
add(Case("sqrt.rn.f32", "f32", ["f32"], [-1.0], [CANON32], note="exact-nan"))
for x, want in [(MIN_SUB32, 0.0), (-MIN_SUB32, -0.0), (4.0, 2.0), (MIN_NORM32, 2.0 ** -63)]:
    add(Case("sqrt.rn.ftz.f32", "f32", ["f32"], [x], [want]))
    add(Case("sqrt.approx.ftz.f32", "f32", ["f32"], [x], [want], tolerance_ulps=1 if want else 0))  # 2^-23 relative

# ---------------------------------------------------------------- approximate f32 forms
for x in [2.0, 3.0, 0.1, 1e-30, 1e30, MIN_SUB32 * 5, 7.5, 1234.5678]:
    add(Case("sqrt.approx.f32", "f32", ["f32"], [x], [r32(math.sqrt(x))], tolerance_ulps=1))  # 2^-23 relative
    add(Case("rcp.approx.f32", "f32", ["f32"], [x], [r32(1 / f32(x))], tolerance_ulps=1))
    add(Case("rsqrt.approx.f32", "f32", ["f32"], [x], [r32(1 / math.sqrt(f32(x)))], tolerance_ulps=3))  # 2^-22.9
for x, want in [(-INF, -0.0), (-0.0, -INF), (0.0, INF), (INF, 0.0), (NAN, NAN)]:
    add(Case("rcp.approx.f32", "f32", ["f32"], [x], [want]))
for x, want in [(-INF, NAN), (-2.0, NAN), (-0.0, -INF), (0.0, INF), (INF, 0.0), (NAN, NAN)]:
    add(Case("rsqrt.approx.f32", "f32", ["f32"], [x], [want]))
for x, want in [(MIN_SUB32, INF), (-MIN_SUB32, -INF), (2.0 ** 127, 0.0), (4.0, 0.25)]:
    add(Case("rcp.approx.ftz.f32", "f32", ["f32"], [x], [want], tolerance_ulps=1 if x == 4.0 else 0))  # 1/2^127: flushed
for x, want in [(MIN_SUB32, INF), (-MIN_SUB32, -INF), (4.0, 0.5)]:
    add(Case("rsqrt.approx.ftz.f32", "f32", ["f32"], [x], [want], tolerance_ulps=3 if x == 4.0 else 0))
add(Case("rcp.approx.f32", "f32", ["f32"], [2.0 ** 127], [2.0 ** -127], tolerance_ulps=1,
         note="gpu"))  # non-ftz keeps subnormals
for x in [3.0, 0.1, 1e-300, 1e300, MIN_SUB64 * 7]:
    add(Case("rsqrt.approx.f64", "f64", ["f64"], [x], [1 / math.sqrt(x)], tolerance_ulps=2 ** 30, note="gpu"))
add(Case("rsqrt.approx.f64", "f64", ["f64"], [-0.0], [-INF]))
add(Case("rsqrt.approx.f64", "f64", ["f64"], [-1.0], [NAN]))


def upper_word(x: float) -> float:
    """The operand as rcp/rsqrt.approx.ftz.f64 see it: the lower 32 bits cleared."""
    return bits_f64(f64_bits(x) & 0xFFFFFFFF00000000)


# rcp/rsqrt.approx.ftz.f64 work on the upper word; the lower 32 result bits are zero
for x in [3.0, -7.0, 0.1, 1.0 + 2.0 ** -40, 1e300, 1e-300]:
    for op, f in (("rcp", lambda v: 1 / v), ("rsqrt", lambda v: 1 / math.sqrt(v))):
        if op == "rsqrt" and x < 0:
            continue
        want = f(upper_word(x))
        add(Case(f"{op}.approx.ftz.f64", ["f64", "b32"], ["f64"], [x], [want, 0], tolerance_ulps=2 ** 33,
                 template="{d0}, {a}; mov.b64 {{%r_lo, %r_hi}}, {d0}; mov.b32 {d1}, %r_lo",
                 extra_decls=".reg .b32 %r_lo, %r_hi;", note="gpu"))
for x, want in [(MIN_SUB64, INF), (-MIN_SUB64, -INF), (-0.0, -INF), (INF, 0.0), (-INF, -0.0), (1e308, 0.0)]:
    add(Case("rcp.approx.ftz.f64", "f64", ["f64"], [x], [want]))
add(Case("rcp.approx.ftz.f64", "f64", ["f64"], [bits(0x7FF8000000000001)], [bits(0x7FFFFFFF00000000)],
         note="exact-nan"))
for x, want in [(MIN_SUB64, INF), (-MIN_SUB64, -INF), (-0.0, -INF), (INF, 0.0), (-2.0, NAN)]:
    add(Case("rsqrt.approx.ftz.f64", "f64", ["f64"], [x], [want]))

# div.approx: a * (1/b), 2 ulp for |b| in [2^-126, 2^126]; beyond, the reciprocal flushes
for x, y in [(1.0, 3.0), (-5.0, 7.0), (1e30, 1e-30), (f32(0.3), f32(0.1)), (MIN_SUB32 * 8, 0.5), (1.0, 2.0 ** 126)]:
    add(Case("div.approx.f32", "f32", ["f32", "f32"], [x, y], [r32(f32(x) / f32(y))], tolerance_ulps=2))
    add(Case("div.full.f32", "f32", ["f32", "f32"], [x, y], [r32(f32(x) / f32(y))], tolerance_ulps=2))
for x, y, want in [(1.0, 2.0 ** 127, 0.0), (-3.0, 1.5 * 2.0 ** 127, -0.0), (2.0 ** 126, MAX32, 0.0),
                   (INF, 2.0 ** 127, NAN), (1.0, 0.0, INF), (0.0, 0.0, NAN)]:
    add(Case("div.approx.f32", "f32", ["f32", "f32"], [x, y], [want]))
for x, y, want in [(1.0, 2.0 ** 127, 2.0 ** -127), (2.0 ** 126, MAX32, f32(2.0 ** 126 / MAX32)), (1.0, 0.0, INF)]:
    add(Case("div.full.f32", "f32", ["f32", "f32"], [x, y], [want], tolerance_ulps=2, note="gpu"))
for x, y, want in [(MIN_SUB32, 1.0, 0.0), (1.0, MIN_SUB32, INF), (2.0 ** -120, 2.0 ** 10, 0.0), (6.0, 3.0, 2.0)]:
    tol = 2 if want == 2.0 else 0
    add(Case("div.approx.ftz.f32", "f32", ["f32", "f32"], [x, y], [want], tolerance_ulps=tol))
    add(Case("div.full.ftz.f32", "f32", ["f32", "f32"], [x, y], [want], tolerance_ulps=tol))
# |b| just above 2^126: 1/b rounds to FLT_MIN but lies below it; div.approx returns 0 beyond 2^126
add(Case("div.approx.f32", "f32", ["f32", "f32"], [1.0, 2.0 ** 126 * (1 + 2 ** -23)], [0.0]))

# sin/cos: 2^-20.5 absolute in [-2pi, 2pi], 2^-14.7 in [-100pi, 100pi]; inf → NaN
SIN_NEAR = [0.5, 1.0, -1.0, 2.0, 3.0, math.pi / 2, -math.pi, 6.0, -6.2, 1e-3, 2.5e-5]
SIN_FAR = [100.0, -250.0, 314.0, 77.7]
for x in SIN_NEAR:
    add(Case("sin.approx.f32", "f32", ["f32"], [x], [math.sin(f32(x))], abs_tolerance=2 ** -20.5))
    add(Case("cos.approx.f32", "f32", ["f32"], [x], [math.cos(f32(x))], abs_tolerance=2 ** -20.5))
    add(Case("sin.approx.ftz.f32", "f32", ["f32"], [x], [math.sin(f32(x))], abs_tolerance=2 ** -20.5))
for x in SIN_FAR:
    add(Case("sin.approx.f32", "f32", ["f32"], [x], [math.sin(f32(x))], abs_tolerance=2 ** -14.7))
    add(Case("cos.approx.f32", "f32", ["f32"], [x], [math.cos(f32(x))], abs_tolerance=2 ** -14.7))
for x, s, c in [(0.0, 0.0, 1.0), (-0.0, -0.0, 1.0), (INF, NAN, NAN), (-INF, NAN, NAN), (NAN, NAN, NAN)]:
    add(Case("sin.approx.f32", "f32", ["f32"], [x], [s]))
    add(Case("cos.approx.f32", "f32", ["f32"], [x], [c]))
add(Case("sin.approx.f32", "f32", ["f32"], [INF], [CANON32], note="exact-nan"))
add(Case("sin.approx.f32", "f32", ["f32"], [1e6], [math.sin(1e6)], abs_tolerance=0.25, note="gpu"))  # best effort
add(Case("sin.approx.ftz.f32", "f32", ["f32"], [-MIN_SUB32], [-0.0]))
add(Case("cos.approx.ftz.f32", "f32", ["f32"], [MIN_SUB32], [1.0]))

# lg2 (the PTX ISA): 2^-22 absolute for x in (0.5, 2), 2^-22 relative for other positive finite x
# (4 ulp; at |log2 x| = 1 or 3 the relative bound is an absolute one: x = 0.5, 2 and 8 below)
for x in [0.75, 1.5, 1.0001, 0.9999, 1.25, 1.0]:
    add(Case("lg2.approx.f32", "f32", ["f32"], [x], [math.log2(f32(x))], abs_tolerance=2 ** -22))
for x in [10.0, 1e-30, 3e38, 1024.0, 0.1, MIN_SUB32 * 3, 7e-42]:
    add(Case("lg2.approx.f32", "f32", ["f32"], [x], [r32(math.log2(f32(x)))], tolerance_ulps=4))
for x, want in [(2.0, 1.0), (0.5, -1.0)]:  # the H200: lg2(0.5) = -1 + 2^-23
    add(Case("lg2.approx.f32", "f32", ["f32"], [x], [want], abs_tolerance=2 ** -22))
for x, want in [(0.0, -INF), (-0.0, -INF), (-1.0, NAN), (-INF, NAN), (INF, INF), (NAN, NAN)]:
    add(Case("lg2.approx.f32", "f32", ["f32"], [x], [want]))  # the manual's table: exact
add(Case("lg2.approx.ftz.f32", "f32", ["f32"], [MIN_SUB32 * 3], [-INF]))
add(Case("lg2.approx.ftz.f32", "f32", ["f32"], [8.0], [3.0], abs_tolerance=3 * 2 ** -22))

# ex2: 2 ulp across the full range; -inf → +0; subnormal results unless .ftz
for x in [0.5, -0.5, 3.3, -3.3, 10.25, 100.0, -100.0, 127.9, 1e-7, -125.5, -130.0, -149.0]:
    add(Case("ex2.approx.f32", "f32", ["f32"], [x], [r32(2.0 ** f32(x))], tolerance_ulps=2))
for x, want in [(1.0, 2.0), (-1.0, 0.5), (10.0, 1024.0)]:
    add(Case("ex2.approx.f32", "f32", ["f32"], [x], [want], tolerance_ulps=2))
for x, want in [(-INF, 0.0), (-0.0, 1.0), (0.0, 1.0), (INF, INF), (NAN, NAN), (128.0, INF), (-151.0, 0.0)]:
    add(Case("ex2.approx.f32", "f32", ["f32"], [x], [want]))  # the manual's table, and results beyond the range
for x, want in [(-130.0, 0.0), (-126.0, MIN_NORM32), (MIN_SUB32, 1.0), (2.0, 4.0)]:
    add(Case("ex2.approx.ftz.f32", "f32", ["f32"], [x], [want], tolerance_ulps=2 if want else 0))

# tanh: 2^-11 relative (8192 ulp), subnormals pass through
for x in [0.5, -0.5, 1.0, 2.0, -3.0, 0.01, 5e-5, 8.0, 20.0]:
    add(Case("tanh.approx.f32", "f32", ["f32"], [x], [r32(math.tanh(f32(x)))], tolerance_ulps=8192))
for x, want in [(INF, 1.0), (-INF, -1.0), (0.0, 0.0), (-0.0, -0.0), (NAN, NAN), (MIN_SUB32, MIN_SUB32),
                (-MIN_SUB32 * 9, -MIN_SUB32 * 9)]:  # for subnormals the 2^-11 bound is below an ulp
    add(Case("tanh.approx.f32", "f32", ["f32"], [x], [want]))
add(Case("tanh.approx.f32", "f32", ["f32"], [100.0], [1.0], tolerance_ulps=8192))

# ---------------------------------------------------------------- min, max
# one NaN → the other operand; both NaN → canonical NaN; -0 < +0; .NaN propagates
MINMAX = [(1.0, 2.0), (-1.0, -2.0), (0.0, -0.0), (-0.0, 0.0), (NAN, 3.0), (3.0, NAN), (NAN, NAN), (INF, -INF),
          (MIN_SUB32, -MIN_SUB32), (PAYLOAD_NAN32, -5.0)]
for x, y in MINMAX:
    xv = bits_f32(x.value) if isinstance(x, type(PAYLOAD_NAN32)) else x
    yv = y
    nx, ny = math.isnan(xv), math.isnan(yv)
    if nx and ny:
        lo = hi = CANON32
    elif nx or ny:
        lo = hi = yv if nx else xv
    else:
        lo = xv if (xv < yv or (xv == yv and neg(xv))) else yv
        hi = xv if (xv > yv or (xv == yv and not neg(xv))) else yv
    note = "exact-nan" if nx and ny else ""
    add(Case("min.f32", ["f32", "f32"], ["f32", "f32"], [x, y], [lo, hi], template="{d0}, {a}, {b}; max.f32 {d1}, {a}, {b}",
             note=note))
    nanres = CANON32 if nx or ny else None
    add(Case("min.NaN.f32", ["f32", "f32"], ["f32", "f32"], [x, y], [nanres or lo, nanres or hi],
             template="{d0}, {a}, {b}; max.NaN.f32 {d1}, {a}, {b}", note="exact-nan" if nanres else ""))
    if not (nx or ny):
        add(Case("min.f64", ["f64", "f64"], ["f64", "f64"], [xv, yv], [lo, hi],
                 template="{d0}, {a}, {b}; max.f64 {d1}, {a}, {b}"))
add(Case("min.f64", ["f64", "f64"], ["f64", "f64"], [NAN, 2.0], [2.0, 2.0], template="{d0}, {a}, {b}; max.f64 {d1}, {a}, {b}"))
# two NaNs: b quieted (ptxas: DSETP.MIN/MAX selects b, then ors in the quiet bit)
for x, y in [(bits(0x7FF8000000000000), bits(0x7FF8000000000000)), (A64, S64), (B64, A64)]:
    add(Case("min.f64", ["f64", "f64"], ["f64", "f64"], [x, y], [bits(nan64("min", x.value, y.value))] * 2,
             template="{d0}, {a}, {b}; max.f64 {d1}, {a}, {b}", note="exact-nan"))
for x, y, lo, hi in [(MIN_SUB32, 1.0, 0.0, 1.0), (-MIN_SUB32, MIN_SUB32, -0.0, 0.0), (-3.0, MIN_SUB32, -3.0, 0.0)]:
    add(Case("min.ftz.f32", ["f32", "f32"], ["f32", "f32"], [x, y], [lo, hi],
             template="{d0}, {a}, {b}; max.ftz.f32 {d1}, {a}, {b}"))
# .xorsign.abs: the smaller/larger magnitude, with the XOR of the signs; NaN ignores both
for x, y, lo, hi in [(-2.0, 3.0, -2.0, -3.0), (-2.0, -3.0, 2.0, 3.0), (5.0, 0.5, 0.5, 5.0), (-0.0, 1.0, -0.0, -1.0),
                     (NAN, -4.0, -4.0, -4.0)]:  # the sign XOR uses both inputs, NaN's too
    add(Case("min.xorsign.abs.f32", ["f32", "f32"], ["f32", "f32"], [x, y], [lo, hi],
             template="{d0}, {a}, {b}; max.xorsign.abs.f32 {d1}, {a}, {b}", note="gpu" if math.isnan(x) else ""))

# ---------------------------------------------------------------- abs, neg, copysign, testp
for x in [1.5, -1.5, 0.0, -0.0, INF, -INF, MIN_SUB32, -MAX32]:
    add(Case("abs.f32", ["f32", "f32"], ["f32"], [x], [abs(x), -x], template="{d0}, {a}; neg.f32 {d1}, {a}"))
    add(Case("abs.f64", ["f64", "f64"], ["f64"], [x], [abs(x), -x], template="{d0}, {a}; neg.f64 {d1}, {a}"))
for x, a, n in [(MIN_SUB32, 0.0, -0.0), (-MIN_SUB32, 0.0, 0.0), (-2.0, 2.0, 2.0)]:
    add(Case("abs.ftz.f32", ["f32", "f32"], ["f32"], [x], [a, n], template="{d0}, {a}; neg.ftz.f32 {d1}, {a}"))
# NaN: abs/neg are additions with operand modifiers (FADD -RZ, |a|; DADD -RZ, -a): f32 gives the
# canonical NaN, f64 the operand's NaN quieted, its sign untouched
add(Case("abs.f32", ["f32", "f32"], ["f32"], [bits(0xFFC00001)], [CANON32, CANON32], template="{d0}, {a}; neg.f32 {d1}, {a}",
         note="exact-nan"))
for x in (0xFFF8000000000001, 0xFFF0000000000001):
    add(Case("abs.f64", ["f64", "f64"], ["f64"], [bits(x)], [bits(nan64("abs", x))] * 2, template="{d0}, {a}; neg.f64 {d1}, {a}",
             note="exact-nan"))
for a, b_ in [(-1.0, 2.0), (1.0, -2.0), (-0.0, 0.0), (0.0, -INF), (-3.0, NAN)]:
    want = math.copysign(b_, a) if not math.isnan(b_) else NAN
    add(Case("copysign.f32", "f32", ["f32", "f32"], [a, b_], [want]))
    add(Case("copysign.f64", "f64", ["f64", "f64"], [a, b_], [want]))
add(Case("copysign.f32", "f32", ["f32", "f32"], [-1.0, bits(0x7FC00001)], [bits(0xFFC00001)], note="exact-nan"))

TESTP = {"finite": lambda v: math.isfinite(v), "infinite": lambda v: math.isinf(v),
         "number": lambda v: not math.isnan(v), "notanumber": lambda v: math.isnan(v),
         "normal": lambda v: math.isfinite(v) and (v == 0 or abs(v) >= MIN_NORM32),
         "subnormal": lambda v: v != 0 and abs(v) < MIN_NORM32}
for x in [1.0, -0.0, 0.0, INF, -INF, NAN, MIN_SUB32, -MIN_NORM32, MAX32, bits_f32(0x007FFFFF)]:
    ts = list(TESTP)
    tmpl = "{d0}, {a}" + "".join(f"; testp.{op}.f32 {{d{i + 1}}}, {{a}}" for i, op in enumerate(ts[1:]))
    add(Case("testp.finite.f32", ["pred"] * 6, ["f32"], [x], [TESTP[op](x) for op in ts], template=tmpl))
for x, sub in [(1.0, False), (MIN_SUB64, True), (MIN_SUB32, False), (NAN, False), (INF, False), (-0.0, False)]:
    add(Case("testp.subnormal.f64", ["pred", "pred", "pred"], ["f64"], [x],
             [sub, math.isfinite(x) and not sub, not math.isnan(x)],
             template="{d0}, {a}; testp.normal.f64 {d1}, {a}; testp.number.f64 {d2}, {a}"))

# every kernel once more with its operands in uniform registers: the scalar code path
CASES += uniform_variants(CASES, ptxas_placement)
