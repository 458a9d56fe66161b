"""Property tests of the envelope readers: whatever the bytes, nothing raises and every byte is accounted
for (`fuzz.envelopes.check_accounted`): each physical line is one row whose message is the line after its
envelope, the envelope's bytes in typed fields, bytes that are not UTF-8 kept as escapes; compressed data
that cannot be read is one error naming the file and the offset. The fuzz targets (fuzz/) keep the same
promise under coverage guidance for longer.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import duckdb
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from logmine.parsers.envelopes import FORMATS, READERS, TimeContext

from fuzz.envelopes import COMPRESSIONS, DEMO, TARGETS, TYPED, check_accounted, decompressing, read_lines, target
from logmine.ingest.logs import ingest_logs
from logmine.inputs.sources import GZIP_MAGIC, ZSTD_MAGIC, describe
from tests.conftest import SHARED
from tests.test_ingest import envelope_lines

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MODES = {"journal-short": "short-precise", "journal-iso": "short-iso", "journal-full": "short-full",
         "journal-unix": "short-unix", "journal-monotonic": "short-monotonic", "journal-json": "json",
         "plain": "cat", "stamped": "cat"}


def real_lines() -> list[bytes]:
    """Lines of real logs: the bundled example, the kimi-k25 sample's journal modes and the SGLang corpus
    (a few hundred of each, whichever of ../shared is there)."""
    found = DEMO.read_bytes().split(b"\n")
    sources = [SHARED / "samples" / "kimi-k25" / name for name in ("journal.txt", "journal-cat.txt", "journal.jsonl")]
    sources += sorted((SHARED / "corpus" / "sglang").glob("*.log"))
    for path in sources:
        if path.is_file():
            found += path.read_bytes()[:60_000].split(b"\n")[:300]
    for mode in set(MODES.values()):
        found += [line.encode() for line in envelope_lines(mode)]
    return [line for line in found if line]


LINES = real_lines()
BYTE_STRINGS = st.binary(max_size=600)
# What breaks lines, envelopes and decoding: line ends, NUL, bytes that are no UTF-8 or half a character,
# brackets and separators of the stamps, escapes, a number too long for its column.
PIECES = [b"\n", b"\r", b"\x00", b"\xff", b"\xe2\x82", b"[", b"]", b": ", b" ", b"{", b'"', b"\x1b[", b"9" * 25]


@st.composite
def mutated_lines(draw: st.DrawFn) -> bytes:
    """A few real lines, each perhaps cut, with bytes inserted, removed or replaced, or doubled."""
    lines = []
    for line in draw(st.lists(st.sampled_from(LINES), min_size=1, max_size=6)):
        for _ in range(draw(st.integers(0, 3))):
            at = draw(st.integers(0, len(line)))
            change = draw(st.sampled_from(["insert", "delete", "replace", "cut", "double"]))
            piece = draw(st.binary(min_size=1, max_size=8) | st.sampled_from(PIECES))
            line = {"insert": line[:at] + piece + line[at:], "delete": line[:at] + line[at + len(piece):],
                    "replace": line[:at] + piece + line[at + len(piece):], "cut": line[:at],
                    "double": line[:at] + line[:at]}[change]
        lines.append(line)
    return b"\n".join(lines) + draw(st.sampled_from([b"\n", b""]))


@FAST
@given(st.sampled_from([t for t in TARGETS if t != TYPED]), BYTE_STRINGS)
def test_random_bytes_in_every_reader(name: str, data: bytes) -> None:
    target(name)(data)


@FAST
@given(st.sampled_from(FORMATS), mutated_lines())
def test_mutated_real_lines_in_every_envelope_reader(envelope: str, data: bytes) -> None:
    target(envelope)(data)


@SLOW
@given(mutated_lines())
def test_mutated_real_lines_read_whole(data: bytes) -> None:
    """Envelope told from the lines and messages typed, as an ingest does."""
    target(TYPED)(data)


@pytest.mark.parametrize("name", TARGETS)
def test_truncation_at_every_offset_of_a_small_file(name: str) -> None:
    """Two lines in each envelope (compressed: as journal-short), cut after every byte."""
    text = "\n".join(envelope_lines(MODES.get(name, "short"))[1:3]).encode() + b"\n"
    data = gzip.compress(text) if name == "gzip" else zstandard.ZstdCompressor().compress(text) \
        if name == "zstd" else text
    read = target(name)
    step = 7 if name == TYPED else 1  # the whole reading is 50 times slower; every 7th byte still cuts each line
    for cut in range(0, len(data) + 1, step):
        read(data[:cut])


@pytest.mark.parametrize("fmt", ["journal-short", "journal-iso", "journal-full", "journal-unix", "stamped"])
@settings(FAST, max_examples=40)
@given(mutated_lines())
def test_block_and_line_by_line_envelope_readings_agree(fmt: str, data: bytes) -> None:
    """Each reader's block path (journal-short's vector reader) or line path reads each line as its
    line-by-line reader does, whatever the lines before it."""
    rows = read_lines(data, fmt, classify=False)
    read = READERS[fmt]
    time = TimeContext(2026)
    # a \r before the \n (Windows line endings) is no part of the line
    lines = [line.removesuffix(b"\r").decode("utf-8", "backslashreplace") for line in data.split(b"\n")][:len(rows)]
    for row, line in zip(rows, lines, strict=True):
        if "\x00" in line or row["bad_utf8"]:
            continue
        expected = read(line, time)
        assert (row["host"], row["ident"], row["pid"], row["message"]) == \
            (expected.host, expected.ident, expected.pid, expected.message), line


@pytest.fixture(scope="module")
def store() -> duckdb.DuckDBPyConnection:
    """One in-memory database for every example: each is a new file, so a new source."""
    return duckdb.connect()


@SLOW
@given(data=mutated_lines() | BYTE_STRINGS, compression=st.sampled_from([None, *COMPRESSIONS]),
       cut=st.floats(0, 1))
def test_ingested_bytes_are_all_accounted_for(store: duckdb.DuckDBPyConnection, tmp_path_factory:
                                              pytest.TempPathFactory, data: bytes, compression: str | None,
                                              cut: float) -> None:
    """Through a real ingest into DuckDB: each line a row (or the file named with the offset where it
    could not be read), and the source's record says the whole file was read."""
    packed = gzip.compress(data) if compression == "gzip" else zstandard.ZstdCompressor().compress(data) \
        if compression == "zstd" else data
    packed = packed[:round(len(packed) * cut)] if compression and cut < 0.5 else packed
    path = tmp_path_factory.mktemp("input") / "input.log"
    path.write_bytes(packed)
    report = ingest_logs(store, [str(path)])
    if report.failed:  # said with the file and where: binary data at its start, compressed data cut short
        (failed,) = report.failed
        # Bytes that begin with a compressor's magic (b"\x1f\x8b" alone) are read as compressed, as a file is.
        compressed = compression or packed.startswith((GZIP_MAGIC, ZSTD_MAGIC))
        # A byte-order mark (b"\xfe\xff") is UTF-16's, refused as such.
        assert failed.startswith((f"{path}:1: binary data", f"{path}:1: UTF-16 text")) or compressed and \
            failed.startswith(f"{path}: unreadable after "), failed
        return
    source = report.sources[0]
    content = decompressing(packed, describe(path).compression).read()  # cut before its magic, it is plain
    if source.status == "copy":  # all of it is in a stored source already: stored once, as that source
        (stored,) = store.execute("SELECT path FROM sources WHERE source_id = ?", [source.source_id]).fetchone()
        before = decompressing(Path(stored).read_bytes(), describe(Path(stored)).compression).read()
        assert before.startswith(content) or content.startswith(before), source.note
        return
    rows = store.execute("SELECT * FROM lines WHERE source_id = ? ORDER BY line_no", [source.source_id])
    names = [d[0] for d in rows.description]
    check_accounted(content, [dict(zip(names, row, strict=True)) for row in rows.fetchall()], source.envelope)
    size, done = store.execute("SELECT size_bytes, bytes_ingested FROM sources WHERE source_id = ?",
                               [source.source_id]).fetchone()
    assert size == len(packed) and (compression or done <= size)


def test_envelope_readers_are_all_fuzzed() -> None:
    """A reader added to FORMATS gets a fuzz target and these properties without another word."""
    assert set(FORMATS) <= set(TARGETS)
