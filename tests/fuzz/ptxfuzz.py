"""Mutations of real nvcc-made PTX, fatbins and ELF images, and what ptxas and cuport make of them.

A mutant is a pure function of (seed, index): `mutant(corpus, seed, i)` gives the same
text every time, so any input a run reports can be rebuilt from its two numbers. The
mutations are those that turn working PTX into nearly-working PTX: a token replaced by
another of the same file, a number by an edge value (0, 2^31, 2^64, 10^30...), a
modifier changed or added (`.v0`, `.cc`), a register by one of another type, a line
deleted, duplicated or moved, a directive's value changed, a character inserted.

`cuport_verdict` loads a text as cuport's loading path does (parse, validate, link,
allocate globals) and compiles its kernels as far as LLVM's verifier (the native code
generation after it is left out: it takes ten times as long and cannot fail on IR that
verifies). `ptxas_verdict` asks the installed ptxas.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

#: The corpus: real programs of this repository, compiled by nvcc (-ptx, and as fatbin/ELF).
SOURCES = [
    ("programs/vector_add.cu", "sm_90"),
    ("programs/reduction.cu", "sm_90"),
    ("programs/scan.cu", "sm_90"),
    ("programs/histogram.cu", "sm_90"),
    ("programs/atomics.cu", "sm_90"),
    ("programs/warp_vote.cu", "sm_90"),
    ("programs/barrier_loop.cu", "sm_90"),
    ("programs/transpose.cu", "sm_90"),
    ("programs/int64_math.cu", "sm_90"),
    ("programs/struct_params.cu", "sm_90"),
    ("programs/device_functions.cu", "sm_90"),
    ("programs/constant_memory.cu", "sm_90"),
    ("programs/math_f32.cu", "sm_75"),
    ("programs/stencil2d.cu", "sm_80"),
]

_TOKEN = re.compile(
    r"\s+|//[^\n]*|[%.]?[A-Za-z_$][\w$]*(?:(?:\.|::)[\w$]+)*|0[fFdD][0-9a-fA-F]{8,16}"
    r"|0[xX][0-9a-fA-F]+U?|\d+\.\d*(?:[eE][+-]?\d+)?|\d+U?|.", re.S)
_NUMBER = re.compile(r"-?(?:0[xX][0-9a-fA-F]+U?|\d+U?)$")
_REGISTER = re.compile(r"%[A-Za-z]+\d+$")

EDGE_NUMBERS = ["0", "1", "-1", "2", "3", "7", "8", "31", "32", "33", "63", "64", "65", "255",
                "256", "1024", "1025", "4096", "65535", "65536", "2147483647", "2147483648",
                "4294967295", "4294967296", "9223372036854775807", "18446744073709551615",
                "18446744073709551616", "1000000000000000000000000000000", "0x7fffffff",
                "0xFFFFFFFFFFFFFFFF", "0x1FFFFFFFFFFFFFFFF", "09", "0b102", "1.5", "1e400",
                "0f7FC00000", "0d7FF0000000000000", "-0", "1099511627776"]
EDGE_MODIFIERS = [".v0", ".v1", ".v2", ".v3", ".v4", ".v8", ".b128", ".f16", ".f16x2", ".bf16",
                  ".pred", ".cc", ".sat", ".wide", ".hi", ".lo", ".rn", ".rz", ".ftz", ".approx",
                  ".full", ".s8", ".u8", ".s16", ".u64", ".f64", ".b8", ".global", ".shared",
                  ".local", ".const", ".param", ".volatile", ".relaxed", ".acquire", ".gpu",
                  ".sys", ".uni", ".sync", ".aligned", ".x", ".y", ".z", ".w", ".q32", ".e4m3x2"]
EDGE_REGISTERS = ["%r1", "%rd1", "%f1", "%fd1", "%p1", "%rs1", "%r0", "%r99999", "%q1", "%rd0",
                  "%tid.x", "%laneid", "%clock64", "%envreg3", "_", "WARP_SZ"]
EDGE_DIRECTIVES = [
    (r"\.version \d+\.\d+", [".version 9.0", ".version 8.5", ".version 7.0", ".version 1.0",
                             ".version 9.9", ".version 99.0", ".version 9", ".version 9.x",
                             ".version 0.0", ".version 6.5"]),
    (r"\.target \w+", [".target sm_90", ".target sm_80", ".target sm_20", ".target sm_99",
                       ".target sm_90a", ".target compute_90", ".target sm_", ".target gfx90",
                       ".target sm_90, texmode_independent", ".target sm_90, debug"]),
    (r"\.address_size \d+", [".address_size 64", ".address_size 32", ".address_size 65536",
                             ".address_size 0", ".address_size 16"]),
    (r"\.align \d+", [".align 0", ".align 1", ".align 3", ".align 6", ".align 8", ".align 16",
                      ".align 4096", ".align 65536", ".align 2147483648"]),
    (r"\.maxntid [\d, ]+", [".maxntid 0", ".maxntid 1025", ".maxntid 32, 32, 32",
                            ".maxntid 4294967296", ".maxntid 1, 2, 3, 4"]),
    (r"%\w+<\d+>", ["%r<0>", "%r<1>", "%r<2147483648>", "%r<1000000>", "%rd<3>", "%p<100>"]),
]
KINDS = ["token", "token", "number", "modifier", "modifier", "register", "register",
         "delete_token", "duplicate_token", "delete_line", "duplicate_line", "swap_lines",
         "move_line", "directive", "char", "label", "array"]


@dataclass
class Mutant:
    text: str
    kind: str
    line: int  # 1-based line of the mutation in the mutant
    source: str


@dataclass
class Verdict:
    kind: str  # "ok", "rejected", "internal"
    code: int = 0
    message: str = ""


def nvcc() -> str | None:
    return shutil.which("nvcc")


def ptxas() -> str | None:
    return shutil.which("ptxas")


def _build(cmd: list[str], out: Path) -> None:
    if not out.exists():
        tmp = out.with_suffix(out.suffix + f".{os.getpid()}.tmp")
        subprocess.run([*cmd, "-o", str(tmp)], check=True, capture_output=True)
        os.replace(tmp, out)


def _build_all(jobs: list[tuple[list[str], Path]]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max(1, min(4, os.cpu_count() or 1))) as pool:
        list(pool.map(lambda job: _build(*job), jobs))


def build_corpus(out: Path) -> list[tuple[str, str]]:
    """(name, PTX text) of every source, built once into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    jobs = []
    for rel, arch in SOURCES:
        src = ROOT / "tests" / rel
        jobs.append(([nvcc(), "-ptx", "-O3", f"-arch={arch}", str(src)],
                     out / (src.stem + f"-{arch}.ptx")))
    _build_all(jobs)
    return [(Path(rel).stem, path.read_text()) for (rel, _), (_, path) in zip(SOURCES, jobs,
                                                                              strict=True)]


