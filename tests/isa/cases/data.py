"""mov: registers, immediates, packing and unpacking (PTX ISA §9.7.9.1-9.7.9.2).

cvta and isspacep, which need memory, are in cases/memory.py.
"""

from ptxgen import Case, bits

CASES: list[Case] = []

# unpack a wide register into parts (element 0 = least significant), with sinks
for x in (0x0123_4567_89AB_CDEF, 0xFFFF_FFFF_0000_0001):
    CASES.append(Case("mov.b64", ["b32", "b32"], ["b64"], [x], [x & 0xFFFFFFFF, x >> 32], template="{{{d0}, {d1}}}, {a}"))
    CASES.append(Case("mov.b64", "b32", ["b64"], [x], [x >> 32], template="{{_, {d0}}}, {a}"))
    CASES.append(Case("mov.b64", ["b16"] * 4, ["b64"], [x], [(x >> (16 * i)) & 0xFFFF for i in range(4)],
                      template="{{{d0}, {d1}, {d2}, {d3}}}, {a}"))
for x in (0xDEAD_BEEF, 0x8000_7FFF):
    CASES.append(Case("mov.b32", ["b16", "b16"], ["b32"], [x], [x & 0xFFFF, x >> 16], template="{{{d0}, {d1}}}, {a}"))
# pack parts into a wide register
CASES.append(Case("mov.b64", "b64", ["b32", "b32"], [0x89AB_CDEF, 0x0123_4567], [0x0123_4567_89AB_CDEF],
                  template="{d0}, {{{a}, {b}}}"))
CASES.append(Case("mov.b32", "b32", ["b16", "b16"], [0xBEEF, 0xDEAD], [0xDEAD_BEEF], template="{d0}, {{{a}, {b}}}"))
CASES.append(Case("mov.b64", "b64", ["b16", "b16", "b16", "b16"], [1, 2, 3, 0xFFFF], [0xFFFF_0003_0002_0001],
                  template="{d0}, {{{a}, {b}, {c}, {d}}}"))

# immediates: exact float bit patterns, negative integers, predicates
for imm, t, want in [
    ("0f7FC00001", "f32", bits(0x7FC00001)), ("0f80000000", "f32", bits(0x80000000)),
    ("0f00000001", "f32", bits(1)), ("0fFF800000", "f32", float("-inf")),
    ("0d7FF0000000000001", "f64", bits(0x7FF0000000000001)), ("0d8000000000000000", "f64", bits(1 << 63)),
    ("-1", "s32", -1), ("-1", "u64", 2**64 - 1), ("0x80000000", "b32", 0x80000000), ("1", "pred", 1), ("0", "pred", 0),
]:
    CASES.append(Case(f"mov.{t}", t, ["u32"], [0], [want], template=f"{{d0}}, {imm}"))
# register to register of every width
for t, x in [("b16", 0xABCD), ("u32", 0xFFFF_FFFF), ("f64", -2.5), ("pred", 1)]:
    CASES.append(Case(f"mov.{t}", t, [t], [x], [x]))

# lane-dependent special registers: rows are threads of a 64-thread block
for i in range(64):
    lane = i % 32
    CASES.append(Case("mov.u32", "u32", ["u32"], [i], [lane], template="{d0}, %laneid"))
    CASES.append(Case("mov.u32", "u32", ["u32"], [i], [(1 << lane) - 1], template="{d0}, %lanemask_lt"))
    CASES.append(Case("mov.u32", "u32", ["u32"], [i], [(2 << lane) - 1 & 0xFFFFFFFF], template="{d0}, %lanemask_le"))
    CASES.append(Case("mov.u32", "u32", ["u32"], [i], [1 << lane], template="{d0}, %lanemask_eq"))
    CASES.append(Case("mov.u32", "u32", ["u32"], [i], [~((2 << lane) - 1) & 0xFFFFFFFF], template="{d0}, %lanemask_gt"))
    CASES.append(Case("mov.u32", "u32", ["u32"], [i], [~((1 << lane) - 1) & 0xFFFFFFFF], template="{d0}, %lanemask_ge"))
