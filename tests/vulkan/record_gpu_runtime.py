"""Record what the Vulkan runtime finds on a real GPU (run on the H200 host; see the report).

    python3 tests/vulkan/record_gpu_runtime.py OUTDIR

Writes OUTDIR/vkrt_devices.json: every device's DeviceInfo, and for each usable one what
opening it gives: the enabled features and extensions, how host and device share an address
(identity / alias / none), whether device addresses could be kept free of host objects
(unified addressing), and sample allocations of each kind with their device addresses, host
pointers, memory types and the /proc/self/maps lines around them (where the driver puts
device addresses matters for giving host and kernels one pointer). Never raises: failures
are recorded as text.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())

from cuport.backends.vulkan import runtime as vkrt  # noqa: E402


def maps_around(addresses: list[int]) -> list[str]:
    try:
        lines = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return []
    out = []
    for ln in lines:
        lo, hi = (int(x, 16) for x in ln.split()[0].split("-"))
        if any(lo - (1 << 30) <= a < hi + (1 << 30) for a in addresses):
            out.append(ln)
    return out


def probe_device(info: vkrt.DeviceInfo) -> dict:
    rec: dict = {}
    t = time.perf_counter()
    dev = vkrt.open(info.index)
    rec["open_ms"] = (time.perf_counter() - t) * 1e3
    rec["enabled_features"] = sorted(dev.enabled_features)
    rec["enabled_extensions"] = sorted(dev.enabled_extensions)
    rec["queues"] = len(dev.queues)
    rec["managed_strategy"] = dev.memory.strategy
    rec["managed_same_address"] = dev.managed_same_address
    rec["unified_addressing_after_probe"] = dev.unified_addressing
    rec["host_pointer_is_device_pointer"] = dev.host_pointer_is_device_pointer
    rec["memory_info"] = dev.memory_info()
    allocs = []
    addresses = []
    for kind in ("device", "host", "managed"):
        for size in (4096, 64 << 20):
            entry: dict = {"kind": kind, "size": size}
            try:
                b = dev.alloc(size, kind)
                t = dev.info.memory_types[b.block.type_index]
                entry.update(address=hex(b.address), host_ptr=hex(b.host_ptr) if b.host_ptr else None,
                             same_address=b.same_address, reserved=b.block.reserved,
                             alias=b.block.pages is not None, memory_type=sorted(t.flags),
                             heap=t.heap)
                addresses.append(b.address)
                if b.host_ptr:
                    addresses.append(b.host_ptr)
                allocs.append((entry, b))
            except Exception as e:
                entry["error"] = f"{type(e).__name__}: {e}"
                allocs.append((entry, None))
    rec["maps"] = maps_around(addresses)
    rec["allocations"] = [e for e, _ in allocs]
    rec["unified_addressing_after_allocations"] = dev.unified_addressing
    for _, b in allocs:
        if b is not None:
            dev.free(b)
    return rec


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    rec: dict = {"python": sys.version, "unavailable_reason": None, "devices": []}
    try:
        infos = vkrt.devices()
        rec["unavailable_reason"] = vkrt.unavailable_reason()
        for info in infos:
            d = {"info": info.as_dict(), "describe": info.describe()}
            if info.usable:
                try:
                    d["opened"] = probe_device(info)
                except Exception:
                    d["open_error"] = traceback.format_exc()
            rec["devices"].append(d)
    except Exception:
        rec["error"] = traceback.format_exc()
    (out / "vkrt_devices.json").write_text(json.dumps(rec, indent=1))
    for d in rec["devices"]:
        print("\n".join(d["describe"]))
        o = d.get("opened")
        if o:
            print(f"  opened in {o['open_ms']:.1f} ms; managed: {o['managed_strategy']}; unified "
                  f"addressing: {o['unified_addressing_after_allocations']}")
            for a in o["allocations"]:
                print("   ", a)
        elif "open_error" in d:
            print(d["open_error"])
    if not rec["devices"]:
        print("no Vulkan devices:", rec["unavailable_reason"], rec.get("error", ""))


if __name__ == "__main__":
    main()
