"""`load volatile` and `store volatile` in the LLVM IR text the CPU backend compiles.

llvmlite (0.50) builds loads and stores without a volatile flag and writes none: setting
`.volatile = True` on its LoadInstr/StoreInstr (as memory_ops, emit and devrt do for PTX
`.volatile` accesses and for what the host reads after a kernel) left the text a plain
access, which LLVM may merge, hoist out of a loop or drop. Here the two instructions' text
gets the keyword where the flag is set. (The Vulkan translator reads the flag from the
objects themselves.)"""

from __future__ import annotations

from llvmlite.ir import instructions as _ins

_KEYWORDS = ((_ins.LoadInstr, "load "), (_ins.StoreInstr, "store "))


def _volatile_descr(plain, keyword: str):
    def descr(self, buf: list) -> None:
        if not getattr(self, "volatile", False):
            return plain(self, buf)
        text: list = []
        plain(self, text)
        first = text[0]
        if not first.startswith(keyword):
            raise AssertionError(f"llvmlite wrote {first!r} for a {keyword.strip()}")
        buf.append(keyword + "volatile " + first[len(keyword):])
        buf.extend(text[1:])
    descr.cuport_volatile = True
    return descr


for _cls, _kw in _KEYWORDS:
    if not getattr(_cls.descr, "cuport_volatile", False):
        _cls.descr = _volatile_descr(_cls.descr, _kw)
