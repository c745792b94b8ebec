"""cuRAND: cuport's generators against NVIDIA's device code, and the host API.

tests/programs/libs/curand_device.cu runs curand_kernel.h's generators (built by nvcc,
run under cuport); every stream it prints must be what cuport's vectorised engines
(cuport/libs/curand_engines.py) give for the same seed, subsequence and offset: raw bits
and uniforms exactly, normals to a few ulp (the GPU's logf/sinf are approximations).
Where the H200's output of the same program is recorded (tests/libs/recorded/), cuport's
run must match it too. The host API's order over its generator states is checked
against the H200's recording of tests/libs/curand_record.cu.
"""

from __future__ import annotations

import ctypes
import struct
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from capi_support import clean_env, cuport_command, need_nvcc, run
from libs_support import PROGRAMS, find_header, native_dir

from cuport.libs import curand
from cuport.libs import curand_engines as eng

RECORDED = Path(__file__).resolve().parent / "recorded"
U32, U64, F32 = np.uint32, np.uint64, np.float32


# -- curand_kernel.h's device functions on cuport's engines ---------------------------------

ENGINES = {"XORWOW": eng.Xorwow, "MRG32K3A": eng.Mrg32k3a, "PHILOX4_32_10": eng.Philox}


def device_stream(name: str, seed: int, sub: int, off: int, kind: str, count: int,
                  lam: float = 0.0) -> np.ndarray:
    """What `count` calls of curand_<kind> give after curand_init(seed, sub, off)."""
    e = ENGINES[name](seed, np.array([sub]), off)
    mrg = name == "MRG32K3A"

    def draws(n):
        return e.draw(n)[:, 0]

    if kind == "raw":
        d = draws(count)
        return eng.mrg_bits(d) if mrg else d
    if kind == "uniform":
        d = draws(count)
        return (d * eng.MRG_NORM).astype(F32) if mrg else curand.uniform_float(d)
    if kind == "uniform_double":
        if mrg:
            return draws(count) * eng.MRG_NORM
        if name == "PHILOX4_32_10":
            return curand.uniform_double_32(draws(count))
        d = draws(2 * count)
        return curand.uniform_double_hq(d[0::2], d[1::2])
    if kind in ("normal", "log_normal"):
        d = draws(count)
        v = curand.box_muller_mrg(d[0::2], d[1::2]) if mrg else curand.box_muller(d[0::2], d[1::2])
        return np.exp(F32(0.5) + F32(0.75) * v) if kind == "log_normal" else v
    if kind in ("normal_double", "log_normal_double"):
        if mrg:
            d = draws(count)
            v = curand.box_muller_mrg_double(d[0::2], d[1::2])
        else:
            d = draws(2 * count)
            v = curand.box_muller_double(d[0::4], d[1::4], d[2::4], d[3::4])
        return np.exp(0.5 + 0.75 * v) if kind == "log_normal_double" else v
    if kind == "poisson":
        return np.array(device_poisson(name, e, lam, count))
    raise ValueError(kind)


def device_poisson(name: str, e, lam: float, count: int) -> list:
    """curand_poisson, `count` calls on a fresh state, for XORWOW / MRG32k3a / Philox below
    lambda 64 (Knuth) and above 4000 (the normal approximation, from curand_normal_double,
    whose second value of each pair is cached in the state); None in between (the
    rejection method runs on the GPU's approximate rsqrt/ex2/lg2)."""
    if 64 <= lam <= 4000:
        return [None] * count
    if lam > 4000:
        pairs = (count + 1) // 2
        if name == "MRG32K3A":
            d = e.draw(2 * pairs)[:, 0]
            v = curand.box_muller_mrg_double(d[0::2], d[1::2])
        else:
            d = e.draw(4 * pairs)[:, 0]
            v = curand.box_muller_double(d[0::4], d[1::4], d[2::4], d[3::4])
        return [int(np.sqrt(lam) * x + lam + 0.5) for x in v[:count]]
    out = []
    for _ in range(count):
        k, p = 0, np.exp(F32(lam))
        while True:
            k += 1
            d = e.draw(1)[:, 0]
            u = (d * eng.MRG_NORM).astype(F32)[0] if name == "MRG32K3A" else \
                curand.uniform_float(d)[0]
            p = F32(p * u)
            if not p > 1.0:
                out.append(k - 1)
                break
    return out


