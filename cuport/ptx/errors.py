"""The error every compilation stage raises for what cuport cannot translate (yet).

It lives beside the PTX IR because passes, instruction semantics and every backend raise
it; the driver turns it into CUDA_ERROR_NOT_SUPPORTED with the message, which names the
instruction, directive or form and its PTX line.
"""

from __future__ import annotations


class UnsupportedError(Exception):
    """An instruction, directive or form cuport cannot translate (yet)."""

    def __init__(self, message: str, line: int = 0, text: str = "") -> None:
        where = f"PTX line {line}: " if line else ""
        super().__init__(where + message + (f" (`{text}`)" if text else ""))
        self.line = line
        self.detail = message
