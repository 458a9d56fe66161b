"""Each built-in alert rule fired on a journal written for it, once per condition, on every sink."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from logmine.live import alerts

from .test_follow import scalar, start_follow, stop, wait_for

HOST = "gpu-box"
UNIT = "sglang.service"


class Journal:
    """A short-format journal written line by line, the clock moved by hand."""

    def __init__(self, start: str) -> None:
        self.now = datetime.fromisoformat(start)
        self.lines: list[str] = []

    def at(self, seconds: float) -> Journal:
        self.now += timedelta(seconds=seconds)
        return self

    def systemd(self, message: str) -> None:
        self.lines.append(f"{self.now:%b %d %H:%M:%S} {HOST} systemd[1]: {message}")

    def server(self, pid: int, message: str, rank: str | None = "TP0") -> None:
        prefix = f"[{self.now:%Y-%m-%d %H:%M:%S}{' ' + rank if rank else ''}]"
        self.lines.append(f"{self.now:%b %d %H:%M:%S} {HOST} python[{pid}]: {prefix} {message}")

    def raw(self, pid: int, message: str) -> None:
        self.lines.append(f"{self.now:%b %d %H:%M:%S} {HOST} python[{pid}]: {message}")

    def start(self, pid: int, seed: int, weights_s: float) -> None:
        self.systemd(f"Starting {UNIT} - SGLang...")
        self.systemd(f"Started {UNIT} - SGLang.")
        self.at(5).server(pid, "server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=1, "
                               f"mem_fraction_static=0.87, random_seed={seed}, enable_hierarchical_cache=True, "
                               "hicache_ratio=2.0)", rank=None)
        self.at(3).server(pid, "Init torch distributed begin.")
        self.at(1).server(pid, "Init torch distributed ends. elapsed=1.00 s, mem usage=0.53 GB")
        self.at(1).server(pid, "Load weight begin. avail mem=78.62 GB")
        self.at(weights_s).server(pid, f"Load weight end. elapsed={weights_s:.2f} s, type=Qwen3ForCausalLM, "
                                       "dtype=torch.bfloat16, avail mem=62.00 GB, mem usage=16.62 GB.")

    def fail(self, how: str = "code=exited, status=1/FAILURE") -> None:
        self.at(1).systemd(f"{UNIT}: Main process exited, {how}")
        self.systemd(f"{UNIT}: Failed with result 'exit-code'.")

    def traceback(self, pid: int, last: str) -> None:
        self.server(pid, "Scheduler hit an exception: Traceback (most recent call last):")
        self.raw(pid, '  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 3043, '
                      "in run_scheduler_process")
        self.raw(pid, "    scheduler = Scheduler(")
        self.raw(pid, last)
        self.raw(pid, "")


def first_part() -> Journal:
    """Run 1 serves: KV token usage at 0.97 for 75 s, a retraction storm, a message no pattern knows, then a
    watchdog timeout and a child's SIGQUIT. Run 2, of the same configuration, loads its weights three
    times as slowly and runs out of GPU memory before it is ready."""
    j = Journal("2026-03-12 10:00:00")
    j.start(1001, seed=1, weights_s=30)
    j.at(1).server(1001, "KV Cache is allocated. #tokens: 400000, K size: 24.41 GB, V size: 24.41 GB")
    j.at(1).server(1001, "Memory pool end. avail mem=10.00 GB")
    j.at(1).server(1001, "INFO:     Started server process [1001]", rank=None)
    j.at(1).server(1001, "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)", rank=None)
    j.at(1).server(1001, "The server is fired up and ready to roll!", rank=None)
    for _ in range(16):
        j.at(5).server(1001, "Decode batch, #running-req: 40, #token: 388000, token usage: 0.97, cuda graph: True, "
                             "gen throughput (token/s): 900.00, #queue-req: 12")
    j.at(5).server(1001, "Decode batch, #running-req: 20, #token: 200000, token usage: 0.50, cuda graph: True, "
                         "gen throughput (token/s): 700.00, #queue-req: 0")
    for _ in range(6):
        j.at(4).server(1001, "KV cache pool is full. Retract requests. #retracted_reqs: 2, "
                             "#new_token_ratio: 0.4123 -> 0.7000")
    j.at(5).server(1001, "Frobnicator 7 lost its widget after 12 tries", rank=None)
    j.at(5).server(1001, "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)")
    j.at(1).server(1001, "Received sigquit from a child process. It usually means the child failed.", rank=None)
    j.fail("code=killed, status=9/KILL")
    j.at(30).start(1002, seed=2, weights_s=95)
    j.at(1).traceback(1002, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
                            "total capacity of 79.19 GiB of which 1.02 GiB is free.")
    j.fail()
    return j


def second_part(j: Journal) -> Journal:
    """Runs 3, 4 and 5 come within minutes of the first two (a restart loop); run 3's HiCache host pool does not
    fit the host's free memory; run 5 loads and cannot bind its port, which another process holds."""
    j.lines = []
    j.at(20).start(1003, seed=3, weights_s=30)
    j.at(1).server(1003, "KV Cache is allocated. #tokens: 400000, K size: 24.41 GB, V size: 24.41 GB")
    j.at(1).traceback(1003, "ValueError: Not enough host memory available. Requesting 195.31 GB but only have "
                            "120.50 GB free. Please reduce the size of the hierarchical cache.")
    j.fail()
    j.at(20).start(1004, seed=4, weights_s=30)
    j.fail()
    j.at(20).start(1005, seed=5, weights_s=30)
    j.at(1).server(1005, "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): "
                         "address already in use", rank=None)
    j.fail()
    return j


