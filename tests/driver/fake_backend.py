"""A stand-in compiler backend for the driver's tests: its "kernels" are Python functions.

It reads what the driver needs from real PTX (entry names, `.param` layout, static
`.shared` size, `.global` variables with their initial values) and runs a kernel by
calling the Python function of that name on the packed parameter buffer, reading and
writing device memory (host memory) through ctypes. It tests the driver's plumbing
(loading, parameter packing, launch checks, streams, globals), not code generation.

Select it with CUPORT_BACKEND=fake_backend:FakeBackend (this directory on the path).
"""

from __future__ import annotations

import ctypes
import re
import struct
import time

from cuport.backends.base import BackendError, KernelInfo, ParamInfo

LAUNCH_FAILED, INVALID_PTX = 719, 218
SIZES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "b32": 4, "u32": 4,
         "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8}
ENTRY = re.compile(r"\.entry\s+(\w+)\s*\(([^)]*)\)\s*(\{.*?\n\})", re.S)
PARAM = re.compile(r"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+(\w+)(?:\[(\d+)\])?")
SHARED = re.compile(r"\.shared\s+\.align\s+\d+\s+\.(\w+)\s+\w+(?:\[(\d+)\])?")
GLOBAL = re.compile(r"^\s*(?:\.visible\s+)?\.global\s+\.align\s+(\d+)\s+\.(\w+)\s+(\w+)"
                    r"(?:\[(\d+)\])?(?:\s*=\s*(-?\d+))?;", re.M)


def floats(address: int, n: int):
    return (ctypes.c_float * n).from_address(address)


def _vadd(g, grid, block, params):
    a, b, c, n = struct.unpack_from("<QQQi", params)
    n = min(n, grid[0] * block[0])
    fa, fb, fc = floats(a, n), floats(b, n), floats(c, n)
    for i in range(n):
        fc[i] = fa[i] + fb[i]


def _uses_shared(g, grid, block, params):
    (out,) = struct.unpack_from("<Q", params)
    counter = ctypes.c_int32.from_address(g["counter"][0]).value
    fo = floats(out, block[0])
    for t in range(block[0]):
        fo[t] = (255 - t) + counter


def _structs(g, grid, block, params):
    d, c = struct.unpack_from("<db", params, 0)
    x2 = struct.unpack_from("<i", params, 20)[0]
    (c2,) = struct.unpack_from("<b", params, 24)
    (h,) = struct.unpack_from("<h", params, 26)
    (out,) = struct.unpack_from("<Q", params, 32)
    ctypes.c_double.from_address(out).value = d + c + x2 + c2 + h


def _slow_fill(g, grid, block, params):
    p, value = struct.unpack_from("<Qi", params)
    time.sleep(0.3)
    ints = (ctypes.c_int32 * block[0]).from_address(p)
    for i in range(block[0]):
        ints[i] = value


def _trap(g, grid, block, params):
    raise BackendError(LAUNCH_FAILED, "kernel trap: trap instruction (block (0,0,0))")


def _crash(g, grid, block, params):
    return 1 // 0  # a bug in a backend: the driver must turn it into CUDA_ERROR_UNKNOWN


KERNELS = {"vadd": _vadd, "uses_shared": _uses_shared, "structs": _structs,
           "slow_fill": _slow_fill, "trap": _trap, "crash": _crash}


class FakeKernel:
    def __init__(self, module: FakeModule, name: str, info: KernelInfo) -> None:
        self.module, self.name, self.info = module, name, info

    def launch(self, grid, block, dynamic_shared_bytes, params, cooperative=False) -> None:
        assert len(params) == self.info.param_size, (len(params), self.info.param_size)
        self.module.launches.append((self.name, tuple(grid), tuple(block),
                                     dynamic_shared_bytes))
        KERNELS[self.name](self.module.globals, tuple(grid), tuple(block), bytes(params))


class FakeModule:
    def __init__(self, texts: list[str]) -> None:
        text = "\n".join(texts)
        if "CRASH_ON_LOAD" in text:
            raise RuntimeError("the fake backend was asked to fail while loading")
        if ".entry" not in text:
            raise BackendError(INVALID_PTX, "no .entry in the PTX")
        self.kernels: dict[str, FakeKernel] = {}
        self.launches: list = []
        self.globals: dict[str, tuple[int, int]] = {}
        self._buffers = []
        for _align, kind, name, count, init in GLOBAL.findall(text):
            size = SIZES[kind] * int(count or 1)
            buffer = ctypes.create_string_buffer(size + 256)
            address = (ctypes.addressof(buffer) + 255) // 256 * 256
            if init:
                ctypes.memmove(address, int(init).to_bytes(SIZES[kind], "little", signed=True),
                               SIZES[kind])
            self._buffers.append(buffer)
            self.globals[name] = (address, size)
        for name, params_text, body in ENTRY.findall(text):
            params, offset = [], 0
            for align, kind, pname, count in PARAM.findall(params_text):
                size = SIZES[kind] * int(count or 1)
                alignment = int(align or SIZES[kind])
                offset = -(-offset // alignment) * alignment
                params.append(ParamInfo(pname, offset, size, alignment, kind in ("u64", "b64")))
                offset += size
            shared = sum(SIZES[k] * int(n or 1) for k, n in SHARED.findall(body))
            info = KernelInfo(name, params, offset, shared, 0, 1024)
            self.kernels[name] = FakeKernel(self, name, info)

    def kernel(self, name: str) -> FakeKernel:
        return self.kernels[name]

    def kernel_names(self) -> list[str]:
        return list(self.kernels)

    def global_symbol(self, name: str) -> tuple[int, int]:
        return self.globals[name]

    def unload(self) -> None:
        self.kernels.clear()


class FakeBackend:
    name = "fake"

    def load_module(self, ptx_texts: list[str]) -> FakeModule:
        return FakeModule(ptx_texts)
