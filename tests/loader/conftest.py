"""Real CUDA binaries for the loader tests, built with nvcc once per session.

Every image the loader meets in practice is made here from tiny sources: fatbins in
each compression mode, multi-architecture and SASS-only fatbins, a cubin, PTX
references from `nvcc -ptx`, an executable, a `-rdc=true` executable and shared
libraries that the tests load into this process.
"""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from loader_support import COMPRESS_MODES

KERNEL = r"""
__global__ void saxpy(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void halve(double *v) { v[threadIdx.x] *= 0.5; }
int main() { return 0; }
"""

# -rdc=true: the kernel in one translation unit calls a function and uses a
# variable defined in the other.
RDC_A = r"""
extern __device__ float helper(float x);
extern __device__ int calls;
__global__ void apply(float *a) { a[threadIdx.x] = helper(a[threadIdx.x]); }
int main() { return 0; }
"""
RDC_B = r"""
__device__ int calls;
__device__ float helper(float x) { atomicAdd(&calls, 1); return x * 2.0f + 1.0f; }
"""
RDC_LIB = r"""
extern __device__ float helper(float x);
__global__ void apply(float *a) { a[threadIdx.x] = helper(a[threadIdx.x]); }
extern "C" int launch(float *a) { apply<<<1, 1>>>(a); return 0; }
"""
LIB = KERNEL.replace("int main() { return 0; }", 'extern "C" int launch() { return 0; }')

MULTI = [
    "-gencode=arch=compute_75,code=compute_75",
    "-gencode=arch=compute_80,code=compute_80",
    "-gencode=arch=compute_90a,code=compute_90a",
    "-gencode=arch=compute_86,code=sm_86",
]

# name -> nvcc arguments (sources are in the build directory)
BUILDS: dict[str, list[str]] = {
    **{
        f"fatbin_{mode}": ["-fatbin", f"-compress-mode={mode}", "kernel.cu"]
        for mode in COMPRESS_MODES
    },
    "multi.fatbin": ["-fatbin", *MULTI, "kernel.cu"],
    "sass_only.fatbin": ["-fatbin", "-gencode=arch=compute_75,code=sm_75", "kernel.cu"],
    "lto_only.fatbin": ["-fatbin", "-gencode=arch=compute_75,code=lto_75", "kernel.cu"],
    "kernel_80.cubin": ["-cubin", "-arch=sm_80", "kernel.cu"],
    "ptx_75.ptx": ["-ptx", "-arch=compute_75", "kernel.cu"],
    "ptx_80.ptx": ["-ptx", "-arch=compute_80", "kernel.cu"],
    "ptx_90a.ptx": ["-ptx", "-arch=compute_90a", "kernel.cu"],
    "rdc_a.ptx": ["-ptx", "-rdc=true", "-arch=compute_75", "rdc_a.cu"],
    "rdc_b.ptx": ["-ptx", "-rdc=true", "-arch=compute_75", "rdc_b.cu"],
    "rdc_lib.ptx": ["-ptx", "-rdc=true", "-arch=compute_75", "rdc_lib.cu"],
    "program": ["kernel.cu"],
    "rdc_program": ["-rdc=true", "rdc_a.cu", "rdc_b.cu"],
    "libkernel.so": ["-shared", "-Xcompiler", "-fPIC", "lib.cu"],
    "librdc.so": ["-rdc=true", "-shared", "-Xcompiler", "-fPIC", "rdc_lib.cu", "rdc_b.cu"],
}


def _find_tool(name: str) -> str | None:
    found = shutil.which(name)
    if found is None and Path(f"/usr/local/cuda/bin/{name}").exists():
        found = f"/usr/local/cuda/bin/{name}"
    return found


@dataclass
class Built:
    """Paths of the built binaries, by the names in BUILDS."""

    root: Path

    def __getitem__(self, name: str) -> Path:
        return self.root / name

    def read(self, name: str) -> bytes:
        return (self.root / name).read_bytes()

    def text(self, name: str) -> str:
        return (self.root / name).read_text()


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    nvcc = _find_tool("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed: the loader tests build real CUDA binaries with it")
    root = tmp_path_factory.mktemp("cuda")
    sources = {
        "kernel.cu": KERNEL,
        "lib.cu": LIB,
        "rdc_a.cu": RDC_A,
        "rdc_b.cu": RDC_B,
        "rdc_lib.cu": RDC_LIB,
    }
    for name, text in sources.items():
        (root / name).write_text(text)

    def build(item: tuple[str, list[str]]) -> None:
        name, args = item
        subprocess.run(
            [nvcc, "-o", name, *args], cwd=root, check=True, capture_output=True, text=True
        )

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(build, BUILDS.items()))
    return Built(root)


@pytest.fixture(scope="session")
def big_fatbins(built: Built, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Multi-MB fatbins (two ~4 MB PTX entries) packed by NVIDIA's `fatbinary` in each
    compression mode, from a PTX module of 6000 copies of the saxpy kernel."""
    fatbinary = _find_tool("fatbinary")
    if fatbinary is None:
        pytest.skip("fatbinary (part of the CUDA toolkit) is not installed")
    root = tmp_path_factory.mktemp("big")
    ptx = built.text("ptx_75.ptx")
    head, _, body = ptx.partition(".address_size 64")
    parts = [head, ".address_size 64\n"]
    parts += [
        body.replace("_Z5saxpyPfPKffi", f"saxpy_{i}").replace("_Z5halvePd", f"halve_{i}")
        for i in range(6000)
    ]
    (root / "big.ptx").write_text("".join(parts))
    out = {}
    for mode in ("none", "default", "speed"):
        out[mode] = root / f"big_{mode}.fatbin"
        subprocess.run(
            [
                fatbinary,
                "-64",
                f"--compress-mode={mode}",
                f"--create={out[mode]}",
                f"--image3=kind=ptx,sm=75,file={root / 'big.ptx'}",
                f"--image3=kind=ptx,sm=80,file={root / 'big.ptx'}",
            ],
            check=True,
            capture_output=True,
            text=True,
        )
    out["ptx"] = root / "big.ptx"
    return out
