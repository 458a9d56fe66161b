"""Fuzz targets of the per-input limits (`parsers/limits.py`), each with the limit made small so that short inputs
reach it, and of redaction's key blocks:

- `long-lines`: bytes read as an ingest reads them, in blocks of a few bytes (so a line spans many), with a
  line limit of 64 bytes: every physical line is one row, whole when it fits, else its first bytes followed
  by the cut mark naming its true size, never over the limit.
- `json-depth`: text read by `bounded_json.loads` with a depth limit of 16: a value, or a JSONDecodeError
  (TooDeep for nesting), never a RecursionError or another exception.
- `zstd-expansion`: bytes decompressed as a `.zst` input is, with an expansion limit of 20 past 4 KB: the
  data, or LimitExceeded, EOFError or ZstdError; never more than the limit lets through.
- `redact-lines`: lines (key markers likely) redacted as a log's are: as many lines out as in, and a line that
  is neither in a key block nor holds a secret's hint comes out as it went in.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

import zstandard
from logmine.parsers import bounded_json
from logmine.parsers.limits import CUT_MARK, LimitExceeded
from logmine.parsers.zstd_stream import ZstdReader

from logmine.inputs.sources import decode, iter_line_blocks

TARGETS = ("long-lines", "json-depth", "zstd-expansion", "redact-lines")
MAX_LINE = 64


@contextmanager
def limits(**values: int) -> Iterator[None]:
    """Limits set through their environment variables for one input, then put back."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update({name: str(value) for name, value in values.items()})
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class Trickle:
    """A stream whose blocks are a few bytes each (the first byte says how many), as `iter_line_blocks` reads
    a `PeekableStream`: lines then span many blocks, and the carry between them is exercised."""

    def __init__(self, data: bytes) -> None:
        self.step = 1 + (data[0] % 16 if data else 0)
        self.data, self.at = data[1:], 0

    def read_block(self) -> bytes:
        block = self.data[self.at:self.at + self.step]
        self.at += len(block)
        return block


def check_long_lines(data: bytes) -> None:
    stream = Trickle(data)
    content = stream.data
    rows = [row for block in iter_line_blocks(stream, max_line=MAX_LINE) for row in block.data.split(b"\n")]
    lines = content.split(b"\n") if content else []
    if content.endswith(b"\n"):
        lines.pop()
    lines = [line.lstrip(b"\x00") for line in lines]  # the NULs a line begins with (a rotation's hole) are dropped
    assert len(rows) == len(lines), f"{len(lines)} lines in, {len(rows)} rows out"
    for number, (raw, row) in enumerate(zip(lines, rows, strict=True), start=1):
        assert len(row) <= MAX_LINE, f"line {number}: {len(row)} bytes kept"
        if len(raw) <= MAX_LINE:
            assert row == raw, f"line {number}: {row[:80]!r} for {raw[:80]!r}"
        else:
            mark = CUT_MARK.format(size=len(raw)).encode()
            assert row.endswith(mark) and raw.startswith(row[:-len(mark)]), f"line {number}: cut as {row!r}"


def check_json_depth(data: bytes) -> None:
    text = decode(data)[0]
    with limits(LOGMINE_MAX_JSON_DEPTH=16), suppress(json.JSONDecodeError):
        bounded_json.loads(text)


def check_zstd_expansion(data: bytes) -> None:
    with limits(LOGMINE_MAX_EXPANSION=20, LOGMINE_EXPANSION_FLOOR_BYTES=4096):
        reader = ZstdReader(io.BytesIO(data))
        given = 0
        try:
            while chunk := reader.read(1 << 12):
                given += len(chunk)
        except (LimitExceeded, EOFError, zstandard.ZstdError):
            return
    # What got through without a refusal: within the limit, or under its floor.
    assert given <= max(4096, 20 * len(data)) + (1 << 12), f"{given:,} bytes from {len(data):,}"


def check_redact_lines(data: bytes) -> None:
    import re

    import pyarrow as pa
    from logmine.parsers.secret_patterns import HINT

    from logmine.ingest.redact import KeyBlock, Redactor

    text = decode(data)[0].replace("\x00", "")
    lines = text.split("\n")
    out = Redactor().lines(pa.array(lines)).to_pylist()
    assert len(out) == len(lines), f"{len(lines)} lines in, {len(out)} out"
    block, hint = KeyBlock(), re.compile(HINT, re.IGNORECASE)
    for number, (line, redacted) in enumerate(zip(lines, out, strict=True), start=1):
        in_block = block.lines_left > 0
        block.line(line)
        previous_opens = number > 1 and "\\" in lines[number - 2]
        if not in_block and not previous_opens and not hint.search(line):
            assert redacted == line, f"line {number}: {line[:80]!r} became {redacted[:80]!r}"


CHECKS: dict[str, Callable[[bytes], None]] = {"long-lines": check_long_lines, "json-depth": check_json_depth,
                                              "zstd-expansion": check_zstd_expansion,
                                              "redact-lines": check_redact_lines}


def target(name: str) -> Callable[[bytes], None]:
    return CHECKS[name]


def seeds(name: str) -> list[bytes]:
    if name == "long-lines":
        return [b"\x05short\n" + b"x" * 200 + b"\nend", b"\x00" + "é".encode() * 50 + b"\n\n"]
    if name == "json-depth":
        return [b"[" * 40 + b"]" * 40, b'{"a": "[[[[", "b": [[{"c": 1}]]}']
    if name == "zstd-expansion":
        return [zstandard.ZstdCompressor().compress(b"Mar 12 10:00:00 host python[1]: x\n" * 2000)]
    return [b"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQ\nplain line\n-----END PRIVATE KEY-----\n"
            b"--api-key \\\n  Zx81kQpLm2Vb7\nDB_PASSWORD=19830512"]
