"""The inputs: what the user named sorted into server logs and agent transcripts (`classify_inputs`), and
a log's bytes read from files, stdin, gzip and zstd as physical lines in blocks.

Nothing here knows about log formats. Lines are split on `\\n` only (as journald does), so `\\r`
progress bars stay inside their line, but a `\\r` just before the `\\n` (a file written with Windows line
endings) is no part of its line; bytes that are not UTF-8 are kept as `\\xNN` escapes.
"""

from __future__ import annotations

import functools
import glob
import gzip
import hashlib
import io
import os
import re
import select
import stat
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import zstandard

from ..ingest import interrupts
from ..parsers.limits import CUT_MARK, MAX_LINE_BYTES, ExpansionCheck, LimitExceeded
from ..parsers.vector_columns import buffer_spans
from ..parsers.zstd_stream import ZstdReader

BLOCK_BYTES = 4 << 20
SNIFF_BYTES = 64 << 10
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# What a directory walk takes as a log file (a file named explicitly is read whatever its name).
LOG_SUFFIXES = (".log", ".txt", ".jsonl", ".gz", ".zst", ".out", ".err")
# Rotated copies keep their log name before a counter or a date: `server.log.1`, `server.log-20261201.gz`.
ROTATED_LOG = re.compile(r"\.(?:log|txt|jsonl|out|err)(?:(?:[.-]\d+)+|\.\d{4}-\d\d-\d\d(?:_\d\d(?:-\d\d)?)?)"
                         r"(?:\.(?:gz|zst))?$")
# SGLang's per-rank event files (`log_utils._create_log_target_file`): `<hostname>_<rank>.log`, rotated every
# hour by Python's TimedRotatingFileHandler into `<hostname>_<rank>.log.YYYY-MM-DD_HH`.
PER_RANK_FILE = re.compile(r"^(?P<host>.+)_(?P<rank>\d{1,5})\.log(?:\.(?P<rotated>\d{4}-\d\d-\d\d_\d\d))?"
                           r"(?:\.(?:gz|zst))?$")


def per_rank_file(name: str) -> tuple[str, int, str | None] | None:
    """(host, rank, rotation stamp or None for the live file) of a per-rank file's name, else None."""
    m = PER_RANK_FILE.match(name)
    return (m["host"], int(m["rank"]), m["rotated"]) if m else None


def in_time_order(names: list[Path]) -> list[Path]:
    """A folder's files with each per-rank file's hourly copies before it, oldest first (the names sort
    by their stamp), so that one host's and rank's events are read in the order they were written."""
    def key(path: Path) -> tuple[str, str]:
        found = per_rank_file(path.name)
        if found is None:
            return (path.name, "")
        host, rank, rotated = found
        return (f"{host}_{rank}.log", rotated or "\uffff")  # the live file last
    return sorted(names, key=key)


class InputError(Exception):
    """A problem with an input that the user must fix; the message names the file."""


@dataclass
class Input:
    path: str  # absolute path, or "-" for stdin
    display: str
    compression: str | None
    size: int | None
    mtime: float | None
    # The files read one after the other as this input: a per-rank file's hourly copies, oldest first, then
    # the file itself (`compression` "hourly"). Empty for one file.
    parts: tuple[str, ...] = ()

    @property
    def resumable(self) -> bool:
        """Only plain regular files can be read from an offset when they grow."""
        return self.path != "-" and self.compression is None


def describe_input(given: str) -> Input:
    """The file to read (`-` is stdin); directories are expanded by `classify_inputs`."""
    if given == "-":
        return Input("-", "<stdin>", None, None, None)
    problem = not_a_file(Path(given))
    if problem:
        raise InputError(f"{given}: {problem}")
    return describe(Path(given))


NOT_REGULAR = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device",
               stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}


