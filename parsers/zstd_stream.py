"""zstd-compressed input read as a stream that says when it was cut short: the log inputs and the transcript
readers both open `.zst` files through it."""

from __future__ import annotations

import io
from typing import BinaryIO

import zstandard


class ZstdReader(io.RawIOBase):
    """zstd frames decompressed as a stream, which raises at the end of data cut inside a frame (the
    library's stream reader ends there quietly, and a truncated file would lose its lines unnoticed)."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.frame = zstandard.ZstdDecompressor().decompressobj()
        self.started = False  # the current frame has had input
        self.pending = bytearray()

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self.pending) < size:
            chunk = self.raw.read(1 << 16)  # small reads keep the output of one call small too
            if not chunk:
                if self.started and not self.frame.eof:
                    raise EOFError("zstd data ends inside a frame")
                break
            while chunk:
                if self.frame.eof:  # concatenated frames: a new one begins
                    self.frame = zstandard.ZstdDecompressor().decompressobj()
                self.pending += self.frame.decompress(chunk)
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
