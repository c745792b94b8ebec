"""The one exception the loader raises, carrying the CUresult the program will see.

The codes are NVIDIA's CUresult values (cuda.h), repeated here so that the loader
does not depend on the driver package.
"""

from __future__ import annotations

CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_INVALID_IMAGE = 200
CUDA_ERROR_NO_BINARY_FOR_GPU = 209
CUDA_ERROR_INVALID_PTX = 218
CUDA_ERROR_FILE_NOT_FOUND = 301


class LoaderError(Exception):
    """An image that cannot be read or holds nothing cuport can run.

    `code` is the CUresult the driver returns; `message` says what was found and,
    where the program can be rebuilt to work, how.
    """

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def invalid_image(message: str) -> LoaderError:
    return LoaderError(CUDA_ERROR_INVALID_IMAGE, message)
