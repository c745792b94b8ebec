"""Tokenizer for PTX text.

One compiled regular expression walks the text once (`re.finditer`), which is what keeps a
multi-megabyte module fast to parse in Python. Line-oriented directives without a
terminating `;` (`.loc`, `.file`, `.version`, `.target`, `.address_size`) are taken as one
token each, and `.section` blocks (debug info) are skipped whole.
"""

from __future__ import annotations

import bisect
import re


class PtxSyntaxError(Exception):
    """A parse error: the PTX line, and what was expected. `severity` is the word ptxas'
    log gives it: "fatal" where its parser stops, "error" where it goes on."""

    def __init__(self, message: str, line: int, text: str = "", severity: str = "fatal") -> None:
        where = f"PTX line {line}" if line else "PTX"
        super().__init__(f"{where}: {message}" + (f": {text.strip()}" if text else ""))
        self.line = line
        self.message = message
        self.severity = severity


_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r\n]+|//[^\n]*|/\*.*?\*/)
  | (?P<linedir>\.(?:loc|file|version|target|address_size)\b[^\n]*)
  | (?P<section>\.section\b[^{]*\{[^}]*\})
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<fhex>0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16})
  | (?P<hex>0[xX][0-9a-fA-F]+U?)
  | (?P<bin>0[bB][01]+U?)
  | (?P<float>\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\.\d+(?:[eE][+-]?\d+)?)
  | (?P<int>\d+U?)
  | (?P<word>[%.]?[A-Za-z_$][\w$]*(?:(?:\.|::)[\w$]+)*)
  | (?P<punct>[{}()\[\],;:<>+\-!|=@*])
    """,
    re.VERBOSE | re.DOTALL,
)

_GLUED = re.compile(r"\.[^.]+")

# Token kinds (small ints compare fastest).
WORD, INT, FLOAT, FHEX, STRING, PUNCT, LINEDIR, EOF = range(8)

_KIND = {
    "hex": INT,
    "bin": INT,
    "int": INT,
    "float": FLOAT,
    "fhex": FHEX,
    "word": WORD,
    "punct": PUNCT,
    "string": STRING,
    "linedir": LINEDIR,
}


class Tokens:
    """The token stream: parallel lists of kinds, texts and text offsets."""

    __slots__ = ("kinds", "texts", "pos", "src", "_nl", "sections")

    def __init__(self, src: str) -> None:
        self.src = src
        kinds: list[int] = []
        texts: list[str] = []
        pos: list[int] = []
        ka, ta, pa = kinds.append, texts.append, pos.append
        kind_of = _KIND
        end = 0
        sections = 0
        for m in _TOKEN.finditer(src):
            if m.start() != end:
                break
            end = m.end()
            g = m.lastgroup
            if g == "ws":
                continue
            if g == "section":
                sections += 1
                continue
            t = m.group()
            if g == "word" and t[0] == "." and "." in t[1:]:
                # `.reg.b16` (cuda_fp16.hpp's inline asm): directive words glued together
                # are read as the words they are, each a token of its own
                at = m.start()
                for part in _GLUED.findall(t):
                    ka(WORD)
                    ta(part)
                    pa(at)
                    at += len(part)
                continue
            ka(kind_of[g])
            ta(t)
            pa(m.start())
        if end != len(src):
            self._nl = None
            line = self.line_at(end)
            raise PtxSyntaxError(f"unexpected character {src[end]!r}", line, self.line_text(line))
        ka(EOF)
        ta("")
        pa(len(src))
        self.kinds, self.texts, self.pos = kinds, texts, pos
        self._nl = None
        self.sections = sections

    def _newlines(self) -> list[int]:
        if self._nl is None:
            self._nl = [m.start() for m in re.finditer("\n", self.src)]
        return self._nl

    def line_at(self, offset: int) -> int:
        return bisect.bisect_left(self._newlines(), offset) + 1

    def line_of(self, i: int) -> int:
        return self.line_at(self.pos[i])

    def line_text(self, line: int) -> str:
        lines = self.src.split("\n", line)
        return lines[line - 1] if 0 < line <= len(lines) else ""


#: Integer literals are 64-bit in PTX, read as ptxas 13.0 reads them (measured): digit by
#: digit modulo 2^64, a "Constant overflow" (cuport.ptx.validate) when a digit comes after
#: the value has reached 2^63. So 18446744073709551617 is 1, 10^20 overflows.
OVERFLOW = 1 << 80  # stands for a literal that overflows
_RADIX = {"0x": 16, "0X": 16, "0b": 2, "0B": 2}
#: Digits that cannot reach 2^63 in each radix (those literals take the plain conversion).
_SAFE_DIGITS = {16: 15, 2: 63, 8: 21, 10: 18}


def parse_int(text: str) -> int:
    t = text.rstrip("U")
    radix = _RADIX.get(t[:2], 8 if len(t) > 1 and t[0] == "0" else 10)
    digits = t[2:] if radix in (2, 16) else t
    if len(digits) <= _SAFE_DIGITS[radix]:
        return int(digits, radix)
    v = 0
    for ch in digits:
        if v >= 1 << 63:
            return OVERFLOW
        v = (v * radix + int(ch, radix)) & ((1 << 64) - 1)
    return v
