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
