"""Quick checks of the synthetic journal generator and the bundled demo files."""

from __future__ import annotations

import io
import json
import re

import pytest

from logmine.scripts import load_script

from .conftest import REPO

DEMO = REPO / "examples" / "demo"


synth = load_script(REPO / "bench" / "synth_journal.py")

SHORT_LINE = re.compile(r"^[A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d \S+ (systemd\[1\]|python3?\[\d+\]): ")


def _journal(lines: int, seed: int) -> str:
    buf = io.StringIO()
    assert synth.write_journal(buf, lines, seed) == lines
    return buf.getvalue()


@pytest.mark.parametrize("lines", [1, 37, 5000])
def test_writes_exactly_n_lines(lines: int) -> None:
    text = _journal(lines, seed=3)
    assert text.endswith("\n")
    assert text.count("\n") == lines


def test_deterministic_per_seed() -> None:
    assert _journal(3000, seed=7) == _journal(3000, seed=7)
    assert _journal(3000, seed=7) != _journal(3000, seed=8)


def test_lines_have_journal_shape_and_v059_events() -> None:
    text = _journal(20000, seed=1)
    lines = text.splitlines()
    assert lines[0].startswith("-- Boot ")
    assert all(SHORT_LINE.match(line) for line in lines[1:])
    for needle in ("server_args=ServerArgs(", "Load weight end. elapsed=", "KV Cache is allocated. #tokens: ",
                   "max_total_num_tokens=", "The server is fired up and ready to roll!",
                   "Prefill batch, #new-seq: ", "Decode batch, #running-req: ",
                   '"POST /v1/chat/completions HTTP/1.1" 200 OK', '"GET /health HTTP/1.1" 200 OK'):
        assert needle in text, needle
    assert re.search(r"input throughput \(token/s\): [\d.]+, cuda graph: False$", text, re.M)
    dump = next(line for line in lines if "server_args=" in line)
    assert len(dump) > 9000  # v0.5.x dumps are 10-14 KB


def test_memory_plan_is_internally_consistent() -> None:
    for launch in synth.BENCH_PROFILES:
        plan = synth.plan_memory(launch)
        assert round(plan.before_load - plan.weights_gib, 2) == plan.after_load
        rest = plan.after_load - plan.before_load * (1 - launch.mem_fraction_static)
        assert abs(plan.k_gib + plan.v_gib - rest) < 0.02


def test_demo_journal_matches_scenario() -> None:
    text = (DEMO / "journal.txt").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) == 1205
    assert sum("server_args=ServerArgs(" in line for line in lines) == 3
    assert sum("The server is fired up and ready to roll!" in line for line in lines) == 2
    assert text.count("Requesting 120.34 GB but only have 88.10 GB free.") == 2  # both ranks
    assert text.count("Allocating 80.23 GB host memory for hierarchical KV cache.") == 2
    assert "sglang-qwen.service: Main process exited, code=exited, status=1/FAILURE" in text
    assert "sglang-qwen.service: Scheduled restart job, restart counter is at 1." in text
    assert {m.group(1) for m in re.finditer(r" python\[(\d+)\]: ", text)} == {"18342", "24817", "25133"}


def test_demo_session_has_two_unit_writes() -> None:
    export = json.loads((DEMO / "session.opencode.json").read_text(encoding="utf-8"))
    assert export["info"]["id"].startswith("ses_")
    commands = [part["state"]["input"]["command"]
                for msg in export["messages"] for part in msg["parts"]
                if part["type"] == "tool" and part["tool"] == "bash"]
    writes = [c for c in commands if "tee /etc/systemd/system/sglang-qwen.service" in c and "[Service]" in c]
    assert len(writes) == 2
    assert "--enable-hierarchical-cache --hicache-ratio 3.0" in writes[0]
    assert "--hicache-ratio 2.0" in writes[1]
    assert sum(msg["info"]["role"] == "user" for msg in export["messages"]) == 2
    journal = set((DEMO / "journal.txt").read_text(encoding="utf-8").splitlines())
    embedded = [line for msg in export["messages"] for part in msg["parts"] if part["type"] == "tool"
                for line in part["state"]["output"].splitlines() if line.startswith("Mar 12 ")]
    assert embedded and all(line in journal for line in embedded)


def test_demo_is_reproducible() -> None:
    demo = load_script(DEMO / "make_demo.py")
    j = demo.build_journal()
    assert demo.journal_text(j) == (DEMO / "journal.txt").read_text(encoding="utf-8")
    session, _ = demo.build_session(j)
    on_disk = json.loads((DEMO / "session.opencode.json").read_text(encoding="utf-8"))
    assert session == on_disk