def as_bits(kind: str, values: np.ndarray) -> list[int]:
    if kind in ("raw",):
        return [int(v) for v in values]
    dt = "<f" if values.dtype == F32 else "<d"
    fmt = "<I" if dt == "<f" else "<Q"
    return [struct.unpack(fmt, struct.pack(dt, float(v)))[0] for v in values]


def from_bits(kind: str, words: list[int], double: bool) -> np.ndarray:
    if double:
        return np.array([struct.unpack("<d", struct.pack("<Q", w))[0] for w in words])
    return np.array([struct.unpack("<f", struct.pack("<I", w))[0] for w in words], F32)


def close_to_gpu(got: np.ndarray, want: np.ndarray) -> bool:
    """Normals and log-normals: the GPU's float Box-Muller runs on __sincosf/logf, whose
    results are within about 2^-21 of the true ones (absolute, for sin/cos), so float
    values agree to a few times 2^-21 of their size plus that; doubles to 16 ulps."""
    want = want.astype(got.dtype)
    if got.dtype == np.float64:
        tol = 16 * np.spacing(np.abs(want)) + 1e-300
    else:
        tol = 2.0 ** -19 * (np.abs(want) + 4.0)
    return bool(np.all(np.abs(got.astype(np.float64) - want) <= tol))


# -- the device program ------------------------------------------------------------------

@cache
def device_output() -> str:
    include = find_header("curand_kernel.h")
    if include is None:
        pytest.skip("curand_kernel.h is not installed (pip install nvidia-curand brings it)")
    nvcc = need_nvcc()
    out = Path(__import__("tempfile").mkdtemp(prefix="cuport-curand-"))
    exe = out / "curand_device"
    r = run([nvcc, "-O2", f"-I{include}", f"-L{native_dir()}", "-o", str(exe),
             str(PROGRAMS / "curand_device.cu"), "-lcurand"], timeout=900)
    assert r.returncode == 0, r.stderr
    r = run([*cuport_command(), "run", str(exe)], env=clean_env(), timeout=900)
    assert r.returncode == 0 and r.stdout.rstrip().endswith("END"), \
        f"exited {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def parsed(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line and line != "END"]


def test_device_generators_are_cuports_engines():
    checked = {"exact": 0, "ulps": 0}
    for f in parsed(device_output()):
        name = f[0]
        if name not in ENGINES:
            continue
        seed, sub, off, kind = int(f[1]), int(f[2]), int(f[3]), f[4]
        where = " ".join(f[:5])
        if kind == "poisson":
            lam, got = float(f[5]), [int(v) for v in f[6:]]
            e = ENGINES[name](seed, np.array([sub]), off)
            want = device_poisson(name, e, lam, len(got))
            if want[0] is None:
                assert all(0 <= v < 10 * lam for v in got), where
                continue
            assert got == want, f"{where} {lam}: {got} != {want}"
            checked["exact"] += 1
            continue
        words = [int(v, 16) for v in f[5:]]
        want = device_stream(name, seed, sub, off, kind, len(words))
        if kind in ("raw", "uniform", "uniform_double"):
            assert words == as_bits(kind, want), f"{where}: {words[:4]} != {as_bits(kind, want)[:4]}"
            checked["exact"] += 1
        else:
            got = from_bits(kind, words, "double" in kind)
            assert close_to_gpu(got, want.astype(got.dtype)), f"{where}: {got} != {want}"
            checked["ulps"] += 1
    assert checked["exact"] >= 3 * 6 * 3 and checked["ulps"] >= 3 * 6 * 4, checked


def test_device_mtgp32_is_cuports():
    lines = [f for f in parsed(device_output()) if f[0] == "MTGP32"]
    assert len(lines) == 8
    for f in lines:
        seed, block, kind, words = int(f[1]), int(f[2]), f[3], [int(v, 16) for v in f[4:]]
        e = eng.Mtgp32(seed, 2)
        seq = e.draw_rounds(4)[block]
        if kind == "raw":
            assert words == [int(v) for v in seq[:len(words)]], f"MTGP32 {seed} block {block}"
        else:  # curand_uniform after three rounds of curand
            assert words == as_bits("uniform", curand.uniform_float(seq[768:1024]))


def test_device_sobol_is_cuports():
    lines = [f for f in parsed(device_output()) if f[0].startswith("SOBOL")]
    assert len(lines) == 3 * 4 * 4
    for f in lines:
        bits = int(f[0][5:])
        dim, off, kind = int(f[1]), int(f[2]), f[3]
        scramble = (0x9E3779B9 if bits == 32 else 0x9E3779B97F4A7C15) if kind == "scrambled" else 0
        want = eng.sobol_points(eng.sobol_directions(bits)[dim], off, 8, scramble)
        assert [int(v, 16) for v in f[4:]] == [int(v) for v in want], " ".join(f[:4])


