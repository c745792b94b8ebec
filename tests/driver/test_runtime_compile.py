"""Programs that compile CUDA while they run, as PyCUDA does (tests/driver/pycuda_like.py):
under `cuport run`, `nvcc --cubin` gives PTX that cuport can load (cuport/shims/nvcc),
and the CUDA 2.0 launch API and cuCtxAttach/cuCtxDetach work."""

from __future__ import annotations

import sys
from pathlib import Path

from capi_support import clean_env, cuport_command, need_nvcc, run

HERE = Path(__file__).resolve().parent


def test_pycuda_like_program():
    need_nvcc()
    r = run([*cuport_command(), "run", sys.executable, str(HERE / "pycuda_like.py")],
            env=clean_env(), timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("PASS"), r.stdout + r.stderr
    assert "cuParamSetSize gave 8 bytes" in r.stderr  # the refused launch names its cause


def test_nvcc_shim_only_changes_cubins(tmp_path):
    need_nvcc()
    shim = HERE.parents[1] / "cuport" / "shims" / "nvcc"
    src = tmp_path / "k.cu"
    src.write_text('extern "C" __global__ void k(int *p) { *p = 1; }\n')
    r = run([sys.executable, str(shim), "--ptx", "-arch", "sm_90", "k.cu"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "k.ptx").read_text().count(".entry k") == 1
    r = run([sys.executable, str(shim), "--cubin", "-arch=sm_90", "k.cu"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    image = (tmp_path / "k.cubin").read_bytes()
    assert image[:4] == bytes.fromhex("50ed55ba")  # a fatbin (with PTX), not an ELF cubin