def build_images(out: Path) -> list[tuple[str, bytes]]:
    """Fatbins (compressed and not) and an ELF cubin of two of the sources."""
    out.mkdir(parents=True, exist_ok=True)
    jobs = []
    for rel, flags, suffix in (
            ("programs/reduction.cu", ["-fatbin", "-arch=sm_90"], "fatbin"),
            ("programs/scan.cu", ["-fatbin", "-arch=sm_90", "-Xfatbin=-compress-all",
                                  "--compress-mode=speed"], "lz4.fatbin"),
            ("programs/histogram.cu", ["-fatbin", "-gencode=arch=compute_90,code=compute_90",
                                       "-Xfatbin=-compress=false"], "plain.fatbin"),
            ("programs/vector_add.cu", ["-cubin", "-arch=sm_90"], "cubin")):
        src = ROOT / "tests" / rel
        jobs.append(([nvcc(), "-O3", *flags, str(src)], out / f"{src.stem}.{suffix}"))
    _build_all(jobs)
    return [(path.name, path.read_bytes()) for _, path in jobs]


# ------------------------------------------------------------------ mutation

def _code_lines(lines: list[str]) -> list[int]:
    return [i for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("//")]


def _tokens(line: str) -> list[str]:
    return _TOKEN.findall(line)


def _pick_token(rng: random.Random, toks: list[str], pred) -> int | None:
    idx = [i for i, t in enumerate(toks) if pred(t)]
    return rng.choice(idx) if idx else None


