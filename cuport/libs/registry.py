"""Which Python function implements which library symbol, and the libraries' errors.

As in the driver (driver/api.py): an implementation takes the call's input
parameters in order (handles and pointers as ints, scalars as Python numbers) and
returns the values of its `out` parameters (one value, a tuple for several, None);
libs/dispatch.py adapts it to the C signature in the table. A failure is raised as
Status("CUBLAS_STATUS_INVALID_VALUE", why): the call answers that status and cuport
prints one line naming the call and why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from cuport.driver import handles

T = TypeVar("T")


@dataclass(frozen=True)
class Implementation:
    fn: Callable
    optional_outs: frozenset[str]  # out-parameters a caller may pass as NULL


IMPLEMENTATIONS: dict[str, Implementation] = {}


def implements(*symbols: str, optional_outs: tuple[str, ...] = ()) -> Callable[[Callable], Callable]:
    """Register `fn` as the implementation of each of `symbols` (e.g. the _v2 and _64 forms)."""

    def register(fn: Callable) -> Callable:
        for symbol in symbols:
            if symbol in IMPLEMENTATIONS:
                raise ValueError(f"{symbol} implemented twice")
            IMPLEMENTATIONS[symbol] = Implementation(fn, frozenset(optional_outs))
        return fn

    return register


class Status(Exception):
    """A library call's failure: the status it answers (by name) and why."""

    def __init__(self, status: str, message: str = "", quiet: bool = False) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.quiet = quiet


class Unsupported(Status):
    """A case cuport does not implement: the library's NOT_SUPPORTED, set by the dispatcher."""

    def __init__(self, message: str) -> None:
        super().__init__("", message)


def lookup(handle: int, kind: type[T], status: str, what: str) -> T:
    """The `kind` object a library handle names, else Status(status, "<handle> is not
    <what>"): how cuBLAS, cuRAND, cuSOLVER and cuSPARSE take their handles."""
    obj = handles.peek(handle) if handle else None
    if not isinstance(obj, kind):
        raise Status(status, f"{hex(handle)} is not {what}")
    return obj
