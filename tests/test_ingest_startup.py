"""What an ingest does before it parses: whether the worker's server is worth starting, pyarrow told there
is no pandas to look for, and the stored content of a grown file checked while the parser loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import xxhash

from logmine import api
from logmine.ingest.worker import processes
from tests.test_growth import JOURNAL, tables
from tests.test_source_identity import MORE, whole


@pytest.fixture
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> int:
    """The worker's threshold a third of the example journal, so that a test needs no 32 MB file."""
    threshold = JOURNAL.stat().st_size // 3
    monkeypatch.setattr(processes, "WORKER_MIN_BYTES", threshold)
    return threshold


def test_the_server_is_started_for_what_is_left_to_read(tmp_path: Path, small_threshold: int) -> None:
    journal, db = tmp_path / "journal.txt", tmp_path / "t.duckdb"
    data = JOURNAL.read_bytes()
    journal.write_bytes(data[:data.index(b"\n", small_threshold // 2) + 1])
    assert not processes.worker_likely([str(journal)], str(db))  # small, new database
    journal.write_bytes(data)
    assert processes.worker_likely([str(journal)], str(db))  # large, new database
    assert processes.worker_likely([str(tmp_path)], str(db))  # found under a folder
    assert not processes.worker_likely(["-", str(tmp_path / "missing.txt")], str(db))
    api.ingest([str(journal)], db=db)
    assert not processes.worker_likely([str(journal)], str(db))  # all of it stored
    journal.write_bytes(data + data[:small_threshold + 1000])
    assert processes.worker_likely([str(journal)], str(db))  # more than the threshold appended
    (tmp_path / "not-a-db.duckdb").write_bytes(b"no database at all")
    assert processes.worker_likely([str(journal)], str(tmp_path / "not-a-db.duckdb"))  # unsure: start it


def test_pyarrow_settles_without_pandas_and_pandas_still_works() -> None:
    script = """
import sys
from logmine.ingest.worker.processes import arrow_without_pandas
arrow_without_pandas()
import pyarrow as pa
import logmine.ingest.logs
pa.array([1, 2])
print('pandas' in sys.modules)
import pandas as pd
frame = pa.table({'x': [1, 2]}).to_pandas()
print(type(frame).__name__, pa.array(pd.Categorical(['a', 'b', 'a'])).type)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "False"
    assert out[1].startswith("DataFrame dictionary<")  # pandas found again once imported


@pytest.mark.parametrize("edited", [False, True])
def test_a_grown_file_checked_while_the_parser_loads(tmp_path: Path, edited: bool) -> None:
    """`api.ingest` starts the check of a stored file's content before it loads the parser: an append
    goes on from where the last ingest stopped, an edit where it had read makes it read the file again."""
    journal, db = tmp_path / "journal.txt", tmp_path / "t.duckdb"
    data = JOURNAL.read_bytes()
    journal.write_bytes(data)
    api.ingest([str(journal)], db=db)
    if edited:
        at = data.index(b"avail mem=", 120_000)
        data = data[:at] + b"avail mem=11.11" + data[at + 15:]
    journal.write_bytes(data + MORE)
    (source,) = api.ingest([str(journal)], db=db, replace=True).logs.sources
    assert source.status == ("replaced" if edited else "grown")
    assert source.lines_read == (data.count(b"\n") + 1 if edited else 1)
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        size, digest = con.execute("SELECT size_bytes, content_hash FROM sources").fetchone()
        assert digest == xxhash.xxh3_128(journal.read_bytes()[:size]).hexdigest()
        stored = {t: rows for t, rows in tables(con).items() if t in ("lines", "decode_batches", "errors")}
    assert stored == {t: rows for t, rows in whole(journal).items() if t in stored}
