"""cuLink*: run-time linking of PTX, fatbins, host objects and libraries from C.

tests/driver/c/link.c links a kernel with a device function defined in another module,
loads the result (also a copy of it, after the link state is gone) and runs it; checks
the codes and log texts an H200 gave for undefined and duplicate symbols, PTX that does
not assemble, an empty link, missing files and bad arguments; and links the same kernel
given as PTX, a fatbin, a `-dc` host object and a static library built by nvcc; and links a
cooperative kernel with libcudadevrt as numba-cuda does (cuda.cg.this_grid().sync()).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from capi_support import clean_env, compile_c, library, need_nvcc, run

C = Path(__file__).resolve().parent / "c"


@pytest.fixture(scope="session")
def link_client(tmp_path_factory):
    return compile_c([C / "link.c"], tmp_path_factory.mktemp("link") / "link")


@pytest.fixture(scope="session")
def link_inputs(tmp_path_factory):
    """link_square.cu as PTX, fatbin, host object and library; link_square_dev.cu as PTX."""
    nvcc, out = need_nvcc(), tmp_path_factory.mktemp("link-inputs")
    src, dev = str(C / "link_square.cu"), str(C / "link_square_dev.cu")
    files = [out / n for n in ("sq.ptx", "sq.fatbin", "sq.o", "libsq.a", "dev.ptx")]
    for command in ([nvcc, "-rdc=true", "-ptx", src, "-o", files[0]],
                    [nvcc, "-rdc=true", "-fatbin", src, "-o", files[1]],
                    [nvcc, "-dc", src, "-o", files[2]],
                    [nvcc, "-lib", files[2], "-o", files[3]],
                    [nvcc, "-rdc=true", "-ptx", dev, "-o", files[4]]):
        result = run([str(c) for c in command])
        assert result.returncode == 0, result.stderr
    return files


@pytest.mark.parametrize("test", ["link", "errors", "inputs"])
def test_link(link_client, link_inputs, test):
    result = run([str(link_client), str(library()), test, *map(str, link_inputs)],
                 env=clean_env())
    assert result.returncode == 0 and result.stdout.rstrip().endswith("PASS"), \
        result.stdout + result.stderr
    if test == "errors":  # every failure is reported on stderr, naming the call
        assert "cuLinkComplete: CUDA_ERROR_INVALID_SOURCE: Undefined reference to 'twice'" \
            in result.stderr
        assert "LTO-IR" in result.stderr


def test_link_with_libcudadevrt(link_client):
    """libcudadevrt's PTX calls functions the driver supplies (__cuda_syscall_*, cnp*): the
    link accepts them, as NVIDIA's does, and the grid syscalls work (cuport/ptx/devrt.py)."""
    import nvidia.cu13

    devrt = Path(nvidia.cu13.__path__[0]) / "lib" / "libcudadevrt.a"
    result = run([str(link_client), str(library()), "devrt", str(devrt)], env=clean_env())
    assert result.returncode == 0 and result.stdout.rstrip().endswith("PASS"), \
        result.stdout + result.stderr
