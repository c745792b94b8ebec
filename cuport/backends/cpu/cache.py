"""The on-disk kernel cache.

Key: a hash of the PTX text, the kernel, its block shape, cuport's version, the host CPU's
name and features, and the compile options. An entry is an object file plus a small JSON
record that carries the object's SHA-256: an entry whose object does not match is treated
as missing and rebuilt. Entries are written to a temporary name and renamed into place,
so several processes can fill the cache at once; the last rename wins and every reader
sees a whole entry.

Size: at most CUPORT_CACHE_MAX_MB (default 1024). A hit marks its entry as used; once a
process has written about a tenth of the limit (and at its first write) it removes the
least recently used entries until the cache is at 80% of the limit, and leftover
temporary files of writers that died.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
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
    with contextlib.suppress(OSError):
        os.utime(obj_p)  # recently used: kept longest
    return obj, meta


def max_bytes() -> int:
    try:
        return int(float(os.environ.get("CUPORT_CACHE_MAX_MB", "1024")) * (1 << 20))
    except ValueError:
        return 1 << 30


_written_since_prune: int | None = None  # None: not pruned yet in this process


def prune(d: Path, limit: int) -> None:
    """Remove least recently used entries until the cache is at 80% of `limit`."""
    entries: dict[str, list] = {}  # key -> [newest mtime, total size, paths]
    now = time.time()
    with os.scandir(d) as it:
        for e in it:
            try:
                st = e.stat()
            except OSError:
                continue
            if e.name.endswith(".tmp"):
                if now - st.st_mtime > 3600:
                    with contextlib.suppress(OSError):
                        os.unlink(e.path)
                continue
            key, _, suffix = e.name.rpartition(".")
            if suffix not in ("o", "json"):
                continue
            rec = entries.setdefault(key, [0.0, 0, []])
            rec[0] = max(rec[0], st.st_mtime)
            rec[1] += st.st_size
            rec[2].append(e.path)
    total = sum(r[1] for r in entries.values())
    if total <= limit:
        return
    for _, size, paths in sorted(entries.values(), key=lambda r: r[0]):
        if total <= limit * 0.8:
            break
        for path in paths:
            with contextlib.suppress(OSError):
                os.unlink(path)
        total -= size


def _maybe_prune(d: Path, written: int) -> None:
    global _written_since_prune
    limit = max_bytes()
    if _written_since_prune is not None:
        _written_since_prune += written
        if _written_since_prune < limit // 10:
            return
    _written_since_prune = 0
    with contextlib.suppress(OSError):
        prune(d, limit)


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
        return  # a cache that cannot be written is only slower
    _maybe_prune(d, len(obj))
