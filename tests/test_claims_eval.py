"""The claim checker on a session written apart from its rules: bench/data/claims_eval/qwen-hicache-loop.

A 4 x H100 Qwen3-235B server driven into a HiCache host-memory crash loop (every rank: `Requesting 277.33
GB but only have 251.30 GB free`), then started with a 48.00 GB host pool per rank; the agent's session
speaks of the host's RAM (never logged), the error's figures, totals over the ranks and earlier runs.
"""

from __future__ import annotations

import json

import pytest

from logmine import api

from .conftest import REPO

SCENARIO = REPO / "bench" / "data" / "claims_eval" / "qwen-hicache-loop"


@pytest.fixture
def claims(ingested) -> list[dict]:
    con = ingested(SCENARIO / "journal.txt", SCENARIO / "session.jsonl")
    return json.loads(api.render(api.query(con, "claims"), "json"))


def claim(claims: list[dict], text: str, value: float) -> dict:
    found = [c for c in claims if c["text"].startswith(text) and c["value"] == value]
    assert len(found) == 1, (text, [(c["text"], c["value"]) for c in claims])
    return found[0]


def test_a_quantity_never_measured_beside_a_cue_word_is_unverifiable(claims) -> None:
    # "host pool" and "host memory" stand near it, but no line states the host's RAM
    ram = claim(claims, "503 GiB machine", 503)
    assert ram["verdict"] == "unverifiable" and ram["measured"] is None
    beside_the_error = claim(claims, "503 GiB of RAM", 503)  # in the message quoting the host-memory error
    assert beside_the_error["verdict"] == "unverifiable"


def test_free_host_memory_is_read_from_the_error_line(claims) -> None:
    free = claim(claims, "251.30 GB free`", 251.30)
    assert (free["verdict"], free["quantity"], free["measured"]) == ("consistent", "host_free", 251.3)
    # the error of run 3, the run current when the message was written
    assert free["measured_source"].endswith("journal.txt:217") and free["derivation"] == "observed"
    requested = claim(claims, "277.33 GB but only have", 277.33)
    assert (requested["verdict"], requested["quantity"]) == ("consistent", "host_cache_requested")


def test_a_total_is_the_per_rank_figure_times_the_ranks(claims) -> None:
    total = claim(claims, "192 GB across the 4 ranks", 192)
    assert (total["verdict"], total["quantity"], total["scope"], total["measured"]) == (
        "consistent", "host_cache", "total", 192.0)
    assert total["derivation"] == "derived: summed over 4 ranks: 48 x 4 = 192"
    requested = claim(claims, "4 x 277.33 = 1109.3 GB in total", 1109.3)
    assert (requested["verdict"], requested["quantity"], requested["scope"]) == (
        "consistent", "host_cache_requested", "total")


def test_a_time_of_an_earlier_run_is_that_runs(claims) -> None:
    # said after run 5 came up; the crashed runs 2-4 loaded for 649-651 s before HiCache's check failed
    earlier = claim(claims, "~11 minutes into loading", 11)
    assert earlier["verdict"] == "consistent" and earlier["quantity"] == "weights_time"
    crash = claim(claims, "12 minutes after each start", 12)  # said while run 3 was starting
    assert (crash["verdict"], crash["quantity"]) == ("consistent", "start_to_failure")
    assert crash["derivation"] == "derived: failed - started: 10:08:33 - 09:56:37 = 716 s"  # run 3


def test_a_wrong_figure_about_one_measured_quantity_is_inconsistent(claims) -> None:
    capture = claim(claims, "14 s", 14)
    assert (capture["verdict"], capture["quantity"]) == ("inconsistent", "cuda_graph_time")
    load = claim(claims, "~9 minutes per attempt", 9)
    assert load["verdict"] == "inconsistent" and load["measured"] > 10.5  # minutes, as written


def test_a_draft_text_is_checked_against_the_runs_without_being_stored(ingested) -> None:
    con = ingested(SCENARIO / "journal.txt", SCENARIO / "session.jsonl")
    draft = ("The crashed starts only had 251.30 GB of host memory free. The host pool is now 45 GB per rank. "
             "The machine has 503 GiB of RAM. CUDA graph capture took ~41 s.")
    rows = {r["text"].split()[0]: r for r in api.check_figures(con, draft)}
    assert (rows["251.30"]["verdict"], rows["251.30"]["quantity"]) == ("consistent", "host_free")
    assert "earlier run" in rows["251.30"]["derivation"]  # run 5, the latest, never failed
    assert (rows["45"]["verdict"], rows["45"]["measured"], rows["45"]["run"]) == ("inconsistent", 48.0, 5)
    assert rows["503"]["verdict"] == "unverifiable"
    assert rows["~41"]["verdict"] == "consistent" and rows["~41"]["derivation"] == "observed"
    assert api.check_figures(con, "The first run took ~11 minutes to load.", run=1)[0]["verdict"] == "consistent"
    assert con.execute("SELECT count(*) FROM claims WHERE text LIKE '45 GB%'").fetchone()[0] == 0


def test_a_figure_its_words_say_no_log_measures_is_unverifiable_said_so(ingested) -> None:
    con = ingested(SCENARIO / "journal.txt", SCENARIO / "session.jsonl")
    rows = api.check_figures(con, "HiCache pins 48.00 GB of host memory per rank on this 503 GiB machine, "
                                  "and the host pool is 503 GiB of RAM behind the GPUs.")
    pool, machine, ram = rows
    assert (pool["verdict"], pool["quantity"]) == ("consistent", "host_cache")
    assert machine["verdict"] == ram["verdict"] == "unverifiable"
    assert machine["cause"] == ram["cause"] == "the host's RAM: no log measures it"


def test_every_phase_of_a_start_can_be_spoken_of(ingested) -> None:
    con = ingested(SCENARIO / "journal.txt", SCENARIO / "session.jsonl")
    init, = api.check_figures(con, "Init torch distributed took 9 s on rank 0.")
    assert (init["verdict"], init["quantity"], init["measured"]) == ("inconsistent", "init_time", 0.92)
    assert init["derivation"] == "derived: the init phase of load-time"
    warmup, = api.check_figures(con, "The warmup took 2 s after the server started.")
    assert (warmup["verdict"], warmup["quantity"]) == ("consistent", "warmup_time")
