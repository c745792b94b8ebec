"""cuGetProcAddress: a driver function's name, a CUDA version and flags -> the entry point.

The table records, for every exported symbol, which (name, version, per-thread)
variant it is. A lookup takes the newest variant of the name that the asked
version has, the `_ptds`/`_ptsz` one when flags ask for the per-thread default
stream (falling back to the plain one for names that have none). The first call
cudart makes asks for "" and must fail cleanly.
"""

from __future__ import annotations

from cuport.capi import table
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E

# Symbol -> address of its exported C entry point; filled by capi/runtime.py.
ADDRESSES: dict[str, int] = {}

SUCCESS = K.CU_GET_PROC_ADDRESS_SUCCESS
SYMBOL_NOT_FOUND = K.CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
VERSION_NOT_SUFFICIENT = K.CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
_FLAGS = K.CU_GET_PROC_ADDRESS_LEGACY_STREAM | K.CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM


def choose(name: str | None, version: int, flags: int) -> tuple[str | None, int]:
    """(symbol, CUdriverProcAddressQueryResult) for a lookup; symbol None if none fits."""
    if flags & ~_FLAGS:
        raise CudaError(E.INVALID_VALUE, f"flags {flags:#x} are not CU_GET_PROC_ADDRESS_* flags")
    variants = table.proc_variants().get(name or "")
    if not variants:
        return None, SYMBOL_NOT_FOUND
    per_thread = bool(flags & K.CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
    usable = [v for v in variants if v[0] <= version]
    if not usable:
        return None, VERSION_NOT_SUFFICIENT
    preferred = [v for v in usable if v[1] == per_thread] or [v for v in usable if not v[1]]
    return max(preferred)[2], SUCCESS


def _lookup(name: str | None, version: int, flags: int) -> tuple[int, int]:
    symbol, status = choose(name, version, flags)
    if symbol is None:
        why = "is not a driver function" if status == SYMBOL_NOT_FOUND else \
            f"needs a newer CUDA version than {version}"
        raise CudaError(E.NOT_FOUND, f"{name!r} {why}", quiet=True, outs=(0, status))
    return ADDRESSES[symbol], status


@implements("cuGetProcAddress_v2", before_init=True, optional_outs=("symbolStatus",))
def get_proc_address_v2(name: str | None, version: int, flags: int) -> tuple[int, int]:
    return _lookup(name, version, flags)


@implements("cuGetProcAddress", before_init=True)
def get_proc_address(name: str | None, version: int, flags: int) -> int:
    try:
        return _lookup(name, version, flags)[0]
    except CudaError as e:
        e.outs = (0,)
        raise
