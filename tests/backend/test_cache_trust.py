"""Nothing another user could have written is executed: the kernel cache and the guard.

The cache directory and its entries are used only when they are this user's and writable
by nobody else, each entry only when its HMAC (over its key) verifies; the memory-fault
guard is loaded from cuport's own files only. Planted files here are owned by `nobody`
(root runs these tests: it can chown) or world-writable, or are entries copied from
another kernel's key, FIFOs, links to /dev/zero and oversized files.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import cuport
from cuport.backends import cache
from cuport.backends.cpu import guard
from cuport.backends.cpu.backend import get_cpu_backend

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534

KERNEL = r"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry {name}(.param .u64 p)
{{
    .reg .b32 %r<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.u64 %rd3, %rd1, %rd2;
    ld.global.u32 %r2, [%rd3];
    {op}
    st.global.u32 [%rd3], %r2;
    ret;
}}
"""
ADD1 = KERNEL.format(name="k_add1", op="add.u32 %r2, %r2, 1;")
MUL2 = KERNEL.format(name="k_mul2", op="mul.lo.u32 %r2, %r2, 2;")

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="planting a file owned by another "
                                                           "user needs root (chown)")


def run(ptx: str, name: str) -> np.ndarray:
    x = np.arange(64, dtype=np.uint32) + 10
    cuport.Module(ptx).kernel(name)(1, 64, (x,))
    return x


def compiles() -> int:
    return get_cpu_backend().stats["compiles"]


def entries(d: Path) -> set[Path]:
    return set(d.glob("*.k"))


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("CUPORT_CACHE_DIR", str(d))
    monkeypatch.setenv("CUPORT_CACHE", "1")
    return d


def test_directories_cuport_creates_are_0700_whatever_the_umask(tmp_path, monkeypatch):
    d = tmp_path / "a" / "b" / "cache"
    monkeypatch.setenv("CUPORT_CACHE_DIR", str(d))
    monkeypatch.setenv("CUPORT_CACHE", "1")
    old = os.umask(0)
    try:
        assert (run(ADD1, "k_add1") == np.arange(64) + 11).all()
    finally:
        os.umask(old)
    for p in (tmp_path / "a", tmp_path / "a" / "b", d):
        assert stat.S_IMODE(p.stat().st_mode) == 0o700, p
    assert stat.S_IMODE((d / cache.SECRET_FILE).stat().st_mode) == 0o600
    (entry,) = entries(d)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600


def test_an_entry_under_another_kernels_key_is_not_run(cache_dir):
    run(ADD1, "k_add1")
    (add1,) = entries(cache_dir)
    run(MUL2, "k_mul2")
    (mul2,) = entries(cache_dir) - {add1}
    shutil.copyfile(mul2, add1)  # k_mul2's code under k_add1's key
    c0 = compiles()
    assert (run(ADD1, "k_add1") == np.arange(64) + 11).all()  # not in*2
    assert compiles() == c0 + 1
    c0 = compiles()
    assert (run(ADD1, "k_add1") == np.arange(64) + 11).all()  # the rebuilt entry is used
    assert compiles() == c0


def test_entries_from_another_cache_do_not_verify(tmp_path, monkeypatch):
    """The tag's secret is the directory's own: an entry carried over from another cache
    directory (another user's, say) is not used."""
    monkeypatch.setenv("CUPORT_CACHE", "1")
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        monkeypatch.setenv("CUPORT_CACHE_DIR", str(d))
        run(MUL2, "k_mul2")
    (ea,), (eb,) = entries(a), entries(b)
    shutil.copyfile(ea, eb)
    c0 = compiles()
    run(MUL2, "k_mul2")
    assert compiles() == c0 + 1


def _plant_valid_entry(cache_dir: Path) -> Path:
    run(ADD1, "k_add1")
    (entry,) = entries(cache_dir)
    return entry


@needs_root
def test_an_entry_owned_by_another_user_is_not_run(cache_dir, capfd):
    entry = _plant_valid_entry(cache_dir)
    os.chown(entry, NOBODY, NOBODY)
    c0 = compiles()
    assert (run(ADD1, "k_add1") == np.arange(64) + 11).all()
    assert compiles() == c0 + 1
    assert "owned by uid 65534" in capfd.readouterr().err


def test_a_world_writable_entry_is_not_run(cache_dir, capfd):
    entry = _plant_valid_entry(cache_dir)
    entry.chmod(0o666)
    c0 = compiles()
    run(ADD1, "k_add1")
    assert compiles() == c0 + 1
    assert "writable by everyone" in capfd.readouterr().err


