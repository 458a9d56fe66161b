"""The declarative format table and the line grammar, through a real ingest of lines written here."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from logmine.parsers import sglang_formats as formats
from logmine.parsers.events import COMMON_COLUMNS, TABLES_BY_NAME
from logmine.parsers.sglang_classifier import Classifier, compile_pattern
from logmine.parsers.vector_columns import bounded_int, bounded_ints, flags

from logmine import api


def ingest_lines(tmp_path: Path, lines: list[str], name: str = "server.log") -> duckdb.DuckDBPyConnection:
    log = tmp_path / name
    log.write_text("\n".join(lines) + "\n")
    db = tmp_path / "t.duckdb"
    api.ingest([str(log)], db=db)
    return duckdb.connect(str(db), read_only=True)


def kinds_of(con: duckdb.DuckDBPyConnection) -> list[str | None]:
    return [r[0] for r in con.execute("SELECT kind FROM lines ORDER BY line_no").fetchall()]


def test_every_pattern_example_is_typed_as_its_kind(tmp_path: Path) -> None:
    """Each entry of the format table carries a real example line; all of them must type.

    Written as a journal so that patterns reserved to one identifier (systemd) see it.
    """
    lines = [f"Mar 01 10:00:{i % 60:02d} node {p.ident}[1]: {p.example}" if p.ident else
             f"Mar 01 10:00:{i % 60:02d} node python3[7]: [2026-03-01 10:00:{i % 60:02d} TP0] {p.example}"
             for i, p in enumerate(formats.ALL_PATTERNS)]
    con = ingest_lines(tmp_path, lines, name="journal.txt")
    got = kinds_of(con)
    expected = [p.kind for p in formats.ALL_PATTERNS]
    assert [(e, g) for e, g in zip(expected, got, strict=True) if e != g] == []


def test_every_notice_head_is_recognised(tmp_path: Path) -> None:
    lines = [f"[2026-03-01 10:00:00] {head} and the rest" for _, head in formats.NOTICE_HEADS]
    con = ingest_lines(tmp_path, lines)
    topics = [r[0] for r in con.execute("SELECT topic FROM notices ORDER BY line_no").fetchall()]
    assert topics == [topic for topic, _ in formats.NOTICE_HEADS]


def test_prefix_grammar_across_versions(tmp_path: Path) -> None:
    con = ingest_lines(tmp_path, [
        "[11:19:46 TP0] Decode batch. #running-req: 1, #token: 234, token usage: 0.00, "
        "gen throughput (token/s): 147.64, #queue-req: 0",
        "[2026-03-01 23:45:58.123 TP1] Decode batch, #running-req: 2, #token: 82, token usage: 0.00, "
        "cuda graph: True, gen throughput (token/s): 73.90, #queue-req: 0",
        "[2026-01-04 04:40:51 DP3 TP12 EP12] Decode batch, #running-req: 4, #token: 24576, token usage: 0.10, "
        "accept len: 2.79, accept rate: 0.70, pre-allocated usage: 0.00, #prealloc-req: 0, cpu graph: True, "
        "gen throughput (token/s): 0.40, #queue-req: 0, ",
        "[2026-01-04 04:40:52 DP1 PP0 ATTN_CP1 MOE_DP2 TP4 EP4] Decode batch [4567], #running-req: 1, #token: 9, "
        "token usage: 0.01, cuda graph: False, gen throughput (token/s): 1.00, #queue-req: 0",
    ])
    rows = con.execute("""SELECT dp, pp, attn_cp, moe_dp, tp, ep, running_req, tokens, graph, accept_len,
                                 forward_iter, extra['pre-allocated usage'], strftime(ts, '%H:%M:%S.%g')
                          FROM decode_batches ORDER BY line_no""").fetchall()
    assert rows == [
        (None, None, None, None, 0, None, 1, 234, None, None, None, None, "11:19:46.000"),
        (None, None, None, None, 1, None, 2, 82, True, None, None, None, "23:45:58.123"),
        (3, None, None, None, 12, 12, 4, 24576, True, 2.79, None, "0.00", "04:40:51.000"),
        (1, 0, 1, 2, 4, 4, 1, 9, False, None, 4567, None, "04:40:52.000"),
    ]


def test_description_only_systemd_lines_count_only_from_systemd(tmp_path: Path) -> None:
    con = ingest_lines(tmp_path, [
        "Mar 01 10:00:00 node systemd[1]: Starting SGLang server...",
        "Mar 01 10:00:01 node python3[7]: [2026-03-01 10:00:01] Starting the engine for us...",
        "Mar 01 10:00:02 node python3[7]: Starting sglang.service - not systemd, but names a unit...",
    ], name="journal.txt")
    assert kinds_of(con) == ["systemd_starting", None, "systemd_starting"]


def test_foreign_shape_and_uvicorn_lines_with_and_without_time(tmp_path: Path) -> None:
    con = ingest_lines(tmp_path, [
        "[2026-03-25 11:06:20] INFO server_args.py:1835: Attention backend not specified. Use flashinfer.",
        "[2026-03-25 11:06:21] WARNING model_config.py:814: Something new that no pattern knows.",
        '[2026-03-25 11:06:22] INFO:     127.0.0.1:51234 - "POST /generate HTTP/1.1" 200 OK',
        'INFO:     ::1:51235 - "GET /health HTTP/1.1" 503 Service Unavailable',
    ])
    assert kinds_of(con) == ["notice", "log_record", "http_request", "http_request"]
    assert con.execute("SELECT client, method, path, status FROM http_requests ORDER BY line_no").fetchall() == [
        ("127.0.0.1:51234", "POST", "/generate", 200), ("::1:51235", "GET", "/health", 503)]


def test_two_ranks_interleaved_tracebacks_are_two_errors_with_every_line(tmp_path: Path) -> None:
    con = ingest_lines(tmp_path, [
        "[2026-06-11 05:11:58 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        "[2026-06-11 05:11:58 TP1] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 4025, in run_scheduler_process',
        '  File "/sglang/srt/managers/scheduler.py", line 4025, in run_scheduler_process',
        "    scheduler = Scheduler(",
        "    scheduler = Scheduler(",
        '  File "/sglang/srt/mem_cache/memory_pool_host.py", line 88, in __init__',
        '  File "/sglang/srt/mem_cache/memory_pool_host.py", line 88, in __init__',
        "    raise ValueError(",
        "    raise ValueError(",
        "ValueError: Not enough host memory available. Requesting 120.34 GB but only have 88.10 GB free. "
        "Please reduce the size of the hierarchical cache.",
        "ValueError: Not enough host memory available. Requesting 120.34 GB but only have 88.10 GB free. "
        "Please reduce the size of the hierarchical cache.",
        "",
        "[2026-06-11 05:11:59] Received sigquit from a child process. It usually means the child failed.",
    ])
    errors = con.execute("SELECT tp, error_kind, exception_type, n_lines FROM errors ORDER BY first_line_no").fetchall()
    assert [e[:3] for e in errors] == [(0, "host_memory", "ValueError"), (1, "host_memory", "ValueError")]
    # Six lines each; SGLang's closing blank line goes to one of them: nothing is lost.
    assert sorted(e[3] for e in errors) == [6, 7]
    assert con.execute("SELECT count(*) FROM lines WHERE group_line_no IS NOT NULL").fetchone()[0] == 13
    assert con.execute("SELECT list(requested_gb) FROM host_cache").fetchone()[0] == [120.34, 120.34]


def test_cxx_abort_glued_to_progress_bar_is_an_oom_error(tmp_path: Path) -> None:
    con = ingest_lines(tmp_path, [
        "Capturing batches (bs=24 avail_mem=11.91 GB):  11%|#  | 1/9 [00:23<03:10]\rCapturing batches (bs=22): "
        " 11%|# | 1/9 [00:23<03:10] terminate called after throwing an instance of 'c10::Error'",
        "  what():  NPU out of memory. Tried to allocate 4.00 GiB (NPU 4; 61.27 GiB total capacity)",
        "Exception raised from malloc at build/compiler_depend.ts:1634 (most recent call first):",
        "frame #0: c10::Error::Error() + 0xb0 (0xfffe211948c0 in libc10.so)",
        "[2026-01-19 20:23:40 DP0 TP0 EP0] Load weight begin. avail mem=60.00 GB",
    ])
    assert con.execute("SELECT error_kind, origin, n_lines FROM errors").fetchall() == [("oom", "c10::Error", 4)]
    assert kinds_of(con)[-1] == "load_weight_begin"


def test_sglang_line_starting_mid_line_after_a_progress_bar(tmp_path: Path) -> None:
    con = ingest_lines(tmp_path, [
        "Loading shards:  50% Completed | 1/2 [00:03<00:03]\r[2026-02-09 14:38:28 TP1] Load weight end. "
        "elapsed=4.43 s, type=Qwen3MoeForCausalLM, quant=awq, bits=4, avail mem=10.25 GB, mem usage=21.20 GB."])
    assert con.execute("SELECT tp, elapsed_s, quant, mem_usage_gib FROM weight_loads").fetchall() == [
        (1, 4.43, "awq", 21.2)]


def test_progress_bars_are_typed_whether_joined_by_carriage_returns_or_on_lines_of_their_own(tmp_path: Path) -> None:
    con = ingest_lines(tmp_path, [
        "\rLoading safetensors checkpoint shards:   0% Completed | 0/8 [00:00<?, ?it/s]"
        "\rLoading safetensors checkpoint shards:  12% Completed | 1/8 [00:00<00:06,  1.09it/s]",
        "Loading safetensors checkpoint shards:  25% Completed | 1/4 [00:01<00:04,  1.43s/it]",
        "Capturing batches (bs=60 avail_mem=15.22 GB):  80%|████████  | 8/10 [00:11<00:02,  1.11s/it]",
        "  0%|          | 0/10 [00:00<?, ?it/s]",
        "Throughput rose 45% | not a bar",
    ])
    assert kinds_of(con) == ["progress"] * 4 + [None]
    assert con.execute("SELECT detail FROM notices ORDER BY line_no").fetchall() == [
        ("Loading safetensors checkpoint shards",), ("Loading safetensors checkpoint shards",),
        ("Capturing batches (bs=60 avail_mem=15.22 GB)",), ("",)]


def test_coloured_lines_are_typed_and_kept_as_written(tmp_path: Path) -> None:
    con = ingest_lines(tmp_path, [
        '[2026-08-01 21:40:26] \x1b[32mINFO\x1b[0m:     127.0.0.1:55336 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        "\x1b[33m[2026-08-01 21:40:27 TP0] Load weight begin. avail mem=78.64 GB\x1b[0m",
    ])
    assert kinds_of(con) == ["http_request", "load_weight_begin"]
    assert con.execute("SELECT count(*) FROM lines WHERE message LIKE '%' || chr(27) || '%'").fetchone()[0] == 2


def test_block_and_line_readings_of_every_example_agree() -> None:
    """RE2 over a block (with tail groups cut by position) reads each example as Python `re` does."""
    specs = [p for p in formats.ALL_PATTERNS if p.ident is None]
    bodies = pa.array([p.example for p in specs], pa.string())
    found = Classifier().classify(bodies, np.arange(len(specs)), flags(pc.string_is_ascii(bodies)))
    block_rows = {row["_row"]: row for pieces in found.events.values()
                  for piece in pieces for row in piece.to_pylist()}
    for i, spec in enumerate(specs):
        expected = {k: v for k, v in re.match(spec.regex, spec.example).groupdict().items() if v is not None}
        got = {k: v for k, v in block_rows[i].items() if k in expected}
        assert got == expected, spec.kind


@pytest.mark.parametrize("text", ["0", "7", "32767", "32768", "000000032767", "99999999999999999999", "",
                                  "\u0661\u0662", None])
def test_a_number_reads_alike_on_the_block_and_the_line_by_line_paths(text: str | None) -> None:
    """Ranks and PIDs are read by `bounded_ints` in blocks and `bounded_int` line by line: one rule."""
    limit = 32768
    assert bounded_int(text, limit) == bounded_ints(pa.array([text], pa.string()), limit)[0].as_py()


def fields_without_a_column() -> list[tuple[str, str, str]]:
    """(kind, table, field) of every regex group or constant of the format table that no column stores."""
    missing = []
    for p in formats.ALL_PATTERNS:
        table = TABLES_BY_NAME.get(p.table)
        if table is None:
            missing.append((p.kind, p.table, "no such table"))
            continue
        fields = [g for g in re.compile(p.regex).groupindex if not g.startswith("_")] + list(p.const)
        missing += [(p.kind, p.table, f) for f in fields if f not in table.columns and f not in COMMON_COLUMNS]
    return missing


def test_every_group_and_constant_of_a_pattern_is_a_column_of_its_table() -> None:
    """The format table and the event tables name each field once: a group with no column would be lost."""
    assert fields_without_a_column() == []


def test_a_new_message_kind_is_one_pattern_entry_and_one_schema_entry(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Supporting a new message is its `Pattern` (with its example) and, for a field no table has, the
    column: added here at run time, the next ingest types the line with nothing else changed."""
    new = formats.Pattern("warmup_finished", "server_events", rf"Warmup finished in {formats.num('warmup_s')} s\.",
                          "a later release", "Warmup finished in 12.5 s.")
    monkeypatch.setattr(formats, "ALL_PATTERNS", (*formats.ALL_PATTERNS, new))
    assert fields_without_a_column() == [("warmup_finished", "server_events", "warmup_s")]
    monkeypatch.setitem(TABLES_BY_NAME["server_events"].columns, "warmup_s", pa.float64())
    assert fields_without_a_column() == []

    con = ingest_lines(tmp_path, [f"[2026-03-01 10:00:00 DP1 TP2] {new.example}"])
    assert con.execute("SELECT line_no, kind, warmup_s, dp, tp FROM server_events").fetchall() == [
        (1, "warmup_finished", 12.5, 1, 2)]
    assert kinds_of(con) == ["warmup_finished"]


