"""What happened and why, on logs written here from SGLang's source and public logs (tests/data/why/):
run boundaries, readiness, how each run ended, its root cause and its line, and the report's sentence.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from logmine.parsers import failure_families as families

from logmine import api
from logmine.derive import causes

DATA = Path(__file__).parent / "data" / "why"
RUN_FIELDS = ["ordinal", "first_line_no", "start_line_no", "ready_from", "end_reason", "cause_family",
              "cause_line_no", "consequences", "failed_phase"]


def runs_of(con, *fields: str) -> list[list]:
    columns = ", ".join(fields or RUN_FIELDS)
    return [list(r) for r in con.execute(f"SELECT {columns} FROM runs ORDER BY ordinal").fetchall()]


def report_text(con) -> str:
    markdown = api.report(con, fmt="markdown")
    return " ".join(markdown.replace("\\_", "_").replace("\\[", "[").replace("\\]", "]").split())


def test_every_family_example_matches_its_family_first() -> None:
    for family in families.FAMILIES:
        for example in family.examples:
            assert causes.family_of(example) == family.name, example
    for example in families.CONSEQUENCE_EXAMPLES:
        assert re.search(families.CONSEQUENCE, example), example
    for example in families.FATAL_LINE_EXAMPLES:
        assert re.search(families.FATAL_LINE, example), example
    for family in families.FAMILIES:  # a family says whether lines of it are failures of their own
        assert family.fatal_line == any(re.search(families.FATAL_LINE, e) for e in family.examples), family.name
    for example in families.EXIT_TRACE_EXAMPLES:
        assert re.search(families.EXIT_TRACE, example), example
    assert re.search(families.LAUNCHER_FRAME, families.LAUNCH_TRACEBACK_EXAMPLE)
    assert not re.search(families.SERVER_STARTED_FRAME, families.LAUNCH_TRACEBACK_EXAMPLE)
    assert re.search(families.SERVER_STARTED_FRAME, families.SERVER_TRACEBACK_EXAMPLE)
    assert re.search(families.HARNESS_FRAME, families.HARNESS_EXAMPLE)
    assert not re.search(families.HARNESS_FRAME, families.SERVER_TRACEBACK_EXAMPLE)


def test_a_launch_that_dies_before_its_dump_is_a_run_of_its_own(ingested) -> None:
    con = ingested(DATA / "launch_dies_before_dump.log")
    assert runs_of(con) == [
        [1, 1, 2, "ready_line", "restarted", None, None, None, None],
        # The pip line and the command line are the new launch's; its traceback has no time of its own.
        [2, 21, None, None, "failed", "import", 23, 0, None],
        [3, 33, 35, "ready_line", "running", None, None, None, None],
    ]
    assert runs_of(con, "end_detail")[1] == ["import or dependency: ModuleNotFoundError: No module named 'sgl_kernel'"]
    # Each run's configuration is its own dump's: the failed launch has none, so the diff is run 1 -> 3.
    assert con.execute("SELECT DISTINCT from_run, to_run FROM config_diffs").fetchall() == [(1, 3)]
    text = report_text(con)
    assert ("Run 2 failed while starting: import or dependency failure, “ModuleNotFoundError: No module named "
            "'sgl_kernel'” (line 23)") in text


def test_a_second_nodes_log_gives_its_lowest_ranks_figures_and_the_launch_shape(ingested) -> None:
    con = ingested(DATA / "second_node.log")
    row = api.runs(con).iloc[0]
    assert [row[c] for c in ("ranks", "tp_size", "ep_size", "nnodes", "node_rank")] == [2, 4, 4, 2, 1]
    # TP2 is the lowest rank on this node (TP0 and TP1 are on the first): its figures stand for the run.
    assert [row[c] for c in ("weights_gib_per_rank", "avail_after_weights_gib", "kv_tokens", "kv_gib_per_rank")] \
        == [69.25, 7.85, 52000, 3.4]
    assert row["end_reason"] == "running"
    assert "1 server start of deepseek-ai/DeepSeek-V3 (2 ranks here, node 1 of 2 of a tp_size 4 launch)" \
        in report_text(con)
    load = api.query(con, "load-time")
    assert load[["rank", "weights_s"]].values.tolist()[0] == ["TP2", 271.0]


def test_a_decode_worker_that_never_prints_ready_is_ready_at_its_first_batch_and_crashed(ingested) -> None:
    con = ingested(DATA / "decode_worker_crash.log")
    assert runs_of(con) == [[1, 1, 1, "first_batch", "crashed", "communication", 19, 1, None]]
    assert str(con.execute("SELECT ready_at FROM runs").fetchone()[0]) == "2026-05-10 09:02:11"
    errors = api.query(con, "errors")
    assert errors[["rank", "role", "last_line"]].values.tolist() == [
        ["TP1", "cause", "AssertionError: KV transfer of req 7f3a failed: mooncake transfer status -1"]]
    text = report_text(con)
    assert "(at its first batch: it logs no ready line) and crashed after it was ready" in text
    assert ("Run 1 crashed after it was ready: communication set-up failure on TP1, “AssertionError: KV transfer "
            "of req 7f3a failed: mooncake transfer status -1” (line 19)") in text


@pytest.mark.parametrize(("name", "row", "words"), [
    # The previous server still holds the HTTP port: uvicorn's one error line, after a whole load. It was "still
    # warming up when the log ends".
    ("port_in_use_http.log", [1, 1, 1, None, "failed", "port_in_use", 14, 0, "warmup"],
     "port conflict failure, “ERROR: [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): "
     "address already in use” (line 14)"),
    # A prefill worker whose scheduler cannot bind its ZMQ port (another leg's derived port).
    ("port_in_use_zmq.log", [1, 1, 1, None, "failed", "port_in_use", 4, 1, "distributed init"],
     "port conflict failure on TP1, “zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:30235')”"),
])
def test_a_port_another_process_holds_is_the_cause(ingested, name: str, row: list, words: str) -> None:
    con = ingested(DATA / name)
    assert runs_of(con) == [row]
    assert words in report_text(con)


@pytest.mark.parametrize(("name", "family", "last_lines"), [
    ("torch_rank_prefix.log", "communication",
     ["torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp"]),
    # Two ranks' tracebacks line by line: one error each, the first the cause.
    ("torch_rank_prefix_interleaved.log", "device_memory", ["torch.OutOfMemoryError: CUDA out of memory. Tried to "
                                                            "allocate 2.00 GiB. GPU 0", "torch.OutOfMemoryError: CUDA "
                                                            "out of memory. Tried to allocate 2.00 GiB. GPU 1"]),
])
def test_torch_rank_prefixed_tracebacks_are_errors_with_their_cause(ingested, name: str, family: str,
                                                                    last_lines: list[str]) -> None:
    """torch.distributed writes `[rank1]: ` before each line of a rank's traceback: the run failed at
    "[rank1]: Traceback (most recent call last):", an error of one line in no family."""
    con = ingested(DATA / name)
    assert runs_of(con, "end_reason", "cause_family", "cause_line_no") == [["failed", family, 4]]
    errors = api.query(con, "errors")
    assert [text[:len(start)] for text, start in zip(errors["last_line"], last_lines, strict=True)] == last_lines
    assert errors["role"].tolist() == ["cause"] + ["consequence"] * (len(last_lines) - 1)


@pytest.mark.parametrize("in_journal", [False, True])
def test_a_launcher_that_logs_the_server_lines_again_is_read_past(tmp_path: Path, ingested, in_journal: bool) -> None:
    """A batch driver that logs each server line again through Python's `logging` (`asctime - name - level -
    message`), as its own file or in the journal of its unit: the cause was the traceback's first line,
    “- docpipe.runner - INFO - [...] Scheduler hit an exception”, in no family, and no line of SGLang's was typed."""
    path = DATA / "python_logging_wrapper.log"
    if in_journal:
        text = path.read_text()
        path = tmp_path / "driver.journal"
        path.write_text("".join(f"Feb 11 09:14:{n:02d} node-3 python3[4410]: {line}\n"
                                for n, line in enumerate(text.splitlines())))
    con = ingested(path)
    assert runs_of(con) == [[1, 1, 1, None, "failed", "device_memory", 11, 0, "after KV pool"]]
    assert api.query(con, "errors")["last_line"].tolist() == [
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 896.00 MiB. GPU 0 has a total capacity of "
        "23.55 GiB of which 412.00 MiB is free."]
    untyped = con.execute("SELECT line_no FROM lines WHERE kind IS NULL ORDER BY line_no").fetchall()
    assert untyped == [(1,), (3,), (10,), (18,)]  # the driver's own lines


def test_a_cuda_kernels_assertion_is_the_cause_not_the_launch_failure_after_it(ingested) -> None:
    """A kernel's `Assertion ... failed` per failing thread, then the scheduler's traceback: CUDA reports the
    error asynchronously, so the traceback only says “RuntimeError: CUDA error: device-side assert triggered”,
    which was the cause, in no family; what the assertion was lay untyped in the lines above it."""
    con = ingested(DATA / "device_assert.log")
    assert runs_of(con) == [[1, 1, 1, "ready_line", "crashed", "device_assertion", 13, 4, None]]
    assert con.execute("SELECT count(*) FROM notices WHERE topic = 'cuda_assert'").fetchone() == (3,)
    text = " ".join(api.summary(con))
    assert ("crashed after it was ready: device-side assertion failure, “/pytorch/aten/src/ATen/native/cuda/Indexing.cu"
            ":1289: indexSelectLargeIndex: block: [118,0,0], thread: [32,0,0] Assertion `srcIndex < srcSelectDimSize` "
            "failed” (line 13); what followed from it (4 signs: device-side assertion line ×2, RuntimeError, "
            "sigquit)") in text, text


def test_a_stop_that_timed_out_says_systemd_killed_the_server(ingested) -> None:
    """`systemctl stop` of a server still draining after TimeoutStopSec: systemd kills it. The run "was stopped;
    Main process exited, code=killed, status=9/KILL", with nothing to say the stop took 90 s and was forced."""
    con = ingested(DATA / "stop_timeout.log")
    assert runs_of(con, "end_reason", "end_detail", "cause") == [[
        "stopped", "killed by systemd 90 s after systemctl stop, when it had not stopped within the unit's stop "
        "timeout (Main process exited, code=killed, status=9/KILL)", None]]


def test_servers_a_router_launches_together_are_one_run(ingested) -> None:
    """`python -m sglang_router.launch_server --dp-size 4`: one server per DP rank, each with its own dump (its own
    port and GPU), their lines interleaved. The summary told 4 starts, 3 of them "ended (no shutdown line)" before
    they loaded, and a configuration change port 31000 -> 31347."""
    con = ingested(DATA / "router_dp_workers.log")
    assert runs_of(con) == [[1, 1, 5, "ready_line", "running", None, None, None, None]]
    runs = api.query(con, "runs")
    assert (runs["ranks"].tolist(), runs["kv_tokens"].tolist(), runs["decode_batches"].tolist()) == \
        ([4], [454000], [8])
    assert con.execute("SELECT count(*) FROM config_diffs").fetchone() == (0,)


def test_a_model_the_server_cannot_download_is_named_so(ingested) -> None:
    """A gated repository without a token: the traceback's last line is the OSError, in no family ("error")."""
    con = ingested(DATA / "gated_repo.log")
    assert runs_of(con) == [[1, 1, 1, None, "failed", "model_files", 5, 1, "weights"]]
    assert ("failed while loading weights: model download or files failure on TP0, “OSError: You are trying to "
            "access a gated repo” (line 5)") in " ".join(api.summary(con))


def test_a_library_line_the_server_outlived_is_no_cause(tmp_path: Path, ingested) -> None:
    """NCCL's `ibv_open_device failed for mlx5_3, skipping` while the server starts: a ready, serving server
    "crashed after it was ready: communication set-up failure". The same kind of line after it was ready, where
    it then stops serving, still is the cause."""
    head = ["[2026-03-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=2)",
            "[2026-03-01 10:00:05 TP0] Init torch distributed begin.",
            "hgx-150:216:1207 [0] NCCL WARN NET/IB : ibv_open_device failed for mlx5_3, skipping",
            "[2026-03-01 10:00:40] The server is fired up and ready to roll!",
            "[2026-03-01 10:00:41 TP0] Decode batch. #running-req: 1, #token: 48, token usage: 0.00, cuda graph: True, "
            "gen throughput (token/s): 1.88, #queue-req: 0,"]
    (tmp_path / "benign.log").write_text("\n".join(head) + "\n")
    assert runs_of(ingested(tmp_path / "benign.log"), "end_reason", "cause_line_no") == [["running", None]]
    (tmp_path / "hang.log").write_text("\n".join(head + [
        "[rank1]:[E301 10:10:41.123456 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out."]) + "\n")
    assert runs_of(ingested(tmp_path / "hang.log"), "end_reason", "cause_family", "cause_line_no") == \
        [["crashed", "communication", 6]]


ASGI_ERROR = ["[2026-03-01 10:05:00] ERROR:    Exception in ASGI application",
              "Traceback (most recent call last):",
              '  File "/usr/local/lib/python3.12/dist-packages/starlette/responses.py", line 246, in stream_response',
              "    async for chunk in self.body_iterator:",
              "asyncio.exceptions.CancelledError"]
SERVING = ["[2026-03-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)",
           "[2026-03-01 10:00:40] The server is fired up and ready to roll!"]


def batch(at: str) -> str:
    return (f"[2026-03-01 {at} TP0] Decode batch. #running-req: 1, #token: 48, token usage: 0.00, cuda graph: True, "
            "gen throughput (token/s): 90.00, #queue-req: 0,")


@pytest.mark.parametrize(("after", "end"), [
    # A client gave up on its stream: the server served on for minutes. It "crashed after it was ready".
    ([batch("10:05:01"), batch("10:09:00")], ["running", None]),
    # A scheduler's traceback, then the last batches in flight within the second: a crash.
    ([batch("10:05:00"), '[2026-03-01 10:05:01] INFO:     1.2.3.4:5 - "POST /generate HTTP/1.1" 200 OK'],
     ["crashed", 4]),
])
def test_an_error_the_server_served_on_after_is_no_crash(tmp_path: Path, ingested, after: list[str],
                                                          end: list) -> None:
    (tmp_path / "s.log").write_text("\n".join(SERVING + ASGI_ERROR + after) + "\n")
    con = ingested(tmp_path / "s.log")
    assert runs_of(con, "end_reason", "cause_line_no") == [end]
    if end[0] == "running":
        assert "Run 1 was ready after 40 s and was still running at the end of the log." in report_text(con)


INTERRUPTED = ["Traceback (most recent call last):",
               '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2900, in '
               "run_scheduler_process",
               "    scheduler.event_loop_overlap()",
               "KeyboardInterrupt"]


@pytest.mark.parametrize(("before", "end"), [
    # SGLang drains and its children are killed: their tracebacks were a crash after it was ready.
    (SERVING + ["[2026-03-01 10:05:00] SIGTERM received. signum=15 frame=<frame>. Draining requests and shutting "
                "down..."], ["stopped", "SIGTERM", None]),
    # Ctrl-C in the terminal that ran launch_server: each process's KeyboardInterrupt.
    (SERVING, ["stopped", "Ctrl-C, KeyboardInterrupt", None]),
    # A Ctrl-C after the start had failed leaves the failure its cause.
    (SERVING[:1] + ASGI_ERROR[1:4] + ["RuntimeError: Not enough memory. Please try to increase "
                                      "--mem-fraction-static."], ["failed", None, 2]),
])
def test_an_operators_stop_is_no_crash(tmp_path: Path, ingested, before: list[str], end: list) -> None:
    (tmp_path / "s.log").write_text("\n".join(before + INTERRUPTED) + "\n")
    row = runs_of(ingested(tmp_path / "s.log"), "end_reason", "end_detail", "cause_line_no")[0]
    assert [row[0], row[1] if end[1] else None, row[2]] == end, row


def test_a_hang_killed_from_outside_ended_with_no_shutdown_line(ingested) -> None:
    con = ingested(DATA / "hang_killed.log")
    assert runs_of(con) == [[1, 1, 1, "ready_line", "ended", "killed", 12, 0, None]]
    assert runs_of(con, "end_detail")[0][0].startswith("no shutdown line")
    ends = api.query(con, "ends")
    assert ends[["kind", "role", "line_no"]].values.tolist() == [["exit_trace", "cause", 12]]
    assert "ended with no shutdown line: killed from outside, as its exit-time warnings show (line 12)" \
        in report_text(con)


def test_a_cxx_trailer_ends_its_error_and_the_next_traceback_is_its_own(ingested) -> None:
    con = ingested(DATA / "cxx_trailer_then_traceback.log")
    rows = con.execute("SELECT first_line_no, last_line_no, exception_type FROM errors ORDER BY 1").fetchall()
    assert rows == [(4, 17, "torch.distributed.DistBackendError"), (18, 27, "EOFError")]
    text = con.execute("SELECT text FROM errors WHERE first_line_no = 4").fetchone()[0]
    assert "ncclSystemError: System call" in text and "frame #2: c10d::NCCLComm::create" in text
    assert con.execute("SELECT count(*) FROM lines WHERE kind IS NULL").fetchone() == (0,)
    assert runs_of(con) == [[1, 1, 1, None, "failed", "communication", 4, 3, "distributed init"]]
    ends = api.query(con, "ends")
    assert ends[["kind", "role"]].values.tolist() == [
        ["traceback", "cause"], ["traceback", "consequence"], ["rank_dead", "consequence"],
        ["exit_code", "consequence"]]
    assert "Run 1 failed during distributed init: communication set-up failure on TP0" in report_text(con)


def test_a_crash_in_cuda_graph_capture_names_the_phase_and_batch_size(ingested) -> None:
    con = ingested(DATA / "cuda_graph_crash.log")
    assert runs_of(con) == [[1, 1, 1, None, "failed", "device_memory", 11, 1, "CUDA graphs at bs 248"]]
    load = api.query(con, "load-time").iloc[0]
    assert (load["failed_phase"], load["cuda_graph_s"]) == ("CUDA graphs at bs 248", 2.0)
    text = report_text(con)
    assert "Run 1 failed while capturing CUDA graphs (at bs 248): device memory failure, “Exception: Capture " \
           "cuda graph failed: CUDA out of memory." in text
    assert "| CUDA graphs | 2 s, failed here (CUDA graphs at bs 248) |" in api.report(con, fmt="markdown")


def test_an_oom_at_start_from_a_low_mem_fraction_is_explained_by_the_reserve(ingested) -> None:
    con = ingested(DATA / "oom_low_mem_fraction.log")
    assert runs_of(con) == [[1, 1, 1, None, "failed", "device_memory", 10, 2, "KV pool"]]
    budget = api.query(con, "memory-budget")
    tp0 = budget[budget["rank"] == "TP0"].iloc[0]
    assert (tp0["reserve_gib"], tp0["after_weights_gib"], tp0["kv_formula_gib"]) == (50.3, 47.56, -2.74)
    assert tp0["kv_gap_cause"].startswith(
        "no KV pool: mem_fraction_static 0.36 holds back 50.3 GiB of the 78.6 GiB free before the weights, "
        "more than the 47.56 GiB left after them, so the formula gives the pool -2.74 GiB")
    markdown = api.report(con, fmt="markdown")
    assert " tokens, GiB" not in markdown and "| none allocated |" in markdown
    assert "other 47.56" not in markdown and "not yet used (the start stopped) 47.56 GiB" in markdown
    assert "Run 1 failed while allocating the KV pool: device memory failure on TP0" in report_text(con)


def test_a_communication_failure_on_every_rank_is_the_cause_not_the_controllers_eof(ingested) -> None:
    con = ingested(DATA / "nvshmem_every_rank.log")
    assert runs_of(con) == [[1, 1, 1, None, "failed", "communication", 15, 5, "KV pool"]]
    # NVSHMEM's lines are typed (notices of topic nvshmem), not left over.
    assert con.execute("SELECT count(*) FROM lines WHERE kind = 'nvshmem_log'").fetchone() == (7,)
    assert con.execute("SELECT count(*) FROM lines WHERE kind IS NULL AND message <> ''").fetchone() == (0,)
    row = api.runs(con).iloc[0]
    assert [row[c] for c in ("ranks", "tp_size", "dp_size", "nnodes", "node_rank")] == [2, 16, 16, 2, 0]
    # NVSHMEM's `init failed for transport: IBGDA` (line 14) falls back to the next transport: the first
    # fatal line is the peer check's, on GPU 0.
    assert row["cause"] == "/sgl-workspace/nvshmem/src/host/topo/topo.cpp:469: [GPU 0] Peer GPU 8 is not accessible, " \
                           "exiting ..."
    ends = api.query(con, "ends")
    assert ends[["kind", "role", "line_no"]].values.tolist()[:2] == [["fatal_line", "cause", 15],
                                                                      ["fatal_line", "consequence", 16]]
    assert ends[ends["kind"] == "traceback"][["role", "detail"]].values.tolist() == [["consequence", "EOFError"]]
    text = report_text(con)
    assert "### Run 1: failed, communication set-up failure" in api.report(con, fmt="markdown")
    assert "communication set-up failure, “/sgl-workspace/nvshmem/src/host/topo/topo.cpp:469: [GPU 0] Peer GPU 8 " \
           "is not accessible, exiting ...” (line 15)" in text
    assert "EOFError" in text.split("what followed from it", 1)[1][:200]


@pytest.mark.parametrize("phase, words", [("CUDA graphs at bs 8", "while capturing CUDA graphs (at bs 8)"),
                                          ("weights", "while loading weights"), (None, None)])
def test_phase_words(phase: str | None, words: str | None) -> None:
    assert causes.phase_words(phase) == words


# Written after the rules above, from SGLang's source and public issues, and not tuned to: the rules' check.
HELD_OUT = DATA / "held_out"


def test_held_out_attempts_pasted_from_a_rocm_shell(ingested) -> None:
    """A config error before the dump, an RCCL/NCCL failure at init ending in the shell's `Killed`, then a
    good launch: three runs, each starting at its own shell lines, each with its own cause."""
    con = ingested(HELD_OUT / "rocm_rccl_attempts.log")
    assert runs_of(con) == [
        [1, 1, None, None, "failed", "model_config", 2, 0, None],
        [2, 16, 18, None, "failed", "communication", 23, 3, "distributed init"],
        [3, 37, 39, "ready_line", "running", None, None, None, None],
    ]
    assert "Run 2 failed during distributed init: communication set-up failure on TP2" in report_text(con)


def test_held_out_hccl_failure_on_a_second_ascend_node(ingested) -> None:
    con = ingested(HELD_OUT / "ascend_hccl_node1.log")
    assert runs_of(con) == [[1, 1, 1, None, "failed", "communication", 4, 3, "distributed init"]]
    row = api.runs(con).iloc[0]
    assert [row[c] for c in ("ranks", "tp_size", "nnodes", "node_rank")] == [2, 16, 2, 1]
    assert row["cause"].startswith("RuntimeError: HCCL function error: HcclCommInitRootInfoConfig")


def test_held_out_watchdog_hang_then_a_restart_that_cannot_import(ingested) -> None:
    """Under systemd: a hang the watchdog ends after serving (crashed, timeout), then an auto-restart whose
    launcher dies on a missing CUDA runtime before its dump (failed, import)."""
    con = ingested(HELD_OUT / "systemd_watchdog_hang.txt")
    assert runs_of(con) == [
        [1, 1, 2, "ready_line", "crashed", "timeout", 9, 1, None],
        [2, 14, 15, None, "failed", "import", 16, 0, None],
    ]
    assert runs_of(con, "end_detail")[0][0] == (
        "timeout or hang: Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False); "
        "Main process exited, code=killed, status=9/KILL")
