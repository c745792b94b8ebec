"""OpenBLAS (PyPI's scipy-openblas64: 64-bit integers, symbols `scipy_<name>64_`) via cffi.

Pointer parameters are declared as uintptr_t, so device addresses (host addresses on
the CPU backend) pass as plain ints. The BLAS calls use the CBLAS interface in column-major order, which is cuBLAS's
layout, so every cuBLAS argument passes through unchanged; LAPACK uses the Fortran
interface (everything by reference). cffi releases the GIL around each call, so
library work on several streams overlaps.
"""

from __future__ import annotations

from functools import cache

import cffi

COL_MAJOR = 102
TRANS = {0: 111, 1: 112, 2: 113}  # CUBLAS_OP_N/T/C -> CblasNoTrans/Trans/ConjTrans
UPLO = {0: 122, 1: 121}  # CUBLAS_FILL_MODE_LOWER/UPPER -> CblasLower/Upper
DIAG = {0: 131, 1: 132}  # CUBLAS_DIAG_NON_UNIT/UNIT
SIDE = {0: 141, 1: 142}  # CUBLAS_SIDE_LEFT/RIGHT

N = "int64_t"
P = "uintptr_t"  # pointers travel as integers: the same registers in the C ABI
# name -> C parameter list of the cblas_ function (enums as int)
CBLAS = {
    # level 3
    **{f"{t}gemm": f"int, int, int, {N}, {N}, {N}, {s}, {P}, {N}, {P}, {N}, {s}, uintptr_t, {N}"
       for t, s in (("s", "float"), ("d", "double"), ("c", P), ("z", P))},
    **{f"{t}symm": f"int, int, int, {N}, {N}, {s}, {P}, {N}, {P}, {N}, {s}, uintptr_t, {N}"
       for t, s in (("s", "float"), ("d", "double"), ("c", P), ("z", P))},
    **{f"{t}hemm": f"int, int, int, {N}, {N}, {P}, {P}, {N}, {P}, {N}, {P}, uintptr_t, {N}"
       for t in "cz"},
    **{f"{t}syrk": f"int, int, int, {N}, {N}, {s}, {P}, {N}, {s}, uintptr_t, {N}"
       for t, s in (("s", "float"), ("d", "double"), ("c", P), ("z", P))},
    **{f"{t}herk": f"int, int, int, {N}, {N}, {s}, {P}, {N}, {s}, uintptr_t, {N}"
       for t, s in (("c", "float"), ("z", "double"))},
    **{f"{t}syr2k": f"int, int, int, {N}, {N}, {s}, {P}, {N}, {P}, {N}, {s}, uintptr_t, {N}"
       for t, s in (("s", "float"), ("d", "double"), ("c", P), ("z", P))},
    **{f"{t}her2k": f"int, int, int, {N}, {N}, {P}, {P}, {N}, {P}, {N}, {s}, uintptr_t, {N}"
       for t, s in (("c", "float"), ("z", "double"))},
    **{f"{t}trsm": f"int, int, int, int, int, {N}, {N}, {s}, {P}, {N}, uintptr_t, {N}"
       for t, s in (("s", "float"), ("d", "double"), ("c", P), ("z", P))},
    **{f"{t}trmm": f"int, int, int, int, int, {N}, {N}, {s}, {P}, {N}, uintptr_t, {N}"
       for t, s in (("s", "float"), ("d", "double"), ("c", P), ("z", P))},
    # level 2
    **{f"{t}gemv": f"int, int, {N}, {N}, {s}, {P}, {N}, {P}, {N}, {s}, uintptr_t, {N}"
       for t, s in (("s", "float"), ("d", "double"), ("c", P), ("z", P))},
    **{f"{t}ger": f"int, {N}, {N}, {s}, {P}, {N}, {P}, {N}, uintptr_t, {N}"
       for t, s in (("s", "float"), ("d", "double"))},
    **{f"{t}ger{c}": f"int, {N}, {N}, {P}, {P}, {N}, {P}, {N}, uintptr_t, {N}"
       for t in "cz" for c in "uc"},
    **{f"{t}symv": f"int, int, {N}, {s}, {P}, {N}, {P}, {N}, {s}, uintptr_t, {N}"
       for t, s in (("s", "float"), ("d", "double"))},
    **{f"{t}hemv": f"int, int, {N}, {P}, {P}, {N}, {P}, {N}, {P}, uintptr_t, {N}" for t in "cz"},
    **{f"{t}syr": f"int, int, {N}, {s}, {P}, {N}, uintptr_t, {N}"
       for t, s in (("s", "float"), ("d", "double"))},
    **{f"{t}trsv": f"int, int, int, int, {N}, {P}, {N}, uintptr_t, {N}" for t in "sdcz"},
    **{f"{t}trmv": f"int, int, int, int, {N}, {P}, {N}, uintptr_t, {N}" for t in "sdcz"},
    # level 1
    **{f"{t}axpy": f"{N}, {s}, {P}, {N}, uintptr_t, {N}"
       for t, s in (("s", "float"), ("d", "double"), ("c", P), ("z", P))},
    **{f"{t}scal": f"{N}, {s}, uintptr_t, {N}"
       for t, s in (("s", "float"), ("d", "double"), ("c", P), ("z", P), ("cs", "float"),
                    ("zd", "double"))},
    **{f"{t}copy": f"{N}, {P}, {N}, uintptr_t, {N}" for t in "sdcz"},
    **{f"{t}swap": f"{N}, uintptr_t, {N}, uintptr_t, {N}" for t in "sdcz"},
    **{f"{t}rot": f"{N}, uintptr_t, {N}, uintptr_t, {N}, {s}, {s}"
       for t, s in (("s", "float"), ("d", "double"))},
}
CBLAS_RETURNING = {
    "sdot": ("float", f"{N}, {P}, {N}, {P}, {N}"),
    "ddot": ("double", f"{N}, {P}, {N}, {P}, {N}"),
    "snrm2": ("float", f"{N}, {P}, {N}"), "dnrm2": ("double", f"{N}, {P}, {N}"),
    "scnrm2": ("float", f"{N}, {P}, {N}"), "dznrm2": ("double", f"{N}, {P}, {N}"),
    "sasum": ("float", f"{N}, {P}, {N}"), "dasum": ("double", f"{N}, {P}, {N}"),
    "scasum": ("float", f"{N}, {P}, {N}"), "dzasum": ("double", f"{N}, {P}, {N}"),
    **{f"i{t}amax": ("size_t", f"{N}, {P}, {N}") for t in "sdcz"},
    **{f"i{t}amin": ("size_t", f"{N}, {P}, {N}") for t in "sdcz"},
    "cdotu_sub": ("void", f"{N}, {P}, {N}, {P}, {N}, uintptr_t"),
    "cdotc_sub": ("void", f"{N}, {P}, {N}, {P}, {N}, uintptr_t"),
    "zdotu_sub": ("void", f"{N}, {P}, {N}, {P}, {N}, uintptr_t"),
    "zdotc_sub": ("void", f"{N}, {P}, {N}, {P}, {N}, uintptr_t"),
}
# LAPACK (Fortran interface: every argument by reference; trailing hidden string lengths)
LAPACK = {
    **{f"{t}getrf": "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t"
       for t in "sdcz"},
    **{f"{t}getrs": "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, "
       "uintptr_t, uintptr_t, uintptr_t, uintptr_t, size_t" for t in "sdcz"},
    **{f"{t}getri": "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, "
       "uintptr_t" for t in "sdcz"},
    **{f"{t}potrf": "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, size_t"
       for t in "sdcz"},
    **{f"{t}potrs": "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, "
       "uintptr_t, uintptr_t, uintptr_t, size_t" for t in "sdcz"},
    **{f"{t}potri": "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, size_t"
       for t in "sdcz"},
    **{f"{t}geqrf": "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, "
       "uintptr_t, uintptr_t" for t in "sdcz"},
    **{f"{t}orgqr": "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, "
       "uintptr_t, uintptr_t, uintptr_t, uintptr_t" for t in ("s", "d", "c", "z")},
    **{f"{t}ormqr": "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, "
       "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, "
       "uintptr_t, uintptr_t, size_t, size_t" for t in "sdcz"},
    **{f"{t}gesvd": "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, "
       "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, "
       "uintptr_t, uintptr_t, size_t, size_t" for t in "sd"},
    **{f"{t}gesvd": "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, "
       "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, "
       "uintptr_t, uintptr_t, uintptr_t, size_t, size_t" for t in "cz"},
    **{f"{t}syevd": "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, "
       "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, size_t, size_t"
       for t in "sd"},
    **{f"{t}heevd": "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, "
       "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, "
       "size_t, size_t" for t in "cz"},
    **{f"{t}trtri": "uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, "
       "uintptr_t, size_t, size_t" for t in "sdcz"},
}
# cuSOLVER names the complex orthogonal-factor routines ung*/unm*; LAPACK too
LAPACK_ALIASES = {"corgqr": "cungqr", "zorgqr": "zungqr", "cormqr": "cunmqr", "zormqr": "zunmqr"}


@cache
def _ffi_lib():
    import scipy_openblas64

    ffi = cffi.FFI()
    decls = []
    for name, params in CBLAS.items():
        decls.append(f"void scipy_cblas_{name}64_({params});")
    for name, (ret, params) in CBLAS_RETURNING.items():
        decls.append(f"{ret} scipy_cblas_{name}64_({params});")
    for name, params in LAPACK.items():
        real = LAPACK_ALIASES.get(name, name)
        decls.append(f"void scipy_{real}_64_({params});")
    decls.append("int scipy_openblas_get_num_threads64_(void);")
    ffi.cdef("\n".join(decls))  # noqa
    path = f"{scipy_openblas64.get_lib_dir()}/lib{scipy_openblas64.get_library()}.so"
    return ffi, ffi.dlopen(path)


def ffi() -> cffi.FFI:
    return _ffi_lib()[0]


def cblas(name: str):
    """The cblas_<name> function (column-major layout is the caller's first argument)."""
    return getattr(_ffi_lib()[1], f"scipy_cblas_{name}64_")


def lapack(name: str):
    return getattr(_ffi_lib()[1], f"scipy_{LAPACK_ALIASES.get(name, name)}_64_")
