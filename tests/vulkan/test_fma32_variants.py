"""Each way of making f32 fma exact over a device Fma that flushes subnormals
(CUPORT_VK_FMA32: spirv/subnormal.py fma, probe.fma32_variant) gives the CPU backend's
answers, bit for bit, on hard cases: subnormal operands, products and sums at the edge of the
normal range, ties that a subnormal addend breaks, zeros of both signs, exact cancellations,
infinities and NaN. lavapipe is made to flush as NVIDIA's driver does, both without the
DenormPreserve mode (CUPORT_VK_FLUSH32=simulate: every f32 instruction flushes) and with it
(simulate-preserve: only Fma and min/max flush, NVIDIA's mode on an H100); either way its
simulated Fma is fused, as NVIDIA's is, so any operands test the guard.

nvcc's kernels (fma_subnormal.cu): one fma per thread, a chain that feeds guarded results
to the next fmas with constants and an integer converted, an unrolled dot product of
sixteen fmas whose partial sums cross the subnormal range, and Horner's rule. Each variant runs in its own process (the backend reads the settings when it
opens the device)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from nvcc_ptx import ptx_of

import cuport

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from device_limits import devices  # noqa: E402 (tests/device_limits.py)

HERE = Path(__file__).resolve().parent
K, OUT = 8, 12  # fma_subnormal.cu's chain: fmas per chain, outputs per thread
K2 = 16  # fma_subnormal.cu's dot: terms per thread
H = 9  # fma_subnormal.cu's horner: coefficients per thread
VARIANTS = ["guard", "f64"]
SIMULATIONS = ["simulate", "simulate-preserve"]

pytestmark = pytest.mark.skipif("vulkan" not in devices(), reason="no Vulkan device")
#: every module checked by spirv-val where it is installed (CI; a GPU host may lack it)
VALIDATE = {"CUPORT_SPIRV_VALIDATE": "1"} if shutil.which("spirv-val") else {}


@pytest.fixture(scope="module")
def ptx(tmp_path_factory) -> str:
    return ptx_of(tmp_path_factory, HERE / "fma_subnormal.cu", "sm_80")


def _f32(bits) -> np.ndarray:
    return np.array(bits, np.uint32).view(np.float32)


def hard_cases() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, c) for fma1: the special values crossed, then constructed edge cases."""
    tiny = 2.0 ** -126
    pool = np.array([0.0, -0.0, 2.0 ** -149, -(2.0 ** -149), 2.0 ** -140, -1.5 * 2.0 ** -130, tiny * (1 - 2.0 ** -23),
                     tiny, -tiny, tiny * (1 + 2.0 ** -23), 2.0 ** -100, 2.0 ** -63, -(2.0 ** -24), 0.75, -1.0,
                     1 + 2.0 ** -12, 3.0, 2.0 ** 60, 2.0 ** 126, 3.4028235e38, np.inf, -np.inf, np.nan], np.float32)
    a, b, c = (x.ravel() for x in np.meshgrid(pool, pool, pool, indexing="ij"))
    rng = np.random.default_rng(7)
    n = 3000
    # products near 2^-126 (of both signs) plus small addends: tiny results and their rounding
    ea = rng.integers(-100, -26, n)
    ka, kb = rng.integers(1 << 23, 1 << 24, n), rng.integers(1 << 23, 1 << 24, n)
    pa = (ka * np.exp2(ea - 23.0) * rng.choice([-1, 1], n)).astype(np.float32)
    pb = (kb * np.exp2(-126 - ea - 23.0 + rng.integers(-3, 3, n))).astype(np.float32)
    pc = (rng.integers(-(1 << 23), 1 << 23, n) * 2.0 ** -149 * rng.choice([0, 1, 2.0 ** 3], n)).astype(np.float32)
    # exact cancellations (c = -a*b where representable) and near ones
    ca, cb = rng.integers(1, 1 << 12, n).astype(np.float32), (rng.integers(1, 1 << 12, n) * 2.0 ** -140).astype(np.float32)
    cc = (-(ca.astype(np.float64) * cb) * rng.choice([1, 1 + 2.0 ** -20, 1 - 2.0 ** -21], n)).astype(np.float32)
    # ties that a subnormal addend breaks: (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24, halfway
    t = np.float32(1 + 2.0 ** -12)
    ta, tb = np.full(4, t), np.full(4, t)
    tc = _f32([0x00000001, 0x80000001, 0x00400000, 0x80000000])
    # a product of exactly 2^-150 against an odd neighbour of 2^-126 (a tie under rounding)
    ea2, eb2 = np.float32(2.0 ** -140), np.float32(2.0 ** -10)
    ec2 = _f32([0x00800001, 0x80800001, 0x00800000, 0x00000003])
    return (np.concatenate([a, pa, ca, ta, np.full(4, ea2)]).astype(np.float32),
            np.concatenate([b, pb, cb, tb, np.full(4, eb2)]).astype(np.float32),
            np.concatenate([c, pc, cc, tc, ec2]).astype(np.float32))


