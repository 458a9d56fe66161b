"""The catalogue of SGLang's logger calls: lines it names become notices; on real logs nearly every
SGLang-prefixed line is typed or named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from logmine.parsers.progress_bars import split_carriage_returns
from logmine.parsers.sglang_catalogue import Catalogue, read_templates
from logmine.parsers.sglang_classifier import Classifier
from logmine.parsers.sglang_formats import NOTICE_HEADS
from logmine.parsers.sglang_prefix import parse_prefix
from logmine.parsers.vector_columns import flags

from logmine.scripts import load_script

from .conftest import CORPUS, REPO
from .test_formats import ingest_lines

SHIPPED = Path(__file__).resolve().parents[1] / "parsers" / "sglang_catalogue.tsv"
CORPUS_FILES = sorted(CORPUS.glob("*.log")) if CORPUS.exists() else []


def classify(classifier: Classifier, bodies: list[str]) -> tuple[list[str | None], dict[str, pa.Table]]:
    texts = pa.array(bodies, pa.string())
    found = classifier.classify(texts, np.arange(len(bodies)), flags(pc.string_is_ascii(texts)),
                                prefixed=np.ones(len(bodies), dtype=bool))
    return list(found.kinds), {t: pa.concat_tables(p, promote_options="permissive") for t, p in found.events.items()}


def test_an_added_entry_names_its_lines_and_patterns_keep_their_kinds(tmp_path: Path) -> None:
    catalogue = tmp_path / "catalogue.tsv"
    catalogue.write_text(SHIPPED.read_text(encoding="utf-8")
                         + "test.0001\tWARNING\tsrt/test/frob\tfrob\tv9.9.9\tFrobnicated <*> widgets in <*> s (é)\n",
                         encoding="utf-8")
    classifier = Classifier(catalogue=Catalogue(read_templates(catalogue)))
    kinds, events = classify(classifier, [
        "Frobnicated 12 widgets in 0.5 s (é)",  # not ASCII: read by Python's re
        "Frobnicated 3 widgets in 2.5 s (é) and more",
        "Frobnicated without a count",
        "Load weight begin. avail mem=78.64 GB",  # a pattern's line, also a catalogue template
    ])
    assert kinds == ["notice", "notice", None, "load_weight_begin"]
    notices = events["notices"].sort_by("_row").to_pylist()
    assert [(n["_row"], n["topic"], n["level"], n["origin"], n["detail"]) for n in notices] == [
        (0, "frob", "WARNING", "test.0001", "12 widgets in 0.5 s (é)"),
        (1, "frob", "WARNING", "test.0001", "3 widgets in 2.5 s (é) and more"),
    ]


def test_a_bad_catalogue_row_is_one_line_naming_file_and_line(tmp_path: Path) -> None:
    catalogue = tmp_path / "catalogue.tsv"
    catalogue.write_text(SHIPPED.read_text(encoding="utf-8").split("\n", 1)[0] + "\nonly\ttwo\n")
    with pytest.raises(ValueError, match=r"catalogue.tsv:2: expected 6 tab-separated fields, got 2"):
        read_templates(catalogue)


def test_shipped_templates_are_named_as_themselves(tmp_path: Path) -> None:
    """Read through a real ingest: a named line is a notice with its template id; a line opening a
    traceback stays the error it opens, even where a template (`X hit an exception: <*>`) fits it;
    unprefixed lines are never named."""
    text = "Disabling Radix Cache for <*> as it is not yet supported."
    radix = next(t for t in read_templates() if t.template == text)
    con = ingest_lines(tmp_path, [
        "[2026-03-01 10:00:00 TP0] Disabling Radix Cache for Qwen3 as it is not yet supported.",
        "Disabling Radix Cache for Qwen3 as it is not yet supported.",
        "[2026-03-01 10:00:01] DetokenizerManager hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/detokenizer_manager.py", line 10, in run',
        "    raise ValueError('x')",
        "ValueError: x",
    ])
    assert con.execute("SELECT line_no, kind, topic, level, origin, detail FROM notices").fetchall() == [
        (1, "notice", radix.topic, radix.level, radix.id, "Qwen3 as it is not yet supported.")]
    assert con.execute("SELECT kind FROM lines WHERE line_no = 2").fetchone() == (None,)
    assert con.execute("SELECT first_line_no, exception_type, n_lines FROM errors").fetchall() == [(3, "ValueError", 4)]


@pytest.mark.skipif(not CORPUS_FILES, reason="../shared/corpus/sglang is absent")
@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name[:60])
def test_real_logs_prefixed_lines_are_typed_or_named(path: Path, ingested) -> None:
    """At least 99.5 % of SGLang-prefixed lines typed or named. Also printed: the share the source
    alone explains (a pattern or the catalogue; the notice heads written from logs not counted)."""
    con = ingested(path)
    prefixed, typed = con.execute("SELECT count(*), count(kind) FROM lines WHERE prefixed").fetchone()
    by_heads = [m for (m,) in con.execute(
        "SELECT l.message FROM lines AS l JOIN notices AS n USING (source_id, line_no) "
        "WHERE l.prefixed AND n.kind = 'notice' AND n.origin IS NULL").fetchall()]
    heads = tuple(head for _, head in NOTICE_HEADS)
    bodies = [parse_prefix(split_carriage_returns(m)[0])[1] for m in by_heads]
    assert all(b.startswith(heads) for b in bodies)
    heads_only = classify(Classifier(notice_heads=()), bodies)[0].count(None) if bodies else 0
    by_source = typed - heads_only
    print(f"\n{path.name[:60]}: {prefixed} prefixed, typed or named {100 * typed / max(prefixed, 1):.1f} %, "
          f"by source alone {100 * by_source / max(prefixed, 1):.1f} %")
    assert typed >= 0.995 * prefixed


def test_coverage_report_names_every_catalogue_template_and_most_calls() -> None:
    """bench/catalogue_coverage.py on the shipped data: each template names its own line, and the
    newest releases' calls are mostly named (the rest are bare `logger.info(msg)` calls)."""
    coverage = load_script(REPO / "bench" / "catalogue_coverage.py").measure()
    assert coverage.unnamed_templates == 0
    assert coverage.releases[0] == "v0.4.0" and "v0.5.18" in coverage.releases
    assert all(0.85 <= coverage.share(r) < 1 for r in coverage.releases)
    assert coverage.share("v0.5.18", core=True) >= 0.95
