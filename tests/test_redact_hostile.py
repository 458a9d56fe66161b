"""`--redact` against hostile and unlucky input: a key marker without its end loses no line, a key split over
two ingests is still redacted, the shapes that leaked are found, and many markers cost linear time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from logmine.ingest.redact import Redactor
from tests.conftest import REPO

DEMO = (REPO / "examples" / "demo" / "journal.txt").read_text().splitlines(keepends=True)
STAMP = "Mar 12 10:40:00 gpu-box python[25133]: "
KEY_LINES = ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ+/"]


def ingest(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "logmine", "ingest", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def messages(db: Path, display: str) -> list[str]:
    with duckdb.connect(str(db), read_only=True) as con:
        return [r[0] for r in con.execute("SELECT message FROM lines JOIN sources USING (source_id) WHERE display = ? "
                                          "ORDER BY line_no", [display]).fetchall()]


def test_a_key_without_its_end_loses_no_line(tmp_path: Path) -> None:
    """One BEGIN line, two lines of key material, no END, then 160 lines of the server: all stored, only the two
    key lines redacted; the journal beside it is whole."""
    log = DEMO[:40] + [STAMP + "-----BEGIN PRIVATE KEY-----\n"] + [STAMP + k + "\n" for k in KEY_LINES] + DEMO[40:199]
    (tmp_path / "server.log").write_text("".join(log))
    (tmp_path / "other.log").write_text("".join(DEMO[300:400]))
    assert ingest("server.log", "other.log", "--db", "plain.duckdb", cwd=tmp_path).returncode == 0
    done = ingest("server.log", "other.log", "--db", "red.duckdb", "--redact", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    clear, redacted = messages(tmp_path / "plain.duckdb", "server.log"), messages(tmp_path / "red.duckdb", "server.log")
    assert len(clear) == len(redacted) == len(log) == 202
    differ = [i for i, (a, b) in enumerate(zip(clear, redacted, strict=True)) if a != b]
    assert differ == [41, 42]
    assert all(redacted[i].startswith("<secret:…") and KEY_LINES[0] not in redacted[i] for i in differ)
    assert messages(tmp_path / "red.duckdb", "other.log") == messages(tmp_path / "plain.duckdb", "other.log")


def test_a_key_split_over_two_ingests_is_redacted(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("".join(DEMO[:10]) + STAMP + "-----BEGIN OPENSSH PRIVATE KEY-----\n" + STAMP + KEY_LINES[0] + "\n")
    assert ingest("server.log", "--db", "x.duckdb", "--redact", cwd=tmp_path).returncode == 0
    with log.open("a") as grown:  # the rest of the key arrives later
        grown.write(STAMP + KEY_LINES[1] + "\n" + STAMP + "-----END OPENSSH PRIVATE KEY-----\n" + "".join(DEMO[10:20]))
    done = ingest("server.log", "--db", "x.duckdb", cwd=tmp_path)  # the setting is the database's
    assert done.returncode == 0, done.stderr
    stored = messages(tmp_path / "x.duckdb", "server.log")
    assert len(stored) == 24
    assert not any(k in line for k in KEY_LINES for line in stored)
    assert stored[12].startswith("<secret:…") and stored[13] == "-----END OPENSSH PRIVATE KEY-----"


LEAKS = {  # each shape the hostile round found in clear, with its value
    "option continued": ("ExecStart=/opt/venv/bin/python -m sglang.launch_server --api-key \\\n"
                         "    Zx81kQpLm2Vb7Hy4 \\\n    --port 30000", "Zx81kQpLm2Vb7Hy4"),
    "password of digits": ("Environment=DB_PASSWORD=19830512", "19830512"),
    "key of letters only": ("export OPENAI_API_KEY=XkQpLmVbHyTrWcNaFdUeJqRs", "XkQpLmVbHyTrWcNaFdUeJqRs"),
    "token wrapped over two lines": ("$ echo $HF_TOKEN\nhf_QmZx81kQpLm2Vb7Hy4\nTr9WcN3aFd6Ue5J\n$ ", "Tr9WcN3aFd6Ue5J"),
    "base64 of a token": ("$ echo -n $HF_TOKEN | base64\naGZfUW1aeDgxa1FwTG0yVmI3SHk0VHI5V2NOM2FGZDZVZTVK\n",
                          "aGZfUW1aeDgxa1FwTG0yVmI3SHk0VHI5V2NOM2FGZDZVZTVK"),
}


@pytest.mark.parametrize("shape", sorted(LEAKS))
def test_the_shapes_that_leaked_are_found(shape: str) -> None:
    text, value = LEAKS[shape]
    redacted = Redactor().text(text)
    assert value not in redacted and "<secret:" in redacted
    assert redacted.count("\n") == text.count("\n")  # no line lost
    # Read as a log, line by line (the option's value on the line after it included).
    lines = Redactor().lines(pa.array(text.split("\n"))).to_pylist()
    if shape != "token wrapped over two lines":  # a wrap is a terminal's, in a transcript's text
        assert not any(value in line for line in lines), lines
    assert len(lines) == len(text.split("\n"))


@pytest.mark.parametrize("value", ["nextToken", "getElementsByClassName", "document.querySelector", "None",
                                   "csrfTokenFromTheHeader"])
def test_a_name_is_no_key(value: str) -> None:
    assert Redactor().text(f"token = {value}") == f"token = {value}"


def test_many_markers_cost_linear_time_and_no_line() -> None:
    """100,000 BEGIN markers without an END (20,000 took over 316 s when a block was a lazy regex to the end)."""
    marker = "-----BEGIN PRIVATE KEY-----"
    text = "\n".join([marker, "step done"] * 50_000)
    assert Redactor().text(text) == text  # nothing there looks like key material
    lines = pa.array([STAMP + marker, STAMP + KEY_LINES[0], STAMP + "INFO step done"] * 33_334)
    out = Redactor().lines(lines).to_pylist()
    assert len(out) == len(lines)
    assert out[0::3] == lines.to_pylist()[0::3] and out[2::3] == lines.to_pylist()[2::3]
    assert not any(KEY_LINES[0] in line for line in out[1::3])
