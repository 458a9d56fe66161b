"""Agent transcripts stored next to the journal, and joined to the server runs they drove."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from logmine import api

from .conftest import SAMPLE, SHARED, shared_path

FORMS = ["session.opencode.json", "opencode-storage", "opencode.db"]


def as_json(df) -> list[dict]:
    return json.loads(api.render(df, "json"))


@pytest.mark.parametrize("form", FORMS)
def test_kimi_session_figures(form: str, ingested) -> None:
    truth = json.loads(shared_path("samples", "kimi-k25", "truth.json").read_text())["session"]
    con = ingested(SAMPLE / "journal.txt", SAMPLE / form)
    (session,) = as_json(api.query(con, "sessions"))
    assert (session["id"], session["format"], session["messages"], session["user_messages"]) == (
        truth["id"], "opencode", truth["messages"], truth["user_messages"])
    assert session["tool_calls"] == truth["tool_calls"]
    assert (session["unit_file_writes"], session["embedded_journal_lines"]) == (
        truth["unit_file_writes"], truth["embedded_journal_lines"])
    assert session["offset_method"] == "matched journal lines" and session["journal_utc_offset_s"] == 0


@pytest.mark.parametrize("form", FORMS)
def test_kimi_links(form: str, ingested) -> None:
    truth = json.loads(shared_path("samples", "kimi-k25", "truth.json").read_text())
    con = ingested(SAMPLE / "journal.txt", SAMPLE / form)
    links = as_json(api.query(con, "links"))
    first = int(truth["session"]["first_message"])
    expected = [(link["message_id"], int(link["message"]) - first, link["kind"], link["changed"], link["run"])
                for link in truth["links"]]
    assert [(k["message"], k["message_index"], k["kind"], k["changed"], k["run"]) for k in links] == expected
    assert {k["source"] for k in links} == {str(SAMPLE / "journal.txt")}


def test_embedded_lines_are_matched_to_the_journal(ingested) -> None:
    con = ingested(SAMPLE / "journal.txt", shared_path("samples", "kimi-k25", "session.opencode.json"))
    total, matched = con.execute("""SELECT count(*), count(m.line_no) FROM embedded_lines AS e
        LEFT JOIN embedded_matches AS m ON m.call_id = e.call_id AND m.line_in_output = e.line_in_output""").fetchone()
    assert total == 221
    # Progress bars are `[N blob data]` in the short journal, so only those five cannot match.
    assert matched >= total - 5


def test_tz_option_overrides_the_inferred_offset(tmp_path: Path) -> None:
    shared_path("samples", "kimi-k25")
    db = tmp_path / "t.duckdb"
    api.ingest([str(SAMPLE / "journal.txt"), str(SAMPLE / "session.opencode.json")], db=db, tz="+01:00")
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT utc_offset_s, method FROM session_clock").fetchall() == [(3600, "--tz")]


@pytest.mark.skipif(not (SHARED / "corpus" / "transcripts").exists(), reason="corpus transcripts absent")
def test_every_corpus_transcript_ingests_without_loss(tmp_path: Path) -> None:
    from logmine.parsers.transcripts.detect import read_transcripts
    from logmine.parsers.transcripts.model import Message, ToolCall, UnknownRecord

    folder = SHARED / "corpus" / "transcripts"
    files = sorted(p for p in folder.iterdir() if p.suffix == ".jsonl")
    db = tmp_path / "t.duckdb"
    report = api.ingest([str(p) for p in files], db=db).as_dict()
    expected = {"messages": 0, "tool_calls": 0, "unknown": 0}
    for path in files:
        for record in read_transcripts(path):
            expected["messages"] += isinstance(record, Message)
            expected["tool_calls"] += isinstance(record, ToolCall)
            expected["unknown"] += isinstance(record, UnknownRecord)
    con = duckdb.connect(str(db), read_only=True)
    # A record of a kind the formats document is a session event, any other an unknown record: both kept.
    stored = con.execute("SELECT (SELECT count(*) FROM messages), (SELECT count(*) FROM tool_calls), "
                         "(SELECT count(*) FROM unknown_records) + (SELECT count(*) FROM session_events)").fetchone()
    assert stored == (expected["messages"], expected["tool_calls"], expected["unknown"])
    assert stored[0] > 900 and stored[1] > 700
    assert sum(t["messages"] for t in report["transcripts"]) == stored[0]


def test_malformed_jsonl_line_is_reported_and_the_rest_ingested(tmp_path: Path) -> None:
    session = tmp_path / "rollout.jsonl"
    lines = [
        {"timestamp": "2026-03-01T10:00:00Z", "type": "session_meta",
         "payload": {"id": "0196a000-0000-7000-8000-000000000001", "cwd": "/x", "cli_version": "0.98.0"}},
        {"timestamp": "2026-03-01T10:00:01Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "restart it"}]}},
    ]
    session.write_text(json.dumps(lines[0]) + "\n{not json\n" + json.dumps(lines[1]) + "\n")
    report = api.ingest([str(session)], db=tmp_path / "t.duckdb").as_dict()
    (transcript,) = report["transcripts"]
    assert transcript["messages"] == 1 and transcript["problems"][0].startswith(f"{session}:2:")