def test_storing_a_column_the_table_lacks_is_an_error() -> None:
    from logmine.store import typed_table

    with pytest.raises(ValueError, match="not in the table"):
        typed_table(pa.table({"tokens": ["1"], "va": ["VA upper bound"]}), {"tokens": "BIGINT"})


def test_a_kv_address_space_bound_is_not_the_kv_pool(tmp_path: Path) -> None:
    con = ingest_lines(tmp_path, [
        "[2026-03-01 10:00:00 TP0] KV Cache VA upper bound. dtype: torch.bfloat16, #tokens: 100, KV size: 1.00 GB",
        "[2026-03-01 10:00:01 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 90, KV size: 0.90 GB",
    ])
    rows = con.execute("SELECT kind, tokens, kv_size_gib, va_upper_bound FROM kv_cache ORDER BY line_no").fetchall()
    assert rows == [("kv_cache_va_upper_bound", 100, 1.0, True), ("kv_cache_allocated", 90, 0.9, None)]
    assert api.runs(con)["kv_tokens"].tolist() == [90]


def test_a_key_another_batch_kind_has_a_column_for_is_kept_in_extra(tmp_path: Path) -> None:
    con = ingest_lines(tmp_path, [
        "[2026-03-01 10:00:00 TP0] Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, "
        "#running-req: 0, #queue-req: 0, accept len: 2.50, input throughput (token/s): 0.53, cuda graph: False",
    ])
    assert con.execute("SELECT new_tokens, extra FROM prefill_batches").fetchall() == [(7, {"accept len": "2.50"})]


