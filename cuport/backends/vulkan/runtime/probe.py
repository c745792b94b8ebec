"""devices(): every Vulkan physical device with what it offers, read once per process.

Never raises: without a loader, a driver or a device the list is empty and
`unavailable_reason()` says why (the same text `cuport info` prints).
"""

from __future__ import annotations

import threading

from . import instance
from .errors import VulkanError
from .properties import DeviceInfo, query

_lock = threading.Lock()
_devices: list[DeviceInfo] | None = None
_reason: str | None = None


def devices() -> list[DeviceInfo]:
    """Every Vulkan device in the loader's order, usable or not (see DeviceInfo.usable/missing)."""
    global _devices, _reason
    with _lock:
        if _devices is not None:
            return list(_devices)
        found: list[DeviceInfo] = []
        try:
            inst = instance.get()
            for i, pd in enumerate(inst.physical_devices):
                try:
                    found.append(query(inst, pd, i))
                except VulkanError as e:
                    _reason = f"device {i} could not be queried: {e}"
            if not inst.physical_devices:
                _reason = "the Vulkan driver reported no devices"
        except VulkanError as e:
            _reason = str(e)
        except Exception as e:  # a broken driver must not take the host program down
            _reason = f"Vulkan could not be queried: {type(e).__name__}: {e}"
        _devices = found
        return list(found)


def unavailable_reason() -> str | None:
    """Why devices() is empty (or a device is absent from it); None when nothing went wrong."""
    devices()
    return _reason
