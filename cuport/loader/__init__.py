"""The loader: from what the CUDA API is handed (a pointer, bytes, a file) to PTX text.

Images are fatbin wrappers, fatbins, ELF files (cubins, programs, shared
libraries) and PTX text; PTX inside fatbins may be zstd or LZ4 compressed. Only
PTX is used: SASS is listed so that the error can say what was there and how
to rebuild. `-rdc=true` programs keep their PTX in relocatable objects that the
backend must link together.
"""

from .choose import choose_ptx, choose_relocatable_ptx, relocatable_ptx_in_file, runs_on
from .errors import (
    CUDA_ERROR_FILE_NOT_FOUND,
    CUDA_ERROR_INVALID_IMAGE,
    CUDA_ERROR_INVALID_PTX,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NO_BINARY_FOR_GPU,
    LoaderError,
)
from .image import parse_file, parse_image
from .memory import file_containing_address, read_image_at
from .model import Image, PtxEntry, SassEntry

__all__ = [
    "CUDA_ERROR_FILE_NOT_FOUND",
    "CUDA_ERROR_INVALID_IMAGE",
    "CUDA_ERROR_INVALID_PTX",
    "CUDA_ERROR_INVALID_VALUE",
    "CUDA_ERROR_NO_BINARY_FOR_GPU",
    "Image",
    "LoaderError",
    "PtxEntry",
    "SassEntry",
    "choose_ptx",
    "choose_relocatable_ptx",
    "file_containing_address",
    "parse_file",
    "parse_image",
    "read_image_at",
    "relocatable_ptx_in_file",
    "runs_on",
]
