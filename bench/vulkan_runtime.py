"""Overheads of cuport's Vulkan runtime: dispatch, submission and copies.

    python bench/vulkan_runtime.py [--device N] [--out FILE.json]

Rows (each the median of repeated runs after a warm-up):
- pipeline: creating a compute pipeline (first time) and asking for it again (reused);
- empty dispatch + wait: one launch of an empty kernel, then wait for it, in a loop;
- N dispatches, then one wait: per launch, with the default policy (submit when the GPU has
  nothing left of the stream, else batch), with batching only (submit every 64), and the
  host's recording cost alone (nothing submitted until the end);
- copies of 1 KiB and 64 MiB, host->device, device->host (pageable host memory, the way
  cudaMemcpy takes it), device->device, and 64 MiB to/from pinned memory; each with the
  host paths the runtime uses on an idle stream with mapped memory, and with GPU copies only.
The shaders are GLSL compiled by glslangValidator (glslang-tools). Nothing is asserted here.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())

from cuport.backends.vulkan import runtime as vkrt  # noqa: E402

EMPTY = """#version 460
layout(local_size_x = 64) in;
void main() {}
"""

INCR = """#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 64) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 { uint v[]; };
layout(push_constant) uniform P { U32 buf; uint n; } p;
void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) p.buf.v[i] += 1u; }
"""


def glsl(src: str) -> bytes:
    exe = shutil.which("glslangValidator")
    if exe is None:
        sys.exit("glslangValidator is needed (Debian/Ubuntu: glslang-tools)")
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "k.comp"
        p.write_text(src)
        subprocess.run([exe, "-V", "--target-env", "vulkan1.2", "-S", "comp", str(p), "-o",
                        str(p.with_suffix(".spv"))], check=True, capture_output=True)
        return p.with_suffix(".spv").read_bytes()


def median_us(fn, reps: int, warm: int = 3) -> float:
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", type=int, default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    infos = [d for d in vkrt.devices() if d.usable]
    if not infos:
        sys.exit(f"no usable Vulkan device: {vkrt.unavailable_reason()}")
    info = infos[0] if args.device is None else vkrt.devices()[args.device]
    dev = vkrt.open(info.index)
    rows: list[tuple[str, float, str]] = []

    def row(name: str, value: float, unit: str) -> None:
        rows.append((name, value, unit))
        print(f"{name:<58} {value:>12.2f} {unit}", flush=True)

    print(f"device: {info.name} ({info.driver_name} {info.driver_info}), Vulkan "
          f"{'.'.join(map(str, info.api_version))}; managed memory: {dev.memory.strategy}; "
          f"queues: {len(dev.queues)}")

    empty_spv, incr_spv = glsl(EMPTY), glsl(INCR)
    t = time.perf_counter()
    empty = dev.pipeline(empty_spv, "main", (64, 1, 1), 0)
    row("pipeline: create (empty kernel)", (time.perf_counter() - t) * 1e3, "ms")
    t = time.perf_counter()
    incr = dev.pipeline(incr_spv, "main", (64, 1, 1), 12)
    row("pipeline: create (buffer-reference kernel)", (time.perf_counter() - t) * 1e3, "ms")
    row("pipeline: ask again (reused)",
        median_us(lambda: dev.pipeline(incr_spv, "main", (64, 1, 1), 12), 200), "us")

    s = dev.stream()

    def one():
        s.dispatch(empty, (1, 1, 1))
        s.synchronize()

    row("empty dispatch + wait", median_us(one, 300), "us")

    n_launch = 2000
    buf = dev.alloc(64 * 4)
    push = struct.pack("<QI", buf.address, 64)
    for label, kw in (("default policy", {}), ("batches of 64", {"eager": False, "batch": 64}),
                      ("recording only", {"eager": False, "batch": 1 << 30})):
        st = dev.stream(**kw)

        def many(st=st):
            for _ in range(n_launch):
                st.dispatch(incr, (1, 1, 1), push)
            st.synchronize()

        row(f"{n_launch} dependent dispatches + one wait, {label}: per launch",
            median_us(many, 5, warm=1) / n_launch, "us")
        if label == "recording only":
            t = time.perf_counter()
            for _ in range(n_launch):
                st.dispatch(incr, (1, 1, 1), push)
            rec = (time.perf_counter() - t) / n_launch * 1e6
            row("  of which recording one launch (host)", rec, "us")
            st.synchronize()
        st.close()
    dev.free(buf)

    copy_rows(dev, 1 << 10, 300, row)
    copy_rows(dev, 64 << 20, 7, row)

    if args.out:
        Path(args.out).write_text(json.dumps({
            "device": info.name, "driver": f"{info.driver_name} {info.driver_info}",
            "rows": [{"name": n, "value": v, "unit": u} for n, v, u in rows]}, indent=1))


def copy_rows(dev: vkrt.Device, size: int, reps: int, row) -> None:
    label = "1 KiB" if size < (1 << 20) else "64 MiB"
    big = size >= (1 << 20)
    d1, d2 = dev.alloc(size), dev.alloc(size)
    host = np.ones(size, dtype=np.uint8)
    back = np.empty(size, dtype=np.uint8)

    def report(name: str, us: float) -> None:
        if big:
            row(f"copy {label} {name}", size / us / 1e3, "GB/s")
        else:
            row(f"copy {label} {name}", us, "us")

    for paths in (True, False):
        st = dev.stream(host_paths=paths)
        how = "host paths" if paths else "GPU copies"

        def h2d(st: vkrt.Stream = st) -> None:
            st.copy_to_device(d1.address, host)
            st.synchronize()

        def d2h(st: vkrt.Stream = st) -> None:
            st.copy_to_host(back, d1.address)

        def d2d(st: vkrt.Stream = st) -> None:
            st.copy(d2.address, d1.address, size)
            st.synchronize()

        report(f"host->device ({how})", median_us(h2d, reps))
        report(f"device->host ({how})", median_us(d2h, reps))
        report(f"device->device ({how})", median_us(d2d, reps))
        st.close()
    if big:
        pinned = dev.alloc(size, "host")
        ctypes.memset(pinned.host_ptr, 1, size)
        st = dev.stream()

        def ph2d() -> None:
            st.copy_to_device(d1.address, pinned.host_ptr, size)
            st.synchronize()

        def pd2h() -> None:
            st.copy_to_host(pinned.host_ptr, d1.address, size)
            st.synchronize()

        report("pinned->device", median_us(ph2d, reps))
        report("device->pinned", median_us(pd2h, reps))
        st.close()
        dev.free(pinned)
    dev.free(d1)
    dev.free(d2)


if __name__ == "__main__":
    main()
