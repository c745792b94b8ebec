"""The Vulkan binding: PyPI's `vulkan` package, cffi declarations generated from the headers.

Its `ffi` holds every type, enum and function of Vulkan 1.3.275 (generated from the
registry's vk.xml by the package's maintainers; VkPhysicalDeviceVulkan12/13Features,
timeline semaphores, buffer device addresses, subgroup size control all present and
checked by the tests) and its `lib` is libvulkan.so.1 opened by cffi in ABI mode: no
compiler is needed at install or run time. The package's Python wrapper functions are not
used on any path that runs often: they copy each struct field through Python and raise one
exception class per VkResult. The runtime calls the C functions itself, fetches device-level
commands through vkGetDeviceProcAddr (no loader trampoline on every vkCmd*), and turns
results into exceptions in one place, `check`.

`load()` never raises anything but VulkanUnavailable: no package, no loader library and a
loader without a driver are all answered with the reason, so a machine without Vulkan only
loses the Vulkan devices.
"""

from __future__ import annotations

import inspect
import threading
import weakref
from typing import Any

from .errors import DeviceLost, OutOfDeviceMemory, Unsupported, VulkanError, VulkanUnavailable

_lock = threading.Lock()
_binding: Binding | None = None
_failure: str | None = None


class Binding:
    """The `vulkan` package's ffi and lib, plus the helpers every runtime module uses."""

    def __init__(self, module: Any) -> None:
        self.module = module
        self.ffi = module.ffi
        self.lib = module.lib
        self._result_names: dict[int, str] = self.ffi.typeof("VkResult").elements
        self._stypes: dict[str, int | None] = {}
        self._owned: weakref.WeakKeyDictionary[Any, list[Any]] = weakref.WeakKeyDictionary()

    # -- structs ----------------------------------------------------------------------------
    def stype(self, ctype: str) -> int | None:
        """The VkStructureType that `ctype` must carry, from the package's generated constructor."""
        try:
            return self._stypes[ctype]
        except KeyError:
            pass
        value = None
        ctor = getattr(self.module, ctype, None)
        if ctor is not None:
            p = inspect.signature(ctor).parameters.get("sType")
            if p is not None and isinstance(p.default, int):
                value = p.default
        self._stypes[ctype] = value
        return value

    def new(self, ctype: str, **fields: Any) -> Any:
        """A zeroed `ctype*` with sType set and `fields` filled in. cdata given as a field
        (a pNext struct, an array) lives as long as the result; pointers assigned later do not."""
        p = self.ffi.new(ctype + "*")
        st = self.stype(ctype)
        if st is not None:
            p.sType = st
        owned = []
        for k, v in fields.items():
            setattr(p, k, v)
            if isinstance(v, self.ffi.CData):
                owned.append(v)
        if owned:
            self._owned[p] = owned
        return p

    @staticmethod
    def chain(*structs: Any) -> Any:
        """Link struct pointers through pNext in the order given; returns the first."""
        for a, b in zip(structs[:-1], structs[1:], strict=True):
            a.pNext = b
        return structs[0]

    def string(self, chars: Any) -> str:
        return self.ffi.string(chars).decode("utf-8", "replace")

    # -- results ----------------------------------------------------------------------------
    def result_name(self, result: int) -> str:
        return self._result_names.get(result, f"VkResult({result})")

    def check(self, result: int, call: str) -> int:
        """Return a non-negative result (VK_SUCCESS, VK_TIMEOUT, ...); raise on an error code."""
        if result >= 0:
            return result
        name = self.result_name(result)
        msg = f"{call} failed: {name}"
        if name in ("VK_ERROR_OUT_OF_DEVICE_MEMORY", "VK_ERROR_OUT_OF_HOST_MEMORY",
                    "VK_ERROR_OUT_OF_POOL_MEMORY", "VK_ERROR_TOO_MANY_OBJECTS"):
            raise OutOfDeviceMemory(msg, call, result)
        if name == "VK_ERROR_DEVICE_LOST":
            raise DeviceLost(msg, call, result)
        if name in ("VK_ERROR_FEATURE_NOT_PRESENT", "VK_ERROR_EXTENSION_NOT_PRESENT",
                    "VK_ERROR_LAYER_NOT_PRESENT", "VK_ERROR_FORMAT_NOT_SUPPORTED"):
            raise Unsupported(msg, call, result)
        raise VulkanError(msg, call, result)

    # -- commands beyond the loader's exports ---------------------------------------------------
    def instance_proc(self, instance: Any, name: str) -> Any:
        """An instance-level command (extensions included) as a callable; None if absent."""
        ptr = self.lib.vkGetInstanceProcAddr(instance, name.encode())
        return None if ptr == self.ffi.NULL else self.ffi.cast("PFN_" + name, ptr)

    def device_proc(self, device: Any, name: str) -> Any:
        """A device-level command straight from the driver; None if the device lacks it."""
        ptr = self.lib.vkGetDeviceProcAddr(device, name.encode())
        return None if ptr == self.ffi.NULL else self.ffi.cast("PFN_" + name, ptr)


