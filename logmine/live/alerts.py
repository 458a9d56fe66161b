"""Alerts: rules judged over the database after each `logmine follow` commit, each condition raised once.

A rule is data (`alert_rules.toml` holds the built-in ones; `--rules FILE` adds or replaces rules by
name, and `enabled = false` turns one off). Its condition is SQL over the typed tables and views, over a
named query's result (`query = "load-time"` makes it the table `q`), or a check written in Python
(`check = "NAME"`, one of CHECKS). Each row the condition gives is one condition met, and must have:

- `key`: what makes it one condition (a run, a traceback's first line): a key raised once is never
  raised again, even after a restart of `follow`;
- `source_id`, `line_no`: the evidence line, shown with the alert as `file:line` and its text;
- with a `for` duration, `since` and `until`: the condition is raised once it has held that long.

Any other column fills the `message` template (`{run}`, `{detail}`). Alerts are stored in the `alerts`
table in the transaction of the commit that raised them, then sent to the sinks (the terminal, a
JSON-lines file, a command reading the alert as JSON on stdin); `delivered` is set once they are sent,
so a follow killed in between sends them at its next start.
"""

from __future__ import annotations

import json
import re
import string
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import IO

import duckdb
import tomllib

from ..parsers.failure_families import FAMILIES
from ..query import named_queries
from ..store import create_table, execute, has_table

ALERTS_COLUMNS = {
    "alert_id": "VARCHAR PRIMARY KEY", "rule": "VARCHAR", "key": "VARCHAR", "severity": "VARCHAR",
    "message": "VARCHAR", "source_id": "INTEGER", "line_no": "BIGINT", "evidence": "VARCHAR",
    "evidence_text": "VARCHAR", "event_at": "TIMESTAMP", "raised_at": "TIMESTAMP", "data": "JSON",
    "delivered": "BOOLEAN",
}
SEVERITIES = ("info", "warning", "error", "critical")
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*$")
UNITS = {"s": 1, "m": 60, "h": 3600, None: 1}
EVIDENCE_CHARS = 600


class RuleError(ValueError):
    """A rules file that cannot be used: one line naming the file and the rule."""


@dataclass
class Rule:
    name: str
    severity: str
    message: str
    sql: str | None = None
    query: str | None = None  # a named query whose result the SQL reads as `q`
    check: str | None = None  # one of CHECKS
    for_s: float | None = None
    enabled: bool = True
    origin: str = "built-in"

    def rows(self, con: duckdb.DuckDBPyConnection) -> list[dict]:
        """The conditions met now, one dict per row."""
        if self.check:
            return CHECKS[self.check](con)
        sql = self.sql or ""
        if self.query:
            inner = named_queries._as_subquery(named_queries.text(self.query))
            rest = sql.lstrip()
            # The rule's own common table expressions follow `q` in one WITH.
            rest = f", {rest[4:]}" if rest[:4].upper() == "WITH" and rest[4:5].isspace() else f"\n{rest}"
            sql = f"WITH q AS (\n{inner}\n){rest}"
        found = named_queries.fetch(con, sql)
        return [dict(zip(found.columns, row, strict=True)) for row in found.rows]


@dataclass
class Alert:
    alert_id: str
    rule: str
    key: str
    severity: str
    message: str
    source_id: int | None
    line_no: int | None
    evidence: str | None  # file:line
    evidence_text: str | None
    event_at: datetime | None
    raised_at: datetime
    data: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"alert_id": self.alert_id, "rule": self.rule, "key": self.key, "severity": self.severity,
                "message": self.message, "evidence": self.evidence, "evidence_text": self.evidence_text,
                "event_at": _iso(self.event_at), "raised_at": _iso(self.raised_at),
                "data": {k: _jsonable(v) for k, v in self.data.items()}}


def builtin_rules() -> list[Rule]:
    return parse_rules((resources.files("logmine.live") / "alert_rules.toml").read_text(), "built-in")


def load_rules(path: str | Path | None, builtins: bool = True) -> list[Rule]:
    """The built-in rules (unless not `builtins`), with the rules of `path` added, or replacing a
    built-in rule of the same name."""
    rules = {r.name: r for r in builtin_rules()} if builtins else {}
    if path is not None:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise RuleError(f"{path}: cannot read ({exc.strerror})") from None
        for rule in parse_rules(text, str(path)):
            rules[rule.name] = rule
    return [r for r in rules.values() if r.enabled]