def not_a_file(path: Path) -> str | None:
    """Why `path` cannot be read as a file (None when it is a regular file): reading a FIFO or a device
    would wait for a writer forever or never end, and the kernel's files (/proc, /sys) are no logs, some
    never end and some hold what no database should (/proc/self/environ)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "no such file or directory"
    except OSError as exc:
        return f"cannot read ({exc.strerror})"
    if not stat.S_ISREG(mode):
        return f"not a regular file ({NOT_REGULAR.get(stat.S_IFMT(mode), 'special file')}), skipped"
    return kernel_file(path)


# Filesystems whose files the kernel makes up as they are read: never a log.
PSEUDO_FILESYSTEMS = frozenset({"proc", "sysfs", "devtmpfs", "devpts", "debugfs", "tracefs", "securityfs",
                                "cgroup", "cgroup2", "configfs", "bpf", "pstore", "efivarfs", "fusectl",
                                "binfmt_misc", "mqueue", "hugetlbfs", "autofs", "rpc_pipefs", "nsfs"})


@functools.cache
def pseudo_mounts() -> tuple[str, ...]:
    """Where the kernel's pseudo filesystems are mounted (from /proc/self/mounts; /proc, /sys and /dev when
    it cannot be read)."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as mounts:
            points = [fields[1].replace("\\040", " ") for fields in (line.split() for line in mounts)
                      if len(fields) > 2 and fields[2] in PSEUDO_FILESYSTEMS]
    except OSError:
        points = []
    return tuple(points or ["/proc", "/sys", "/dev"])


def kernel_file(path: Path) -> str | None:
    """Why `path` (a file or folder, its links followed) is not read: it lies in /proc, /sys or another of
    the kernel's pseudo filesystems (None when it does not)."""
    real = os.path.realpath(path)
    for point in pseudo_mounts():
        if real == point or real.startswith(point.rstrip("/") + "/"):
            return f"a file of the kernel ({point}), not a log: skipped"
    return None


def within(path: str, root: str) -> bool:
    """`path` is `root` or under it (both real paths)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def describe(path: Path) -> Input:
    try:
        stat = path.stat()
        with path.open("rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    compression = "gzip" if magic.startswith(GZIP_MAGIC) else "zstd" if magic.startswith(ZSTD_MAGIC) else None
    copies = hourly_copies(path) if compression is None else []
    if copies:
        sizes = [c.stat() for c in copies]
        return Input(str(path.resolve()), str(path), "hourly", stat.st_size + sum(c.st_size for c in sizes),
                     max([stat.st_mtime] + [c.st_mtime for c in sizes]),
                     tuple(str(c.resolve()) for c in copies) + (str(path.resolve()),))
    return Input(str(path.resolve()), str(path), compression, stat.st_size, stat.st_mtime)


def hourly_copies(path: Path) -> list[Path]:
    """The hourly copies beside a per-rank file (`<host>_<rank>.log.YYYY-MM-DD_HH`), oldest first; none for
    any other file. Read with it as one source: one host's and rank's events in the order they were written."""
    found = per_rank_file(path.name)
    if found is None or found[2] is not None:
        return []
    try:
        siblings = list(path.parent.glob(glob.escape(path.name) + ".*"))
    except OSError:
        return []
    copies = [p for p in siblings if (named := per_rank_file(p.name)) and named[:2] == found[:2] and named[2]
              and p.is_file()]
    return sorted(copies, key=lambda p: p.name)


def open_bytes(inp: Input, offset: int = 0, end: int | None = None) -> BinaryIO:
    """A byte stream of the decompressed content, positioned at `offset` and ending at `end` (both for
    plain files only)."""
    if inp.path == "-":
        return InterruptibleStdin(sys.stdin.buffer)  # type: ignore[return-value]
    if inp.parts:
        return Chained(inp.parts)  # type: ignore[return-value]
    raw = open(inp.path, "rb")  # noqa: SIM115 - closed by the caller through the returned stream
    if inp.compression == "gzip":
        return GuardedGzip(raw)  # type: ignore[return-value]
    if inp.compression == "zstd":
        return ZstdReader(raw)  # type: ignore[return-value]
    raw.seek(offset)
    return raw if end is None else Window(raw, end - offset)  # type: ignore[return-value]


class InterruptibleStdin(io.RawIOBase):
    """Standard input read so that Ctrl-C is answered within a second while it waits for a writer: Python
    retries a read the signal interrupted, so the wait is cut into select() calls of STDIN_POLL_S, each
    followed by `interrupts.check`. A read returns `size` bytes unless the input ends first."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        try:
            fd = self.stream.fileno()
        except (OSError, ValueError, io.UnsupportedOperation):  # not a real file (a test's BytesIO)
            return self.stream.read(size)
        out = bytearray()
        while size < 0 or len(out) < size:
            while not select.select([fd], [], [], STDIN_POLL_S)[0]:
                interrupts.check()
            chunk = os.read(fd, (1 << 20) if size < 0 else min(1 << 20, size - len(out)))
            if not chunk:
                break
            out += chunk
            interrupts.check()
        return bytes(out)


STDIN_POLL_S = 0.5


