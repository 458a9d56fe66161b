"""Batch statistics: the `key: value, ` text of prefill and decode lines, as typed columns plus an `extra` map.

Which keys have a column is `sglang_formats.STATS_KEYS`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import hot_path
from . import sglang_formats as formats
from .vector_columns import data_bytes, ints, offsets, records_table, spans

# A key starts only where a run of key characters does, which keeps the search linear in the text.
STATS_PAIR = re.compile(r"(?<![^,:])([^,:]+): ([^,]*(?:, (?![^,:]+: )[^,]*)*)")
TRIM_PASSES = 8  # trailing `%`/spaces trimmed by position; a longer run goes through parse_stats


def parse_stats(text: str, known: Mapping[str, str] = formats.STATS_KEYS) -> dict[str, object]:
    """`#running-req: 1, #token: 82, cuda graph: True, ` -> typed known keys plus an `extra` map.

    A value runs to the next `, key: `, so v0.4.9 hybrid values such as `full=35, swa=35` stay whole.
    `known` maps the keys that have a column; any other key goes to `extra`.
    """
    fields: dict[str, object] = {}
    extra: dict[str, str] = {}
    repeats: Counter = Counter()

    def keep(key: str, value: str) -> None:
        # A map holds a key once: a repeated one is kept as `key (2)`, `key (3)`, ...
        unique = key
        while unique in extra:
            repeats[key] += 1
            unique = f"{key} ({repeats[key] + 1})"
        extra[unique] = value

    for key, value in STATS_PAIR.findall(text.rstrip(", ")):
        key = key.strip()
        column = known.get(key)
        if column is None or column in fields or "=" in value:
            keep(key, value.strip())
        else:
            fields[column] = value.rstrip("% ")
            if column == "graph" and key != "cuda graph":
                keep("graph_label", key)
    if extra:
        fields["extra"] = list(extra.items())
    return fields


def expand_stats(table: pa.Table, columns: Collection[str] | None = None) -> pa.Table:
    """Replace a `_stats` capture (batch statistics text) by its typed columns and `extra` map.

    Only keys whose column is in `columns` (the destination table's; all known keys when None) get
    a column: a decode-only key in a prefill line lands in `extra` rather than in no column at all.
    The classifier keeps the text whole; this step runs where the rows are typed for storage, which
    during a large ingest is the process that is not busy matching patterns.
    """
    if "_stats" not in table.column_names:
        return table
    stats_keys = {k: c for k, c in formats.STATS_KEYS.items() if columns is None or c in columns}
    stats = table.column("_stats").combine_chunks()
    return _with_stats(table.drop_columns(["_stats"]), stats, stats_keys)


def _with_stats(table: pa.Table, stats: pa.StringArray, stats_keys: Mapping[str, str]) -> pa.Table:
    """Add the stats columns of `stats` (one text per row of `table`), for the keys in `stats_keys`.

    A row whose pieces are all a known key and a value without `,` or `=` (nearly all) is typed
    here, by byte position; any other goes through `parse_stats`.
    """
    columns = list(dict.fromkeys(stats_keys.values()))
    stats = pc.utf8_rtrim(pc.fill_null(stats, ""), characters=", ")
    locate = _compiled_spans if hot_path.kernels() else _vectorised_spans
    start, stop, present, slow = locate(stats, stats_keys, columns)
    for c, name in enumerate(columns):
        values = spans(stats, start[c], stop[c], present[c]) if present[c].any() else pa.nulls(len(stats), pa.string())
        table = table.append_column(name, values)
    if not slow.any():
        return table
    fast_table = table.filter(pa.array(~slow))
    slow_rows = np.nonzero(slow)[0]
    slow_table = table.take(pa.array(slow_rows)).drop_columns(columns)
    parsed = records_table([parse_stats(stats[int(i)].as_py(), stats_keys) for i in slow_rows])
    for name in parsed.column_names:
        slow_table = slow_table.append_column(name, parsed.column(name))
    return pa.concat_tables([fast_table, slow_table], promote_options="permissive")


def _key_columns(stats_keys: Mapping[str, str], columns: list[str]) -> list[int]:
    """Each known key's column, -1 for the keys only `parse_stats` reads right: a graph label other than
    `cuda graph` (it is kept in `extra` too)."""
    graph = columns.index("graph") if "graph" in columns else -2
    return [-1 if columns.index(c) == graph and k != "cuda graph" else columns.index(c) for k, c in stats_keys.items()]


def _compiled_spans(stats: pa.StringArray, stats_keys: Mapping[str, str],
                    columns: list[str]) -> tuple[np.ndarray, ...]:
    """`_vectorised_spans` by the compiled loop: one pass over the bytes."""
    encoded = [key.encode() for key in stats_keys]
    bounds = np.r_[0, np.cumsum([len(key) for key in encoded])].astype(np.int64)
    start, stop, present, slow = hot_path.kernels().stats_spans(
        data_bytes(stats), offsets(stats), np.frombuffer(b"".join(encoded), dtype=np.uint8), bounds,
        np.array(_key_columns(stats_keys, columns), dtype=np.int64), len(columns), TRIM_PASSES)
    shape = (len(columns), len(stats))
    return start.reshape(shape), stop.reshape(shape), present.reshape(shape), slow


def _vectorised_spans(stats: pa.StringArray, stats_keys: Mapping[str, str],
                      columns: list[str]) -> tuple[np.ndarray, ...]:
    """(start, stop, present) of each column's value in each text, as (column, row) matrices (an empty span
    at the text's start where absent), and which rows `parse_stats` must read (`slow`)."""
    keys = list(stats_keys)
    key_column = np.array(_key_columns(stats_keys, columns) + [-1])
    pieces = StatsPieces.of(stats)
    found = pieces.keys(stats).dictionary_encode()
    key_number = {key: i for i, key in enumerate(keys)}
    index_of = np.array([key_number.get(k, len(keys)) for k in pc.utf8_trim_whitespace(found.dictionary).to_pylist()]
                        + [len(keys)])
    # Unknown keys, other graph labels and repeated columns need the `extra` map: leave them to Python.
    index = np.where(pieces.bad, len(keys), index_of[ints(found.indices, len(index_of) - 1)])
    column = key_column[index]
    slow = np.zeros(len(stats), dtype=bool)
    slow[pieces.parent[column < 0]] = True
    # A column twice in one row: the sum of the row's column bits differs from their union.
    if len(column):
        bits = np.where(column >= 0, np.left_shift(1, np.maximum(column, 0)), 0)
        row_first = np.flatnonzero(np.r_[True, pieces.parent[1:] != pieces.parent[:-1]])
        twice = np.add.reduceat(bits, row_first) != np.bitwise_or.reduceat(bits, row_first)
        slow[pieces.parent[row_first[twice]]] = True
    value_start, value_stop, untrimmed = pieces.values(stats)
    slow[pieces.parent[untrimmed]] = True
    known = column >= 0
    where = column[known] * len(stats) + pieces.parent[known]  # in a (column, row) matrix, flattened
    start = np.tile(offsets(stats)[:-1], len(columns))
    stop = start.copy()
    present = np.zeros(len(start), dtype=bool)
    start[where], stop[where], present[where] = value_start[known], value_stop[known], True
    start, stop, present = (a.reshape(len(columns), len(stats)) for a in (start, stop, present))
    return start, stop, present, slow


@dataclass
class StatsPieces:
    """The `key: value` pieces of stats texts, as byte positions in the texts' data buffer.

    Texts are split on `, ` and each piece on its first `: `, as `parse_stats` reads them; `bad` marks
    the pieces it might read otherwise (no `: `, a lone `,`, `=` in the value, `:` in the key).
    """

    parent: np.ndarray  # row of each piece
    start: np.ndarray
    colon: np.ndarray  # position of the first `: `, -1 when there is none
    stop: np.ndarray
    bad: np.ndarray

    @classmethod
    def of(cls, stats: pa.StringArray) -> StatsPieces:
        bounds, data = offsets(stats), data_bytes(stats)
        text = data[bounds[0]:bounds[-1]]
        space_next = np.zeros(len(text), dtype=bool)
        np.equal(text[1:], ord(" "), out=space_next[:-1])
        found = np.empty(len(text), dtype=bool)  # reused: fresh large arrays cost page faults

        def at(byte: int) -> tuple[np.ndarray, np.ndarray]:
            """Positions of `byte` followed by a space, and of `byte` not followed by one (rare)."""
            np.equal(text, byte, out=found)
            total = np.count_nonzero(found)
            np.logical_and(found, space_next, out=found)
            paired = np.flatnonzero(found) + bounds[0]
            if total == len(paired):
                return paired, paired[:0]
            return paired, np.flatnonzero((text == byte) & ~space_next) + bounds[0]

        separators, lone_commas = at(ord(","))
        begin, end = bounds[:-1], bounds[1:]
        rows = np.flatnonzero(begin < end)
        count = np.searchsorted(separators, end[rows]) - np.searchsorted(separators, begin[rows]) + 1
        first = np.cumsum(count) - count  # (none when every text is empty)
        last = first + count - 1
        start, stop = np.empty(int(count.sum()), dtype=np.int64), np.empty(int(count.sum()), dtype=np.int64)
        inner = np.ones(len(start), dtype=bool)
        inner[first] = False
        start[first], start[inner] = begin[rows], separators + 2
        inner[first], inner[last] = True, False
        stop[last], stop[inner] = end[rows], separators
        parent = np.repeat(rows, count)

        def piece_of(positions: np.ndarray, width: int = 1) -> tuple[np.ndarray, np.ndarray]:
            piece = np.searchsorted(start, positions, side="right") - 1
            inside = (piece >= 0) & (positions + width <= stop[np.maximum(piece, 0)])
            return piece[inside], positions[inside]

        colons, lone_colons = at(ord(":"))
        if len(colons) == len(start) and (colons >= start).all() and (colons + 2 <= stop).all():
            colon = colons  # one `: ` in each piece, the usual case
        else:
            colon = np.full(len(start), -1, dtype=np.int64)
            piece, pos = piece_of(colons, 2)
            head = np.r_[True, piece[1:] != piece[:-1]][:len(piece)]  # the first `: ` of each piece
            colon[piece[head]] = pos[head]
        bad = colon < 0
        piece, _ = piece_of(lone_commas)
        bad[piece] = True
        np.equal(text, ord("="), out=found)
        if found.any():
            piece, pos = piece_of(np.flatnonzero(found) + bounds[0])
            bad[piece[pos > colon[piece]]] = True
        piece, pos = piece_of(lone_colons)
        bad[piece[pos < colon[piece]]] = True
        return cls(parent, start, colon, stop, bad)

    def keys(self, stats: pa.StringArray) -> pa.StringArray:
        return spans(stats, self.start, np.where(self.bad, self.start, self.colon))

    def values(self, stats: pa.StringArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start, stop) of each piece's value, trailing `%` and spaces left out (`12.5% ` -> `12.5`),
        and which pieces end in more of them than `TRIM_PASSES` (for `parse_stats`: a pass per byte
        over every piece would take time quadratic in such a run)."""
        data = data_bytes(stats)
        start = np.where(self.bad, self.stop, self.colon + 2)
        stop = self.stop.copy()
        trim = np.zeros(len(stop), dtype=bool)
        for _ in range(TRIM_PASSES + 1):
            last = data[np.maximum(stop - 1, 0)] if len(data) else np.zeros(len(stop), dtype=np.uint8)
            trim = (stop > start) & ((last == ord("%")) | (last == ord(" ")))
            if not trim.any():
                break
            stop[trim] -= 1
        return start, stop, trim