def chain_cases(n: int = 2048) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, c) for chain: K factors a thread, products around the subnormal range (so that
    accumulators go subnormal and back), with zeros and a few specials."""
    rng = np.random.default_rng(9)
    a = rng.standard_normal(n * K) * np.exp2(rng.integers(-80, -40, n * K).astype(np.float64))
    b = rng.standard_normal(n * K) * np.exp2(rng.integers(-90, -40, n * K).astype(np.float64))
    a[rng.random(n * K) < 0.1] = 0.0
    b[rng.random(n * K) < 0.05] = -0.0
    b[rng.random(n * K) < 0.05] = 2.0 ** -149 * rng.integers(1, 1 << 23)
    a[rng.random(n * K) < 0.02] = 2.0 ** 100
    c = rng.standard_normal(n) * np.exp2(rng.integers(-150, -110, n).astype(np.float64))
    c[rng.random(n) < 0.2] = 0.0
    c[:3] = [np.inf, np.nan, -0.0]
    return a.astype(np.float32), b.astype(np.float32), c.astype(np.float32)


def dot_cases(n: int = 4096) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, c) for dot: K2 terms a thread. Per thread one kind of trouble, or none:
    products and sums around 2^-126 (partial sums go tiny, subnormal and back), a subnormal
    factor at some term, a zero factor beside a subnormal one, cancellation to zero, NaN and
    infinities; a third of the threads have only normal values (the fast path)."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((n, K2)) * np.exp2(rng.integers(-70, -50, (n, K2)).astype(np.float64))
    b = rng.standard_normal((n, K2)) * np.exp2(rng.integers(-80, -55, (n, K2)).astype(np.float64))
    c = rng.standard_normal(n) * np.exp2(rng.integers(-140, -110, n).astype(np.float64))
    kind = np.arange(n) % 6
    term = rng.integers(0, K2, n)
    rows = np.arange(n)
    normal = kind == 0  # far from the subnormal range
    a[normal] *= 2.0 ** 60
    c[normal] = rng.standard_normal(normal.sum())
    sub = kind == 1  # one subnormal factor
    b[rows[sub], term[sub]] = 2.0 ** -149 * rng.integers(1, 1 << 23, sub.sum())
    zero = kind == 2  # a zero times a subnormal
    a[rows[zero], term[zero]] = 0.0
    b[rows[zero], term[zero]] = -(2.0 ** -140)
    cancel = kind == 3  # the accumulator back to an exact zero, then on
    a[cancel, 0], b[cancel, 0] = 3.0 * 2.0 ** -70, 2.0 ** -60
    c[cancel] = -3.0 * 2.0 ** -130
    special = np.flatnonzero(kind == 4)[:12]
    a[special[:4], 5] = np.inf
    b[special[4:8], 9] = np.nan
    c[special[8:]] = [np.inf, -np.inf, np.nan, -0.0]
    return a.astype(np.float32).ravel(), b.astype(np.float32).ravel(), c.astype(np.float32)


def horner_cases(n: int = 4096) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, coefficients, unused) for horner: values whose partial results go tiny or
    subnormal (x small, coefficients around 2^-126), subnormal coefficients and x, zeros,
    and a third of the threads in the normal range only."""
    rng = np.random.default_rng(13)
    x = rng.standard_normal(n) * np.exp2(rng.integers(-20, -1, n).astype(np.float64))
    coef = rng.standard_normal((n, H)) * np.exp2(rng.integers(-135, -100, (n, H)).astype(np.float64))
    kind = np.arange(n) % 6
    coef[kind == 0] *= 2.0 ** 120
    rows = np.flatnonzero(kind == 1)
    coef[rows, rng.integers(0, H, len(rows))] = 2.0 ** -149 * rng.integers(1, 1 << 23, len(rows))
    x[kind == 2] = 2.0 ** -149 * rng.integers(1, 1 << 23, (kind == 2).sum())
    coef[kind == 3, 0] = 0.0
    coef[np.flatnonzero(kind == 4)[:4], 4] = [np.inf, -np.inf, np.nan, -0.0]
    return x.astype(np.float32), coef.astype(np.float32).ravel(), np.zeros(1, np.float32)