class Chained(io.RawIOBase):
    """Files read one after the other as one stream (an input's `parts`)."""

    def __init__(self, paths: tuple[str, ...]) -> None:
        self.paths, self.raw = list(paths), None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:
        while True:
            if self.raw is None:
                if not self.paths:
                    return 0
                self.raw = open(self.paths.pop(0), "rb")  # noqa: SIM115 - closed when read to its end
            got = self.raw.readinto(buffer) or 0
            if got:
                return got
            self.raw.close()
            self.raw = None

    def close(self) -> None:
        if self.raw is not None:
            self.raw.close()
        super().close()


class Window(io.RawIOBase):
    """The next `size` bytes of a file: a byte range parsed on its own (`logmine.ingest.jobs.ranges`)."""

    def __init__(self, raw: BinaryIO, size: int) -> None:
        self.raw, self.left = raw, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:
        got = self.raw.readinto(memoryview(buffer)[:max(0, self.left)]) or 0
        self.left -= got
        return got

    def close(self) -> None:
        self.raw.close()
        super().close()


class GuardedGzip(io.RawIOBase):
    """gzip decompressed as a stream, refused when it expands past `limits.ExpansionCheck`."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw, self.gzip, self.check = raw, gzip.GzipFile(fileobj=raw), ExpansionCheck()

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        before = self.raw.tell()
        data = self.gzip.read(size)
        self.check.add(self.raw.tell() - before, len(data))
        return data

    def close(self) -> None:
        self.gzip.close()
        self.raw.close()
        super().close()


# What a corrupt or truncated gzip or zstd input raises while it is read (gzip.BadGzipFile is an OSError).
UNREADABLE = (EOFError, OSError, zlib.error, zstandard.ZstdError)


class PeekableStream(io.RawIOBase):
    """Lets the ingest sniff the first bytes of a stream (stdin included) without losing them.

    A read that fails (corrupt or truncated compressed data) raises an InputError naming the input.
    """

    def __init__(self, stream: BinaryIO, name: str = "-") -> None:
        self.stream = stream
        self.name = name
        self.done = 0  # bytes read so far
        self.head = self._read(SNIFF_BYTES)
        self.pos = 0

    def read_block(self, size: int = BLOCK_BYTES) -> bytes:
        if self.pos < len(self.head):
            block = self.head[self.pos:]
            self.pos = len(self.head)
            return block + self._read(max(0, size - len(block)))
        return self._read(size)

    def _read(self, size: int) -> bytes:
        try:
            data = self.stream.read(size) or b""
        except LimitExceeded as exc:
            raise InputError(f"{self.name}: {exc}") from None
        except UNREADABLE as exc:
            raise InputError(f"{self.name}: unreadable after {self.done} bytes, corrupt or truncated? "
                             f"({exc})") from None
        self.done += len(data)
        return data

    def close(self) -> None:
        self.stream.close()
        super().close()


@dataclass
class LineBlock:
    data: bytes  # complete lines joined by "\n", without the final newline
    end_offset: int  # bytes consumed from where reading started, through this block's last line
    partial_last: bool  # the last line had no newline (end of input)
    cut_lines: int = 0  # lines longer than the limit, stored cut (`iter_line_blocks`)
    hole_bytes: int = 0  # NUL bytes dropped where lines begin (`iter_line_blocks`)

    def lines(self) -> list[tuple[str, bool]]:
        """Decoded lines with a flag for lines whose bytes were not valid UTF-8."""
        try:
            text = self.data.decode("utf-8")
        except UnicodeDecodeError:
            return [decode(raw.removesuffix(b"\r")) for raw in self.data.split(b"\n")]
        if "\x00" in text:
            return [decode(raw.removesuffix(b"\r")) for raw in self.data.split(b"\n")]
        return [(line.removesuffix("\r"), False) for line in text.split("\n")]

    def columns(self) -> tuple[pa.StringArray, np.ndarray]:
        """The lines as an Arrow column, with a flag per line for bytes that were not valid UTF-8."""
        if b"\x00" not in self.data:
            data = np.frombuffer(self.data, dtype=np.uint8)
            newlines = np.flatnonzero(data == ord("\n"))
            starts, stops = np.r_[0, newlines + 1], np.r_[newlines, len(self.data)]
            stops -= (stops > starts) & (data[np.maximum(stops - 1, 0)] == ord("\r")) if len(data) else 0
            lines = buffer_spans(pa.py_buffer(self.data), starts, stops)
            try:
                lines.validate(full=True)  # UTF-8
            except pa.ArrowInvalid:
                pass
            else:
                return lines, np.zeros(len(lines), dtype=bool)
        decoded = self.lines()
        return pa.array([text for text, _ in decoded], pa.string()), np.array([bad for _, bad in decoded], dtype=bool)


def iter_line_blocks(stream: PeekableStream, hasher: hashlib._Hash | None = None,
                     max_line: int | None = None) -> Iterator[LineBlock]:
    """Physical lines in blocks of about BLOCK_BYTES; the last line may lack its newline.

    A line longer than `max_line` bytes (`limits.MAX_LINE_BYTES`) is kept cut to that size, ending in
    `limits.CUT_MARK` with its whole size: its bytes beyond are read (and hashed) but never held, so one
    line of gigabytes costs neither the memory nor the rest of the input.

    The NUL bytes a line begins with are dropped, and counted in `hole_bytes`: the hole a `copytruncate` log
    rotation leaves when the server writes on at its old offset, which would join the first line written after
    it, and the unwritten blocks a crash leaves at a file's end. A hole of any size is dropped as it is read."""
    max_line = max_line or MAX_LINE_BYTES.value()
    carry = b""
    carry_dropped = 0  # bytes of the unfinished line in `carry` read past its cut
    consumed = 0
    hole = 0  # NUL bytes dropped where lines begin, not yet reported in a block
    while True:
        interrupts.check()  # between blocks, even inside one line of gigabytes
        block = stream.read_block()
        if hasher is not None and block:
            hasher.update(block)
        if not block:
            if carry:
                data, cut_lines = cut_long_lines(carry, max_line, carry_dropped)
                yield LineBlock(data, consumed + hole + len(carry) + carry_dropped, True, cut_lines, hole)
            elif hole:  # the input ends in NULs after its last newline: a last line, empty once they are dropped
                yield LineBlock(b"", consumed + hole, True, 0, hole)
            return
        data = carry + block
        if not carry:  # a line begins here
            text = data.lstrip(b"\x00")
            hole, data = hole + len(data) - len(text), text
            if not data:
                continue
        cut = data.rfind(b"\n")
        if cut < 0:
            if len(data) > max_line:  # keep one byte over, so the line is known to be cut
                carry_dropped += len(data) - max_line - 1
                data = data[:max_line + 1]
            carry = data
            continue
        consumed += hole + cut + 1 + carry_dropped
        lines = data[:cut]
        if b"\n\x00" in lines:  # holes inside the block
            text = LINE_START_NULS.sub(b"\n", lines)
            hole, lines = hole + len(lines) - len(text), text
        lines, cut_lines = cut_long_lines(lines, max_line, carry_dropped)
        block = LineBlock(lines, consumed, False, cut_lines, hole)
        carry, carry_dropped = data[cut + 1:].lstrip(b"\x00"), 0  # the next line begins there
        hole = len(data) - cut - 1 - len(carry)
        yield block


