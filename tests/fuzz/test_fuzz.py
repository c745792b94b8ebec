"""Fuzzing: mutated nvcc PTX, fatbins and ELF images never crash, hang or break cuport, and
nothing ptxas rejects is compiled.

A fixed seed and a bounded count keep CI fast; a longer run:

    CUPORT_FUZZ_COUNT=20000 CUPORT_FUZZ_SEED=7 python -m pytest -q tests/fuzz

The mutants are made and judged in a child process (tests/fuzz/run_fuzz.py), watched with
a time limit per input, so a hang or a crash is caught and named by its (seed, index),
from which tests/fuzz/ptxfuzz.py rebuilds the input. ptxas is asked about every mutant
cuport accepts: ptxas rejecting one is a failure, except where cuport is more lenient on
purpose (PTX ISA versions newer than this ptxas, which cuport runs as far as it implements
their instructions; static shared memory as the driver's JIT allows it).
"""

from __future__ import annotations

import json
import os
import re
import selectors
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "capi"))

SEED = int(os.environ.get("CUPORT_FUZZ_SEED", "20261201"))
COUNT = int(os.environ.get("CUPORT_FUZZ_COUNT", "200"))
PER_INPUT_SECONDS = 120  # a mutant cuport takes longer than this on is a hang

#: ptxas refusals cuport overrides on purpose: newer PTX; static shared memory over ptxas'
#: 48 KiB, which the H200's JIT loads and launches (tests/ptx/gpu/h200_ptx_errors.json) up to
#: the 227 KiB a block can have (cuport refuses more).
LENIENT = [re.compile(r"Unsupported \.version 9\.[1-9]"),
           re.compile(r"uses too much shared data \(0x[0-9a-f]+ bytes, 0xc000 max\)")]

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="the corpus is nvcc's output")


def watch(cmd: list[str], env: dict[str, str] | None = None) -> tuple[list[dict], int, str]:
    """Run `cmd`, reading its JSON lines; fail on a line that takes too long."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    records: list[dict] = []
    last = time.monotonic()
    try:
        while True:
            if not sel.select(timeout=5):
                if time.monotonic() - last > PER_INPUT_SECONDS:
                    after = records[-1]["i"] if records else None
                    pytest.fail(f"hang: no verdict for {PER_INPUT_SECONDS} s after input {after} "
                                f"(seed {SEED}); rebuild it with ptxfuzz.Corpus.mutant")
                if p.poll() is not None:
                    break
                continue
            line = p.stdout.readline()
            if not line:
                break
            records.append(json.loads(line))
            last = time.monotonic()
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
    return records, p.returncode, p.stderr.read()


def test_mutants_never_crash_hang_or_run_when_ptxas_refuses(tmp_path):
    ptxas = "accepted" if shutil.which("ptxas") else "none"
    records, rc, err = watch([sys.executable, str(HERE / "run_fuzz.py"), "--seed", str(SEED),
                              "--count", str(COUNT), "--ptxas", ptxas, "--keep", str(tmp_path)])
    inputs = [r for r in records if "i" in r]
    assert rc == 0, f"the fuzzing process died ({rc}) after input {inputs[-1]['i'] if inputs else None}:\n{err[-3000:]}"
    assert len(inputs) == COUNT and records[-1].get("summary") is not None
    internal = [r for r in inputs if r["cuport"] == "internal"]
    assert not internal, "internal errors: " + json.dumps(internal[:5], indent=1)
    wrong = [r for r in inputs if r["cuport"] == "ok" and r.get("ptxas") == "rejected"
             and not any(p.search(r["ptxas_message"]) for p in LENIENT)]
    assert not wrong, "ptxas rejects, cuport compiles: " + json.dumps(wrong[:5], indent=1)
    codes = {r["code"] for r in inputs if r["cuport"] == "rejected"}
    # what a loader or the PTX front end answers: image, PTX, memory, source, unsupported,
    # a newer PTX version, and a kernel over a thread's 512 KiB of local memory (launch)
    assert codes <= {200, 218, 2, 300, 801, 209, 500, 222, 1}, codes


CLIENT = textwrap.dedent("""
    import ctypes, json, os, random, sys
    sys.path.insert(0, sys.argv[2])
    import ptxfuzz
    from pathlib import Path
    lib = ctypes.CDLL(sys.argv[1])
    ctx = ctypes.c_void_p()
    assert lib.cuInit(0) == 0 and lib.cuCtxCreate_v2(ctypes.byref(ctx), 0, 0) == 0
    corpus = ptxfuzz.Corpus(ptxfuzz.build_corpus(Path(sys.argv[3]) / "ptx"))
    images = ptxfuzz.build_images(Path(sys.argv[3]) / "images")
    seed, count = int(sys.argv[4]), int(sys.argv[5])
    for i in range(count):
        rng = random.Random(f"{seed}:{i}")
        if i % 4 == 3:
            data = ptxfuzz.mutate_bytes(rng.choice(images)[1], rng)
        else:
            data = corpus.mutant(seed, i).text.encode("utf-8", "surrogateescape") + b"\\0"
        buf = ctypes.create_string_buffer(data, len(data))
        log = ctypes.create_string_buffer(2048)
        opts = (ctypes.c_int * 2)(5, 6)
        vals = (ctypes.c_void_p * 2)(ctypes.addressof(log), 2048)
        mod = ctypes.c_void_p()
        code = lib.cuModuleLoadDataEx(ctypes.byref(mod), buf, 2, opts, vals)
        if code == 0:
            lib.cuModuleUnload(mod)
        print(json.dumps({"i": i, "code": code, "log": log.value.decode("utf-8", "replace")[:200]}),
              flush=True)
""")


def test_mutants_through_the_c_abi(tmp_path):
    """cuModuleLoadDataEx of mutated PTX and images, in a process that loaded libcuda.so.1."""
    from capi_support import clean_env, library

    corpus = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"cuport-fuzz-{os.getuid()}")
    n = max(40, COUNT // 4)
    records, rc, err = watch([sys.executable, "-c", CLIENT, str(library()), str(HERE), corpus,
                              str(SEED + 1), str(n)],
                             env=clean_env(CUPORT_QUIET="1", CUPORT_CACHE_DIR=str(tmp_path)))
    assert rc == 0 and len(records) == n, f"died ({rc}) after {len(records)} inputs:\n{err[-3000:]}"
    codes = {r["code"] for r in records}
    assert codes <= {0, 200, 218, 2, 300, 801, 209, 500, 222, 1}, codes
    assert all(r["log"] for r in records if r["code"] in (218, 200)), "an empty error log"
    assert "internal error" not in err
