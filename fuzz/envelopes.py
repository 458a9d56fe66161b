"""The envelope readers read as an ingest reads them, and what accounts for every byte of their input.

An ingest turns bytes into physical lines (`logmine.inputs.sources`), splits each line's envelope from its
message (`parsers.envelopes`) and types the message (`parsers.log_lines`). `read_lines` runs that
path on bytes held in memory, without a database, so a fuzzer can call it thousands of times a second;
`check_accounted` is the promise every input must keep, shared by the fuzz targets and the property
tests (tests/test_envelope_properties.py), which also run it through a real ingest into DuckDB.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Callable, Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import zstandard
from logmine.parsers.envelopes import FORMATS, detect_format, infer_context, read_envelopes
from logmine.parsers.vector_columns import flags
from logmine.parsers.zstd_stream import ZstdReader

from logmine.ingest.logs import DETECT_LINES, ParsePlan, parse_batches
from logmine.inputs.sources import Input, InputError, PeekableStream, decode, iter_line_blocks

COMPRESSIONS = ("gzip", "zstd")
TYPED = "typed-lines"
# A fuzz target per envelope reader (`journalctl -o short-precise` is read by journal-short, `-o cat`
# by plain), per compressed container (its content read as a journal-short log), and one that reads
# lines whole as an ingest does: envelope told from them, messages typed (50 times slower).
TARGETS = (*FORMATS, *COMPRESSIONS, TYPED)
ENVELOPE_FIELDS = ("ts", "host", "ident", "pid", "unit")
DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo" / "journal.txt"


def decompressing(data: bytes, compression: str | None) -> io.RawIOBase | io.BufferedIOBase:
    """The stream an ingest reads a file of these bytes through (`sources.open_bytes`)."""
    raw = io.BytesIO(data)
    if compression == "gzip":
        return gzip.GzipFile(fileobj=raw)
    if compression == "zstd":
        return ZstdReader(raw)
    return raw


def read_lines(data: bytes, envelope: str | None = None, compression: str | None = None,
               classify: bool = True) -> list[dict]:
    """The `lines` rows an ingest makes of `data` (the envelope told from the lines when None); with
    `classify` False only their envelope columns, read as the ingest reads them but 20 times faster.

    Raises InputError, as an ingest does, for compressed data that cannot be read.
    """
    stream = PeekableStream(decompressing(data, compression), "<fuzz>")
    fmt = envelope or detected_format(stream.head)
    time = infer_context(fmt, _sample(stream.head), 2026)
    if classify:
        inp = Input("<fuzz>", "<fuzz>", compression, len(data), 0.0)
        plan = ParsePlan(inp, 0, 1, 1, fmt, time, "2026-01-01")
        tables = [parsed.tables["lines"] for parsed in parse_batches(plan, stream) if "lines" in parsed.tables]
    else:
        tables, first = [], 1
        for block in iter_line_blocks(stream):
            lines, bad = block.columns()
            env = read_envelopes(lines, fmt, time, flags(pc.string_is_ascii(lines)))
            tables.append(pa.table({"line_no": pa.array(range(first, first + len(lines)), pa.int64()),
                                    "bad_utf8": pa.array(bad), "message": env.message,
                                    **{name: getattr(env, name) for name in ENVELOPE_FIELDS}}))
            first += len(lines)
    # A column whose text did not cast stays text in its batch (`store.typed_table`): rows, not one table.
    return [row for table in tables for row in table.to_pylist()]


def _sample(head: bytes) -> list[str]:
    return [decode(raw)[0] for raw in head.split(b"\n")[:DETECT_LINES]]


def detected_format(head: bytes) -> str:
    """The envelope an ingest tells from the first lines."""
    return detect_format(_sample(head))


def physical_lines(content: bytes) -> list[bytes]:
    """The lines of `content` as an ingest numbers them: split on newlines (a \\r before one is no part of
    its line), an unterminated last one kept."""
    if not content:
        return []
    lines = [line.removesuffix(b"\r") for line in content.split(b"\n")]  # a Windows line ending's \r too
    return lines[:-1] if content.endswith(b"\n") else lines


def check_accounted(content: bytes, rows: Iterable[dict], envelope: str) -> None:
    """Every physical line of `content` (decompressed) is one row, in order: its message is the line's text
    after the envelope, the envelope's bytes went into typed fields, and bytes that are not UTF-8 are
    kept as escapes with `bad_utf8` set; the NUL bytes a line begins with (a rotation's hole) are dropped.
    Raises AssertionError naming the first line that is not."""
    rows = list(rows)
    lines = physical_lines(content)
    assert len(rows) == len(lines), f"{len(lines)} lines in, {len(rows)} rows out"
    for number, (raw, row) in enumerate(zip(lines, rows, strict=True), start=1):
        text, bad = decode(raw.lstrip(b"\x00"))
        where = f"line {number} {raw[:80]!r}"
        assert row["line_no"] == number, f"{where}: numbered {row['line_no']}"
        assert bool(row["bad_utf8"]) == bad, f"{where}: bad_utf8 {row['bad_utf8']}"
        message = row["message"]
        assert message is not None, f"{where}: no message"
        if envelope == "journal-json" and message != text:
            assert isinstance(_json_or_none(text), dict), f"{where}: message {message[:80]!r} from no JSON record"
        elif message != text:
            assert text.endswith(message), f"{where}: message {message[:80]!r} is not the line's end"
            assert any(row[name] is not None for name in ENVELOPE_FIELDS if name != "unit"), \
                f"{where}: envelope {text[:len(text) - len(message)]!r} cut off but no field holds it"


def _json_or_none(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None


def target(name: str) -> Callable[[bytes], None]:
    """The fuzz target of one reader: any bytes are read without an exception and fully accounted for;
    compressed bytes that cannot be read are an InputError naming the input and the offset."""
    envelope = None if name == TYPED else "journal-short" if name in COMPRESSIONS else name
    compression = name if name in COMPRESSIONS else None
    classify = name == TYPED

    def one_input(data: bytes) -> None:
        if compression:
            try:
                content = decompressing(data, compression).read()
            except Exception:  # noqa: BLE001 - unreadable: the ingest must say so, as checked below
                content = None
            try:
                rows = read_lines(data, envelope, compression, classify)
            except InputError as exc:
                assert content is None and "<fuzz>: unreadable after " in str(exc), str(exc)
                return
        else:
            content, rows = data, read_lines(data, envelope, classify=classify)
        assert content is not None, "unreadable compressed data read without an error"
        check_accounted(content, rows, envelope or detected_format(content))

    return one_input


def seeds(name: str) -> list[bytes]:
    """Inputs to start from: the example journal's opening lines in this reader's envelope, and the same
    messages as every `journalctl` output mode prints them (tests/test_ingest.py)."""
    from tests.test_ingest import envelope_lines

    mode = {"journal-short": "short-precise", "journal-iso": "short-iso", "journal-full": "short-full",
            "journal-unix": "short-unix", "journal-monotonic": "short-monotonic", "journal-json": "json",
            "plain": "cat"}.get(name, "short")
    lines = "\n".join(envelope_lines(mode)).encode() + b"\n"
    found = [lines, DEMO.read_bytes()[:2048] if mode == "short" else b""]
    if name == "plain":  # `-o verbose` and `-o export` have no reader of their own: read as plain lines
        found += [b"Sun 2026-03-01 23:45:58.123456 UTC [s=e8c4;i=5450;b=cc65;m=3483;t=64bf;x=0b07]\n"
                  b"    _PID=4242\n    SYSLOG_IDENTIFIER=python3\n    MESSAGE=" + lines.splitlines()[0] + b"\n",
                  b"__REALTIME_TIMESTAMP=1772408758000000\n_PID=4242\nMESSAGE=" + lines.splitlines()[1] +
                  b"\nMESSAGE\n\x05\x00\x00\x00\x00\x00\x00\x00a\rb\tc\n\n"]
    if name == "stamped":
        found = [b"2026-03-01T23:45:58.123Z " + line + b"\n" for line in lines.splitlines()]
    if name == "gzip":
        return [gzip.compress(seed) for seed in found]
    if name == "zstd":
        return [zstandard.ZstdCompressor().compress(seed) for seed in found]
    return [seed for seed in found if seed]
