"""The table from PTX opcode to its lowering.

Each instruction family module registers its opcodes with `@lowers("add", "sub")`. A
lowering is `fn(em, ins) -> None`, where `em` is the backend's emitter (see
cuport.backends.cpu.emit.FunctionEmitter for the API: read/write operands, constants,
intrinsics, masks, addresses) and `ins` the cuport.ptx.ir.Instr. Importing
`cuport.isa.families` imports every family module, which fills `LOWERINGS`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ptx.ir import SCALAR_TYPES

LOWERINGS: dict[str, Callable] = {}
_BY_KIND: dict[tuple[str, str], Callable] = {}
_FLOAT_TYPES = {"f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32"}


def lowers(*ops: str, kind: str | None = None) -> Callable[[Callable], Callable]:
    """Register a lowering for opcodes; `kind` ("int" or "float") splits opcodes such as
    `add` whose meaning depends on the instruction's type."""

    def deco(fn: Callable) -> Callable:
        for op in ops:
            if kind is None:
                if op in LOWERINGS:
                    raise RuntimeError(f"two lowerings registered for {op}")
                LOWERINGS[op] = fn
            else:
                if (op, kind) in _BY_KIND:
                    raise RuntimeError(f"two {kind} lowerings registered for {op}")
                _BY_KIND[(op, kind)] = fn
                LOWERINGS.setdefault(op, _dispatch_on_type)
        return fn

    return deco


def _dispatch_on_type(em, ins) -> None:
    t = type_suffix(ins, "")
    kind = "float" if t in _FLOAT_TYPES else "int"
    fn = _BY_KIND.get((ins.op, kind))
    if fn is None:
        raise em.error(f"`{ins.op}` on .{t or '?'} is not supported")
    fn(em, ins)


def type_suffix(ins, default: str | None = None) -> str:
    """The last type suffix of an instruction (`add.rn.f32` → f32)."""
    for m in reversed(ins.mods):
        if m in SCALAR_TYPES:
            return m
    if default is not None:
        return default
    raise ValueError(f"no type in {ins.text()}")
