"""Bad PTX gets NVIDIA's codes, with ptxas' wording and the PTX line; nothing else escapes.

Every case is a small edit of a kernel nvcc made (the cases of the reliability issue: deep
nesting, huge arrays, undeclared registers, a branch to nowhere, a mangled suffix, and the
mutants ptxas rejects that cuport used to compile). Where ptxas is installed each case is
also checked against it, so the expectations cannot drift from what NVIDIA's assembler
does. The same cases go through cuport's libcuda.so.1 (cuModuleLoadDataEx, in a child
process), which must answer the code and fill the program's error log.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cuport import ptx
from cuport.backends.base import BackendError
from cuport.backends.cpu.backend import get_cpu_backend

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "capi"))
sys.path.insert(0, str(HERE))

from bad_ptx_cases import CASES, EXTRA, INVALID_PTX, OUT_OF_MEMORY, SOURCE, edit  # noqa: E402


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> str:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is needed to make the kernel the cases edit")
    d = tmp_path_factory.mktemp("validate")
    (d / "k.cu").write_text(SOURCE)
    subprocess.run([nvcc, "-ptx", "-O2", "-arch=sm_90", "-o", str(d / "k.ptx"), str(d / "k.cu")],
                   check=True, capture_output=True)
    return (d / "k.ptx").read_text()


def ptxas_rejects(text: str, tmp: Path) -> bool:
    p = tmp / "case.ptx"
    p.write_text(text)
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    r = subprocess.run(["ptxas", "-arch=sm_90", str(p), "-o", "/dev/null"], capture_output=True,
                       text=True, timeout=120, preexec_fn=limit)
    return r.returncode != 0


@pytest.mark.parametrize(("name", "pattern", "new", "code", "words", "ptxas_too"), CASES,
                         ids=[c[0] for c in CASES])
def test_bad_ptx_gets_its_code(base, tmp_path, name, pattern, new, code, words, ptxas_too):
    text = edit(base, pattern, new)
    start = time.perf_counter()
    with pytest.raises(BackendError) as caught:
        get_cpu_backend().load_module([text])
    assert time.perf_counter() - start < 5
    e = caught.value
    assert (e.code, words in e.message) == (code, True), e.message
    if code == INVALID_PTX:
        line = re.match(r"PTX line (\d+)", e.message)
        assert line or "Missing" in e.message or "shared data" in e.message or \
            "constant data" in e.message, e.message
        assert e.log.startswith("ptxas ") and words in e.log, e.log
    if ptxas_too and shutil.which("ptxas"):
        assert ptxas_rejects(text, tmp_path), f"ptxas accepts the {name} case"


def test_the_unedited_kernel_loads_and_runs(base):
    import numpy as np

    import cuport

    n = 300
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    cuport.Module(base).kernel("scale")(grid=3, block=128, args=(out, x, n))
    np.testing.assert_array_equal(out, x * np.array([1, 2, 3, 4], np.float32)[np.arange(n) & 3])


@pytest.mark.parametrize("count", [1000000, 2147483648])
def test_huge_register_ranges_cost_nothing(base, count):
    """ptxas accepts `.reg .b32 %r<2147483648>`; cuport used to take 10 s and 4 GiB."""
    import numpy as np

    import cuport

    text = edit(base, r"\.reg \.b32 \t%r<10>;", f".reg .b32 \t%r<{count}>;")
    start = time.perf_counter()
    mod = cuport.Module(text)
    n = 64
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    mod.kernel("scale")(grid=1, block=64, args=(out, x, n))
    assert out[5] == 5 * 2
    assert time.perf_counter() - start < 60  # compiling, mostly
    assert len(mod._m.ptx.functions["scale"].regs) < 40


def test_local_memory_beyond_a_threads_limit_is_out_of_memory(base):
    """ptxas accepts 4 GiB of .local; the launch fails before anything that large exists."""
    import numpy as np

    import cuport

    [(_, pattern, new)] = [c for c in EXTRA if c[0] == "local 4 GiB"]
    mod = cuport.Module(edit(base, pattern, new))
    out = np.zeros(64, np.float32)
    start = time.perf_counter()
    with pytest.raises(BackendError) as caught:
        mod.kernel("scale")(grid=1, block=64, args=(out, out, 64))
    assert caught.value.code == OUT_OF_MEMORY and "local memory per thread" in caught.value.message
    assert time.perf_counter() - start < 30


def test_every_problem_is_in_the_log(base):
    text = edit(edit(base, r"bra \t\$L__BB0_4;", "bra \t$L__BB0_9;"), r"mul\.f32", "mul3.f32")
    with pytest.raises(ptx.PtxError) as caught:
        ptx.load([text])
    log = caught.value.log.splitlines()
    assert len(log) == 3 and "Not a name of any known instruction" in log[0] + log[1]
    assert log[-1] == "ptxas fatal   : Ptx assembly aborted due to errors"


CLIENT = textwrap.dedent("""
    import ctypes, json, sys
    lib = ctypes.CDLL(sys.argv[1])
    ctx = ctypes.c_void_p()
    assert lib.cuInit(0) == 0 and lib.cuCtxCreate_v2(ctypes.byref(ctx), 0, 0) == 0
    out = {}
    for name, text in json.load(open(sys.argv[2])).items():
        log = ctypes.create_string_buffer(4096)
        opts = (ctypes.c_int * 2)(5, 6)  # CU_JIT_ERROR_LOG_BUFFER, ..._SIZE_BYTES
        vals = (ctypes.c_void_p * 2)(ctypes.addressof(log), 4096)
        mod = ctypes.c_void_p()
        data = ctypes.create_string_buffer(text.encode())
        code = lib.cuModuleLoadDataEx(ctypes.byref(mod), data, 2, opts, vals)
        out[name] = [code, log.value.decode(), vals[1] or 0]
    print(json.dumps(out))
""")


def test_the_driver_answers_the_codes_and_fills_the_log(base, tmp_path):
    from capi_support import clean_env, library, run

    cases = {name: edit(base, pattern, new) for name, pattern, new, *_ in CASES}
    cases["good"] = base
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    r = run([sys.executable, "-c", CLIENT, str(library()), str(tmp_path / "cases.json")],
            env=clean_env(CUPORT_QUIET="1"), timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["good"] == [0, "", 0]
    for name, _, _, code, words, _ in CASES:
        c, log, size = got[name]
        assert c == code and words in log and size == len(log.encode()), (name, got[name])
    assert "internal error" not in r.stderr


H200 = HERE / "gpu" / "h200_ptx_errors.json"


@pytest.mark.skipif(not H200.exists(), reason="the H200's answers are not recorded yet: run "
                    "tests/ptx/record_gpu.py on a GPU and commit tests/ptx/gpu/h200_ptx_errors.json")
def test_codes_match_the_h200_recording(base):
    """Each case's CUresult is the one NVIDIA's driver gave on an H200."""
    recorded = json.loads(H200.read_text())["cases"]
    for name, pattern, new, code, _, _ in CASES:
        assert recorded[name]["load"] == code, (name, recorded[name])
        gpu_log = recorded[name]["error_log"]
        assert recorded[name]["error_log_size"] == len(gpu_log.encode()), name
        m = re.search(r"line (\d+);", gpu_log)
        if m and code == INVALID_PTX:
            with pytest.raises(ptx.PtxError) as caught:
                ptx.load([edit(base, pattern, new)])
            assert f"line {m.group(1)};" in caught.value.log, (name, gpu_log, caught.value.log)
    assert recorded["good"]["load"] == 0 and recorded["good"]["error_log_size"] == 0
