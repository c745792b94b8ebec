"""Device printf's formatting, shared by the backends: nvcc turns `printf(fmt, ...)` into
`vprintf(fmt, argbuf)`, the arguments packed in a local buffer with their natural
alignment (integers promoted to 32 or 64 bits, floats to double, pointers 64-bit)."""

from __future__ import annotations

import ctypes
import re
import struct

_SPEC = re.compile(rb"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d+))?(hh|h|ll|l|L|z|j|t)?([diouxXeEfFgGaAcspn%])")


def format_printf(fmt: bytes, buf: int, string_at=ctypes.string_at) -> bytes:
    """Format like C printf, reading arguments from a PTX vprintf argument buffer at host
    address `buf`; `string_at(address)` reads a %s argument (device memory need not be host
    memory)."""
    out = bytearray()
    pos = 0
    off = 0

    def take(size: int) -> bytes:
        nonlocal off
        off = (off + size - 1) // size * size
        data = ctypes.string_at(buf + off, size) if buf else bytes(size)
        off += size
        return data

    for m in _SPEC.finditer(fmt):
        out += fmt[pos:m.start()]
        pos = m.end()
        flags, width, prec, length, conv = m.groups()
        if conv == b"%":
            out += b"%"
            continue
        if width == b"*":
            width = str(struct.unpack("<i", take(4))[0]).encode()
        if prec == b"*":
            prec = str(struct.unpack("<i", take(4))[0]).encode()
        spec = b"%" + (flags or b"") + (width or b"") + (b"." + prec if prec is not None else b"")
        if conv in b"di":
            big = length in (b"ll", b"l", b"z", b"j", b"t")
            v = struct.unpack("<q" if big else "<i", take(8 if big else 4))[0]
            if length == b"h":
                v = (v + 0x8000 & 0xFFFF) - 0x8000
            elif length == b"hh":
                v = (v + 0x80 & 0xFF) - 0x80
            out += (spec.decode() + "d") .__mod__(v).encode()
        elif conv in b"ouxX":
            big = length in (b"ll", b"l", b"z", b"j", b"t")
            v = struct.unpack("<Q" if big else "<I", take(8 if big else 4))[0]
            if length == b"h":
                v &= 0xFFFF
            elif length == b"hh":
                v &= 0xFF
            out += (spec.decode() + conv.decode()) .__mod__(v).encode()
        elif conv in b"eEfFgGaA":
            v = struct.unpack("<d", take(8))[0]
            c = conv.decode()
            if c in "aA":
                s = float.hex(v)
                out += (s.upper() if c == "A" else s).encode()
            else:
                out += (spec.decode() + c) .__mod__(v).encode()
        elif conv == b"c":
            v = struct.unpack("<i", take(4))[0]
            out += (spec.decode() + "c").encode() % bytes([v & 0xFF])
        elif conv == b"s":
            p = struct.unpack("<Q", take(8))[0]
            s = string_at(p) if p else b"(null)"
            out += (spec + b"s") % s
        elif conv == b"p":
            p = struct.unpack("<Q", take(8))[0]
            out += b"0x%x" % p if p else b"(nil)"
        elif conv == b"n":
            take(8)
    out += fmt[pos:]
    return bytes(out)
