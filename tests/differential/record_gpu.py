"""Record what an NVIDIA GPU computes for every generated kernel (run on the H200 machine).

    python3 tests/differential/record_gpu.py          # writes $OUT/differential/ (or ./recorded-new)

From the repository root, with nvcc and an NVIDIA GPU; only the standard library is needed.
It generates the sources (gen.py), builds them with nvcc -arch=sm_90 in parallel, runs each
program natively, and writes, per generated file, `<name>.bin.xz` (the program's record file,
xz-compressed) and one `manifest.json` (source digests, nvcc and driver versions, the GPU, run
times, any kernel that failed). It also compares the GPU's results with the host reference
(hostref.py) and writes the disagreements to `ref_vs_gpu.txt`: the reference is only an aid
for finding bugs without a GPU, and this says where it is wrong. Takes about two minutes.

Then commit the .bin.xz files and manifest.json to tests/differential/recorded/.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen  # noqa: E402
import harness  # noqa: E402


def _gpu_name() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def _ref_check(args) -> list[str]:
    """Host reference against the GPU's outputs of one file (in a worker process)."""
    name, data = args
    spec = next(s for s in gen.FILES if s.name == name)
    g = gen.generate(spec)
    recs = {n: (st, d) for n, st, d in gen.parse_records(data)}
    lines = []
    src = g.source.split("\n")
    for k in g.kernels:
        st, d = recs.get(k.name, (None, b""))
        if st != 0 or k.ref is None:
            continue
        got = harness.decode(k, d)
        try:
            want = k.ref(g.pools, got)
        except Exception as e:  # a reference bug must not lose the recording
            lines.append(f"{k.name}: reference raised {type(e).__name__}: {e}")
            continue
        bad = harness.compare(k, got, want, reference=True)
        seen = set()
        for m in bad:
            if m.out.name not in seen:
                seen.add(m.out.name)
                lines.append(m.describe(src).replace("cuport", "GPU", 1))
    return lines


def main() -> int:
    out = Path(os.environ.get("OUT", "recorded-new")) / "differential"
    out.mkdir(parents=True, exist_ok=True)
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    t0 = time.time()
    gens = [gen.generate(s) for s in gen.FILES]
    cache = Path(tempfile.mkdtemp(prefix="difftest-build-"))
    with ThreadPoolExecutor(os.cpu_count() or 4) as pool:
        exes = list(pool.map(lambda g: harness.build(g, cache, nvcc), gens))
    t_build = time.time() - t0
    manifest = {"generator_version": gen.GENERATOR_VERSION, "nvcc": harness.nvcc_version(nvcc), "gpu": _gpu_name(),
                "nvcc_flags": list(gen.NVCC_FLAGS), "build_seconds": round(t_build, 1), "files": {}}
    datas = {}
    for g, exe in zip(gens, exes, strict=True):
        t1 = time.time()
        names = [k.name for k in g.kernels]
        res = harness.run(exe, [], None, len(names), names, timeout=300)
        datas[g.spec.name] = res.raw
        harness.save_recording(out, g, res, exe, manifest)
        manifest["files"][g.spec.name]["run_seconds"] = round(time.time() - t1, 2)
        failed = manifest["files"][g.spec.name]["failed"]
        print(f"{g.spec.name}: {len(res.records)} kernels recorded, {len(failed)} failed, {len(res.crashed)} crashed,"
              f" {time.time() - t1:.1f} s", flush=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    with ProcessPoolExecutor(os.cpu_count() or 4) as pool:
        checks = list(pool.map(_ref_check, list(datas.items())))
    lines = [ln for part in checks for ln in part]
    (out / "ref_vs_gpu.txt").write_text("\n".join(lines) + "\n")
    print(f"host reference vs GPU: {len(lines)} disagreements (ref_vs_gpu.txt); total {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
