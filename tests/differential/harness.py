"""Build a generated file with nvcc, run it (natively or under cuport), decode its records and
compare them: shared by the test, the recorder and the exploration command.

    python tests/differential/harness.py [--ref] [--save=DIR] [FILE ...]
        build, run under cuport, compare with the GPU recording where there is one, else
        (--ref) with the host reference; --save writes cuport's results in the recording's
        format (to try the test's machinery, or compare two cuport versions)
"""

from __future__ import annotations

import hashlib
import json
import lzma
import math
import os
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen  # noqa: E402
import hostref as H  # noqa: E402
from kernelgen import Kernel, Out  # noqa: E402

#: the GPU's recording; DIFFTEST_RECORDED points elsewhere (a fresh recording, before committing it)
RECORDED = Path(os.environ.get("DIFFTEST_RECORDED", HERE / "recorded"))


# ---------------------------------------------------------------- building
def nvcc_version(nvcc: str) -> str:
    return subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]


def build(g: gen.Generated, cache: Path, nvcc: str = "nvcc") -> Path:
    """The executable for a generated file, from the cache when its source, flags and nvcc
    are unchanged. The cache directory must be the caller's own (it holds what is executed)."""
    key = hashlib.sha256((g.source + repr(g.spec.flags) + repr(gen.NVCC_FLAGS) + nvcc_version(nvcc)).encode()).hexdigest()[:20]
    exe = cache / f"{g.spec.name}-{key}"
    if exe.exists():
        return exe
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        src = Path(tmp) / f"{g.spec.name}.cu"
        src.write_text(g.source)
        out = Path(tmp) / "prog"
        keep = Path(tmp) / "keep"
        keep.mkdir()
        r = subprocess.run([nvcc, *gen.NVCC_FLAGS, *g.spec.flags, "--keep", "--keep-dir", str(keep),
                            "-o", str(out), str(src)], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"nvcc failed for {g.spec.name}:\n{r.stderr[-4000:]}")
        os.replace(keep / f"{g.spec.name}.ptx", exe.with_suffix(".ptx"))
        os.replace(out, exe)
    return exe


def ptx_digests(exe: Path) -> dict[str, str]:
    """A digest of each kernel's PTX as nvcc made it (comments dropped; the module's other
    functions and variables are part of every kernel's digest). The recording keeps them, so
    that a kernel whose PTX differs from the GPU's build (another nvcc) is not compared."""
    # -rdc names internal functions _INTERNAL_<8 hex digits>_<file>: the digits change with
    # the build directory, so they are not part of the digest
    text = re.sub(r"_INTERNAL_[0-9a-f]{8}_", "_INTERNAL_", exe.with_suffix(".ptx").read_text())
    lines = [ln.split("//")[0].rstrip() for ln in text.splitlines()]
    chunks: dict[str, list[str]] = {}
    common: list[str] = []
    cur = common
    for ln in lines:
        head = ln.split("(")[0].split()
        if head and head[-2:-1] == [".entry"]:
            cur = chunks.setdefault(head[-1], [])
        elif head and (".func" in head or ".global" in head or ".const" in head or ".shared" in head) \
                and not ln.startswith((" ", "\t")):
            cur = common
        if ln:
            cur.append(ln)
    base = hashlib.sha256("\n".join(common).encode()).hexdigest()
    return {k: hashlib.sha256((base + "\n".join(v)).encode()).hexdigest()[:16] for k, v in chunks.items()}


# ---------------------------------------------------------------- running
@dataclass
class Run:
    records: dict[str, tuple[int, bytes]]   # kernel -> (status, bytes); "<kernel>@attr": its attributes
    init_status: int | None
    crashed: dict[str, str]                  # kernel -> what happened (exit code, timeout) when no record came
    stderr: str
    raw: bytes = b""                         # the record file as the program wrote it (resumed runs append)
    ptx: dict[str, str] = field(default_factory=dict)  # kernel -> digest of its PTX (ptx_digests)

    def message(self, kernel: str) -> str:
        """cuport's line about a kernel (the error it returned), if it printed one."""
        for ln in self.stderr.splitlines():
            if ln.startswith("cuport:") and f"({kernel})" in ln or f"kernel {kernel}:" in ln:
                return ln
        return ""


