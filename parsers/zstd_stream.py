"""zstd-compressed input read as a stream that says when it was cut short: the log inputs and the transcript
readers both open `.zst` files through it."""

from __future__ import annotations

import io
from typing import BinaryIO

import zstandard

from .limits import ExpansionCheck


class ZstdReader(io.RawIOBase):
    """zstd frames decompressed as a stream, which raises at the end of data cut inside a frame (the
    library's stream reader ends there quietly, and a truncated file would lose its lines unnoticed), and
    is refused (`limits.LimitExceeded`) when it expands past `limits.ExpansionCheck`."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.check = ExpansionCheck()
        self.frame = zstandard.ZstdDecompressor().decompressobj()
        self.started = False  # the current frame has had input
        self.pending = bytearray()

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self.pending) < size:
            # Small reads keep the output of one call small too; smaller still until the data is seen to expand
            # no more than twentyfold (one zstd block of a few bytes can stand for 128 KB).
            small = not self.check.taken or self.check.given >= 20 * self.check.taken
            chunk = self.raw.read(1 << 10 if small else 1 << 16)
            if not chunk:
                if self.started and not self.frame.eof:
                    raise EOFError("zstd data ends inside a frame")
                break
            taken = len(chunk)
            while chunk:
                if self.frame.eof:  # concatenated frames: a new one begins
                    self.frame = zstandard.ZstdDecompressor().decompressobj()
                given = self.frame.decompress(chunk)
                self.check.add(taken, len(given))
                taken = 0
                self.pending += given
                self.started = True
                chunk = self.frame.unused_data if self.frame.eof else b""
        size = len(self.pending) if size < 0 else size
        out = bytes(self.pending[:size])
        del self.pending[:size]
        return out

    def close(self) -> None:
        self.raw.close()
        super().close()


# What a corrupt or truncated gzip or zstd input raises while it is read (gzip.BadGzipFile is an OSError).