EXPECTED = {"token-usage-high": 1, "retraction-storm": 1, "new-untyped-template": 1, "watchdog": 1,
            "child-sigquit": 1, "slow-startup-phase": 1, "oom-while-starting": 1, "restart-loop": 1,
            "hicache-host-memory": 1, "start-failed": 1}


def test_every_builtin_rule_fires_once_per_condition_on_every_sink(tmp_path: Path) -> None:
    journal = tmp_path / "journal.txt"
    first = first_part()
    journal.write_text("\n".join(first.lines) + "\n")
    db = tmp_path / "live.duckdb"
    jsonl, piped = tmp_path / "alerts.jsonl", tmp_path / "piped.jsonl"
    process = start_follow(str(journal), "--db", str(db), "--alerts-jsonl", str(jsonl),
                           "--on-alert", f"{sys.executable} -c 'import sys; open(sys.argv[1], \"a\").write("
                                         f"sys.stdin.read() + chr(10))' {piped}", cwd=tmp_path)
    try:
        count = len(first.lines)
        wait_for(lambda: scalar(db, "SELECT count(*) FROM lines") == count, "the first part", process)
        with journal.open("a") as out:
            out.write("\n".join(second_part(first).lines) + "\n")
        count += len(first.lines)
        wait_for(lambda: scalar(db, "SELECT count(*) FROM alerts WHERE delivered") == sum(EXPECTED.values())
                 and scalar(db, "SELECT count(*) FROM lines") == count, "every alert", process, seconds=40)
        out = stop(process)
    finally:
        process.kill()
    con = duckdb.connect(str(db), read_only=True)
    table = Counter(r[0] for r in con.execute("SELECT rule FROM alerts").fetchall())
    file_alerts = [json.loads(line) for line in jsonl.read_text().splitlines()]
    piped_alerts = [json.loads(line) for line in piped.read_text().splitlines() if line.strip()]
    terminal = [line for line in out.splitlines() if line.startswith("ALERT ")]
    assert table == EXPECTED
    assert Counter(a["rule"] for a in file_alerts) == EXPECTED
    assert Counter(a["rule"] for a in piped_alerts) == EXPECTED
    assert len(terminal) == sum(EXPECTED.values())
    by_rule = {a["rule"]: a for a in file_alerts}
    # Each alert names its evidence line, and the line is the one that shows the condition.
    assert "watchdog timeout" in by_rule["watchdog"]["evidence_text"]
    assert "out of memory" in by_rule["oom-while-starting"]["message"]
    assert by_rule["hicache-host-memory"]["data"]["requested_gb"] == 195.31
    assert by_rule["hicache-host-memory"]["data"]["free_gb"] == 120.5
    assert by_rule["slow-startup-phase"]["data"]["phase"] == "weights"
    assert by_rule["restart-loop"]["data"]["run"] == 3
    assert by_rule["start-failed"]["message"] == (
        f"run 5 of {journal} failed while starting (port conflict): ERROR:    [Errno 98] error while attempting to "
        "bind on address ('0.0.0.0', 30000): address already in use")
    # The SIGQUIT says only that a child died: the alert names what killed it.
    assert by_rule["child-sigquit"]["message"] == (
        f"run 1 of {journal}: a child process failed (SIGQUIT to the server), after timeout or hang failure: "
        "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)")
    assert by_rule["token-usage-high"]["data"]["seconds"] >= 60
    assert "Frobnicator" in by_rule["new-untyped-template"]["evidence_text"]
    for alert in file_alerts:
        assert alert["evidence"].rsplit(":", 1)[0] == str(journal), alert
        line_no = int(alert["evidence"].rsplit(":", 1)[1])
        assert con.execute("SELECT message FROM lines WHERE line_no = ?", [line_no]).fetchone()[0] \
            == alert["evidence_text"]
    assert piped_alerts == file_alerts


