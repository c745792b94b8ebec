"""What the BLAS-like libraries share: extents of strided vectors and matrices, scalars
read according to the pointer mode, numpy views of column-major matrices."""

from __future__ import annotations

import numpy as np

from cuport.libs import device
from cuport.libs.device import Range
from cuport.libs.registry import Status

HOST, DEVICE = 0, 1  # the pointer modes (cuBLAS and cuSPARSE spell them alike)


def mat_bytes(rows: int, cols: int, ld: int, itemsize: int) -> int:
    """Bytes a column-major rows x cols matrix with leading dimension ld spans."""
    return 0 if rows <= 0 or cols <= 0 else ((cols - 1) * ld + rows) * itemsize


def vec_bytes(n: int, inc: int, itemsize: int) -> int:
    return 0 if n <= 0 else ((n - 1) * abs(inc) + 1) * itemsize


def strided_bytes(one: int, stride: int, count: int, itemsize: int) -> int:
    """A batch of `count` objects of `one` bytes each, `stride` elements apart."""
    return 0 if one == 0 or count <= 0 else (count - 1) * abs(stride) * itemsize + one


def matrix(address: int, dtype, rows: int, cols: int, ld: int) -> np.ndarray:
    """A (rows, cols) numpy view of a column-major matrix in host memory."""
    dt = np.dtype(dtype)
    flat = device.view(address, dt, max(0, (cols - 1) * ld + rows) if rows and cols else 0)
    return np.lib.stride_tricks.as_strided(flat, shape=(rows, cols),
                                           strides=(dt.itemsize, ld * dt.itemsize))


def op(m: np.ndarray, trans: int) -> np.ndarray:
    return m if trans == 0 else (m.T if trans == 1 else m.conj().T)


class Scalar:
    """alpha/beta: read at the call in host pointer mode, when the work runs in device mode."""

    __slots__ = ("dtype", "address", "on_device", "value", "_keep")

    def __init__(self, pointer_mode: int, address: int, dtype, name: str, invalid: str) -> None:
        self.dtype = np.dtype(dtype)
        self.address = address
        self.on_device = pointer_mode == DEVICE
        if address == 0:
            raise Status(invalid, f"{name} is NULL")
        if self.on_device:
            device.check_range(Range(address, self.dtype.itemsize), name, invalid)
            self.value = None
        else:
            self.value = device.read_scalar(address, self.dtype)

    def get(self):
        if self.on_device:
            return device.read_scalar(device.map_range(self.address, self.dtype.itemsize),
                                      self.dtype)
        return self.value

    def arg(self):
        """As BLAS takes it: a Python float for real types, an address for complex ones."""
        v = self.get()
        if self.dtype.kind == "c":
            self._keep = np.array([v], self.dtype)
            return self._keep.ctypes.data
        return float(v)


def result_target(pointer_mode: int, address: int, dtype, name: str, invalid: str):
    """Where a reduction's result goes: (wait for the work?, writer of the value).

    In host pointer mode the call returns once the result is in host memory, as
    NVIDIA's does; in device mode it is written when the stream gets there."""
    dt = np.dtype(dtype)
    if address == 0:
        raise Status(invalid, f"{name} is NULL")
    if pointer_mode == DEVICE:
        device.check_range(Range(address, dt.itemsize, "w"), name, invalid)
        return False, \
            lambda v: device.write_scalar(device.map_range(address, dt.itemsize, "w"), dt, v)
    return True, lambda v: device.write_scalar(address, dt, v)
