"""atom and red on one thread's own word (PTX ISA §9.7.13.5-6): the operation's table.

Each row stores the initial value `m` in a word of its own, applies the atomic with
operand(s) b (and c for cas), and reads back what `atom` returned and what memory holds.
The word is the row's input slot in global memory (%addr0, free once the inputs are
loaded), a slot of a function-scope shared array, or either one through a generic address.
Interacting threads (counters, CAS loops, histograms) are in test_atomics.py.
"""

from ptxgen import Case, bits

M32 = 0xFFFFFFFF
M64 = 2**64 - 1
SLOTS = ".shared .align 8 .b8 slots[2048];"

# address of the row's word in each state space, into %addr5; `ss` is the space qualifier
_ADDR = {
    "global": ("", "global"),
    "shared": ("cvt.u64.u32 %addr4, %tid.x; shl.b64 %addr4, %addr4, 3; mov.u64 %addr5, slots; "
               "add.u64 %addr5, %addr5, %addr4;", "shared"),
    "generic_shared": ("cvt.u64.u32 %addr4, %tid.x; shl.b64 %addr4, %addr4, 3; mov.u64 %addr5, slots; "
                       "add.u64 %addr5, %addr5, %addr4; cvta.shared.u64 %addr5, %addr5;", ""),
    "generic_global": ("", ""),
}


def atom_case(where: str, op: str, t: str, m, b, c=None, expect=None, note: str = "", red: bool = False,
              target: str = "sm_80") -> Case:
    """One atomic on the row's own word; dsts: [old (atom only), new memory value]."""
    setup, ss = _ADDR[where]
    if where.endswith("global") or where == "global":
        setup = "mov.u64 %addr5, %addr0;"
    sp = f".{ss}" if ss else ""
    n = 64 if t.endswith("64") else 16 if t.endswith("16") else 32
    mem_t = f"b{n}"
    ops = "%s1, %s2" if op == "cas" else "%s1"
    if red:
        body = f"red{sp}.{op}.{t} [%addr5], {ops}; ld{sp}.{mem_t} %d0, [%addr5];"
        dsts = [t]
    else:
        body = f"atom{sp}.{op}.{t} %d0, [%addr5], {ops}; ld{sp}.{mem_t} %d1, [%addr5];"
        dsts = [t, t]
    instr = f"{setup} st{sp}.{mem_t} [%addr5], %s0; {body}"
    srcs = [t, t] + ([t] if op == "cas" else [])
    inputs = [m, b] + ([c] if op == "cas" else [])
    return Case(instr, dsts, srcs, inputs, expect, note=note, extra_decls=SLOTS, target=target)


def _s32(x: int) -> int:
    x &= M32
    return x - (1 << 32) if x >> 31 else x


def inc(m: int, b: int) -> int:
    return 0 if m >= b else m + 1


def dec(m: int, b: int) -> int:
    return b if m == 0 or m > b else m - 1


CASES: list[Case] = []
WHERE = ("global", "shared", "generic_shared", "generic_global")