@needs_root
def test_a_directory_owned_by_another_user_is_not_used(cache_dir, capfd):
    _plant_valid_entry(cache_dir)
    other = cache_dir.with_name("other")
    shutil.copytree(cache_dir, other)
    for p in (other, *other.iterdir()):
        os.chown(p, NOBODY, NOBODY)
    os.environ["CUPORT_CACHE_DIR"] = str(other)  # (monkeypatch restores it)
    before = sorted(p.name for p in other.iterdir())
    c0 = compiles()
    run(ADD1, "k_add1")
    run(ADD1, "k_add1")
    assert compiles() == c0 + 2  # neither read nor written: uncached
    assert sorted(p.name for p in other.iterdir()) == before
    err = capfd.readouterr().err
    assert err.count(f"not using the kernel cache {other}") == 1  # said once
    assert "owned by uid 65534" in err


def test_a_world_writable_directory_is_not_used(cache_dir, capfd):
    _plant_valid_entry(cache_dir)
    other = cache_dir.with_name("open")
    shutil.copytree(cache_dir, other)
    other.chmod(0o1777)
    os.environ["CUPORT_CACHE_DIR"] = str(other)
    c0 = compiles()
    run(ADD1, "k_add1")
    assert compiles() == c0 + 1
    assert "writable by everyone" in capfd.readouterr().err


def test_cache_off_reads_nothing(cache_dir, monkeypatch):
    _plant_valid_entry(cache_dir)
    monkeypatch.setenv("CUPORT_CACHE", "0")
    before = {p: p.stat().st_mtime_ns for p in cache_dir.iterdir()}
    c0 = compiles()
    run(ADD1, "k_add1")
    assert compiles() == c0 + 1
    assert {p: p.stat().st_mtime_ns for p in cache_dir.iterdir()} == before


def _run_in_child(cache_dir: Path, code: str, timeout: float = 120, **env) -> subprocess.CompletedProcess:
    prog = f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + textwrap.dedent(code)
    full = {**os.environ, "CUPORT_CACHE_DIR": str(cache_dir), "CUPORT_CACHE": "1", **env}
    return subprocess.run([sys.executable, "-c", prog], env=full, capture_output=True,
                          text=True, timeout=timeout)


CHILD_RUN = f"""
import numpy as np, cuport
x = np.arange(64, dtype=np.uint32) + 10
cuport.Module({ADD1!r}).kernel("k_add1")(1, 64, (x,))
assert (x == np.arange(64) + 11).all(), x
print("ok")
"""


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "oversized"])
def test_entries_that_are_not_small_regular_files_are_refused_at_once(cache_dir, kind):
    entry = _plant_valid_entry(cache_dir)
    entry.unlink()
    if kind == "fifo":
        os.mkfifo(entry, 0o600)  # reading it would wait for a writer forever
    elif kind == "dev-zero":
        entry.symlink_to("/dev/zero")  # reading it would never end
    else:
        with open(entry, "wb") as f:
            f.truncate(64 << 30)  # sparse, 64 GiB: over the size limit
    r = _run_in_child(cache_dir, CHILD_RUN, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


EVIL_LIBRARY = r"""
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void)
{
    const char *marker = getenv("PLANTED_MARKER");
    if (marker) close(open(marker, O_CREAT | O_WRONLY, 0644));
}
void cuport_guard_install(void) {}
int cuport_guarded_call(void) { return 0; }
"""

FAULTING = r"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry wild(.param .u64 p)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, 7;
    st.global.u32 [%rd1], %r1;
    ret;
}
"""

CHILD_FAULT = f"""
import cuport
from cuport.backends.cpu import guard
native = __import__("os").environ.get("PLANTED_NATIVE")
if native:
    guard.NATIVE = __import__("pathlib").Path(native)
try:
    cuport.Module({FAULTING!r}).kernel("wild")(1, 32, (cuport.Pointer(0x10),))
except cuport.BackendError as e:
    print(e.code)
