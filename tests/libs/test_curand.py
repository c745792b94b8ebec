"""cuRAND: cuport's generators against NVIDIA's device code, and the host API.

tests/programs/libs/curand_device.cu runs curand_kernel.h's generators (built by nvcc,
run under cuport); every stream it prints must be what cuport's vectorised engines
(cuport/libs/curand_engines.py) give for the same seed, subsequence and offset: raw bits
and uniforms exactly, normals to a few ulp (the GPU's logf/sinf are approximations).
The H200's output of the same program (tests/libs/recorded/curand_device.txt) must be
cuport's too. The host API: tests/libs/curand_record.cu built against cuport and run
under it must print what it printed on the H200 (recorded/curand_host.txt); call
sequences beyond the recording are checked against NVIDIA's host generators (PyPI's
nvidia-curand generates on the CPU, giving the H200's bits).
"""

from __future__ import annotations

import ctypes
import itertools
import struct
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from capi_support import clean_env, cuport_command, need_nvcc, run
from libs_support import PROGRAMS, find_header, native_dir

from cuport.libs import curand
from cuport.libs import curand_engines as eng
from cuport.libs.registry import IMPLEMENTATIONS

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
    values agree to a few times 2^-21 of their size plus that; doubles to 16 ulps of
    their size plus 16 of 1 (sincospi's result is absolute: near 0, NVIDIA's CPU and
    GPU differ from numpy by ~2e-15)."""
    want = want.astype(got.dtype)
    if got.dtype == np.float64:
        tol = 16 * np.spacing(np.abs(want)) + 16 * np.spacing(1.0)
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
EXACT_CALLS = {"raw", "longlong", "uniform", "uniform_double", "poisson"}
# The GPU's own order: DYNAMIC "can be different on different GPUs" (cuRAND's
# documentation); cuport's GPU gives the DEFAULT order's values there, the H200 its own
# (curand.py's docstring says what is known of it). Statuses are compared, values not.
GPU_ORDER = {("XORWOW", "PSEUDO_DYNAMIC"), ("MRG32K3A", "PSEUDO_DYNAMIC"),
             ("MTGP32", "PSEUDO_DYNAMIC")}
INTERNAL_ERROR = 999  # what cuport answers for what it does not implement


def record_lines(text: str) -> dict[str, tuple[int, str]]:
    """curand_record.cu's output: its call (a second of the same numbered) -> (status,
    the rest); a status of the generator's set-up counts as the call's."""
    out: dict[str, tuple[int, str]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#") or line == "END":
            continue
        head, _, rest = line.partition(" status ")
        head = head.removesuffix(" setup")
        key, i = head, 1
        while key in out:
            i += 1
            key = f"{head} #{i}"
        words = rest.split()
        out[key] = (int(words[0]), " ".join(words[1:]))
    return out


def sections(rest: str) -> dict[str, list[int]]:
    words = rest.split()
    parts = " ".join(words[words.index("first"):]).split(" | ")
    return {p.split()[0]: [int(w, 16) for w in p.split()[1:]] for p in parts}


@cache
def cuport_record() -> str:
    """tests/libs/curand_record.cu built against cuport's libcurand, run under cuport."""
    include = find_header("curand.h")
    if include is None:
        pytest.skip("curand.h is not installed (pip install nvidia-curand brings it)")
    nvcc = need_nvcc()
    out = Path(__import__("tempfile").mkdtemp(prefix="cuport-curand-host-"))
    exe = out / "curand_record"
    r = run([nvcc, "-O2", f"-I{include}", f"-L{native_dir()}", "-o", str(exe),
             str(Path(__file__).resolve().parent / "curand_record.cu"), "-lcurand"], timeout=900)
    assert r.returncode == 0, r.stderr
    r = run([*cuport_command(), "run", str(exe)], env=clean_env(), timeout=1800)
    assert r.returncode == 0 and r.stdout.rstrip().endswith("END"), \
        f"exited {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def compare(head: str, want: tuple[int, str], got: tuple[int, str]) -> str | None:
    """Why cuport's line differs from the H200's, or None."""
    f = head.split()
    name, order, call = f[0], f[1], f[5]
    (ws, wrest), (gs, grest) = want, got
    if ws != gs:
        return f"status {gs}, the H200's {ws}"
    if ws or (name, order) in GPU_ORDER:
        return None
    from_normals = call == "poisson" and float(f[7]) >= 2000 and name in (
        "XORWOW", "MRG32K3A", "PHILOX4_32_10", "MT19937")  # the GPU's normals: a few ulp
    if call in EXACT_CALLS and not from_normals:
        wh, gh = (int(r.split()[r.split().index("hash") + 1], 16) for r in (wrest, grest))
        return None if wh == gh else "the values differ (checksum)"
    a, b = sections(wrest), sections(grest)
    for label, words in a.items():
        if from_normals:  # rounded from approximate normals: a value may be one off
            diff = np.abs(np.array(words, np.int64) - np.array(b[label], np.int64))
            if diff.max() > 1 or (diff > 0).sum() > 2:
                return f"{label}: {b[label][:6]}, the H200 {words[:6]}"
            continue
        double = "double" in call
        if not close_to_gpu(from_bits("", b[label], double), from_bits("", words, double)):
            return f"{label}: {from_bits('', b[label], double)[:4]}, " \
                   f"the H200 {from_bits('', words, double)[:4]}"
    return None


