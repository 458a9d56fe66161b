"""Which stored source a log file's content is, whatever its path: in-place edits, copies, renames.

An ingest keeps, per source, the hash of every (decompressed) byte it read (`sources.content_hash`) and
how many there were. A file read again must still begin with exactly those bytes, or it was edited in
place (a same-length edit included) and is read again from the start. A path never seen before is
compared with the stored sources: if it begins with all a source has read, it is that source under a new
name (a rotated or re-exported journal); if all of it is the beginning of a source, it is an older copy.
Hashing reads the file; a file whose size and modification time show no write since the last ingest is
trusted without it.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import duckdb
import xxhash

from ..store import find_source
from .sources import (
    BLOCK_BYTES,
    SNIFF_BYTES,
    UNREADABLE,
    Input,
    InputError,
    describe,
    fingerprint,
    open_bytes,
    per_rank_file,
    read_range,
)

if TYPE_CHECKING:
    from typing import TypeAlias

    Hasher: TypeAlias = "hashlib._Hash | xxhash.xxh3_128"

SHA256_HEX_DIGITS = 64
# A write within this many seconds before the last ingest might share its modification time (coarse
# file system clocks): such a file is hashed, not trusted.
MTIME_SLACK_S = 2.0


def content_hasher(like: str | None = None) -> Hasher:
    """The hash kept as `sources.content_hash` (stdin's duplicate check uses it too): XXH3-128, 8 GB/s
    here against SHA-256's 1.7 (in hardware), so checking a grown 420 MB journal's stored content costs
    0.05 s, not 0.25 s, and the parse worker hashes every byte it reads. It tells contents apart, which is
    its job; it does not resist a forged collision, which only the log's own writer could make.

    `like` is a stored hash: one of the SHA-256 hashes (64 hex digits) that databases made before XXH3
    hold is checked, and continued, with SHA-256, so that upgrading reads nothing again.
    """
    if like is not None and len(like) == SHA256_HEX_DIGITS:
        return hashlib.sha256()
    return xxhash.xxh3_128()


def read_length(source: dict) -> int:
    """How many content bytes a stored source's `content_hash` covers: every byte read (a plain file's
    `size_bytes` is where reading stopped; a compressed file's is its own size, its content longer)."""
    return source["size_bytes"] if source["compression"] is None else source["bytes_ingested"]


def prefix_hashes(inp: Input, lengths: set[int], like: str | None = None) -> dict[int, str]:
    """The content hash of the input's first N bytes for each N of `lengths` it has, in one read; as far
    as it could be read (compressed data cut short is reported by the ingest that reads it next). `like`
    as for `content_hasher`."""
    found: dict[int, str] = {}
    if not lengths:
        return found
    hasher, done = content_hasher(like), 0
    with open_bytes(inp) as stream:
        for length in sorted(lengths):
            done = _hash_up_to(stream, hasher, done, length)
            if done < length:
                return found
            found[length] = hasher.hexdigest()
    if inp.resumable:
        _hashed_prefixes[_identity(inp)] = (done, hasher.copy())
    return found


def content_hash(inp: Input, length: int) -> str | None:
    """The content hash of a plain file's first `length` bytes. When this process has hashed a shorter
    prefix of it (checking, before reading a grown file, that it still begins with what was read), only
    the bytes after that prefix are read: a grown 400 MB journal is hashed once per ingest, not twice."""
    known = _hashed_prefixes.get(_identity(inp)) if inp.resumable else None
    if known is None or known[0] > length:
        return prefix_hashes(inp, {length}).get(length)
    done, hasher = known[0], known[1].copy()
    with open_bytes(inp, done) as stream:
        if _hash_up_to(stream, hasher, done, length) < length:
            return None
    return hasher.hexdigest()


# The longest prefix hashed of each plain file this process has looked at (path, size and mtime as
# described), with the hasher's state there.
_hashed_prefixes: dict[tuple, tuple[int, Hasher]] = {}


def _identity(inp: Input) -> tuple:
    return inp.path, inp.size, inp.mtime


def _hash_up_to(stream: BinaryIO, hasher: Hasher, done: int, length: int) -> int:
    """Feed the stream's bytes to the hasher until `length` bytes are hashed; how many are."""
    while done < length:
        block = _read(stream, min(BLOCK_BYTES, length - done))
        if not block:
            break
        hasher.update(block)
        done += len(block)
    return done


def _content_length_is(inp: Input, length: int) -> bool:
    """Whether a compressed input holds exactly `length` bytes once decompressed (read through to see)."""
    with open_bytes(inp) as stream:
        done = 0
        while done <= length and (block := _read(stream, min(BLOCK_BYTES, length + 1 - done))):
            done += len(block)
    return done == length


def _read(stream: BinaryIO, size: int) -> bytes:
    try:
        return stream.read(size)
    except UNREADABLE:
        return b""


def content_kept(inp: Input, previous: dict) -> bool:
    """Whether a file still begins with every (decompressed) byte the last ingest read of it."""
    if previous["content_hash"] is None:  # a database from before content hashes: the head and tail decide
        return True
    length = read_length(previous)
    if inp.compression is None and (inp.size or 0) < length:
        return False
    untouched = inp.mtime is not None and inp.mtime < previous["ingested_at"].timestamp() - MTIME_SLACK_S
    if untouched and inp.size == previous["size_bytes"]:
        return True
    return prefix_hashes(inp, {length}, previous["content_hash"]).get(length) == previous["content_hash"]


class PrefixCheck:
    """`content_kept(inp, previous)`, computed in a thread while the caller goes on.

    Checking a grown file hashes all it held before (0.25 s of CPU per 400 MB); hashing and reading
    release the GIL, so this runs on another core while the parser loads (`start_prefix_checks`) and the
    new lines are parsed and stored. Whoever stores the result waits for `kept`.
    """

    @classmethod
    def of(cls, inp: Input, previous: dict) -> PrefixCheck:
        """The check of this input as it is now: the one `start_prefix_checks` started, or a new one."""
        return _started_checks.pop(_check_key(inp, previous), None) or cls(inp, previous)

    @staticmethod
    def kept_now(inp: Input, previous: dict) -> bool:
        """The answer at once: that of the check `start_prefix_checks` started, else computed here, with no
        thread to start and join."""
        started = _started_checks.pop(_check_key(inp, previous), None)
        return started.kept() if started else content_kept(inp, previous)

    def __init__(self, inp: Input, previous: dict) -> None:
        self._kept: bool | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(inp, previous), name="logmine-prefix-check",
                                        daemon=True)
        self._thread.start()

    def _run(self, inp: Input, previous: dict) -> None:
        try:
            self._kept = content_kept(inp, previous)
        except BaseException as exc:  # noqa: BLE001 - raised again in the thread that asks
            self._error = exc

    def kept(self) -> bool:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return bool(self._kept)


