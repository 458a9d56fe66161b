"""Real SGLang logs from public repositories (../shared/corpus/sglang): every line stored and typed.

Figures below were read by hand from each file (grep and reading), not from logmine's output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import CORPUS

FILES = sorted(CORPUS.glob("*.log")) if CORPUS.exists() else []
requires_corpus = pytest.mark.skipif(not FILES, reason="../shared/corpus/sglang is absent")

# file -> SQL that must return the given rows (the file is the only source in its database).
HAND_READ: dict[str, list[tuple[str, list[tuple]]]] = {
    "TianyangChen357__LLM__sglang.log": [
        ("SELECT tp, tokens, k_size_gib, v_size_gib FROM kv_cache ORDER BY tp",
         [(0, 139814, 5.33, 5.33), (1, 139814, 5.33, 5.33)]),
        ("SELECT tp, elapsed_s, avail_mem_gib, mem_usage_gib FROM weight_loads "
         "WHERE kind = 'load_weight_end' ORDER BY tp",
         [(0, 24.17, 17.22, 1.5), (1, 24.36, 17.64, 1.5)]),
    ],
    "mattbucci__2x-3090-GA102-300-A1-sglang-inference__benchmarks__glm-air-probe-2026-06-11__server-a2-tail.log": [
        ("SELECT tp, error_kind, exception_type FROM errors", [(0, "oom", "torch.OutOfMemoryError")]),
        ("SELECT kind FROM shutdown_events", [("sigquit",)]),
    ],
    "mattbucci__2x-R9700-RDNA4-GFX1201-sglang-inference__benchmarks__smoke-256k__Qwen3-Coder-30B-A3B-REAP-AWQ.log": [
        ("SELECT count(*) FROM decode_batches", [(224,)]),
        ("SELECT count(*) FROM prefill_batches", [(8,)]),
        ("SELECT DISTINCT tokens, k_size_gib FROM kv_cache", [(238809, 2.73)]),
    ],
    "shun8686__for_debug__scripts__log__test_ascend_qwen3_32b_w8a8_2p_in2k_out2k_50ms.py.log": [
        ("SELECT count(*) FROM decode_batches", [(86,)]),
        ("SELECT count(*) FROM prefill_batches", [(16,)]),
        ("SELECT count(*) FROM http_requests WHERE method = 'POST'", [(243,)]),
        ("SELECT DISTINCT tokens, k_size_gib FROM kv_cache WHERE kind = 'kv_cache_allocated' ORDER BY k_size_gib",
         [(527360, 0.25), (527360, 16.1)]),
    ],
    "shun8686__for_debug__logs__d.log": [
        ("SELECT count(*) FROM errors WHERE origin = 'c10::Error' AND error_kind = 'oom'", [(14,)]),
        ("SELECT DISTINCT tokens, kv_size_gib FROM kv_cache", [(132480, 8.68)]),
    ],
    "mattbucci__m4-sglang-inference__benchmarks__longctx-bisect__phase0__server-log-tail.log": [
        ("SELECT count(*) FROM prefill_batches", [(19,)]),
        ("SELECT DISTINCT max_total_num_tokens FROM capacity", [(362734,)]),
    ],
    "udbhav-ag__SGLang_setup__sglang.log": [
        ("SELECT host_gb FROM host_cache WHERE kind = 'hicache_host_alloc'", [(11.55,)]),
        ("SELECT max_total_num_tokens FROM capacity", [(25169,)]),
    ],
    "sostrowsk__dgx-spark-local-llm__sglang-versuch1.log": [
        ("SELECT tokens, k_size_gib FROM kv_cache WHERE kind = 'kv_cache_allocated' ORDER BY line_no",
         [(26397, 1.81), (32997, 0.76), (32997, 0.38)]),
    ],
    "jerryzsj__my-deepseek-r1__README.md__excerpt.log": [
        ("SELECT k_size_gib, v_size_gib FROM kv_cache", [(2.82, 2.82)]),
    ],
}


def physical_lines(path: Path) -> int:
    data = path.read_bytes()
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


@requires_corpus
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:60])
def test_every_line_is_stored_and_prefixed_lines_are_typed(path: Path, ingested) -> None:
    con = ingested(path)
    stored, first, last = con.execute("SELECT count(*), min(line_no), max(line_no) FROM lines").fetchone()
    assert (stored, first, last) == (physical_lines(path), 1, physical_lines(path))
    prefixed, typed = con.execute("SELECT count(*), count(kind) FROM lines WHERE prefixed").fetchone()
    assert typed >= 0.99 * prefixed


@requires_corpus
@pytest.mark.parametrize("name", sorted(HAND_READ), ids=lambda n: n[:60])
def test_figures_read_by_hand(name: str, ingested) -> None:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{name} is not in this corpus")
    con = ingested(path)
    for sql, rows in HAND_READ[name]:
        assert con.execute(sql).fetchall() == rows, sql


@requires_corpus
def test_whole_corpus_meets_the_typing_target(ingested) -> None:
    con = ingested(*FILES)
    prefixed, typed = con.execute("SELECT count(*), count(kind) FROM lines WHERE prefixed").fetchone()
    assert typed / prefixed >= 0.99


# file -> each run's (first line, start line, ready from, end reason, cause family, cause line, failed phase),
# read by hand from the file: where it starts (its first stamped line), whether and how it became ready,
# what it died of and where, and what it was doing then.
RUNS_READ_BY_HAND: dict[str, list[tuple]] = {
    # Stops during CUDA graph capture (bs 1) with nothing after: still starting as far as the log goes.
    "TianyangChen357__LLM__sglang.log": [(1, 1, None, "running", None, None, None)],
    # An offline Engine at log_level=error: only its dump and progress bars.
    "caleboverman__llmsys_f25_hw6__sglang_log.log": [(1, 2, None, "running", None, None, None)],
    "didier-durand__llms-in-clouds__docs__sglang.md__excerpt.log": [(1, 3, "ready_line", "running", None, None, None)],
    "jerryzsj__my-deepseek-r1__README.md__excerpt.log": [(1, 1, "ready_line", "running", None, None, None)],
    # A tail: TP0 runs out of memory in piecewise CUDA graph capture; SIGQUIT follows.
    "mattbucci__2x-3090-GA102-300-A1-sglang-inference__benchmarks__glm-air-probe-2026-06-11__server-a2-tail.log":
        [(1, 1, None, "failed", "device_memory", 3, "CUDA graphs")],
    "mattbucci__2x-R9700-RDNA4-GFX1201-sglang-inference__benchmarks__smoke-256k__Devstral-24B-AWQ.log":
        [(1, 6, "ready_line", "running", None, None, None)],
    # Smoke tests that served, then were killed by their script: only resource_tracker warnings at the end.
    "mattbucci__2x-R9700-RDNA4-GFX1201-sglang-inference__benchmarks__smoke-256k__Qwen3-Coder-30B-A3B-REAP-AWQ.log":
        [(1, 6, "ready_line", "ended", "killed", 302, None)],
    "mattbucci__2x-R9700-RDNA4-GFX1201-sglang-inference__benchmarks__smoke-256k__Qwen3.6-27B-AWQ.log":
        [(1, 6, "ready_line", "ended", "killed", 2155, None)],
    "mattbucci__m4-sglang-inference__benchmarks__longctx-bisect__phase0__server-log-tail.log":
        [(1, 9, "ready_line", "running", None, None, None)],
    # 16 NPU ranks: the first abort (NPU 4, line 970) interrupts the capture of bs 22; the other ranks' aborts,
    # the DataParallelController's EOFError, SIGQUIT and the launcher's RuntimeError follow.
    "shun8686__for_debug__logs__d.log": [(1, 146, None, "failed", "device_memory", 970, "CUDA graphs at bs 22")],
    "shun8686__for_debug__scripts__log__test_ascend_deepseek_r1_w8a8_2p1d_32p_in6k_out1k6_15ms_prefill-0.log":
        [(1, 80, "ready_line", "running", None, None, None)],
    # The test harness's AssertionError on a throughput figure is the test's verdict, not the server's end.
    "shun8686__for_debug__scripts__log__test_ascend_qwen3_32b_w8a8_2p_in2k_out2k_50ms.py.log":
        [(1, 122, "ready_line", "running", None, None, None)],
    # Killed while capturing the prefill graphs (num_tokens 8192), then while loading weights.
    "sostrowsk__dgx-spark-local-llm__sglang-versuch1.log":
        [(1, 7, None, "ended", "killed", 65, "CUDA graphs at num_tokens 8192")],
    "sostrowsk__dgx-spark-local-llm__sglang.log": [(1, 7, None, "ended", "killed", 42, "weights")],
    "udbhav-ag__SGLang_setup__sglang.log": [(1, 1, "ready_line", "running", None, None, None)],
}


@requires_corpus
@pytest.mark.parametrize("name", sorted(RUNS_READ_BY_HAND), ids=lambda n: n[:60])
def test_runs_and_causes_read_by_hand(name: str, ingested) -> None:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{name} is not in this corpus")
    con = ingested(path)
    rows = con.execute("""SELECT first_line_no, start_line_no, ready_from, end_reason, cause_family, cause_line_no,
                                 failed_phase FROM runs ORDER BY ordinal""").fetchall()
    assert rows == RUNS_READ_BY_HAND[name]


@requires_corpus
def test_every_corpus_log_has_its_runs_read_by_hand() -> None:
    assert sorted(p.name for p in FILES) == sorted(RUNS_READ_BY_HAND)