@pytest.mark.skipif(not HOST.exists(), reason="cuRAND's host API is not recorded on the H200 yet "
                    "(tests/libs/record_gpu.sh writes curand_host.txt)")
def test_host_api_matches_the_h200():
    """Every generator, ordering, seed, offset and generation function of curand_record.cu,
    run under cuport, against the same program's output on the H200: statuses equal,
    raw bits, uniforms and Poisson values exactly (their checksums), normals to the GPU's
    approximations."""
    h200 = record_lines(HOST.read_text())
    ours = record_lines(cuport_record())
    mismatches, checked = [], 0
    for head, want in h200.items():
        f = head.split()
        if head not in ours:  # a call after a set-up that failed
            mismatches.append(f"{head}: cuport made no such call")
            continue
        why = compare(head, want, ours[head])
        if why:
            mismatches.append(f"{head}: {why}")
        checked += (f[0], f[1]) not in GPU_ORDER
    assert not mismatches, f"{len(mismatches)} of {len(h200)} calls differ:\n" + \
        "\n".join(mismatches[:40])
    unrecorded = sorted(set(ours) - set(h200))  # calls added to curand_record.cu since
    print(f"{checked} calls checked; not recorded yet: {len(unrecorded)} {unrecorded[:3]}")
    assert checked > 400, checked


def test_dynamic_order_is_the_default_on_cuports_gpu():
    """A device generator's DYNAMIC ordering gives what DEFAULT gives (cuRAND leaves the
    order to the GPU); the H200 answers 0 for the same calls (test above)."""
    ours = record_lines(cuport_record())
    compared = 0
    for head, (status, rest) in ours.items():
        if tuple(head.split()[:2]) in GPU_ORDER:
            default = ours[head.replace("PSEUDO_DYNAMIC", "PSEUDO_DEFAULT")]
            assert status == 0 and (status, rest) == default, head
            compared += 1
    assert compared == 9, compared


# -- the host API against NVIDIA's host generators -----------------------------------------
# NVIDIA's libcurand.so.10 (PyPI's nvidia-curand) generates on the CPU with
# curandCreateGeneratorHost, giving the H200's bits; call sequences the recording does
# not hold (continued calls of mixed kinds, a new seed after generating, odd counts,
# the Poisson methods' boundaries) are checked against it.

CALLS = {  # kind -> (curandGenerate* function, its value type, extra arguments)
    "raw": ("curandGenerate", "u4", ()), "uniform": ("curandGenerateUniform", "f4", ()),
    "uniform_double": ("curandGenerateUniformDouble", "f8", ()),
    "normal": ("curandGenerateNormal", "f4", (0.0, 1.0)),
    "normal_double": ("curandGenerateNormalDouble", "f8", (0.0, 1.0)),
    "log_normal": ("curandGenerateLogNormal", "f4", (0.5, 0.75)),
    "log_normal_double": ("curandGenerateLogNormalDouble", "f8", (0.5, 0.75)),
    "longlong": ("curandGenerateLongLong", "u8", ()), "poisson": ("curandGeneratePoisson", "u4", ()),
}

