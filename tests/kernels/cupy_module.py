"""Run the kernel tests on a real NVIDIA GPU through CuPy, to confirm their references.

    CUPORT_KERNEL_TESTS_ON=cupy python -m pytest tests/kernels

The same PTX, inputs and NumPy references as on cuport: only the launcher differs. NumPy
arrays are copied to the GPU before the launch and back after it. Needs CuPy (and no
llvmlite: only cuport's PTX parser is used, to learn the parameter types).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cuport.ptx.parser import parse

_SCALAR = {"u8": np.uint8, "s8": np.int8, "u16": np.uint16, "s16": np.int16, "u32": np.uint32,
           "s32": np.int32, "b32": np.uint32, "u64": np.uint64, "s64": np.int64, "b64": np.uint64,
           "f32": np.float32, "f64": np.float64}


class CupyKernel:
    def __init__(self, fn, params) -> None:
        self.fn = fn
        self.params = params

    def __call__(self, grid, block, args=(), shared: int = 0) -> None:
        import cupy as cp

        grid = (grid,) if isinstance(grid, int) else tuple(grid)
        block = (block,) if isinstance(block, int) else tuple(block)
        dev, back = [], []
        for p, a in zip(self.params, args, strict=True):
            if isinstance(a, np.ndarray):
                d = cp.asarray(a)
                dev.append(d)
                back.append((a, d))
            else:
                dev.append(_SCALAR[p.type](a))
        self.fn(grid, block, tuple(dev), shared_mem=shared)
        cp.cuda.runtime.deviceSynchronize()
        for host, d in back:
            host[...] = cp.asnumpy(d)


class CupyModule:
    def __init__(self, ptx_path: Path) -> None:
        import cupy as cp

        self._ptx = parse(Path(ptx_path).read_text())
        self._mod = cp.RawModule(path=str(ptx_path))

    def kernel(self, name: str) -> CupyKernel:
        return CupyKernel(self._mod.get_function(name), self._ptx.functions[name].params)