def test_an_empty_group_is_null_on_the_block_and_the_line_by_line_paths(tmp_path: Path) -> None:
    """RE2 cannot tell an empty group from one that did not take part: both are NULL, whichever path reads it."""
    con = ingest_lines(tmp_path, [
        '[2026-03-01 10:00:00] 127.0.0.1:5 - "GET /health HTTP/1.1" 200 ',
        '[2026-03-01 10:00:01] 127.0.0.1:5 - "GET /health HTTP/1.1" 200',
        '[2026-03-01 10:00:02] höst:5 - "GET /health HTTP/1.1" 200 ',  # non-ASCII: read by Python `re`
    ])
    assert con.execute("SELECT status, reason FROM http_requests ORDER BY line_no").fetchall() == [(200, None)] * 3


def test_a_checkpoint_tensor_without_parameter_is_one_kind_whatever_its_layer(tmp_path: Path) -> None:
    con = ingest_lines(tmp_path, [
        "[2026-03-01 10:00:00 TP0] Parameter model.layers.7.self_attn.k_scale not found in params_dict",
        "[2026-03-01 10:00:00 TP1] Parameter model.layers.12.self_attn.v_scale not found in params_dict, skip loading",
        "[2026-03-01 10:00:01 TP0] Parameter layers.3.mlp.gate.weight (mapped to layers.3.mlp.gate.w) "
        "not found in params_dict, skip loading",
    ])
    assert con.execute("SELECT kind, topic, detail, origin FROM notices ORDER BY line_no").fetchall() == [
        ("param_not_loaded", "weights", "model.layers.7.self_attn.k_scale", None),
        ("param_not_loaded", "weights", "model.layers.12.self_attn.v_scale", None),
        ("param_not_loaded", "weights", "layers.3.mlp.gate.weight", "layers.3.mlp.gate.w"),
    ]