SEQUENCE_RUNNER = r'''
import ctypes, pickle, sys
lib = ctypes.CDLL(sys.argv[1])
script = pickle.loads(sys.stdin.buffer.read())
results = []
for gen_type, steps in script:
    g = ctypes.c_void_p()
    out = [lib.curandCreateGeneratorHost(ctypes.byref(g), gen_type)]
    for op, args in steps:
        if op == "seed":
            out.append(lib.curandSetPseudoRandomGeneratorSeed(g, ctypes.c_ulonglong(args)))
        elif op == "offset":
            out.append(lib.curandSetGeneratorOffset(g, ctypes.c_ulonglong(args)))
        elif op == "order":
            out.append(lib.curandSetGeneratorOrdering(g, args))
        elif op == "dims":
            out.append(lib.curandSetQuasiRandomGeneratorDimensions(g, args))
        else:
            fn, width, n, extra, is_float = args
            buf = ctypes.create_string_buffer(max(n, 1) * width)
            conv = [ctypes.c_float(x) if is_float else ctypes.c_double(x) for x in extra]
            st = getattr(lib, fn)(g, buf, ctypes.c_size_t(n), *conv)
            out.append((st, buf.raw[:n * width] if st == 0 else b""))
    lib.curandDestroyGenerator(g)
    results.append(out)
sys.stdout.buffer.write(pickle.dumps(results))
'''


def run_nvidia(script: list) -> list:
    import pickle
    import subprocess
    import sys

    path = curand._nvidia_libcurand()
    wire = []
    for gen_type, steps in script:
        ws = []
        for op, args in steps:
            if op in CALLS:
                fn, dt, extra = CALLS[op]
                n, *param = args
                extra = tuple(param) if op == "poisson" else extra
                ws.append((op, (fn, np.dtype(dt).itemsize, n, extra, dt == "f4")))
            else:
                ws.append((op, args))
        wire.append((gen_type, ws))
    r = subprocess.run([sys.executable, "-c", SEQUENCE_RUNNER, str(path)],
                       input=pickle.dumps(wire), capture_output=True, timeout=900)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    return pickle.loads(r.stdout)


def run_cuport(script: list) -> list:
    """The same calls through cuport's implementations (host generators: no device)."""
    results = []
    for gen_type, steps in script:
        try:
            g = curand.create_generator_host(gen_type)
        except curand.Status as e:
            results.append([curand.K.get(e.status, INTERNAL_ERROR)])
            continue
        out = [0]
        for op, args in steps:
            try:
                if op == "seed":
                    curand.set_seed(g, args)
                elif op == "offset":
                    curand.set_offset(g, args)
                elif op == "order":
                    curand.set_ordering(g, args)
                elif op == "dims":
                    curand.set_dimensions(g, args)
                else:
                    fn, dt, extra = CALLS[op]
                    n, *param = args
                    buf = np.zeros(max(n, 1), dt)
                    impl = IMPLEMENTATIONS[fn].fn
                    impl(g, buf.ctypes.data, n, *(param if op == "poisson" else extra))
                    out.append((0, buf[:n].tobytes()))
                    continue
                out.append(0)
            except curand.Status as e:
                st = curand.K[e.status] if e.status else INTERNAL_ERROR
                out.append((st, b"") if op in CALLS else st)
        curand.destroy_generator(g)
        results.append(out)
    return results


