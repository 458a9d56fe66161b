"""Why a rank crashed: tracebacks, C++ aborts and faulthandler dumps grouped into `errors` rows whose
reason is the exception line, never a line of the dump that follows it (../shared/docs/sglang-log-formats.md §5).
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from logmine import api

from .conftest import shared_path
from .test_formats import ingest_lines

NPU_OOM = "NPU out of memory. Tried to allocate 4.00 GiB (NPU {n}; 61.27 GiB total capacity; 1.50 GiB free)"


def faulthandler_dump() -> list[str]:
    """What Python's faulthandler prints after SIGABRT: the signal, each thread's stack, the trailer."""
    return [
        "Fatal Python error: Aborted",
        "",
        "Thread 0x0000fff94ffff120 (most recent call first):",
        '  File "/usr/lib/python3.11/threading.py", line 327 in wait',
        "",
        "Current thread 0x0000ffffaef16060 (most recent call first):",
        '  File "/sglang/srt/model_executor/cuda_graph_runner.py", line 724 in capture_one_batch_size',
        '  File "<string>", line 1 in <module>',
        "",
        "Extension modules: numpy._core._multiarray_umath, torch._C, __triton_launcher (total: 157)",
    ]


def npu_abort(device: int) -> list[str]:
    """A torch_npu C++ abort, then faulthandler's dump: 16 lines."""
    return [
        "terminate called after throwing an instance of 'c10::Error'",
        f"  what():  {NPU_OOM.format(n=device)}",
        "Exception raised from malloc at build/compiler_depend.ts:1634 (most recent call first):",
        "frame #0: c10::Error::Error(c10::SourceLocation) + 0xb0 (0xfffe211948c0 in libc10.so)",
        "<omitting python frames>",
        "",
        *faulthandler_dump(),
    ]