def run(exe: Path, cmd_prefix: list[str], env: dict[str, str] | None, nkernels: int,
        names: list[str], timeout: float = 600) -> Run:
    """Run every kernel of exe, resuming after a kernel that ends the process or fails: the
    program is started again at the first kernel after `first` that has no record yet."""
    records: dict[str, tuple[int, bytes]] = {}
    crashed: dict[str, str] = {}
    init = None
    err = []
    first = 0
    with tempfile.TemporaryDirectory() as tmp:
        outfile = Path(tmp) / "out.bin"
        while first < nkernels:
            args = [*cmd_prefix, str(exe), str(outfile)] + ([str(first)] if first else [])
            rc, stderr = _run_group(args, env, timeout)
            err.append(stderr[-20000:])
            recs = gen.parse_records(outfile.read_bytes()) if outfile.exists() else []
            for name, status, data in recs:
                if name == "__init__":
                    init = status
                else:
                    records[name] = (status, data)
            nxt = next((i for i in range(first, nkernels) if names[i] not in records), nkernels)
            if nxt >= nkernels:
                break
            if rc == 3 and nxt > first and records[names[nxt - 1]][0] != 0:
                first = nxt  # the failing kernel has its record; resume after it
                continue
            why = "the program ended without a record" if rc == 0 else f"exit status {rc}"
            crashed[names[nxt]] = why + _last_lines(stderr)
            first = nxt + 1
        raw = outfile.read_bytes() if outfile.exists() else b""
    return Run(records, init, crashed, "\n".join(err), raw)


def _run_group(args: list[str], env, timeout: float) -> tuple[object, str]:
    """Run a program in its own process group; on a timeout the whole group is killed (cuport
    run's child included). Returns (exit status or "timeout", stderr)."""
    p = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, err = p.communicate(timeout=timeout)
        return p.returncode, err.decode(errors="replace")
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        _, err = p.communicate()
        return "timeout", err.decode(errors="replace")


def _last_lines(s: str, n: int = 6) -> str:
    lines = [ln for ln in s.splitlines() if ln.strip() and not ln.startswith("run ")]
    return (": " + " | ".join(lines[-n:])) if lines else ""


def cuport_prefix() -> list[str]:
    return [sys.executable, "-m", "cuport.cli", "run"]


