"""Parsed, checked PTX modules kept in the kernel cache (backends/cache.py).

Thrust's 1.7 MB module takes a second to parse and check, and a run whose kernels all
come from the cache spent half its time doing that. A module of at least CACHED_CHARS is
stored pickled under a key of its texts and cuport's code; an entry's HMAC tag makes it as
trustworthy as the native code the cache holds, and one that fails it is parsed again.

The pickle is made to load fast (0.08 s instead of 0.5 s for Thrust's): the immutable
operands (registers, immediates, addresses) that are equal are stored once, so loading
makes ~10,000 of them instead of ~100,000, and every IR object is rebuilt by a call of its
class rather than by dataclasses' generic __setstate__.
"""

from __future__ import annotations

import dataclasses
import io
import pickle
import sys

from ..ptx import ir
from . import cache

#: modules whose texts are shorter (in all) are parsed each time: it takes milliseconds
CACHED_CHARS = 256 * 1024

#: the operand classes (frozen: equal ones may be shared)
_FROZEN = (ir.Reg, ir.Special, ir.Imm, ir.FImm, ir.Sym, ir.Mem, ir.Vec, ir.TexAddr, ir.Sink,
           ir.PredPair, ir.Not, ir.Args, ir.SymAddr)
#: field names of the classes rebuilt by a call (every field is an __init__ argument)
_FIELDS = {cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in (*_FROZEN, ir.Label, ir.Var)}
assert all(f.init for cls in _FIELDS for f in dataclasses.fields(cls))


class _Pickler(pickle.Pickler):
    def __init__(self, f) -> None:
        super().__init__(f, protocol=pickle.HIGHEST_PROTOCOL)
        self.canon: dict = {}

    def _canon(self, o):
        if type(o) in _FIELDS:
            try:
                return self.canon.setdefault(o, o)
            except TypeError:  # (an operand holding something unhashable)
                return o
        return o

    def reducer_override(self, obj):
        cls = type(obj)
        if cls is ir.Instr:
            return cls, (obj.op, obj.mods, [self._canon(a) for a in obj.args], self._canon(obj.guard),
                         obj.guard_neg, obj.line, obj.loc)
        names = _FIELDS.get(cls)
        if names is not None:
            return cls, tuple(getattr(obj, n) for n in names)
        return NotImplemented


def dumps(mod: ir.Module) -> bytes:
    f = io.BytesIO()
    _Pickler(f).dump(mod)
    return f.getvalue()


def key(texts: list[str]) -> str | None:
    """The cache key of a module of these texts, or None when it is not kept."""
    if sum(len(t) for t in texts) < CACHED_CHARS or not cache.enabled():
        return None
    return cache.make_key("ptx module", *texts, cache.code_fingerprint(), sys.version)


def load(k: str) -> ir.Module | None:
    hit = cache.load(k)
    if hit is None:
        return None
    try:
        mod = pickle.loads(hit[0])
    except Exception:  # noqa: BLE001 - a bad entry only costs the parse
        return None
    return mod if isinstance(mod, ir.Module) else None


def store(k: str, mod: ir.Module) -> None:
    cache.store(k, dumps(mod), {"ptx module": True})