# Checks started ahead of the ingest that needs them, by (identity, length read, content hash).
_started_checks: dict[tuple, PrefixCheck] = {}


def start_prefix_checks(con: duckdb.DuckDBPyConnection, paths: list[str]) -> None:
    """Start the checks of the stored plain files among `paths` whose size changed since their last
    ingest: the ingest reading them, which begins once the parser has loaded, finds them done or under
    way (`PrefixCheck.of`). Checks an earlier ingest started and did not take are dropped."""
    _started_checks.clear()
    if not con.execute("SELECT 1 FROM duckdb_tables() WHERE table_name = 'sources'").fetchall():
        return
    for path in paths:
        if path == "-":
            continue
        try:
            inp = describe(Path(path))
        except InputError:  # said in its turn, by the ingest
            continue
        previous = find_source(con, inp.path)
        if previous and previous["content_hash"] and inp.compression is None and previous["compression"] is None \
                and inp.size != previous["size_bytes"]:
            _started_checks[_check_key(inp, previous)] = PrefixCheck(inp, previous)


def _check_key(inp: Input, previous: dict) -> tuple:
    return _identity(inp), read_length(previous), previous["content_hash"]


@dataclass
class SameContent:
    """A stored source this new path's content matches, and how."""

    source: dict  # its `sources` row
    how: str  # "copy": the same bytes, still at the source's path; "continues": the source moved here,
    #           perhaps with more; "older copy": all of this file is the source's beginning

    def note(self, read_again: bool = False) -> str:
        """One short line for the ingest summary (under the file's own line, at 80 columns)."""
        name = f"source {self.source['source_id']} ({self.source['display']})"
        if self.how == "continues":
            done = "read again whole, its rows replaced" if read_again else "its rows kept, new lines read"
            return f"continues {name}, renamed or rotated: {done}"
        if self.how == "copy":
            return f"a copy of {name}: skipped, stored once"
        return f"an older copy, the beginning of {name}: skipped"