@pytest.mark.skipif(not (RECORDED / "curand_device.txt").exists(),
                    reason="curand_device.cu's output is not recorded on the H200 yet "
                           "(tests/libs/record_gpu.sh writes curand_device.txt)")
def test_device_output_matches_the_h200():
    h200 = parsed((RECORDED / "curand_device.txt").read_text())
    ours = parsed(device_output())
    assert len(h200) == len(ours)
    for a, b in zip(h200, ours, strict=True):
        assert a[:5] == b[:5]
        approximate = any(k in a for k in ("normal", "normal_double", "log_normal",
                                           "log_normal_double"))
        if not approximate:
            assert a == b, " ".join(a[:5])
        else:
            double = "double" in " ".join(a[:5])
            assert close_to_gpu(from_bits("", [int(v, 16) for v in b[5:]], double),
                                 from_bits("", [int(v, 16) for v in a[5:]], double)), a[:5]


# -- direction vectors -------------------------------------------------------------------

def test_sobol_direction_vectors_are_cuRANDs():
    """Joe and Kuo's numbers, as cuRAND's first dimensions: the van der Corput sequence,
    then the primitive polynomials' initial values."""
    d = eng.sobol_directions(32)
    assert d.shape == (20000, 32)
    assert [int(v) for v in d[0][:4]] == [0x80000000, 0x40000000, 0x20000000, 0x10000000]
    assert [int(v) for v in d[1][:4]] == [0x80000000, 0xC0000000, 0xA0000000, 0xF0000000]
    assert [int(v) for v in d[2][:4]] == [0x80000000, 0xC0000000, 0x60000000, 0x90000000]
    d64 = eng.sobol_directions(64)
    assert (d64[:, :32] >> U64(32)).astype(U32).tolist() == d.tolist()


