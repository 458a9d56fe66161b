"""Batches parsed in the worker process reach the main process whole, through shared slots or the pipe."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from logmine.parsers.envelopes import TimeContext

from logmine import api
from logmine.cli import INPUT_FAILED
from logmine.ingest import logs as ingest_module
from logmine.ingest.jobs.files import POOL_LOST, _next_parse, _pool
from logmine.ingest.logs import WORKER_MIN_BYTES, ParsePlan, parse_batches, typed_batch
from logmine.ingest.worker.parse import WorkerDied, WorkerParse
from logmine.ingest.worker.slots import SharedSlots
from logmine.inputs.sources import describe
from logmine.scripts import load_script

from .conftest import REPO

synth = load_script(REPO / "bench" / "synth_journal.py")
JOURNAL = REPO / "examples" / "demo" / "journal.txt"

JOURNAL_LINE = ("Mar 01 08:19:{s:02d} gpu-node-7 python3[266172]: [2026-03-01 08:19:{s:02d} TP0] Decode batch, "
                "#running-req: 1, #token: {n}, token usage: 0.00, cuda graph: True, gen throughput (token/s): "
                "82.87, #queue-req: 0")


def test_a_slot_round_trip_and_a_batch_too_large_for_its_slot() -> None:
    slots = SharedSlots.create(2, slot_bytes=64 << 10)
    assert slots is not None
    try:
        small = {"lines": pa.table({"line_no": pa.array(range(10)), "message": pa.array(["x"] * 10)})}
        layout = slots.write(1, small)
        assert layout is not None and layout.slot == 1
        assert slots.read(layout)["lines"].equals(small["lines"])
        large = {"lines": pa.table({"message": pa.array(["y" * 1000] * 200)})}
        assert slots.write(0, large) is None
    finally:
        slots.remove()
    assert not Path(slots.path).exists()


def test_the_worker_sends_what_parse_batches_makes(tmp_path: Path) -> None:
    journal = tmp_path / "journal.txt"
    # Lines of about 2 KB make batches of several MB, so some exceed a slot and take the pipe.
    padding = ", x: " + "7" * 1800
    journal.write_text("\n".join(JOURNAL_LINE.format(s=i % 60, n=i) + (padding if i % 3 == 0 else "")
                                 for i in range(60_000)) + "\n")
    plan = ParsePlan(describe(journal), 0, 1, 1, "journal-short", TimeContext(2026), "2026-03-01")
    in_process = [(p.line_no, typed_batch(p.tables, stats=True)) for p in parse_batches(plan)]
    # Each table is compared as soon as it arrives: a slot is reused once the next batch is asked for.
    # The worker may have typed a batch's statistics already, so both sides are compared fully typed.
    through_worker = 0
    sent = WorkerParse(plan, parse_batches, functools.partial(typed_batch, stats=True))
    with contextlib.closing(sent):
        for (line_no, expected), parsed in zip(in_process, sent, strict=True):
            assert parsed.line_no == line_no
            received = typed_batch(parsed.tables, stats=True)
            assert sorted(received) == sorted(expected)
            for name, table in expected.items():
                assert received[name].equals(table), name
            through_worker += 1
    assert through_worker == len(in_process) > 1


def test_statistics_typed_in_the_worker_or_the_main_process_are_the_same(tmp_path: Path) -> None:
    """The worker types a batch's statistics when the main process is behind; the rows must not differ."""
    journal = tmp_path / "journal.txt"
    with journal.open("w") as f:
        synth.write_journal(f, 20_000, 5)
    plan = ParsePlan(describe(journal), 0, 1, 1, "journal-short", TimeContext(2026), "2026-03-01")
    stats_rows = 0
    for parsed in parse_batches(plan):
        in_main = typed_batch(parsed.tables, stats=True)
        # Typed in the worker, then passed through the main process's typing.
        in_worker = typed_batch(typed_batch(parsed.tables, stats=True), stats=True)
        assert in_worker.keys() == in_main.keys()
        for name, table in in_worker.items():
            assert table.equals(in_main[name]), name
            assert "_stats" not in table.column_names
        stats_rows += in_main["decode_batches"].num_rows if "decode_batches" in in_main else 0
    assert stats_rows > 1000


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _parse_workers(pid: int) -> list[int]:
    """Worker processes of the ingest `pid`: spawned children, or children of its forkserver."""
    def cmdline(p: int) -> str:
        try:
            return Path(f"/proc/{p}/cmdline").read_text()
        except OSError:
            return ""
    workers = []
    for child in _children(pid):
        if "spawn_main" in cmdline(child):
            workers.append(child)
        elif "forkserver" in cmdline(child):
            workers += _children(child)
    return workers


