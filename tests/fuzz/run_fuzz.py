"""Run mutants through cuport (and ptxas), one JSON line per input, then a summary line.

    python tests/fuzz/run_fuzz.py --seed 1 --count 20000 [--start 0] [--ptxas accepted|all|none]
                                  [--images-every 10] [--corpus DIR]

`--ptxas accepted` asks ptxas only about mutants cuport accepts (enough to find one that
ptxas rejects and cuport runs); `all` asks about every mutant, for the agreement rate.
Every tenth input (`--images-every`) is a mutated fatbin or ELF image instead of PTX.
The parent (tests/fuzz/test_fuzz.py) watches the lines with a time limit per input, so a
hang or a crash of this process is caught too.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ptxfuzz  # noqa: E402


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--ptxas", choices=("accepted", "all", "none"), default="accepted")
    ap.add_argument("--images-every", type=int, default=10)
    ap.add_argument("--corpus", default=os.path.join(tempfile.gettempdir(), f"cuport-fuzz-{os.getuid()}"))
    ap.add_argument("--keep", help="a directory to write disagreeing and failing inputs to")
    a = ap.parse_args(argv)
    corpus = ptxfuzz.Corpus(ptxfuzz.build_corpus(Path(a.corpus) / "ptx"))
    images = ptxfuzz.build_images(Path(a.corpus) / "images") if a.images_every else []
    keep = Path(a.keep) if a.keep else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    t0 = time.time()
    for i in range(a.start, a.start + a.count):
        rec: dict = {"i": i}
        if images and a.images_every and i % a.images_every == a.images_every - 1:
            rng = random.Random(f"{a.seed}:{i}")
            name, data = images[rng.randrange(len(images))]
            data = ptxfuzz.mutate_bytes(data, rng)
            rec.update(input="image", source=name)
            v = ptxfuzz.cuport_verdict(data)
            text = None
        else:
            m = corpus.mutant(a.seed, i)
            rec.update(input="ptx", source=m.source, kind=m.kind, line=m.line)
            v = ptxfuzz.cuport_verdict(m.text, m.line)
            text = m.text
        rec.update(cuport=v.kind, code=v.code, message=v.message[:300])
        if text is not None and (a.ptxas == "all" or (a.ptxas == "accepted" and v.kind == "ok")):
            verdict, err = ptxfuzz.ptxas_verdict(text)
            rec.update(ptxas=verdict, ptxas_message=err.strip()[:300])
        key = f"{rec['cuport']}" + (f"/ptxas-{rec['ptxas']}" if "ptxas" in rec else "")
        counts[key] = counts.get(key, 0) + 1
        if keep and text is not None and (v.kind == "internal" or rec.get("ptxas", v.kind) != v.kind
                                          and not (v.kind == "rejected" and rec.get("ptxas") == "rejected")):
            (keep / f"{a.seed}-{i}.ptx").write_text(text)
        print(json.dumps(rec), flush=True)
    print(json.dumps({"summary": counts, "seconds": round(time.time() - t0, 1),
                      "seed": a.seed, "start": a.start, "count": a.count}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
