"""`logmine follow`: keep the database current while the server runs.

What is followed is read by the ingest itself, batch after batch, so the tables are those a single
`logmine ingest` of the same lines gives:

- a journal (`--unit`, `--journal-file`, `--journal-dir`): `journalctl -o json --all --show-cursor -f`
  runs beside us; its entries are appended to a spool file beside the database
  (`DB.follow/NAME.journal.json`), which is then ingested as the journal-json file it is (an ingest
  of a grown file reads only what was added). The cursor of the last entry, with the spool's length
  at that entry, is stored in `follow_positions` inside the transaction that stores the rows it covers:
  a follow killed at any moment restarts from the last commit, cuts the spool back to the length that
  commit covered and asks `journalctl --after-cursor` for the rest, so no entry is lost or read twice.
- plain files and folders (PATH...): each is ingested again when it grew, as `tail -F` would read it: a
  file renamed away (`server.log` -> `server.log.1`, SGLang's hourly `<host>_<rank>.log.YYYY-MM-DD_HH`)
  is read to its end under its new name first (the source identity knows it by its content), then the
  new file at the old name; a file truncated in place is read again from its start, and the ingest keeps
  the rows read before as an earlier generation (`NAME@N`, `inputs.identity.retire_generation`).
  Transcripts among them (a Claude Code project folder, a Codex sessions folder, an opencode database)
  are ingested again when they change.

A batch is committed when `BATCH_LINES` journal entries wait or `BATCH_SECONDS` after the first of them
came; files are looked at every `POLL_SECONDS`, and committed `BATCH_SECONDS` after a change was first seen
or once they grew by `BATCH_BYTES`. Between commits the database is closed: readers
(`logmine query`, `report`, notebooks) open it read-only then, and wait for the commit when they come
during one (`store.connect`). Alerts (`logmine.live.alerts`) are judged inside each commit's transaction.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ..parsers.sglang_formats import TRAFFIC_KINDS
from ..store import create_table, execute, has_table, lock_holder
from . import alerts as alert_rules

BATCH_LINES = 20_000
BATCH_SECONDS = 1.0
BATCH_BYTES = 8 << 20  # files that grew by this much are committed without waiting for BATCH_SECONDS
POLL_SECONDS = 0.25
WRITE_WAIT_S = 0.1  # between tries when a reader holds the database at a commit
POSITIONS_COLUMNS = {"spool": "VARCHAR PRIMARY KEY", "cursor": "VARCHAR", "spool_bytes": "BIGINT",
                     "entries": "BIGINT", "committed_at": "TIMESTAMP"}
# Lines that say nothing of the phase a run is in: its serving traffic and notices.
UNPHASED_KINDS = (*TRAFFIC_KINDS, "notice")


class FollowError(Exception):
    """Following cannot start or go on (journalctl missing or failing, a bad option): one line to the user."""


@dataclass
class JournalSpec:
    """Which journal to follow: a systemd unit of this host's journal, one journal file or a folder of them."""

    unit: str | None = None
    file: str | None = None
    directory: str | None = None

    def name(self) -> str:
        """The spool's name: what is followed, so that `logmine runs` names the source after it."""
        if self.unit:
            return f"{self.unit}.journal.json"
        given = Path(self.file or self.directory or "journal")
        return f"{given.name.removesuffix('.journal')}.journal.json"

    def command(self, after_cursor: str | None) -> list[str]:
        journalctl = shutil.which("journalctl")
        if journalctl is None:
            raise FollowError("journalctl not found: following a journal needs systemd's journalctl")
        command = [journalctl, "-o", "json", "--all", "--show-cursor", "--follow", "--no-pager"]
        if self.unit:
            command += ["--unit", self.unit]
        # Absolute: `journalctl -f --file NAME` fails to watch a relative name ("Failed to get journal fd").
        if self.file:
            command += ["--file", str(Path(self.file).resolve())]
        if self.directory:
            command += ["--directory", str(Path(self.directory).resolve())]
        # Without a cursor, the whole journal: --no-tail, where -f alone starts at its last 10 entries.
        command += [f"--after-cursor={after_cursor}"] if after_cursor else ["--no-tail"]
        return command


