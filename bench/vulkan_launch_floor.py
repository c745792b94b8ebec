"""What a Vulkan driver itself costs for what cuport records per launch (issue 7): the floor
under bench/programs/overhead.cu's launch figures.

    python bench/vulkan_launch_floor.py [--reps 5000] [--device N]

An empty kernel (GLSL, 32 invocations, 128 bytes of push constants, as cuport's kernels
declare) launched through prebuilt cffi calls into the driver, with no more Python than a
loop (on a CPU driver such as lavapipe the process's CPU time includes the kernels' own
execution, on its threads):
- record: a work barrier, the push constants and the dispatch per launch, a submission every
  256 launches, one wait at the end (cuport's queued launches, without cuport);
- record, no barrier: the same without the barrier (what the barrier costs the driver);
- submit + wait: one launch in a command buffer of its own, submitted and waited for (launch +
  synchronise, without cuport's driver layers: the runtime's Stream.submit and wait remain).
Printed per launch: wall microseconds, the process's and the calling thread's CPU
microseconds. Nothing is asserted here.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())

from cuport.backends.vulkan import runtime as vkrt  # noqa: E402

EMPTY = """#version 460
layout(local_size_x = 32) in;
layout(push_constant) uniform P { uint v[32]; } p;
void main() {}
"""
PUSH = 128


def spirv(source: str) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        src, out = Path(d) / "k.comp", Path(d) / "k.spv"
        src.write_text(source)
        subprocess.run(["glslangValidator", "-V", "--target-env", "vulkan1.2", "-o", str(out),
                        str(src)], check=True, capture_output=True)
        return out.read_bytes()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5000)
    ap.add_argument("--device", type=int, default=0)
    args = ap.parse_args()
    dev = vkrt.open(args.device)
    cmd = dev.cmd
    if dev.barrier2 is None:
        sys.exit("the device has no synchronization2 (cuport then records vkCmdPipelineBarrier)")
    pipe = dev.pipeline(spirv(EMPTY), "main", (32, 1, 1), PUSH)
    s = dev.stream(eager=False, submitter=False)
    push = bytes(PUSH)
    barrier, dep = dev.barrier2, dev.dependency_work
    bind, stage = dev.bind_compute, dev.stage_compute
    layout, handle = pipe.layout, pipe.handle
    push_constants, dispatch = cmd.vkCmdPushConstants, cmd.vkCmdDispatch

    def begin():
        cb = s._begin()
        cmd.vkCmdBindPipeline(cb, bind, handle)
        s._count = 1  # (a command is recorded: submit() takes the buffer)
        return cb

    def record(n: int, with_barrier: bool = True) -> None:
        cb = begin()
        for i in range(n):
            if i % 256 == 255:
                s.submit()
                cb = begin()
            if with_barrier:
                barrier(cb, dep)
            push_constants(cb, layout, stage, 0, PUSH, push)
            dispatch(cb, 1, 1, 1)
        s.synchronize()

    def submit_wait(n: int) -> None:
        for _ in range(n):
            cb = begin()
            push_constants(cb, layout, stage, 0, PUSH, push)
            dispatch(cb, 1, 1, 1)
            s.synchronize()

    rows = [("record (barrier, push constants, dispatch)", record),
            ("record, no barrier", lambda n: record(n, False)),
            ("submit + wait of one launch", submit_wait)]
    print(f"{dev.info.name}: {args.reps} launches a row")
    for name, fn in rows:
        fn(200)
        t0, c0, h0 = time.perf_counter(), time.process_time(), time.thread_time()
        fn(args.reps)
        t, c, h = time.perf_counter() - t0, time.process_time() - c0, time.thread_time() - h0
        n = args.reps
        print(f"{name:44s} {t / n * 1e6:7.2f} us (cpu {c / n * 1e6:.2f} us, "
              f"calling thread {h / n * 1e6:.2f} us)")


if __name__ == "__main__":
    main()
