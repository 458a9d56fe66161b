"""Batch statistics (`#running-req: 1, #token: 82, ...`): the by-position reader agrees with `parse_stats`."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from logmine.parsers.batch_stats import expand_stats, parse_stats
from logmine.parsers.vector_columns import cut

DECODE = ("#running-req: 1, #token: 82, token usage: 0.00, cuda graph: True, gen throughput (token/s): 73.90, "
          "#queue-req: 0")
TEXTS = [
    DECODE,
    DECODE + ", ",  # v0.3 ends the line with a separator
    "#new-seq: 1, #new-token: 7, #cached-token: 0, cache hit rate: 12.5%, token usage: 0.00, #running-req: 0, "
    "#queue-req: 0, input throughput (token/s): 0.53",
    "#running-req: 3, #token: full=35, swa=35, token usage: 0.01, #queue-req: 0",  # v0.4.9 hybrid pool
    "#running-req: 2, #token: 10, cpu graph: True, #queue-req: 0",  # another backend's graph label
    "#running-req: 2, #token: 10, #spec-accept: 0.75, #queue-req: 0",  # a field logmine does not know
    "#running-req: 2, #token: 10, #token: 11",  # a repeated key
    "#running-req: 2, odd piece, #queue-req: 1",  # a piece without `: `
    "#running-req: 2, #token: 10, note: a:b, #queue-req: 1",
    "#running-req: 4, #token: 99, token usage: 0.5, #queue-req: 0, gen throughput (token/s): 1.5 ",
    "#running-req: 5, #token: 7, lora: adaptér, #queue-req: 0",  # non-ASCII text
    "",
    None,
]


def test_every_row_reads_as_parse_stats_reads_it() -> None:
    table = pa.table({"line_no": pa.array(range(len(TEXTS)), pa.int64()), "_stats": pa.array(TEXTS, pa.string())})
    out = expand_stats(table)
    assert "_stats" not in out.column_names
    rows = {row["line_no"]: row for row in out.to_pylist()}
    assert sorted(rows) == list(range(len(TEXTS)))
    for line_no, text in enumerate(TEXTS):
        expected = parse_stats(text or "")
        got = {k: v for k, v in rows[line_no].items() if k != "line_no" and v is not None}
        if "extra" in got:
            got["extra"] = list(got["extra"])
        assert got == expected, text


def test_known_values_are_typed_and_odd_ones_kept() -> None:
    table = pa.table({"line_no": pa.array(range(len(TEXTS)), pa.int64()), "_stats": pa.array(TEXTS, pa.string())})
    rows = {row["line_no"]: row for row in expand_stats(table).to_pylist()}
    assert rows[0]["running_req"] == "1" and rows[0]["gen_throughput_tok_s"] == "73.90"
    assert rows[2]["cache_hit_rate_pct"] == "12.5"
    assert rows[3]["extra"] == [("#token", "full=35, swa=35")] and rows[3]["tokens"] is None
    assert rows[4]["graph"] == "True" and ("graph_label", "cpu graph") in rows[4]["extra"]
    assert ("#spec-accept", "0.75") in rows[5]["extra"]
    assert rows[9]["gen_throughput_tok_s"] == "1.5"


@pytest.mark.parametrize("offset", [0, 3])
def test_cut_slices_each_row_by_byte_position(offset: int) -> None:
    values = pa.array(["xxabc", None, "yyyyyz", "q", "ééab"], pa.string()).slice(offset)
    starts = np.array([2, 2, 4, 0, 4][offset:])
    texts = values.to_pylist()

    def expected(stops: list[int | None]) -> list[str | None]:
        return [None if v is None else v.encode()[a:b].decode() for v, a, b in zip(texts, starts, stops, strict=True)]

    assert cut(values, starts).to_pylist() == expected([None] * len(texts))
    assert cut(values, starts, starts + 1).to_pylist() == expected(list(starts + 1))
