"""Which family makes each kernel (weights), and the families beyond arithmetic."""

from __future__ import annotations

import kernels as K
from dtypes import Rng


def make(name: str, r: Rng, spec) -> K.Kernel:
    return K.arith_kernel(name, r)
