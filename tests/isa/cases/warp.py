"""Warp collectives (PTX ISA §9.7.9.6 shfl.sync, §9.7.13 vote/match/redux/activemask):
reference models written from the ISA's pseudocode, and the operand tables the tests sweep.

The models take the 32 lanes' inputs and the set of participating lanes (see
cuport/isa/warp.py: lanes executing, plus non-exited lanes of the member mask) and return
the 32 lanes' results. Lanes that do not execute are not compared by the tests.
"""

from __future__ import annotations

import math
import struct

from ptxgen import Case

M32 = 0xFFFFFFFF


def shfl_ref(mode: str, a: list[int], b: list[int], c: int, part: int = M32) -> tuple[list[int], list[int]]:
    """(d, p) per lane, the ISA's pseudocode; an in-range source lane that does not take part
    gives 0 (what an H200 answers), an out-of-range one the lane's own value."""
    cval = c & 31
    mask = (c >> 8) & 31
    d, p = [], []
    for lane in range(32):
        bval = b[lane] & 31
        max_lane = (lane & mask) | (cval & ~mask & 31)
        min_lane = lane & mask
        if mode == "up":
            j = lane - bval
            ok = j >= max_lane
        elif mode == "down":
            j = lane + bval
            ok = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            ok = j <= max_lane
        else:
            j = min_lane | (bval & ~mask & 31)
            ok = j <= max_lane
        if not ok:
            j = lane
        d.append(a[j] if (part >> j) & 1 else 0)
        p.append(int(ok))
    return d, p


