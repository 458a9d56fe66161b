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
