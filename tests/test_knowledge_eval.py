"""The entity pipeline and the claim checker against a hand-annotated evaluation set.

`tests/data/knowledge_eval.jsonl` holds sentences of the kimi-k25 sample session and of real
transcripts of ../shared/corpus/transcripts, each with the entities (kind, text) a reader marks and,
for the sample, the verdicts of its claims. Sentences whose transcript is absent are left out.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from logmine.parsers.transcripts.detect import read_transcripts
from logmine.parsers.transcripts.model import Message

from logmine import api

from .conftest import REPO, SAMPLE, SHARED

EVAL = REPO / "tests" / "data" / "knowledge_eval.jsonl"


def source_path(source: str) -> Path:
    """Sources under examples/ ship with the repository; the others are in ../shared."""
    return REPO / source if source.startswith("examples/") else SHARED / source


def annotated() -> list[dict]:
    rows = [json.loads(line) for line in EVAL.read_text(encoding="utf-8").splitlines()[1:]]
    present = [r for r in rows if source_path(r["source"]).exists()]
    if not present:
        pytest.skip(f"{SHARED} is absent")
    return present


def messages_of(path: Path) -> dict[int, str]:
    """Message position -> the texts at that position in each session of the file."""
    texts: dict[int, str] = {}
    for record in read_transcripts(path):
        if isinstance(record, Message) and record.text:
            texts[record.index] = texts.get(record.index, "") + "\n" + record.text
    return texts


def scores(rows: list[dict]) -> dict[str, tuple[int, int, int]]:
    """Per entity kind: (true positives, false positives, false negatives), matching kind and text."""
    from logmine.knowledge import nlp

    counts: dict[str, list[int]] = {}
    for row, doc in zip(rows, nlp.read(r["text"] for r in rows), strict=True):
        expected = Counter((kind, text) for kind, text in row["entities"])
        found = Counter((e.label_.lower(), e.text) for e in doc.ents)
        for key in expected | found:
            hit = min(expected[key], found[key])
            c = counts.setdefault(key[0], [0, 0, 0])
            c[0] += hit
            c[1] += found[key] - hit
            c[2] += expected[key] - hit
    return {kind: tuple(c) for kind, c in sorted(counts.items())}


def report(table: dict[str, tuple[int, int, int]]) -> str:
    lines = [f"{'kind':<10} {'tp':>4} {'fp':>4} {'fn':>4} {'precision':>9} {'recall':>7}"]
    for kind, (tp, fp, fn) in [*table.items(), ("overall", tuple(map(sum, zip(*table.values(), strict=True))))]:
        lines.append(f"{kind:<10} {tp:>4} {fp:>4} {fn:>4} {tp / max(tp + fp, 1):>9.2f} {tp / max(tp + fn, 1):>7.2f}")
    return "\n".join(lines)


def test_annotated_sentences_are_in_their_transcripts() -> None:
    rows = annotated()
    for source in {r["source"] for r in rows}:
        texts = messages_of(source_path(source))
        for row in (r for r in rows if r["source"] == source):
            assert row["text"] in texts.get(row["message"], ""), (source, row["message"], row["text"])


def test_entity_precision_and_recall() -> None:
    rows = annotated()
    table = scores(rows)
    tp, fp, fn = map(sum, zip(*table.values(), strict=True))
    # Sentences marked held_out were annotated after the patterns were written, without running them first.
    held_out = report(scores([r for r in rows if r.get("held_out")]))
    print(f"\nall {len(rows)} sentences:\n{report(table)}\nheld out:\n{held_out}")
    assert tp / (tp + fp) >= 0.9 and tp / (tp + fn) >= 0.9, report(table)


def test_annotated_claims_get_their_verdicts(ingested) -> None:
    rows = [r for r in annotated() if r["claims"]]
    if not rows:
        pytest.skip("the sample session is absent")
    con = ingested(SAMPLE / "journal.txt", SAMPLE / "session.opencode.json")
    claims = json.loads(api.render(api.query(con, "claims"), "json"))
    for row in rows:
        for expected in row["claims"]:
            found = [c["verdict"] for c in claims if c["message_index"] == row["message"]
                     and abs(c["value"] - expected["value"]) < 1e-6 and c["unit"] == expected["unit"]]
            assert expected["verdict"] in found, (row["text"], expected, found)
