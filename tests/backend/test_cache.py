"""The on-disk kernel cache: reuse, corruption detection, several processes at once."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cuport
from cuport.backends.cpu.backend import get_cpu_backend
from cuport.ptx import ir

PTX = r"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry scale(.param .u64 p, .param .f32 s, .param .u32 n)
{
    .reg .pred %q;
    .reg .b32 %r<4>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    ld.param.f32 %f1, [s];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %ctaid.x;
    mad.lo.u32 %r2, %r3, 128, %r2;
    setp.ge.u32 %q, %r2, %r1;
    @%q bra END;
    mul.wide.u32 %rd2, %r2, 4;
    add.u64 %rd3, %rd1, %rd2;
    ld.global.f32 %f2, [%rd3];
    mul.f32 %f2, %f2, %f1;
    st.global.f32 [%rd3], %f2;
END:
    ret;
}
"""


def run_scale(seed: int) -> None:
    x = np.arange(1000, dtype=np.float32) + seed
    cuport.Module(PTX).kernel("scale")(8, 128, (x, 2.0, 1000))
    assert (x == (np.arange(1000, dtype=np.float32) + seed) * 2).all()


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("CUPORT_CACHE_DIR", str(d))
    monkeypatch.setenv("CUPORT_CACHE", "1")
    return d


def test_second_load_comes_from_the_cache(cache_dir):
    be = get_cpu_backend()
    c0, h0 = be.stats["compiles"], be.stats["cache_hits"]
    run_scale(1)
    assert be.stats["compiles"] == c0 + 1
    assert len(list(cache_dir.glob("*.k"))) == 1
    run_scale(2)  # a new module of the same PTX: no compilation
    assert be.stats["compiles"] == c0 + 1
    assert be.stats["cache_hits"] == h0 + 1


def test_a_corrupt_entry_is_rebuilt(cache_dir):
    be = get_cpu_backend()
    run_scale(3)
    (entry,) = cache_dir.glob("*.k")
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(bytes(data))
    c0 = be.stats["compiles"]
    run_scale(4)
    assert be.stats["compiles"] == c0 + 1  # detected by its tag, compiled again
    run_scale(5)
    assert be.stats["compiles"] == c0 + 1  # and the rebuilt entry is good


def test_truncated_entry_is_rebuilt(cache_dir):
    be = get_cpu_backend()
    run_scale(6)
    (entry,) = cache_dir.glob("*.k")
    entry.write_bytes(entry.read_bytes()[:50])
    c0 = be.stats["compiles"]
    run_scale(7)
    assert be.stats["compiles"] == c0 + 1


def test_several_processes_fill_the_cache_at_once(cache_dir):
    root = Path(__file__).resolve().parents[2]
    code = (
        f"import sys; sys.path.insert(0, {str(root)!r}); sys.path.insert(0, {str(Path(__file__).parent)!r}); "
        "from test_cache import run_scale; run_scale(int(sys.argv[1])); print('ok')"
    )
    env = dict(os.environ, CUPORT_CACHE_DIR=str(cache_dir))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(i)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(4)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert out.strip() == "ok"
    assert len(list(cache_dir.glob("*.k"))) == 1
    assert not list(cache_dir.glob("*.tmp"))
    run_scale(9)  # and what they left is a valid entry


def test_cache_keeps_to_its_size_limit_dropping_least_recently_used(tmp_path, monkeypatch):
    from cuport.backends import cache

    monkeypatch.setenv("CUPORT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CUPORT_CACHE", "1")
    for i in range(10):  # 10 entries of ~1 KiB, each older than the next
        key = cache.make_key(f"entry {i}")
        cache.store(key, bytes(1000), {"i": i})
        os.utime(tmp_path / f"{key}.k", (1000 + i, 1000 + i))
    assert cache.load(cache.make_key("entry 2")) is not None  # used now: kept
    (tmp_path / "stale.tmp").write_bytes(b"x")
    os.utime(tmp_path / "stale.tmp", (1, 1))
    cache.prune(tmp_path, 6 * 1100)
    kept = {i for i in range(10) if cache.load(cache.make_key(f"entry {i}")) is not None}
    assert 2 in kept and 9 in kept and 0 not in kept and 1 not in kept
    assert len(kept) * 1000 <= 6 * 1100 * 0.8 + 1000
    assert not (tmp_path / "stale.tmp").exists()