def test_a_start_not_yet_outlived_its_library_line_raises_no_start_failed(tmp_path: Path) -> None:
    """A follow's commit can end on NCCL's `... failed for mlx5_3, skipping` before the server is ready: the run
    reads as failed until the rest comes, and an alert raised then is never taken back."""
    from logmine import api

    log = tmp_path / "server.log"
    log.write_text("[2026-03-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=2)\n"
                   "hgx-150:216:1207 [0] NCCL WARN NET/IB : ibv_open_device failed for mlx5_3, skipping\n")
    api.ingest([str(log)], db=tmp_path / "t.duckdb", jobs=1)
    con = duckdb.connect(str(tmp_path / "t.duckdb"))
    assert con.execute("SELECT end_reason FROM runs").fetchall() == [("failed",)]
    start_failed = [rule for rule in alerts.builtin_rules() if rule.name == "start-failed"]
    assert alerts.judge(con, start_failed) == []


def test_a_rules_file_adds_replaces_and_turns_off_rules(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text('''
[[rule]]
name = "restart-loop"
enabled = false
severity = "error"
message = "off"
sql = "SELECT 1"

[[rule]]
name = "many-requests"
severity = "info"
message = "{n} requests in {source}"
sql = """SELECT 'all' AS key, min(source_id) AS source_id, min(line_no) AS line_no, count(*) AS n
         FROM http_requests HAVING count(*) > 0"""
''')
    names = [r.name for r in alerts.load_rules(rules)]
    assert "restart-loop" not in names and "many-requests" in names and "watchdog" in names
    demo = Path(__file__).resolve().parents[1] / "examples" / "demo" / "journal.txt"
    from logmine import api

    db = tmp_path / "demo.duckdb"
    api.ingest([str(demo)], db=db, jobs=1)
    con = duckdb.connect(str(db))
    raised = alerts.judge(con, alerts.load_rules(rules, builtins=False))
    assert [(a.rule, a.message) for a in raised] == [("many-requests", f"126 requests in {demo}")]
    assert alerts.judge(con, alerts.load_rules(rules, builtins=False)) == []  # raised once


@pytest.mark.parametrize("text, error", [
    ("[[rule]]\nname = 'x'\nmessage = 'm'\n", "needs one of `sql` or `check`"),
    ("[[rule]]\nname = 'x'\nmessage = 'm'\nsql = 'SELECT 1'\nfor = 'soon'\n", "not a duration"),
    ("[[rule]]\nname = 'x'\nmessage = 'm'\nsql = 'SELECT 1'\nseverity = 'meh'\n", "severity 'meh'"),
    ("[[rule\n", "not TOML"),
])
def test_a_bad_rules_file_is_one_line_naming_it(tmp_path: Path, text: str, error: str) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(text)
    done = subprocess.run([sys.executable, "-m", "logmine", "follow", str(tmp_path / "x.log"), "--db",
                           str(tmp_path / "x.duckdb"), "--rules", str(rules)], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.startswith(f"logmine: {rules}") and error in done.stderr and done.stderr.count("\n") == 1
