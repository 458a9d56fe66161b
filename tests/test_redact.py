"""`--redact`: planted secrets of every kind reach no table, no query output, and later ingests redact too."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from logmine.parsers.secret_patterns import PATTERNS, PRIVATE_KEY_EXAMPLE

from logmine import api
from logmine.ingest.redact import Redactor, placeholder
from logmine.query import named_queries

from .conftest import shared_path

JOURNAL = Path(__file__).resolve().parents[1] / "examples" / "demo" / "journal.txt"
HF = "hf_QmZx81kQpLm2Vb7Hy4Tr9WcN3aFd6Ue5J"
API_KEY = "Zx81kQpLm2Vb7-apikey"
STRIPE = "sk_live_" + "Zx81kQpLm2Vb7Hy4Tr9WcN3a"  # found by detect-secrets' plugin, not by the pattern table
KEY_LINE = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"
SECRETS = [HF, API_KEY, STRIPE, KEY_LINE, "AKIAZX81KQPLM2VB7HY4", "s3cretPassw0rd", "Bearer-Zx81kQpLm2Vb7Hy4"]
STAMP = "Mar 12 10:40:00 gpu-box python[25133]: "
PLANTED = [
    STAMP + f"[2026-03-12 10:40:00] server_args=ServerArgs(model_path='Qwen/Qwen3-32B', api_key='{API_KEY}', "
    "max_total_tokens=306048)",
    STAMP + f"[2026-03-12 10:40:01] Environment: HF_TOKEN={HF} AWS=AKIAZX81KQPLM2VB7HY4 STRIPE={STRIPE}",
    STAMP + "[2026-03-12 10:40:02] connecting to postgres://sglang:s3cretPassw0rd@db:5432/metrics",
    STAMP + "INFO:     rejected request: Authorization: Bearer Bearer-Zx81kQpLm2Vb7Hy4",
    STAMP + "-----BEGIN OPENSSH PRIVATE KEY-----", STAMP + KEY_LINE, STAMP + "-----END OPENSSH PRIVATE KEY-----",
]
UNIT = f"""[Service]
Environment=HF_TOKEN={HF}
ExecStart=/opt/venv/bin/python -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp 2 --api-key {API_KEY}
"""


def claude_transcript(path: Path) -> None:
    command = f"ssh root@gpu-box 'cat > /etc/systemd/system/sglang-qwen.service <<EOF\n{UNIT}EOF'"
    lines = [
        {"type": "user", "sessionId": "s1", "uuid": "u1", "timestamp": "2026-03-12T09:30:00Z",
         "message": {"role": "user", "content": f"use my token {HF}, api_key: {API_KEY}"}},
        {"type": "assistant", "sessionId": "s1", "uuid": "a1", "timestamp": "2026-03-12T09:30:05Z",
         "message": {"id": "m1", "role": "assistant", "content": [
             {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": command}}]}},
        {"type": "user", "sessionId": "s1", "uuid": "u2", "timestamp": "2026-03-12T09:30:09Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                  "content": f"{PRIVATE_KEY_EXAMPLE}\nSTRIPE={STRIPE}"}]}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def every_text(con: duckdb.DuckDBPyConnection) -> str:
    """Every text cell of every table, as one string."""
    tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                        "WHERE table_type = 'BASE TABLE'").fetchall()]
    return "\n".join(str(row) for t in tables for row in con.execute(f'SELECT * FROM "{t}"').fetchall())


def test_every_pattern_finds_its_example() -> None:
    redactor = Redactor()
    for pattern in PATTERNS:
        assert redactor.text(pattern.example) != pattern.example, pattern.name
    assert "kQpLm2" not in redactor.text(PRIVATE_KEY_EXAMPLE)
    block = redactor.lines(pa.array(PRIVATE_KEY_EXAMPLE.split("\n")[:2]))  # the key's lines run on to the next block
    assert redactor.lines(pa.array(["Zx81kQpLm2", "-----END OPENSSH PRIVATE KEY-----", "plain"])).to_pylist() == [
        placeholder("Zx81kQpLm2"), "-----END OPENSSH PRIVATE KEY-----", "plain"]
    assert block.to_pylist()[1].startswith("<secret:")


@pytest.fixture(scope="module")
def redacted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("redact")
    journal = folder / "journal.txt"
    journal.write_text(JOURNAL.read_text() + "\n".join(PLANTED) + "\n")
    claude_transcript(folder / "session.jsonl")
    db = folder / "t.duckdb"
    api.ingest([str(journal), str(folder / "session.jsonl")], db=db, redact=True)
    later = folder / "later.log"  # no --redact: the database's setting applies
    later.write_text(f"[2026-03-12 11:00:00] restarted with --api-key {API_KEY} and {HF}\n")
    api.ingest([str(later)], db=db)
    return db


def test_no_planted_secret_reaches_a_table_or_a_query(redacted: Path) -> None:
    assert stat.S_IMODE(os.stat(redacted).st_mode) == 0o600
    with api.open_db(redacted) as con:
        stored = every_text(con)
        outputs = "\n".join(api.query(con, name).to_csv() for name in named_queries.names())
    for secret in SECRETS:
        assert secret not in stored and secret not in outputs, secret
    # Equal secrets, equal placeholders: the journal's token and the transcript's are one value.
    assert stored.count(placeholder(HF)) >= 4 and stored.count(placeholder(API_KEY)) >= 4
    assert "<secret:hf_…" in placeholder(HF)


def test_no_planted_secret_reaches_a_report_or_the_unparsed_lines(redacted: Path) -> None:
    """The postmortem to share (HTML and Markdown, evidence lines cited as logged) and the untyped lines."""
    with api.open_db(redacted) as con:
        shown = "\n".join([api.report(con, fmt="html"), api.report(con, fmt="markdown"),
                           api.unparsed(con, limit=10_000).to_csv()])
    assert placeholder(HF) in shown or placeholder(API_KEY) in shown  # the planted lines are cited or listed
    for secret in SECRETS:
        assert secret not in shown, secret


def test_redacted_text_keeps_what_it_tells(redacted: Path) -> None:
    with api.open_db(redacted) as con:
        args = api.sql(con, "SELECT args FROM server_args ORDER BY line_no DESC LIMIT 1").iloc[0, 0]
        snapshot = api.sql(con, "SELECT args FROM config_snapshots").iloc[0, 0]
        hosts = api.sql(con, "SELECT DISTINCT host FROM commands")["host"].tolist()
    assert args["api_key"] == placeholder(API_KEY) and args["max_total_tokens"] == 306048
    assert snapshot["api_key"] == placeholder(API_KEY) and snapshot["tp_size"] == 2
    assert hosts == ["gpu-box"]


def test_real_logs_have_nothing_taken_for_a_secret() -> None:
    """No false positives on the corpus of real SGLang logs (decode stats say `#token: N`, dumps `api_key=None`)."""
    redactor = Redactor()
    files = sorted(shared_path("corpus", "sglang").glob("*.log")) + [JOURNAL]
    lines = [line for path in files for line in path.read_text(errors="replace").split("\n")]
    assert len(lines) > 10_000
    changed = [line for line, kept in zip(lines, redactor.lines(pa.array(lines)).to_pylist(), strict=True)
               if line != kept]
    assert changed == []
