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
