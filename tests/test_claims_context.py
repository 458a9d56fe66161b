"""Claims read in their context: a figure of an earlier run, a plan, a bound, a figure in use rather than
capacity, a rate, the user's words, a code block, a duration in two units. Each was judged against the
current run's figure and called an error. A real error must still be one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logmine import api

from .conftest import REPO

# The demo journal: run 1 ready after 81 s, run 3 (current from 10:37:02) after 115 s, host pool 80.23 GB.
MESSAGES = [
    "Before the restart the server took 81 s to load.",
    "With --hicache-ratio 4 the host pool would be ~160 GB per GPU.",
    "It needed under 2 minutes to come up.",
    "About 150,000 tokens were resident in the KV pool at peak.",
    "Decode runs at 1,235 tokens per second.",
    "You said it takes 20 minutes to load; this start took 115 s to load.",
    "Restart it like this:\n```\n# 30 min to come up at most\nsystemctl restart sglang-qwen\n```",
    "It came up in 1 min 55 s.",
    "Raising the ratio grew the host pool by 40 GB.",
    "The load took 3 minutes.",
    "The first start took 81 seconds to become ready.",
    "The failed start asked for 120 GB of host memory with only 88 GB free.",
    "Server is up: it took 1m 55s to load.",
    "KV cache: 0.3M tokens per GPU.",
    "The HiCache host pool is 80.2GB/rank.",
    "Total KV across both GPUs: ~74.7 GiB.",
    "It came back after ~2 min.",
    "| figure | this start |\n|---|---|\n| load time | 115 s |\n| KV pool | 306,048 tokens per rank |",
    "| start | ready after | KV pool per rank |\n|:--|--:|--:|\n| first | 81 s | 37.36 GiB |\n| this one | 115 s | "
    "37.4 GiB |",
    "This start took 110-120 s to load, with 300-310k tokens per rank in the KV pool.",
    "The load took 200-220 s.",
]


def judged(folder: Path, day: str) -> dict[str, list[tuple]]:
    """The claims of MESSAGES, said on `day` at 10:45, judged against the demo journal: by first line."""
    lines = [{"type": "user", "uuid": "u0", "sessionId": "s1", "timestamp": f"{day}T10:44:00Z", "cwd": "/w",
              "message": {"role": "user", "content": "how did the restarts go?"}}]
    for i, text in enumerate(MESSAGES):
        lines.append({"type": "assistant", "uuid": f"a{i}", "sessionId": "s1", "cwd": "/w",
                      "timestamp": f"{day}T10:45:{i:02d}Z",
                      "message": {"id": f"msg_{i}", "role": "assistant", "model": "claude-x",
                                  "content": [{"type": "text", "text": text}],
                                  "usage": {"input_tokens": 1, "output_tokens": 1}}})
    session = folder / "s1.jsonl"
    session.write_text("".join(json.dumps(line) + "\n" for line in lines))
    db = folder / "t.duckdb"
    api.ingest([str(REPO / "examples" / "demo" / "journal.txt"), str(session)], db=db, tz="+00:00")
    found: dict[str, list[tuple]] = {}
    with api.open_db(db) as con:
        for index, text, verdict, run in con.execute(
                "SELECT message_index, text, verdict, run FROM claims ORDER BY message_index, span_start").fetchall():
            found.setdefault(MESSAGES[index - 1].split("\n")[0], []).append((text, verdict, run))
    return found


@pytest.fixture(scope="module")
def claims_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("claims")


@pytest.fixture(scope="module")
def claims(claims_folder: Path) -> dict[str, list[tuple]]:
    return judged(claims_folder, "2026-03-12")


def test_a_session_days_from_every_run_speaks_of_none(tmp_path: Path) -> None:
    """A journal and a transcript of different days ingested together: no verdict, rather than a wrong one."""
    later = judged(tmp_path, "2026-03-25")
    assert {v for found in later.values() for _, v, _ in found} == {"unverifiable"}


def test_a_figure_of_an_earlier_run_is_that_runs(claims: dict) -> None:
    assert claims["Before the restart the server took 81 s to load."] == [("81 s to load", "consistent", 1)]


def test_a_plan_cannot_contradict_the_run(claims: dict) -> None:
    assert [v for _, v, _ in claims["With --hicache-ratio 4 the host pool would be ~160 GB per GPU."]] == \
        ["unverifiable"]


def test_a_bound_and_a_duration_in_two_units(claims: dict) -> None:
    assert claims["It needed under 2 minutes to come up."] == [("2 minutes to come up", "consistent", 3)]
    assert claims["It came up in 1 min 55 s."] == [("1 min 55 s", "consistent", 3)]


def test_numbers_that_state_no_figure_of_the_run_are_no_errors(claims: dict) -> None:
    assert [v for _, v, _ in claims["About 150,000 tokens were resident in the KV pool at peak."]] == ["unverifiable"]
    for said in ("Decode runs at 1,235 tokens per second.", "Raising the ratio grew the host pool by 40 GB.",
                 "Restart it like this:"):
        assert said not in claims
    assert claims["You said it takes 20 minutes to load; this start took 115 s to load."] == [
        ("115 s to load", "consistent", 3)]


def test_a_wrong_figure_is_still_an_error(claims: dict) -> None:
    assert claims["The load took 3 minutes."] == [("3 minutes", "inconsistent", 3)]


def test_words_of_a_start_and_of_the_failed_one(claims: dict) -> None:
    """"to become ready" names the load time; "asked for" and "failed" look back to the run that failed on the host
    pool: both were unverifiable."""
    assert claims["The first start took 81 seconds to become ready."] == [
        ("81 seconds to become ready", "consistent", 1)]
    failed = claims["The failed start asked for 120 GB of host memory with only 88 GB free."]
    assert [(v, run) for _, v, run in failed] == [("consistent", 2), ("consistent", 2)]


def test_figures_as_agents_abbreviate_them(claims: dict) -> None:
    """"1m 55s" was read as 55 s and called an error; "0.3M", "80.2GB/rank" and a unit before a full stop ("74.7
    GiB.") were not read at all; a label before a colon ("Total KV across both GPUs: ~74.7 GiB") names the figure
    after it, which was matched to the host pool by its value alone."""
    assert claims["Server is up: it took 1m 55s to load."] == [("1m 55s to load", "consistent", 3)]
    assert claims["KV cache: 0.3M tokens per GPU."] == [("0.3M tokens per GPU", "consistent", 3)]
    assert claims["The HiCache host pool is 80.2GB/rank."] == [("80.2GB", "consistent", 3)]
    assert claims["It came back after ~2 min."] == [("~2 min", "consistent", 3)]


def test_a_label_before_a_colon_names_the_figure(claims: dict, claims_folder: Path) -> None:
    with api.open_db(claims_folder / "t.duckdb") as con:
        assert con.execute("SELECT quantity, scope, verdict, measured_figure FROM claims WHERE text = '~74.7 GiB'"
                           ).fetchall() == [("kv_size", "total", "consistent", "74.72 GiB")]


def test_a_markdown_tables_cells(claims: dict) -> None:
    """A claim ended at the next quantity or its clause's end, so a cell's ran on over the bars ('115 s |')."""
    assert claims["| figure | this start |"] == [("115 s", "consistent", 3),
                                                  ("306,048 tokens per rank", "consistent", 3)]


def test_a_figure_in_a_table_is_what_its_column_says(claims: dict) -> None:
    """A row of figures under a header ("| first | 81 s | 37.36 GiB |"): no word of the row names them, so they
    were unverifiable (or matched to any figure of the same value)."""
    assert claims["| start | ready after | KV pool per rank |"] == [
        ("81 s", "consistent", 1), ("37.36 GiB", "consistent", 3), ("115 s", "consistent", 3),
        ("37.4 GiB", "consistent", 3)]


def test_a_range_agrees_when_the_figure_is_between_its_ends(claims: dict) -> None:
    """A range was never read: '110-120 s' said nothing, right or wrong."""
    assert claims["This start took 110-120 s to load, with 300-310k tokens per rank in the KV pool."] == [
        ("110-120 s to load", "consistent", 3), ("300-310k tokens per rank in the KV pool", "consistent", 3)]
    assert claims["The load took 200-220 s."] == [("200-220 s", "inconsistent", 3)]
