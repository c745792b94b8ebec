"""A Python API to load PTX (or a fat binary) and launch kernels on a cuport device.

    import numpy as np, cuport
    mod = cuport.Module(open("vadd.ptx").read())
    vadd = mod.kernel("vadd")
    a = np.arange(1000, dtype=np.float32); b = a * 2; c = np.empty_like(a)
    vadd(grid=4, block=256, args=(a, b, c, 1000))

`device` is "cpu" (the default) or "vulkan" / "vulkan:N". Device memory is host memory on
the CPU backend, so a NumPy array is passed to a kernel by the address of its data: the
kernel reads and writes the array in place. On a Vulkan device each array is copied into
device memory for the launch and back after it. Scalars are packed as the kernel's PTX
parameter types say; `Pointer(addr)` passes a raw address and `bytes` a by-value struct.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from .backends import get_backend
from .backends.base import BackendError, KernelInfo

__all__ = ["Module", "Kernel", "Pointer", "BackendError", "pack_params"]


@dataclass(frozen=True)
class Pointer:
    """A raw device (= host) address passed as a kernel argument."""

    address: int


_INT = {1: "b", 2: "h", 4: "i", 8: "q"}
_UINT = {1: "B", 2: "H", 4: "I", 8: "Q"}


def _dims(x) -> tuple[int, int, int]:
    if isinstance(x, int):
        return (x, 1, 1)
    t = tuple(int(v) for v in x)
    return (t + (1, 1, 1))[:3]


def _device(spec: str) -> tuple[str, int]:
    kind, _, idx = spec.lower().partition(":")
    if kind not in ("cpu", "vulkan") or (idx and not idx.isdigit()):
        raise ValueError(f"device {spec!r}: write cpu, vulkan or vulkan:N")
    return kind, int(idx or 0)


def pack_params(info: KernelInfo, args) -> bytes:
    """Lay out `args` in the kernel's `.param` space, as cuLaunchKernel does."""
    if len(args) != len(info.params):
        raise TypeError(f"{info.name} takes {len(info.params)} arguments, {len(args)} given")
    buf = bytearray(info.param_size)
    for p, a in zip(info.params, args, strict=True):
        if isinstance(a, np.ndarray):
            data = struct.pack("<Q", a.ctypes.data)
        elif isinstance(a, Pointer):
            data = struct.pack("<Q", a.address)
        elif isinstance(a, (bytes, bytearray, memoryview)):
            data = bytes(a)
        elif isinstance(a, np.generic):
            data = a.tobytes()
        elif isinstance(a, float) or (p.ptype.startswith("f") and isinstance(a, int)):
            if p.ptype == "f32":
                data = struct.pack("<f", a)
            elif p.ptype == "f64":
                data = struct.pack("<d", a)
            else:
                raise TypeError(f"parameter {p.name} (.{p.ptype or 'b8[]'}) does not take a float")
        elif isinstance(a, (int, bool)):
            fmt = (_INT if a < 0 else _UINT).get(p.size)
            if fmt is None:
                raise TypeError(f"parameter {p.name} has {p.size} bytes; pass bytes for it")
            data = struct.pack("<" + fmt, int(a) & ((1 << (8 * p.size)) - 1) if a >= 0 else int(a))
        else:
            raise TypeError(f"cannot pass {type(a).__name__} as parameter {p.name}")
        if len(data) != p.size:
            raise TypeError(f"parameter {p.name} takes {p.size} bytes, got {len(data)}")
        buf[p.offset:p.offset + p.size] = data
    return bytes(buf)


class Kernel:
    def __init__(self, k, backend) -> None:
        self._k = k
        self._backend = backend
        self.info = k.info
        self.name = k.info.name

    def __call__(self, grid, block, args=(), shared: int = 0) -> None:
        self.launch(grid, block, args, shared)

    def launch(self, grid, block, args=(), shared: int = 0) -> None:
        if self._backend.name == "cpu":
            self._k.launch(_dims(grid), _dims(block), int(shared), pack_params(self.info, args))
            return
        # device memory is not host memory: stage every array through a device buffer, by
        # the backend's copies where the host cannot touch it (a discrete GPU's)
        import ctypes

        be = self._backend
        staged, bufs = [], []
        try:
            for a in args:
                if isinstance(a, np.ndarray):
                    a = np.ascontiguousarray(a) if not a.flags.c_contiguous else a
                    addr = be.allocate(max(a.nbytes, 1))
                    bufs.append((addr, a))
                    if be.host_accessible(addr):
                        ctypes.memmove(addr, a.ctypes.data, a.nbytes)
                    elif a.nbytes:
                        be.copy_htod(addr, a.ctypes.data, a.nbytes)
                    staged.append(Pointer(addr))
                else:
                    staged.append(a)
            self._k.launch(_dims(grid), _dims(block), int(shared), pack_params(self.info, staged))
            failed = be.drain() if hasattr(be, "drain") else None
            if failed is not None:
                raise failed[1]
        finally:
            for addr, a in bufs:
                if a.flags.writeable and a.nbytes:
                    if be.host_accessible(addr):
                        ctypes.memmove(a.ctypes.data, addr, a.nbytes)
                    else:
                        be.copy_dtoh(a.ctypes.data, addr, a.nbytes)
                be.free(addr, max(a.nbytes, 1))


class Module:
    """A PTX module (text) or a fat binary / ELF image (bytes) loaded for a device."""

    def __init__(self, source: str | bytes | list[str], device_cc: int = 90, device: str = "cpu") -> None:
        if isinstance(source, list):
            texts = source
        elif isinstance(source, str):
            texts = [source]
        else:
            from .loader import choose_ptx, parse_image

            texts = [choose_ptx(parse_image(bytes(source)), device_cc).text]
        self._backend = get_backend(*_device(device))
        self._m = self._backend.load_module(texts)

    def kernel(self, name: str) -> Kernel:
        return Kernel(self._m.kernel(name), self._backend)

    def kernel_names(self) -> list[str]:
        return self._m.kernel_names()

    def global_address(self, name: str) -> tuple[int, int]:
        """(address, size) of a module-scope `.global`/`.const` variable."""
        return self._m.global_symbol(name)

    def global_array(self, name: str, dtype) -> np.ndarray:
        """A NumPy view of a module-scope variable's memory."""
        import ctypes

        addr, size = self.global_address(name)
        accessible = getattr(self._backend, "host_accessible", None)
        if accessible is not None and not accessible(addr):
            raise ValueError(f"{name} is in device memory the host cannot map on this device (a "
                             "discrete GPU's): global_array needs host-visible memory")
        n = size // np.dtype(dtype).itemsize
        return np.ctypeslib.as_array((ctypes.c_char * size).from_address(addr)).view(dtype)[:n]
