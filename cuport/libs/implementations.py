"""Every module that registers library implementations (imported once by the dispatcher)."""

from cuport.libs import (
    cublas,  # noqa: F401
    gemm_ex,  # noqa: F401
)
