"""What exportable device memory (cudaIpcGetMemHandle's, VK_KHR_external_memory_fd) costs
against plain device memory on a Vulkan device: the numbers behind runtime/external.py's
COSTLY table.

    python bench/vulkan_exportable.py [--device N] [--mib 256] [--reps 7]

In one process, alternating plain and exportable so that a busy machine hurts both alike,
each row the median of --reps rounds: allocating two buffers of --mib MiB (each its own
block) and filling them on the device (the first touch of their pages), a device-to-device
copy between them (the memory's speed once touched), and freeing them (until the driver
has the memory back). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())

from cuport.backends.vulkan import runtime as vkrt  # noqa: E402


def one_round(dev: vkrt.Device, size: int, exportable: bool) -> tuple[float, float, float]:
    dev.memory.exportable = exportable
    s = dev.stream()
    t0 = time.perf_counter()
    a, b = dev.alloc(size), dev.alloc(size)
    assert a.block.exportable == exportable == b.block.exportable
    s.fill(a.address, 1, size // 4, 4)
    s.fill(b.address, 2, size // 4, 4)
    s.synchronize()
    t1 = time.perf_counter()
    s.copy(b.address, a.address, size)
    s.synchronize()
    t2 = time.perf_counter()
    dev.free(a)
    dev.free(b)
    dev.synchronize()
    t3 = time.perf_counter()
    s.close()
    return t1 - t0, t2 - t1, t3 - t2


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    dev = vkrt.open(args.device)
    if dev.memory.export_refusal is not None:
        sys.exit(f"{dev.info.name}: {dev.memory.export_refusal}")
    size = args.mib << 20
    rows: dict[bool, list[tuple[float, float, float]]] = {False: [], True: []}
    one_round(dev, size, False)  # (warm-up: pipelines, staging)
    for _ in range(args.reps):
        for exportable in (False, True):
            rows[exportable].append(one_round(dev, size, exportable))
    print(f"{dev.info.name} ({dev.info.driver_id}), 2 x {args.mib} MiB, median of {args.reps}:")
    for i, what in enumerate(("allocate + first fill", "copy", "free")):
        plain, exp = (statistics.median(r[i] for r in rows[k]) * 1e3 for k in (False, True))
        print(f"  {what:22s} plain {plain:9.2f} ms   exportable {exp:9.2f} ms   x{exp / plain:.2f}")


if __name__ == "__main__":
    main()
