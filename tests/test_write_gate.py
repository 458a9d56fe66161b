"""One gate for every row logmine stores: a column its table lacks is refused, on each path that writes."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from logmine.derive.runs import RUNS_COLUMNS
from logmine.ingest import transcripts
from logmine.knowledge.rebuild import TABLES as KNOWLEDGE_TABLES
from logmine.store import append, create_tables, insert_rows


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    create_tables(con, {"runs": RUNS_COLUMNS, **transcripts.TABLES, **KNOWLEDGE_TABLES})
    return con


def test_a_misspelt_transcript_column_is_refused(con: duckdb.DuckDBPyConnection):
    with pytest.raises(ValueError, match=r"\['comand'\] are not in the table"):
        transcripts.insert_rows(con, "commands", [{"session_id": "s", "comand": "systemctl restart sglang"}])
    assert con.execute("SELECT count(*) FROM commands").fetchone() == (0,)


def test_a_misspelt_knowledge_or_run_column_is_refused(con: duckdb.DuckDBPyConnection):
    with pytest.raises(ValueError, match="valeu"):
        insert_rows(con, "claims", [{"session_id": "s", "valeu": 41.7}], KNOWLEDGE_TABLES["claims"])
    with pytest.raises(ValueError, match="ordinl"):
        insert_rows(con, "runs", [{"ordinl": 1}], RUNS_COLUMNS)


def test_an_arrow_batch_with_an_unknown_column_is_refused(con: duckdb.DuckDBPyConnection):
    with pytest.raises(ValueError, match="comand"):
        append(con, "commands", pa.table({"comand": ["x"]}), transcripts.TABLES["commands"])


def test_known_columns_are_stored_with_their_types(con: duckdb.DuckDBPyConnection):
    insert_rows(con, "claims", [{"session_id": "s", "value": 41.7, "approximate": True}], KNOWLEDGE_TABLES["claims"])
    assert con.execute("SELECT session_id, value, approximate FROM claims").fetchall() == [("s", 41.7, True)]
    transcripts.insert_rows(con, "commands", [{"session_id": "s", "command": "systemctl restart sglang"}])
    assert con.execute("SELECT command FROM commands").fetchall() == [("systemctl restart sglang",)]
