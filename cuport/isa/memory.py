"""ld, ldu, st, prefetch, isspacep: loads and stores in every state space.

PTX ISA §9.7.9.8-11 (ld, ld.global.nc, ldu, st), §9.7.9.15 (prefetch), §9.7.9.17 (isspacep).
This module decodes the instructions into an `Access` (element type, state space, address,
vector elements, memory ordering, volatility) and checks what the ISA allows; the backend
performs it (`em.load_elements`, `em.store_elements`, `em.in_space`: see isa/api.py).

Cache hints (.ca, .cg, .cs, .lu, .cv, .nc, L1::/L2:: qualifiers, cache policies) change
nothing on cuport's targets. Vector forms (.v2/.v4/.v8) access consecutive elements.
`.relaxed`, `.acquire`, `.release` (and `.mmio`) accesses must really happen, once per
thread and in order, as must `.volatile` ones; a backend may treat `.volatile` on shared
and local memory (`BLOCK_PRIVATE`) as plain when only the block's own threads can see it
and its threads never run between two of their accesses.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ptx import ir
from ..ptx.ir import TYPE_BITS
from .registry import lowers, type_suffix

_ORDER = {"relaxed": "monotonic", "acquire": "acquire", "release": "release", "acq_rel": "acq_rel",
          "mmio": "monotonic"}
#: spaces no other block or host thread can see
BLOCK_PRIVATE = frozenset({"shared", "local"})
SPACES = ("global", "shared", "local", "const", "param")
#: an ordered or volatile vector access of at most this many bytes in all is one access on a
#: GPU: no other thread sees part of it (CUB publishes a tile's status and value with one
#: st.relaxed.gpu.v2.u32, .v2.u64 for 8-byte values; tests/vulkan/test_tile_status.py)
ONE_ACCESS_BYTES = 16


def one_access(n: int, nbytes: int) -> bool:
    """Whether an ordered or volatile access of `n` elements, `nbytes` in all, is one access
    on a GPU. A backend makes it one where its target can, and refuses or splits it, by
    name, where it cannot (16 bytes: not every target)."""
    return n > 1 and nbytes <= ONE_ACCESS_BYTES


def vector_width(ins: ir.Instr) -> int:
    for m in ins.mods:
        if m in ("v2", "v4", "v8"):
            return int(m[1:])
    return 1


def memory_order(ins: ir.Instr) -> str | None:
    """The LLVM ordering a PTX .sem qualifier asks for (None: a plain access)."""
    for m in ins.mods:
        if m in _ORDER:
            return _ORDER[m]
    return None


def ordered(ins: ir.Instr) -> bool:
    """A .volatile access or one with a .sem qualifier: it must happen as written, once per
    thread and in order, so a backend neither merges it nor checks it ahead of time."""
    return "volatile" in ins.mods or "sc" in ins.mods or memory_order(ins) is not None


def space_of(ins: ir.Instr) -> str:
    """The state space an instruction names (`generic` when it names none)."""
    for m in ins.mods:
        if m in SPACES:
            return m
        if m.startswith("shared::"):
            return "shared"
        if m.startswith("param::"):
            return "param"
    return "generic"


@dataclass(frozen=True)
class Access:
    """One ld/st: `items` are the data operands (one, or the elements of a .v2/.v4/.v8)."""

    t: str  # element type suffix
    space: str  # global shared local const param generic
    mem: ir.Mem
    items: tuple
    order: str | None  # LLVM ordering of a .sem qualifier, None for plain or volatile
    volatile: bool

    @property
    def size(self) -> int:
        return max(TYPE_BITS[self.t] // 8, 1)


@dataclass(frozen=True)
class InPlace:
    """isa/api.py's Elements for a backend that builds an outline_access body in place: the
    access's own load_elements/store_elements."""

    em: object
    acc: Access

    def load(self, offsets: list, runs: int = 0) -> list:
        return self.em.load_elements(self.acc, offsets, runs)

    def store(self, vals: list, offsets: list, runs: int = 0) -> None:
        self.em.store_elements(self.acc, vals, offsets, runs)


def access(em, ins: ir.Instr, mem_index: int, data_index: int) -> Access:
    t = type_suffix(ins)
    if t == "pred":
        raise em.error("a load or store of a predicate")
    mem = ins.args[mem_index]
    if not isinstance(mem, ir.Mem):
        raise em.error("an access whose address is not [address]")
    data = ins.args[data_index]
    items = data.items if isinstance(data, ir.Vec) else (data,)
    n = vector_width(ins)
    if len(items) != n:
        raise em.error(f"a .v{n} access with {len(items)} elements")
    order = memory_order(ins)
    if order is not None and TYPE_BITS[t] > 64:
        raise em.error(f"an ordered access of .{t} is not supported")
    return Access(t, space_of(ins), mem, tuple(items), order, "volatile" in ins.mods)


@lowers("ld", "ldu")
def lower_ld(em, ins: ir.Instr) -> None:
    acc = access(em, ins, 1, 0)
    for d, v in zip(acc.items, em.load_elements(acc), strict=True):
        em.write(d, acc.t, v)


@lowers("st")
def lower_st(em, ins: ir.Instr) -> None:
    acc = access(em, ins, 0, 1)
    em.store_elements(acc, [em.read_bits(s, acc.t) for s in acc.items])


@lowers("prefetch", "prefetchu", "applypriority", "discard", "createpolicy")
def lower_prefetch(em, ins: ir.Instr) -> None:
    """Cache-control hints: nothing to do (createpolicy yields a dummy policy).

    `discard` makes the line's contents undefined: keeping them is one valid outcome."""
    if ins.op == "createpolicy":
        em.write(ins.args[0], "b64", em.const_int(64, 0))


@lowers("isspacep")
def lower_isspacep(em, ins: ir.Instr) -> None:
    space = next((m.split("::")[0] for m in ins.mods if m.split("::")[0] in SPACES), None)
    if space is None:
        raise em.error("isspacep without a state space")
    em.write(ins.args[0], "pred", em.in_space(space, em.read_bits(ins.args[1], "u64")))
