"""Small helpers for block-at-a-time parsing with pyarrow: patch a few rows of a column."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def patch(values: pa.Array, rows: np.ndarray, new: pa.Array) -> pa.Array:
    """`values` with the entries at (ascending) `rows` replaced by `new` (the rows read another way)."""
    if not len(rows):
        return values
    mask = np.zeros(len(values), dtype=bool)
    mask[rows] = True
    return pc.replace_with_mask(values, pa.array(mask), new.cast(values.type))


def flags(values: pa.Array) -> np.ndarray:
    """A boolean column as a numpy array, nulls as False."""
    return pc.fill_null(values, False).to_numpy(zero_copy_only=False)


def drop_prefix(values: pa.StringArray, nbytes: pa.Array) -> pa.StringArray:
    """Each string without its first `nbytes` bytes (a matched envelope or prefix).

    Regex captures that run to the end of a line make RE2 re-scan the whole line for submatches;
    capturing only the head and cutting it off here is several times cheaper.
    """
    n = len(values)
    cut = pc.fill_null(nbytes, 0).to_numpy(zero_copy_only=False).astype(np.int64)
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32)[values.offset:values.offset + n + 1].astype(np.int64)
    data = np.frombuffer(values.buffers()[2], dtype=np.uint8) if values.buffers()[2] else np.zeros(0, np.uint8)
    starts, ends = offsets[:-1] + cut, offsets[1:]
    nonempty = ends > starts  # their starts (and ends) are distinct, so `+=` marks each once
    inside = np.zeros(len(data) + 1, dtype=np.int8)
    inside[starts[nonempty]] += 1
    inside[ends[nonempty]] -= 1
    kept = data[np.cumsum(inside[:-1], dtype=np.int8).view(bool)]  # 0/1: inside a kept range
    new_offsets = np.concatenate([[0], np.cumsum(ends - starts)]).astype(np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(new_offsets), pa.py_buffer(kept))