def same_content(con: duckdb.DuckDBPyConnection, inp: Input) -> SameContent | None:
    """The stored log source whose read content this new path begins with, or begins; None if none."""
    stored = con.execute("SELECT * FROM sources WHERE kind = 'log' AND content_hash IS NOT NULL AND path <> '-' "
                         "AND path <> ?", [inp.path])
    names = [d[0] for d in stored.description]
    # SGLang's per-rank files hold the same status lines on every rank: one rank's file is never another's copy.
    rank_file = _rank_file(inp.path)
    sources = [source for row in stored.fetchall()
               if _rank_file((source := dict(zip(names, row, strict=True)))["path"]) == rank_file]
    if not sources:
        return None
    with open_bytes(inp) as stream:
        head = _read(stream, SNIFF_BYTES)
    # Cheap first: a source's head hash covers its first min(bytes_ingested, 64 KiB) bytes.
    extended = [s for s in sources if read_length(s) > 0 and len(head) >= min(s["bytes_ingested"], SNIFF_BYTES)
                and fingerprint(head[:min(s["bytes_ingested"], SNIFF_BYTES)]) == s["head_hash"]]
    matches = []
    for sha256 in {len(s["content_hash"]) == SHA256_HEX_DIGITS for s in extended}:  # old and new hashes apart
        group = [s for s in extended if (len(s["content_hash"]) == SHA256_HEX_DIGITS) == sha256]
        hashes = prefix_hashes(inp, {read_length(s) for s in group}, group[0]["content_hash"])
        matches += [s for s in group if hashes.get(read_length(s)) == s["content_hash"]]
    if matches:
        source = max(matches, key=lambda s: (read_length(s), -s["source_id"]))
        same_size = inp.size == read_length(source) if inp.compression is None else \
            _content_length_is(inp, read_length(source))
        return SameContent(source, "copy" if same_size and still_there(source) else "continues")
    if inp.compression is None and inp.size:
        for source in sorted(sources, key=lambda s: s["source_id"]):
            if read_length(source) > inp.size and source["compression"] is None and still_there(source, inp.size) \
                    and read_range(source["path"], 0, len(head)) == head \
                    and prefix_hashes(describe_path(source["path"]), {inp.size}) == prefix_hashes(inp, {inp.size}):
                return SameContent(source, "older copy")
    return None


def _rank_file(path: str) -> tuple[str, int] | None:
    """The host and rank a per-rank file's name gives (its hourly copies share them), else None."""
    found = per_rank_file(Path(path).name)
    return found[:2] if found else None


def still_there(source: dict, length: int | None = None) -> bool:
    """Whether the source's own path still holds what was read of it (or its first `length` bytes exist)."""
    path = source["path"]
    try:
        size = os.path.getsize(path)
    except OSError:
        return False
    if length is not None:
        return size >= length
    return size >= read_length(source) and content_kept(describe_path(path), source)


def describe_path(path: str) -> Input:
    return describe(Path(path))


def retire_generation(con: duckdb.DuckDBPyConnection, source: dict) -> str:
    """Keep a stored source whose file was truncated or rewritten as an earlier generation: its path and name
    get `@N` (the N-th generation of that path), so the file's new content is read as a source of its own,
    and its rows and runs stay as they are. Returns the name it is kept under."""
    count = con.execute("SELECT count(*) FROM sources WHERE starts_with(path, ?) AND regexp_matches(path, '@\\d+$')",
                        [source["path"] + "@"]).fetchone()[0]
    suffix = f"@{count + 1}"
    con.execute("UPDATE sources SET path = path || ?, display = display || ? WHERE source_id = ?",
                [suffix, suffix, source["source_id"]])
    return f"{source['display']}{suffix} (source {source['source_id']})"


def restore_generation(con: duckdb.DuckDBPyConnection, source: dict) -> None:
    """Undo `retire_generation` (the new generation could not be read)."""
    con.execute("UPDATE sources SET path = ?, display = ? WHERE source_id = ?",
                [source["path"], source["display"], source["source_id"]])
