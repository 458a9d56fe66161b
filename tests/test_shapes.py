"""The shapes SGLang's logs take in 2026 give the tables SGLang's own format of the same launch gives:
NVIDIA Dynamo's readable and JSONL lines, SGLang's JSON events, its per-rank hourly files, the batch lines'
new suffixes; and a shape logmine does not know is said so."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from logmine.parsers.envelopes import DYNAMO_FORMATS, READERS, TimeContext, detect_format
from logmine.parsers.json_events import JSON_EVENTS, json_event_fields
from logmine.parsers.line_shapes import LINE_SHAPES, describe_lines
from logmine.parsers.sglang_formats import STATS_SUFFIXES

from logmine import api
from logmine.inputs.sources import in_time_order
from logmine.query import named_queries

from .shape_fixtures import (
    HOST,
    KV_GIB_PER_RANK,
    TP,
    WEIGHTS_GIB_PER_RANK,
    as_compose,
    as_docker_stamped,
    as_dynamo,
    as_dynamo_jsonl,
    as_kubectl,
    as_sglang,
    as_srun_label,
    figures,
    launch_records,
    write,
    write_per_rank_folder,
)

WRITERS = {"sglang": as_sglang, "dynamo": as_dynamo, "dynamo-jsonl": as_dynamo_jsonl, "kubectl": as_kubectl,
           "kubectl --timestamps": lambda records: as_kubectl(records, stamps=True), "docker -t": as_docker_stamped,
           "compose": as_compose, "compose -t": lambda records: as_compose(records, stamps=True),
           "srun --label": as_srun_label}
def ingest(tmp_path: Path, paths: list[Path]) -> duckdb.DuckDBPyConnection:
    db = tmp_path / "t.duckdb"
    api.ingest([str(p) for p in paths], db=db)
    return duckdb.connect(str(db), read_only=True)


@pytest.fixture(scope="module")
def by_shape(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    records = launch_records()
    out = {}
    for shape, writer in WRITERS.items():
        folder = tmp_path_factory.mktemp(shape)
        con = ingest(folder, [write(folder / ("server.jsonl" if shape == "dynamo-jsonl" else "server.log"),
                                    writer(records))])
        out[shape] = {"figures": figures(con),
                      "format": con.execute("SELECT envelope FROM sources").fetchone()[0],
                      "untyped": con.execute("SELECT count(*) FROM lines WHERE kind IS NULL").fetchone()[0],
                      "traces": con.execute("SELECT trace_id, span_id, x_request_id FROM traces ORDER BY line_no")
                      .fetchall(),
                      "errors": con.execute("SELECT exception_type, error_kind, n_lines FROM errors").fetchall()}
        con.close()
    return out


def test_sglangs_own_format_gives_the_launch_as_written(by_shape: dict) -> None:
    own = by_shape["sglang"]["figures"]
    crashed, served = own["runs"]
    assert (crashed["end_reason"], crashed["ranks"], served["end_reason"], served["ranks"]) == \
        ("failed", TP, "stopped", TP)
    assert crashed["kv_gib_per_rank"] == served["kv_gib_per_rank"] == KV_GIB_PER_RANK
    assert served["weights_gib_per_rank"] == WEIGHTS_GIB_PER_RANK
    assert own["first_error"][0].startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert own["serving"][1] | {} == {"run": 2, "prefill_batches": 7, "decode_batches": 7, "http_requests": 7,
                                      "requests_received": 5, "requests_finished": 5, "warmup_requests": 1,
                                      "health_checks": 1, "e2e_latency_s_p50": 0.45, "completion_tokens": 40}
    assert by_shape["sglang"]["untyped"] == 0


@pytest.mark.parametrize("shape", ["dynamo", "dynamo-jsonl"])
def test_dynamo_shapes_give_the_tables_of_sglangs_own_format(by_shape: dict, shape: str) -> None:
    """Runs, ranks (four, where Dynamo dropped the tags), KV and weights per rank (not the sum over the
    four ranks' lines), the first error (a traceback held in one JSON record too) and serving counts."""
    assert by_shape[shape]["format"] == shape
    assert by_shape[shape]["figures"] == by_shape["sglang"]["figures"]
    assert by_shape[shape]["untyped"] == 0
    assert by_shape[shape]["errors"] == by_shape["sglang"]["errors"] == [("torch.OutOfMemoryError", "oom", 6)]


@pytest.mark.parametrize(("shape", "envelope"), [("kubectl", "kubectl"), ("kubectl --timestamps", "kubectl"),
                                                 ("docker -t", "stamped"), ("compose", "compose"),
                                                 ("compose -t", "compose"), ("srun --label", "slurm")])
def test_container_logs_give_the_tables_of_sglangs_own_format(by_shape: dict, shape: str, envelope: str) -> None:
    """`kubectl logs -l app=sglang --prefix` puts the pod before each line: every line was untyped, and the
    ready server "still capturing CUDA graphs when the log ends". Behind `docker logs -t`'s stamp a traceback's
    indented frames kept the stamp in their text: untyped, and the error four lines short."""
    assert by_shape[shape]["format"] == envelope
    assert by_shape[shape]["figures"] == by_shape["sglang"]["figures"]
    assert by_shape[shape]["untyped"] == 0
    assert by_shape[shape]["errors"] == [("torch.OutOfMemoryError", "oom", 6)]


def test_kubectl_prefix_names_the_pod_and_container() -> None:
    lines = ["[pod/sglang-leader-0/sglang] [2026-03-01 22:41:12 TP0] Load weight begin. avail mem=78.64 GB",
             "[pod/sglang-worker-0/sglang] 2026-03-01T22:41:12.123456789Z [2026-03-01 22:41:12 TP8] x"]
    assert detect_format(lines) == "kubectl"
    leader, worker = (READERS["kubectl"](line, TimeContext(2026)) for line in lines)
    assert (leader.host, leader.ident, leader.ts, leader.message) == \
        ("sglang-leader-0", "sglang", None, "[2026-03-01 22:41:12 TP0] Load weight begin. avail mem=78.64 GB")
    assert (worker.host, worker.ts, worker.message) == \
        ("sglang-worker-0", "2026-03-01 22:41:12.123456", "[2026-03-01 22:41:12 TP8] x")


def test_compose_prefix_names_the_container() -> None:
    lines = ["sglang-1         | [2026-03-01 22:41:12 TP0] Load weight begin. avail mem=78.64 GB",
             "\x1b[33mrouter-1         | \x1b[0m2026-03-01T22:41:12.123456789Z INFO  Routing to sglang-1",
             "sglang_sglang_1  |", "web-1  | x"]
    assert detect_format(lines) == "compose"
    server, router, empty, short = (READERS["compose"](line, TimeContext(2026)) for line in lines)
    assert (server.host, server.ts, server.message) == \
        ("sglang-1", None, "[2026-03-01 22:41:12 TP0] Load weight begin. avail mem=78.64 GB")
    assert (router.host, router.ts, router.message) == \
        ("router-1", "2026-03-01 22:41:12.123456", "INFO  Routing to sglang-1")
    assert (empty.host, empty.message, short.host, short.message) == ("sglang_sglang_1", "", "web-1", "x")


def test_two_pods_interleaved_in_one_file_are_said_to_fold_together(tmp_path: Path) -> None:
    """`kubectl logs -l app=sglang --prefix` of a 2-node launch: runs are read per file, so the leader's and
    the worker's launches fold into one another. The summary told it as two starts, the first "ended", and a
    configuration change node_rank 0 -> 1, with nothing to say it could be wrong."""
    lines = []
    for pod, node in (("leader-0", 0), ("worker-0", 1)):
        lines.append(f"[pod/sglang-{pod}/sglang] [2026-06-01 10:00:00] server_args=ServerArgs(model_path='m', "
                     f"tp_size=16, nnodes=2, node_rank={node})")
        lines += [f"[pod/sglang-{pod}/sglang] [2026-06-01 10:00:10 TP{r}] Init torch distributed begin."
                  for r in range(8 * node, 8 * node + 8)]
    lines.insert(9, lines.pop())  # the worker's last line among the leader's
    con = ingest(tmp_path, [write(tmp_path / "pods.log", lines)])
    shape, line = con.execute("SELECT shape, first_line_no FROM new_shape").fetchone()
    assert shape.startswith("lines of 2 hosts interleaved (sglang-leader-0, sglang-worker-0): runs are read per file")
    assert line == 10
    summary = api.summary(con)
    assert summary[1].startswith("Read with care: lines of 2 hosts interleaved"), summary


def test_srun_label_names_the_task_as_the_host() -> None:
    lines = ["0: [2026-03-01 22:41:12 TP0] Load weight begin. avail mem=78.64 GB", "12: x", " 3: [2026-03-01] y"]
    assert detect_format(lines) == "slurm"
    read = [READERS["slurm"](line, TimeContext(2026)) for line in lines]
    assert [(e.host, e.ts, e.message) for e in read] == [
        ("task 0", None, "[2026-03-01 22:41:12 TP0] Load weight begin. avail mem=78.64 GB"), ("task 12", None, "x"),
        ("task 3", None, "[2026-03-01] y")]


@pytest.mark.parametrize("second", ["router-1", "sglang-2"])
def test_a_second_container_is_a_second_server_only_if_it_writes_sglangs_lines(tmp_path: Path, second: str) -> None:
    """`docker compose logs` of a server and its router: the router's lines are no second server's (the file was
    said to hold "2 hosts interleaved"); a second server's are, and the advice names compose's own command."""
    lines = []
    for second_of in range(4):
        lines.append(f"sglang-1  | [2026-06-01 10:00:0{second_of} TP0] Init torch distributed begin.")
        lines.append(f"{second}  | " + (f"[2026-06-01 10:00:0{second_of} TP0] Init torch distributed begin."
                                       if second.startswith("sglang") else "INFO sgl_router: waiting for workers"))
    con = ingest(tmp_path, [write(tmp_path / "compose.log", lines)])
    shapes = [shape for (shape,) in con.execute("SELECT shape FROM new_shape").fetchall()]
    if second == "router-1":
        assert shapes == []
    else:
        assert shapes == ["lines of 2 hosts interleaved (sglang-1, sglang-2): runs are read per file, so their "
                          "launches fold into one another; ingest each host's log on its own (`docker compose logs "
                          "CONTAINER`)"]


def test_dynamo_jsonl_keeps_the_trace_context(by_shape: dict) -> None:
    traces = by_shape["dynamo-jsonl"]["traces"]
    assert len(traces) == 14  # the prefill and decode line of each of the 7 requests
    assert traces[0] == (f"{1:032x}", f"{1:016x}", "warmup0000")
    assert by_shape["dynamo"]["traces"] == by_shape["sglang"]["traces"] == []


def test_every_dynamo_example_is_read_and_detected() -> None:
    for spec in DYNAMO_FORMATS:
        for example in spec.examples:
            env = READERS[spec.name](example, TimeContext(2026))
            assert env.level in ("INFO", "DEBUG", "ERROR", "WARN") and env.logger and env.ts, example
            assert not env.message.startswith(("{", "2025", "2026")), example
        assert detect_format(list(spec.examples)) == spec.name


def test_dynamo_readable_fields() -> None:
    coloured = ("\x1b[2m2026-03-01T22:41:12.004211Z\x1b[0m \x1b[32m INFO\x1b[0m "
                "\x1b[2mmodel_runner.load_model\x1b[0m\x1b[2m:\x1b[0m Load weight begin. avail mem=78.64 GB")
    env = READERS["dynamo"](coloured, TimeContext(2026))
    assert (env.ts, env.level, env.logger, env.message) == (
        "2026-03-01 22:41:12.004211", "INFO", "model_runner.load_model", "Load weight begin. avail mem=78.64 GB")
    rust = READERS["dynamo"](DYNAMO_FORMATS[0].examples[-1], TimeContext(2026))
    assert rust.logger == "dynamo_runtime::pipeline::network::tcp::server"
    assert rust.message == "Registering new TcpStream on 10.0.4.65:41959"


def test_every_json_event_example_is_typed() -> None:
    for spec in JSON_EVENTS:
        row = json_event_fields(spec.example)
        assert row is not None and row["event"] == spec.name and row["event_ts"].startswith("2026-03-01 22:4")
        assert all(row[column] is not None for column in spec.columns), spec.name
    finished = json_event_fields(JSON_EVENTS[1].example)
    assert (finished["e2e_latency_s"], finished["completion_tokens"], finished["finish_reason"],
            finished["purpose"]) == ("0.8137", "16", "length", "request")
    assert json.loads(finished["fields"])["out"]["meta_info"]["id"] == "9f1c2e"
    assert json_event_fields('{"timestamp": "2026", "no event": 1}') is None
    assert json_event_fields('{"timestamp": "2026-03-01T22:00:00", "event": "x"') is None  # cut short


def test_every_batch_suffix_example_types_its_column(tmp_path: Path) -> None:
    lines = [f"[2026-03-01 10:00:{i:02d} TP0] {s.example}" for i, s in enumerate(STATS_SUFFIXES)]
    con = ingest(tmp_path, [write(tmp_path / "server.log", lines)])
    for i, suffix in enumerate(STATS_SUFFIXES):
        table = "prefill_batches" if suffix.example.startswith("Prefill") else "decode_batches"
        value, extra = con.execute(f"SELECT {suffix.column}, extra FROM {table} WHERE line_no = ?", [i + 1]).fetchone()
        written = suffix.example.split(f"{suffix.key}: ")[1].split(",")[0].rstrip("%")
        assert value == float(written), suffix.key
        assert not extra, suffix.key  # nothing of the line is left over
    con.close()


def test_per_rank_files_are_read_in_time_order_with_their_ranks(tmp_path: Path) -> None:
    folder = write_per_rank_folder(tmp_path / "events", launch_records())
    names = [p.name for p in in_time_order(list(folder.iterdir()))]
    assert names[:2] == [f"{HOST}_0.log.2026-03-01_21", f"{HOST}_0.log"]
    report = api.ingest([str(folder)], db=tmp_path / "t.duckdb")
    # One source per host and rank, its hourly copy read first; a rank's file is no copy of another's,
    # same bytes or not.
    read = [(Path(s.path).name, s.status, s.lines_read) for s in report.logs.sources]
    assert read == [(f"{HOST}_0.log", "new", 16)] + [(f"{HOST}_{rank}.log", "new", 2) for rank in range(1, TP)]
    con = duckdb.connect(str(tmp_path / "t.duckdb"), read_only=True)
    assert con.execute("SELECT compression, size_bytes FROM sources WHERE source_id = 1").fetchone() == \
        ("hourly", sum(p.stat().st_size for p in folder.glob(f"{HOST}_0.log*")))
    assert con.execute("SELECT bool_and(ordered) FROM (SELECT list(ts ORDER BY line_no) = list(ts ORDER BY ts) "
                       "AS ordered FROM lines GROUP BY source_id)").fetchone()[0]
    ranks = con.execute("SELECT e.tp, l.host, count(*) FILTER (event = 'scheduler.status'), "
                        "count(*) FILTER (event = 'request.finished') FROM json_events AS e "
                        "JOIN lines AS l USING (source_id, line_no) GROUP BY ALL ORDER BY e.tp").fetchall()
    assert ranks == [(0, HOST, 2, 7), (1, HOST, 2, 0), (2, HOST, 2, 0), (3, HOST, 2, 0)]
    assert con.execute("SELECT min(ts) FROM json_events").fetchone()[0] == datetime(2026, 3, 1, 21, 59, 59)
    assert con.execute("SELECT count(*) FROM lines WHERE kind IS NULL").fetchone()[0] == 0
    con.close()
    again = api.ingest([str(folder / f"{HOST}_{rank}.log") for rank in range(TP)], db=tmp_path / "t.duckdb")
    assert [s.status for s in again.logs.sources] == ["unchanged"] * TP  # named one by one: the same sources
    hour = folder / f"{HOST}_1.log"  # the next hour's line: the file grew
    hour.write_text(hour.read_text() + '{"timestamp": "2026-03-01T23:00:01", "event": "scheduler.status", '
                    '"running_rids": [], "queued_rids": []}\n')
    grown = api.ingest([str(folder)], db=tmp_path / "t.duckdb")
    assert [(s.status, s.lines_read) for s in grown.logs.sources][1] == ("replaced", 3)


def test_a_run_uvicorn_shut_down_ends_stopped(tmp_path: Path) -> None:
    records = [r for r in launch_records() if not r.message.startswith("SIGTERM")]
    con = ingest(tmp_path, [write(tmp_path / "server.log", as_sglang(records))])
    assert con.execute("SELECT end_reason, end_detail, ended_at FROM runs WHERE ordinal = 2").fetchone() == \
        ("stopped", "uvicorn shut down", datetime(2026, 3, 1, 22, 13, 33))
    con.close()


def test_a_made_up_shape_is_said_out_loud(tmp_path: Path) -> None:
    made_up = [json.dumps({"ts": f"2026-03-01T22:00:{i:02d}Z", "lvl": "info", "who": "router", "msg": f"hop {i}"})
               for i in range(30)]
    known = as_sglang(launch_records())
    drifted = [f"[2026-03-01 22:00:{i % 60:02d} TP0] Frobnicated {i} widgets in the quux pool" for i in range(40)]
    report = api.ingest([str(write(tmp_path / "router.log", made_up)), str(write(tmp_path / "server.log", known)),
                         str(write(tmp_path / "next.log", drifted))], db=tmp_path / "t.duckdb")
    said = {Path(s.path).name: s.new_shape for s in report.logs.sources}
    assert said == {
        "router.log": "lines look like JSON objects with keys ts, lvl, who, msg: not a format logmine knows",
        "server.log": None,
        "next.log": "40 of its 40 plain lines hold messages logmine does not type (lines that begin like "
                    "`Frobnicated 99 widgets in the`)",
    }
    text = api.summary_text(report.as_dict())
    assert "  new shape: lines look like JSON objects with keys ts, lvl, who, msg: not a format logmine knows" in text
    con = duckdb.connect(str(tmp_path / "t.duckdb"), read_only=True)
    rows = named_queries.execute(con, "new-shapes")
    assert [Path(s).name for s in rows["source"]] == ["router.log", "next.log"] and list(rows["untyped"]) == [30, 40]
    page = api.report(con, fmt="markdown")
    assert "## New shapes" in page and "router.log: lines look like JSON objects" in page
    con.close()


def test_every_line_shape_example_is_named() -> None:
    for shape in LINE_SHAPES:
        assert describe_lines([shape.example] * 3) == shape.named, shape.name


def test_aside_coloured_local_time_dynamo_of_two_ranks(tmp_path: Path) -> None:
    """Kept aside while the rest was written: Dynamo with ANSI colours and DYN_LOG_USE_LOCAL_TZ (+01:00),
    at TP=2, read against SGLang's own format of the same launch written in that local time."""
    records = [r for r in launch_records(datetime(2026, 3, 2, 9, 0)) if r.rank is None or r.rank < 2]
    for r in records:
        r.message = r.message.replace("tp_size=4", "tp_size=2")
    own = figures(ingest(tmp_path / "a", [write(_mkdir(tmp_path / "a") / "s.log", as_sglang(records))]))
    coloured = [line if not line.startswith("2026") else
                f"\x1b[2m{line[:26]}+01:00\x1b[0m \x1b[32m{line[28:33]}\x1b[0m {line[34:]}"
                for line in as_dynamo(records)]
    theirs = figures(ingest(tmp_path / "b", [write(_mkdir(tmp_path / "b") / "d.log", coloured)]))
    assert theirs == own
    assert [r["ranks"] for r in own["runs"]] == [2, 2]
    assert own["runs"][1]["ready_at"] - own["runs"][1]["started_at"] == timedelta(seconds=95)


def _mkdir(path: Path) -> Path:
    path.mkdir()
    return path


def test_dynamo_lines_inside_a_journal_are_read_as_dynamos(tmp_path: Path, by_shape: dict) -> None:
    """`journalctl -u` of a `python -m dynamo.sglang` unit: the journal's envelope, Dynamo's line inside."""
    records = launch_records()
    journal = [f"{r.at:%b %d %H:%M:%S} {HOST} python3[48211]: {line}"
               for r, line in zip(records, as_dynamo(records), strict=True)]
    con = ingest(tmp_path, [write(tmp_path / "journal.txt", journal)])
    assert con.execute("SELECT envelope FROM sources").fetchone()[0] == "journal-short"
    got = figures(con)
    assert [(r["ranks"], r["kv_gib_per_rank"], r["weights_gib_per_rank"]) for r in got["runs"]] == \
        [(TP, KV_GIB_PER_RANK, WEIGHTS_GIB_PER_RANK)] * 2
    assert got["first_error"] == by_shape["sglang"]["figures"]["first_error"]
    assert got["serving"] == by_shape["sglang"]["figures"]["serving"]
    assert con.execute("SELECT count(*) FROM lines WHERE kind IS NULL").fetchone()[0] == 0
    con.close()


def test_dynamos_own_records_are_typed_and_do_not_pass_for_drift(tmp_path: Path) -> None:
    rust = DYNAMO_FORMATS[0].examples[-1]
    lines = [rust.replace("41959", str(41959 + i)) for i in range(30)] + as_dynamo(launch_records())[:20]
    con = ingest(tmp_path, [write(tmp_path / "worker.log", lines)])
    assert con.execute("SELECT count(*) FROM notices WHERE kind = 'log_record' AND level = 'DEBUG' "
                       "AND origin = 'dynamo_runtime::pipeline::network::tcp::server'").fetchone()[0] == 30
    assert con.execute("SELECT count(*) FROM new_shape").fetchone()[0] == 0
    con.close()
