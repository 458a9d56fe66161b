"""Small helpers for block-at-a-time parsing with pyarrow: patch rows, cut strings by byte position."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .events import TEXT_MAP


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
    return bool(np.any(data_bytes(values) == byte))


def offsets(values: pa.StringArray) -> np.ndarray:
    """Where each string of `values` starts in its data buffer, plus where the last one ends (int64)."""
    raw = np.frombuffer(values.buffers()[1], dtype=np.int32)
    return raw[values.offset:values.offset + len(values) + 1].astype(np.int64)


def first_bytes(values: pa.StringArray) -> np.ndarray:
    """The first byte of each string of `values` (int16), -1 for an empty or null one: a test of how lines begin
    that reads one byte a line, where a regex reads them all."""
    starts = offsets(values)
    out = np.full(len(values), -1, dtype=np.int16)
    written = np.nonzero(starts[:-1] < starts[1:])[0]
    out[written] = data_bytes(values)[starts[written]]
    return out


def data_bytes(values: pa.StringArray) -> np.ndarray:
    """The data buffer of a string array as bytes (positions as in `offsets`)."""
    data = values.buffers()[2]
    return np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)


def spans(values: pa.StringArray, starts: np.ndarray, stops: np.ndarray,
          valid: np.ndarray | None = None) -> pa.StringArray:
    """The strings at byte positions [start, stop) of `values`' data buffer, null where not `valid`.

    Spans must come in ascending order without overlapping (as parts of consecutive rows do) and fall on
    character boundaries. They become the offsets of one array over the same buffer (no copy), of which
    every other element is taken: far cheaper than slicing rows by a common start and stop.
    """
    return buffer_spans(values.buffers()[2], starts, stops, valid)


def buffer_spans(data: pa.Buffer, starts: np.ndarray, stops: np.ndarray,
                 valid: np.ndarray | None = None) -> pa.StringArray:
    """`spans` of any buffer; the caller vouches that they are UTF-8 (or validates the result)."""
    n = len(starts)
    if not n:
        return pa.array([], pa.string())
    bounds = np.empty(2 * n, dtype=np.int32)
    bounds[0::2] = starts
    bounds[1::2] = stops
    segments = pa.StringArray.from_buffers(2 * n - 1, pa.py_buffer(bounds), data)
    picks = np.arange(0, 2 * n - 1, 2)
    return segments.take(pa.array(picks, mask=None if valid is None else ~valid))


def cut(values: pa.StringArray, starts: np.ndarray, stops: np.ndarray | None = None) -> pa.StringArray:
    """Each string's bytes [start, stop) (to its end when `stops` is None), like a slice per row;
    positions must fall on character boundaries, as they do after an ASCII head."""
    if not len(values):
        return values
    bounds = offsets(values)
    begin, end = bounds[:-1], bounds[1:]
    stop = end if stops is None else np.minimum(begin + stops, end)
    start = np.minimum(begin + starts, stop)
    return spans(values, start, stop, flags(pc.is_valid(values)) if values.null_count else None)


def bounded_ints(digits: pa.StringArray, limit: int) -> pa.Int64Array:
    """Texts of digits as integers; null where empty or null, and from `limit` up (a garbled number, such
    as a PID too long for any process, is no value, and would not fit its column). `bounded_int` is the
    same rule for one text, for the line-by-line paths."""
    # ASCII: Python's `\d` also matches other scripts' digits, which Arrow does not read.
    fits = pc.and_(pc.less_equal(pc.binary_length(digits), len(str(limit))), pc.not_equal(digits, ""))
    fits = pc.and_(fits, pc.string_is_ascii(digits))
    numbers = pc.cast(pc.if_else(fits, digits, pa.scalar(None, pa.string())), pa.int64())
    return pc.if_else(pc.less(numbers, limit), numbers, pa.scalar(None, pa.int64()))


def bounded_int(digits: str | None, limit: int) -> int | None:
    """`bounded_ints` for one text."""
    if not digits or not digits.isascii() or not digits.isdigit() or len(digits) > len(str(limit)):
        return None
    number = int(digits)
    return number if number < limit else None


def records_table(records: list[dict[str, object]]) -> pa.Table:
    """Event rows built one by one (the rare rows the vectorised paths leave to Python) as a table:
    `_row` the row in the block, `extra` a map, every other field text."""
    names = dict.fromkeys(k for r in records for k in r)
    schema = pa.schema([pa.field(k, pa.int64() if k == "_row" else TEXT_MAP if k == "extra" else pa.string())
                        for k in names])
    return pa.Table.from_pylist(records, schema=schema)
