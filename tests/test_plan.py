"""`logmine plan` and the host-memory audit: SGLang's formulas on a run's logged figures.

The kimi-k25 sample checks the agent's own figures (58K more tokens at 0.92, 44.77 GB x 8 at ratio 4, about
twice the tokens in FP8); the bundled example a TP=2 MHA model whose HiCache ratio changed; a fixture written
here (a TP=4 server log and a Claude Code session that ran `free -g` and `pip show sglang`) the audit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from logmine import api
from logmine.query import host_memory, plan

from .conftest import REPO

LOGMINE = [sys.executable, "-m", "logmine"]


def within(value: float, expected: float, share: float = 0.01) -> bool:
    return abs(value - expected) <= share * abs(expected)


def run_plan(db: Path, *args: str) -> dict:
    done = subprocess.run([*LOGMINE, "plan", "--db", str(db), *args, "--format", "json"], capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout)


def test_kimi_higher_mem_fraction_gives_the_agents_58k_tokens(kimi_db: Path) -> None:
    result = run_plan(kimi_db, "--run", "1", "--set", "mem_fraction_static=0.92")
    assert within(result["kv_tokens_delta"], 58_000)
    assert result["kv_tokens_per_rank"] == 159_277 + result["kv_tokens_delta"]
    # 0.04 x 95.58 GiB more in the pool, out of the 7.90 GiB headroom the run had.
    assert result["headroom_gib_per_rank"] == pytest.approx(7.90 - 0.04 * 95.58, abs=0.02)
    assert result["outside_formula"] == []
    figure = result["figures"]["kv_tokens_per_rank"]
    assert "mem_fraction_static" in figure["formula"] and figure["logged"]["memory before load GiB"] == 95.58
    assert result["figures"]["cell_bytes"]["value"] == 70272  # (512 + 64) x 61 layers x 2 B, MLA


def test_kimi_hicache_ratio_4_is_what_run_3_logged(kimi_db: Path) -> None:
    result = run_plan(kimi_db, "--run", "1", "--set", "enable_hierarchical_cache=true", "--set", "hicache_ratio=4.0")
    assert within(result["host_cache_gb_per_rank"], 44.77)
    assert within(result["host_cache_gb_total"], 358.16)
    assert result["kv_tokens_per_rank"] == 159_277  # HiCache leaves the GPU pool as it was
    assert "hicache_ratio" in result["figures"]["host_cache_tokens_per_rank"]["formula"]
    assert result["figures"]["host_cache_gb_total"]["logged"] == {"ranks": 8}
    with api.open_db(kimi_db) as con:
        logged = api.query(con, "memory-budget", run=3)
    assert within(result["host_cache_gb_total"], float(logged[logged["rank"] == "all ranks"]["host_cache_gb"].iloc[0]))


def test_kimi_fp8_kv_cache_doubles_the_tokens(kimi_db: Path) -> None:
    result = run_plan(kimi_db, "--run", "1", "--set", "kv_cache_dtype=fp8_e5m2")
    assert within(result["kv_tokens_per_rank"], 2 * 159_277)
    assert result["kv_gib_per_rank"] == pytest.approx(10.42, abs=0.01)
    assert result["host_cache_gb_per_rank"] is None and result["host_cache_gb_total"] is None


def test_leaving_the_formula_is_said(kimi_db: Path) -> None:
    low = run_plan(kimi_db, "--run", "1", "--set", "mem_fraction_static=0.6")
    assert low["kv_tokens_per_rank"] is None
    assert "Not enough memory" in low["outside_formula"][0]
    high = run_plan(kimi_db, "--run", "1", "--set", "mem_fraction_static=0.99")
    assert high["headroom_gib_per_rank"] < 0 and "out of memory at start" in high["outside_formula"][0]
    smaller = run_plan(kimi_db, "--run", "1", "--set", "tp_size=4")
    assert any("weights alone" in line for line in smaller["outside_formula"])


def test_options_list_the_four_standard_ways(kimi_db: Path) -> None:
    result = run_plan(kimi_db, "--run", "1", "--options")
    names = [o["option"] for o in result["options"]]
    assert names == ["raise mem_fraction_static", "FP8 KV cache", "HiCache on host memory",
                     "FP8 KV cache and HiCache"]
    hicache = result["options"][2]
    # Sized to the 396 GiB free -h showed, after SGLang's 10 GiB reserve: it must fit the node.
    assert hicache["host_cache_gb_per_node"] <= 396 * 2**30 / 1e9 - 10 * 2**30 / 1e9
    text = subprocess.run([*LOGMINE, "plan", "--db", str(kimi_db), "--run", "1", "--options"], capture_output=True,
                          text=True, check=True).stdout
    assert "option: FP8 KV cache" in text and max(len(line) for line in text.splitlines()) <= 80


def test_kimi_audit_fits_and_would_not_where_the_release_rounds(kimi_db: Path) -> None:
    with api.open_db(kimi_db) as con:
        found = api.host_memory_audit(con, run=3)
        rounded = api.host_memory_audit(con, run=3, version="0.5.4")
    assert found["sglang_version"] == "0.5.9" and found["rounds_to_power_of_two"] is False
    assert found["pinned_gb_per_node"] == pytest.approx(358.16, abs=0.01)
    assert found["host_available_gb"] == pytest.approx(415389276 * 1024 / 1e9, abs=0.01)  # /proc/meminfo
    assert found["fits"] is True and found["findings"] == []
    assert rounded["pinned_gb_per_rank"] == pytest.approx(2**36 / 1e9, abs=0.01)  # 41.70 GiB -> 64 GiB
    assert rounded["fits"] is False and len(rounded["findings"]) == 2


def test_bad_settings_get_one_line(kimi_db: Path) -> None:
    for setting, said in [("foo=1", "not a setting plan predicts"), ("mem_fraction_static=high", "expected float"),
                          ("kv_cache_dtype=int3", "expected auto or one of"), ("tp_size", "expected KEY=VALUE")]:
        done = subprocess.run([*LOGMINE, "plan", "--db", str(kimi_db), "--set", setting], capture_output=True,
                              text=True)
        assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


# --- the bundled example: TP=2 Qwen3-32B, HiCache on in runs 2 and 3 ---------------------------------------

def test_demo_hicache_ratio_change_predicts_the_next_run(demo_db: Path) -> None:
    with api.open_db(demo_db) as con:
        from_2 = api.plan(con, {"hicache_ratio": 2.0}, run=2)
        from_1 = api.plan(con, {"enable_hierarchical_cache": True, "hicache_ratio": 3.0}, run=1)
        audit = api.host_memory_audit(con, run=2)
    assert from_2["host_cache_gb_per_rank"] == pytest.approx(80.23, abs=0.01)  # run 3 logged 80.23
    assert from_2["host_cache_gb_total"] == pytest.approx(160.46, abs=0.01)
    assert from_1["host_cache_gb_per_rank"] == pytest.approx(120.34, abs=0.01)  # run 2 asked for 120.34
    assert from_2["figures"]["cell_bytes"]["value"] == 131072  # 4 KV heads x 128 x 64 layers x 2 x 2 B per rank
    # Run 2's own error says 88.10 GB free: the audit reads it, adds SGLang's reserve back, and finds no room.
    assert audit["requested_gb_per_rank"] == 120.34 and audit["fits"] is False
    assert audit["host_available_gb"] == pytest.approx(88.10 + 10 * 2**30 / 1e9, abs=0.01)


# --- a fixture written here: TP=4, 8 KV heads, 32 layers, bf16; free -g and pip show in the session -------

CELL = 8 // 4 * 128 * 32 * 2 * 2  # 32,768 B per token per rank
TOKENS = int((74.75 - 78.50 * (1 - 0.85)) * 2**30 // CELL)
HOST_GB = TOKENS * 2 * CELL / 1e9  # ratio 2.0, per rank


def server_log(hicache: bool) -> list[str]:
    stamp = "2026-05-04 09:0{}:00"
    args = (f"server_args=ServerArgs(model_path='meta/Llama-8B', tp_size=4, pp_size=1, dp_size=1, nnodes=1, "
            f"mem_fraction_static=0.85, kv_cache_dtype='auto', page_size=1, max_total_tokens=None, "
            f"context_length=131072, max_running_requests=256, cuda_graph_max_bs=256, "
            f"enable_hierarchical_cache={hicache}, hicache_ratio=2.0, hicache_size=0, random_seed=1)")
    minute = 5 if hicache else 0
    lines = [f"[{stamp.format(minute)}] {args}"]
    for tp in range(4):
        at = stamp.format(minute + 1)
        lines += [f"[{at} TP{tp}] Load weight begin. avail mem=78.50 GB",
                  f"[{at} TP{tp}] Load weight end. elapsed=20.00 s, type=LlamaForCausalLM, dtype=torch.bfloat16, "
                  "avail mem=74.75 GB, mem usage=3.75 GB.",
                  f"[{at} TP{tp}] KV Cache is allocated. #tokens: {TOKENS}, "
                  f"K size: {TOKENS * CELL / 2 / 2**30:.2f} GB, V size: {TOKENS * CELL / 2 / 2**30:.2f} GB",
                  f"[{at} TP{tp}] Memory pool end. avail mem=11.70 GB",
                  f"[{at} TP{tp}] Capture cuda graph begin. This can take up to several minutes. avail mem=11.60 GB",
                  f"[{at} TP{tp}] Capture cuda graph end. Time elapsed: 10.00 s. mem usage=0.80 GB. "
                  "avail mem=10.80 GB."]
        if hicache:
            lines.append(f"[{at} TP{tp}] Allocating {HOST_GB:.2f} GB host memory for hierarchical KV cache.")
    lines.append(f"[{stamp.format(minute + 2)} TP0] max_total_num_tokens={TOKENS}, chunked_prefill_size=8192, "
                 "max_prefill_tokens=16384, max_running_requests=256, context_len=131072, available_gpu_mem=10.80 GB")
    return lines


def session(free_available_gib: int, release: str) -> list[dict]:
    calls = [("t1", "ssh root@node1 'free -g'",
              "               total        used        free      shared  buff/cache   available\n"
              f"Mem:             755          40         100           1         615         {free_available_gib}\n"
              "Swap:              0           0           0\n"),
             ("t2", "ssh root@node1 'pip show sglang'", f"Name: sglang\nVersion: {release}\nSummary: SGLang\n")]
    lines: list[dict] = [{"type": "user", "uuid": "u0", "sessionId": "s1", "timestamp": "2026-05-04T09:02:30Z",
                          "cwd": "/w", "message": {"role": "user", "content": "enable hicache"}}]
    for i, (call, command, output) in enumerate(calls):
        lines.append({"type": "assistant", "uuid": f"a{i}", "sessionId": "s1", "cwd": "/w",
                      "timestamp": f"2026-05-04T09:03:0{i}Z",
                      "message": {"id": f"m{i}", "role": "assistant", "model": "claude-x",
                                  "content": [{"type": "tool_use", "id": call, "name": "Bash",
                                               "input": {"command": command}}],
                                  "usage": {"input_tokens": 1, "output_tokens": 1}}})
        lines.append({"type": "user", "uuid": f"r{i}", "sessionId": "s1", "cwd": "/w",
                      "timestamp": f"2026-05-04T09:03:0{i}Z",
                      "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                                               "content": output}]}})
    return lines


def fixture_db(folder: Path, free_available_gib: int, release: str = "0.5.9") -> Path:
    log = folder / "server.log"
    log.write_text("\n".join(server_log(False) + server_log(True)) + "\n")
    transcript = folder / "s1.jsonl"
    transcript.write_text("".join(json.dumps(line) + "\n" for line in session(free_available_gib, release)))
    db = folder / "t.duckdb"
    api.ingest([str(log), str(transcript)], db=db, tz="+00:00")
    return db


@pytest.fixture(scope="module")
def short_host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fixture_db(tmp_path_factory.mktemp("short"), free_available_gib=450)


def test_fixture_plan_matches_the_logged_hicache_run(short_host: Path) -> None:
    with api.open_db(short_host) as con:
        predicted = api.plan(con, ["enable_hierarchical_cache=true"], run=1)
        runs = api.query(con, "memory-budget")
    assert predicted["figures"]["cell_bytes"]["value"] == CELL
    assert predicted["kv_tokens_per_rank"] == TOKENS
    logged = float(runs[(runs["run"] == 2) & (runs["rank"] == "TP0")]["host_cache_gb"].iloc[0])
    assert predicted["host_cache_gb_per_rank"] == pytest.approx(logged, abs=0.01)
    assert predicted["host_cache_gb_per_node"] == pytest.approx(4 * logged, abs=0.05)


def test_audit_a_pool_over_the_free_memory_free_g_shows(short_host: Path) -> None:
    with api.open_db(short_host) as con:
        audit = api.host_memory_audit(con, run=2)
    assert audit["host_available_gb"] == pytest.approx(450 * 2**30 / 1e9, abs=0.01)
    assert audit["host_available_from"].startswith("free -g")
    assert audit["pinned_gb_per_node"] == pytest.approx(4 * round(HOST_GB, 2), abs=0.01)
    assert audit["fits"] is False
    assert "cannot fit" in audit["findings"][0] and "4 ranks" in audit["findings"][0]
    assert "SGLang's own check (one rank's pool against the free memory) passes" in audit["findings"][0]


def test_audit_a_pool_that_fits(tmp_path: Path) -> None:
    db = fixture_db(tmp_path, free_available_gib=700)
    with api.open_db(db) as con:
        audit = api.host_memory_audit(con, run=2)
    assert audit["fits"] is True and audit["findings"] == []
    assert audit["sglang_version"] == "0.5.9" and audit["pinned_gb_per_rank"] == pytest.approx(HOST_GB, abs=0.01)


def test_audit_rounds_to_a_power_of_two_where_the_release_does(tmp_path: Path) -> None:
    db = fixture_db(tmp_path, free_available_gib=700, release="0.5.4")
    with api.open_db(db) as con:
        audit = api.host_memory_audit(con, run=2)
    asked = round(HOST_GB, 2) * 1e9
    assert audit["sglang_version"] == "0.5.4" and audit["rounds_to_power_of_two"] is True
    assert audit["pinned_gb_per_rank"] == pytest.approx(2 ** (int(asked) - 1).bit_length() / 1e9, abs=0.01)
    assert audit["pinned_gb_per_rank"] > HOST_GB
    assert any("rounds" in f for f in audit["findings"])


@pytest.mark.parametrize("name", sorted(host_memory.READERS))
def test_each_host_memory_reader_reads_its_example(name: str) -> None:
    reader = host_memory.READERS[name]
    parse = host_memory.parse_free if name == "free" else host_memory.parse_meminfo
    assert parse(reader["example"]) == pytest.approx(reader["available_bytes"])


HEADER = "               total        used        free      shared  buff/cache   available\n"


def test_free_units_and_old_procps() -> None:
    out = HEADER + "Mem:     980000  1 2 3 4 5\n"
    assert host_memory.parse_free(out, "free -m") == 5 * 2**20
    assert host_memory.parse_free(out, "free") == 5 * 1024
    old = ("             total       used       free     shared    buffers     cached\n"
           "Mem:           100         60         10          0          5         20\n")
    assert host_memory.parse_free(old, "free -g") == 35 * 2**30
    human = HEADER + "Mem:  2.0T 1T 1T 0B 5G 1.5T\n"
    assert host_memory.parse_free(human, "free -h") == 1.5 * 2**40
    assert host_memory.pinned_bytes(20.4 * 2**30, rounds=True) == 32 * 2**30  # sglang #36562
    assert host_memory.pinned_bytes(20.4 * 2**30, rounds=False) == 20.4 * 2**30


def test_plan_is_pure_over_a_baseline() -> None:
    base = plan.Baseline(source="s", run=1, ranks=2, before_load_gib=78.62, weights_gib=31.04, after_weights_gib=47.58,
                         kv_tokens=306048, kv_gib=37.36, attention="MHA", model_dtype="torch.bfloat16",
                         cuda_graph_gib=0.96, final_available_gib=8.93,
                         config={"mem_fraction_static": 0.87, "tp_size": 2, "kv_cache_dtype": "auto"})
    assert plan.predict(base, {})["kv_tokens_per_rank"] == 306048
    assert plan.predict(base, {"max_total_tokens": 100000})["kv_tokens_per_rank"] == 100000
    assert plan.predict(base, {"context_length": 400000})["full_context_requests"] == 0
    assert REPO.exists()


def test_kimi_run_that_ended_before_its_pool_is_audited_from_the_run_before(kimi_db: Path) -> None:
    with api.open_db(kimi_db) as con:
        audit = api.host_memory_audit(con, run=2)  # restarted while loading: ratio 2.0 never allocated
    assert audit["requested_from"] == "predicted from run 1's KV pool with this run's settings"
    assert audit["requested_gb_per_rank"] == pytest.approx(2 * 159_277 * 70272 / 1e9, abs=0.01)
    assert audit["fits"] is True


def test_cli_audit_and_report_section(kimi_db: Path) -> None:
    result = run_plan(kimi_db, "--audit", "--sglang-version", "0.5.4")
    assert result["run"] == 3 and result["host_audit"]["fits"] is False
    report = subprocess.run([*LOGMINE, "report", "--db", str(kimi_db), "-o", "-", "--format", "markdown"],
                            capture_output=True, text=True, check=True).stdout
    section = report.split("## What the next configuration would cost", 1)[1].split("\n## ", 1)[0]
    assert "217,694 (+58,417)" in section  # run 3 with mem_fraction_static 0.92
    assert "exceed the host's 414.62 GB" in section  # its ratio-4 pools would then outgrow the host
    assert "358.16 GB pinned per node" in section and "it fits" in section


def test_context_length_moves_the_request_table(demo_db: Path) -> None:
    with api.open_db(demo_db) as con:
        longer = api.plan(con, {"context_length": 131072}, run=1)
    # 3,825 requests x 40,964 x 4 B before; min(max(306048 / 131072 x 512, 2048), 4096) = 2048 after.
    table = longer["figures"]["req_to_token_gib_per_rank"]["value"]
    assert table == pytest.approx(2048 * (131072 + 4) * 4 / 2**30, abs=0.001)
    assert longer["headroom_gib_per_rank"] == pytest.approx(8.93 - (table - 3825 * 40964 * 4 / 2**30), abs=0.01)
    assert longer["full_context_requests"] == 2


def test_hicache_size_overrides_the_ratio() -> None:
    base = plan.Baseline(source="s", run=1, ranks=8, before_load_gib=95.58, weights_gib=73.87, after_weights_gib=21.71,
                         kv_tokens=159277, kv_gib=10.42, attention="MLA", model_dtype="torch.bfloat16",
                         config={"mem_fraction_static": 0.88, "tp_size": 8, "enable_hierarchical_cache": True,
                                 "hicache_ratio": 2.0, "hicache_size": 0, "page_size": 64})
    sized = plan.predict(base, {"hicache_size": 30})
    assert sized["host_cache_tokens_per_rank"] == int(30e9 // 70272) // 64 * 64
    assert sized["host_cache_gb_total"] == pytest.approx(8 * sized["host_cache_gb_per_rank"], abs=0.05)
    assert sized["host_cache_gib_total"] == pytest.approx(sized["host_cache_gb_total"] * 1e9 / 2**30, abs=0.01)
    small = plan.predict(base, {"hicache_ratio": 0.5})
    assert any("not larger than the device pool" in line for line in small["outside_formula"])


def test_a_pool_capped_by_max_total_tokens() -> None:
    capped = plan.Baseline(source="s", run=1, ranks=2, before_load_gib=78.62, weights_gib=31.04,
                           after_weights_gib=47.58, kv_tokens=100000, kv_gib=12.21, attention="MHA",
                           model_dtype="torch.bfloat16", final_available_gib=34.08,
                           config={"mem_fraction_static": 0.87, "tp_size": 2, "max_total_tokens": 100000})
    assert plan.predict(capped, {"mem_fraction_static": 0.9})["kv_tokens_per_rank"] == 100000  # still capped
    freed = plan.predict(capped, {"max_total_tokens": "none"})
    # The formula's rest: 47.58 - 78.62 x 0.13 = 37.36 GiB over the 131,072 B cell (read from the rounded 12.21 GiB
    # of 100,000 tokens, so within the GiB figure's rounding).
    assert within(freed["kv_tokens_per_rank"], int((47.58 - 78.62 * (1 - 0.87)) * 2**30) // 131072, 0.001)
    assert "the formula's rest" in freed["figures"]["kv_tokens_per_rank"]["formula"]