def _run(module, cases) -> dict[str, np.ndarray]:
    a, b, c = cases["fma1"]
    out1 = np.zeros(len(a), np.float32)
    module.kernel("_Z4fma1PKfS0_S0_Pfi")(((len(a) + 127) // 128,), (128,), (a, b, c, out1, np.int32(len(a))))
    a, b, c = cases["chain"]
    out2 = np.zeros(len(c) * OUT, np.float32)
    module.kernel("_Z5chainPKfS0_S0_Pfi")(((len(c) + 127) // 128,), (128,), (a, b, c, out2, np.int32(len(c))))
    a, b, _ = cases["fma1"]
    out3 = np.zeros(2 * len(a), np.float32)
    module.kernel("_Z7twoprodPKfS0_Pfi")(((len(a) + 127) // 128,), (128,), (a, b, out3, np.int32(len(a))))
    a, b, c = cases["dot"]
    out4 = np.zeros(2 * len(c), np.float32)
    module.kernel("_Z3dotPKfS0_S0_Pfi")(((len(c) + 127) // 128,), (128,), (a, b, c, out4, np.int32(len(c))))
    x, coef, _ = cases["horner"]
    out5 = np.zeros(len(x), np.float32)
    module.kernel("_Z6hornerPKfS0_Pfi")(((len(x) + 127) // 128,), (128,), (x, coef, out5, np.int32(len(x))))
    return {"fma1": out1, "chain": out2, "twoprod": out3, "dot": out4, "horner": out5}


_CHILD = """
import json, sys
import numpy as np
import cuport
sys.path.insert(0, {here!r})
from test_fma32_variants import _run
cases = {{k: tuple(np.load(f"{{sys.argv[1]}}/{{k}}{{j}}.npy") for j in range(3)) for k in ("fma1", "chain", "dot", "horner")}}
got = _run(cuport.Module(open(sys.argv[1] + "/k.ptx").read(), device="vulkan"), cases)
for k, v in got.items():
    np.save(f"{{sys.argv[1]}}/{{k}}_out.npy", v)
"""


@pytest.fixture(scope="module")
def reference(ptx, tmp_path_factory):
    """The cases, written for the child processes, and the CPU backend's answers."""
    d = tmp_path_factory.mktemp("fma32")
    cases = {"fma1": hard_cases(), "chain": chain_cases(), "dot": dot_cases(), "horner": horner_cases()}
    for k, arrays in cases.items():
        for j, x in enumerate(arrays):
            np.save(d / f"{k}{j}.npy", x)
    (d / "k.ptx").write_text(ptx)
    return d, cases, _run(cuport.Module(ptx, device="cpu"), cases)


@pytest.mark.parametrize("simulation", SIMULATIONS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_gives_the_cpu_backends_answers(reference, tmp_path, variant, simulation) -> None:
    d, cases, want = reference
    env = dict(os.environ, CUPORT_VK_FLUSH32=simulation, CUPORT_VK_FMA32=variant, **VALIDATE)
    r = subprocess.run([sys.executable, "-c", _CHILD.format(here=str(HERE)), str(d)], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    for k in ("fma1", "chain", "twoprod", "dot", "horner"):
        got = np.load(d / f"{k}_out.npy")
        w = want[k]
        ok = got.view(np.uint32) == w.view(np.uint32)
        if not ok.all():
            idx = np.flatnonzero(~ok)[:6]
            if k == "fma1":
                a, b, c = cases[k]
                detail = [(hex(a[i].view(np.uint32)), hex(b[i].view(np.uint32)), hex(c[i].view(np.uint32)),
                           hex(got[i].view(np.uint32)), hex(w[i].view(np.uint32))) for i in idx]
            else:
                per = {"chain": OUT, "horner": 1}.get(k, 2)
                detail = [(int(i // per), int(i % per), hex(got[i].view(np.uint32)), hex(w[i].view(np.uint32)))
                          for i in idx]
            pytest.fail(f"{k}: {int((~ok).sum())} of {ok.size} differ, e.g. {json.dumps(detail)}")


def test_without_a_guard_the_simulation_loses_them(reference, tmp_path) -> None:
    """The check above can fail: the device's Fma alone (CUPORT_VK_FMA32=device) on the
    simulated NVIDIA device gives other answers, and only where a subnormal is involved."""
    d, cases, want = reference
    env = dict(os.environ, CUPORT_VK_FLUSH32="simulate-preserve", CUPORT_VK_FMA32="device")
    r = subprocess.run([sys.executable, "-c", _CHILD.format(here=str(HERE)), str(d)], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    got, w = np.load(d / "fma1_out.npy"), want["fma1"]
    lost = got.view(np.uint32) != w.view(np.uint32)
    assert lost.any()
    a, b, c = cases["fma1"]
    sub = lambda x: (x != 0) & (np.abs(x) < 2.0 ** -126)  # noqa: E731
    assert (sub(a) | sub(b) | sub(c) | (np.abs(w) <= 2.0 ** -126))[lost].all()
    # the dot products' and Horner's cases reach the guard too
    for k in ("dot", "horner"):
        got, w = np.load(d / f"{k}_out.npy"), want[k]
        assert (got.view(np.uint32) != w.view(np.uint32)).any(), k


def _child(d, env: dict) -> None:
    r = subprocess.run([sys.executable, "-c", _CHILD.format(here=str(HERE)), str(d)], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]


@pytest.fixture(scope="module")
def contract_verdict() -> str:
    """The contraction probe's verdict on this device (VulkanBackend._probe_contract):
    "contract", "contract-alone" or "" (the driver does not fuse)."""
    code = "from cuport.backends.vulkan.backend import VulkanBackend; print(repr(VulkanBackend(0)._probe_contract()))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={k: v for k, v in os.environ.items() if not k.startswith("CUPORT_")})
    assert r.returncode == 0 and r.stdout.strip() in ("'contract'", "'contract-alone'", "''"), r.stderr[-2000:]
    return r.stdout.strip().strip("'")


@pytest.fixture(scope="module")
def driver_fuses(contract_verdict) -> bool:
    return bool(contract_verdict)


def test_contract_variant_where_the_driver_fuses(reference, contract_verdict) -> None:
    """Where the driver fuses fma's multiply-and-add pair into an fma that keeps subnormals
    (NVIDIA's, whose GLSL Fma flushes them), the variant the probe chose (contract, or
    contract-alone where the driver merges identical products: NVIDIA's 580) gives the CPU
    backend's bits on every hard case, on the device's own arithmetic (no simulation)."""
    if not contract_verdict:
        pytest.skip("this driver does not fuse a multiply and an add (the contraction probe)")
    d, cases, want = reference
    _child(d, dict(os.environ, CUPORT_VK_FMA32=contract_verdict, **VALIDATE))
    for k in ("fma1", "chain", "twoprod", "dot", "horner"):
        got = np.load(d / f"{k}_out.npy")
        bad = got.view(np.uint32) != want[k].view(np.uint32)
        assert not bad.any(), f"{k}: {int(bad.sum())} of {bad.size} differ"


def test_contract_alone_guards_a_kernel_that_rounds_a_product(reference, driver_fuses) -> None:
    """contract-alone translates a kernel that also rounds an f32 product on its own
    (twoprod's __fmul_rn of the fma's factors, which NVIDIA's CSE merges with the pair's
    multiply) through the guard: its bits are the CPU backend's on any device, while a
    kernel without one (fma1) gets the pair, which lavapipe rounds twice."""
    d, cases, want = reference
    _child(d, dict(os.environ, CUPORT_VK_FMA32="contract-alone", CUPORT_VK_FLUSH32="simulate-preserve",
                   **VALIDATE))
    same = {k: (np.load(d / f"{k}_out.npy").view(np.uint32) == want[k].view(np.uint32)).all()
            for k in ("fma1", "twoprod")}
    assert same["twoprod"]
    assert same["fma1"] == driver_fuses


def test_contract_variant_where_the_driver_does_not_fuse(reference, driver_fuses) -> None:
    """The probe's verdict matters: where the driver rounds the pair twice (lavapipe) or
    merges its multiply with an identical rounded one (NVIDIA's 580: the probe's third word),
    the pair forced (CUPORT_VK_FMA32=contract, the device made to flush in Fma as NVIDIA's
    does) loses fma's single rounding on the hard cases or a product's error (twoprod), and
    unasked the backend does not choose it (the guard gives the right bits above)."""
    if driver_fuses:
        pytest.skip("this driver fuses a multiply and an add (the contraction probe)")
    from cuport.backends.vulkan import runtime

    info = runtime.devices()[0]
    d, cases, want = reference
    _child(d, dict(os.environ, CUPORT_VK_FMA32="contract", CUPORT_VK_FLUSH32="simulate-preserve"))
    lost = [k for k in ("fma1", "twoprod")
            if (np.load(d / f"{k}_out.npy").view(np.uint32) != want[k].view(np.uint32)).any()]
    # lavapipe rounds the pair twice; NVIDIA's driver fused these kernels' pairs on the H100
    # (its merge with an identical rounded multiply is the probe's own case)
    assert lost or info.driver_id != "MESA_LLVMPIPE"
    code = ("from cuport.backends.vulkan.backend import VulkanBackend; "
            "print(VulkanBackend(0).caps.fma32 or '-')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={k: v for k, v in os.environ.items() if not k.startswith("CUPORT_")})
    assert r.returncode == 0 and not r.stdout.strip().startswith("contract"), (r.stdout, r.stderr[-2000:])


def test_probes_are_kept_in_the_cache(tmp_path) -> None:
    """A device's probe results (VulkanBackend._probe: contraction, subnormals; _probe_fma;
    quirks.probe) are measured by its first process and read back from the kernel cache by
    the next, which makes no pipeline at all when it opens the device; the same answers and
    the same caps both times."""
    code = ("from cuport.backends.vulkan.backend import VulkanBackend; b = VulkanBackend(0); "
            "c = b.caps; print(b._probe_contract(), b._probe_subnormals(False), c.fused_fma, "
            "c.loop_iteration_limit, c.divergent_memory_barriers, c.float_zero_folds, "
            "c.sext64_compare_folds, len(b.dev.pipelines._by_key))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUPORT_")}
    env["CUPORT_CACHE_DIR"] = str(tmp_path)
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stderr[-2000:]
        runs.append((r.stdout.rsplit(" ", 1), sorted(p.name for p in tmp_path.glob("*.k"))))
    (first, made1), entries1 = runs[0]
    (second, made2), entries2 = runs[1]
    assert first == second and entries1 == entries2 and len(entries1) >= 4
    assert int(made1) > 0 and int(made2) == 0, (made1, made2)
