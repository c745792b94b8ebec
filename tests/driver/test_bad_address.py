"""Kernels that load or store at address 0, or far out of bounds, fail with
CUDA_ERROR_ILLEGAL_ADDRESS (700) naming the kernel and the address they used.

LLVM treats an access to address 0 as undefined behaviour and deleted it, with the rest
of the kernel (jit.py marks every function null_pointer_is_valid); a store at p[2^40] of a
pointer near the top of user space is a non-canonical address, whose fault the OS reports
without an address (faultaddr.py decodes it). tests/driver/c/bad_address.cu, built with
nvcc, runs under `cuport run`; its codes are those of an H200 (record_gpu.py records them).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from capi_support import cuport_command, need_nvcc, run
from conftest import C

RECORDED = Path(__file__).resolve().parent / "recorded" / "bad_address-h200.txt"
FAR = 4 << 40  # bytes: p[2^40] of a float pointer

CASES = {  # case -> the address the kernel used, from the buffer's address
    "store0": lambda buf: 0,
    "load0": lambda buf: 0,
    "param0": None,  # a 32-lane store at NULL: some lane's address in page 0
    "far1": lambda buf: buf + FAR,
    "far32": lambda buf: buf + FAR,  # lane 0 of a contiguous vector store
    "scatter": lambda buf: buf + FAR,  # lane 1: lane 0 stores in bounds
}


@pytest.fixture(scope="module")
def bad_address(tmp_path_factory):
    nvcc = need_nvcc()
    exe = tmp_path_factory.mktemp("bad_address") / "bad_address"
    r = run([nvcc, "-O3", "-o", str(exe), str(C / "bad_address.cu")], timeout=300)
    assert r.returncode == 0, r.stderr
    return exe


@pytest.mark.parametrize("case", list(CASES))
def test_bad_addresses_are_illegal_address_errors(bad_address, case):
    r = run([*cuport_command(), "run", str(bad_address), case], timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[-1] == "cudaErrorIllegalAddress 700", r.stdout + r.stderr
    buf = int(lines[0].split()[1], 16)
    m = re.search(r"CUDA_ERROR_ILLEGAL_ADDRESS: kernel (\S+): illegal address: a load or store "
                  r"at (0x[0-9a-f]+) faulted", r.stderr)
    assert m, r.stderr
    assert m.group(1).startswith("_Z")
    address = int(m.group(2), 16)
    if CASES[case] is None:
        assert address < 4096
    else:
        assert address == CASES[case](buf), (hex(address), hex(buf))


def test_an_h200_answers_the_same():
    """The recording (tests/driver/record_gpu.py) of the same program on an H200."""
    if not RECORDED.exists():
        pytest.skip("not recorded on an H200 yet: run tests/driver/record_gpu.py there and "
                    f"commit its bad_address-h200.txt as {RECORDED}")
    recorded = dict(line.split(" ", 1) for line in RECORDED.read_text().splitlines())
    assert recorded == {case: "cudaErrorIllegalAddress 700" for case in CASES}
