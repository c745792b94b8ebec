"""The process's one VkInstance, created on first use, and its physical devices.

The instance asks for Vulkan 1.3 when the loader knows 1.1 or later (the version is the
most the application uses; 1.2 devices still work) and enumerates portability drivers too
(MoltenVK, KosmicKrisp). CUPORT_VK_VALIDATION=1 turns on the Khronos validation layer when
it is installed and collects its warnings and errors in `Instance.messages` (tests assert
that the runtime's own use of Vulkan is clean).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from .binding import Binding, load
from .errors import VulkanError, VulkanUnavailable

VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation"


def make_version(major: int, minor: int, patch: int = 0) -> int:
    return (major << 22) | (minor << 12) | patch


def split_version(v: int) -> tuple[int, int, int]:
    return ((v >> 22) & 0x7F, (v >> 12) & 0x3FF, v & 0xFFF)


class Instance:
    """A VkInstance; `physical_devices` in the loader's order (that order is cuport's index)."""

    def __init__(self, vk: Binding) -> None:
        self.vk = vk
        ffi, lib = vk.ffi, vk.lib
        self.messages: list[str] = []
        self._keep: list[Any] = []
        ver = ffi.new("uint32_t*", make_version(1, 0))
        if lib.vkEnumerateInstanceVersion(ver) != 0:
            ver[0] = make_version(1, 0)
        self.loader_version = split_version(ver[0])
        api = make_version(1, 3) if self.loader_version >= (1, 1, 0) else make_version(1, 0)

        ext_names = set(self._instance_extensions())
        layer_names = set(self._layers())
        exts: list[str] = []
        flags = 0
        if "VK_KHR_portability_enumeration" in ext_names:
            exts.append("VK_KHR_portability_enumeration")
            flags |= lib.VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR
        layers: list[str] = []
        self.validation = (os.environ.get("CUPORT_VK_VALIDATION") == "1"
                           and VALIDATION_LAYER in layer_names)
        if self.validation:
            layers.append(VALIDATION_LAYER)
            if "VK_EXT_debug_utils" in ext_names:
                exts.append("VK_EXT_debug_utils")

        app = vk.new("VkApplicationInfo", apiVersion=api,
                     pApplicationName=self._cstr("cuport"), pEngineName=self._cstr("cuport"))
        ext_arr = [self._cstr(e) for e in exts]
        layer_arr = [self._cstr(e) for e in layers]
        ci = vk.new("VkInstanceCreateInfo", flags=flags, pApplicationInfo=app,
                    enabledExtensionCount=len(exts),
                    ppEnabledExtensionNames=self._keepit(ffi.new("char*[]", ext_arr)),
                    enabledLayerCount=len(layers),
                    ppEnabledLayerNames=self._keepit(ffi.new("char*[]", layer_arr)))
        messenger_ci = None
        if self.validation and "VK_EXT_debug_utils" in exts:
            messenger_ci = self._messenger_info()
            ci.pNext = messenger_ci
        out = ffi.new("VkInstance*")
        r = lib.vkCreateInstance(ci, ffi.NULL, out)
        if r < 0:
            name = vk.result_name(r)
            if name == "VK_ERROR_INCOMPATIBLE_DRIVER":
                raise VulkanUnavailable("the Vulkan loader found no driver (VK_ERROR_INCOMPATIBLE_DRIVER); "
                                        "install one (e.g. mesa-vulkan-drivers) or set VK_DRIVER_FILES",
                                        "vkCreateInstance", r)
            raise VulkanUnavailable(f"vkCreateInstance failed: {name}", "vkCreateInstance", r)
        self.handle = out[0]
        self.api_version = split_version(api)
        self._messenger = None
        if messenger_ci is not None:
            create = vk.instance_proc(self.handle, "vkCreateDebugUtilsMessengerEXT")
            m = ffi.new("VkDebugUtilsMessengerEXT*")
            if create is not None and create(self.handle, messenger_ci, ffi.NULL, m) == 0:
                self._messenger = m[0]
        self.physical_devices = self._enumerate()

    # -- helpers ------------------------------------------------------------------------------
    def _keepit(self, obj: Any) -> Any:
        self._keep.append(obj)
        return obj

    def _cstr(self, s: str) -> Any:
        return self._keepit(self.vk.ffi.new("char[]", s.encode()))

    def _instance_extensions(self) -> list[str]:
        ffi, lib = self.vk.ffi, self.vk.lib
        n = ffi.new("uint32_t*")
        if lib.vkEnumerateInstanceExtensionProperties(ffi.NULL, n, ffi.NULL) < 0:
            return []
        arr = ffi.new("VkExtensionProperties[]", n[0])
        if lib.vkEnumerateInstanceExtensionProperties(ffi.NULL, n, arr) < 0:
            return []
        return [self.vk.string(arr[i].extensionName) for i in range(n[0])]

    def _layers(self) -> list[str]:
        ffi, lib = self.vk.ffi, self.vk.lib
        n = ffi.new("uint32_t*")
        if lib.vkEnumerateInstanceLayerProperties(n, ffi.NULL) < 0:
            return []
        arr = ffi.new("VkLayerProperties[]", n[0])
        if lib.vkEnumerateInstanceLayerProperties(n, arr) < 0:
            return []
        return [self.vk.string(arr[i].layerName) for i in range(n[0])]

    def _messenger_info(self) -> Any:
        vk, ffi, lib = self.vk, self.vk.ffi, self.vk.lib
        messages = self.messages

        @ffi.callback("PFN_vkDebugUtilsMessengerCallbackEXT")
        def callback(severity: int, types: int, data: Any, user: Any) -> int:
            try:
                messages.append(vk.string(data.pMessage) if data.pMessage != ffi.NULL else "?")
            except Exception:  # never let an exception cross into the driver
                pass
            return 0

        self._keepit(callback)
        return self._keepit(vk.new(
            "VkDebugUtilsMessengerCreateInfoEXT",
            messageSeverity=(lib.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
                             | lib.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT),
            messageType=(lib.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
                         | lib.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT
                         | lib.VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT),
            pfnUserCallback=callback))

    def _enumerate(self) -> list[Any]:
        ffi, lib = self.vk.ffi, self.vk.lib
        n = ffi.new("uint32_t*")
        self.vk.check(lib.vkEnumeratePhysicalDevices(self.handle, n, ffi.NULL),
                      "vkEnumeratePhysicalDevices")
        arr = ffi.new("VkPhysicalDevice[]", n[0])
        self.vk.check(lib.vkEnumeratePhysicalDevices(self.handle, n, arr),
                      "vkEnumeratePhysicalDevices")
        return [arr[i] for i in range(n[0])]


_lock = threading.Lock()
_instance: Instance | None = None
_failure: str | None = None


def get() -> Instance:
    """The process's instance; VulkanUnavailable with the reason when there can be none."""
    global _instance, _failure
    with _lock:
        if _instance is not None:
            return _instance
        if _failure is not None:
            raise VulkanUnavailable(_failure)
        try:
            _instance = Instance(load())
            return _instance
        except VulkanUnavailable as e:
            _failure = str(e)
        except VulkanError as e:
            _failure = f"Vulkan could not be initialised: {e}"
        except Exception as e:  # a broken driver must not take the host program down
            _failure = f"Vulkan could not be initialised: {type(e).__name__}: {e}"
        raise VulkanUnavailable(_failure)