@pytest.fixture(scope="module")
def worker_sized_journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A journal large enough to be parsed in the worker process (WORKER_MIN_BYTES)."""
    journal = tmp_path_factory.mktemp("worker") / "journal.txt"
    with journal.open("w") as f:
        for i in range(WORKER_MIN_BYTES // 180 + 1000):
            f.write(JOURNAL_LINE.format(s=i % 60, n=i) + "\n")
    return journal


def _ingest_with_worker(journal: Path, db: Path, *options: str,
                        logmine: tuple[str, ...] = ("-m", "logmine")) -> tuple[subprocess.Popen, list[int]]:
    """`logmine ingest` started on `journal`, once its parse worker runs: (the ingest, its workers)."""
    ingest = subprocess.Popen([sys.executable, *logmine, "ingest", str(journal), "--db", str(db), "--json",
                               *options], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    workers: list[int] = []
    while not workers and time.monotonic() < deadline and ingest.poll() is None:
        time.sleep(0.05)
        workers = _parse_workers(ingest.pid)
    assert workers, "the worker process did not start"
    return ingest, workers


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_ingest_leaves_no_worker_and_no_shared_file(tmp_path: Path, worker_sized_journal: Path) -> None:
    ingest, workers = _ingest_with_worker(worker_sized_journal, tmp_path / "t.duckdb")
    ingest.send_signal(signal.SIGKILL)
    ingest.communicate()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in workers):
        time.sleep(0.2)
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers)
    assert not list(Path("/dev/shm").glob(f"logmine-batches-{ingest.pid}-*"))  # other tests may be making theirs


def test_an_ingest_through_the_worker_stores_what_one_in_process_stores(tmp_path: Path, monkeypatch) -> None:
    """The whole path, batches held across slots included: every table's rows, compared in line order."""
    piece = io.StringIO()
    synth.write_journal(piece, 20_000, 5)  # one server start each: rare events in every few batches
    journal = tmp_path / "journal.txt"
    journal.write_text(piece.getvalue() * (WORKER_MIN_BYTES // len(piece.getvalue()) + 1))
    through_worker, in_process = tmp_path / "w.duckdb", tmp_path / "p.duckdb"
    api.ingest([str(journal)], db=through_worker)
    monkeypatch.setattr(ingest_module, "WORKER_MIN_BYTES", journal.stat().st_size + 1)
    api.ingest([str(journal)], db=in_process)
    tables = ingest_module.LOG_TABLES + ["runs"]
    with duckdb.connect(str(through_worker), read_only=True) as a, duckdb.connect(str(in_process), read_only=True) as b:
        for table in tables:
            query = f"SELECT * EXCLUDE (source_id) FROM {table} ORDER BY ALL"
            assert a.execute(query).fetchall() == b.execute(query).fetchall(), table
        assert a.execute("SELECT count(*) FROM capacity").fetchall()[0][0] > 1


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm")
def test_a_slot_file_left_by_a_killed_ingest_is_swept_by_the_next(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphan = Path("/dev/shm") / f"logmine-batches-{dead.pid}-abcdefgh"
    mine = Path("/dev/shm") / f"logmine-batches-{os.getpid()}-abcdefgh"
    orphan.write_bytes(b"x")
    mine.write_bytes(b"x")
    try:
        shared = SharedSlots.create(1, 4096)
        assert shared is not None
        shared.remove()
        assert not orphan.exists()
        assert mine.exists()  # its maker lives
    finally:
        orphan.unlink(missing_ok=True)
        mine.unlink(missing_ok=True)


def _exits_at_once(plan: object) -> Iterator[object]:
    os._exit(3)
    yield plan


def test_a_worker_gone_without_a_word_is_reported_not_waited_for() -> None:
    worker = WorkerParse(None, _exits_at_once, functools.partial(typed_batch, stats=True))
    with contextlib.closing(worker), pytest.raises(WorkerDied, match="exited with status 3 before it finished"):
        next(iter(worker))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_an_ingest_whose_worker_is_killed_fails_that_input_in_one_line(tmp_path: Path,
                                                                       worker_sized_journal: Path) -> None:
    ingest, workers = _ingest_with_worker(worker_sized_journal, tmp_path / "t.duckdb")
    os.kill(workers[0], signal.SIGKILL)
    _, err = ingest.communicate(timeout=60)
    assert ingest.returncode == INPUT_FAILED
    assert err == f"logmine: {worker_sized_journal}: the parse worker process was killed by SIGKILL (as by the " \
                  "out-of-memory killer) before it finished\n"
    assert not (tmp_path / "t.duckdb").exists()  # none of its rows kept: an ingest that stores nothing leaves no file


@pytest.mark.parametrize("how, jobs", [("stdin", 2), ("a script without a __name__ guard", 2), ("stdin", 3)])
def test_a_python_script_ingests_through_the_worker(tmp_path: Path, worker_sized_journal: Path, how: str,
                                                    jobs: int) -> None:
    """multiprocessing has a worker run the caller's main script first: a script read from stdin named a
    file that does not exist, and one without a guard would ingest again; either way the worker died
    before its first batch and the ingest waited for ever (`--jobs 2`'s worker) or failed with a traceback
    (the pool of `--jobs 3`, here over two files)."""
    db = tmp_path / "t.duckdb"
    paths = [str(worker_sized_journal)] + ([str(JOURNAL)] if jobs > 2 else [])
    script = ("from logmine import api\n"
              f"report = api.ingest({paths!r}, db={str(db)!r}, jobs={jobs})\n"
              "print(sum(source.lines_read for source in report.logs.sources), report.logs.failed)\n")
    if how == "stdin":
        done = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=120)
    else:
        (tmp_path / "job.py").write_text(script)
        done = subprocess.run([sys.executable, str(tmp_path / "job.py")], capture_output=True, text=True,
                              timeout=120)
    lines = WORKER_MIN_BYTES // 180 + 1000 + (len(JOURNAL.read_bytes().splitlines()) if jobs > 2 else 0)
    assert (done.stdout, done.returncode) == (f"{lines} []\n", 0), done.stderr


def _task_of_a_pool(seconds: float) -> float:
    if seconds < 0:
        os._exit(9)  # as the out-of-memory killer leaves it: no word to the pool
    time.sleep(seconds)
    return seconds


def test_a_broken_pool_ends_every_process_it_started() -> None:
    """The executor starts its processes as tasks are handed out, and one started while it broke was
    joined without being ended: the ingest waited for ever at the pool's end (seen in CI under load). Here
    the pool breaks while its tasks are still being handed out and its processes still starting."""
    with _pool(3, 6) as pool:
        results = pool.map(_task_of_a_pool, [-1.0] + [0.2] * 5)
        found = [_next_parse(results) for _ in range(6)]
    assert pool.broken
    assert None in found and all(result in (None, 0.2) for result in found)
    assert not [p for p in multiprocessing.active_children() if p.is_alive()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_pool_process_leaves_its_files_to_this_process(tmp_path: Path, worker_sized_journal: Path) -> None:
    """A `--jobs` pool whose process was killed (the out-of-memory killer, say) is broken for every file it
    had: they are read in the main process instead, and the summary says so. It ended in a traceback."""
    folder = tmp_path / "logs"
    folder.mkdir()
    for name in ("a.log", "b.log"):
        with (folder / name).open("w") as out:
            out.write(worker_sized_journal.read_text() + JOURNAL_LINE.format(s=1, n=len(name)) + f" {name}\n")
    ingest, workers = _ingest_with_worker(folder, tmp_path / "t.duckdb", "--jobs", "3")
    os.kill(workers[0], signal.SIGKILL)
    out, err = ingest.communicate(timeout=120)
    assert (ingest.returncode, err) == (0, ""), err
    sources = json.loads(out)["sources"]
    assert [s["lines_read"] for s in sources] == [WORKER_MIN_BYTES // 180 + 1001] * 2
    assert POOL_LOST in [s["note"] for s in sources]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_pool_process_killed_amid_byte_ranges_leaves_the_file_to_this_process(tmp_path: Path,
                                                                               worker_sized_journal: Path) -> None:
    """The same for one file cut into byte ranges (`--jobs` from 3, here at any size): the ranges stored
    are dropped and the file is read here, as it was, but now the summary says why."""
    any_size = ("import sys\nfrom logmine.ingest.jobs import ranges\nfrom logmine.__main__ import start\n"
                "ranges.SPLIT_MIN_BYTES = 1\nsys.argv[0] = 'logmine'\nstart()\n")
    db = tmp_path / "t.duckdb"
    ingest, workers = _ingest_with_worker(worker_sized_journal, db, "--jobs", "3", logmine=("-c", any_size))
    os.kill(workers[0], signal.SIGKILL)
    out, err = ingest.communicate(timeout=120)
    assert (ingest.returncode, err) == (0, ""), err
    (source,) = json.loads(out)["sources"]
    assert (source["lines_read"], source["note"]) == (WORKER_MIN_BYTES // 180 + 1000, POOL_LOST)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*), count(DISTINCT line_no) FROM lines").fetchone() == \
            (WORKER_MIN_BYTES // 180 + 1000,) * 2