def cuda_shfl_ref(fn: str, a: list, arg: list[int], width: int) -> list:
    """The CUDA C++ intrinsics as the Programming Guide defines them (in-range arguments)."""
    out = []
    for lane in range(len(a)):
        w = lane % 32
        seg = (w // width) * width
        base = lane - w
        if fn == "idx":
            src = seg + (arg[lane] % width)
        elif fn == "up":
            src = w - arg[lane] if (w - seg) >= arg[lane] else w
        elif fn == "down":
            src = w + arg[lane] if (w - seg) + arg[lane] < width else w
        else:
            src = w ^ arg[lane]
            if src >= seg + width:
                src = w
        out.append(a[base + src])
    return out


#: `c` operands: clamp 31 / 0 / odd values, segment masks of widths 32, 16, 8, 4, 2, 1, stray bits
C_VALUES = [0x1F, 0x0, 0x7, 0x10, 0x101F, 0x181F, 0x1C1F, 0x1E1F, 0x1F1F, 0x1F00, 0x1000, 0x1800,
            0x1C00, 0x0C03, 0x0305, 0xFFFF_E01F, 0x1E]

#: uniform `b` operands (low 5 bits used; larger ones wrap), per-lane patterns come from the test
B_VALUES = [0, 1, 2, 3, 5, 8, 15, 16, 17, 31, 32, 33, 0xFFFFFFFF]

#: member masks / participants for the partial-warp sweeps
PARTS = [M32, 0x0000FFFF, 0xFFFF0000, 0x55555555, 0x80000001]


def ballot_ref(pred: list[bool], part: int) -> int:
    return sum(1 << i for i in range(32) if pred[i] and (part >> i) & 1)


def match_any_ref(vals: list[int], part: int) -> list[int]:
    out = []
    for i in range(32):
        out.append(sum(1 << j for j in range(32) if (part >> j) & 1 and vals[j] == vals[i]))
    return out


def match_all_ref(vals: list[int], part: int) -> tuple[int, int]:
    lanes = [vals[j] for j in range(32) if (part >> j) & 1]
    same = all(v == lanes[0] for v in lanes)
    return (part if same else 0), int(same)


def redux_ref(op: str, vals: list[int], part: int) -> int:
    xs = [vals[j] for j in range(32) if (part >> j) & 1]
    if op == "add":
        return sum(xs) & M32
    if op == "and":
        r = M32
        for x in xs:
            r &= x
        return r
    if op == "or":
        r = 0
        for x in xs:
            r |= x
        return r
    if op == "xor":
        r = 0
        for x in xs:
            r ^= x
        return r
    signed = op.endswith("s")
    key = (lambda x: x - (1 << 32) if x >> 31 else x) if signed else (lambda x: x)
    f = min if op.startswith("min") else max
    return f(xs, key=key)


# ---------------------------------------------------------------- the one-warp case table
#
# Each group below is one 32-row kernel (one warp, every lane executing), so row i is lane
# i and its expectation comes from the model applied to the group's 32 inputs. The operand
# `c`, the member mask and the mode are in the instruction text; a and b vary per lane.

def _rng(seed: int):
    x = seed

    def nxt() -> int:
        nonlocal x
        x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
        return x >> 32

    return nxt


_TAG = [0]


def _warp_group(instr: str, template: str, dsts, srcs, inputs: list[list], outs: list[list]) -> list:
    """32 rows; each gets a last, unused source: a running tag that keeps every row's key
    unique (groups with the same instruction text run as consecutive warps of one kernel)."""
    rows = []
    for i in range(32):
        _TAG[0] += 1
        rows.append(Case(instr, dsts, [*srcs, "u32"], [*inputs[i], _TAG[0]], outs[i], template=template))
    return rows


CASES: list[Case] = []
_r = _rng(2024)
for mode in ("up", "down", "bfly", "idx"):
    for c in (0x1F, 0x0, 0x7, 0x181F, 0x1C1F, 0x1E00, 0x0C03, 0x1F1F):
        a = [_r() for _ in range(32)]
        b = [_r() % 40 for _ in range(32)]
        d, p = shfl_ref(mode, a, b, c)
        CASES += _warp_group(f"shfl.sync.{mode}.b32", f"{{d0}}|{{d1}}, {{a}}, {{b}}, {c:#x}, -1", ["b32", "pred"],
                             ["b32", "b32"], [[a[i], b[i]] for i in range(32)], [[d[i], p[i]] for i in range(32)])
    # immediate lane operand, no predicate destination
    a = [_r() for _ in range(32)]
    d, _ = shfl_ref(mode, a, [5] * 32, 0x101F)
    CASES += _warp_group(f"shfl.sync.{mode}.b32", "{d0}, {a}, 5, 0x101f, 0xffffffff", "b32", ["b32"],
                         [[x] for x in a], [[x] for x in d])

for pattern in ([_r() % 3 == 0 for _ in range(32)], [True] * 32, [False] * 32):
    bal = ballot_ref(pattern, M32)
    rows = [[int(x)] for x in pattern]
    CASES += _warp_group("vote.sync.ballot.b32", "{d0}, {a}, -1", "b32", ["pred"], rows, [[bal]] * 32)
    CASES += _warp_group("vote.sync.all.pred", "{d0}, {a}, -1", "pred", ["pred"], rows, [[int(all(pattern))]] * 32)
    CASES += _warp_group("vote.sync.any.pred", "{d0}, !{a}, -1", "pred", ["pred"], rows,
                         [[int(not all(pattern))]] * 32)
    CASES += _warp_group("vote.sync.uni.pred", "{d0}, {a}, -1", "pred", ["pred"], rows,
                         [[int(all(pattern) or not any(pattern))]] * 32)

vals = [_r() % 4 for _ in range(32)]
CASES += _warp_group("match.any.sync.b32", "{d0}, {a}, -1", "b32", ["b32"], [[v] for v in vals],
                     [[m] for m in match_any_ref(vals, M32)])
vals64 = [(v << 40) | 7 for v in (_r() % 3 for _ in range(32))]
CASES += _warp_group("match.any.sync.b64", "{d0}, {a}, -1", "b32", ["b64"], [[v] for v in vals64],
                     [[m] for m in match_any_ref(vals64, M32)])
for vs in ([9] * 32, [9] * 31 + [8]):
    d, p = match_all_ref(vs, M32)
    CASES += _warp_group("match.all.sync.b32", "{d0}|{d1}, {a}, -1", ["b32", "pred"], ["b32"], [[v] for v in vs],
                         [[d, p]] * 32)

red_vals = [_r() for _ in range(32)]
red_vals[3] = 0x8000_0000
for op, t, model in [("add", "u32", "add"), ("add", "s32", "add"), ("min", "u32", "minu"), ("max", "u32", "maxu"),
                     ("min", "s32", "mins"), ("max", "s32", "maxs"), ("and", "b32", "and"), ("or", "b32", "or"),
                     ("xor", "b32", "xor")]:
    r = redux_ref(model, red_vals, M32)
    CASES += _warp_group(f"redux.sync.{op}.{t}", "{d0}, {a}, -1", t, [t], [[v] for v in red_vals], [[r]] * 32)

# redux.sync.min/max.f32 (sm_100a): -0 < +0; NaNs ignored unless .NaN; all NaN gives the canonical NaN
_F = struct.Struct("<f")


def _f32(bits_: int) -> float:
    return _F.unpack(struct.pack("<I", bits_))[0]


def _fredux(op: str, xs: list[int], absolute: bool, nan: bool) -> int:
    vals = [x & 0x7FFFFFFF if absolute else x for x in xs]
    nans = [v for v in vals if math.isnan(_f32(v))]
    nums = [v for v in vals if not math.isnan(_f32(v))]
    if not nums or (nan and nans):
        return 0x7FFFFFFF
    def key(v: int) -> tuple[float, int]:  # by value, -0 before +0
        return _f32(v), 0 if v >> 31 else 1

    return (min if op == "min" else max)(nums, key=key)


_FSETS = {
    "mixed": [0x3F800000, 0xBF800000, 0x80000000, 0x00000000, 0x7F800000, 0xFF800000, 0x00000001, 0x80000001]
    + [0x7FC00000] * 2 + [0x40490FDB] * 22,
    "zeros": [0x80000000, 0x00000000] * 16,
    "nans": [0x7FC00000, 0xFFC00001] * 16,
}
for xs in _FSETS.values():
    for op in ("min", "max"):
        for mods in ("", ".abs", ".NaN", ".abs.NaN"):
            want = _fredux(op, xs, "abs" in mods, "NaN" in mods)
            rows = _warp_group(f"redux.sync.{op}{mods}.f32", "{d0}, {a}, -1", "b32", ["b32"], [[x] for x in xs],
                               [[want]] * 32)
            for r in rows:
                r.target = "sm_100a"
                r.version = "8.6"
            CASES += rows