for where in WHERE:
    # inc/dec: the wrap rules at and around the limit, limit 0, limit all ones
    for m, b in [(0, 5), (4, 5), (5, 5), (6, 5), (100, 5), (0, 0), (7, 0), (M32, M32), (M32 - 1, M32),
                 (0, M32), (3, 1)]:
        CASES.append(atom_case(where, "inc", "u32", m, b, expect=[m, inc(m, b)]))
        CASES.append(atom_case(where, "dec", "u32", m, b, expect=[m, dec(m, b)]))
    for m, b in [(5, 9), (9, 5), (-3, 2), (2, -3), (0x80000000, 0x7FFFFFFF), (-1, 0)]:
        CASES.append(atom_case(where, "min", "s32", m, b, expect=[m, min(m, b, key=_s32)]))
        CASES.append(atom_case(where, "max", "s32", m, b, expect=[m, max(m, b, key=_s32)]))
        mu, bu = m & M32, b & M32
        CASES.append(atom_case(where, "min", "u32", mu, bu, expect=[mu, min(mu, bu)]))
        CASES.append(atom_case(where, "max", "u32", mu, bu, expect=[mu, max(mu, bu)]))
    for m, b in [(-(2**40), 3), (2**62, -(2**62)), (M64, 1)]:
        sm = m if m < 2**63 else m - 2**64
        CASES.append(atom_case(where, "min", "s64", m, b, expect=[m, min(sm, b)]))
        CASES.append(atom_case(where, "max", "u64", m & M64, b & M64, expect=[m, max(m & M64, b & M64)]))
    for m, b in [(0xF0F0F0F0, 0x0FF00FF0), (M32, 0), (0x12345678, 0x87654321)]:
        CASES.append(atom_case(where, "and", "b32", m, b, expect=[m, m & b]))
        CASES.append(atom_case(where, "or", "b32", m, b, expect=[m, m | b]))
        CASES.append(atom_case(where, "xor", "b32", m, b, expect=[m, m ^ b]))
    m64, b64 = 0xF0F0_0000_FFFF_1234, 0x0FF0_FFFF_00FF_4321
    CASES.append(atom_case(where, "and", "b64", m64, b64, expect=[m64, m64 & b64]))
    CASES.append(atom_case(where, "or", "b64", m64, b64, expect=[m64, m64 | b64]))
    CASES.append(atom_case(where, "xor", "b64", m64, b64, expect=[m64, m64 ^ b64]))
    for m, b in [(0xFFFFFFF0, 0x20), (7, M32)]:
        CASES.append(atom_case(where, "add", "u32", m, b, expect=[m, (m + b) & M32]))
    CASES.append(atom_case(where, "add", "u64", 0xFFFF_FFFF_FFFF_FFF0, 0x30, expect=[0xFFFF_FFFF_FFFF_FFF0, 0x20]))
    CASES.append(atom_case(where, "add", "u64", 0xFFFF_FFFF, 1, expect=[0xFFFF_FFFF, 2**32]))
    CASES.append(atom_case(where, "add", "f32", 1.5, 2.25, expect=[1.5, 3.75]))
    CASES.append(atom_case(where, "add", "f32", 1e30, -1e30, expect=[1e30, 0.0]))
    CASES.append(atom_case(where, "add", "f64", 0.1, 0.2, expect=[0.1, 0.1 + 0.2]))
    CASES.append(atom_case(where, "add", "f64", 2.0**60, 1.0, expect=[2.0**60, 2.0**60]))
    for m, b in [(5, 99), (M32, 0)]:
        CASES.append(atom_case(where, "exch", "b32", m, b, expect=[m, b]))
    CASES.append(atom_case(where, "exch", "b64", 2**63 + 5, 77, expect=[2**63 + 5, 77]))
    for m, b, c in [(5, 5, 9), (5, 6, 9), (M32, M32, 0)]:
        CASES.append(atom_case(where, "cas", "b32", m, b, c, expect=[m, c if m == b else m]))
    for m, b, c in [(2**40 + 1, 2**40 + 1, 3), (2**40 + 1, 1, 3)]:
        CASES.append(atom_case(where, "cas", "b64", m, b, c, expect=[m, c if m == b else m]))
    for m, b, c in [(0xBEEF, 0xBEEF, 0x1234), (0xBEEF, 0xBEEE, 0x1234)]:
        CASES.append(atom_case(where, "cas", "b16", m, b, c, expect=[m, c if m == b else m]))
    # red: the same operations without a result
    CASES.append(atom_case(where, "add", "u32", 40, 2, expect=[42], red=True))
    CASES.append(atom_case(where, "inc", "u32", 5, 5, expect=[0], red=True))
    CASES.append(atom_case(where, "dec", "u32", 0, 7, expect=[7], red=True))
    CASES.append(atom_case(where, "max", "s32", -5, -7, expect=[_s32(-5) & M32], red=True))
    CASES.append(atom_case(where, "xor", "b64", m64, b64, expect=[m64 ^ b64], red=True))
    CASES.append(atom_case(where, "add", "f64", 1.25, 2.5, expect=[3.75], red=True))

# f16/bf16 adds (.noftz: subnormals kept), rounded to nearest even per half
F16 = [(1.0, 2.0 ** -11, 1.0), (1.0, 3 * 2.0 ** -11, 1.0 + 2.0 ** -9), (2.0 ** -24, 2.0 ** -24, 2.0 ** -23),
       (65504.0, 32.0, float("inf")), (-0.0, 0.0, 0.0)]
for where in ("global", "generic_shared"):
    for a, b, want in F16:
        CASES.append(atom_case(where, "add.noftz", "f16", a, b, expect=[a, want]))


def _pack(lo: int, hi: int) -> int:
    return (hi << 16) | lo


for where in ("global", "shared"):
    # f16x2 halves: 1.0 + 2^-11 (tie: stays 1.0) | 2048 + 1 (tie to even: 2048)
    CASES.append(atom_case(where, "add.noftz", "f16x2", _pack(0x3C00, 0x6800), _pack(0x1000, 0x3C00),
                           expect=[_pack(0x3C00, 0x6800), _pack(0x3C00, 0x6800)]))
    # bf16x2 halves: 1.0 + 1.0 = 2.0 | 1.0 + 2^-8 (tie: stays 1.0) ; 1.0 + 3*2^-9 rounds up
    CASES.append(atom_case(where, "add.noftz", "bf16x2", _pack(0x3F80, 0x3F80), _pack(0x3F80, 0x3B80),
                           expect=[_pack(0x3F80, 0x3F80), _pack(0x4000, 0x3F80)], target="sm_90"))
    CASES.append(atom_case(where, "add.noftz", "bf16", bits(0x3F80), bits(0x3BC0), expect=[bits(0x3F80), bits(0x3F81)],
                           target="sm_90"))

# f32 add of subnormals: the ISA says global atom.add.f32 flushes inputs and results, shared does not
SUB = 2.0 ** -140
for where in WHERE:
    flush = where in ("global", "generic_global")
    CASES.append(atom_case(where, "add", "f32", SUB, SUB, expect=[SUB, 0.0 if flush else 2 * SUB], note="gpu"))
    # normal inputs, subnormal result
    CASES.append(atom_case(where, "add", "f32", 1.5 * 2.0 ** -126, -(2.0 ** -126),
                           expect=[1.5 * 2.0 ** -126, 0.0 if flush else 2.0 ** -127], note="gpu"))
