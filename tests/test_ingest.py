"""Ingest behaviour a user relies on: every envelope, nothing lost, idempotent, clear errors."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
import zstandard
from logmine.parsers.log_lines import LINE_COLUMNS, table_columns

from logmine import api
from logmine.ingest.logs import BatchAppender, SourceReport
from logmine.store import ensure_tables, typed_table

from . import journal_export

MESSAGES = [
    "[2026-03-01 23:45:58 TP0] Load weight begin. avail mem=78.64 GB",
    "[2026-03-01 23:45:59 TP0] KV Cache is allocated. #tokens: 1743556, K size: 29.93 GB, V size: 29.93 GB",
    '[2026-03-01 23:46:00] INFO:     127.0.0.1:51234 - "POST /generate HTTP/1.1" 200 OK',
    "sglang-x.service: Main process exited, code=exited, status=1/FAILURE",
]
EPOCH = 1772408758  # 2026-03-01 23:45:58 UTC


def envelope_lines(fmt: str) -> list[str]:
    """The same four messages as journalctl prints them in each output mode (host time = UTC)."""
    out = []
    for i, message in enumerate(MESSAGES):
        ident = "systemd[1]" if message.startswith("sglang-x") else "python3[4242]"
        sec = f"23:4{5 + (i + 58) // 60}:{(58 + i) % 60:02d}"
        if fmt == "short":
            out.append(f"Mar 01 {sec} gpu-node {ident}: {message}")
        elif fmt == "short-precise":
            out.append(f"Mar 01 {sec}.123456 gpu-node {ident}: {message}")
        elif fmt == "short-iso":
            out.append(f"2026-03-01T{sec}+0000 gpu-node {ident}: {message}")
        elif fmt == "short-full":
            out.append(f"Sun 2026-03-01 {sec} UTC gpu-node {ident}: {message}")
        elif fmt == "short-monotonic":
            out.append(f"[ {1234 + i}.123456] gpu-node {ident}: {message}")
        elif fmt == "short-unix":
            out.append(f"{EPOCH + i}.123456 gpu-node {ident}: {message}")
        elif fmt == "cat":
            out.append(message)
        elif fmt == "json":
            out.append(json.dumps({"__REALTIME_TIMESTAMP": str((EPOCH + i) * 1_000_000), "_PID": ident[-5:-1],
                                   "SYSLOG_IDENTIFIER": ident.split("[")[0], "_HOSTNAME": "gpu-node",
                                   "MESSAGE": message}))
    return out


def ingest(tmp_path: Path, paths: list[Path], **kw) -> tuple[dict, duckdb.DuckDBPyConnection]:
    db = tmp_path / "t.duckdb"
    report = api.ingest([str(p) for p in paths], db=db, **kw).as_dict()
    return report, duckdb.connect(str(db), read_only=True)


@pytest.mark.parametrize("fmt, detected", [
    ("short", "journal-short"), ("short-precise", "journal-short"), ("short-iso", "journal-iso"),
    ("short-unix", "journal-unix"), ("short-full", "journal-full"), ("short-monotonic", "journal-monotonic"),
    ("cat", "plain"), ("json", "journal-json"),
])
def test_every_journal_output_mode_gives_the_same_events(tmp_path: Path, fmt: str, detected: str) -> None:
    log = tmp_path / f"journal-{fmt}.txt"
    log.write_text("-- Boot 8c2f0a --\n" * (fmt != "json") + "\n".join(envelope_lines(fmt)) + "\n")
    report, con = ingest(tmp_path, [log])
    assert report["sources"][0]["format"] == detected
    kinds = [r[0] for r in con.execute("SELECT kind FROM lines WHERE kind <> 'journal_marker' ORDER BY line_no")
             .fetchall()]
    assert kinds == ["load_weight_begin", "kv_cache_allocated", "http_request", "systemd_main_exited"]
    assert con.execute("SELECT tokens, k_size_gib FROM kv_cache").fetchall() == [(1743556, 29.93)]
    first = con.execute("SELECT strftime(ts, '%Y-%m-%d %H:%M:%S') FROM lines WHERE kind = 'load_weight_begin'")
    assert first.fetchone()[0] == "2026-03-01 23:45:58"


ONE_ENTRY_A_LINE = {"short-delta": "journal-monotonic", "short-iso-precise": "journal-iso", "with-unit": "journal-full",
                    "json-seq": "journal-json", "json-sse": "journal-json"}
ONE_FIELD_A_LINE = ("json-pretty", "verbose", "export")


@pytest.mark.skipif(not journal_export.available(), reason="needs journalctl and systemd-journal-remote")
@pytest.mark.parametrize("mode", [*ONE_ENTRY_A_LINE, *ONE_FIELD_A_LINE])
def test_journalctls_other_output_modes(tmp_path: Path, mode: str) -> None:
    """What the real `journalctl -o MODE` prints of a journal file. Read as the short modes are where a mode keeps
    an entry on one line (short-delta and json-sse were read as plain text, json-seq's record separator failed
    every record); said to be unread, with the mode to ask for, where it spreads an entry over lines."""
    journal = tmp_path / "sglang.journal"
    journal_export.append_entries(journal, journal_export.entries_from_short("\n".join(
        envelope_lines("short")).encode()))
    log = tmp_path / f"journal-{mode}.txt"
    log.write_bytes(subprocess.run(["journalctl", "--file", str(journal), "-o", mode, "--no-pager"],
                                   capture_output=True, check=True).stdout)
    report, con = ingest(tmp_path, [log])
    if mode in ONE_ENTRY_A_LINE:
        assert report["sources"][0]["format"] == ONE_ENTRY_A_LINE[mode]
        kinds = con.execute("SELECT kind FROM lines WHERE kind IS DISTINCT FROM 'blank' ORDER BY line_no").fetchall()
        assert [k for (k,) in kinds] == ["load_weight_begin", "kv_cache_allocated", "http_request",
                                         "systemd_main_exited"]
        assert con.execute("SELECT tokens FROM kv_cache").fetchall() == [(1743556,)]
    else:
        shape = con.execute("SELECT shape FROM new_shape").fetchone()[0]
        assert shape == (f"lines look like journal entries one field a line, as `journalctl -o {mode}` writes them "
                         "(logmine reads `-o json` or `-o short-iso`, an entry a line): not a format logmine knows")


def test_compressed_inputs(tmp_path: Path) -> None:
    text = ("\n".join(envelope_lines("short")) + "\n").encode()
    (tmp_path / "a.log.gz").write_bytes(gzip.compress(text))
    (tmp_path / "b.log.zst").write_bytes(zstandard.ZstdCompressor().compress(text))
    report, con = ingest(tmp_path, [tmp_path / "a.log.gz", tmp_path / "b.log.zst"])
    assert [s["lines_typed"] for s in report["sources"]] == [4, 4]


def test_reingest_adds_nothing_and_a_grown_file_adds_only_new_lines(tmp_path: Path) -> None:
    log = tmp_path / "journal.txt"
    lines = envelope_lines("short")
    # 200 lines: a file shorter than that when it was first read is read whole again (its format was
    # told from fewer lines than it has now)
    log.write_text("\n".join(lines[:2] * 100) + "\n")
    db = tmp_path / "t.duckdb"
    first = api.ingest([str(log)], db=db).as_dict()
    again = api.ingest([str(log)], db=db).as_dict()
    with log.open("a") as f:
        f.write("\n".join(lines[2:]) + "\n")
    grown = api.ingest([str(log)], db=db).as_dict()
    assert (first["lines_read"], again["lines_read"], grown["lines_read"]) == (200, 0, 2)
    assert grown["sources"][0]["status"] == "grown"
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT list(line_no ORDER BY line_no) FROM lines").fetchone()[0] == list(range(1, 203))


def test_truncated_last_line_is_kept_and_completed_later(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(MESSAGES[0] + "\n" + MESSAGES[1][:40])
    db = tmp_path / "t.duckdb"
    api.ingest([str(log)], db=db)
    with log.open("a") as f:
        f.write(MESSAGES[1][40:] + "\n")
    api.ingest([str(log)], db=db)
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT line_no, kind FROM lines ORDER BY line_no").fetchall() == [
        (1, "load_weight_begin"), (2, "kv_cache_allocated")]


def test_invalid_utf8_and_huge_lines_are_kept(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    huge = "[2026-03-01 23:45:58] Receive: obj=GenerateReqInput(text='" + "x" * 250_000 + "')"
    log.write_bytes(b"[2026-03-01 23:45:58] caf\xe9 \xff broken bytes\n" + huge.encode() + b"\n")
    report, con = ingest(tmp_path, [log])
    assert report["lines_read"] == 2
    rows = con.execute("SELECT bad_utf8, length(message), kind FROM lines ORDER BY line_no").fetchall()
    assert rows[0][0] is True and rows[1][1] == len(huge) and rows[1][2] == "notice"
    assert "\\xe9" in con.execute("SELECT message FROM lines WHERE line_no = 1").fetchone()[0]


def test_inputs_that_took_time_quadratic_in_their_size(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(
        b"[2026-03-01 08:19:00 TP0] Decode batch, #running-req: 1, " + b"a: 1, " * 20000 + b"#token: 5\n"  # repeats
        + b"[2026-03-01 08:19:00 TP0] Decode batch, #running-req: 2" + b"%" * 100000 + b", #token: 6\n"
        + b"Traceback (most recent call last):\n" * 5000  # open at once, then closed together
        + b"[2026-03-01 08:19:01] hello\n" * 205)
    report, con = ingest(tmp_path, [log])
    assert report["lines_read"] == 2 + 5000 + 205
    rows = con.execute("SELECT running_req, tokens, cardinality(extra) FROM decode_batches ORDER BY line_no").fetchall()
    assert rows == [(1, 5, 20000), (2, 6, None)]
    assert con.execute("SELECT count(*) FROM errors").fetchall()[0][0] == 5000


def test_concatenated_zstd_frames_are_read_whole(tmp_path: Path) -> None:
    log = tmp_path / "server.log.zst"
    log.write_bytes(zstandard.ZstdCompressor().compress(LOG_TEXT) * 2)
    report, _ = ingest(tmp_path, [log])
    assert report["lines_read"] == 2000


def test_long_lines_that_would_make_a_backtracking_regex_crawl(tmp_path: Path) -> None:
    # Each of these took minutes (quadratic regex searches) or raised, before; now the file takes a second.
    n = 250_000
    bodies = [
        "a" * n,  # a run of word characters, searched for a traceback origin
        "Loading: " + "7" * n + " 45%|##",  # a progress bar after a long run
        "[2026-03-01 08:19:00 TP0] Decode batch, #" + "7" * n,  # batch statistics without a `: `
        "[2026-03-01 08:19:00 TP0] Decode batch, #running-req: 3, note: " + "x, " * (n // 3),
        "Traceback (most recent call last):",
        '  File "' + "a." * (n // 2),  # inside an open traceback, offered to the line-shape tests
        "w" * n + " hit an exception: Traceback (most recent call last):",
    ]
    log = tmp_path / "server.log"
    log.write_text("".join(f"{body}\n" for body in bodies))
    report, con = ingest(tmp_path, [log])
    assert report["lines_read"] == len(bodies)
    assert con.execute("SELECT count(*), sum(length(message)) FROM lines").fetchone() == (
        len(bodies), sum(len(b) for b in bodies))
    assert con.execute("SELECT running_req, length(extra['note']) FROM decode_batches ORDER BY line_no").fetchall() \
        == [(None, None), (3, 3 * (n // 3) - 2)]
    assert con.execute("SELECT origin FROM errors ORDER BY first_line_no").fetchall() == [(None,), ("w" * n,)]


def test_empty_file_is_fine(tmp_path: Path) -> None:
    (tmp_path / "empty.log").write_text("")
    report, _ = ingest(tmp_path, [tmp_path / "empty.log"])
    assert report["lines_read"] == 0


def run_cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "logmine", *args], input=stdin, capture_output=True,
                          timeout=120)


LOG_TEXT = "".join(f"{MESSAGES[2]} {i}\n" for i in range(1000)).encode()


@pytest.mark.parametrize("make, message", [
    (lambda p: None, "no such file or directory"),
    (lambda p: p.write_bytes(bytes(range(256)) * 64), "binary data"),
    (lambda p: p.write_bytes(gzip.compress(LOG_TEXT)[:800]), "corrupt or truncated"),
    (lambda p: p.write_bytes(b"\x1f\x8b\x00\x00\x00\x00\x00\x00\x00\x00hello\n"), "corrupt or truncated"),
    # a zstd file cut short: the library's stream reader ended quietly there, and the lines were lost
    (lambda p: p.write_bytes(zstandard.ZstdCompressor().compress(LOG_TEXT)[:400]), "corrupt or truncated"),
])
def test_bad_inputs_get_one_line_errors(tmp_path: Path, make, message: str) -> None:
    target = tmp_path / "input.log"
    make(target)
    result = run_cli("ingest", str(target), "--db", str(tmp_path / "t.duckdb"))
    err = result.stderr.decode()
    assert result.returncode == 1 and message in err and str(target) in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_stdin_and_json_summary_contract(tmp_path: Path) -> None:
    text = ("\n".join(envelope_lines("short")) + "\nan unknown line 42\n").encode()
    db = str(tmp_path / "t.duckdb")
    result = run_cli("ingest", "-", "--db", db, "--json", stdin=text)
    assert result.returncode == 0, result.stderr.decode()
    summary = json.loads(result.stdout)
    assert (summary["lines_read"], summary["lines_typed"], summary["lines_untyped"]) == (5, 4, 1)
    assert summary["by_kind"]["kv_cache_allocated"] == 1
    assert summary["sources"][0]["lines_read"] == 5
    again = json.loads(run_cli("ingest", "-", "--db", db, "--json", stdin=text).stdout)
    assert again["lines_read"] == 0
    unparsed = json.loads(run_cli("unparsed", "--db", db, "--format", "json").stdout)
    assert unparsed == [{"template": "an unknown line <n>", "count": 1, "variants": 1,
                         "example": "an unknown line 42", "source": "<stdin>", "line": 5, "template_id": 1}]


def test_variants_of_one_unknown_message_are_one_template_whose_id_stays_across_ingests(tmp_path: Path) -> None:
    """Drain3 groups keys that differ in a word; its state is kept in the database."""
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    first.write_text("[2026-03-01 10:00:00 TP0] Widget gamma.k_scale missing in table\n"
                     "[2026-03-01 10:00:01 TP0] Something else entirely happened here\n")
    second.write_text("[2026-03-01 10:00:02 TP1] Widget gamma.v_scale missing in table\n"
                      "[2026-03-01 10:00:03 TP1] Widget delta.k_scale missing in table\n")
    db = tmp_path / "t.duckdb"
    api.ingest([str(first)], db=db)
    with api.open_db(db) as con:
        before = {r.template: r.template_id for r in api.unparsed(con).itertuples()}
    api.ingest([str(second)], db=db)
    with api.open_db(db) as con:
        after = api.unparsed(con)
    widget = after[after["template"].str.startswith("[…] Widget")].iloc[0]
    assert (widget["template"], widget["count"], widget["variants"]) == ("[…] Widget <*> missing in table", 3, 3)
    assert widget["template_id"] == before["[…] Widget gamma.k_scale missing in table"]
    assert len(after) == 2


def test_one_bad_input_costs_only_itself(tmp_path: Path) -> None:
    good, later, bad = tmp_path / "a.log", tmp_path / "b.log", tmp_path / "c.log"
    good.write_text(MESSAGES[0] + "\n")
    later.write_text(MESSAGES[1] + "\n")
    bad.write_bytes(bytes(range(256)) * 64)
    db = tmp_path / "t.duckdb"
    api.ingest([str(good)], db=db)
    report = api.ingest([str(later), str(bad), str(tmp_path / "missing.log")], db=db).as_dict()
    assert [s["path"] for s in report["sources"]] == [str(later)]
    assert len(report["failed"]) == 2
    assert {line.split(": ", 1)[1].split(",")[0] for line in report["failed"]} == {
        "binary data", "no such file or directory"}
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM lines").fetchone()[0] == 2
        assert con.execute("SELECT count(*) FROM sources").fetchone()[0] == 2


def test_a_replacement_that_fails_keeps_the_rows_it_would_have_replaced(tmp_path: Path) -> None:
    """A stored file rewritten as a truncated gzip: its old rows stay until it can be read again."""
    log = tmp_path / "a.log"
    log.write_bytes(LOG_TEXT)
    db = tmp_path / "t.duckdb"
    api.ingest([str(log)], db=db)
    log.write_bytes(gzip.compress(LOG_TEXT + LOG_TEXT)[:2000])
    report = api.ingest([str(log)], db=db).as_dict()
    assert "corrupt or truncated" in report["failed"][0]
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*), max(line_no) FROM lines").fetchone() == (1000, 1000)
        assert con.execute("SELECT count(*) FROM http_requests").fetchone()[0] == 1000


def test_a_database_with_other_columns_is_refused_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE lines (line_no BIGINT, source_id INTEGER)")
    con.close()
    log = tmp_path / "a.log"
    log.write_text(MESSAGES[0] + "\n")
    result = run_cli("ingest", str(log), "--db", str(db))
    assert result.returncode != 0
    assert result.stderr.decode().strip() == (
        "logmine: database error: table lines was made by another logmine version (its columns differ); "
        "ingest into a new database")


def test_rare_rows_held_back_reach_their_table_in_order() -> None:
    con = duckdb.connect(":memory:")
    ensure_tables(con, {name: table_columns(name) for name in ("lines", "capacity")})
    appender, report = BatchAppender(con), SourceReport("x", 1, "new")
    for first in range(1, 1 + 3 * 600, 600):  # three batches of 600 lines, each with one capacity line
        lines = typed_table(pa.table({"source_id": [1] * 600, "line_no": list(range(first, first + 600)),
                                      "kind": ["capacity"] + [None] * 599}), LINE_COLUMNS)
        # The second batch's token count is text that did not cast: a piece with another schema.
        tokens = pa.array(["oops" if first == 601 else str(first)])
        capacity = typed_table(pa.table({"source_id": [1], "line_no": [first], "max_total_num_tokens": tokens}),
                               table_columns("capacity"))
        appender.add({"lines": lines, "capacity": capacity}, report)
    assert con.execute("SELECT count(*) FROM lines").fetchall()[0][0] == 1200  # once 1000 rows had gathered
    assert con.execute("SELECT count(*) FROM capacity").fetchall()[0][0] == 0
    appender.close()
    assert con.execute("SELECT count(*) FROM lines").fetchall()[0][0] == 1800
    assert con.execute("SELECT line_no, max_total_num_tokens FROM capacity").fetchall() == [
        (1, 1), (601, None), (1201, 1201)]
    assert (report.lines_read, report.lines_typed, report.by_kind) == (1800, 3, {"capacity": 3})


GARBLED = {  # each raised, or failed the whole ingest, before; found by fuzzing
    "rank too large": b"[2026-03-01 22:41:18 TP99999999999999999999] x\n",
    "repeated stats keys":
        b"[2026-03-01 22:41:18 TP0] Decode batch, #running-req: 1, b: 1, b: 2, #token: 3, #token: 4\n",
    "unix time past 9999":
        b"1772404870.2 h python3[5]: [2026-03-01 22:41:18] x\n" + b"9" * 30 + b".5 h python3[5]: x\n",
    "unix time far from the line's own": b"99999999999 h p: [2026-03-01 22:41:18] x\n1000000000 h p: x\n",
    "pid too large":
        b"Mar 01 08:00:00 h python3[99999999999999999999999]: x\nMar 01 08:00:00 h python3[15951644100]: x\n",
    "pid in other digits": "Mar 01 22:41:10 h p[\u0661\u0662]: x\n".encode(),
    "json fields of other types":
        b'{"_HOSTNAME": 5, "SYSLOG_IDENTIFIER": 7, "UNIT": ["a"], "_PID": 1e400, "MESSAGE": "x"}\n',
    "json times that are no times":
        b'{"__REALTIME_TIMESTAMP": "abc", "MESSAGE": "x"}\n'
        b'{"__REALTIME_TIMESTAMP": "99999999999999999999999", "MESSAGE": "[2026-03-01 22:41:18] x"}\n'
        b'{"__REALTIME_TIMESTAMP": "1.5", "MESSAGE": "[2026-13-01 22:41:18] x"}\n',
    "json lone surrogate": b'{"MESSAGE": "\\ud800"}\n',
    "json escapes that decode to other scripts":
        b'{"MESSAGE": "[2026-03-01 22:41:18] a' + b"\\u00e9" * 10 + b'"}\n',
    "a character across journal-short's fixed stamp columns": "Mar 01 22:41:10 h p[1]: x\nabc\u00e9 x\n".encode(),
    "server_args sizes that are no numbers":
        b"[2026-03-01 22:41:18] server_args=ServerArgs(model_path='m', tp_size='', pp_size=Infinity)\n",
}


@pytest.mark.parametrize("name", GARBLED)
def test_garbled_lines_are_stored_not_raised(tmp_path: Path, name: str) -> None:
    log = tmp_path / "garbled.log"
    log.write_bytes(GARBLED[name])
    report, con = ingest(tmp_path, [log])
    n = GARBLED[name].count(b"\n")
    assert report["lines_read"] == n
    assert con.execute("SELECT count(*) FROM lines").fetchall()[0][0] == n
    if name == "repeated stats keys":
        assert con.execute("SELECT running_req, tokens, extra FROM decode_batches").fetchall() == [
            (1, 3, {"b": "1", "b (2)": "2", "#token": "4"})]
    if name.startswith("pid") or name.startswith("rank"):
        assert con.execute("SELECT pid, tp FROM lines").fetchall() == [(None, None)] * n
    assert len(api.runs(con)) >= 1  # the named queries read what was stored


def test_a_folder_gives_its_rotated_and_unnamed_logs_and_says_what_it_left(tmp_path: Path) -> None:
    """A rotated copy (`.log.1`, `.log-DATE.gz`) is a log by its name, a file without a suffix by its first
    lines; whatever else the folder holds is counted in one line, not silently left."""
    demo = (Path(__file__).resolve().parents[1] / "examples" / "demo" / "journal.txt").read_text()
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "sglang.log.1").write_text(demo)
    with gzip.open(folder / "sglang.log-20261201.gz", "wt") as f:
        f.write(demo.replace("Mar 12", "Mar 13"))
    (folder / "server").write_text("[2026-03-14 10:00:00 TP0] Load weight begin. avail mem=78.64 GB\n")
    (folder / "notes").write_text("restarted twice, see the journal\n")
    (folder / "run.sh").write_text("python -m sglang.launch_server --model-path m\n")
    report = api.ingest([str(folder)], db=tmp_path / "t.duckdb")
    assert sorted(Path(s.path).name for s in report.logs.sources) == ["server", "sglang.log-20261201.gz",
                                                                      "sglang.log.1"]
    assert report.logs.failed == []
    assert report.logs.left == [f"{folder}: 2 other files not read, neither logs by name nor by their lines "
                                "(such as notes; name a file to read it as a log)"]


def test_windows_line_endings_give_the_tables_of_unix_ones(tmp_path: Path) -> None:
    """Every message ended with a visible `\\r`, and `-- Boot ... --` was a progress bar."""
    from .test_fleet import table_fingerprints

    demo = (Path(__file__).resolve().parents[1] / "examples" / "demo" / "journal.txt").read_bytes()
    for name, text in (("unix", demo), ("windows", demo.replace(b"\n", b"\r\n"))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "journal.txt").write_bytes(text)
        api.ingest([str(tmp_path / name / "journal.txt")], db=tmp_path / f"{name}.duckdb")
    unix, windows = (table_fingerprints(tmp_path / f"{name}.duckdb") for name in ("unix", "windows"))
    differ = [t for t in unix if unix[t] != windows[t]]
    assert differ == ["sources"]  # their paths, sizes and hashes
