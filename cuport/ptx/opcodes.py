"""What the passes need to know about an opcode, in one table.

Each PTX opcode the passes must tell apart has one row: whether its first operand is a
destination, whether its result differs per thread even when every source is uniform
(collectives, atomics, calls), whether it can observe another thread's progress (a spin
loop around it must let others run), whether it ends a basic block, and whether it
touches memory. Modifier-dependent facts (`bar.red` has a destination, an `ld.acquire`
waits) are functions of the instruction below. Which modifiers an opcode accepts is the
validator's table (ptx/validate.py, FORMS), which refuses unknown ones once, at load.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import ir


@dataclass(frozen=True)
class Opcode:
    dest: bool = True  # the first operand is written
    per_lane: bool = False  # result differs per thread although the sources are uniform
    waits: bool = False  # may observe another thread's progress
    ends_block: bool = False  # control leaves the straight line here
    memory: bool = False  # reads or writes memory


_PLAIN = Opcode()
_STORE = Opcode(dest=False, memory=True)
_COLLECTIVE = Opcode(per_lane=True)
_END = Opcode(dest=False, ends_block=True)

#: opcodes that differ from a plain computation writing its first operand
TABLE: dict[str, Opcode] = {
    # memory
    "ld": Opcode(memory=True), "ldu": Opcode(memory=True), "st": _STORE,
    "atom": Opcode(per_lane=True, waits=True, memory=True),
    "red": Opcode(dest=False, waits=True, memory=True),
    "prefetch": Opcode(dest=False), "prefetchu": Opcode(dest=False),
    "applypriority": Opcode(dest=False), "discard": Opcode(dest=False),
    "cp": _STORE, "cp.async": _STORE, "multimem": _STORE, "stmatrix": _STORE,
    "sust": _STORE, "sured": _STORE, "tensormap": _STORE,
    # per lane: arrive tokens differ per thread, and each thread sees the phase when it looks
    "mbarrier": Opcode(per_lane=True, waits=True, memory=True),  # destination: see has_dest
    "membar": Opcode(dest=False, waits=True), "fence": Opcode(dest=False, waits=True),
    # threads of a warp together
    "shfl": _COLLECTIVE, "vote": _COLLECTIVE, "match": _COLLECTIVE, "redux": _COLLECTIVE,
    "activemask": _COLLECTIVE, "elect": _COLLECTIVE, "wmma": Opcode(per_lane=True, memory=True),
    "call": Opcode(dest=False, per_lane=True),
    # control
    "bra": _END, "brx": _END, "ret": _END, "exit": _END, "trap": _END,
    "bar": Opcode(dest=False, per_lane=True), "barrier": Opcode(dest=False, per_lane=True),
    "nanosleep": Opcode(dest=False, waits=True), "pmevent": Opcode(dest=False),
    "brkpt": Opcode(dest=False), "griddepcontrol": Opcode(dest=False),
    "setmaxnreg": Opcode(dest=False),
}

#: memory-ordering qualifiers that make a load really happen, in order, each time
ORDERED = frozenset({"volatile", "acquire", "relaxed", "acq_rel", "sc", "mmio"})


def facts(op: str) -> Opcode:
    return TABLE.get(op, _PLAIN)


def has_dest(ins: ir.Instr) -> bool:
    """Whether the instruction's first operand is written."""
    op = ins.op
    if op in ("bar", "barrier"):
        return "red" in ins.mods
    if op == "mbarrier":
        m = ins.mods
        return bool(m) and m[0] in ("arrive", "arrive_drop", "test_wait", "try_wait", "pending_count")
    if op == "wmma":
        return bool(ins.mods) and ins.mods[0] in ("load", "mma")
    return facts(op).dest and bool(ins.args)


def per_lane(ins: ir.Instr) -> bool:
    """A result that differs per thread although every source is uniform (bar.red's is the
    same for every thread of the block)."""
    if ins.op in ("bar", "barrier"):
        return "red" not in ins.mods
    return facts(ins.op).per_lane


def waits(ins: ir.Instr) -> bool:
    """Whether the instruction can observe another thread's progress."""
    if ins.op in ("ld", "ldu"):
        return any(m in ORDERED for m in ins.mods)
    return facts(ins.op).waits


def ends_block(ins: ir.Instr) -> bool:
    return facts(ins.op).ends_block