def test_each_patterns_group_names_are_read_from_its_text_as_python_compiles_them() -> None:
    """The classifier takes a pattern's group names from its text, and compiles it for Python's `re` only
    when a non-ASCII row comes: the names must be the ones `re` gives, in order."""
    for spec in formats.ALL_PATTERNS:
        compiled = compile_pattern(spec)
        assert compiled.names == tuple(re.compile(spec.regex).groupindex), spec.kind
        assert compiled.regex.pattern == spec.regex


def test_lines_ray_printed_are_typed_behind_every_actor_and_without_its_repeat_count(tmp_path: Path) -> None:
    """SGLang inside Ray (an RL trainer's rollout workers): the driver puts each nested actor before the line and
    counts the like lines it dropped after it. A nested line was untyped, and a decode batch's last figure lost."""
    con = ingest_lines(tmp_path, [
        "(TaskRunner pid=100) (WorkerDict pid=616, ip=10.0.0.5) [2026-04-23 21:30:01 TP0] Init torch distributed "
        "begin.",
        "(pid=617) [2026-04-23 21:30:01 TP1] Init torch distributed begin.",
        "(WorkerDict pid=616, ip=10.0.0.5) [2026-04-23 21:31:40 TP0] Decode batch. #running-req: 3, #token: 400, "
        "token usage: 0.01, cuda graph: True, gen throughput (token/s): 120.50, #queue-req: 2,  [repeated 7x across "
        "cluster] (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see "
        "https://docs.ray.io/en/master/ray-observability/user-guides/configure-logging.html#log-deduplication for "
        "more options.)",
    ])
    assert kinds_of(con) == ["init_distributed_begin", "init_distributed_begin", "decode_batch"]
    assert con.execute("SELECT tp, gen_throughput_tok_s, queue_req, extra FROM decode_batches").fetchall() == \
        [(0, 120.5, 2, None)]
