"""Small helpers for block-at-a-time parsing with pyarrow: patch rows, cut strings by byte position."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ROW_END = 1 << 30  # a slice stop past the end of any line


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


def ints(values: pa.Array, null: int = -1) -> np.ndarray:
    """An integer column as a numpy int64 array, nulls as `null`."""
    return pc.fill_null(values, null).to_numpy(zero_copy_only=False).astype(np.int64)


def has_byte(values: pa.StringArray, byte: int) -> bool:
    """Does any string of `values` contain this byte? (one memchr-speed pass over the data buffer)"""
    data = values.buffers()[2]
    return data is not None and bool(np.any(np.frombuffer(data, dtype=np.uint8) == byte))


def cut(values: pa.StringArray, starts: np.ndarray, stops: np.ndarray | None = None) -> pa.StringArray:
    """Each string's bytes [start, stop) (to its end when `stops` is None); positions must fall on
    character boundaries, as they do after an ASCII head.

    Arrow slices by one start and stop for all rows; a block has only a few distinct head lengths
    (one host, one PID, one prefix shape), so rows are sliced in groups of equal positions.
    """
    n = len(values)
    stops = np.full(n, ROW_END, dtype=np.int64) if stops is None else stops
    binary = values.cast(pa.binary())
    pairs = starts.astype(np.int64) * (ROW_END * 2) + stops
    distinct, group = np.unique(pairs, return_inverse=True)
    if len(distinct) == 1:
        return pc.binary_slice(binary, int(starts[0]), int(stops[0])).cast(pa.string())
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(len(distinct) + 1))
    pieces = []
    for g in range(len(distinct)):
        rows = order[bounds[g]:bounds[g + 1]]
        first = int(rows[0])
        pieces.append(pc.binary_slice(binary.take(pa.array(rows)), int(starts[first]), int(stops[first])))
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.arange(n)
    return pa.concat_arrays(pieces).take(pa.array(inverse)).cast(pa.string())


def drop_prefix(values: pa.StringArray, nbytes: pa.Array) -> pa.StringArray:
    """Each string without its first `nbytes` bytes (a matched envelope or prefix).

    Regex captures that run to the end of a line make RE2 re-scan the whole line for submatches;
    capturing only the head and cutting it off here is several times cheaper.
    """
    return cut(values, ints(nbytes, 0))
