"""Parsed, checked PTX modules kept in the kernel cache (backends/cache.py).

Thrust's 1.7 MB module takes a second to parse and check, and a run whose kernels all
come from the cache spent half its time doing that. A module of at least CACHED_CHARS is
stored pickled under a key of its texts and cuport's code; an entry's HMAC tag makes it as
trustworthy as the native code the cache holds, and one that fails it is parsed again.

The pickle is made to load fast: each function's body is a pickle of its own inside it,
unpickled only when something reads the body (StoredFunction), so a run whose kernels all
come from the cache unpickles none (Thrust's module: 0.10 s and 200,000 objects for the
collector to walk before, 8 ms now); the symbols a body names are kept beside it, so
what a kernel can reach (ptx/callgraph.py: its shared memory) is known without it. In a
body the immutable operands (registers, immediates, addresses) that are equal are stored
once, and every IR object is rebuilt by a call of its class rather than by dataclasses'
generic __setstate__.
"""

from __future__ import annotations

import dataclasses
import io
import pickle
import sys
import threading

from ..ptx import ir
from ..ptx.callgraph import named_symbols
from . import cache
from .gc_pause import gc_paused

#: modules whose texts are shorter (in all) are parsed each time: it takes milliseconds
CACHED_CHARS = 256 * 1024

#: the operand classes (frozen: equal ones may be shared)
_FROZEN = (ir.Reg, ir.Special, ir.Imm, ir.FImm, ir.Sym, ir.Mem, ir.Vec, ir.TexAddr, ir.Sink,
           ir.PredPair, ir.Not, ir.Args, ir.SymAddr)
#: field names of the classes rebuilt by a call (every field is an __init__ argument)
_FIELDS = {cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in (*_FROZEN, ir.Label, ir.Var)}
assert all(f.init for cls in _FIELDS for f in dataclasses.fields(cls))
#: ir.Function's fields, and the slot that holds its body
_FUNCTION_FIELDS = tuple(f.name for f in dataclasses.fields(ir.Function))
_SLOTS = {name: ir.Function.__dict__[name] for name in _FUNCTION_FIELDS}
_BODY = _SLOTS["body"]
#: held while a stored body is unpickled
_loading = threading.Lock()


class _Stored:
    """A body still pickled, and the symbols it names."""

    __slots__ = ("blob", "named")

    def __init__(self, blob: bytes, named: frozenset[str]) -> None:
        self.blob, self.named = blob, named


class StoredFunction(ir.Function):
    """A defined function loaded from the cache whose body is unpickled when it is first
    read; from then on it is an ir.Function like any other (the class is switched back:
    the subclass adds no slots). Copying, pickling or comparing it reads the body first."""

    __slots__ = ()

    def _load(self) -> list:
        with _loading:  # (two threads compiling kernels that call it get the same body)
            raw = _BODY.__get__(self)
            if raw.__class__ is _Stored:
                raw = _unpickle(raw.blob)
                _BODY.__set__(self, raw)
            self.__class__ = ir.Function
            return raw

    @property
    def body(self) -> list | None:
        return self._load()

    @body.setter
    def body(self, value: list | None) -> None:
        _BODY.__set__(self, value)
        self.__class__ = ir.Function

    @property
    def is_definition(self) -> bool:
        return _BODY.__get__(self) is not None

    @property
    def symbols_named(self) -> frozenset[str] | None:
        """What ptx/callgraph.named_symbols would find in the body, without reading it."""
        raw = _BODY.__get__(self)
        return raw.named if raw.__class__ is _Stored else None

    def __eq__(self, other) -> bool:
        self._load()
        return self == other

    def __reduce_ex__(self, protocol):
        self._load()
        return self.__reduce_ex__(protocol)


def _stored_function(values: tuple, blob: bytes, named: frozenset[str]) -> ir.Function:
    f = StoredFunction.__new__(StoredFunction)
    for name, value in zip(_FUNCTION_FIELDS, values, strict=True):
        _SLOTS[name].__set__(f, value)
    _BODY.__set__(f, _Stored(blob, named))
    return f


def _unpickle(blob: bytes):
    with gc_paused():
        return pickle.loads(blob)


class _Pickler(pickle.Pickler):
    def __init__(self, f, bodies: bool = True) -> None:
        super().__init__(f, protocol=pickle.HIGHEST_PROTOCOL)
        self.canon: dict = {}
        self.bodies = bodies  # False: a body is a pickle of its own (the module's pickle)

    def _canon(self, o):
        if type(o) in _FIELDS:
            try:
                return self.canon.setdefault(o, o)
            except TypeError:  # (an operand holding something unhashable)
                return o
        return o

    def reducer_override(self, obj):
        cls = type(obj)
        if cls is ir.Function and not self.bodies and obj.body is not None:
            values = tuple(None if n == "body" else getattr(obj, n) for n in _FUNCTION_FIELDS)
            return _stored_function, (values, _dumps(obj.body), frozenset(named_symbols(obj)))
        if cls is ir.Instr:
            return cls, (obj.op, obj.mods, [self._canon(a) for a in obj.args], self._canon(obj.guard),
                         obj.guard_neg, obj.line, obj.loc)
        names = _FIELDS.get(cls)
        if names is not None:
            return cls, tuple(getattr(obj, n) for n in names)
        return NotImplemented


def _dumps(obj, bodies: bool = True) -> bytes:
    f = io.BytesIO()
    _Pickler(f, bodies).dump(obj)
    return f.getvalue()


def dumps(mod: ir.Module) -> bytes:
    """The module's pickle, each function's body a pickle of its own inside it."""
    return _dumps(mod, bodies=False)


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
