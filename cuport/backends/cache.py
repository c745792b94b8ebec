"""The on-disk kernel cache: compiled kernels that only their owner can put there (the CPU
backend's native code, the Vulkan backend's SPIR-V).

Key: a hash of the PTX text, the kernel, its block shape, cuport's version, and what the
code was compiled for (the host CPU's name and features and the compile options: cpu/
backend.py; the device's capabilities: vulkan/backend.py).

Trust. Code from the cache is executed, so the cache is used only when nobody else
could have written it:
- the directory must be owned by this user and writable by nobody else; cuport creates it
  (and every missing parent) 0700 whatever the umask. A directory that fails the test is
  not used at all: cuport says so once and compiles every kernel anew;
- an entry (`<key>.k`, one file) is read only if it is a regular file (opened without
  following a link and without blocking: a FIFO or a link to /dev/zero is refused),
  owned by this user, writable by nobody else and no larger than the cache's size limit;
- an entry is used only if its tag verifies: HMAC-SHA256, under a secret kept in the
  directory's 0600 file `hmac.key`, over the key, the entry's record and its object. An
  entry copied under another kernel's key, or corrupt, is treated as missing and rebuilt.
Every access goes through one descriptor of the directory, opened and checked once, so
the directory cannot be swapped under a running process. CUPORT_CACHE=0: the directory
is neither read nor written.

Entries are written to a temporary name and renamed into place, so several processes can
fill the cache at once; the last rename wins and every reader sees a whole entry.

Size: at most CUPORT_CACHE_MAX_MB (default 1024). A hit marks its entry as used (its mtime,
at most once an hour); once a process has written about a tenth of the limit (and at its
first write) it removes the least recently used entries until the cache is at 80% of the
limit, and leftover temporary files of writers that died.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ENTRY_SUFFIX = ".k"
SECRET_FILE = "hmac.key"
MAGIC = b"CUPORTK1"
TAG_BYTES = 32
# files of earlier cuport versions (object + record, unauthenticated): never read, removed
_LEGACY = re.compile(r"[0-9a-f]{64}\.(o|json)|guard-[0-9a-f]{16}\.so")
_ENTRY = re.compile(r"[0-9a-f]{64}\.k")
#: a hit marks an entry used (its mtime, which pruning goes by) unless it was within this
#: many seconds: a cached run reads ~100 entries (kernels, cuport's bytecode), each a write
#: of the file's metadata otherwise
_USED_WITHIN = 3600
_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def cache_dir() -> Path:
    env = os.environ.get("CUPORT_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cuport"


def enabled() -> bool:
    return os.environ.get("CUPORT_CACHE", "1") not in ("0", "off", "no")


_fingerprint: str | None = None


#: cuport's package directory, whose compiler sources code_fingerprint hashes
COMPILER_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _compiler_sources() -> list[tuple[str, os.DirEntry]]:
    """The compiler's source files: (path under cuport/, its directory entry), sorted."""
    root = COMPILER_ROOT
    out = []
    todo = [os.path.join(root, sub) for sub in ("ptx", "passes", "isa", "backends")]
    while todo:
        with os.scandir(todo.pop()) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False) and e.name != "__pycache__":
                    todo.append(e.path)
                elif e.name.endswith(".py") and e.is_file():
                    out.append((os.path.relpath(e.path, root).replace(os.sep, "/"), e))
    return sorted(out, key=lambda f: f[0])


def code_fingerprint() -> str:
    """A hash of the compiler's own source: a changed cuport never reuses stale objects.

    Reading and hashing its ~140 files (1.8 MB) took 6-9 ms of every start, a cached run's
    included; the hash is kept in the cache under the files' names, sizes and modification
    times (what Python's own .pyc checks, to the nanosecond here), in the cache's `python`
    directory with cuport's bytecode, so a start with the sources unchanged lists them and
    reads one verified entry (~1 ms)."""
    global _fingerprint
    if _fingerprint is None:
        files = _compiler_sources()
        stamps = []
        for rel, e in files:
            st = e.stat()
            stamps.append(f"{rel}|{st.st_size}|{st.st_mtime_ns}")
        key = make_key("code fingerprint", *stamps)
        own = cache_dir() / "python"  # (beside cuport's bytecode: not a kernel's entry)
        hit = load(key, own)
        if hit is not None and re.fullmatch(rb"[0-9a-f]{16}", hit[0]):
            _fingerprint = hit[0].decode()
        else:
            h = hashlib.sha256()
            for rel, e in files:
                h.update(rel.encode())
                with open(e.path, "rb") as f:
                    h.update(f.read())
            _fingerprint = h.hexdigest()[:16]
            store(key, _fingerprint.encode(), {"code fingerprint": True}, own)
    return _fingerprint


