"""Logic and shift instructions (PTX ISA §9.7.8)."""

from ptxgen import Case

M32 = 0xFFFFFFFF
CASES: list[Case] = []

for a, b in [(0x0F0F0F0F, 0x00FF00FF), (M32, 0), (0x80000000, 0x7FFFFFFF), (0x12345678, 0x9ABCDEF0)]:
    CASES.append(Case("and.b32", "b32", ["b32", "b32"], [a, b], [a & b]))
    CASES.append(Case("or.b32", "b32", ["b32", "b32"], [a, b], [a | b]))
    CASES.append(Case("xor.b32", "b32", ["b32", "b32"], [a, b], [a ^ b]))
    CASES.append(Case("not.b32", "b32", ["b32"], [a], [~a & M32]))

for a in [1, 0x80000001, 0xDEADBEEF, M32]:
    for s in [0, 1, 5, 31, 32, 33, 255, 0xFFFFFFFF]:
        CASES.append(Case("shl.b32", "b32", ["b32", "u32"], [a, s], [(a << s) & M32 if s < 32 else 0]))
        CASES.append(Case("shr.u32", "u32", ["u32", "u32"], [a, s], [a >> s if s < 32 else 0]))
        sa = a - (1 << 32) if a >> 31 else a
        CASES.append(Case("shr.s32", "s32", ["s32", "u32"], [a, s], [sa >> min(s, 31)]))

for a in [1, 0x8000000000000001, 0xFFFFFFFFFFFFFFFF]:
    for s in [0, 1, 33, 63, 64, 65, 0xFFFFFFFF]:
        CASES.append(Case("shl.b64", "b64", ["b64", "u32"], [a, s], [(a << s) & (2**64 - 1) if s < 64 else 0]))
        CASES.append(Case("shr.u64", "u64", ["u64", "u32"], [a, s], [a >> s if s < 64 else 0]))
        sa = a - (1 << 64) if a >> 63 else a
        CASES.append(Case("shr.s64", "s64", ["s64", "u32"], [a, s], [sa >> min(s, 63)]))

for a in [0, 1, 0xFFFF]:
    CASES.append(Case("cnot.b16", "b16", ["b16"], [a], [1 if a == 0 else 0]))

# 16- and 64-bit logic, all three operations in one kernel
for n, vals in ((16, [0, 0xFFFF, 0x8001, 0x1234]), (64, [0, 2**64 - 1, 1 << 63 | 1, 0x0123456789ABCDEF])):
    m = (1 << n) - 1
    for a in vals:
        for b in vals:
            CASES.append(Case(f"and.b{n}", [f"b{n}"] * 4, [f"b{n}", f"b{n}"], [a, b], [a & b, a | b, a ^ b, ~a & m],
                              template=f"{{d0}}, {{a}}, {{b}}; or.b{n} {{d1}}, {{a}}, {{b}}; "
                                       f"xor.b{n} {{d2}}, {{a}}, {{b}}; not.b{n} {{d3}}, {{a}}"))

# predicates
for p in (0, 1):
    for q in (0, 1):
        CASES.append(Case("and.pred", ["pred"] * 4, ["pred", "pred"], [p, q], [p & q, p | q, p ^ q, 1 - p],
                          template="{d0}, {a}, {b}; or.pred {d1}, {a}, {b}; xor.pred {d2}, {a}, {b}; not.pred {d3}, {a}"))

for a in [0, 1, 2, M32]:
    CASES.append(Case("cnot.b32", "b32", ["b32"], [a], [1 if a == 0 else 0]))
for a in [0, 1, 2**64 - 1, 1 << 63]:
    CASES.append(Case("cnot.b64", "b64", ["b64"], [a], [1 if a == 0 else 0]))

# 16-bit shifts (the amount is still a u32)
for a in [1, 0x8001, 0xFFFF]:
    for sh in [0, 1, 15, 16, 17, 0xFFFFFFFF]:
        sa = a - (1 << 16) if a >> 15 else a
        CASES.append(Case("shl.b16", ["b16", "u16", "s16"], ["b16", "u32"], [a, sh],
                          [(a << sh) & 0xFFFF if sh < 16 else 0, a >> sh if sh < 16 else 0, sa >> min(sh, 15)],
                          template="{d0}, {a}, {b}; shr.u16 {d1}, {a}, {b}; shr.s16 {d2}, {a}, {b}"))

# immediates, and instructions whose operands are all immediates (uniform, not per-lane, code)
CASES.append(Case("and.b32", "b32", ["b32"], [0x12345678], [0x78], template="{d}, {a}, 0xFF"))
CASES.append(Case("shl.b32", "b32", ["b32"], [3], [3 << 7], template="{d}, {a}, 7"))
CASES.append(Case("shr.s32", "s32", ["s32"], [-256], [-2], template="{d}, {a}, 7"))
CASES.append(Case("shr.u64", "u64", [], [], [1], template="{d}, -1, 63"))
CASES.append(Case("xor.b32", "b32", [], [], [0xFF00FF00 ^ 0x0FF00FF0], template="{d}, 0xFF00FF00, 0x0FF00FF0"))