def test_sobol_direction_vectors_equal_nvidias_table():
    path = curand._nvidia_libcurand()
    if path is None:
        pytest.skip("NVIDIA's libcurand.so.10 is not installed")
    import subprocess
    import sys

    code = ("import ctypes,sys\n"
            f"lib=ctypes.CDLL({str(path)!r}); p=ctypes.c_void_p()\n"
            "assert lib.curandGetDirectionVectors32(ctypes.byref(p), 101) == 0\n"
            "sys.stdout.buffer.write(ctypes.string_at(p.value, 20000*32*4))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (np.frombuffer(r.stdout, U32).reshape(20000, 32) == eng.sobol_directions(32)).all()


def test_get_direction_vectors_hands_out_the_table():
    address = curand.get_direction_vectors32(curand.K["CURAND_DIRECTION_VECTORS_32_JOEKUO6"])
    table = np.ctypeslib.as_array((ctypes.c_uint32 * (20000 * 32)).from_address(address))
    assert (table.reshape(20000, 32) == eng.sobol_directions(32)).all()


# -- engines' own consistency ------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ENGINES))
def test_skip_ahead_equals_stepping(name):
    a = ENGINES[name](99, np.arange(3), 0).draw(40)
    b = ENGINES[name](99, np.arange(3), 37).draw(3)
    assert (a[37:40] == b).all()


def test_xorwow_subsequence_is_2_to_67_steps():
    one = eng.Xorwow(5, np.array([1]), 0)
    skipped = eng.Xorwow(5, np.array([0]), 0)
    skipped.v = eng._skip(skipped.v, np.array([1], U64), 67)
    skipped.d = one.d.copy()  # the Weyl counter is not skipped by subsequences
    assert (one.draw(8) == skipped.draw(8)).all()


def test_mrg32k3a_subsequence_matrix_is_nvidias():
    """M1^(2^76), as curand_mrg32k3a.h's mrg32k3aM1SubSeqHost[0] holds it."""
    assert eng._mrg_powers(0, 76, 1)[0] == (
        (82758667, 1871391091, 4127413238), (3672831523, 69195019, 1871391091),
        (3672091415, 3528743235, 69195019))


# -- the host API against the H200 ---------------------------------------------------------

HOST = RECORDED / "curand_host.txt"
GENERATORS = {"XORWOW": curand.XORWOW, "MRG32K3A": curand.MRG32K3A, "MTGP32": curand.MTGP32,
              "MT19937": curand.MT19937, "PHILOX4_32_10": curand.PHILOX,
              "SOBOL32": curand.SOBOL32, "SCRAMBLED_SOBOL32": curand.SCRAMBLED_SOBOL32,
              "SOBOL64": curand.SOBOL64, "SCRAMBLED_SOBOL64": curand.SCRAMBLED_SOBOL64}
EXACT_CALLS = {"raw", "longlong", "uniform", "uniform_double", "poisson"}


def checksum(words: np.ndarray) -> int:
    """curand_record.cu's checksum: the sum of word i times 2i+1, mod 2^64."""
    i = np.arange(len(words), dtype=U64)
    with np.errstate(over="ignore"):
        return int((words.astype(U64) * (U64(2) * i + U64(1))).sum(dtype=U64))


def host_values(g: curand.Generator, call: str, n: int, param: float) -> np.ndarray:
    f = {"raw": curand.raw32, "uniform": curand.uniform, "uniform_double": curand.uniform_double,
         "normal": curand.normal, "normal_double": curand.normal_double,
         "longlong": lambda g, n: g.quasi_draws(n),
         "log_normal": lambda g, n: np.exp(F32(0.5) + F32(0.75) * curand.normal(g, n)),
         "log_normal_double": lambda g, n: np.exp(0.5 + 0.75 * curand.normal_double(g, n)),
         "poisson": lambda g, n: curand._poisson_values(g, n, param)}[call]
    return f(g, n)


def host_generator(name: str, order: str, seed: int, offset: int, dims: int) -> curand.Generator:
    g = curand.Generator.__new__(curand.Generator)
    rng = GENERATORS[name]
    g.rng_type, g.quasi = rng, rng in curand.QUASI
    g.seed, g.offset, g.dimensions, g.stream = seed, offset, dims, 0
    g._lanes = g._mtgp = None
    if order != "NONE":
        value = curand.K[f"CURAND_ORDERING_{order}"]
        if value not in curand.MODELLED_ORDERINGS and not (g.quasi and order == "QUASI_DEFAULT"):
            raise curand.Unsupported(order)
    return g


@pytest.mark.skipif(not HOST.exists(), reason="cuRAND's host API is not recorded on the H200 yet "
                    "(tests/libs/record_gpu.sh writes curand_host.txt)")
def test_host_api_matches_the_h200():
    mismatches, unsupported, checked = [], set(), 0
    current = None
    for line in HOST.read_text().splitlines():
        if line.startswith("#") or line == "END":
            continue
        head, _, rest = line.partition(" status ")
        f = head.split()
        name, order, seed, offset, dims, call, n, param = f[:8]
        tag = f[8] if len(f) > 8 else ""
        seed, offset, dims, n, param = int(seed), int(offset), int(dims), int(n), float(param)
        status = int(rest.split()[0])
        try:
            if tag in ("", "call1", "setup"):
                current = host_generator(name, order, seed, offset, dims)
            values = host_values(current, call, n, param)
        except curand.Unsupported:
            unsupported.add(f"{name} {order}")
            continue
        except curand.Status as e:
            if curand.K[e.status] != status:
                mismatches.append(f"{head}: cuport {e.status}, the H200 {status}")
            continue
        if status:
            mismatches.append(f"{head}: cuport succeeds, the H200 answers {status}")
            continue
        words = rest.split()
        want_hash = int(words[words.index("hash") + 1], 16)
        got_words = values.view(U32 if values.itemsize == 4 else U64)
        if call in EXACT_CALLS:
            if checksum(got_words) != want_hash:
                first = [int(w, 16) for w in words[words.index("first") + 1:][:8]]
                mismatches.append(f"{head}: first {[hex(int(w)) for w in got_words[:4]]} "
                                  f"want {[hex(w) for w in first[:4]]}")
        else:
            sections = " ".join(words[words.index("first"):]).split(" | ")
            for sec in sections:
                label, *ws = sec.split()
                start = {"first": 0, "mid": 4088, "tail": n - 16}[label]
                want = from_bits("", [int(w, 16) for w in ws], values.itemsize == 8)
                if not close_to_gpu(values[start:start + len(ws)], want):
                    mismatches.append(f"{head}: {label} {values[start:start + 4]} want {want[:4]}")
                    break
        checked += 1
    print(f"{checked} recorded calls checked; not modelled: {sorted(unsupported)}")
    assert not mismatches, "\n".join(mismatches[:40])
    assert checked > 100
