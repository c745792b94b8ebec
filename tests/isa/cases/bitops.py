"""Bit manipulation (PTX ISA §9.7.1, §9.7.8): popc, clz, brev, bfe, bfi, bfind, fns, bmsk,
szext, prmt, lop3, shf. Expected values follow the manual's pseudo-code, written out bit by bit.

note="gpu" marks inputs outside what the manual defines cleanly (bfe/bfi positions or lengths
past the msb or above 255, a zero-length signed bfe, fns with base > 31 or offset -2**31) and
forms that need a newer PTX ISA (the predicate form of lop3: PTX 8.2). Where the H200 recording
differs from the manual, the reference functions below follow the H200 and say so.
"""

from ptxgen import Case

M32 = 0xFFFFFFFF
M64 = 2**64 - 1
CASES: list[Case] = []
add = CASES.append

WORDS = {32: [0, 1, 0x80000000, M32, 0x7FFFFFFF, 0x12345678, 0xF0F0000F, 0x00010000],
         64: [0, 1, 1 << 63, M64, 2**63 - 1, 0x123456789ABCDEF0, 0xF00000000000000F, 1 << 32]}


def bit(x: int, i: int) -> int:
    return (x >> i) & 1


# ---------------------------------------------------------------- popc, clz, brev (all at once)
for n in (32, 64):
    for a in WORDS[n]:
        rev = int(format(a, f"0{n}b")[::-1], 2)
        add(Case(f"popc.b{n}", ["u32", "u32", f"b{n}"], [f"b{n}"], [a], [bin(a).count("1"), n - a.bit_length(), rev],
                 template=f"{{d0}}, {{a}}; clz.b{n} {{d1}}, {{a}}; brev.b{n} {{d2}}, {{a}}"))
add(Case("popc.b32", "u32", [], [], [32], template="{d}, -1"))  # uniform operands

# ---------------------------------------------------------------- bfind


def bfind(a: int, t: str) -> tuple[int, int]:
    n = int(t[1:])
    msb = n - 1
    if t[0] == "s" and bit(a, msb):
        a = ~a & ((1 << n) - 1)
    d = M32
    for i in range(msb, -1, -1):
        if bit(a, i):
            d = i
            break
    return d, (msb - d if d != M32 else d)


for t in ("u32", "s32", "u64", "s64"):
    n = int(t[1:])
    for a in WORDS[n] + [2, (1 << n) - 2, 1 << (n - 2)]:
        add(Case(f"bfind.{t}", ["u32", "u32"], [t], [a], list(bfind(a, t)),
                 template=f"{{d0}}, {{a}}; bfind.shiftamt.{t} {{d1}}, {{a}}"))

# ---------------------------------------------------------------- bfe, bfi


def field(pos: int, ln: int, n: int) -> tuple[int, int]:
    """bfe/bfi position and length as the hardware takes them.

    The manual keeps the low byte of each (b & 0xff); the H200 does so for 32-bit types, but
    for 64-bit ones it shifts by the whole u32 amount, which saturates: above 255 acts as 255.
    """
    if n == 64:
        return min(pos, 0xFF), min(ln, 0xFF)
    return pos & 0xFF, ln & 0xFF


def bfe(a: int, pos: int, ln: int, t: str) -> int:
    n = int(t[1:])
    msb = n - 1
    pos, ln = field(pos, ln, n)
    sbit = 0 if t[0] == "u" or ln == 0 else bit(a, min(pos + ln - 1, msb))
    d = 0
    for i in range(n):
        d |= (bit(a, pos + i) if i < ln and pos + i <= msb else sbit) << i
    return d


def bfi(a: int, b: int, pos: int, ln: int, n: int) -> int:
    pos, ln = field(pos, ln, n)
    f = b
    i = 0
    while i < ln and pos + i <= n - 1:
        f = (f & ~(1 << (pos + i))) | (bit(a, i) << (pos + i))
        i += 1
    return f


