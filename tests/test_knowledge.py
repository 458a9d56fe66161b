"""Knowledge extraction: facts, decisions and the agent's claims checked against the logs."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from logmine import api
from logmine.cli import main

from .conftest import REPO, SAMPLE, shared_path

VERDICT = {True: "consistent", False: "inconsistent", None: "unverifiable"}
CONTRACT = {"session", "message", "text", "value", "unit", "measured", "measured_source", "verdict"}


def test_sample_claims_get_the_truth_verdicts(ingested) -> None:
    truth = json.loads(shared_path("samples", "kimi-k25", "truth.json").read_text())
    con = ingested(SAMPLE / "journal.txt", SAMPLE / "session.opencode.json")
    claims = json.loads(api.render(api.query(con, "claims"), "json"))
    assert claims and set(claims[0]) >= CONTRACT
    for expected in truth["claims"]:
        message_id = truth["session"]["message_ids"][expected["message"]]
        found = [c for c in claims if c["message"] == message_id and abs(c["value"] - expected["value_gb"]) < 1e-6
                 and c["unit"] == "GB"]
        assert found, expected["text"]
        claim = found[0]
        assert claim["verdict"] == VERDICT[expected["consistent"]], (expected["text"], claim)
        if expected["measured_gb"] is None:
            assert claim["measured"] is None
        else:
            assert abs(claim["measured"] - expected["measured_gb"]) < 0.01, (expected["text"], claim)
            assert claim["measured_source"].startswith(str(SAMPLE / "journal.txt") + ":")
    by_text = {c["text"]: c for c in claims}
    mixed = by_text["~334 GB total"]
    assert mixed["verdict"] == "inconsistent" and "GiB" in mixed["cause"] and mixed["measured_source"].endswith(":1505")
    assert claims[0]["verdict"] == "inconsistent"  # the query puts them first


def test_arithmetic_inside_a_claim_is_checked() -> None:
    from logmine.knowledge import claims, nlp, verdicts

    doc = nlp.pipeline()("The pool is 2 x 10.42 = 22.8 GB per GPU and 44.77 GB x 8 = 358 GB in total.")
    rows = [verdicts.judged(reading, None, {}) for reading in claims.read_claims(doc, 0, 0)]
    by_value = {r["value"]: r for r in rows}
    assert by_value[22.8]["verdict"] == "inconsistent" and by_value[22.8]["cause"].startswith("arithmetic: 2 x 10.42")
    assert by_value[358.0]["verdict"] == "unverifiable" and by_value[358.0]["arithmetic"] == "44.77 GB x 8 = 358.2"


def test_facts_decisions_and_links_show_the_message(ingested) -> None:
    shared_path("samples", "kimi-k25")
    con = ingested(SAMPLE / "journal.txt", SAMPLE / "session.opencode.json")
    facts = json.loads(api.render(api.query(con, "facts"), "json"))
    quantities = {(f["text"], f["value"], f["unit"]) for f in facts if f["kind"] == "quantity"}
    assert ("449 GiB", 449 * 2**30, "bytes") in quantities and ("10.42 GB", 10.42e9, "bytes") in quantities
    assert {"flag", "host", "unit", "model", "term"} <= {f["kind"] for f in facts}
    decisions = json.loads(api.render(api.query(con, "decisions"), "json"))
    ratio = next(d for d in decisions if d["request"] == "can we do ratio 4?")
    assert (ratio["request_kind"], ratio["run"], ratio["restarts"]) == (
        "question", 3, "systemctl restart sglang-kimi.service")
    assert ratio["config_changes"][0]["changed"] == {"hicache_ratio": [2.0, 4.0]}
    assert ratio["run_effect"]["host_cache_gb_total"] == 358.16
    links = json.loads(api.render(api.query(con, "links"), "json"))
    assert links[0]["message_text"].startswith("HiCache adds a pinned host-RAM pool")


def test_claims_command_puts_inconsistent_first(ingested) -> None:
    shared_path("samples", "kimi-k25")
    con = ingested(SAMPLE / "journal.txt", SAMPLE / "session.opencode.json")
    db = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()[0]
    con.close()
    result = CliRunner().invoke(main, ["claims", "--db", db, "--format", "json"])
    rows = json.loads(result.output)
    assert [r["verdict"] for r in rows[:2]] == ["inconsistent", "inconsistent"]


def test_log_only_ingest_does_not_import_spacy(tmp_path) -> None:
    script = ("import sys; from logmine import api; "
              f"api.ingest([{str(REPO / 'examples/demo/journal.txt')!r}], db={str(tmp_path / 'x.duckdb')!r}); "
              "print('spacy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_prose_is_read_once_and_claims_are_judged_again_when_runs_change(tmp_path) -> None:
    """A journal ingested after the transcript re-judges the claims against its runs without reading the
    prose again (no spaCy); the verdicts equal those of ingesting both at once."""
    demo = REPO / "examples" / "demo"
    together, apart = tmp_path / "together.duckdb", tmp_path / "apart.duckdb"
    api.ingest([str(demo / "journal.txt"), str(demo / "session.opencode.json")], db=together)
    api.ingest([str(demo / "session.opencode.json")], db=apart)
    script = ("import sys; from logmine import api; "
              f"api.ingest([{str(demo / 'journal.txt')!r}], db={str(apart)!r}); print('spacy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    claims = "SELECT * EXCLUDE (source_id) FROM claims ORDER BY ALL"  # the inputs are numbered in another order
    with api.open_db(together) as a, api.open_db(apart) as b:
        expected = a.execute(claims).fetchall()
        assert b.execute(claims).fetchall() == expected
        consistent = "SELECT count(*) FROM claims WHERE verdict = 'consistent'"
        assert b.execute(consistent).fetchone()[0] >= 3  # judged against the journal's runs
        assert b.execute("SELECT count(*) FROM facts").fetchone() == a.execute("SELECT count(*) FROM facts").fetchone()


def test_every_entity_kind_and_normalised_quantities() -> None:
    from logmine.knowledge import facts, nlp

    doc = nlp.pipeline()("On gpu-box (10.0.0.7) sglang-qwen.service serves Qwen/Qwen3-32B on 2x H100 with "
                         "`--mem-fraction-static=0.87 --tp 2`; /etc/systemd/system/sglang-qwen.service sets TP=2 "
                         "and the KV cache is 37.36 GiB, 40.11GB, 306,048 tokens, 1.5 min, 2,500 tok/s, 90%.")
    assert {(e.label_, e.text) for e in doc.ents} >= {
        ("HOST", "gpu-box"), ("IP", "10.0.0.7"), ("UNIT", "sglang-qwen.service"), ("MODEL", "Qwen/Qwen3-32B"),
        ("HARDWARE", "H100"), ("FLAG", "--mem-fraction-static=0.87"), ("FLAG", "--tp 2"),
        ("PATH", "/etc/systemd/system/sglang-qwen.service"), ("TERM", "TP=2"), ("TERM", "KV cache")}
    values = {e.text: facts.quantity(e) for e in doc.ents if e.label_ == "QUANTITY"}
    assert (values["37.36 GiB"].value, values["37.36 GiB"].dimension) == (37.36 * 2**30, "bytes")
    assert values["40.11GB"].value == 40.11e9 and values["306,048 tokens"].value == 306048
    assert values["1.5 min"].value == 90 and values["2,500 tok/s"].dimension == "tokens/s"
    assert values["90%"].dimension == "percent" and values["2x"].dimension == "factor"