def clean_env(**extra: str) -> dict[str, str]:
    """No cuport switches but the cache's; the CPU device unless `extra` names one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUPORT_") or k == "CUPORT_CACHE_DIR"}
    env["CUPORT_DEVICE"] = "cpu"
    env.update(extra)
    return env


# ---------------------------------------------------------------- decoding and comparing
def decode(k: Kernel, data: bytes) -> dict[str, list[int]]:
    out = {}
    for o in k.outs:
        w = o.width
        chunk = data[o.offset:o.offset + w * o.count]
        out[o.name] = [int.from_bytes(chunk[i:i + w], "little") for i in range(0, len(chunk), w)]
    return out


FMT_OF = {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64"}


def f32val(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def ulp32(x: float) -> float:
    """The spacing of f32 numbers at x (x's binade; subnormal spacing below)."""
    x = abs(x)
    if x < 2.0 ** -126:
        return 2.0 ** -149
    return 2.0 ** (math.floor(math.log2(x)) - 23)


def approx_ok(o: Out, got: int, operands: list[int], ftz: bool = False) -> tuple[bool, str]:
    """Is an approximate result within its documented error of the exact value? Built with
    -ftz=true, denormal operands may count as zeros and denormal results may be flushed."""
    ok, why = _approx_ok(o, got, operands)
    if ok or not ftz:
        return ok, why
    flushed = [v & 0x80000000 if (v >> 23) & 0xFF == 0 else v for v in operands]
    if flushed != operands:
        ok2, _ = _approx_ok(o, got, flushed)
        if ok2:
            return True, "with denormal operands flushed"
    if got & 0x7FFFFFFF == 0:
        try:
            y = o.approx.exact(*[f32val(v) for v in operands])
        except (ValueError, ZeroDivisionError, OverflowError):
            y = math.nan
        if abs(y) < 2.0 ** -126:
            return True, "a denormal result flushed"
    return ok, why


def _approx_ok(o: Out, got: int, operands: list[int]) -> tuple[bool, str]:
    xs = [f32val(v) for v in operands]
    y = f32val(got)
    try:
        exact = o.approx.exact(*xs)
    except ZeroDivisionError:
        exact = math.copysign(math.inf, xs[0]) * math.copysign(1.0, xs[-1]) if xs[0] else math.nan
    except (ValueError, OverflowError):
        exact = math.nan if any(math.isnan(x) for x in xs) else None
        if exact is None:
            return True, "outside the function's domain (not checked)"
    if isinstance(exact, complex):
        return True, "no real result (not checked)"
    if math.isnan(exact):
        return math.isnan(y), "exact NaN"
    if math.isinf(y) or math.isnan(y):
        ok = math.isinf(y) and (math.isinf(exact) or abs(exact) > 3.4e38) and (y > 0) == (exact > 0)
        return ok, f"exact {exact!r}"
    if math.isinf(exact) or abs(exact) > 3.5e38:
        return False, f"exact {exact!r}"
    kind = o.approx.bound[0]
    err = abs(y - exact)
    if kind == "abs":
        bound = o.approx.bound[1]
    elif kind == "rel":
        bound = o.approx.bound[1] * abs(exact) + ulp32(exact) / 2
    elif kind == "ulp":
        bound = o.approx.bound[1] * ulp32(exact)
    elif kind == "expf":
        bound = (2 + math.floor(abs(1.173 * xs[0]))) * ulp32(exact)
    elif kind == "exp10f":
        bound = (2 + math.floor(abs(2.97 * xs[0]))) * ulp32(exact)
    else:  # abs_or_ulp
        _, e, n, lo, hi = o.approx.bound
        bound = e if lo <= xs[0] <= hi else n * ulp32(exact)
    # subnormal results: the bound is at least the subnormal spacing
    bound = max(bound, 2.0 ** -149)
    return err <= bound, f"exact {exact!r}, error {err:.3g}, bound {bound:.3g}"


def nan_of(dtype: str, v: int) -> bool:
    fmt = FMT_OF.get(dtype)
    return fmt is not None and H.is_nan(v, fmt)


@dataclass
class Mismatch:
    kernel: str
    out: Out
    index: int
    got: object
    want: object
    why: str = ""

    def describe(self, src_lines: list[str] | None = None) -> str:
        o = self.out
        line = ""
        if src_lines:
            line = f"\n    line {o.line}: {src_lines[o.line - 1].strip()}"
        g = self.got if not isinstance(self.got, int) else f"{self.got:#x}"
        w = self.want if not isinstance(self.want, int) else f"{self.want:#x}"
        return (f"{self.kernel} {o.name} ({o.what}, {o.dtype}) [{self.index}]: cuport {g}, expected {w}"
                f"{(' (' + self.why + ')') if self.why else ''}{line}")


def compare(k: Kernel, got: dict[str, list[int]], want: dict[str, list], *, reference: bool = False) -> list[Mismatch]:
    """Mismatches of cuport's outputs against the GPU's (or, with reference, the host reference's:
    None there means not modelled, ANYNAN any NaN). Approximate outputs are checked against the
    exact function of their operands (as cuport computed them) within the documented bound."""
    bad = []
    for o in k.outs:
        g = got[o.name]
        if o.approx is not None:
            ops_ = [got[n] for n in o.operands]
            for i, v in enumerate(g):
                ok, why = approx_ok(o, v, [col[i] for col in ops_], k.ftz)
                if not ok:
                    bad.append(Mismatch(k.name, o, i, v, "within the documented error", why))
            continue
        w = want.get(o.name)
        if w is None:
            continue
        for i, (a, e) in enumerate(zip(g, w, strict=True)):
            if e is None:
                continue
            if e == H.ANYNAN:
                if not nan_of(o.dtype, a):
                    bad.append(Mismatch(k.name, o, i, a, "a NaN"))
                continue
            if a != e:
                bad.append(Mismatch(k.name, o, i, a, e))
    return bad


# ---------------------------------------------------------------- recordings
def recording_path(spec: gen.FileSpec) -> Path:
    return RECORDED / f"{spec.name}.bin.xz"


def load_recording(spec: gen.FileSpec) -> list[tuple[str, int, bytes]] | None:
    p = recording_path(spec)
    if not p.exists():
        return None
    return gen.parse_records(lzma.decompress(p.read_bytes()))


def save_recording(out: Path, g: gen.Generated, res: Run, exe: Path, manifest: dict) -> None:
    """Write a run's record file and its manifest entry in the recording's format."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{g.spec.name}.bin.xz").write_bytes(lzma.compress(res.raw, preset=9 | lzma.PRESET_EXTREME))
    manifest.setdefault("files", {})[g.spec.name] = {
        "digest": g.digest, "flags": list(g.spec.flags), "kernels": len(g.kernels), "init_status": res.init_status,
        "ptx": ptx_digests(exe), "failed": {n: st for n, (st, _) in res.records.items() if st},
        "crashed": res.crashed}


def main(argv: list[str]) -> int:
    use_ref = "--ref" in argv
    save = next((Path(a.split("=", 1)[1]) for a in argv if a.startswith("--save=")), None)
    names = [a for a in argv if not a.startswith("--")]
    manifest: dict = {"generator_version": gen.GENERATOR_VERSION, "nvcc": nvcc_version(shutil.which("nvcc") or "nvcc"),
                      "gpu": "none: cuport's own results (harness.py --save)"}
    if save is not None and (save / "manifest.json").exists():  # add to what an earlier --save wrote
        manifest = json.loads((save / "manifest.json").read_text())
    cache = Path(os.environ.get("DIFFTEST_BUILD_CACHE", Path(tempfile.gettempdir()) / f"difftest-build-{os.getuid()}"))
    nvcc = shutil.which("nvcc") or "nvcc"
    total_bad = 0
    coverage: dict[str, list[int]] = {}
    for spec in gen.FILES:
        if names and spec.name not in names:
            continue
        g = gen.generate(spec)
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        exe = build(g, cache, nvcc)
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        knames = [k.name for k in g.kernels]
        res = run(exe, cuport_prefix(), clean_env(), len(g.kernels), knames)
        c2 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = lambda a, b: (b.ru_utime + b.ru_stime) - (a.ru_utime + a.ru_stime)  # noqa: E731
        print(f"-- {spec.name}: CPU seconds: nvcc {cpu(c0, c1):.1f}, cuport run {cpu(c1, c2):.1f}")
        if save is not None:
            save_recording(save, g, res, exe, manifest)
            (save / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        src_lines = g.source.split("\n")
        rec = None if use_ref else load_recording(spec)
        gpu = {n: d for n, s, d in rec} if rec else None
        print(f"== {spec.name}: {len(res.records)} records, init status {res.init_status}")
        for n, why in res.crashed.items():
            print(f"  {n}: no result: {why}")
        for k in g.kernels:
            if k.name not in res.records:
                continue
            status, data = res.records[k.name]
            if status:
                print(f"  {k.name} ({k.family}): status {status}: {res.message(k.name)}")
                total_bad += 1
                continue
            got = decode(k, data)
            if gpu is not None:
                want = decode(k, gpu[k.name])
                bad = compare(k, got, want)
            else:
                want = k.ref(g.pools, got) if k.ref else {}
                bad = compare(k, got, want, reference=True)
                fam = k.family.split(":")[0]
                c = coverage.setdefault(fam, [0, 0])
                for o in k.outs:
                    c[1] += o.count
                    c[0] += o.count if o.approx else sum(1 for v in want.get(o.name, []) if v is not None)
            if bad:
                total_bad += 1
                print(f"  {k.name} ({k.family}): {len(bad)} mismatches")
                seen = set()
                for m in bad:
                    if m.out.name in seen:
                        continue
                    seen.add(m.out.name)
                    print("    " + m.describe(src_lines).replace("\n", "\n    "))
    if coverage:
        print("host reference coverage (elements checked / elements):",
              ", ".join(f"{f} {a}/{b} ({100 * a // max(b, 1)}%)" for f, (a, b) in sorted(coverage.items())))
    return 1 if total_bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
