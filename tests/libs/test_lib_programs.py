"""The library test programs (tests/programs/libs), built with nvcc against cuport's stubs
and run under `cuport run`: each must print PASS. A program whose library headers are not
installed (PyPI's nvidia-cufft/-cusparse wheels carry them) is skipped, saying which."""

from __future__ import annotations

import pytest
from capi_support import clean_env, cuport_command, need_nvcc, run
from libs_support import PROGRAMS, find_header, native_dir

# program -> (header it needs, library it links)
CASES = {
    "cublas_gemm": ("cublas_v2.h", "cublas"),
    "cublas_level23": ("cublas_v2.h", "cublas"),
    "cublaslt_matmul": ("cublasLt.h", "cublasLt"),
    "cufft_conv": ("cufft.h", "cufft"),
    "curand_host": ("curand.h", "curand"),
    "cusparse_spmv": ("cusparse.h", "cusparse"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_library_program(name, tmp_path):
    if not (PROGRAMS / f"{name}.cu").exists():
        pytest.skip(f"{name}.cu is not written yet")
    header, lib = CASES[name]
    include = find_header(header)
    if include is None:
        pytest.skip(f"{header} is not installed (pip install nvidia-{lib} brings it)")
    nvcc = need_nvcc()
    exe = tmp_path / name
    r = run([nvcc, "-O2", f"-I{include}", f"-L{native_dir()}", "-o", str(exe),
             str(PROGRAMS / f"{name}.cu"), f"-l{lib}"], timeout=600)
    assert r.returncode == 0, r.stderr
    r = run([*cuport_command(), "run", str(exe)], env=clean_env(), timeout=900)
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    assert r.returncode == 0 and lines and lines[-1] == "PASS", \
        f"{name} exited {r.returncode}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
    # a case NVIDIA's library has no algorithm for is skipped on the GPU; cuport runs them all
    skipped = [ln for ln in lines if " skipped: " in ln]
    assert not skipped, f"{name}: cuport skipped cases:\n" + "\n".join(skipped)
