"""The on-disk kernel cache.

Key: a hash of the PTX text, the kernel, its block shape, cuport's version, the host CPU's
name and features, and the compile options. An entry is an object file plus a small JSON
record that carries the object's SHA-256: an entry whose object does not match is treated
as missing and rebuilt. Entries are written to a temporary name and renamed into place,
so several processes can fill the cache at once; the last rename wins and every reader
sees a whole entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path


def cache_dir() -> Path:
    env = os.environ.get("CUPORT_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cuport"


def enabled() -> bool:
    return os.environ.get("CUPORT_CACHE", "1") not in ("0", "off", "no")


_fingerprint: str | None = None


def code_fingerprint() -> str:
    """A hash of the compiler's own source: a changed cuport never reuses stale objects."""
    global _fingerprint
    if _fingerprint is None:
        root = Path(__file__).resolve().parents[2]
        h = hashlib.sha256()
        for sub in ("ptx", "passes", "isa", "backends"):
            for p in sorted((root / sub).rglob("*.py")):
                h.update(p.relative_to(root).as_posix().encode())
                h.update(p.read_bytes())
        _fingerprint = h.hexdigest()[:16]
    return _fingerprint


def make_key(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        b = p.encode()
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def load(key: str) -> tuple[bytes, dict] | None:
    if not enabled():
        return None
    d = cache_dir()
    meta_p = d / f"{key}.json"
    obj_p = d / f"{key}.o"
    try:
        meta = json.loads(meta_p.read_text())
        obj = obj_p.read_bytes()
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("sha256") != hashlib.sha256(obj).hexdigest():
        return None
    return obj, meta


def store(key: str, obj: bytes, meta: dict) -> None:
    if not enabled():
        return
    d = cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        meta = dict(meta, sha256=hashlib.sha256(obj).hexdigest())
        for suffix, data in ((".o", obj), (".json", json.dumps(meta).encode())):
            fd, tmp = tempfile.mkstemp(dir=d, prefix=key[:16], suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, d / f"{key}{suffix}")
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
    except OSError:
        pass  # a cache that cannot be written is only slower
