"""Instruction test cases and the PTX kernels that run them.

Pure Python (no cuport import), so the same file runs on a machine with an NVIDIA GPU to
record what real hardware answers (record_gpu.py) and here to check cuport against it.

A `Case` is one instruction applied to one row of inputs:

    Case("add.sat.s32", "s32", ["s32", "s32"], [2**31 - 1, 1], expect=[2**31 - 1])

`dst`/`srcs` are the PTX register types of the destination(s) and sources (`pred` for
predicates). Inputs are Python ints (any sign; reduced to the type's width) or floats
(converted to the float type's bits; pass `bits(...)` wrappers for exact patterns).
`expect` holds the independently computed result(s), or None when only a real GPU says
(then the GPU recording is the oracle). The template places the operands; the default is
`{d}, {a}, {b}, {c}` for as many sources as there are.

All cases of one instruction with the same types share a kernel: thread i runs row i.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

BITS = {
    "pred": 1, "b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
    "b32": 32, "u32": 32, "s32": 32, "f32": 32, "f16x2": 32, "bf16x2": 32,
    "b64": 64, "u64": 64, "s64": 64, "f64": 64,
}


@dataclass(frozen=True)
class Bits:
    """An exact bit pattern as an input or expected value."""

    value: int


def bits(v: int) -> Bits:
    return Bits(v)


def to_bits(v, t: str) -> int:
    """A Python value as the bit pattern of PTX type `t` (in the register's width)."""
    n = BITS[t]
    if isinstance(v, Bits):
        return v.value & ((1 << n) - 1)
    if t == "pred":
        return 1 if v else 0
    if t == "f32":
        return struct.unpack("<I", struct.pack("<f", v))[0]
    if t == "f64":
        return struct.unpack("<Q", struct.pack("<d", v))[0]
    if t == "f16":
        return struct.unpack("<H", struct.pack("<e", v))[0]
    if t == "bf16":
        b32 = struct.unpack("<I", struct.pack("<f", v))[0]
        if math.isnan(v):
            return 0x7FC0 | ((b32 >> 16) & 0x8000)
        return ((b32 + 0x7FFF + ((b32 >> 16) & 1)) >> 16) & 0xFFFF
    return int(v) & ((1 << n) - 1)


def from_bits(b: int, t: str):
    """A bit pattern of type `t` as a Python value (floats as float, ints signed per type)."""
    n = BITS[t]
    b &= (1 << n) - 1
    if t == "f32":
        return struct.unpack("<f", struct.pack("<I", b))[0]
    if t == "f64":
        return struct.unpack("<d", struct.pack("<Q", b))[0]
    if t == "f16":
        return struct.unpack("<e", struct.pack("<H", b))[0]
    if t == "bf16":
        return struct.unpack("<f", struct.pack("<I", b << 16))[0]
    if t[0] == "s" and b >> (n - 1):
        return b - (1 << n)
    return b


@dataclass
class Case:
    instr: str
    dst: str | list[str]
    srcs: list[str]
    inputs: list
    expect: list | None = None
    template: str | None = None
    note: str = ""
    tolerance_ulps: int = 0  # for approximate instructions: accepted distance from `expect`
    abs_tolerance: float = 0.0
    extra_decls: str = ""
    # why the GPU's answer legitimately differs from cuport's (a documented design decision):
    # the runner then checks `expect` only and does not compare with the recording
    gpu_differs: str = ""
    target: str = "sm_90"  # the PTX target the case needs (the H200 recording runs sm_90)
    version: str = "8.5"  # the PTX ISA version it needs
    id: str = field(default="", compare=False)

    @property
    def dsts(self) -> list[str]:
        return self.dst if isinstance(self.dst, list) else [self.dst]

    def key(self) -> str:
        """A stable identifier: instruction, types and input bits."""
        ins = ",".join(f"{to_bits(v, t):x}" for v, t in zip(self.inputs, self.srcs, strict=False))
        tmpl = self.template or ""
        return f"{self.instr}|{'/'.join(self.dsts)}|{'/'.join(self.srcs)}|{tmpl}|{ins}"

    def group(self) -> str:
        return (f"{self.instr}|{'/'.join(self.dsts)}|{'/'.join(self.srcs)}|{self.template or ''}|"
                f"{self.extra_decls}|{self.target}|{self.version}")


def _container(t: str) -> str:
    n = BITS[t]
    return "pred" if t == "pred" else f"b{max(n, 16) if n == 8 else n}"


def kernel_for(cases: list[Case], name: str = "t") -> str:
    """One kernel running every case of a group (same instruction and types), row per thread.

    Parameters: one u64 array pointer per source (each row's bits as u64), one u64 output
    array (u64 per destination per row), and the row count.
    """
    c0 = cases[0]
    srcs, dsts = c0.srcs, c0.dsts
    version = max((c.version for c in cases), default="8.0")
    target = max((c.target for c in cases), default="sm_80")
    lines = [
        f".version {version}",
        f".target {target}",
        ".address_size 64",
        "",
        f".visible .entry {name}(",
    ]
    params = [f"    .param .u64 in{i}" for i in range(len(srcs))] + ["    .param .u64 out", "    .param .u32 n"]
    lines.append(",\n".join(params))
    lines.append(")")
    lines.append("{")
    lines.append("    .reg .b64 %addr<8>;")
    lines.append("    .reg .b64 %raw<8>;")
    lines.append("    .reg .b32 %i<4>;")
    lines.append("    .reg .pred %inb;")
    for i, t in enumerate(srcs):
        lines.append(f"    .reg .{_reg_type(t)} %s{i};")
    for i, t in enumerate(dsts):
        lines.append(f"    .reg .{_reg_type(t)} %d{i};")
    if c0.extra_decls:
        lines.append("    " + c0.extra_decls)
    lines += [
        "    mov.u32 %i0, %tid.x;",
        "    mov.u32 %i1, %ctaid.x;",
        "    mov.u32 %i2, %ntid.x;",
        "    mad.lo.u32 %i0, %i1, %i2, %i0;",
        "    ld.param.u32 %i3, [n];",
        "    setp.ge.u32 %inb, %i0, %i3;",
        "    @%inb bra DONE;",
        "    mul.wide.u32 %addr7, %i0, 8;",
    ]
    for i, t in enumerate(srcs):
        lines += [
            f"    ld.param.u64 %addr{i}, [in{i}];",
            f"    add.u64 %addr{i}, %addr{i}, %addr7;",
            f"    ld.global.u64 %raw{i}, [%addr{i}];",
        ]
        if t == "pred":
            lines.append(f"    setp.ne.u64 %s{i}, %raw{i}, 0;")
        elif BITS[t] == 64:
            lines.append(f"    mov.b64 %s{i}, %raw{i};")
        else:
            lines.append(f"    cvt.u{_cvt_bits(t)}.u64 %s{i}, %raw{i};" if BITS[t] != 8 else
                         f"    cvt.u16.u64 %s{i}, %raw{i};")
    # sources are {a}, {b}, ...; destinations {d0}, {d1}, ... and {d} for the first one
    # (with four sources {d} is the fourth source: use {d0} then)
    names = {"d": "%d0", **{k: f"%s{i}" for i, k in enumerate("abcdefgh"[: len(srcs)])}}
    for i in range(len(dsts)):
        names[f"d{i}"] = f"%d{i}"
    template = c0.template
    if template is None:
        template = ", ".join(["{d0}"] + ["{" + "abcdefgh"[i] + "}" for i in range(len(srcs))])
    # keys 'a'.. map to sources; destination placeholders d, d0, d1...
    body = template.format(**{k: v for k, v in names.items()})
    instr = c0.instr
    lines.append(f"    {instr} {body};" if not instr.endswith(";") else f"    {instr}")
    lines.append("    ld.param.u64 %addr6, [out];")
    lines.append(f"    mul.wide.u32 %addr7, %i0, {8 * len(dsts)};")
    lines.append("    add.u64 %addr6, %addr6, %addr7;")
    for i, t in enumerate(dsts):
        if t == "pred":
            lines.append(f"    selp.u64 %raw{i}, 1, 0, %d{i};")
        elif BITS[t] == 64:
            lines.append(f"    mov.b64 %raw{i}, %d{i};")
        elif BITS[t] == 8:
            lines.append(f"    cvt.u64.u16 %raw{i}, %d{i};")
            lines.append(f"    and.b64 %raw{i}, %raw{i}, 255;")
        else:
            lines.append(f"    cvt.u64.u{_cvt_bits(t)} %raw{i}, %d{i};")
        lines.append(f"    st.global.u64 [%addr6+{8 * i}], %raw{i};")
    lines += ["DONE:", "    ret;", "}", ""]
    return "\n".join(lines)


def _reg_type(t: str) -> str:
    if t == "pred":
        return "pred"
    n = BITS[t]
    if n == 8:
        return "b16"  # PTX has no 8-bit registers
    return f"b{n}"


def _cvt_bits(t: str) -> int:
    return BITS[t]


def input_rows(cases: list[Case]) -> list[list[int]]:
    """Per source: the list of u64 words, one per case."""
    c0 = cases[0]
    return [[to_bits(c.inputs[i], t) for c in cases] for i, t in enumerate(c0.srcs)]


def groups(cases: list[Case]) -> dict[str, list[Case]]:
    out: dict[str, list[Case]] = {}
    for c in cases:
        out.setdefault(c.group(), []).append(c)
    return out


def ulp_distance(a: int, b: int, t: str) -> int:
    """Distance in units in the last place between two float bit patterns of type `t`."""
    n = BITS[t]

    def key(x: int) -> int:
        sign = x >> (n - 1)
        mag = x & ((1 << (n - 1)) - 1)
        return -mag if sign else mag

    return abs(key(a) - key(b))