def mutate(text: str, rng: random.Random, pools: dict[str, list[str]]) -> tuple[str, str, int]:
    """One mutation of `text`: (mutant, kind, line)."""
    lines = text.split("\n")
    code = _code_lines(lines)
    kind = rng.choice(KINDS)
    li = rng.choice(code)
    toks = _tokens(lines[li])
    if kind in ("token", "number", "modifier", "register", "delete_token", "duplicate_token",
                "label", "array"):
        j = None
        if kind == "token":
            j = _pick_token(rng, toks, lambda t: not t.isspace())
            if j is not None:
                same = [t for t in pools["all"] if (t[:1] == toks[j][:1])] or pools["all"]
                toks[j] = rng.choice(same if rng.random() < 0.7 else pools["all"])
        elif kind == "number":
            j = _pick_token(rng, toks, lambda t: bool(_NUMBER.match(t)))
            if j is not None:
                toks[j] = rng.choice(EDGE_NUMBERS + pools["numbers"])
        elif kind == "modifier":
            j = _pick_token(rng, toks, lambda t: "." in t[1:] and t[0] not in "%$")
            if j is not None:
                parts = re.split(r"(?=\.)", toks[j])
                k = rng.randrange(1, len(parts)) if len(parts) > 1 else 1
                new = rng.choice(EDGE_MODIFIERS + pools["modifiers"])
                action = rng.choice(["replace", "insert", "delete"]) if len(parts) > 1 else "insert"
                if action == "replace":
                    parts[k] = new
                elif action == "insert":
                    parts.insert(k, new)
                else:
                    del parts[k]
                toks[j] = "".join(parts)
        elif kind == "register":
            j = _pick_token(rng, toks, lambda t: bool(_REGISTER.match(t)))
            if j is not None:
                toks[j] = rng.choice(EDGE_REGISTERS + pools["registers"])
        elif kind == "delete_token":
            j = _pick_token(rng, toks, lambda t: not t.isspace())
            if j is not None:
                toks[j] = ""
        elif kind == "duplicate_token":
            j = _pick_token(rng, toks, lambda t: not t.isspace())
            if j is not None:
                toks[j] = toks[j] + rng.choice(["", " ", ", "]) + toks[j]
        elif kind == "label":
            j = _pick_token(rng, toks, lambda t: t.startswith("$L"))
            if j is not None:
                toks[j] = rng.choice(pools["labels"] + ["$L__BB9_99", "$L__BB0_1", toks[j] + "x"])
        elif kind == "array":
            j = _pick_token(rng, toks, lambda t: t == "[")
            if j is not None and j + 1 < len(toks) and _NUMBER.match(toks[j + 1]):
                toks[j + 1] = rng.choice(EDGE_NUMBERS)
        if j is None:  # nothing of that kind on the line: replace any token instead
            j = _pick_token(rng, toks, lambda t: not t.isspace())
            if j is None:
                return "\n".join(lines), kind, li + 1
            toks[j] = rng.choice(pools["all"])
        lines[li] = "".join(toks)
        return "\n".join(lines), kind, li + 1
    if kind == "delete_line":
        del lines[li]
    elif kind == "duplicate_line":
        lines.insert(li, lines[li])
    elif kind == "swap_lines":
        lj = rng.choice(code)
        lines[li], lines[lj] = lines[lj], lines[li]
    elif kind == "move_line":
        ln = lines.pop(li)
        li = rng.randrange(len(lines) + 1)
        lines.insert(li, ln)
    elif kind == "directive":
        for pattern, values in rng.sample(EDGE_DIRECTIVES, len(EDGE_DIRECTIVES)):
            hits = [i for i, ln in enumerate(lines) if re.search(pattern, ln)]
            if hits:
                li = rng.choice(hits)
                lines[li] = re.sub(pattern, rng.choice(values), lines[li], count=1)
                break
    elif kind == "char":
        s = lines[li]
        p = rng.randrange(len(s) + 1)
        c = rng.choice("{}()[];,.%@!|<>+-=_$:*xX0919 \t")
        op = rng.choice(["insert", "replace", "delete"])
        if op == "insert":
            s = s[:p] + c + s[p:]
        elif op == "replace":
            s = s[:p] + c + s[p + 1:]
        else:
            s = s[:p] + s[p + 1:]
        lines[li] = s
    return "\n".join(lines), kind, li + 1


def pools_of(text: str) -> dict[str, list[str]]:
    toks = [t for t in _TOKEN.findall(text) if not t.isspace() and not t.startswith("//")]
    mods = sorted({m for t in toks if "." in t[1:] and t[0] not in "%$"
                   for m in re.findall(r"\.[^.]+", t)})
    return {
        "all": toks,
        "numbers": sorted({t for t in toks if _NUMBER.match(t)}),
        "modifiers": mods,
        "registers": sorted({t for t in toks if _REGISTER.match(t)}),
        "labels": sorted({t for t in toks if t.startswith("$L")}),
    }


class Corpus:
    def __init__(self, texts: list[tuple[str, str]]) -> None:
        self.texts = texts
        self.pools = [pools_of(t) for _, t in texts]

    def mutant(self, seed: int, i: int) -> Mutant:
        rng = random.Random(f"{seed}:{i}")
        k = rng.randrange(len(self.texts))
        name, text = self.texts[k]
        n = 1 if rng.random() < 0.8 else rng.randint(2, 3)
        line = 0
        kind = ""
        for _ in range(n):
            text, kind, line = mutate(text, rng, self.pools[k])
        return Mutant(text, kind if n == 1 else f"{kind}+{n - 1}", line, name)


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.5:  # headers hold the sizes and offsets
            p = rng.randrange(min(len(out), 256))
        else:
            p = rng.randrange(len(out))
        if rng.random() < 0.7:
            out[p] = rng.randrange(256)
        else:
            v = rng.choice([0, 0xFFFFFFFF, 0x7FFFFFFF, 1 << 31, len(data), len(data) + 1])
            out[p:p + 4] = v.to_bytes(4, "little")[: max(0, min(4, len(out) - p))]
    if rng.random() < 0.1:
        out = out[: rng.randrange(len(out))]
    return bytes(out)