def _sequences() -> list:
    T = curand.K
    pseudo = [T["CURAND_RNG_PSEUDO_XORWOW"], T["CURAND_RNG_PSEUDO_MRG32K3A"],
              T["CURAND_RNG_PSEUDO_MTGP32"], T["CURAND_RNG_PSEUDO_PHILOX4_32_10"]]
    mixed = [("seed", 42), ("raw", (5000,)), ("normal", (3000,)), ("uniform_double", (4097,)),
             ("poisson", (4097, 2000.0)), ("poisson", (3, 2000.0)), ("normal", (2000,)),
             ("poisson", (777, 10.0)), ("normal_double", (1002,)), ("uniform", (100,)),
             ("log_normal_double", (64,)), ("normal", (7,)), ("raw", (9,))]
    reseed = [("seed", 1), ("raw", (1000,)), ("normal", (500,)), ("seed", 2), ("raw", (1000,)),
              ("offset", 77), ("uniform", (300,)), ("seed", 3), ("normal", (400,))]
    lambdas = [("seed", 9)] + [("poisson", (3000, lam)) for lam in (
        1e-3, 3.0, 31.9, 32.0, 64.0, 500.0, 1999.5, 2000.0, 7999.0, 8000.0, 123456.0,
        400000.0, 400001.0, 0.0, -1.0)]
    legacy = [("seed", 5), ("order", T["CURAND_ORDERING_PSEUDO_LEGACY"]), ("raw", (70000,)),
              ("normal", (9000,))]
    # where a new seed's states start after small calls from an offset of 3 mod 4 (Philox
    # counts values: 4 o + o mod 4 after an offset o, the offset is that count div 4)
    counts = [("seed", 2), ("offset", 4099), ("raw", (2,)), ("seed", 3), ("raw", (16,)),
              ("uniform_double", (1001,)), ("seed", 4), ("raw", (16,)), ("raw", (1,)),
              ("normal_double", (2,)), ("seed", 5), ("raw", (9,)), ("offset", 0), ("raw", (3,)),
              ("seed", 6), ("raw", (1,)), ("seed", 7), ("uniform", (8,))]
    # NVIDIA's host generators have no DYNAMIC ordering; SEEDED is XORWOW's alone
    seeded = [("seed", 8), ("order", T["CURAND_ORDERING_PSEUDO_DYNAMIC"]),
              ("order", T["CURAND_ORDERING_PSEUDO_SEEDED"]), ("raw", (70000,)),
              ("normal", (9000,)), ("offset", 4099), ("uniform_double", (5000,)),
              ("normal_double", (1002,)), ("poisson", (3000, 2500.0)),
              ("poisson", (3000, 25.0)), ("seed", 2**64 - 5), ("raw", (8193,))]
    # past one round of every order's states (Philox's 65536 threads, MRG32k3a's 81920
    # lanes, MTGP32's 192 blocks of 256), with calls ending part-way through a group
    big = [("seed", 11), ("raw", (300001,)), ("uniform_double", (262150,)),
           ("normal", (200002,)), ("poisson", (100001, 3000.0)), ("normal_double", (70002,)),
           ("poisson", (90001, 20.0)), ("uniform", (5,))]
    script = []
    for t in pseudo:
        script += [(t, mixed), (t, reseed), (t, lambdas), (t, legacy), (t, seeded), (t, counts),
                   (t, big),
                   (t, [("seed", 6), ("offset", 4099), ("normal_double", (5000,)),
                        ("log_normal", (4000,)), ("poisson", (5000, 2500.0))])]
    for name in ("SOBOL32", "SCRAMBLED_SOBOL32", "SOBOL64", "SCRAMBLED_SOBOL64"):
        t = T[f"CURAND_RNG_QUASI_{name}"]
        wide = "64" in name
        script.append((t, [("dims", 3), ("offset", 5), ("longlong" if wide else "raw", (3000,)),
                           ("normal", (3000,)), ("poisson", (3000, 9000.0)),
                           ("poisson", (3000, 1500.0)), ("uniform_double", (30,)),
                           ("normal", (10,)), ("dims", 2), ("uniform", (4000,))]))
    return script


def differences(script: list) -> list[str]:
    """Where cuport's host generators differ from NVIDIA's for the same calls."""
    theirs, ours = run_nvidia(script), run_cuport(script)
    bad = []
    for (gen_type, steps), a, b in zip(script, theirs, ours, strict=True):
        name = curand.NAMES[gen_type]
        for i, (step, x, y) in enumerate(zip([("create", None), *steps], a, b, strict=True)):
            op, args = step
            where = f"{name} step {i} {op} {args}"
            if op not in CALLS:
                if x != y:
                    bad.append(f"{where}: status {y}, NVIDIA's {x}")
                continue
            (sx, vx), (sy, vy) = x, y
            if sx != sy:
                bad.append(f"{where}: status {sy}, NVIDIA's {sx}")
                continue
            dt = np.dtype(CALLS[op][1])
            vx, vy = np.frombuffer(vx, dt), np.frombuffer(vy, dt)
            from_normals = op == "poisson" and args[1] >= 2000 and gen_type in (
                curand.XORWOW, curand.MRG32K3A, curand.PHILOX)
            if op in EXACT_CALLS and not from_normals:
                if not np.array_equal(vx, vy):
                    j = int(np.argmax(vx != vy))
                    bad.append(f"{where}: value {j} is {vy[j]}, NVIDIA's {vx[j]}")
            elif from_normals:
                diff = np.abs(vx.astype(np.int64) - vy.astype(np.int64))
                if diff.max(initial=0) > 1 or (diff > 0).sum() > 1e-3 * len(diff) + 1:
                    bad.append(f"{where}: {int((diff > 0).sum())} values differ")
            elif not close_to_gpu(vy, vx):
                bad.append(f"{where}: {vy[:3]} != NVIDIA's {vx[:3]}")
    return bad


NO_NVIDIA = pytest.mark.skipif(curand._nvidia_libcurand() is None, reason="NVIDIA's "
                               "libcurand.so.10 is not installed (pip install nvidia-curand)")


@NO_NVIDIA
def test_host_generators_match_nvidias():
    bad = differences(_sequences())
    assert not bad, "\n".join(bad[:40])


# -- MT19937 (curand_mt19937.py) -----------------------------------------------------------