def cut_long_lines(data: bytes, max_line: int, first_dropped: int = 0) -> tuple[bytes, int]:
    """`data` (lines joined by `\\n`) with each line over `max_line` bytes cut to it and marked with its size
    (`first_dropped` more bytes of the first line were never held); and how many lines were cut."""
    if len(data) <= max_line and not first_dropped:
        return data, 0
    raw = np.frombuffer(data, dtype=np.uint8)
    starts = np.r_[0, np.flatnonzero(raw == ord("\n")) + 1]
    stops = np.r_[starts[1:] - 1, len(data)]
    long_rows = np.flatnonzero(stops - starts > max_line)
    if not len(long_rows):
        return data, 0
    pieces, done = [], 0
    for row in long_rows:
        start, stop = int(starts[row]), int(stops[row])
        size = stop - start + (first_dropped if row == 0 else 0)
        mark = CUT_MARK.format(size=size).encode()
        keep = start + max(0, max_line - len(mark))
        while keep > start and data[keep] & 0xC0 == 0x80:  # not inside a UTF-8 character
            keep -= 1
        pieces += [data[done:keep], mark]
        done = stop
    pieces.append(data[done:])
    return b"".join(pieces), len(long_rows)


def decode(raw: bytes) -> tuple[str, bool]:
    """UTF-8 text of a line, with undecodable bytes and NULs kept as visible escapes."""
    try:
        text = raw.decode("utf-8")
        bad = False
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "backslashreplace")
        bad = True
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
        bad = True
    return text, bad