def odd(pos: int, ln: int, n: int) -> bool:
    """Inputs whose meaning rests on the pseudo-code's corner rules, for the GPU to confirm."""
    return (pos & 0xFF) >= n or (ln & 0xFF) >= n or (pos & 0xFF) + (ln & 0xFF) > n or pos > 0xFF or ln > 0xFF


for n in (32, 64):
    spots = [(0, 8), (4, 8), (8, 0), (0, n), (n - 8, 8), (n - 4, 8), (n - 1, 1), (3, n - 3),
             (n, 4), (n + 1, 1), (255, 1), (0, 255), (256 + 4, 8), (4, 256 + 8), (n - 2, 200),
             (M32, 8), (4, M32), (0x8000_0004, 8), (0x1_0004, 0x1_0008), (0x100, 0x100)]
    for t in (f"u{n}", f"s{n}"):
        for a in (0x8765_4321_F0E1_D2C3 & ((1 << n) - 1), (1 << n) - 1, 0x7F00 | (1 << (n - 1))):
            for pos, ln in spots:
                note = "gpu" if odd(pos, ln, n) or (t[0] == "s" and (ln & 0xFF) == 0) else ""
                add(Case(f"bfe.{t}", t, [t, "u32", "u32"], [a, pos, ln], [bfe(a, pos, ln, t)], note=note))
    for a, b in ((0xFFFFFFFF_FFFFFFFF & ((1 << n) - 1), 0), (0x0123_4567_89AB_CDEF & ((1 << n) - 1), 0x5555_5555_5555_5555 & ((1 << n) - 1))):
        for pos, ln in spots:
            note = "gpu" if odd(pos, ln, n) else ""
            add(Case(f"bfi.b{n}", f"b{n}", [f"b{n}", f"b{n}", "u32", "u32"], [a, b, pos, ln], [bfi(a, b, pos, ln, n)],
                     template="{d0}, {a}, {b}, {c}, {d}", note=note))  # {d} is the 4th source
add(Case("bfe.u32", "u32", ["u32"], [0xABCD1234], [0xD1], template="{d}, {a}, 12, 8"))
add(Case("bfi.b32", "b32", ["b32"], [0xFFFF0000], [0xFFFF0AB0], template="{d}, 0xAB, {a}, 4, 8"))
add(Case("bfe.s32", "s32", [], [], [bfe(0x00000F00, 8, 4, "s32")], template="{d}, 0xF00, 8, 4"))  # uniform

# ---------------------------------------------------------------- fns


def fns(mask: int, base: int, offset: int) -> int:
    offset &= M32
    offset = offset - (1 << 32) if offset >> 31 else offset
    if offset == -(2**31):
        # The H200 answers 0 for any mask and base: ptxas's expansion negates the offset (still
        # -2**31), its signed "fewer set bits than asked" test fails, and the search of the
        # reversed mask runs to its top bit, which maps back to position 0.
        return 0
    if base > 31:
        return M32  # undefined in PTX; the manual's loop finds nothing
    if offset == 0:
        return base if bit(mask, base) else M32
    pos, count, inc = base, abs(offset) - 1, 1 if offset > 0 else -1
    while 0 <= pos < 32:
        if bit(mask, pos):
            if count == 0:
                return pos
            count -= 1
        pos += inc
    return M32


for mask in (0xAAAAAAAA, 0, M32, 0x80000001, 0x00F000F0):
    for base in (0, 1, 2, 3, 16, 31, 32, 100):
        for offset in (0, 1, -1, 2, -2, 5, -5, 16, -16, 32, -32, 33, 0x7FFFFFFF, -0x80000000):
            add(Case("fns.b32", "b32", ["b32", "u32", "s32"], [mask, base, offset], [fns(mask, base, offset)],
                     note="gpu" if base > 31 or offset == -0x80000000 else ""))

# ---------------------------------------------------------------- bmsk, szext


def bmsk(a: int, b: int, clamp: bool) -> int:
    a1, b1 = a & 31, b & 31
    mask0 = (M32 << a1) & M32
    total = a1 + b1
    mask1 = (M32 << total) & M32
    over = total >= 32
    if clamp:
        if a >= 32:
            over, mask0 = True, 0
        if b >= 32:
            over = True
    if over:
        mask1 = 0
    elif b1 == 0:
        mask1 = M32
    return mask0 & ~mask1 & M32