class JournalFeed:
    """`journalctl -f` as a queue of its JSON lines, read by a thread; `-- cursor:` lines are left out (each
    entry carries its own `__CURSOR`)."""

    def __init__(self, command: list[str]) -> None:
        self.lines: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        # In a session of its own, so that Ctrl-C in the terminal stops us (after the commit under way), not
        # it; and told to end when we do, even by SIGKILL.
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        stdin=subprocess.DEVNULL, start_new_session=True,
                                        preexec_fn=end_with_parent)
        self.errors: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_errors, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith(b"{"):
                self.lines.put(line if line.endswith(b"\n") else line + b"\n")
        self.lines.put(None)  # journalctl ended

    def _read_errors(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.errors.append(line.decode(errors="replace").strip())

    def take(self, at_most: int, wait: float) -> tuple[list[bytes], bool]:
        """Up to `at_most` waiting lines, waiting at most `wait` seconds for the first; and whether
        journalctl has ended."""
        taken: list[bytes] = []
        try:
            line = self.lines.get(timeout=wait) if wait > 0 else self.lines.get_nowait()
            while True:
                if line is None:
                    return taken, True
                taken.append(line)
                if len(taken) >= at_most:
                    return taken, False
                line = self.lines.get_nowait()
        except queue.Empty:
            return taken, False

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def end_with_parent() -> None:
    """In the child, before exec: SIGTERM when the parent dies (Linux's PR_SET_PDEATHSIG)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG


def entry_cursor(line: bytes) -> str:
    """The `__CURSOR` of one `journalctl -o json` entry."""
    return json.loads(line)["__CURSOR"]


@dataclass
class Spool:
    """The journal's entries as journalctl printed them, in the file that is ingested."""

    path: Path
    cursor: str | None = None  # of the last entry committed
    length: int = 0  # the spool's bytes up to and including that entry
    entries: int = 0
    pending: list[bytes] = field(default_factory=list)  # taken from journalctl, not yet committed
    first_pending_at: float | None = None

    @property
    def key(self) -> str:
        """Its name in `follow_positions`: the absolute path, whatever the folder follow was started in."""
        return str(self.path.resolve())

    def resume(self, con: duckdb.DuckDBPyConnection | None) -> None:
        """Where the last commit stopped; the spool is cut back to it (what a killed follow wrote after
        its last commit is asked of journalctl again)."""
        if con is not None and has_table(con, "follow_positions"):
            found = execute(con, "SELECT cursor, spool_bytes, entries FROM follow_positions WHERE spool = ?",
                            [self.key])
            if found:
                self.cursor, self.length, self.entries = found[0]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as spool:
            spool.truncate(self.length)

    def write_pending(self) -> tuple[str, int, int]:
        """Append the pending entries to the spool, on disk before the commit that covers them; the
        position after them."""
        with open(self.path, "ab") as spool:
            spool.truncate(self.length)  # a commit that failed (a reader held the file) had written them
            spool.writelines(self.pending)
            spool.flush()
            os.fsync(spool.fileno())
            length = spool.tell()
        return entry_cursor(self.pending[-1]), length, self.entries + len(self.pending)

    def store_position(self, con: duckdb.DuckDBPyConnection, cursor: str, length: int, entries: int) -> None:
        create_table(con, "follow_positions", POSITIONS_COLUMNS)
        execute(con, "DELETE FROM follow_positions WHERE spool = ?", [self.key])
        execute(con, "INSERT INTO follow_positions VALUES (?, ?, ?, ?, now())", [self.key, cursor, length, entries])

    def committed(self, cursor: str, length: int, entries: int) -> None:
        self.cursor, self.length, self.entries = cursor, length, entries
        self.pending, self.first_pending_at = [], None


@dataclass
class WatchedFile:
    """What was last seen of a followed file: its identity and size."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    head: bytes  # its first bytes: a file rewritten from its start (truncated, then written past its old size)


HEAD_BYTES = 1024


def _watched(path: str) -> WatchedFile:
    st = os.stat(path)
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
    return WatchedFile(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, head)


class FileWatch:
    """The plain files and folders given as PATH: which to ingest again now, in which order."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        self.seen: dict[str, WatchedFile] = {}
        self.pending: dict[str, None] = {}  # the files to ingest at the next commit, in order
        self.pending_since: float | None = None
        self.pending_bytes = 0  # what they grew by

    def poll(self) -> None:
        """Add what changed since the last poll to the files to ingest at the next commit."""
        found = self.changes()
        if found and not self.pending:
            self.pending_since = time.monotonic()
        self.pending.update(dict.fromkeys(found))

    def due(self, seconds: float) -> bool:
        """Whether the files waiting should be committed: they waited `seconds`, or grew by BATCH_BYTES."""
        return bool(self.pending) and (time.monotonic() - self.pending_since >= seconds
                                       or self.pending_bytes >= BATCH_BYTES)

    def take(self) -> list[str]:
        taken, self.pending, self.pending_bytes = list(self.pending), {}, 0
        return taken

    def changes(self) -> list[str]:
        """The files to ingest now: each file renamed away from a followed name (under its new name, read to
        its end first), then every file new or changed since last seen."""
        from ..inputs.sources import classify_inputs

        found = classify_inputs(self.paths)
        current = found.logs + [str(p) for p, _ in found.transcripts]
        now: dict[str, WatchedFile] = {}
        for path in current:
            with contextlib.suppress(OSError):
                now[path] = _watched(path)
        by_inode = {(w.device, w.inode): path for path, w in now.items()}
        rotated, changed = [], []
        for path, before in self.seen.items():
            after = now.get(path)
            moved_to = by_inode.get((before.device, before.inode))
            if moved_to is None:
                moved_to = _find_inode(Path(path).parent, before.device, before.inode)
            if moved_to and moved_to != path and (after is None or after.inode != before.inode):
                rotated.append(moved_to)
            if after and after.inode == before.inode and (after.size < before.size
                                                          or not after.head.startswith(before.head)):
                self.pending_bytes += after.size  # read again from its start: the ingest keeps the old generation
        for path, after in now.items():
            before = self.seen.get(path)
            if before is None or (before.inode, before.size, before.mtime_ns) != (after.inode, after.size,
                                                                                  after.mtime_ns):
                changed.append(path)
                self.pending_bytes += max(0, after.size - (before.size if before else 0))
        for path in rotated:
            with contextlib.suppress(OSError):
                now[path] = _watched(path)
        self.seen = now
        return list(dict.fromkeys(rotated + changed))

def _find_inode(folder: Path, device: int, inode: int) -> str | None:
    """The file of this folder with this identity: where a rotated log went (`server.log.1`)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            with contextlib.suppress(OSError):
                st = entry.stat(follow_symlinks=False)
                if (st.st_dev, st.st_ino) == (device, inode) and entry.is_file(follow_symlinks=False):
                    return entry.path
    return None


@dataclass
class Commit:
    """What one commit stored: lines per source, the alerts it raised, the time it took."""

    lines: int
    entries: int
    alerts: list[alert_rules.Alert]
    seconds: float
    status: dict | None


@dataclass
class Follower:
    """Follows a journal and/or files into the database `db` until `stop()` (or journalctl ends)."""

    db: str
    journal: JournalSpec | None = None
    paths: list[str] = field(default_factory=list)
    rules: list[alert_rules.Rule] = field(default_factory=alert_rules.builtin_rules)
    sinks: list[alert_rules.Sink] = field(default_factory=list)
    on_commit: Callable[[Commit], None] | None = None
    on_wait: Callable[[str], None] | None = None  # told once while a reader holds the database
    batch_lines: int = BATCH_LINES
    batch_seconds: float = BATCH_SECONDS
    stopping: bool = False
    committed_once: bool = False  # the first commit derives everything again; the later ones, the open runs

    def stop(self) -> None:
        """Stop after the commit under way (a signal handler may call it)."""
        self.stopping = True

    def stop_on_signals(self) -> None:
        """Ctrl-C and SIGTERM stop after the commit under way (for a command; a notebook calls `stop`)."""
        def stop(signum: int, frame: object) -> None:
            self.stop()

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)

    def run(self) -> None:
        spool = Spool(Path(f"{self.db}.follow") / self.journal.name()) if self.journal else None
        watch = FileWatch(self.paths) if self.paths else None
        with self._connection(read_only=True) as con:
            if spool:
                spool.resume(con)
        self._deliver_left_over()
        feed = JournalFeed(self.journal.command(spool.cursor)) if self.journal and spool else None
        try:
            self._loop(spool, watch, feed)
            if spool and spool.pending:  # stopped: what journalctl had given is stored before leaving
                self._commit(spool, None, [])
        finally:
            if feed:
                feed.stop()

    def _loop(self, spool: Spool | None, watch: FileWatch | None, feed: JournalFeed | None) -> None:
        next_poll = 0.0
        ended = False
        while not self.stopping:
            if feed and not ended:
                wait = self.batch_seconds if not spool.pending else max(
                    0.0, spool.first_pending_at + self.batch_seconds - time.monotonic())
                wait = min(wait, POLL_SECONDS) if watch else wait
                taken, ended = feed.take(self.batch_lines - len(spool.pending), wait)
                if taken and not spool.pending:
                    spool.first_pending_at = time.monotonic()
                spool.pending += taken
            elif not self.stopping:
                time.sleep(POLL_SECONDS if watch else 0.05)
            due = spool is not None and spool.pending and (
                ended or len(spool.pending) >= self.batch_lines
                or time.monotonic() - spool.first_pending_at >= self.batch_seconds)
            if watch and time.monotonic() >= next_poll:
                watch.poll()
                next_poll = time.monotonic() + POLL_SECONDS
            files_due = watch is not None and watch.due(self.batch_seconds)
            if due or files_due:
                self._commit(spool if due else None, watch, watch.take() if files_due else [])
            if ended and not spool.pending and not self.stopping:
                # `journalctl -f` ends only when it fails (it may say so with exit status 0).
                feed.process.wait()
                detail = "; ".join(feed.errors[-2:]) or f"exit status {feed.process.returncode}"
                raise FollowError(f"journalctl ended: {detail}")

    def _commit(self, spool: Spool | None, watch: FileWatch | None, files: list[str]) -> None:
        from ..ingest.transaction import ingest

        started = time.monotonic()
        position = spool.write_pending() if spool else None
        inputs = ([str(spool.path)] if spool else []) + files
        raised: list[alert_rules.Alert] = []
        status: dict | None = None

        def in_transaction(con: duckdb.DuckDBPyConnection, stage: str) -> None:
            nonlocal raised, status
            if stage == "before":
                return
            if spool and position:
                spool.store_position(con, *position)
            raised = alert_rules.judge(con, self.rules)
            status = current_status(con)

        waited = False
        while True:
            try:
                report = ingest(inputs, db=self.db, jobs=1, in_transaction=in_transaction,
                                    open_runs_only=self.committed_once)
                break
            except duckdb.IOException as exc:
                holder = lock_holder(exc)
                if holder is None:
                    raise
                if not waited and self.on_wait:
                    self.on_wait(f"waiting: process {holder[1]} ({' '.join(holder[2].split())[:60]}) has the "
                                 "database open")
                waited = True
                time.sleep(WRITE_WAIT_S)
        self.committed_once = True
        if spool and position:
            spool.committed(*position)
        self._deliver(raised)
        lines = sum(s.lines_read for s in report.logs.sources)
        if self.on_commit:
            self.on_commit(Commit(lines, len(inputs), raised, time.monotonic() - started, status))

    def _deliver(self, raised: list[alert_rules.Alert]) -> None:
        """Send the alerts the commit stored to every sink, then mark them sent (a follow killed between the
        two sends them again at its start, rather than never)."""
        if not raised:
            return
        for sink in self.sinks:
            for alert in raised:
                sink.send(alert)
        with self._connection(read_only=False) as con:
            alert_rules.mark_delivered(con, [a.alert_id for a in raised])

    def _deliver_left_over(self) -> None:
        with self._connection(read_only=True) as con:
            left = alert_rules.undelivered(con) if con is not None else []
        self._deliver(left)

    @contextlib.contextmanager
    def _connection(self, read_only: bool) -> Iterator[duckdb.DuckDBPyConnection | None]:
        """The database for a moment, waiting while a reader holds it; None when there is none yet."""
        from ..store import connect

        if read_only and not Path(self.db).exists():
            yield None
            return
        while True:
            try:
                con = connect(self.db, read_only=read_only)
                break
            except duckdb.IOException as exc:
                if lock_holder(exc) is None:
                    raise
                time.sleep(WRITE_WAIT_S)
        try:
            yield con
        finally:
            con.close()


def current_status(con: duckdb.DuckDBPyConnection) -> dict | None:
    """The latest run of the database: its phase, elapsed time, KV pool and serving figures."""
    if not has_table(con, "runs"):
        return None
    rows = execute(con, """
        SELECT r.source_id, s.display, r.ordinal, r.started_at, r.ready_at, r.ended_at, r.end_reason,
               r.last_seen_at, r.first_line_no, r.last_line_no, r.decode_batches, r.http_requests
        FROM runs r JOIN sources s USING (source_id)
        ORDER BY coalesce(r.last_seen_at, r.started_at) DESC NULLS LAST, r.source_id DESC, r.ordinal DESC LIMIT 1""")
    if not rows:
        return None
    (source_id, display, ordinal, started_at, ready_at, ended_at, end_reason, last_seen_at, first, last,
     decode_batches, http_requests) = rows[0]
    in_run = [source_id, first, last]
    phase = execute(con, f"""SELECT kind FROM lines WHERE source_id = ? AND line_no BETWEEN ? AND ? AND kind IS NOT NULL
                            AND kind NOT IN ({', '.join('?' for _ in UNPHASED_KINDS)})
                            ORDER BY line_no DESC LIMIT 1""", [*in_run, *UNPHASED_KINDS])
    kv = execute(con, """SELECT tokens, coalesce(kv_size_gib, k_size_gib + v_size_gib) FROM kv_cache
                         WHERE source_id = ? AND line_no BETWEEN ? AND ?
                         AND tokens IS NOT NULL ORDER BY line_no LIMIT 1""", in_run) \
        if has_table(con, "kv_cache") else []
    serving = execute(con, """SELECT running_req, queue_req, token_usage, gen_throughput_tok_s FROM decode_batches
                              WHERE source_id = ? AND line_no BETWEEN ? AND ? ORDER BY line_no DESC LIMIT 1""",
                      in_run) if has_table(con, "decode_batches") else []
    end = ended_at or last_seen_at
    state = end_reason if end_reason != "running" else ("serving" if ready_at else "starting")
    status = {"source": display, "run": ordinal, "state": state, "last_event": phase[0][0] if phase else None,
              "started_at": str(started_at) if started_at else None,
              "elapsed_s": (end - started_at).total_seconds() if end and started_at else None,
              "load_s": (ready_at - started_at).total_seconds() if ready_at and started_at else None,
              "kv_tokens": kv[0][0] if kv else None, "kv_gib": kv[0][1] if kv else None,
              "decode_batches": decode_batches, "http_requests": http_requests}
    if serving:
        status.update(zip(("running_req", "queue_req", "token_usage", "gen_throughput_tok_s"), serving[0],
                          strict=True))
    return status