def parse_rules(text: str, origin: str) -> list[Rule]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RuleError(f"{origin}: not TOML ({exc})") from None
    rules = []
    for number, item in enumerate(data.get("rule", []), start=1):
        name = item.get("name") or f"rule {number}"
        where = f"{origin}: rule {name!r}"
        unknown = set(item) - {"name", "severity", "message", "sql", "query", "check", "for", "enabled"}
        if unknown:
            raise RuleError(f"{where}: unknown keys {', '.join(sorted(unknown))}")
        if sum(k in item for k in ("sql", "check")) != 1:
            raise RuleError(f"{where}: needs one of `sql` or `check`")
        if item.get("check") and item["check"] not in CHECKS:
            raise RuleError(f"{where}: no check {item['check']!r}; known: {', '.join(CHECKS)}")
        if item.get("query") and item["query"] not in named_queries.names():
            raise RuleError(f"{where}: no named query {item['query']!r}")
        severity = item.get("severity", "warning")
        if severity not in SEVERITIES:
            raise RuleError(f"{where}: severity {severity!r} is not one of {', '.join(SEVERITIES)}")
        if "message" not in item:
            raise RuleError(f"{where}: needs a `message`")
        rules.append(Rule(name, severity, item["message"], item.get("sql"), item.get("query"), item.get("check"),
                          parse_duration(item["for"], where) if "for" in item else None,
                          bool(item.get("enabled", True)), origin))
    return rules


def parse_duration(value: object, where: str) -> float:
    """`90`, `"90s"`, `"5m"`, `"1h"` -> seconds."""
    found = DURATION.match(str(value))
    if not found:
        raise RuleError(f"{where}: `for` = {value!r} is not a duration such as 90s, 5m or 1h")
    return float(found[1]) * UNITS[found[2]]


def judge(con: duckdb.DuckDBPyConnection, rules: list[Rule]) -> list[Alert]:
    """Every condition met now and never raised before, stored in `alerts` (undelivered)."""
    create_table(con, "alerts", ALERTS_COLUMNS)
    define_family_words(con)
    raised_keys = set(execute(con, "SELECT rule, key FROM alerts"))
    now = datetime.now()
    new: list[Alert] = []
    for rule in rules:
        try:
            rows = rule.rows(con)
        except duckdb.Error as exc:
            raise RuleError(f"{rule.origin}: rule {rule.name!r}: {str(exc).splitlines()[0]}") from None
        for row in rows:
            key = str(row.get("key"))
            if (rule.name, key) in raised_keys or not _held_long_enough(rule, row):
                continue
            raised_keys.add((rule.name, key))
            new.append(_alert(con, rule, key, row, now))
    for alert in new:
        execute(con, "INSERT INTO alerts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, false)",
                [alert.alert_id, alert.rule, alert.key, alert.severity, alert.message, alert.source_id,
                 alert.line_no, alert.evidence, alert.evidence_text, alert.event_at, alert.raised_at,
                 json.dumps(alert.as_dict()["data"])])
    return new


def define_family_words(con: duckdb.DuckDBPyConnection) -> None:
    """The SQL macro `family_words(cause_family)`: how the report names a failure family ('timeout or hang'),
    from `failure_families`, for the rules' messages."""
    cases = " ".join(f"WHEN {_sql_text(f.name)} THEN {_sql_text(f.words)}" for f in FAMILIES)
    execute(con, f"CREATE OR REPLACE TEMP MACRO family_words(name) AS CASE name {cases} "
                 "ELSE replace(name, '_', ' ') END")


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _held_long_enough(rule: Rule, row: dict) -> bool:
    if rule.for_s is None:
        return True
    since, until = row.get("since"), row.get("until")
    return since is not None and until is not None and (until - since).total_seconds() >= rule.for_s


def _alert(con: duckdb.DuckDBPyConnection, rule: Rule, key: str, row: dict, now: datetime) -> Alert:
    source_id, line_no = row.get("source_id"), row.get("line_no")
    evidence = text = event_at = None
    if source_id is not None and line_no is not None:
        found = execute(con, """SELECT s.display, l.message, l.ts FROM lines l JOIN sources s USING (source_id)
                                WHERE l.source_id = ? AND l.line_no = ?""", [source_id, line_no])
        if found:
            display, message, event_at = found[0]
            evidence, text = f"{display}:{line_no}", (message or "")[:EVIDENCE_CHARS]
            row.setdefault("source", display)
    event_at = row.get("ts") or event_at
    return Alert(f"{rule.name}:{key}", rule.name, key, rule.severity, _fill(rule.message, row), source_id,
                 line_no, evidence, text, event_at, now,
                 {k: v for k, v in row.items() if k not in ("key", "source_id", "line_no")})


class _Template(string.Formatter):
    def get_value(self, key: object, args: object, kwargs: dict) -> object:
        value = kwargs.get(key) if isinstance(key, str) else None
        return "?" if value is None else value

    def format_field(self, value: object, format_spec: str) -> str:
        try:
            return super().format_field(value, format_spec)
        except (ValueError, TypeError):
            return str(value)