def szext(a: int, b: int, clamp: bool, sgn: bool) -> int:
    b1 = b & 31
    too_large = b >= 32 and clamp
    mask = 0 if too_large else (M32 << b1) & M32
    sign = False if (b1 == 0 or too_large or not sgn) else bool(bit(a, (b1 - 1) & 31))
    return (a & ~mask & M32) | (mask if sign else 0)


AMOUNTS = [0, 1, 4, 8, 16, 24, 31, 32, 33, 40, 64, 0xFFFFFFFF]
for mode in ("clamp", "wrap"):
    for a in AMOUNTS:
        for b in AMOUNTS:
            add(Case(f"bmsk.{mode}.b32", "b32", ["u32", "u32"], [a, b], [bmsk(a, b, mode == "clamp")]))
    for a in (0x0000_00F0, 0x8000_0080, M32, 0x1234_5678):
        for b in AMOUNTS:
            add(Case(f"szext.{mode}.s32", ["b32", "b32"], ["b32", "u32"], [a, b],
                     [szext(a, b, mode == "clamp", True), szext(a, b, mode == "clamp", False)],
                     template=f"{{d0}}, {{a}}, {{b}}; szext.{mode}.u32 {{d1}}, {{a}}, {{b}}"))
add(Case("bmsk.wrap.b32", "b32", [], [], [0x6], template="{d}, 1, 2"))  # the manual's example
add(Case("szext.wrap.u32", "b32", [], [], [0], template="{d}, 0xffffffff, 0"))  # the manual's example

# ---------------------------------------------------------------- prmt

PRMT_MODES = {
    "f4e": (0x3210, 0x4321, 0x5432, 0x6543), "b4e": (0x5670, 0x6701, 0x7012, 0x0123),
    "rc8": (0x0000, 0x1111, 0x2222, 0x3333), "ecl": (0x3210, 0x3211, 0x3222, 0x3333),
    "ecr": (0x0000, 0x1110, 0x2210, 0x3210), "rc16": (0x1010, 0x3232, 0x1010, 0x3232),
}


def prmt(a: int, b: int, c: int, mode: str | None) -> int:
    src = (b << 32) | a
    ctl = PRMT_MODES[mode][c & 3] if mode else c
    out = 0
    for k in range(4):
        s = (ctl >> (4 * k)) & 0xF
        byte = (src >> (8 * (s & 7))) & 0xFF
        if mode is None and s & 8:
            byte = 0xFF if byte & 0x80 else 0
        out |= byte << (8 * k)
    return out


A, B = 0x8833_4411, 0x77E6_5544
for c in (0x3210, 0x7654, 0x0123, 0x5410, 0x1032, 0x4444, 0x8888, 0xBA98, 0xFEDC, 0x9180, 0xFFFF_3210, 0x0000, 0x7777):
    add(Case("prmt.b32", "b32", ["b32", "b32", "b32"], [A, B, c], [prmt(A, B, c, None)]))
for mode in PRMT_MODES:
    for c in (0, 1, 2, 3, 0xFFFF_FFFC, 0x7):
        add(Case(f"prmt.b32.{mode}", "b32", ["b32", "b32", "b32"], [A, B, c], [prmt(A, B, c, mode)]))
add(Case("prmt.b32", "b32", ["b32", "b32"], [0x11223344, 0x55667788], [prmt(0x11223344, 0x55667788, 0x5410, None)],
         template="{d}, {a}, {b}, 0x5410"))

# ---------------------------------------------------------------- lop3


def lop3(a: int, b: int, c: int, lut: int) -> int:
    return sum(bit(lut, bit(a, i) << 2 | bit(b, i) << 1 | bit(c, i)) << i for i in range(32))


