"""Static libraries (`ar` archives, `libfoo.a`): the object files cuLinkAddFile may be
handed with CU_JIT_INPUT_LIBRARY. Only the member list is read; each member is an ELF
object whose fatbins the image parser reads."""

from __future__ import annotations

from .errors import CUDA_ERROR_INVALID_IMAGE, LoaderError

AR_MAGIC = b"!<arch>\n"
_HEADER = 60  # name 16, mtime 12, uid 6, gid 6, mode 8, size 10, "`\n"


def members(data: bytes) -> list[tuple[str, bytes]]:
    """(name, bytes) of every object in a System V / GNU archive, symbol tables skipped."""
    if not data.startswith(AR_MAGIC):
        raise LoaderError(CUDA_ERROR_INVALID_IMAGE, "not an ar archive (no !<arch> header)")
    out, names, pos = [], b"", len(AR_MAGIC)
    while pos + _HEADER <= len(data):
        header = data[pos : pos + _HEADER]
        if header[58:60] != b"`\n":
            raise LoaderError(CUDA_ERROR_INVALID_IMAGE, f"archive member header at {pos} is damaged")
        name = header[:16].rstrip(b" ")
        size = int(header[48:58].strip() or b"0")
        body = data[pos + _HEADER : pos + _HEADER + size]
        pos += _HEADER + size + (size & 1)
        if name in (b"/", b"/SYM64/"):
            continue
        if name == b"//":
            names = body
            continue
        if name.startswith(b"/") and name[1:].isdigit():  # GNU long name: offset into //
            start = int(name[1:])
            name = names[start : names.index(b"\n", start)]
        out.append((name.rstrip(b"/").decode("utf-8", "replace"), body))
    return out
