"""Every module that registers library implementations (imported once by the dispatcher)."""

from cuport.libs import (
    cublas,  # noqa: F401
    cublas_lu,  # noqa: F401
    cublaslt,  # noqa: F401
    cufft,  # noqa: F401
    curand,  # noqa: F401
    cusolver,  # noqa: F401
    cusparse,  # noqa: F401
    gemm_ex,  # noqa: F401
)
