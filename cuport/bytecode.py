"""cuport's own modules compiled once, kept in the kernel cache where Python keeps no .pyc.

With PYTHONDONTWRITEBYTECODE (or `python -B`) and no .pyc files beside cuport's sources (an
editable install never compiles them), every process that loads cuport compiles the ~200
modules it imports anew: 0.17 s of CPU at each start of a C program on the 2-core dev VM,
a third of what a cached vector add cost (0.47 s). There (and only there) cuport keeps each
module's code object in the directory `python` of its kernel cache (a cache directory of
its own, backends/cache.py, in the cache the process started with), under the trust rules
of the native code the cache holds: an entry is used only when it is a file of the user's
own whose HMAC verifies, else the module is compiled from its source as before. The key is
the source's path and bytes and the interpreter's bytecode version, so an edited module is
compiled again. A .pyc that Python finds beside the source still comes first; CUPORT_CACHE=0
turns this off with the rest of the cache.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import marshal
import sys
import types
from pathlib import Path

#: what the entries are made for: a bytecode format belongs to one interpreter version
_VERSION = f"{sys.implementation.cache_tag}|{importlib.util.MAGIC_NUMBER.hex()}"


#: where the entries are (set by install)
_directory: Path | None = None


class _Loader(importlib.machinery.SourceFileLoader):
    """Python's loader of a source file, whose compile goes through the cache."""

    def source_to_code(self, data, path, *, _optimize=-1):
        from .backends import cache

        key = cache.make_key("python bytecode", _VERSION, str(_optimize), str(path),
                             hashlib.sha256(bytes(data)).hexdigest())
        hit = cache.load(key, _directory)  # (verified: HMAC, owner, regular file)
        if hit is not None:
            try:
                code = marshal.loads(hit[0])
            except (EOFError, ValueError, TypeError):
                code = None
            if isinstance(code, types.CodeType):
                return code
        code = super().source_to_code(data, path, _optimize=_optimize)
        cache.store(key, marshal.dumps(code), {"python bytecode": True}, _directory)
        return code


class _Finder:
    """Finds cuport's submodules as Python's path finder does, with _Loader for sources."""

    @staticmethod
    def find_spec(name: str, path=None, target=None):
        if not name.startswith("cuport.") or path is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _Loader(spec.loader.name, spec.loader.path)
        return spec

    @staticmethod
    def invalidate_caches() -> None:
        pass


def install() -> None:
    """Compile cuport's modules through the cache from now on, where Python writes no
    bytecode and the cache is on (once per process)."""
    if not sys.dont_write_bytecode or _Finder in sys.meta_path:
        return
    global _directory
    from .backends import cache  # (imported first: the loader needs it)

    if cache.usable():  # (a directory nobody else can write to: so is the one made in it)
        _directory = cache.cache_dir() / "python"
        sys.meta_path.insert(0, _Finder)
