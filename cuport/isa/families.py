"""Import every instruction family so that its lowerings register themselves."""

from . import (  # noqa: F401
    async_copy,
    atomics,
    bits,
    compare,
    control,
    convert,
    data,
    floating,
    integer,
    memory,
    simd_video,
    texture,
    warp,
    wmma,
)
