"""Video instructions (PTX ISA §9.7.16), default selectors only: vop2/vop4 SIMD forms and the
32-bit scalar forms. Expected values follow the manual's pseudo-code, and ptxas's sm_90
expansion (which the H200 confirms) where the manual leaves a gap or the GPU departs from it:
the scalar forms' `.sat` to u32 and the precision of their secondary min/max, see `scalar`.
All are note="gpu" since ptxas emulates these on current GPUs and the recording is the oracle.
"""

from ptxgen import Case

M32 = 0xFFFFFFFF
CASES: list[Case] = []
add = CASES.append

OPS = ("add", "sub", "avrg", "absdiff", "min", "max")


def elems(x: int, w: int, sgn: bool) -> list[int]:
    out = [(x >> (w * i)) & ((1 << w) - 1) for i in range(32 // w)]
    return [v - (1 << w) if sgn and v >> (w - 1) else v for v in out]


def prim(op: str, a: int, b: int) -> int:
    if op == "avrg":
        return (a + b + 1) >> 1 if a + b >= 0 else (a + b) >> 1
    return {"add": a + b, "sub": a - b, "absdiff": abs(a - b), "min": min(a, b), "max": max(a, b)}[op]


def simd(op: str, n: int, ts: str, a: int, b: int, c: int, sat: bool, acc: bool) -> int:
    w = 32 // n
    sd, sa, sb = (t == "s32" for t in ts.split("."))
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if sd else (0, (1 << w) - 1)
    t = [prim(op, x, y) for x, y in zip(elems(a, w, sa), elems(b, w, sb), strict=True)]
    if sat:
        t = [max(lo, min(hi, v)) for v in t]
    if acc:
        return (c + sum(t)) & M32
    return sum((v & ((1 << w) - 1)) << (w * i) for i, v in enumerate(t))


def scalar(op: str, ts: str, a: int, b: int, c: int, sat: bool, op2: str | None) -> int:
    """The manual's pseudo-code, with ptxas's sm_90 expansion (and the H200) where the manual
    leaves a gap or the GPU departs from it.

    `.sat` clamps to the s32 range, but for a u32 destination it only makes negative results
    0 (no upper clamp: vadd.u32.u32.u32.sat 0xffffffff, 1 is 0). The secondary min/max sees
    vabsdiff/vmin/vmax results at full precision (after `.sat`), but vadd/vsub results as
    their 32-bit value sign-extended; it compares that as a 64-bit value with c extended by
    the destination type, signed or unsigned as the destination type is.
    """
    sd, sa, sb = (t == "s32" for t in ts.split("."))
    x = prim(op, elems(a, 32, sa)[0], elems(b, 32, sb)[0])
    if sat:
        x = max(-(2**31), min(2**31 - 1, x)) if sd else max(0, x)
    if op in ("add", "sub"):
        x = elems(x & M32, 32, True)[0]
    if op2 is not None:
        y = elems(c, 32, sd)[0]
        if op2 == "add":
            x = x + y
        else:
            key = (lambda v: v) if sd else (lambda v: v % 2**64)  # noqa: E731
            x = (min if op2 == "min" else max)(x, y, key=key)
    return x & M32


ROWS = [(0x01FF807F, 0x02017F80, 0x10203040), (0x80808080, 0x7F7F7F7F, 0), (0xFFFFFFFF, 0x00000001, 0xFFFFFFFF),
        (0x12345678, 0x9ABCDEF0, 0x7FFFFFFF), (0x7FFF8000, 0x80007FFF, 0x55AA55AA)]

# SIMD: one kernel per (width, types, modifier) runs all six operations
for n in (4, 2):
    for ts, mod in (("u32.u32.u32", ""), ("s32.s32.s32", ".sat"), ("u32.u32.u32", ".add"), ("s32.s32.u32", ".add"),
                    ("u32.s32.s32", ".sat")):
        sat, acc = mod == ".sat", mod == ".add"
        first = f"v{OPS[0]}{n}.{ts}{mod}"
        tmpl = "{d0}, {a}, {b}, {c}; " + "; ".join(
            f"v{op}{n}.{ts}{mod} {{d{i}}}, {{a}}, {{b}}, {{c}}" for i, op in enumerate(OPS) if i)
        for a, b, c in ROWS:
            add(Case(first, ["b32"] * 6, ["b32", "b32", "b32"], [a, b, c],
                     [simd(op, n, ts, a, b, c, sat, acc) for op in OPS], template=tmpl, note="gpu"))

# scalar: vadd, vsub, vabsdiff, vmin, vmax
SOPS = ("add", "sub", "absdiff", "min", "max")
# the last rows overflow 32 bits: u32 + u32 past 0xffffffff, s32 - u32 below -2**31, |s32 - u32| past 2**32
for ts, mod in (("u32.u32.u32", ""), ("s32.s32.s32", ".sat"), ("s32.u32.s32", ".add"), ("s32.u32.s32", ".max"),
                ("u32.s32.u32", ".sat.min"), ("u32.u32.u32", ".sat"), ("u32.u32.u32", ".sat.max"),
                ("u32.u32.s32", ".min"), ("u32.s32.s32", ".max"), ("s32.s32.u32", ".sat.min"), ("u32.s32.u32", ".sat.max")):
    sat = ".sat" in mod
    op2 = next((o for o in ("add", "min", "max") if f".{o}" in mod), None)
    args = "{a}, {b}, {c}" if op2 else "{a}, {b}"
    tmpl = f"{{d0}}, {args}; " + "; ".join(f"v{op}.{ts}{mod} {{d{i}}}, {args}" for i, op in enumerate(SOPS) if i)
    for a, b, c in ROWS + [(0x7FFFFFFF, 0x80000000, 1), (0, M32, 0x80000000),
                           (M32, M32, 0x90000000), (0x80000000, M32, 0x7FFFFFFF), (0x90000000, 0x80000001, 0x80000000),
                           (0x80000000, M32, 0x80000000)]:
        srcs = ["b32", "b32", "b32"] if op2 else ["b32", "b32"]
        add(Case(f"v{SOPS[0]}.{ts}{mod}", ["b32"] * 5, srcs, [a, b, c][:len(srcs)],
                 [scalar(op, ts, a, b, c, sat, op2) for op in SOPS], template=tmpl, note="gpu"))

# all-immediate operands: uniform (scalar) code
# (the SIMD forms take registers only: {d1}..{d3} receive the constants first)
add(Case("mov.b32", ["b32"] * 4, [], [],
         [simd("absdiff", 4, "u32.u32.u32", 0x01FF807F, 0x02017F80, 7, False, True), 0x01FF807F, 0x02017F80, 7],
         template="{d1}, 0x01FF807F; mov.b32 {d2}, 0x02017F80; mov.b32 {d3}, 7; "
                  "vabsdiff4.u32.u32.u32.add {d0}, {d1}, {d2}, {d3}",
         note="gpu"))
add(Case("vmax.s32.s32.s32.sat.add", "b32", [], [], [scalar("max", "s32.s32.s32", 5, -3, 10, True, "add")],
         template="{d}, 5, -3, 10", note="gpu"))