LUTS = ((0x00, 0xFF, 0x80, 0xFE, 0x96, 0xE8), (0xF8, 0x1A, 0xCA, 0x3C, 0x40, 0x01))  # 6 results a kernel
for luts in LUTS:
    tmpl = f"{{d0}}, {{a}}, {{b}}, {{c}}, {luts[0]:#04x}; " + "; ".join(
        f"lop3.b32 {{d{i}}}, {{a}}, {{b}}, {{c}}, {lut:#04x}" for i, lut in enumerate(luts) if i)
    for a, b, c in [(0xF0F0F0F0, 0xCCCCCCCC, 0xAAAAAAAA), (0x12345678, 0x9ABCDEF0, 0x0FF00FF0), (0, M32, 0x80000001)]:
        add(Case("lop3.b32", ["b32"] * len(luts), ["b32", "b32", "b32"], [a, b, c], [lop3(a, b, c, lut) for lut in luts],
                 template=tmpl))
# lop3 with a predicate result (PTX 8.2): p = (d != 0) BoolOp q
for a, b, c, q in [(0xF0, 0xCC, 0xAA, 0), (0xF0, 0xCC, 0xAA, 1), (0, 0, 0, 0), (0, 0, 0, 1), (M32, 0, M32, 0)]:
    d = lop3(a, b, c, 0x80)
    add(Case("lop3.or.b32", ["b32", "pred"], ["b32", "b32", "b32", "pred"], [a, b, c, q], [d, (d != 0) or bool(q)],
             template="{d0}|{d1}, {a}, {b}, {c}, 0x80, {d}", note="gpu", version="8.2"))
    add(Case("lop3.and.b32", ["b32", "pred"], ["b32", "b32", "b32", "pred"], [a, b, c, q], [d, (d != 0) and bool(q)],
             template="{d0}|{d1}, {a}, {b}, {c}, 0x80, {d}", note="gpu", version="8.2"))

# ---------------------------------------------------------------- shf


def shf(a: int, b: int, c: int, left: bool, clamp: bool) -> int:
    n = min(c, 32) if clamp else c & 31
    if left:
        return ((b << n) | (a >> (32 - n))) & M32
    return ((b << (32 - n)) | (a >> n)) & M32


for d in ("l", "r"):
    for mode in ("wrap", "clamp"):
        for a, b in [(0x89ABCDEF, 0x01234567), (M32, 0), (0, M32)]:
            for c in (0, 1, 4, 31, 32, 33, 36, 63, 64, 0xFFFFFFFF):
                add(Case(f"shf.{d}.{mode}.b32", "b32", ["b32", "b32", "u32"], [a, b, c],
                         [shf(a, b, c, d == "l", mode == "clamp")]))
add(Case("shf.l.wrap.b32", "b32", ["b32", "b32"], [0x89ABCDEF, 0x01234567], [shf(0x89ABCDEF, 0x01234567, 8, True, False)],
         template="{d}, {a}, {b}, 8"))

# all-immediate operands: uniform (scalar) code
add(Case("prmt.b32", "b32", [], [], [prmt(0x11223344, 0x55667788, 0x8880, None)], template="{d}, 0x11223344, 0x55667788, 0x8880"))
add(Case("prmt.b32.b4e", "b32", [], [], [prmt(0x11223344, 0x55667788, 1, "b4e")], template="{d}, 0x11223344, 0x55667788, 1"))
add(Case("lop3.b32", "b32", [], [], [lop3(0x12345678, 0xFF00FF00, 0x0F0F0F0F, 0xE8)],
         template="{d}, 0x12345678, 0xFF00FF00, 0x0F0F0F0F, 0xE8"))
add(Case("shf.r.clamp.b32", "b32", [], [], [shf(0x89ABCDEF, 0x01234567, 40, False, True)], template="{d}, 0x89ABCDEF, 0x01234567, 40"))
add(Case("fns.b32", "b32", [], [], [fns(0xAAAAAAAA, 2, -1)], template="{d}, 0xAAAAAAAA, 2, -1"))
add(Case("bfind.s64", "u32", [], [], [bfind(2**64 - 2, "s64")[0]], template="{d}, -2"))
add(Case("bfi.b64", "b64", [], [], [bfi(0xFF, 0, 60, 8, 64)], template="{d}, 0xFF, 0, 60, 8"))
