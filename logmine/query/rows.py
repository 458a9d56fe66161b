"""A query result as plain Python values, whole (`Rows`) or in chunks read as they are written (`RowChunks`),
so that a command that prints a result need not import pandas."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Rows:
    """A query result as plain Python values: column names and row tuples."""

    columns: list[str]
    rows: list[tuple]
    total: int | None = None  # the rows of the whole result, when `rows` holds only the first ones

    @property
    def count(self) -> int:
        return len(self.rows) if self.total is None else self.total

    def __len__(self) -> int:
        return len(self.rows)

    def to_pandas(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.rows, columns=self.columns)


@dataclass
class RowChunks:
    """A query result as column names and its rows in lists of a few thousand, read as they are written:
    the formats that give every row write a result of millions of rows without holding it whole."""

    columns: list[str]
    chunks: Iterator[list[tuple]]
