"""Which Python function implements which driver API symbol.

A driver function is written in terms of values: it takes the call's input
parameters in order (handles and pointers as ints, `const char *` as str or None,
scalars as Python numbers) and returns the values of its `out` parameters (one
value, a tuple for several, None for none). capi/dispatch.py adapts it to the C
signature recorded in the table, so `@implements("cuMemAlloc_v2")` on
`def mem_alloc(bytesize) -> int` is all a symbol needs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Implementation:
    fn: Callable
    before_init: bool  # callable before cuInit (cuInit, cuDriverGetVersion, ...)
    optional_outs: frozenset[str]  # out-parameters a caller may pass as NULL


IMPLEMENTATIONS: dict[str, Implementation] = {}


def implements(*symbols: str, before_init: bool = False,
               optional_outs: tuple[str, ...] = ()) -> Callable[[Callable], Callable]:
    """Register `fn` as the implementation of each of `symbols`."""

    def register(fn: Callable) -> Callable:
        for symbol in symbols:
            if symbol in IMPLEMENTATIONS:
                raise ValueError(f"{symbol} implemented twice")
            IMPLEMENTATIONS[symbol] = Implementation(fn, before_init, frozenset(optional_outs))
        return fn

    return register
