"""CUPORT_VK_PROFILE=1: each kernel's time on the GPU, printed to stderr at exit.

A kernel's wall time per launch as a program measures it (events around many launches)
mixes the GPU's time with the gaps where the GPU waits for the host; this tells the two
apart: a timestamp is written before and after each dispatch, and the table at exit gives
per kernel the launches, the GPU time in total and per launch, so that (events' time -
GPU time) is what the host costs. The median gap (the GPU's idle time between the end of
the dispatch before and the start of this one) says whether the host keeps the GPU fed:
a gap near zero with a slow program means the kernel itself is slow. The timestamps
serialise nothing that was not serial already (a stream's commands are separated by
barriers anyway).
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .runtime.stream import Stream, Timestamp

PENDING_MAX = 96  # timestamp pairs kept before the finished ones are read (a stream has 256 slots)


def enabled() -> bool:
    return os.environ.get("CUPORT_VK_PROFILE", "") not in ("", "0")


class Profile:
    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self._pending: list[tuple[str, Timestamp, Timestamp]] = []
        self.totals: dict[str, list[float]] = {}  # name -> [launches, GPU ns]
        self.gaps: dict[str, list[float]] = {}  # name -> ns idle before each launch
        self._prev_end: float | None = None
        self._lock = threading.Lock()
        from .runtime import device

        device.before_exit(self.report)

    def before(self) -> Timestamp:
        return self.stream.timestamp(submit=False)

    def after(self, name: str, start: Timestamp) -> None:
        end = self.stream.timestamp()
        with self._lock:
            self._pending.append((name, start, end))
            if len(self._pending) >= PENDING_MAX:
                self._fold(wait=len(self._pending) >= 2 * PENDING_MAX)

    def _fold(self, wait: bool) -> None:
        """Read the pairs whose end has been written (all of them if `wait`)."""
        done = self.stream.completed()
        n = 0  # the pairs are in stream order: the finished ones are a prefix
        for name, start, end in self._pending:
            if not (wait or end.ticket <= done):
                break
            n += 1
            s_ns, e_ns = start.ns(), end.ns()
            t = self.totals.setdefault(name, [0, 0.0])
            t[0] += 1
            t[1] += e_ns - s_ns
            if self._prev_end is not None:
                self.gaps.setdefault(name, []).append(s_ns - self._prev_end)
            self._prev_end = e_ns
        del self._pending[:n]

    def report(self) -> None:
        try:
            with self._lock:
                self._fold(wait=True)
        except Exception as e:  # (the device went first: say so rather than nothing)
            print(f"cuport profile: timestamps could not be read: {e}", file=sys.stderr)
        if not self.totals:
            return
        lines = ["cuport profile (GPU time per kernel, CUPORT_VK_PROFILE; idle gap before a "
                 "launch: median, mean, largest):"]
        for name, (n, ns) in sorted(self.totals.items(), key=lambda kv: -kv[1][1]):
            gaps = self.gaps.get(name)
            gap = (f"{statistics.median(gaps) / 1e3:8.2f} {statistics.fmean(gaps) / 1e3:8.2f} "
                   f"{max(gaps) / 1e3:9.2f} us gap" if gaps else " " * 33)
            lines.append(f"  {ns / 1e6:10.3f} ms  {int(n):7d} launches  {ns / n / 1e3:10.2f} us each"
                         f"  {gap}  {name}")
        print("\n".join(lines), file=sys.stderr, flush=True)