MT19937_HOST = RECORDED / "curand_mt19937_host.txt"


def mt19937_generate(seed: int, call: str, n: int, *param) -> np.ndarray:
    """n values of `call` from a fresh host MT19937 generator (cuport's)."""
    fn, dt, extra = CALLS[call]
    g = curand.create_generator_host(curand.MT19937)
    curand.set_seed(g, seed)
    out = np.zeros(n, dt)
    IMPLEMENTATIONS[fn].fn(g, out.ctypes.data, n, *(param or extra))
    curand.destroy_generator(g)
    return out


def test_mt19937_is_nvidias_far_into_the_sequence():
    """NVIDIA's host generator's values (curand_mt19937_record.py), 16 at a time: the
    first, across the first slot and round boundaries, at 2^24; a 64-bit seed, whose high
    word NVIDIA ignores; the transforms (normal doubles to a few ulp: scipy's erfcinv)."""
    raw: dict[int, np.ndarray] = {}
    lines = [f.split() for f in MT19937_HOST.read_text().splitlines() if not f.startswith("#")]
    for _, seed, call, index, *words in lines:
        seed, index, want = int(seed), int(index), [int(w, 16) for w in words]
        if call == "raw":
            if seed not in raw:
                top = max(int(f[3]) for f in lines if f[1] == str(seed)) + 16
                raw[seed] = mt19937_generate(seed, "raw", top)
            assert raw[seed][index:index + 16].tolist() == want, f"seed {seed} at {index}"
            continue
        kind, _, lam = call.partition("_")
        if kind == "poisson":
            got = mt19937_generate(seed, kind, 16, float(lam))
        else:
            got = mt19937_generate(seed, call, 16)
        bits = got.view({4: U32, 8: U64}[got.itemsize]).tolist()
        if call == "normal_double":
            assert close_to_gpu(got, from_bits(call, want, True)), f"{call}: {bits} != {want}"
        else:
            assert bits == want, f"{call}: {bits} != {want}"
    assert len(raw) == 4


def test_mt19937_generator_zero_is_the_reference_mt19937():
    """Thread 0 (outputs 65536 j) is generator 0, Matsumoto and Nishimura's MT19937 seeded
    with init_genrand (numpy's RandomState), its words in the octo layout's order."""
    from cuport.libs import curand_mt19937 as mt

    seed = 1234
    got = mt19937_generate(seed, "raw", mt.PER_ROUND)[::mt.THREADS]
    reference = np.random.RandomState(seed).randint(0, 1 << 32, size=mt.N, dtype=np.uint64)
    assert got.tolist() == reference[mt.WORDS[0]].tolist()


def test_mt19937_jump_table_is_a_chain_of_squares():
    """tables/mt19937_jumps.txt: q_(m+1) = q_m^2 mod P, P MT19937's characteristic
    polynomial (Berlekamp-Massey); q_0 = z^(2^2048) mod P is what NVIDIA's values confirm."""
    from cuport.libs import curand_mt19937 as mt

    p = mt.characteristic_polynomial()
    assert p.bit_length() == mt.DEGREE + 1
    q = mt.jump_table()
    assert len(q) == 13 and all(x.bit_length() <= mt.DEGREE for x in q)
    assert all(mt.square_mod(a, p) == b for a, b in itertools.pairwise(q))


@NO_NVIDIA
def test_mt19937_matches_nvidias():
    """Calls in a row of every kind past the first round (65536 threads * 78 words), the
    statuses of offsets and orderings, a new seed (which starts over)."""
    T = curand.K
    steps = [("seed", 42), ("raw", (5000,)), ("normal", (3001,)), ("uniform_double", (4097,)),
             ("poisson", (4097, 2000.0)), ("poisson", (777, 10.0)), ("normal_double", (1002,)),
             ("uniform", (100,)), ("log_normal_double", (64,)), ("log_normal", (7,)),
             ("poisson", (3000, 400000.0)), ("raw", (5_100_000,)), ("uniform", (20000,)),
             ("offset", 5), ("order", T["CURAND_ORDERING_PSEUDO_DYNAMIC"]),
             ("order", T["CURAND_ORDERING_PSEUDO_SEEDED"]), ("raw", (9,)),
             ("order", T["CURAND_ORDERING_PSEUDO_LEGACY"]), ("raw", (70000,)),
             ("seed", 0x0123456789ABCDEF), ("normal", (2000,)), ("poisson", (3000, 31.5))]
    bad = differences([(curand.MT19937, steps)])
    assert not bad, "\n".join(bad)
