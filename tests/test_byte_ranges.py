"""One large journal parsed by byte ranges (`logmine.ingest.jobs.ranges`, `ingest --jobs N` from 3): the tables must
be a serial ingest's, row for row, whether every range continues the one before it or one does not (a
traceback open across a cut, a New Year between two ranges of a `journal-short` file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from logmine import api
from logmine.ingest.jobs import ranges as byte_ranges

from .conftest import REPO
from .test_fleet import table_fingerprints

DEMO = (REPO / "examples" / "demo" / "journal.txt").read_text().splitlines(keepends=True)
DECODE = DEMO[42]  # a TP0 decode line
assert "] Decode batch" in DECODE


@pytest.fixture(autouse=True)
def any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(byte_ranges, "SPLIT_MIN_BYTES", 1)


def decode_line(stamp: str) -> str:
    """The demo's decode line, moved to `stamp` ("Mar 12 10:35:01")."""
    return stamp + DECODE[len(stamp):]


def with_decode_lines_inside_tracebacks() -> str:
    """TP0 keeps printing decode lines while TP1's traceback is being written: cuts land inside it."""
    lines = list(DEMO)
    at = next(i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line)
    for offset in (9, 5, 2):
        lines.insert(at + offset, decode_line(lines[at][:15]))
    return "".join(lines)


def across_new_year() -> str:
    """A `journal-short` file whose stamps (no year) go from December into January halfway."""
    half = len(DEMO) // 2
    return "".join(line.replace("Mar 12", "Dec 31", 1) for line in DEMO[:half]) + \
        "".join(line.replace("Mar 12", "Jan 01", 1) for line in DEMO[half:])


@pytest.mark.parametrize("text, parts, all_ranges", [
    ("".join(DEMO), 4, True),
    (with_decode_lines_inside_tracebacks(), 20, False),
    (across_new_year(), 4, False),
], ids=["continuing", "traceback-across-a-cut", "new-year"])
def test_a_journal_read_by_byte_ranges_equals_a_serial_ingest(tmp_path: Path, text: str, parts: int,
                                                              all_ranges: bool) -> None:
    journal = tmp_path / "journal.txt"
    journal.write_text(text)
    api.ingest([str(journal)], db=tmp_path / "serial.duckdb", jobs=1)
    (source,) = api.ingest([str(journal)], db=tmp_path / "ranges.duckdb", jobs=parts).logs.sources
    assert source.status == "new"
    assert source.note.startswith("read in ")
    assert ("the rest in order" not in source.note) == all_ranges, source.note
    assert table_fingerprints(tmp_path / "ranges.duckdb") == table_fingerprints(tmp_path / "serial.duckdb")
    # The record lets the next ingest go on: nothing new, then ten lines appended.
    again = api.ingest([str(journal)], db=tmp_path / "ranges.duckdb", jobs=parts).logs.sources
    assert [s.status for s in again] == ["unchanged"]
    with journal.open("a") as f:
        f.writelines(DEMO[42:52])
    for db in ("serial", "ranges"):
        api.ingest([str(journal)], db=tmp_path / f"{db}.duckdb", jobs=1)
    assert table_fingerprints(tmp_path / "ranges.duckdb") == table_fingerprints(tmp_path / "serial.duckdb")