def make_key(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        b = p.encode()
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def max_bytes() -> int:
    try:
        return int(float(os.environ.get("CUPORT_CACHE_MAX_MB", "1024")) * (1 << 20))
    except ValueError:
        return 1 << 30


# -- trust --------------------------------------------------------------------------------

def untrusted_because(st: os.stat_result) -> str | None:
    """Why a file or directory with this status could hold another user's writing, or None."""
    me = os.geteuid()
    if st.st_uid != me:
        return f"it is owned by uid {st.st_uid}, not by you (uid {me})"
    if st.st_mode & 0o022:
        who = "everyone" if st.st_mode & 0o002 else "its group"
        return f"it is writable by {who} (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def make_private_dirs(path: Path) -> None:
    """Create path and its missing parents, each 0700 whatever the umask."""
    missing = []
    p = path
    while not os.path.lexists(p) and p != p.parent:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            continue
        os.chmod(d, 0o700)  # mkdir's mode went through the umask (0777 leaves nothing)


_warned: set[str] = set()


def _warn(subject: str, why: str, once: str | None = None) -> None:
    """Say once per process (per `once`, the subject by default) that something in the
    cache is not used, and why."""
    once = once or subject
    if once in _warned:
        return
    _warned.add(once)
    print(f"cuport: not using {subject}: {why}; kernels it would hold are compiled anew",
          file=sys.stderr)


class _Refused(Exception):
    pass


@dataclass
class _Dir:
    path: str
    fd: int
    secret: bytes


_dirs: dict[str, _Dir | None] = {}
_dirs_lock = threading.Lock()


def _open_dir(path: str) -> _Dir | None:
    """The checked descriptor and secret of a cache directory (created if missing), or None
    where it must not be used (said once)."""
    with _dirs_lock:
        if path in _dirs:
            return _dirs[path]
        d = None
        what = f"the kernel cache {path}"
        try:
            make_private_dirs(Path(path))
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                why = untrusted_because(os.fstat(fd))
                if why:
                    raise _Refused(why)
                d = _Dir(path, fd, _secret(fd))
            except BaseException:
                os.close(fd)
                raise
        except _Refused as e:
            _warn(what, str(e))
        except OSError as e:
            _warn(what, e.strerror or str(e))
        _dirs[path] = d
        return d


def _current_dir(directory: Path | None = None) -> _Dir | None:
    """The cache directory (CUPORT_CACHE_DIR's, or `directory`), checked, if it is on."""
    if not enabled():
        return None
    return _open_dir(str(directory if directory is not None else cache_dir()))


def usable() -> bool:
    """Whether the kernel cache is on and its directory may be used (said once if not)."""
    return _current_dir() is not None


def _read_regular(dir_fd: int, name: str, limit: int, subject: str,
                  once: str | None = None) -> bytes | None:
    """A trusted regular file's bytes (at most limit), or None (missing or refused)."""
    try:
        fd = os.open(name, _OPEN_FILE, dir_fd=dir_fd)
    except OSError:
        return None  # missing, or a symbolic link (ELOOP)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            _warn(subject, "it is not a regular file", once)
            return None
        why = untrusted_because(st)
        if why:
            _warn(subject, why, once)
            return None
        if st.st_size > limit:
            return None
        chunks, size = [], 0
        while size <= st.st_size:  # one byte more than announced: a file that grows is refused
            b = os.read(fd, st.st_size + 1 - size)
            if not b:
                break
            chunks.append(b)
            size += len(b)
        if size != st.st_size:
            return None
        if time.time() - st.st_mtime > _USED_WITHIN:
            with contextlib.suppress(OSError):
                os.utime(fd)  # recently used: kept longest
        return b"".join(chunks)
    finally:
        os.close(fd)


def _write_new(dir_fd: int, name: str, data: bytes) -> None:
    """Write data to name atomically (a private temporary file renamed into place)."""
    tmp = f"{name[:16]}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, _NEW_FILE, 0o600, dir_fd=dir_fd)
    try:
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def _secret(fd: int) -> bytes:
    """The directory's HMAC secret, made on first use (several processes agree: link(2)
    fails for all but the first)."""
    for _ in range(3):
        try:
            kfd = os.open(SECRET_FILE, _OPEN_FILE, dir_fd=fd)
        except FileNotFoundError:
            tmp = f"{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
            tfd = os.open(tmp, _NEW_FILE, 0o600, dir_fd=fd)
            try:
                os.fchmod(tfd, 0o600)
                os.write(tfd, secrets.token_bytes(32))
            finally:
                os.close(tfd)
            try:
                os.link(tmp, SECRET_FILE, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
            except FileExistsError:
                pass
            finally:
                os.unlink(tmp, dir_fd=fd)
            continue
        except OSError as e:
            raise _Refused(f"its {SECRET_FILE} cannot be opened ({e.strerror})") from None
        try:
            st = os.fstat(kfd)
            if not stat.S_ISREG(st.st_mode) or st.st_size != 32:
                raise _Refused(f"its {SECRET_FILE} is not a 32-byte regular file")
            why = untrusted_because(st)
            if why or st.st_mode & 0o077:
                raise _Refused(f"its {SECRET_FILE}: {why or 'readable by others'}")
            data = os.read(kfd, 33)
        finally:
            os.close(kfd)
        if len(data) == 32:
            return data
    raise _Refused(f"its {SECRET_FILE} could not be made")  # pragma: no cover - races only


def _tag(secret: bytes, key: str, body: bytes) -> bytes:
    return hmac.new(secret, key.encode() + b"\0" + body, hashlib.sha256).digest()


# -- entries ------------------------------------------------------------------------------

def load(key: str, directory: Path | None = None) -> tuple[bytes, dict] | None:
    """The object and record stored under key, if an authentic entry is there (in
    `directory`, a cache directory of its own, instead of the kernel cache if given)."""
    d = _current_dir(directory)
    if d is None:
        return None
    name = key + ENTRY_SUFFIX
    data = _read_regular(d.fd, name, max_bytes(), f"the kernel cache entry {d.path}/{name}",
                         once=f"entries of {d.path}")
    head = len(MAGIC) + TAG_BYTES
    if data is None or len(data) < head + 4 or not data.startswith(MAGIC):
        return None
    tag, body = data[len(MAGIC):head], data[head:]
    if not hmac.compare_digest(tag, _tag(d.secret, key, body)):
        return None
    n = int.from_bytes(body[:4], "little")
    try:
        meta = json.loads(body[4:4 + n])
    except ValueError:
        return None
    if not isinstance(meta, dict):
        return None
    return body[4 + n:], meta


def contains(key: str) -> bool:
    """Whether an entry of ours is stored under key, without reading or verifying it: for
    deciding whether to compile a kernel ahead (load, which verifies, decides whether it
    is used; one that fails is compiled at its launch)."""
    d = _current_dir()
    if d is None:
        return False
    try:
        st = os.stat(key + ENTRY_SUFFIX, dir_fd=d.fd, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and untrusted_because(st) is None


def store(key: str, obj: bytes, meta: dict, directory: Path | None = None) -> None:
    d = _current_dir(directory)
    if d is None:
        return
    record = json.dumps(meta).encode()
    body = len(record).to_bytes(4, "little") + record + obj
    data = MAGIC + _tag(d.secret, key, body) + body
    if len(data) > max_bytes():
        return
    try:
        _write_new(d.fd, key + ENTRY_SUFFIX, data)
    except OSError:
        return  # a cache that cannot be written is only slower
    _maybe_prune(d, len(data))


def measured(key: str, what: str, measure: Callable[[], int]) -> int:
    """A figure of the machine that costs time to measure (a clock's rate), kept as a
    verified entry under `key`: read back if there, else measured and stored. A positive
    integer; a stored value that is not one is measured again."""
    hit = load(key)
    value = int(hit[0]) if hit is not None and hit[0].isdigit() else 0
    if value <= 0:
        value = measure()
        store(key, str(value).encode(), {what: True})
    return value

# -- size ---------------------------------------------------------------------------------

_written_since_prune: int | None = None  # None: not pruned yet in this process


def prune(path: Path, limit: int) -> None:
    """Remove least recently used entries until the cache is at 80% of `limit`."""
    d = _open_dir(str(path))
    if d is not None:
        _prune(d.fd, limit)


def _prune(fd: int, limit: int) -> None:
    entries: list[tuple[float, int, str]] = []  # (mtime, size, name)
    now = time.time()
    with os.scandir(fd) as it:
        for e in it:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if e.name.endswith(".tmp"):
                if now - st.st_mtime > 3600:
                    with contextlib.suppress(OSError):
                        os.unlink(e.name, dir_fd=fd)
            elif _LEGACY.fullmatch(e.name):
                with contextlib.suppress(OSError):
                    os.unlink(e.name, dir_fd=fd)
            elif _ENTRY.fullmatch(e.name):
                entries.append((st.st_mtime, st.st_size, e.name))
    total = sum(size for _, size, _ in entries)
    if total <= limit:
        return
    for _, size, name in sorted(entries):
        if total <= limit * 0.8:
            break
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=fd)
        total -= size


def _maybe_prune(d: _Dir, written: int) -> None:
    global _written_since_prune
    limit = max_bytes()
    if _written_since_prune is not None:
        _written_since_prune += written
        if _written_since_prune < limit // 10:
            return
    _written_since_prune = 0
    with contextlib.suppress(OSError):
        _prune(d.fd, limit)