def test_a_big_module_is_parsed_once(cache_dir, monkeypatch):
    """A module of 256 KiB or more keeps its parsed, checked form in the cache: a second
    load does not parse, and an entry whose tag fails is parsed again."""
    from cuport.backends import facts, module_cache

    big = PTX + "// " + "x" * module_cache.CACHED_CHARS + "\n"
    run = []
    parse = facts.ptx.load

    def counting_load(texts, *a):
        run.append(len(texts))
        return parse(texts, *a)
    monkeypatch.setattr(facts.ptx, "load", counting_load)

    def scale(seed: int) -> None:
        x = np.arange(1000, dtype=np.float32) + seed
        cuport.Module(big).kernel("scale")(8, 128, (x, 2.0, 1000))
        assert (x == (np.arange(1000, dtype=np.float32) + seed) * 2).all()

    scale(1)
    assert run == [1] and len(list(cache_dir.glob("*.k"))) == 2  # the module and the kernel
    scale(2)
    assert run == [1]  # from the cache
    (module_entry,) = [p for p in cache_dir.glob("*.k") if b'"ptx module"' in p.read_bytes()]
    data = bytearray(module_entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    module_entry.write_bytes(bytes(data))
    scale(3)
    assert run == [1, 1]  # parsed again
    # a small module is parsed each time
    run_scale(4)
    run_scale(5)
    assert run == [1, 1, 1, 1]


TILE = r"""
.shared .align 4 .b8 tile_buf[512];
.visible .entry tile(.param .u64 p)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    mov.u64 %rd3, tile_buf;
    add.u64 %rd4, %rd3, %rd2;
    st.shared.u32 [%rd4], %r1;
    bar.sync 0;
    ld.shared.u32 %r2, [%rd4];
    add.u64 %rd4, %rd1, %rd2;
    st.global.u32 [%rd4], %r2;
    ret;
}
"""


def test_a_cached_module_s_launches_read_no_ptx_body(cache_dir):
    """A module from the cache keeps each function's body pickled until something reads it
    (module_cache.StoredFunction): what its kernels need (parameters, the shared memory their
    code names) comes without it, a launch whose code is cached reads none, and a kernel
    never launched is neither compiled nor loaded."""
    from cuport.backends import module_cache

    big = PTX + TILE + "// " + "x" * module_cache.CACHED_CHARS + "\n"
    x = np.arange(1000, dtype=np.float32)
    cuport.Module(big).kernel("scale")(8, 128, (x, 2.0, 1000))  # parsed, stored, compiled
    be = get_cpu_backend()
    c0 = be.stats["compiles"]
    m = cuport.Module(big)
    functions = m._m.ptx.functions
    assert {type(f) for f in functions.values()} == {module_cache.StoredFunction}
    assert m._m.kernel("tile").info.static_shared_bytes == 512
    assert m._m.kernel("scale").info.static_shared_bytes == 0
    m.kernel("scale")(8, 128, (x, 2.0, 1000))
    assert (x == np.arange(1000, dtype=np.float32) * 4).all()
    assert be.stats["compiles"] == c0  # from the cache
    assert {type(f) for f in functions.values()} == {module_cache.StoredFunction}
    assert functions["tile"].body is not None  # read when asked for: an ir.Function again
    assert type(functions["tile"]) is ir.Function and functions["tile"].is_definition


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc builds the modules")
@pytest.mark.parametrize("program", ["textures", "warp_vote", "wmma", "atomics"])
def test_a_cached_module_is_the_module(program, tmp_path):
    """The pickle module_cache keeps (equal operands stored once, objects rebuilt by their
    classes) loads as a module equal to the parsed one: texture addresses, predicate
    pairs, negations, vectors and initialised variables included."""
    import pickle

    from cuport import ptx
    from cuport.backends import module_cache

    src = Path(__file__).resolve().parents[1] / "programs" / f"{program}.cu"
    out = tmp_path / "m.ptx"
    subprocess.run(["nvcc", "-ptx", "-O3", "-arch=sm_90", "-o", str(out), str(src)], check=True)
    mod = ptx.load([out.read_text()])
    again = pickle.loads(module_cache.dumps(mod))
    assert again == mod and len(again.functions) == len(mod.functions) > 0


def test_the_compiler_fingerprint_follows_its_sources(tmp_path, monkeypatch):
    """Every key holds a hash of the compiler's sources; a start reads it from the cache
    while the sources' names, sizes and modification times are those it was made for, and
    hashes them again when one changes or the stored hash does not verify."""
    import hashlib

    from cuport.backends import cache

    root = tmp_path / "cuport"
    for sub in ("ptx", "passes", "isa", "backends/cpu"):
        (root / sub).mkdir(parents=True)
    (root / "ptx" / "parser.py").write_text("parse = 1\n")
    (root / "backends" / "cpu" / "emit.py").write_text("emit = 2\n")
    (root / "backends" / "notes.txt").write_text("not a source\n")
    monkeypatch.setattr(cache, "COMPILER_ROOT", str(root))
    monkeypatch.setenv("CUPORT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CUPORT_CACHE", "1")

    def fingerprint() -> str:
        monkeypatch.setattr(cache, "_fingerprint", None)
        return cache.code_fingerprint()

    def hashed() -> str:
        h = hashlib.sha256()
        for rel in ("backends/cpu/emit.py", "ptx/parser.py"):
            h.update(rel.encode())
            h.update((root / rel).read_bytes())
        return h.hexdigest()[:16]

    first = fingerprint()
    assert first == hashed()
    (entry,) = (tmp_path / "cache" / "python").glob("*.k")
    assert entry.read_bytes().endswith(first.encode())
    assert fingerprint() == first  # from the entry
    entry.write_bytes(entry.read_bytes()[:-16] + b"0123456789abcdef")  # its tag fails now
    assert fingerprint() == first  # hashed again
    (root / "ptx" / "parser.py").write_text("parse = 3\n")  # an edit: a new modification time
    assert fingerprint() == hashed() != first


def test_a_hit_marks_its_entry_used_at_most_once_an_hour(cache_dir):
    from cuport.backends import cache

    old, recent = cache.make_key("old"), cache.make_key("recent")
    for key, when in ((old, 1000), (recent, None)):
        cache.store(key, b"x", {})
        if when:
            os.utime(cache_dir / f"{key}.k", (when, when))
    mtime = (cache_dir / f"{recent}.k").stat().st_mtime_ns
    assert cache.load(old) is not None and cache.load(recent) is not None
    assert (cache_dir / f"{old}.k").stat().st_mtime > 1000  # used now: kept longest
    assert (cache_dir / f"{recent}.k").stat().st_mtime_ns == mtime  # not written again