def looks_utf16(head: bytes) -> bool:
    """A UTF-16 text, as Windows PowerShell's `>` writes a command's output: its byte-order mark, or the NUL
    byte of every other byte that ASCII text has in it."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True
    sample = head[:4096]
    if len(sample) < 64:
        return False
    most = len(sample) * 0.45  # nine in ten of the odd (little-endian) or even (big-endian) bytes
    few = len(sample) * 0.05  # and the others text: a run of NULs (a crash's tail) is no UTF-16
    odd, even = sample[1::2].count(0), sample[0::2].count(0)
    return (odd > most and even < few) or (even > most and odd < few)


def without_hole(head: bytes) -> bytes:
    """The first bytes of a file without the NUL bytes it begins with: the hole a `copytruncate` log rotation
    leaves when the server writes on at its old offset (`iter_line_blocks` drops them)."""
    return head.lstrip(b"\x00")


HOLE_SCAN_BYTES = 1 << 20
NUL_RUN = re.compile(rb"\x00{16,}")
LINE_START_NULS = re.compile(rb"\n\x00+")


def head_past_hole(inp: Input, head: bytes, start: int = 0) -> bytes:
    """The first SNIFF_BYTES of text of `inp` from `start`, past the hole there (read on from the file itself
    where the hole is longer than `head`, the bytes first read from `start`): what its kind is told from."""
    text = without_hole(head)
    if text or len(head) < SNIFF_BYTES or not inp.resumable:
        return text
    with open(inp.path, "rb") as f:
        f.seek(start + len(head))
        while chunk := f.read(HOLE_SCAN_BYTES):
            if text := chunk.lstrip(b"\x00"):
                return text[:SNIFF_BYTES] + f.read(max(0, SNIFF_BYTES - len(text)))
    return b""


def looks_binary(head: bytes) -> bool:
    """More than 1% NUL bytes, more than 10% control characters, or more than 20% of bytes that are no
    text (control characters, or bytes that are not UTF-8): not a log. Random bytes are nearly half no
    text, so they are refused every time, where control characters alone (an eighth of them) left it to
    chance; a log with Latin-1 letters here and there stays a log."""
    sample = NUL_RUN.sub(b"", head[:8192])  # holes (`without_hole`), and the NULs a crash leaves at a file's end
    if not sample:
        return False
    nul = sample.count(0)
    control = sum(1 for b in sample if b < 9 or 13 < b < 32)
    not_utf8 = sample.decode("utf-8", errors="replace").count("\ufffd") if not sample.isascii() else 0
    return nul > len(sample) // 100 or control > len(sample) // 10 or control + not_utf8 > len(sample) // 5


def fingerprint(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def read_range(path: str, start: int, length: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(max(0, start))
        return f.read(max(0, length))


def file_size(path: str) -> int:
    return os.path.getsize(path)


# ---------------------------------------------------------------- what the user named


@dataclass
class SortedInputs:
    logs: list[str] = field(default_factory=list)
    transcripts: list[tuple[Path, str]] = field(default_factory=list)  # (path, format)
    skipped: list[str] = field(default_factory=list)  # one line per input that cannot be read, saying why
    left: list[str] = field(default_factory=list)  # one line per folder whose other files were not read
    links_out: list[tuple[Path, str]] = field(default_factory=list)  # (link, target) not followed, this folder

    def count(self) -> int:
        return len(self.logs) + len(self.transcripts) + len(self.skipped)


def classify_inputs(paths: list[str], follow_links: bool = False) -> SortedInputs:
    """What the user named, sorted into server logs and agent transcripts; a directory may hold both kinds.

    A walk stays inside the folder named: a symlink under it that leads outside (`logs/server.log ->
    ~/.ssh/id_ed25519`, `logs/self -> /proc/self`) is not followed unless `follow_links`, and said in `left`;
    the kernel's files (/proc, /sys, devices) are never read, even through a link followed or named."""
    found = SortedInputs()
    walked: set[tuple[int, int]] = set()
    for given in paths:
        if given == "-":
            found.logs.append(given)
            continue
        path = Path(given)
        try:
            is_dir = path.is_dir()
        except OSError as exc:  # a folder on the way cannot be searched
            found.skipped.append(f"{given}: cannot read ({exc.strerror})")
            continue
        if not is_dir:
            add_file(path, given, found, named=True)
            continue
        problem = kernel_file(path)
        if problem:
            found.skipped.append(f"{given}: {problem}")
            continue
        found_before, other_files = found.count(), []
        found.links_out = []
        walk_directory(path, found, walked, other_files, None if follow_links else os.path.realpath(path))
        if found.links_out:
            link, target = found.links_out[0]
            found.left.append(f"{given}: {len(found.links_out):,} symlinks leading outside it not followed (such as "
                              f"{link} -> {target}; --follow-links follows them)")
        if found.count() == found_before:
            found.skipped.append(f"{given}: no log files ({', '.join(LOG_SUFFIXES)}, or logs by their lines) "
                                 "or agent transcripts in it")
        elif other_files:
            found.left.append(f"{given}: {len(other_files):,} other files not read, neither logs by name nor by "
                              f"their lines (such as {other_files[0].name}; name a file to read it as a log)")
    return found


