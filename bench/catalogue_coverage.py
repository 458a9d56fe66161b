"""How much of SGLang's logging logmine names: the share of its logger calls, release by release.

```
python bench/catalogue_coverage.py [--catalogue TSV] [--unnamed TSV]
```

The calls are those `catalogue_build.py` enumerated from each sampled release: the catalogue's
templates plus the calls with too little fixed text to name (`bench/sglang_unnamed_calls.tsv`). Each
call's first line, its variable parts filled with `7`, goes through logmine's real classifier (the
format table, the notice heads, then the catalogue) as the body of an SGLang-prefixed line. A call is
named when that line gets a kind. Counted per release, over all of `sglang/srt` and over the areas
issue 14 lists: a catalogue template counts once per release (sites of one message in one module are
one call), a bare call once per call site.
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from logmine.parsers.sglang_catalogue import Catalogue, read_templates
from logmine.parsers.sglang_classifier import Classifier

from logmine.scripts import load_script

REPO = Path(__file__).resolve().parents[1]
catalogue_build = load_script(REPO / "bench" / "catalogue_build.py")  # its version helpers
ANY, topic_of, version_key = catalogue_build.ANY, catalogue_build.topic_of, catalogue_build.version_key

SAMPLE_VALUE = "7"
UNNAMED = REPO / "bench" / "sglang_unnamed_calls.tsv"
# The topics (see catalogue_build.TOPICS) of the modules issue 14 names: start-up, loading, memory
# pools, HiCache, scheduling, speculative decoding, shutdown and the non-CUDA platforms.
CORE_TOPICS = {"server", "server_args", "startup", "distributed", "weights", "cuda_graph", "memory", "hicache",
               "scheduler", "tokenizer", "speculative", "npu", "rocm", "cpu", "utils"}


def releases_of(versions: str, releases: list[str]) -> set[str]:
    """`v0.4.3-v0.5.1,v0.5.10` -> the sampled releases it spans."""
    out: set[str] = set()
    for run in versions.split(","):
        first, _, last = run.partition("-")
        low, high = version_key(first), version_key(last or first)
        out.update(r for r in releases if low <= version_key(r) <= high)
    return out


def read_unnamed(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(encoding="utf-8", newline="") as f:
        releases = f.readline().split(":", 1)[1].split()
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return releases, rows


@dataclass
class Coverage:
    releases: list[str]
    # release -> [calls, named, calls of the core topics, of which named]
    counts: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0, 0, 0]))
    templates: int = 0
    bare_sites: int = 0
    unnamed_templates: int = 0  # catalogue templates whose own sample line gets no kind: a fault

    def share(self, release: str, core: bool = False) -> float:
        calls, named = self.counts[release][2:] if core else self.counts[release][:2]
        return named / calls


def measure(catalogue: Path | None = None, unnamed: Path = UNNAMED) -> Coverage:
    templates = read_templates(catalogue)
    releases, bare = read_unnamed(unnamed)
    # (template, topic, releases, weight, from the catalogue)
    calls = [(t.template, t.topic, releases_of(t.versions, releases), 1, True) for t in templates] + \
            [(r["template"], topic_of(r["module"]), {r["release"]}, int(r["sites"]), False) for r in bare]
    bodies = pa.array([template.replace(ANY, SAMPLE_VALUE) for template, *_ in calls], pa.string())
    classifier = Classifier(catalogue=Catalogue(templates))
    kinds = classifier.classify(bodies, np.arange(len(bodies)), np.asarray(pc.string_is_ascii(bodies)),
                                prefixed=np.ones(len(bodies), dtype=bool)).kinds
    out = Coverage(releases, templates=len(templates), bare_sites=sum(int(r["sites"]) for r in bare))
    for (_, topic, seen_in, weight, in_catalogue), kind in zip(calls, kinds, strict=True):
        out.unnamed_templates += in_catalogue and kind is None
        for release in seen_in:
            counts = out.counts[release]
            counts[0] += weight
            counts[1] += weight * (kind is not None)
            if topic in CORE_TOPICS:
                counts[2] += weight
                counts[3] += weight * (kind is not None)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalogue", type=Path, default=None, help="default: the shipped catalogue")
    parser.add_argument("--unnamed", type=Path, default=UNNAMED)
    args = parser.parse_args()
    found = measure(args.catalogue, args.unnamed)
    print(f"{found.templates} catalogue templates, {found.bare_sites} bare call sites; "
          f"{found.unnamed_templates} catalogue templates whose own sample line is not named")
    print(f"{'release':<10} {'calls':>6} {'named':>6} {'share':>7}   {'core calls':>10} {'named':>6} {'share':>7}")
    for release in found.releases:
        n, named, core, core_named = found.counts[release]
        print(f"{release:<10} {n:>6} {named:>6} {100 * named / n:>6.1f}%   {core:>10} {core_named:>6} "
              f"{100 * core_named / core:>6.1f}%")


if __name__ == "__main__":
    main()
