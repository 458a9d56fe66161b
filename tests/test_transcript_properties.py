"""Property tests of every transcript reader: random bytes, mutated real records, truncation at every offset.

Each input is read as an ingest reads it (`fuzz/transcripts.py`, shared with the fuzz targets) and must keep
the promise there: nothing raises, every line that is no JSON object is reported with its file and line,
every record a reader does not model is kept with its line, every opencode message is stored or kept with
its reason. Wrong types in every field of small records: tests/test_transcript_mutations.py. Real records
come from ../shared (skipped when absent) and the bundled example's session.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from logmine.parsers.transcripts import claude_code, codex, opencode

from fuzz.transcripts import (
    PART,
    SEEDS,
    SESSION,
    TARGETS,
    check_accounted,
    concat,
    export,
    jsonl,
    seed_bytes,
    write_input,
)

from .conftest import REPO, shared_path

CORPUS = ("corpus", "transcripts")
EXAMPLE_SESSION = REPO / "examples" / "demo" / "session.opencode.json"
FEW = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                      HealthCheck.too_slow])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12) | st.sampled_from([1e20, -1, ""]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6)


def check(data: bytes, fmt: str, folder: Path) -> dict[str, list[dict]]:
    return check_accounted(data, fmt, write_input(data, fmt, folder))


@pytest.mark.parametrize("fmt", TARGETS)
@FEW
@given(data=st.binary(max_size=400))
def test_random_bytes_are_reported_not_raised(fmt: str, data: bytes, tmp_path: Path) -> None:
    check(data, fmt, tmp_path)


@pytest.mark.parametrize("fmt", TARGETS)
@FEW
@given(data=st.data())
def test_random_edits_of_a_well_formed_input_are_reported_not_raised(fmt: str, data: st.DataObject,
                                                                     tmp_path: Path) -> None:
    """Bytes inserted, replaced or removed at random places of a small well-formed input."""
    seed = bytearray(seed_bytes(fmt))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(seed)))
        seed[at:at + data.draw(st.integers(0, 3))] = data.draw(st.binary(max_size=3))
    check(bytes(seed), fmt, tmp_path)


# ----------------------------------------------------------------------------------- truncation


@pytest.mark.parametrize("fmt", TARGETS)
def test_truncation_at_every_offset(fmt: str, tmp_path: Path) -> None:
    """Every prefix of a small input (every third of a storage tree's, which costs a tree each). JSONL
    inputs end before their first tool output: its journal parse would cost more than the rest."""
    data = jsonl(SEEDS[fmt][:3]) if fmt in SEEDS else seed_bytes(fmt)
    if fmt in (opencode.STORAGE, opencode.SQLITE):  # the bytes are one file of a tree, or a database's cell
        for end in range(0, len(data) + 1, 3 if fmt == opencode.STORAGE else 1):
            check(data[:end], fmt, tmp_path)
        return
    path = write_input(data, fmt, tmp_path)
    for end in range(len(data), -1, -1):  # the file cut shorter and shorter in place
        os.truncate(path, end)
        check_accounted(data[:end], fmt, path)


# ------------------------------------------------------------------------------ mutated records


def paths_in(value: Any, here: tuple = ()) -> list[tuple]:
    """Every place in a JSON value (the value itself included), as key/index paths."""
    found = [here]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += paths_in(inner, (*here, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += paths_in(inner, (*here, index))
    return found


def replaced(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    value = copy.copy(value)
    value[path[0]] = replaced(value[path[0]], path[1:], new)
    return value


def jsonl_records(path: Path) -> list[Any]:
    """The JSON lines of a file (a corpus file may hold a malformed one on purpose)."""
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


def real_records(fmt: str) -> list[tuple[str, Any]]:
    """(name, document) pairs of real records of `fmt`: JSONL lines as a list, an export as an object."""
    if fmt == claude_code.FORMAT:
        corpus = shared_path(*CORPUS)
        return [(p.name, jsonl_records(p)) for p in sorted(corpus.glob("*.jsonl"))
                if "claude" in p.name or "spotter" in p.name]
    if fmt == codex.FORMAT:
        corpus = shared_path(*CORPUS)
        return [(p.name, jsonl_records(p)) for p in sorted(corpus.glob("*codex*.jsonl"))]
    if fmt == opencode.CONCAT:
        corpus = shared_path(*CORPUS)
        return [(p.name, _concat_objects(p, 40)) for p in sorted(corpus.glob("*opencode*.jsonl"))[:1]]
    exports = [EXAMPLE_SESSION, shared_path("samples", "kimi-k25", "session.opencode.json")]
    documents = [(p.name, json.loads(p.read_text())) for p in exports]
    if fmt == opencode.EXPORT:
        return documents
    # SQLite rows and storage files hold one message's info each.
    return [(f"{name}:{entry['info']['id']}", entry["info"]) for name, document in documents
            for entry in document["messages"][:20]]


def _concat_objects(path: Path, limit: int) -> list[Any]:
    decoder, text, objects, position = json.JSONDecoder(), path.read_text(), [], 0
    while len(objects) < limit:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            break
        obj, position = decoder.raw_decode(text, position)
        objects.append(obj)
    return objects


def window(fmt: str, document: Any, start: int) -> Any:
    """A few consecutive records of a document, so that each example reads little."""
    if fmt == opencode.EXPORT:
        return {"info": document.get("info", SESSION), "messages": document["messages"][start:start + 3]}
    if isinstance(document, list):
        return document[start:start + 6]
    return document


def as_bytes(fmt: str, document: Any) -> bytes:
    if fmt in (claude_code.FORMAT, codex.FORMAT):
        return jsonl(document)
    if fmt == opencode.EXPORT:
        return export(document.get("info"), document.get("messages")) if isinstance(document, dict) else \
            json.dumps(document).encode()
    if fmt == opencode.CONCAT:
        return concat(document)
    return json.dumps(document).encode()


@pytest.mark.parametrize("fmt", TARGETS)
@settings(FEW, max_examples=8)
@given(data=st.data())
def test_mutated_real_records_are_stored_or_kept(fmt: str, data: st.DataObject, tmp_path: Path) -> None:
    """One value anywhere in a few real records replaced by any JSON value."""
    name, document = data.draw(st.sampled_from(real_records(fmt)))
    size = len(document["messages"]) if fmt == opencode.EXPORT else len(document) if isinstance(document, list) else 1
    part = window(fmt, document, data.draw(st.integers(0, max(size - 1, 0))))
    path = data.draw(st.sampled_from(paths_in(part)[1 if isinstance(part, list) else 0:]))  # lines stay lines
    mutated = replaced(part, path, data.draw(JSON_VALUES))
    check(as_bytes(fmt, mutated), fmt, tmp_path)


def test_real_records_are_read_whole(tmp_path: Path) -> None:
    """Unmutated, the real records are all stored: no problem is reported, and only cat-ed parts whose
    message is not among the objects read are kept with a reason."""
    for fmt in TARGETS:
        for name, document in real_records(fmt)[:2]:
            rows = check(as_bytes(fmt, window(fmt, document, 0)), fmt, tmp_path)
            assert not [r for r in rows["unknown_records"] if r["reason"] and r["record_type"] != "part"], (fmt, name)
            assert not rows["transcript_problems"], (fmt, name)
            assert rows["sessions"] or fmt == opencode.CONCAT, (fmt, name)  # cat-ed parts need no session


# ------------------------------------------------------------------------------- found crashes


def test_an_export_with_a_byte_that_is_no_utf8_is_read(tmp_path: Path) -> None:
    """Found by the fuzzer: one such byte failed the whole export with a UnicodeDecodeError."""
    data = export().replace(b'"title": "t"', b'"title": "t\xb0"')
    rows = check(data, opencode.EXPORT, tmp_path)
    assert [s["title"] for s in rows["sessions"]] == ["t\ufffd"] and len(rows["messages"]) == 1


def test_a_database_row_that_is_no_utf8_costs_only_itself(tmp_path: Path) -> None:
    """Found by the fuzzer: such a `data` value made the whole opencode.db unreadable."""
    rows = check(b'{"id": "msg_1", "role": "user", "text": "\xb0"}', opencode.SQLITE, tmp_path)
    assert sorted(m["id"] for m in rows["messages"]) == ["msg_1", "msg_2"]


def test_a_record_with_a_field_of_another_type_keeps_its_line(tmp_path: Path) -> None:
    """A Claude Code line whose `type` is a list is kept at its line (it was kept without one)."""
    lines = jsonl([{"type": ["user"], "sessionId": "s1", "uuid": "u0", "message": {"role": "user", "content": "x"}}])
    rows = check(jsonl(json.loads(line) for line in seed_bytes(claude_code.FORMAT).splitlines()) + lines,
                 claude_code.FORMAT, tmp_path)
    assert [(r["line"], r["reason"] is not None) for r in rows["unknown_records"]] == [(5, True)]


def test_a_storage_message_without_its_id_is_read_with_its_parts(tmp_path: Path) -> None:
    """Found by the property tests: a message file without `id` failed its whole tree with a KeyError."""
    message = {key: value for key, value in json.loads(seed_bytes(opencode.STORAGE)).items() if key != "id"}
    rows = check(json.dumps(message).encode(), opencode.STORAGE, tmp_path)
    assert [(t["message_id"], t["tool"]) for t in rows["tool_calls"]] == [("ses_1:0", "bash")]


def test_cat_ed_parts_without_their_message_are_kept(tmp_path: Path) -> None:
    """Found by the property tests: storage objects cat-ed without their message object were dropped."""
    rows = check(concat([SESSION, PART]), opencode.CONCAT, tmp_path)
    assert [(r["record_type"], r["reason"]) for r in rows["unknown_records"]] == [
        ("part", "its message is not in the file")]