# ------------------------------------------------------------------ verdicts

def _limit_memory() -> None:
    import resource

    # some mutants (`.reg .pred %r<2147483648>`) make ptxas allocate gigabytes
    resource.setrlimit(resource.RLIMIT_AS, (PTXAS_MEMORY, PTXAS_MEMORY))


PTXAS_MEMORY = 2 << 30


def ptxas_verdict(text: str, workdir: str | None = None) -> tuple[str, str]:
    """What ptxas makes of the PTX (for the architecture its .target names): "ok",
    "rejected", or "unknown" when it crashed or ran out of the 2 GiB of address space or the
    60 s it is given (some mutants make it allocate gigabytes; a few crash it); and its output."""
    m = re.search(r"^\s*\.target\s+(sm_\d+[af]?)", text, re.M)
    arch = m.group(1) if m else "sm_90"
    fd, path = tempfile.mkstemp(suffix=".ptx", dir=workdir)
    try:
        os.write(fd, text.encode("utf-8", "surrogateescape"))
        os.close(fd)
        try:
            r = subprocess.run([ptxas(), f"-arch={arch}", path, "-o", os.devnull],
                               capture_output=True, text=True, timeout=60, errors="replace",
                               preexec_fn=_limit_memory)
        except subprocess.TimeoutExpired:
            return "unknown", "ptxas timed out"
        if r.returncode != 0 and "is not defined for option 'gpu-name'" in r.stderr:
            r = subprocess.run([ptxas(), "-arch=sm_90", path, "-o", os.devnull],
                               capture_output=True, text=True, timeout=60, errors="replace",
                               preexec_fn=_limit_memory)
        err = r.stderr.replace(path, "input.ptx")
        if r.returncode == 0:
            return "ok", err
        if r.returncode < 0 or "Memory allocation failure" in err:
            return "unknown", err or f"ptxas died of signal {-r.returncode}"
        return "rejected", err
    finally:
        if os.path.exists(path):
            os.unlink(path)


def _compile_kernels(module, names, block=(64, 1, 1)) -> Verdict | None:
    import llvmlite.binding as llvm

    from cuport.backends.base import BackendError
    from cuport.backends.cpu.compiler import ModuleCompiler
    from cuport.backends.cpu.emit import UnsupportedError

    for name in names:
        try:
            llmod, _ = ModuleCompiler(module.ptx, name, block, nsm=2).compile()
        except UnsupportedError as e:
            return Verdict("rejected", 801, f"kernel {name}: {e}")
        except BackendError as e:
            return Verdict("rejected", e.code, e.message)
        try:
            llvm.parse_assembly(str(llmod)).verify()
        except RuntimeError as e:
            return Verdict("internal", 0, f"kernel {name}: invalid LLVM IR: {str(e)[:300]}")
    return None


def _kernels_near(module, line: int | None) -> list[str]:
    """The kernels to compile for a mutation at `line`: the one it is in, or all of them."""
    kernels = module.kernel_names()
    if line is None:
        return kernels
    fns = sorted(module.ptx.functions.values(), key=lambda f: f.line)
    inside = None
    for f in fns:
        if f.line <= line:
            inside = f
    if inside is not None and inside.is_entry and inside.name in kernels:
        return [inside.name]
    return kernels


def cuport_verdict(text: str | bytes, line: int | None = None) -> Verdict:
    """What cuport's loading path makes of a PTX text (or a fatbin/ELF image)."""
    from cuport.backends.base import BackendError
    from cuport.backends.cpu.backend import get_cpu_backend
    from cuport.loader import LoaderError, choose_ptx, parse_image

    try:
        if isinstance(text, bytes):
            image = parse_image(text)
            text = choose_ptx(image, 90).text
            line = None
        module = get_cpu_backend().load_module([text])
    except (BackendError, LoaderError) as e:
        return Verdict("rejected", e.code, e.message)
    except Exception as e:  # noqa: BLE001 - the point: nothing else may escape
        return Verdict("internal", 0, f"{type(e).__name__}: {e}"[:500])
    try:
        bad = _compile_kernels(module, _kernels_near(module, line))
    except Exception as e:  # noqa: BLE001
        return Verdict("internal", 0, f"compile: {type(e).__name__}: {e}"[:500])
    return bad or Verdict("ok")
