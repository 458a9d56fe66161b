"""A log file is known by its content, not only its path: an edit in place is read again, a copy is
stored once, a rotated or renamed journal goes on as the same source (`logmine.inputs.identity`)."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import duckdb
import pytest
import xxhash
import zstandard

from logmine.ingest.logs import REPLACE_CHANGED, IngestReport, ingest_logs
from tests.test_growth import JOURNAL, tables

MORE = b"Mar 12 12:00:00 gpu-box systemd[1]: Stopping sglang-qwen.service - SGLang Qwen3-32B...\n"


def ingest(con: duckdb.DuckDBPyConnection, *paths: Path, replace: bool = False) -> IngestReport:
    """`ingest_logs`; `replace` as `--replace` (an edited file's rows replaced, not kept as a generation)."""
    asked = REPLACE_CHANGED.set(replace)
    try:
        report = ingest_logs(con, [str(p) for p in paths])
    finally:
        REPLACE_CHANGED.reset(asked)
    assert not report.failed, report.failed
    return report


def whole(path: Path) -> dict[str, list[tuple]]:
    """The tables of a fresh ingest of the file as it is now."""
    con = duckdb.connect()
    ingest(con, path)
    return tables(con)


@pytest.mark.parametrize("grown", [False, True])
def test_an_edit_in_place_is_read_again_from_the_start(tmp_path: Path, grown: bool) -> None:
    """Same length, past the first 64 KiB and before the last 4 KiB, which were all that was compared."""
    path = tmp_path / "journal.txt"
    data = JOURNAL.read_bytes()
    path.write_bytes(data)
    con = duckdb.connect()
    ingest(con, path)
    at = data.index(b"avail mem=", 120_000)
    edited = data[:at] + b"avail mem=11.11" + data[at + 15:] + (MORE if grown else b"")
    path.write_bytes(edited)
    (source,) = ingest(con, path, replace=True).sources
    assert (source.status, source.note) == ("replaced", "edited where read before: read again whole, its rows replaced")
    assert tables(con) == whole(path)


def test_a_copy_under_another_name_is_stored_once(tmp_path: Path) -> None:
    path, copy = tmp_path / "journal.txt", tmp_path / "journal-copy.txt"
    shutil.copy(JOURNAL, path)
    con = duckdb.connect()
    ingest(con, path)
    shutil.copy(JOURNAL, copy)
    report = ingest(con, copy, path)
    assert [(s.status, s.source_id) for s in report.sources] == [("copy", 1), ("unchanged", 1)]
    assert report.sources[0].note == f"a copy of source 1 ({path}): skipped, stored once"
    assert tables(con) == whole(path)


@pytest.mark.parametrize("compress", [gzip.compress, zstandard.compress], ids=["gzip", "zstd"])
def test_a_compressed_copy_beside_its_original_is_a_copy(tmp_path: Path, compress) -> None:
    """Not a rotation, which took the source over and read the copy again whole ("continues ... renamed or
    rotated"); a compressed file holding more than the original still continues it."""
    path, copy, longer = tmp_path / "journal.txt", tmp_path / "journal.txt.1.z", tmp_path / "journal.txt.2.z"
    data = JOURNAL.read_bytes()
    path.write_bytes(data)
    copy.write_bytes(compress(data))
    longer.write_bytes(compress(data + MORE))
    con = duckdb.connect()
    ingest(con, path)
    report = ingest(con, copy, longer)
    assert [(s.status, s.source_id) for s in report.sources] == [("copy", 1), ("replaced", 1)]
    assert report.sources[0].note == f"a copy of source 1 ({path}): skipped, stored once"
    assert tables(con) == whole(longer)


def test_a_rotated_journal_goes_on_as_its_source_and_its_older_copies_are_skipped(tmp_path: Path) -> None:
    path, rotated, older = tmp_path / "journal.txt", tmp_path / "journal.txt.1", tmp_path / "journal-old.txt"
    data = JOURNAL.read_bytes()
    path.write_bytes(data)
    older.write_bytes(data[:100_000])
    con = duckdb.connect()
    ingest(con, path)
    path.rename(rotated)
    rotated.write_bytes(data + MORE)
    # The older copy is known as such once the file it begins is stored: here, read before it.
    report = ingest(con, rotated, older)
    assert [(s.status, s.lines_read) for s in report.sources] == [("grown", 1), ("copy", 0)]
    assert report.sources[0].note.startswith("continues source 1 (")
    assert report.sources[1].note.startswith("an older copy, the beginning of source 1 (")
    assert con.execute("SELECT path FROM sources").fetchall() == [(str(rotated),)]
    assert tables(con) == whole(rotated)


def test_a_rotated_and_compressed_journal_is_not_counted_twice(tmp_path: Path) -> None:
    """logrotate's way: the journal is compressed under a new name, and the old name starts anew."""
    path, rotated = tmp_path / "journal.txt", tmp_path / "journal.txt.1.gz"
    data = JOURNAL.read_bytes()
    path.write_bytes(data)
    con = duckdb.connect()
    ingest(con, path)
    rotated.write_bytes(gzip.compress(data))
    path.write_bytes(MORE)
    report = ingest(con, rotated, path)
    # The rotated file takes up the source (compressed, it is read again whole); the old name is then new.
    assert [s.status for s in report.sources] == ["replaced", "new"]
    assert report.sources[0].note.startswith("continues source 1 (")
    assert con.execute("SELECT count(*) FROM lines").fetchone()[0] == data.count(b"\n") + 1
    rotated.rename(tmp_path / "journal.txt.2.gz")  # rotated once more: the same content, a new name
    report = ingest(con, tmp_path / "journal.txt.2.gz")
    assert report.sources[0].note.startswith("continues source 1 (") and report.sources[0].status == "unchanged"
    assert con.execute("SELECT count(*) FROM lines").fetchone()[0] == data.count(b"\n") + 1


def test_a_truncated_compressed_file_is_named_with_its_offset_when_compared_with_stored_sources(
        tmp_path: Path) -> None:
    """Comparing it with the stored sources reads it as far as it goes; the ingest then says where it ends
    (it had been `cannot be read (EOFError ...)`; found by the property tests)."""
    path, cut = tmp_path / "journal.txt", tmp_path / "cut.log.gz"
    shutil.copy(JOURNAL, path)
    con = duckdb.connect()
    ingest(con, path)
    cut.write_bytes(gzip.compress(JOURNAL.read_bytes())[:5000])
    report = ingest_logs(con, [str(cut)])
    assert len(report.failed) == 1 and report.failed[0].startswith(f"{cut}: unreadable after "), report.failed


def test_a_grown_file_keeps_the_hash_of_everything_read(tmp_path: Path) -> None:
    """The hash is continued from the prefix checked before reading, not read again from the start: it
    must still be the hash of every byte read, or the next ingest would take the file for an edited one."""
    path = tmp_path / "journal.txt"
    data = JOURNAL.read_bytes()
    con = duckdb.connect()
    for cut in (len(data) // 3, 2 * len(data) // 3, len(data)):
        path.write_bytes(data[:data.index(b"\n", cut - 1) + 1] if cut < len(data) else data)
        (source,) = ingest(con, path).sources
        assert source.status == ("new" if cut == len(data) // 3 else "grown")
        size, digest = con.execute("SELECT size_bytes, content_hash FROM sources").fetchone()
        assert digest == xxhash.xxh3_128(path.read_bytes()[:size]).hexdigest()
    assert tables(con) == whole(path)


@pytest.mark.parametrize("edited", [False, True])
def test_a_source_hashed_with_sha256_by_an_older_logmine_is_checked_with_sha256(tmp_path: Path, edited: bool) -> None:
    """Databases made before XXH3 hold SHA-256 content hashes: a grown file is checked and continued in
    SHA-256 (nothing read again), an edited one still found."""
    import hashlib

    path = tmp_path / "journal.txt"
    data = JOURNAL.read_bytes()
    path.write_bytes(data)
    con = duckdb.connect()
    ingest(con, path)
    size = con.execute("SELECT size_bytes FROM sources").fetchone()[0]
    con.execute("UPDATE sources SET content_hash = ?", [hashlib.sha256(data[:size]).hexdigest()])
    if edited:
        at = data.index(b"avail mem=", 120_000)
        data = data[:at] + b"avail mem=11.11" + data[at + 15:]
    path.write_bytes(data + MORE)
    (source,) = ingest(con, path, replace=True).sources
    assert source.status == ("replaced" if edited else "grown")
    size, digest = con.execute("SELECT size_bytes, content_hash FROM sources").fetchone()
    hasher = xxhash.xxh3_128 if edited else hashlib.sha256  # read again whole: hashed the new way
    assert digest == hasher(path.read_bytes()[:size]).hexdigest()
    assert tables(con) == whole(path)
