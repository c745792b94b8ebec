"""Element types of the libraries (cudaDataType_t and the S/D/C/Z/H letters) as numpy sees them.

bfloat16 has no numpy type: it is stored as uint16 and converted through float32
(the upper half of its bits; back with round-to-nearest-even, NaN kept NaN).
"""

from __future__ import annotations

import numpy as np

BF16 = "bf16"  # marker: uint16 storage

# cudaDataType_t -> (numpy dtype or BF16, name)
CUDA_TYPES: dict[int, tuple[object, str]] = {
    0: (np.float32, "CUDA_R_32F"), 1: (np.float64, "CUDA_R_64F"), 2: (np.float16, "CUDA_R_16F"),
    3: (np.int8, "CUDA_R_8I"), 4: (np.complex64, "CUDA_C_32F"), 5: (np.complex128, "CUDA_C_64F"),
    8: (np.uint8, "CUDA_R_8U"), 10: (np.int32, "CUDA_R_32I"), 11: (np.uint32, "CUDA_R_32U"),
    14: (BF16, "CUDA_R_16BF"), 20: (np.int16, "CUDA_R_16I"), 22: (np.uint16, "CUDA_R_16U"),
    24: (np.int64, "CUDA_R_64I"), 26: (np.uint64, "CUDA_R_64U"),
}
LETTERS = {"S": np.float32, "D": np.float64, "C": np.complex64, "Z": np.complex128,
           "H": np.float16}
REAL_OF = {np.complex64: np.float32, np.complex128: np.float64}


def storage(t: object) -> np.dtype:
    return np.dtype(np.uint16 if t is BF16 else t)


def cuda_type(code: int) -> object:
    entry = CUDA_TYPES.get(code)
    if entry is None:
        raise KeyError(code)
    return entry[0]


def type_name(code: int) -> str:
    return CUDA_TYPES.get(code, (None, f"cudaDataType {code}"))[1]


def to_compute(a: np.ndarray, t: object, compute: np.dtype) -> np.ndarray:
    """Values of storage type t as the compute type (a copy)."""
    if t is BF16:
        return (a.astype(np.uint32) << 16).view(np.float32).astype(compute, copy=False)
    return a.astype(compute)


def from_compute(values: np.ndarray, t: object) -> np.ndarray:
    """Compute-type values stored as type t (rounded to nearest even; ints saturate)."""
    if t is BF16:
        f = np.ascontiguousarray(values, dtype=np.float32)
        bits = f.view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
        return np.where(np.isnan(f), np.uint16(0x7FC0), rounded)
    dt = np.dtype(t)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return np.clip(np.rint(values), info.min, info.max).astype(dt)
    return values.astype(dt)
