"""What the loader finds in an image: PTX it can hand on, and what it cannot use."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PtxEntry:
    """One PTX module, decompressed and without trailing NULs."""

    text: str
    arch: int  # sm version from the fatbin entry header (75), or from `.target` for plain text
    version: tuple[int, int]  # PTX ISA `.version`, e.g. (9, 0)
    target: str = ""  # first `.target` operand as written, e.g. "sm_90a"

    @property
    def variant(self) -> str:
        """'a' (arch-specific), 'f' (family-specific) or '' for a portable target."""
        suffix = self.target[-1:]
        return suffix if suffix in ("a", "f") else ""


@dataclass(frozen=True)
class SassEntry:
    """A cubin (GPU machine code) entry: listed so that errors can say what was there."""

    arch: int
    size: int


@dataclass
class Image:
    """Everything one image holds.

    `relocatable` lists the relocatable objects of a `-rdc=true` program (one Image
    each, from `__nv_relfatbin` or from a version-2 wrapper's fatbin array): their
    PTX modules refer to each other and must be linked together. `other` describes
    entries that are neither PTX nor SASS (LTO-IR), for error messages.
    """

    ptx: list[PtxEntry]
    sass: list[SassEntry]
    kind: str  # 'wrapper' | 'fatbin' | 'elf' | 'ptx'
    relocatable: list[Image] = field(default_factory=list)
    other: list[str] = field(default_factory=list)

    def merge(self, more: Image) -> None:
        """Add the entries of `more` (a fatbin that follows this one)."""
        self.ptx.extend(more.ptx)
        self.sass.extend(more.sass)
        self.relocatable.extend(more.relocatable)
        self.other.extend(more.other)
