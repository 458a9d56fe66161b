"""Why each run ended: its root cause (the first decisive failure across ranks and processes), what
followed from it, and the start-up phase it died in.

The signs of a failure are the run's errors (tracebacks, C++ aborts), the fatal lines libraries print
outside any traceback (NVSHMEM, NCCL, HCCL), SGLang's own shutdown lines and systemd's verdicts. Each is
put in a family (`parsers/failure_families.py`); the signs that only follow a failure elsewhere (a
controller's `EOFError`, a SIGQUIT from a child, a dead rank) are consequences, and are the cause only
when nothing decisive came before them. Signs are ordered by line, which is the order they were written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import duckdb

from ..parsers import failure_families as families
from ..parsers.sglang_formats import TRAFFIC_KINDS
from ..store import execute

FAMILY_REGEXES = [(f, re.compile(f.regex)) for f in families.FAMILIES]
CONSEQUENCE = re.compile(families.CONSEQUENCE)
KEYBOARD_INTERRUPT = re.compile(r"KeyboardInterrupt\b")
EXIT_TRACE = re.compile(families.EXIT_TRACE)
# SGLang's shutdown lines that say a run died, and systemd's verdicts that do (a clean stop is no sign).
SHUTDOWN_SIGNS = ("sigquit", "rank_dead", "exit_code", "subprocess_crashed", "watchdog_timeout", "not_enough_memory")
SYSTEMD_SIGNS = ("systemd_oom_kill",)
# The start-up phases, each entered at the first line of one of these kinds (in the order a start goes
# through them), named as load-time and the report name them.
PHASES = (("init_distributed_begin", "distributed init"), ("load_weight_begin", "weights"),
          ("load_weight_end", "KV pool"), ("kv_cache_allocated", "KV pool"), ("memory_pool_end", "after KV pool"),
          ("hicache_host_alloc", "HiCache host pool"), ("host_memory_short", "HiCache host pool"),
          ("cuda_graph_begin", "CUDA graphs"),
          ("cuda_graph_end", "after CUDA graphs"), ("uvicorn_started", "warmup"), ("warmup", "warmup"))
PHASE_KINDS = tuple(kind for kind, _ in PHASES)
# The lines of one source a failure's words may be in: all but the serving traffic, whose whole text a
# batch or access pattern typed. Traffic is most of a long log, so leaving it out first (in a subquery,
# which DuckDB filters before it runs the regex) takes most of the scans' time away. Only the lines from
# $first to $last are read: those of the runs asked about.
def _sql_list(kinds: Iterable[str]) -> str:
    return ", ".join(repr(kind) for kind in kinds)


SIGN_LINES = (f"(SELECT * FROM lines WHERE source_id = $source AND line_no BETWEEN $first AND $last "
              f"AND (kind IS NULL OR kind NOT IN ({_sql_list(TRAFFIC_KINDS)})))")
# A capture's progress bar names the batch size (decode graphs) or token count (prefill graphs) it is at.
GRAPH_BATCH = re.compile(r"Capturing (?:batches \((bs)=|num tokens \((num_tokens)=)(\d+)")
# A scheduler that dies takes the server down within a second or two (SIGQUIT, `kill_process_tree`): batches
# logged this long after an error show the server lived on.
OUTLIVED_SECONDS = 10
BATCH_KINDS = ("prefill_batch", "decode_batch")


@dataclass
class Sign:
    line_no: int
    last_line_no: int
    ts: object
    rank: str
    text: str  # the line that says what failed: an exception's last line, a library's fatal line
    source: str  # error, line (a fatal line), shutdown, systemd or exit (an exit-time warning)
    family: str | None = None
    consequence: bool = False


@dataclass
class Cause:
    sign: Sign | None = None
    consequences: list[Sign] = field(default_factory=list)
    exit_trace: int | None = None  # the line of an exit-time warning, when the process ended unannounced
    failed_phase: str | None = None
    # A test harness's tracebacks, the failures the server outlived (`outlived`) and what an operator's stop
    # brought about (`stopped_by_operator`): no sign of a failure.
    not_failures: set[int] = field(default_factory=set)
    interrupted: int | None = None  # the line of a KeyboardInterrupt (Ctrl-C) that ended the run

    def words(self) -> str | None:
        """`communication set-up: <line>`; None without a cause."""
        if self.sign is None:
            return None
        family = family_words(self.sign.family)
        return f"{family}: {self.sign.text}" if family else self.sign.text


# How a sentence says a run died in a phase: `while capturing CUDA graphs (at bs 8)`.
PHASE_WORDS = {"distributed init": "during distributed init", "weights": "while loading weights",
               "KV pool": "while allocating the KV pool", "after KV pool": "after allocating the KV pool",
               "HiCache host pool": "while allocating the HiCache host pool",
               "CUDA graphs": "while capturing CUDA graphs", "after CUDA graphs": "after capturing CUDA graphs",
               "warmup": "during warmup"}


def phase_words(phase: str | None) -> str | None:
    """`while capturing CUDA graphs (at bs 8)` for `CUDA graphs at bs 8`; None for no phase."""
    if not phase:
        return None
    base, _, at = phase.partition(" at ")
    words = PHASE_WORDS.get(base, f"in {base}")
    return f"{words} (at {at})" if at else words


def family_words(name: str | None) -> str | None:
    return next((f.words for f in families.FAMILIES if f.name == name), None)


def family_of(text: str) -> str | None:
    return next((f.name for f, regex in FAMILY_REGEXES if regex.search(text)), None)


def rank_label(row: dict) -> str:
    return " ".join(f"{tag}{row[col]}" for tag, col in (("DP", "dp"), ("PP", "pp"), ("TP", "tp"), ("EP", "ep"))
                    if row.get(col) is not None)


def find_causes(con: duckdb.DuckDBPyConnection, source_id: int, bounds: list[tuple[int, int]]) -> list[Cause]:
    """One `Cause` per run, given each run's (first line, last line) in order. Only the lines of those runs are
    read: the open runs of a grown source are a small part of it."""
    if not bounds:
        return []
    window = {"source": source_id, "first": bounds[0][0], "last": bounds[-1][1]}
    signs = sorted(read_signs(con, window), key=lambda s: s.line_no)
    exit_texts = [(n, EXIT_TRACE.search(text)[0]) for n, text in execute(con, f"""
        SELECT line_no, message FROM {SIGN_LINES} WHERE regexp_matches(message, $exit) ORDER BY line_no""",
        {**window, "exit": families.EXIT_TRACE})]
    exit_traces = [n for n, _ in exit_texts]
    # HiCache's refusal of its host pool is a line inside the scheduler's traceback: read from its event.
    # (SGLang's `SIGTERM received` read with them: what follows it is the stop's, `stopped_by_operator`)
    milestones = execute(con, """
        SELECT line_no, kind FROM lines
        WHERE source_id = $source AND line_no BETWEEN $first AND $last AND list_contains($phases, kind)
        UNION ALL SELECT line_no, kind FROM host_cache
        WHERE source_id = $source AND line_no BETWEEN $first AND $last AND kind = 'host_memory_short'
        ORDER BY line_no""", {**window, "phases": [*PHASE_KINDS, "sigterm"]})
    sigterms = [n for n, kind in milestones if kind == "sigterm"]
    milestones = [m for m in milestones if m[1] != "sigterm"]
    graph_lines = execute(con, f"""
        SELECT line_no, message FROM {SIGN_LINES} WHERE message LIKE '%Capturing %' ORDER BY line_no""", window)
    # (any kind: the bar a crash interrupts shares its line with the crash's first words)
    harness = harness_errors(con, window)
    causes = []
    for first, last in bounds:
        inside = [s for s in signs if first <= s.line_no <= last]
        stopped, interrupted = stopped_by_operator(inside, [n for n in sigterms if first <= n <= last])
        gone = outlived([s for s in inside if s.line_no not in stopped], con, source_id, last) | stopped
        inside = [s for s in inside if s.line_no not in gone]
        cause = Cause(not_failures={n for n in harness if first <= n <= last} | gone,
                      interrupted=None if inside else interrupted)
        decisive = [s for s in inside if not s.consequence]
        cause.sign = decisive[0] if decisive else (inside[0] if inside else None)
        cause.consequences = [s for s in inside if s is not cause.sign]
        traces = [n for n in exit_traces if first <= n <= last]
        cause.exit_trace = traces[0] if traces else None
        if cause.sign is None and traces:
            # Nothing failed, yet the process ended: killed from outside (a timeout, an operator, a script).
            text = next(t for n, t in exit_texts if n == traces[0])
            cause.sign = Sign(traces[0], traces[0], None, "", text, "exit", "killed")
        died_at = cause.sign.last_line_no if cause.sign else (cause.exit_trace or last)
        cause.failed_phase = phase_at([m for m in milestones if first <= m[0] <= died_at],
                                      [g for g in graph_lines if first <= g[0] <= died_at])
        causes.append(cause)
    return causes


def stopped_by_operator(signs: list[Sign], sigterms: list[int]) -> tuple[set[int], int | None]:
    """The first lines of the signs an operator's stop brought about, and the line of the Ctrl-C that ended the
    run: every sign after SGLang's `SIGTERM received` (children killed while they drain), and a
    `KeyboardInterrupt` traceback (each process's, after a Ctrl-C) with no decisive failure before it."""
    stopped = {s.line_no for s in signs if sigterms and s.line_no > sigterms[0]}
    interrupts = [s for s in signs if s.source == "error" and KEYBOARD_INTERRUPT.match(s.text)]
    failed_before = [s for s in signs if not s.consequence and s.line_no not in stopped
                     and (not interrupts or s.line_no < interrupts[0].line_no)]
    if interrupts and not failed_before:
        stopped |= {s.line_no for s in signs if s.line_no >= interrupts[0].line_no}
        return stopped, interrupts[0].line_no
    return stopped, None


def outlived(signs: list[Sign], con: duckdb.DuckDBPyConnection, source_id: int, last: int) -> set[int]:
    """The first lines of the signs the server outlived, which are no failure of it:
    - a library's line that reads as fatal, when the server was ready or served after it (NCCL's
      `ibv_open_device failed for mlx5_3, skipping` while the other devices come up);
    - an error, when the server was ready after it, or its schedulers still logged batches OUTLIVED_SECONDS
      after it (a request's `Exception in ASGI application`): a scheduler that dies takes the server down
      within a second or two."""
    candidates = [s for s in signs if s.source in ("line", "error")]
    if not candidates:
        return set()
    traffic, batches = _sql_list(TRAFFIC_KINDS), _sql_list(BATCH_KINDS)
    ready, last_traffic, last_batch, last_batch_ts = execute(con, f"""
        SELECT list(line_no) FILTER (kind = 'server_ready'), max(line_no) FILTER (kind IN ({traffic})),
               max(line_no) FILTER (kind IN ({batches})), arg_max(ts, line_no) FILTER (kind IN ({batches}))
        FROM lines WHERE source_id = $source AND line_no BETWEEN $first AND $last
        AND (kind = 'server_ready' OR kind IN ({traffic}))""",
        {"source": source_id, "first": candidates[0].line_no, "last": last})[0]
    gone = set()
    for sign in candidates:
        ready_after = any(n > sign.line_no for n in ready or [])
        served_after = last_traffic is not None and last_traffic > sign.line_no
        batches_long_after = (last_batch is not None and last_batch > sign.last_line_no and sign.ts is not None
                              and (last_batch_ts - sign.ts).total_seconds() > OUTLIVED_SECONDS)
        if ready_after or (served_after if sign.source == "line" else batches_long_after):
            gone.add(sign.line_no)
    return gone


def phase_at(milestones: list[tuple[int, str]], graph_lines: list[tuple[int, str]]) -> str | None:
    """The start-up phase the last milestone before a failure opened (`CUDA graphs at bs 8` with the batch
    size the capture's progress bar last showed); None before the first milestone."""
    names = dict(PHASES)
    if not milestones:
        return None
    line_no, kind = milestones[-1]
    phase = names[kind]
    if kind == "cuda_graph_begin":
        sizes = [m for n, text in graph_lines if n >= line_no for m in GRAPH_BATCH.findall(text)]
        if sizes:
            bs, tokens, size = sizes[-1]
            phase += f" at {bs or tokens} {size}"
    return phase


def harness_errors(con: duckdb.DuckDBPyConnection, window: dict[str, int]) -> set[int]:
    """The first lines of a test harness's tracebacks (see `failure_families.HARNESS_FRAME`) in the `window`
    (`source`, `first` and `last` line)."""
    return {row[0] for row in execute(con, """
        SELECT first_line_no FROM errors WHERE source_id = $source AND first_line_no BETWEEN $first AND $last
        AND regexp_matches(text, $harness)""", {**window, "harness": families.HARNESS_FRAME})}


def read_signs(con: duckdb.DuckDBPyConnection, window: dict[str, int]) -> list[Sign]:
    """The signs of failure in the `window` (`source`, `first` and `last` line); errors that reach into it
    from before too, since a shutdown line inside one is that error's."""
    signs = []
    for row in dict_rows(con, """
            SELECT first_line_no, last_line_no, ts, dp, pp, tp, ep, last_line, text FROM errors
            WHERE source_id = $source AND first_line_no <= $last AND coalesce(last_line_no, first_line_no) >= $first
              AND NOT regexp_matches(text, $harness)""", {**window, "harness": families.HARNESS_FRAME}):
        headline = row["last_line"] or ""
        sign = Sign(row["first_line_no"], row["last_line_no"], row["ts"], rank_label(row), headline, "error")
        sign.consequence = bool(CONSEQUENCE.search(headline))
        sign.family = family_of(headline) or (None if sign.consequence else family_of(row["text"] or ""))
        signs.append(sign)
    # Fatal lines outside tracebacks: a traceback's own lines are its error's.
    for row in dict_rows(con, f"""
            SELECT line_no, ts, dp, pp, tp, ep, message FROM {SIGN_LINES}
            WHERE kind IS DISTINCT FROM 'error' AND kind IS DISTINCT FROM 'traceback'
              AND regexp_matches(message, $fatal)""", {**window, "fatal": families.FATAL_LINE}):
        text = strip_prefix(row["message"])
        signs.append(Sign(row["line_no"], row["line_no"], row["ts"], rank_label(row), text, "line",
                          family_of(text)))
    # A shutdown line inside a traceback (`RuntimeError: Not enough memory ...`) is that error's, not a sign.
    inside_errors = [(s.line_no, s.last_line_no) for s in signs]
    for row in dict_rows(con, """
            SELECT line_no, l.ts, l.dp, l.pp, l.tp, l.ep, e.kind, l.message FROM shutdown_events AS e
            JOIN lines AS l USING (source_id, line_no)
            WHERE source_id = $source AND line_no BETWEEN $first AND $last AND list_contains($kinds, e.kind)""",
            {**window, "kinds": list(SHUTDOWN_SIGNS)}):
        if any(first <= row["line_no"] <= last for first, last in inside_errors):
            continue
        text = strip_prefix(row["message"])
        sign = Sign(row["line_no"], row["line_no"], row["ts"], rank_label(row), text, "shutdown", family_of(text))
        sign.consequence = row["kind"] in ("sigquit", "rank_dead", "exit_code") or bool(CONSEQUENCE.search(text))
        signs.append(sign)
    for row in dict_rows(con, """
            SELECT line_no, l.ts, l.message FROM systemd AS e JOIN lines AS l USING (source_id, line_no)
            WHERE source_id = $source AND line_no BETWEEN $first AND $last AND list_contains($kinds, e.kind)""",
            {**window, "kinds": list(SYSTEMD_SIGNS)}):
        signs.append(Sign(row["line_no"], row["line_no"], row["ts"], "", row["message"], "systemd", "host_memory"))
    return signs


PREFIX = re.compile(r"^\[[^\]]*\d\d:\d\d:\d\d[^\]]*\] (?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+:\d+: )?")


def strip_prefix(message: str) -> str:
    """A line's text after SGLang's `[time ranks]` prefix."""
    return PREFIX.sub("", message.strip(), count=1)


def dict_rows(con: duckdb.DuckDBPyConnection, sql: str, params: list | dict) -> list[dict]:
    cursor = con.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
