"""The transcript reader registry: a new agent format is one reader, recognised and ingested like the others."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from logmine.parsers.transcripts import registry
from logmine.parsers.transcripts.detect import detect, read_transcripts
from logmine.parsers.transcripts.model import Message, Record, SeenIds, Session, ToolCall

from logmine import api


class ToyReader(registry.TranscriptReader):
    """A made-up agent writing one JSON line per turn: {"toy_session", "role", "text", "ran"?}."""

    name = "toy-agent"

    def recognises_line(self, line: dict) -> bool:
        return "toy_session" in line

    def read(self, path: Path, seen: SeenIds) -> Iterator[Record]:
        turns = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        session_id = turns[0]["toy_session"]
        yield Session(format=self.name, id=session_id, path=str(path))
        for index, turn in enumerate(turns):
            message_id = f"{session_id}:{index}"
            yield Message(session_id, message_id, index, turn["role"], text=turn["text"])
            if "ran" in turn:
                yield ToolCall(session_id, message_id, index, f"call-{index}", "bash", {"command": turn["ran"]},
                               output=turn.get("output"), status="completed")


@pytest.fixture
def toy_reader() -> Iterator[ToyReader]:
    reader = registry.register(ToyReader())
    yield reader
    registry.unregister(reader.name)


def test_the_built_in_readers_are_registered_by_priority() -> None:
    assert [r.name for r in registry.readers()] == [
        "opencode-sqlite", "opencode-export", "opencode-concat", "opencode-storage", "codex", "claude-code"]


def test_a_reader_registered_at_run_time_is_detected_and_ingested(tmp_path: Path, toy_reader: ToyReader) -> None:
    session = tmp_path / "toy.jsonl"
    journal_line = ("Mar 12 10:00:01 gpu-node sglang[42]: [2026-03-12 10:00:01 TP0] Prefill batch, #new-seq: 1, "
                    "#new-token: 5, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0")
    session.write_text("\n".join(json.dumps(turn) for turn in [
        {"toy_session": "toy-1", "role": "user", "text": "restart the server"},
        {"toy_session": "toy-1", "role": "assistant", "text": "done", "ran": "ssh root@gpu-node 'journalctl -n 1'",
         "output": journal_line},
    ]) + "\n")
    assert detect(session) == "toy-agent"
    assert [type(r).__name__ for r in read_transcripts(session)] == ["Session", "Message", "Message", "ToolCall"]

    db = tmp_path / "toy.duckdb"
    report = api.ingest([str(session)], db=db)
    assert [(t.format, t.sessions, t.messages, t.tool_calls) for t in report.transcripts] == [("toy-agent", 1, 2, 1)]
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT format FROM sessions").fetchall() == [("toy-agent",)]
    assert con.execute("SELECT host, command FROM commands").fetchall() == [("gpu-node", "journalctl -n 1")]
    assert con.execute("SELECT kind, tp FROM embedded_lines").fetchall() == [("prefill_batch", 0)]


def test_without_the_reader_its_file_is_no_transcript(tmp_path: Path) -> None:
    session = tmp_path / "toy.jsonl"
    session.write_text(json.dumps({"toy_session": "toy-1", "role": "user", "text": "hi"}) + "\n")
    assert detect(session) is None