def error_rows(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.execute(
        "SELECT error_kind, origin, exception_type, exception_message, last_line, first_line_no, last_line_no, "
        "n_lines FROM errors ORDER BY first_line_no").fetchall()


def test_aborts_of_two_ranks_each_end_at_their_dump_trailer(tmp_path: Path) -> None:
    """Aborts print one after another, no rank tag on any line; what follows a trailer is not theirs."""
    con = ingest_lines(tmp_path, [
        "[2026-01-19 20:23:03 DP0 TP0 EP0] Capture npu graph begin. This can take up to several minutes. "
        "avail mem=11.98 GB",
        *npu_abort(4),                                                      # lines 2-17
        *npu_abort(13),                                                     # lines 18-33
        "[ERROR] TBE Subprocess[task_distribute] raise error[], main process disappeared!",
        "Exception in thread Thread-2 (launch_node):",
        "[2026-01-19 20:23:40 DP1 TP1 EP1] Load weight begin. avail mem=60.00 GB",
    ])
    assert error_rows(con) == [
        ("oom", "c10::Error", "c10::Error", NPU_OOM.format(n=4), f"c10::Error: {NPU_OOM.format(n=4)}", 2, 17, 16),
        ("oom", "c10::Error", "c10::Error", NPU_OOM.format(n=13), f"c10::Error: {NPU_OOM.format(n=13)}", 18, 33,
         16),
    ]
    grouped = con.execute("SELECT line_no, group_line_no FROM lines WHERE line_no >= 33 ORDER BY line_no").fetchall()
    assert grouped == [(33, 18), (34, None), (35, None), (36, None)]


def test_interleaved_rank_tracebacks_keep_their_rank_and_exception_line(tmp_path: Path) -> None:
    """Two ranks' tracebacks interleave line by line; a faulthandler dump after them is an error of its
    own whose reason is its signal, and the tracebacks' reason stays their exception line."""
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 MiB. GPU 0 has a total capacity"
    con = ingest_lines(tmp_path, [
        "[2026-06-11 05:11:58 DP0 TP0 EP0] Scheduler hit an exception: Traceback (most recent call last):",
        "[2026-06-11 05:11:58 DP1 TP1 EP1] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 2978, in run_scheduler_process',
        '  File "/sglang/srt/managers/scheduler.py", line 2978, in run_scheduler_process',
        "    scheduler = Scheduler(",
        "    scheduler = Scheduler(",
        '  File "/sglang/srt/model_executor/cuda_graph_runner.py", line 724, in capture_one_batch_size',
        '  File "/sglang/srt/model_executor/cuda_graph_runner.py", line 724, in capture_one_batch_size',
        "    out = run_once()",
        "    out = run_once()",
        oom,
        oom,
        "",
        *faulthandler_dump(),                                               # lines 14-23
        "[2026-06-11 05:11:59] Received sigquit from a child process. It usually means the child failed.",
    ])
    rows = con.execute("SELECT dp, tp, ep, exception_type, last_line, first_line_no, last_line_no FROM errors "
                       "ORDER BY first_line_no").fetchall()
    assert [r[:5] for r in rows] == [
        (0, 0, 0, "torch.OutOfMemoryError", oom),
        (1, 1, 1, "torch.OutOfMemoryError", oom),
        (None, None, None, None, "Fatal Python error: Aborted"),
    ]
    assert rows[2][5:] == (14, 23)
    assert con.execute("SELECT count(*) FROM lines WHERE line_no <= 23 AND group_line_no IS NULL").fetchone() == (0,)


def test_a_chained_traceback_is_one_error_ending_on_its_last_exception(tmp_path: Path) -> None:
    """`During handling of the above exception` and the bare `Traceback` after it continue the error; the
    builtin `Exception` has no suffix to be known by."""
    con = ingest_lines(tmp_path, [
        "[2026-01-19 20:23:30] Received sigquit from a child process. It usually means the child failed.",
        "Traceback (most recent call last):",
        '  File "/test/test_utils.py", line 660, in popen_launch_server',
        "    raise Exception(",
        "Exception: Server process exited with code -9. Check server logs for errors.",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/test/ascend_utils.py", line 296, in launch_node',
        '    raise RuntimeError(f"Failed to start {role} node on {node_ip}: {e}")',
        "RuntimeError: Failed to start decode node on 172.22.3.245: Server process exited with code -9.",
    ])
    assert error_rows(con) == [(
        "exception", None, "RuntimeError", "Failed to start decode node on 172.22.3.245: Server process exited "
        "with code -9.", "RuntimeError: Failed to start decode node on 172.22.3.245: Server process exited with "
        "code -9.", 2, 12, 11)]


def test_a_finished_traceback_leaves_the_next_ones_lines_alone(tmp_path: Path) -> None:
    """unittest prints a traceback, its own banner, then the same traceback chained: two errors, the
    first ending where the second begins (it had taken the second's code and chain lines)."""
    stack = ['  File "/sglang/srt/utils/common.py", line 2527, in retry', "    return fn()", "           ^^^^"]
    failed = "AssertionError: 1963.81 not greater than or equal to 2078.33"
    con = ingest_lines(tmp_path, [
        "Traceback (most recent call last):", *stack, failed,                      # lines 1-5
        "E", "=" * 70, "ERROR: test_qwen3_32b (__main__.TestQwen3_32B.test_qwen3_32b)", "-" * 70,
        "Traceback (most recent call last):", *stack, failed,                      # lines 10-14
        "", "During handling of the above exception, another exception occurred:", "",
        "Traceback (most recent call last):", *stack,
        "Exception: retry() exceed maximum number of retries.",                   # line 22
        "",
    ])
    rows = con.execute("SELECT exception_type, first_line_no, last_line_no FROM errors ORDER BY 2").fetchall()
    assert rows == [("AssertionError", 1, 9), ("Exception", 10, 23)]


def test_an_abort_message_of_several_lines_keeps_them_all(tmp_path: Path) -> None:
    """CUDA's `what()` goes on over several lines and a blank one before the frames."""
    con = ingest_lines(tmp_path, [
        "terminate called after throwing an instance of 'c10::Error'",
        "  what():  CUDA error: an illegal memory access was encountered",
        "CUDA kernel errors might be asynchronously reported at some other API call.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "",
        "Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43 (most recent "
        "call first):",
        "frame #0: c10::Error::Error(c10::SourceLocation) + 0x96 (0x7f2a in libc10.so)",
        "[2026-03-01 10:00:00] Received sigquit from a child process. It usually means the child failed.",
    ])
    assert error_rows(con) == [(
        "abort", "c10::Error", "c10::Error", "CUDA error: an illegal memory access was encountered",
        "c10::Error: CUDA error: an illegal memory access was encountered", 1, 7, 7)]


def test_corpus_npu_oom_crash_names_each_abort_by_its_message(tmp_path: Path) -> None:
    """The 16-NPU Ascend log (../shared/corpus): 14 NPU OOM aborts with their dumps, one after another."""
    log = shared_path("corpus", "sglang", "shun8686__for_debug__logs__d.log")
    db = tmp_path / "d.duckdb"
    api.ingest([str(log)], db=db)
    rows = error_rows(duckdb.connect(str(db), read_only=True))
    ranges = [(r[5], r[6]) for r in rows]
    assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:], strict=False)), "error ranges overlap"
    aborts = [r for r in rows if r[1] == "c10::Error"]
    assert len(aborts) == 14
    assert {(r[0], r[2]) for r in aborts} == {("oom", "c10::Error")}
    assert all(r[4].startswith("c10::Error: NPU out of memory. Tried to allocate 4.00 GiB (NPU ") for r in aborts)
    assert (aborts[0][5], aborts[0][6], aborts[-1][5], aborts[-1][6]) == (970, 1114, 2908, 3052)
    others = [(r[1], r[2], r[5], r[6]) for r in rows if r[1] != "c10::Error"]
    assert others == [("DataParallelController", "EOFError", 2572, 2592), (None, "RuntimeError", 3094, 3111)]