def _fill(template: str, row: dict) -> str:
    try:
        return _Template().format(template, **row)
    except (ValueError, IndexError, KeyError):
        return template


def undelivered(con: duckdb.DuckDBPyConnection) -> list[Alert]:
    """The alerts stored but not yet sent (a follow killed between its commit and its sinks)."""
    if not has_table(con, "alerts"):
        return []
    rows = execute(con, """SELECT alert_id, rule, key, severity, message, source_id, line_no, evidence, evidence_text,
                                  event_at, raised_at, data FROM alerts WHERE NOT delivered ORDER BY raised_at""")
    return [Alert(*row[:11], json.loads(row[11]) if row[11] else {}) for row in rows]


def mark_delivered(con: duckdb.DuckDBPyConnection, alert_ids: list[str]) -> None:
    execute(con, "UPDATE alerts SET delivered = true WHERE alert_id IN (SELECT unnest(?))", [alert_ids])


class Sink:
    def send(self, alert: Alert) -> None:
        raise NotImplementedError


class TerminalSink(Sink):
    """One line per alert: severity, message, evidence."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream or sys.stdout

    def send(self, alert: Alert) -> None:
        where = f" ({alert.evidence})" if alert.evidence else ""
        self.stream.write(f"ALERT {alert.severity}: {alert.message}{where}\n")
        self.stream.flush()


class JsonLinesSink(Sink):
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def send(self, alert: Alert) -> None:
        with self.path.open("a") as out:
            out.write(json.dumps(alert.as_dict()) + "\n")


class CommandSink(Sink):
    """`--on-alert CMD`: the command run by the shell once per alert, the alert as JSON on its stdin."""

    def __init__(self, command: str, on_error: Callable[[str], None] | None = None) -> None:
        self.command, self.on_error = command, on_error

    def send(self, alert: Alert) -> None:
        try:
            done = subprocess.run(self.command, shell=True, input=json.dumps(alert.as_dict()).encode(),
                                  timeout=30, check=False, capture_output=True)
            failure = f"exit status {done.returncode}" if done.returncode else None
        except subprocess.TimeoutExpired:
            failure = "still running after 30 s"
        if failure and self.on_error:
            self.on_error(f"--on-alert command: {failure} for alert {alert.alert_id}")


def host_pool_beyond_memory(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """A HiCache host pool larger than the host memory available to it, from what the tables give: SGLang's
    own refusal (`Not enough host memory available. Requesting X GB but only have Y GB free`), or a rank's
    pool larger than the free figure the host reported before (SGLang checks each rank's request alone, so
    a pool is compared per rank, not summed over the ranks).
    Kept in one function so that it can ask the host-memory audit of `logmine plan` instead."""
    return [dict(zip(("key", "source_id", "line_no", "run", "requested_gb", "free_gb", "ts"), row, strict=True))
            for row in execute(con, """
        WITH refused AS (
            SELECT source_id, run, min(line_no) AS line_no, max(requested_gb) AS requested_gb,
                   min(free_gb) AS free_gb, min(ts) AS ts
            FROM host_cache_by_run WHERE kind = 'host_memory_short' AND requested_gb > free_gb GROUP BY ALL
        ),
        free_seen AS (SELECT source_id, line_no, free_gb FROM host_cache WHERE free_gb IS NOT NULL),
        allocated AS (
            SELECT source_id, run, min(line_no) AS line_no, max(host_gb) AS requested_gb, min(ts) AS ts
            FROM host_cache_by_run WHERE kind = 'hicache_host_alloc' AND host_gb IS NOT NULL GROUP BY ALL
        ),
        too_big AS (
            SELECT a.source_id, a.run, a.line_no, a.requested_gb,
                   (SELECT f.free_gb FROM free_seen f WHERE f.source_id = a.source_id AND f.line_no < a.line_no
                    ORDER BY f.line_no DESC LIMIT 1) AS free_gb, a.ts
            FROM allocated a
        )
        SELECT source_id || ':' || run, source_id, line_no, run, round(requested_gb, 2), free_gb, ts FROM refused
        UNION ALL
        SELECT source_id || ':' || run, source_id, line_no, run, round(requested_gb, 2), free_gb, ts FROM too_big
        WHERE free_gb IS NOT NULL AND requested_gb > free_gb
            AND NOT EXISTS (SELECT 1 FROM refused r WHERE r.source_id = too_big.source_id AND r.run = too_big.run)
        ORDER BY 2, 3""")]


CHECKS: dict[str, Callable[[duckdb.DuckDBPyConnection], list[dict]]] = {
    "host_pool_beyond_memory": host_pool_beyond_memory,
}


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _jsonable(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
