"""Score the claim checker against the frozen, hand-annotated figures of bench/data/claims_eval.

Each scenario's journal and session are ingested into a DuckDB file of their own (a real session of
../shared/corpus/transcripts alone, without a journal), and every annotated figure is looked up among
the `claims` rows of its message (the message whose text holds the annotation's quote, the figure's
value). A figure the checker did not read counts as `unverifiable`.

Per set (tuning, held_apart) it prints, for `inconsistent` and `consistent`, how many the annotator
and the checker gave, precision (of the checker's, how many the annotator gave too) and recall (of
the annotator's, how many the checker gave too), and the recall of verdicts: of the figures the
annotator gave a verdict (consistent or inconsistent), how many got that same verdict.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "claims_eval"
SHARED = HERE.parents[1] / "shared"
VERDICTS = ("inconsistent", "consistent")


@dataclass
class Outcome:
    annotation: dict
    found: str  # the checker's verdict ("unverifiable" when it read no such figure)
    claim: dict | None


def annotations() -> list[dict]:
    return [json.loads(line) for line in (DATA / "annotations.jsonl").read_text(encoding="utf-8").splitlines()]


def _claims(paths: list[Path], workdir: Path) -> list[dict]:
    from logmine import api

    db = workdir / (paths[0].parent.name + "-" + paths[-1].stem + ".duckdb")
    api.ingest([str(p) for p in paths], db=db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        frame = api.query(con, "claims")
        rows = json.loads(frame.to_json(orient="records"))
    finally:
        con.close()
    return rows


def _message_index(transcript: Path, quote: str) -> int | None:
    """The position of the message whose text holds the quote (the claims' `message_text` is cut short)."""
    from logmine.parsers.transcripts.detect import read_transcripts
    from logmine.parsers.transcripts.model import Message

    if transcript not in _TEXTS:
        _TEXTS[transcript] = [(r.index, r.text) for r in read_transcripts(transcript)
                              if isinstance(r, Message) and r.text]
    return next((index for index, text in _TEXTS[transcript] if quote in text), None)


_TEXTS: dict[Path, list[tuple[int, str]]] = {}


def _same(value: float, figure: float) -> bool:
    return math.isclose(value, figure, rel_tol=1e-9, abs_tol=1e-9)


def outcomes(selected: set[str] | None = None) -> list[Outcome]:
    """Every annotated figure with the checker's verdict; corpus figures skipped when ../shared is absent."""
    rows = [a for a in annotations() if selected is None or a["set"] in selected]
    groups: dict[tuple[str, ...], list[dict]] = defaultdict(list)
    for a in rows:
        if a["scenario"] == "corpus":
            path = SHARED / a["transcript"]
            if not path.exists():
                continue
            groups[(str(path),)].append(a)
        else:
            groups[(str(DATA / a["scenario"] / "journal.txt"), str(DATA / a["scenario"] / "session.jsonl"))].append(a)
    out: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="claims-eval-") as tmp:
        for paths, group in groups.items():
            claims = _claims([Path(p) for p in paths], Path(tmp))
            for a in group:
                index = _message_index(Path(paths[-1]), a["quote"])
                matches = [c for c in claims if c["message_index"] == index
                           and _same(float(c["value"]), float(a["value"]))]
                # the claim whose text lies inside the quote, else any claim of that value in the message
                inside = [c for c in matches if c["text"] in a["quote"] or a["quote"] in c["text"]]
                chosen = (inside or matches or [None])[0]
                out.append(Outcome(a, chosen["verdict"] if chosen else "unverifiable", chosen))
    return out


def scores(items: list[Outcome]) -> dict[str, float | int]:
    table: dict[str, float | int] = {}
    for verdict in VERDICTS:
        given = [o for o in items if o.found == verdict]
        expected = [o for o in items if o.annotation["verdict"] == verdict]
        hit = sum(1 for o in given if o.annotation["verdict"] == verdict)
        table[f"{verdict}_expected"] = len(expected)
        table[f"{verdict}_given"] = len(given)
        table[f"{verdict}_precision"] = hit / len(given) if given else 1.0
        table[f"{verdict}_recall"] = hit / len(expected) if expected else 1.0
    with_verdict = [o for o in items if o.annotation["verdict"] in VERDICTS]
    table["figures"] = len(items)
    table["verdict_recall"] = (sum(1 for o in with_verdict if o.found == o.annotation["verdict"])
                               / len(with_verdict) if with_verdict else 1.0)
    return table


def report(items: list[Outcome]) -> str:
    lines = [f"{'set':<11} {'figures':>7} {'verdict':<13} {'expected':>8} {'given':>6} {'precision':>9} "
             f"{'recall':>7}"]
    for which in ("tuning", "held_apart"):
        part = [o for o in items if o.annotation["set"] == which]
        if not part:
            continue
        s = scores(part)
        for verdict in VERDICTS:
            lines.append(f"{which:<11} {s['figures']:>7} {verdict:<13} {s[f'{verdict}_expected']:>8} "
                         f"{s[f'{verdict}_given']:>6} {s[f'{verdict}_precision']:>9.2f} {s[f'{verdict}_recall']:>7.2f}")
        lines.append(f"{which:<11} {s['figures']:>7} {'any verdict':<13} {'':>8} {'':>6} {'':>9} "
                     f"{s['verdict_recall']:>7.2f}")
    return "\n".join(lines)


def misses(items: list[Outcome]) -> str:
    """The figures whose verdict differs from the annotator's (for work on the tuning set)."""
    lines = []
    for o in items:
        if o.found != o.annotation["verdict"]:
            a, c = o.annotation, o.claim or {}
            lines.append(f"{a['set']:<10} {a['scenario']:<18} expected {a['verdict']:<12} got {o.found:<12} "
                         f"{a['quote']!r} [{c.get('quantity')}, {c.get('measured')}, {c.get('cause')}]")
    return "\n".join(lines)