# Once the driver may have shut down (the process is exiting), commands that release or
# wait do nothing and answer VK_SUCCESS; the others raise.
_QUIET_AFTER_SHUTDOWN = ("vkDestroy", "vkFree", "vkUnmap", "vkDeviceWaitIdle", "vkQueueWaitIdle",
                         "vkWaitSemaphores", "vkGetSemaphoreCounterValue", "vkResetCommand",
                         "vkWaitForFences", "vkGetFenceStatus")


def _quiet(*args: Any) -> int:
    return 0


class DeviceCommands:
    """Device-level commands fetched once each, on first use, through vkGetDeviceProcAddr."""

    def __init__(self, vk: Binding, device: Any) -> None:
        self._vk = vk
        self._device = device

    def down(self) -> bool:
        """Whether shut_down was called (the process is exiting)."""
        return self.__dict__.get("_shut_down", False)

    def shut_down(self) -> None:
        """No command reaches the driver from now on (see _QUIET_AFTER_SHUTDOWN)."""
        for name in [n for n in vars(self) if n.startswith("vk")]:
            delattr(self, name)
        self.__dict__["_shut_down"] = True

    def __getattr__(self, name: str) -> Any:
        if self.__dict__.get("_shut_down"):
            if name.startswith(_QUIET_AFTER_SHUTDOWN):
                return _quiet
            raise VulkanUnavailable(f"{name} after the Vulkan driver shut down (the process is exiting)")
        fn = self._vk.device_proc(self._device, name)
        if fn is None:
            raise Unsupported(f"the driver does not provide {name}", name)
        setattr(self, name, fn)
        return fn


def _import_vulkan() -> Any:
    import vulkan  # opens libvulkan.so.1 at import; OSError when it is absent

    return vulkan


def load() -> Binding:
    """The binding, loaded once; VulkanUnavailable (with the reason) when there is none."""
    global _binding, _failure
    with _lock:
        if _binding is not None:
            return _binding
        if _failure is not None:
            raise VulkanUnavailable(_failure)
        try:
            module = _import_vulkan()
            _binding = Binding(module)
            return _binding
        except ImportError as e:
            _failure = (f"the Python package 'vulkan' is not installed ({e}); "
                        "pip install 'cuport[vulkan]'")
        except OSError as e:
            _failure = (f"the Vulkan loader libvulkan.so.1 could not be opened ({e}); "
                        "install it (Debian/Ubuntu: libvulkan1) and a driver (e.g. mesa-vulkan-drivers)")
        except Exception as e:  # a broken package must not take the host program down
            _failure = f"the Vulkan binding failed to load: {type(e).__name__}: {e}"
        raise VulkanUnavailable(_failure)