def add_file(path: Path, name: str, found: SortedInputs, named: bool, other_files: list[Path] | None = None) -> None:
    """Sort one file: a file the user `named` is read as a log whatever its name; in a directory, files
    with a log's name (rotated copies too), and files without a suffix whose first lines are a journal's
    or SGLang's; the others go to `other_files`. A FIFO or device is never opened: reading it could wait
    forever."""
    # Imported here: the transcript readers are needed to sort inputs, never by a parse worker reading bytes.
    from ..parsers.transcripts.detect import detect, read_elsewhere, sqlite_problem

    if not named and read_elsewhere(path):
        return  # read with the transcript it belongs to
    problem = not_a_file(path)
    if problem:
        found.skipped.append(f"{name}: {problem}")
        return
    if not named and (rank_file := per_rank_file(path.name)) and rank_file[2] \
            and (path.parent / f"{rank_file[0]}_{rank_file[1]}.log").is_file():
        return  # an hourly copy, read with its per-rank file (`hourly_copies`)
    transcript = detect(path)
    if transcript:
        found.transcripts.append((path, transcript))
        return
    problem = sqlite_problem(path) if named or path.suffix == ".db" else None
    if problem:
        found.skipped.append(f"{name}: {problem}")
    elif named or named_like_a_log(path.name) or (_without_suffix(path) and _reads_like_a_log(path)):
        found.logs.append(name)
    elif other_files is not None:
        other_files.append(path)


def named_like_a_log(name: str) -> bool:
    return name.endswith(LOG_SUFFIXES) or ROTATED_LOG.search(name) is not None


def _without_suffix(path: Path) -> bool:
    """`server`, `syslog.1`: a name that says nothing of what the file holds."""
    return path.suffix == "" or path.suffix[1:].isdigit()


def _reads_like_a_log(path: Path) -> bool:
    from ..parsers.envelopes import looks_like_a_log

    try:
        with path.open("rb") as f:
            head = f.read(SNIFF_BYTES)
    except OSError:
        return False
    head = without_hole(head)
    return not looks_binary(head) and looks_like_a_log(head.decode("utf-8", errors="replace").splitlines()[:200])


def walk_directory(root: Path, found: SortedInputs, walked: set[tuple[int, int]], other_files: list[Path],
                   confine: str | None) -> None:
    """Transcript trees (an opencode `storage/`) are taken whole; other files one by one. Each real
    directory is walked once, however many symlinks lead to it (a link to `.` would loop forever). With
    `confine` (the real path of the folder named), a symlink whose target is outside it is not followed; the
    kernel's folders are never entered."""
    from ..parsers.transcripts.detect import detect

    problem = kernel_file(root)
    if problem:
        found.skipped.append(f"{root}: {problem}")
        return
    try:
        info = root.stat()
        if (info.st_dev, info.st_ino) in walked:
            return
        walked.add((info.st_dev, info.st_ino))
        tree = detect(root)
        children = [] if tree else in_time_order(list(root.iterdir()))
    except OSError as exc:  # a folder that cannot be listed costs only itself
        found.skipped.append(f"{root}: cannot read ({exc.strerror})")
        return
    if tree:
        found.transcripts.append((root, tree))
        return
    for child in children:
        try:
            if child.is_symlink():
                target = os.path.realpath(child)
                if confine is not None and not within(target, confine):
                    found.links_out.append((child, os.readlink(child)))
                    continue
            is_dir = child.is_dir()
        except OSError as exc:
            found.skipped.append(f"{child}: cannot read ({exc.strerror})")
            continue
        if is_dir:
            walk_directory(child, found, walked, other_files, confine)
        else:
            add_file(child, str(child), found, named=False, other_files=other_files)