"""


@pytest.fixture(scope="module")
def evil_library(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("evil")
    (d / "evil.c").write_text(EVIL_LIBRARY)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(d / "evil.so"), str(d / "evil.c")],
                   check=True)
    return d / "evil.so"


def _plant(src: Path, dst: Path) -> None:
    shutil.copyfile(src, dst)
    dst.chmod(0o755)
    if os.geteuid() == 0:
        os.chown(dst, NOBODY, NOBODY)
    else:
        dst.chmod(0o777)


@pytest.mark.parametrize("cache_on", ["1", "0"])
def test_a_guard_library_planted_in_the_cache_is_never_loaded(tmp_path, evil_library, cache_on):
    """Earlier versions loaded $CUPORT_CACHE_DIR/guard-<hash>.so whenever it was there."""
    d = tmp_path / "cache"
    d.mkdir(mode=0o777)
    d.chmod(0o777)
    digest = hashlib.sha256(guard.SOURCE.read_bytes()).hexdigest()[:16]
    for name in (f"guard-{digest}.so", guard.library_name()):
        _plant(evil_library, d / name)
    marker = tmp_path / "marker"
    r = _run_in_child(d, CHILD_FAULT, CUPORT_CACHE=cache_on, PLANTED_MARKER=str(marker))
    assert not marker.exists(), "the planted library ran"
    assert r.stdout.split() == ["700"], r.stderr  # and the real guard caught the fault


def test_a_planted_guard_in_the_package_folder_is_not_loaded(tmp_path, evil_library):
    native = tmp_path / "native"
    native.mkdir()
    _plant(evil_library, native / guard.library_name())
    marker = tmp_path / "marker"
    r = _run_in_child(tmp_path / "cache", CHILD_FAULT, PLANTED_NATIVE=str(native),
                      PLANTED_MARKER=str(marker))
    assert not marker.exists(), "the planted library ran"
    assert r.stdout.split() == ["700"], r.stderr
    assert "not loading the memory-fault guard" in r.stderr


def test_the_installed_guard_is_the_package_s_own():
    """pip install (setup.py) compiles the guard into cuport/_native/, next to libcuda.so.1."""
    path = guard.NATIVE / guard.library_name()
    assert path.is_file()
    guard.load(path)


def test_a_guard_that_does_not_compile_says_why(tmp_path, monkeypatch):
    """A failed build of the guard is an OSError carrying the compiler's message (library()
    prints it and runs kernels without the guard); it leaves no file behind."""
    monkeypatch.setattr(guard, "_command", lambda sources, target: [
        sys.executable, "-c", "import sys; sys.exit('guard.c:1: error: no compiler here')"])
    with pytest.raises(guard.BuildFailed, match="no compiler here"):
        guard.build(tmp_path)
    assert list(tmp_path.iterdir()) == []


def _import_in_child(cache_dir: Path, tmp_path: Path, module: str) -> subprocess.CompletedProcess:
    """`python -B` importing `module` with no .pyc to be found (bytecode.py's case), and
    printing its MARKER if it has one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUPORT_")}
    env.update(CUPORT_CACHE_DIR=str(cache_dir), PYTHONPYCACHEPREFIX=str(tmp_path / "no-pyc"),
               PYTHONPATH=str(ROOT))
    code = f"import {module} as m; print(getattr(m, 'MARKER', 'source'))"
    return subprocess.run([sys.executable, "-B", "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)


def test_cuport_s_own_bytecode_is_run_only_from_entries_that_verify(tmp_path):
    """Where Python keeps no .pyc (`-B`), cuport's modules are compiled once into the cache
    (cuport/bytecode.py): an entry is used when its tag verifies (here one planted with the
    directory's secret, holding other code, is what the import runs), and one under the same
    key with another tag is never run: the module is compiled from its source again."""
    from cuport import bytecode
    from cuport.capi import md2

    d = tmp_path / "cache"
    r = _import_in_child(d, tmp_path, "cuport.capi.md2")
    assert r.returncode == 0 and r.stdout.split() == ["source"], r.stderr
    source = Path(md2.__file__)
    key = cache.make_key("python bytecode", bytecode._VERSION, "-1", str(source),
                         hashlib.sha256(source.read_bytes()).hexdigest())
    entry = d / "python" / f"{key}.k"
    assert entry.is_file()  # stored by the first import

    planted = marshal.dumps(compile("MARKER = 'from the cache'", str(source), "exec"))
    cache.store(key, planted, {"python bytecode": True}, d / "python")
    r = _import_in_child(d, tmp_path, "cuport.capi.md2")
    assert r.stdout.split() == ["from", "the", "cache"], r.stderr

    data = bytearray(entry.read_bytes())
    data[len(cache.MAGIC)] ^= 0xFF  # the tag: the same code, not verifiable
    entry.write_bytes(bytes(data))
    r = _import_in_child(d, tmp_path, "cuport.capi.md2")
    assert r.returncode == 0 and r.stdout.split() == ["source"], r.stderr
    hit = cache.load(key, d / "python")  # compiled anew and stored again
    assert hit is not None and hit[0] != planted
