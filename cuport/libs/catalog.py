"""The NVIDIA libraries cuport stands in for: one entry each, read by everything else.

Each entry names the headers its API is declared in (the generator reads them), the
status type its functions return, the sonames cuport builds for it (every symbol
versioned with the soname, as NVIDIA's are) and the status a call answers when
cuport's Python side cannot start.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Library:
    name: str  # "cublas": also the table's file name and the implementation module's
    umbrella: tuple[str, ...]  # headers the generator includes
    declared_in: tuple[str, ...]  # headers whose function declarations are this library's
    status: str  # the status type its functions return
    sonames: tuple[str, ...]  # the libraries built for it, newest first
    not_started: str  # what every call answers when the Python side cannot start
    internal: str  # an unexpected failure inside cuport
    unsupported: str  # a function or case cuport does not implement
    full_structs: tuple[str, ...] = ()  # structs whose fields implementations read or write


LIBRARIES: tuple[Library, ...] = (
    Library("cublas", ("cublas_v2.h", "cublasXt.h"), ("cublas_api.h", "cublasXt.h"),
            "cublasStatus_t", ("libcublas.so.13", "libcublas.so.12"),
            "CUBLAS_STATUS_NOT_INITIALIZED", "CUBLAS_STATUS_INTERNAL_ERROR",
            "CUBLAS_STATUS_NOT_SUPPORTED"),
    Library("cublasLt", ("cublasLt.h",), ("cublasLt.h",), "cublasStatus_t",
            ("libcublasLt.so.13", "libcublasLt.so.12"), "CUBLAS_STATUS_NOT_INITIALIZED",
            "CUBLAS_STATUS_INTERNAL_ERROR", "CUBLAS_STATUS_NOT_SUPPORTED",
            ("cublasLtMatmulAlgo_t", "cublasLtMatmulHeuristicResult_t")),
    Library("cufft", ("cufftXt.h",), ("cufft.h", "cufftXt.h"), "cufftResult",
            ("libcufft.so.12", "libcufft.so.11"), "CUFFT_SETUP_FAILED", "CUFFT_INTERNAL_ERROR", "CUFFT_NOT_SUPPORTED"),
    Library("curand", ("curand.h",), ("curand.h",), "curandStatus_t", ("libcurand.so.10",),
            "CURAND_STATUS_INITIALIZATION_FAILED", "CURAND_STATUS_INTERNAL_ERROR",
            "CURAND_STATUS_INTERNAL_ERROR"),  # cuRAND has no NOT_SUPPORTED
    Library("cusparse", ("cusparse.h",), ("cusparse.h",), "cusparseStatus_t",
            ("libcusparse.so.12",), "CUSPARSE_STATUS_NOT_INITIALIZED", "CUSPARSE_STATUS_INTERNAL_ERROR",
            "CUSPARSE_STATUS_NOT_SUPPORTED"),
    Library("cusolver", ("cusolverDn.h", "cusolverSp.h"),
            ("cusolverDn.h", "cusolverSp.h", "cusolver_common.h"),
            "cusolverStatus_t", ("libcusolver.so.12", "libcusolver.so.11"),
            "CUSOLVER_STATUS_NOT_INITIALIZED", "CUSOLVER_STATUS_INTERNAL_ERROR",
            "CUSOLVER_STATUS_NOT_SUPPORTED"),
)

BY_NAME = {lib.name: lib for lib in LIBRARIES}

# Libraries cuport provides only as empty placeholders, preloaded by `cuport run`:
# cuda-pathfinder loads NVIDIA's libnvJitLink as a dependency of libcusparse even when
# cuport's libcusparse is the one already loaded (CuPy's cupyx.scipy.sparse fails to
# import without it). The placeholder exports no function, so callers that look one up
# (numba-cuda, cuda.bindings.nvjitlink) find none and link through the driver's cuLink*
# instead (numba-cuda then works with nvidia-nvjitlink installed too).
PLACEHOLDERS: tuple[str, ...] = ("libnvJitLink.so.13", "libnvJitLink.so.12")
