"""Classify one SGLang message: strip its prefix, find its event kind, extract typed fields.

`parse_prefix` reads the `[date time.ms RANKS]` bracket (§1 of the format notes); `Classifier` looks
the body up in the pattern table of `sglang_formats` (dispatching on the first characters so a line
is tried against a handful of patterns, not all); `TracebackAssembler` groups the unprefixed lines
of tracebacks and C++ aborts into one error, even when two ranks' tracebacks interleave.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import sglang_formats as formats
from .vector_columns import bounded_int, bounded_ints, cut, data_bytes, flags, ints, offsets, patch, spans

PREFIX = re.compile(
    r"\[(?:(?P<date>\d{4}-\d\d-\d\d) )?(?P<time>\d\d:\d\d:\d\d)(?:[.,](?P<ms>\d{3}))?"
    r"(?P<ranks>(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)(?: (?:encode_server|encode_dp_worker\[\d+\]))?\] ?"
    # A foreign root handler prints `LEVEL file.py:N:`; uvicorn prints a padded `INFO:`.
    r"(?:(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<logger>[\w.]+:\d+): |"
    r"(?P<uvlevel>DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+)?"
)
BARE_UVICORN = re.compile(r"(?P<uvlevel>INFO|WARNING|ERROR|DEBUG|CRITICAL):\s{2,}")
RAY_PREFIX = re.compile(r"\((?:\w+) pid=\d+(?:, ip=[\d.]+)?\) ")
RANK_TAG = re.compile(r"(DP|PP|ATTN_CP|MOE_DP|TP|EP)(\d+)")
RANK_COLUMNS = {"DP": "dp", "PP": "pp", "ATTN_CP": "attn_cp", "MOE_DP": "moe_dp", "TP": "tp", "EP": "ep"}
RANK_MAX = 32767
# Where a `\r`-joined progress bar hides an SGLang line, the line starts at a dated bracket.
EMBEDDED_PREFIX = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{3})?(?: [A-Z_]+\d+)*\] ")
# A progress bar's percentage: tqdm's `45%|`, or `45% Completed |` of SGLang's weight-loading bar. Its
# description is the text before it, back to a `|` or `\r`.
PERCENT_BAR = re.compile(r"\d{1,3}%(?:\|| Completed \|)")
WORD = re.compile(r"\w+")
JOURNAL_MARKER = re.compile(r"-- (?:Boot \w+|Reboot|Logs begin at .*|Journal begins at .*|No entries) --$")
BLOB = re.compile(r"\[(?P<size>[\d.]+[KMG]?B?) blob data\]$")
HEAD_CHARS = 4


@dataclass
class Prefix:
    date: str | None = None
    time: str | None = None
    ms: str | None = None
    ranks: dict[str, int] = field(default_factory=dict)
    level: str | None = None
    logger: str | None = None


def parse_prefix(message: str) -> tuple[Prefix | None, str]:
    """Split `[2026-03-01 23:45:58 TP0] body` into the prefix and the body (None when absent)."""
    if message.startswith("("):
        ray = RAY_PREFIX.match(message)
        if ray:
            message = message[ray.end():]
    if not message.startswith("["):
        bare = BARE_UVICORN.match(message)
        if bare:
            return Prefix(level=bare["uvlevel"]), message[bare.end():]
        return None, message
    m = PREFIX.match(message)
    if not m:
        return None, message
    ranks = _ranks_of(m["ranks"]) if m["ranks"] else {}
    prefix = Prefix(m["date"], m["time"], m["ms"], ranks, m["level"] or m["uvlevel"], m["logger"])
    return prefix, message[m.end():]


@dataclass
class Prefixes:
    """`parse_prefix` of a block of messages, as columns (text columns are null where absent)."""

    body: pa.StringArray
    prefixed: np.ndarray  # the bracket with a time was found
    date: pa.StringArray
    time: pa.StringArray
    ms: pa.StringArray
    level: pa.StringArray
    logger: pa.StringArray
    ranks: dict[str, pa.Int64Array]


PREFIX_RE2 = f"^(?P<_head>{PREFIX.pattern})"
BARE_UVICORN_RE2 = f"^(?:{BARE_UVICORN.pattern})(?P<_body>.*)"
RAY_PREFIX_RE2 = f"^{RAY_PREFIX.pattern}"
PREFIX_FIELDS = ("date", "time", "ms", "level", "logger")


def parse_prefixes(messages: pa.StringArray, ascii_rows: np.ndarray) -> Prefixes:
    """`parse_prefix` over a block: by position where the bracket has its usual shape, else with RE2;
    non-ASCII rows go through `parse_prefix` itself."""
    slow = np.nonzero(~ascii_rows)[0]
    ray = np.nonzero(pc.starts_with(messages, "(").to_numpy(zero_copy_only=False) & ascii_rows)[0]
    if len(ray):
        stripped = pc.replace_substring_regex(messages.take(pa.array(ray)), RAY_PREFIX_RE2, "", max_replacements=1)
        messages = patch(messages, ray, stripped)
    prefixed, cols, head_len = _bracket_prefixes(messages, ascii_rows)
    todo = np.nonzero(ascii_rows & ~prefixed & flags(pc.starts_with(messages, "[")))[0]
    if len(todo):
        _regex_prefixes(messages, todo, prefixed, cols, head_len)
    body = cut(messages, head_len)
    level = cols["level"]
    bare_rows = np.nonzero(~prefixed & ascii_rows & ~pc.starts_with(messages, "[").to_numpy(zero_copy_only=False))[0]
    if len(bare_rows):
        bare = pc.extract_regex(messages.take(pa.array(bare_rows)), BARE_UVICORN_RE2)
        hit = bare.is_valid().to_numpy(zero_copy_only=False)
        if hit.any():
            found = bare.filter(pa.array(hit))
            level = patch(level, bare_rows[hit], found.field("uvlevel"))
            body = patch(body, bare_rows[hit], found.field("_body"))
    out = Prefixes(body, prefixed, cols["date"], cols["time"], cols["ms"], level, cols["logger"],
                   {column: cols[column] for column in RANK_COLUMNS.values()})
    if len(slow):
        _patch_prefixes(out, messages, slow)
    return out


BRACKET_STAMP_RE2 = r"^\[(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d(?:[.,]\d{3})?[ \]]"
BRACKET_TAGS = re.compile(r"(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*(?: (?:encode_server|encode_dp_worker\[\d+\]))?")
LEVEL_WORD = re.compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)[ :]")
LEVEL_REGION = 16
UVICORN_LEVEL = re.compile(r"(DEBUG|INFO|WARNING|ERROR|CRITICAL):[\t\n\f\r ]+")  # RE2's \s


def _bracket_prefixes(messages: pa.StringArray, ascii_rows: np.ndarray
                      ) -> tuple[np.ndarray, dict[str, pa.Array], np.ndarray]:
    """(prefixed, columns, head length) of the rows whose bracket is `[date time.ms TAGS] `.

    The date, time and milliseconds sit at fixed columns and the rank tags take a handful of values per
    file, so only the distinct tags meet a regex; other rows are left unprefixed for the RE2 pass.
    """
    n = len(messages)
    binary = messages.cast(pa.binary())
    close = ints(pc.find_substring(messages, "]"))
    fast = ascii_rows & (close > 0) & flags(pc.match_substring_regex(messages, BRACKET_STAMP_RE2))
    dated = flags(pc.equal(pc.binary_slice(binary, 5, 6), b"-"))
    has_ms = np.where(dated, flags(pc.is_in(pc.binary_slice(binary, 20, 21), MS_SEPARATORS)),
                      flags(pc.is_in(pc.binary_slice(binary, 9, 10), MS_SEPARATORS)))
    time_at = np.where(dated, 12, 1)
    tags_at = np.where(fast, time_at + 8 + 4 * has_ms, 0)
    close = np.where(fast, close, 0)
    tags = cut(messages, tags_at, close).dictionary_encode()
    tag_index = ints(tags.indices)
    parsed = [BRACKET_TAGS.fullmatch(text) and _ranks_of(text) for text in tags.dictionary.to_pylist()]
    fast &= np.array([p is not None for p in parsed], dtype=bool)[tag_index]
    index = pa.array(tag_index)
    null = pa.scalar(None, pa.string())
    valid = pa.array(fast)

    def at(start: np.ndarray, stop: np.ndarray, rows: np.ndarray) -> pa.StringArray:
        return pc.if_else(pa.array(rows), cut(messages, np.where(rows, start, 0), np.where(rows, stop, 0)), null)

    cols: dict[str, pa.Array] = {
        "date": at(np.ones(n), np.full(n, 11), fast & dated),
        "time": at(time_at, time_at + 8, fast),
        "ms": at(time_at + 9, time_at + 12, fast & has_ms),
        "level": pa.nulls(n, pa.string()),
        "logger": pa.nulls(n, pa.string()),
    }
    for column in RANK_COLUMNS.values():
        values = pa.array([(p or {}).get(column) for p in parsed], pa.int64()).take(index)
        cols[column] = pc.if_else(valid, values, pa.scalar(None, pa.int64()))
    space = flags(pc.equal(at(close + 1, close + 2, fast), " "))
    head_len = np.where(fast, close + 1 + space, 0)
    # Rows whose bracket is followed by a level word may carry the foreign `LEVEL file.py:N:` shape or
    # uvicorn's padded `INFO:     `: both are read from the few distinct texts after the bracket; uvicorn's
    # is typed here, the foreign shape is left to the RE2 pass.
    after = at(head_len, head_len + LEVEL_REGION, fast).dictionary_encode()
    texts = after.dictionary.to_pylist()
    region = ints(after.indices, len(texts))  # len(texts): not a fast row
    leveled = np.array([LEVEL_WORD.match(text) is not None for text in texts] + [False], dtype=bool)[region]
    if leveled.any():
        levels = [UVICORN_LEVEL.match(text) for text in texts] + [None]
        known = np.array([m is not None and m.end() < LEVEL_REGION for m in levels], dtype=bool)[region]
        fast &= ~leveled | known
        uvicorn = leveled & known
        cols["level"] = pc.if_else(pa.array(uvicorn), pa.array([m and m[1] for m in levels], pa.string()).take(
            pa.array(region)), null)
        head_len += np.where(uvicorn, np.array([m.end() if m else 0 for m in levels])[region], 0)
    return fast, cols, head_len


MS_SEPARATORS = pa.array([b".", b","])


def _ranks_of(tags: str) -> dict[str, int]:
    """Rank tags as columns (a repeated tag keeps its last value; a number too large for the SMALLINT
    rank columns is no rank, and is left out)."""
    ranks = {RANK_COLUMNS[tag]: bounded_int(n, RANK_MAX + 1) for tag, n in RANK_TAG.findall(tags)}
    return {column: n for column, n in ranks.items() if n is not None}


def _regex_prefixes(messages: pa.StringArray, rows: np.ndarray, prefixed: np.ndarray, cols: dict[str, pa.Array],
                    head_len: np.ndarray) -> None:
    """PREFIX with RE2 on `rows` (brackets of a rarer shape), written into the block's columns."""
    m = pc.extract_regex(messages.take(pa.array(rows)), PREFIX_RE2)
    hit = m.is_valid().to_numpy(zero_copy_only=False)
    if not hit.any():
        return
    m = m.filter(pa.array(hit))
    rows = rows[hit]
    null = pa.scalar(None, pa.string())
    found = {name: pc.if_else(pc.equal(m.field(name), ""), null, m.field(name)) for name in
             ("date", "ms", "ranks", "level", "logger", "uvlevel")}
    found["time"] = m.field("time")
    found["level"] = pc.coalesce(found["level"], found.pop("uvlevel"))
    found.update(_rank_columns(found.pop("ranks")))
    for name, values in found.items():
        cols[name] = patch(cols[name], rows, values)
    prefixed[rows] = True
    head_len[rows] = ints(pc.binary_length(m.field("_head")))


def _rank_columns(ranks: pa.StringArray) -> dict[str, pa.Int64Array]:
    """`RANK_TAG.findall` per row as one column per tag (a repeated tag keeps its last value)."""
    out = {}
    for tag, column in RANK_COLUMNS.items():
        has = pc.fill_null(pc.match_substring(ranks, f" {tag}"), False)
        if not pc.any(has).as_py():
            out[column] = pa.nulls(len(ranks), pa.int64())
            continue
        value = pc.extract_regex(ranks, rf"^.* {tag}(?P<n>\d+)").field("n")
        out[column] = pc.if_else(has, bounded_ints(value, RANK_MAX + 1), pa.scalar(None, pa.int64()))
    return out


def _patch_prefixes(out: Prefixes, messages: pa.StringArray, rows: np.ndarray) -> None:
    parsed = [parse_prefix(messages[int(i)].as_py()) for i in rows]
    out.body = patch(out.body, rows, pa.array([body for _, body in parsed], pa.string()))
    out.prefixed[rows] = [p is not None and p.time is not None for p, _ in parsed]
    for name in PREFIX_FIELDS:
        values = pa.array([getattr(p, name) if p else None for p, _ in parsed], pa.string())
        setattr(out, name, patch(getattr(out, name), rows, values))
    for column in RANK_COLUMNS.values():
        values = pa.array([p.ranks.get(column) if p else None for p, _ in parsed], pa.int64())
        out.ranks[column] = patch(out.ranks[column], rows, values)


def literal_head(regex: str) -> str:
    """The fixed text a pattern starts with (empty when it starts with a group or class)."""
    out = []
    i = 0
    while i < len(regex):
        c = regex[i]
        if c == "\\" and i + 1 < len(regex) and not regex[i + 1].isalnum():
            out.append(regex[i + 1])
            i += 2
            continue
        if c in ".^$*+?{}[]|()\\":
            # A quantifier makes the character before it optional.
            if c in "*?{" and out:
                out.pop()
            break
        out.append(c)
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class CompiledPattern:
    spec: formats.Pattern
    regex: re.Pattern[str]
    re2: str  # the same regex anchored for RE2 (pyarrow.compute), which searches unanchored
    # A last group that runs to the end of the line (`(?P<detail>Rank \d+.*)`) is not captured by RE2,
    # which would re-scan the whole line for it: `re2` captures the text before it as `_head`, and the
    # group is cut off by position.
    tail: str | None = None


# `(?P<name>INNER.*)` closing a pattern, INNER without groups
TAIL_GROUP = re.compile(r"\(\?P<(?P<name>\w+)>(?P<inner>[^()]*)\.\*\)$")


def compile_pattern(spec: formats.Pattern) -> CompiledPattern:
    return CompiledPattern(spec, *_compiled(spec.regex))


@cache  # each LineParser (one per input, one per agent tool output) compiles the same table
def _compiled(pattern: str) -> tuple[re.Pattern[str], str, str | None]:
    regex = re.compile(pattern)
    tail = TAIL_GROUP.search(pattern)
    if tail is None:
        return regex, f"^(?:{pattern})", None
    head = pattern[:tail.start()]
    return regex, f"^(?P<_head>(?:{head})){tail['inner']}", tail["name"]


@dataclass
class Classified:
    """The kinds of a block of bodies and their event rows, per table."""

    kinds: np.ndarray  # object array: the kind of each body, None where no pattern matched
    # table -> pieces, each a pa.Table with `_row` (index in the block), `kind` and text field columns
    events: dict[str, list[pa.Table]] = field(default_factory=dict)

    def add(self, table: str, piece: pa.Table) -> None:
        if piece.num_rows:
            self.events.setdefault(table, []).append(piece)


class Classifier:
    """Find the event kind of message bodies using the declarative pattern table.

    Rows are grouped on their first characters, so each row is tried against a handful of patterns,
    and each pattern runs once over its group with RE2 (`pyarrow.compute.extract_regex`). Python
    `re` takes the rows RE2 could read differently: non-ASCII bodies (`\\d`, `\\w`, `\\s` are Unicode
    in Python). A group's empty text is stored as NULL, as is a group that did not take part (RE2
    reports both as "").
    """

    def __init__(self, patterns: Iterable[formats.Pattern] = formats.ALL_PATTERNS,
                 notice_heads: Iterable[tuple[str, str]] = formats.NOTICE_HEADS) -> None:
        self.by_head: dict[str, list[CompiledPattern]] = {}
        self.fallback: list[CompiledPattern] = []
        # Access lines are the most frequent line without a literal head: try them first.
        for spec in sorted(patterns, key=lambda p: p.kind != "http_request"):
            compiled = compile_pattern(spec)
            head = literal_head(spec.regex)
            if len(head) >= HEAD_CHARS:
                self.by_head.setdefault(head[:HEAD_CHARS], []).append(compiled)
            else:
                self.fallback.append(compiled)
        self.idents: pa.StringArray | None = None  # the block being classified: journal identifier per row
        self.notices: dict[str, list[tuple[str, str]]] = {}
        for topic, head in notice_heads:
            self.notices.setdefault(head[:HEAD_CHARS], []).append((topic, head))

    def classify(self, bodies: pa.StringArray, rows: np.ndarray, ascii_rows: np.ndarray,
                 idents: pa.StringArray | None = None) -> Classified:
        """Classify `bodies[rows]`; `ascii_rows` flags (per body) the rows RE2 reads like Python.

        `idents` (the journal identifier per row) gates patterns that name one (`Pattern.ident`).
        """
        out = Classified(np.full(len(bodies), None, dtype=object))
        self.idents = idents
        heads = pc.utf8_slice_codeunits(bodies.take(pa.array(rows, pa.int64())), 0, HEAD_CHARS)
        codes, values = _group_codes(heads)
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(values) + 1))
        unmatched = []
        for code, head in enumerate(values):
            group = rows[order[bounds[code]:bounds[code + 1]]]
            for candidate in self.by_head.get(head, ()):
                group = self._try(candidate, bodies, group, ascii_rows, out)
            for topic, text in self.notices.get(head, ()):
                group = self._try_notice(topic, text, bodies, group, out)
            unmatched.append(group)
        rest = np.sort(np.concatenate(unmatched)) if unmatched else rows
        for candidate in self.fallback:
            rest = self._try(candidate, bodies, rest, ascii_rows, out)
        return out

    @staticmethod
    def _try_notice(topic: str, text: str, bodies: pa.StringArray, rows: np.ndarray, out: Classified) -> np.ndarray:
        if not len(rows):
            return rows
        hit = pc.starts_with(bodies.take(pa.array(rows, pa.int64())), text).to_numpy(zero_copy_only=False)
        matched = rows[hit]
        out.kinds[matched] = "notice"
        n = len(matched)
        out.add("notices", pa.table({"_row": pa.array(matched, pa.int64()),
                                     "kind": pa.repeat(pa.scalar("notice"), n),
                                     "topic": pa.repeat(pa.scalar(topic), n)}))
        return rows[~hit]

    def _try(self, candidate: CompiledPattern, bodies: pa.StringArray, rows: np.ndarray, ascii_rows: np.ndarray,
             out: Classified) -> np.ndarray:
        """Match `candidate` on `rows`, record the matches, return the rows left unmatched."""
        if not len(rows):
            return rows
        spec = candidate.spec
        if spec.ident is not None:
            allowed = self._ident_rows(spec.ident, len(bodies))
            gated = rows[~allowed[rows]]
            left = self._try_rows(candidate, bodies, rows[allowed[rows]], ascii_rows, out)
            return np.sort(np.concatenate([gated, left]))
        return self._try_rows(candidate, bodies, rows, ascii_rows, out)

    def _ident_rows(self, ident: str, n: int) -> np.ndarray:
        if self.idents is None:
            return np.zeros(n, dtype=bool)
        return pc.fill_null(pc.equal(self.idents, ident), False).to_numpy(zero_copy_only=False)

    def _try_rows(self, candidate: CompiledPattern, bodies: pa.StringArray, rows: np.ndarray,
                  ascii_rows: np.ndarray, out: Classified) -> np.ndarray:
        if not len(rows):
            return rows
        spec = candidate.spec
        fast = rows[ascii_rows[rows]]
        slow = [rows[~ascii_rows[rows]]]
        hit = np.zeros(len(bodies), dtype=bool)
        if len(fast):
            sub = bodies.take(pa.array(fast, pa.int64()))
            if candidate.regex.groupindex:
                fields, ok = self._extract(candidate, sub)
                hit[fast[ok]] = True
                if not ok.all():
                    fields = {name: values.filter(pa.array(ok)) for name, values in fields.items()}
                out.add(spec.table, self._event_table(candidate, fast[ok], fields))
            else:
                ok = pc.match_substring_regex(sub, candidate.re2).to_numpy(zero_copy_only=False)
                hit[fast[ok]] = True
                out.add(spec.table, self._event_table(candidate, fast[ok], None))
        slow_rows = np.sort(np.concatenate(slow))
        if len(slow_rows):
            records = []
            for i in slow_rows:
                m = candidate.regex.match(bodies[int(i)].as_py())
                if m:
                    hit[i] = True
                    records.append(_record(candidate, int(i), m))
            if records:
                out.add(spec.table, records_table(records))
        out.kinds[rows[hit[rows]]] = spec.kind
        return rows[~hit[rows]]

    @staticmethod
    def _extract(candidate: CompiledPattern, texts: pa.StringArray) -> tuple[dict[str, pa.Array], np.ndarray]:
        """(the named groups' texts, which rows matched) of RE2 matches of `candidate` on `texts`."""
        groups = pc.extract_regex(texts, candidate.re2)
        fields = {name: groups.field(name) for name in candidate.regex.groupindex if name != candidate.tail}
        if candidate.tail:
            fields[candidate.tail] = cut(texts, ints(pc.binary_length(groups.field("_head")), 0))
        return fields, flags(groups.is_valid())

    @staticmethod
    def _event_table(candidate: CompiledPattern, rows: np.ndarray, fields: dict[str, pa.Array] | None) -> pa.Table:
        """Event rows of RE2 matches; a group's "" is NULL."""
        n = len(rows)
        columns: dict[str, pa.Array] = {"_row": pa.array(rows, pa.int64()),
                                        "kind": pa.repeat(pa.scalar(candidate.spec.kind), n)}
        for name, value in candidate.spec.const.items():
            columns[name] = pa.repeat(pa.scalar(value, pa.string()), n)
        for name in candidate.regex.groupindex:
            values = fields[name]
            columns[name] = pc.if_else(pc.equal(values, ""), pa.scalar(None, pa.string()), values)
        return pa.table(columns)


def _group_codes(heads: pa.Array) -> tuple[np.ndarray, list[str]]:
    encoded = heads.dictionary_encode()
    return encoded.indices.to_numpy(zero_copy_only=False), encoded.dictionary.to_pylist()


def _record(candidate: CompiledPattern, row: int, m: re.Match[str]) -> dict[str, object]:
    """One event row from a Python match (the fallback path)."""
    fields: dict[str, object] = {"_row": row, "kind": candidate.spec.kind, **candidate.spec.const}
    fields.update((name, value) for name, value in m.groupdict().items() if value)
    return fields


def records_table(records: list[dict[str, object]]) -> pa.Table:
    names = dict.fromkeys(k for r in records for k in r)
    schema = pa.schema([pa.field(k, pa.int64() if k == "_row" else STATS_EXTRA if k == "extra" else pa.string())
                        for k in names])
    return pa.Table.from_pylist(records, schema=schema)


# A key starts only where a run of key characters does, which keeps the search linear in the text.
STATS_PAIR = re.compile(r"(?<![^,:])([^,:]+): ([^,]*(?:, (?![^,:]+: )[^,]*)*)")
STATS_EXTRA = pa.map_(pa.string(), pa.string())
TRIM_PASSES = 8  # trailing `%`/spaces trimmed by position; a longer run goes through parse_stats


def parse_stats(text: str, known: Mapping[str, str] = formats.STATS_KEYS) -> dict[str, object]:
    """`#running-req: 1, #token: 82, cuda graph: True, ` -> typed known keys plus an `extra` map.

    A value runs to the next `, key: `, so v0.4.9 hybrid values such as `full=35, swa=35` stay whole.
    `known` maps the keys that have a column; any other key goes to `extra`.
    """
    fields: dict[str, object] = {}
    extra: dict[str, str] = {}
    repeats: Counter = Counter()

    def keep(key: str, value: str) -> None:
        # A map holds a key once: a repeated one is kept as `key (2)`, `key (3)`, ...
        unique = key
        while unique in extra:
            repeats[key] += 1
            unique = f"{key} ({repeats[key] + 1})"
        extra[unique] = value

    for key, value in STATS_PAIR.findall(text.rstrip(", ")):
        key = key.strip()
        column = known.get(key)
        if column is None or column in fields or "=" in value:
            keep(key, value.strip())
        else:
            fields[column] = value.rstrip("% ")
            if column == "graph" and key != "cuda graph":
                keep("graph_label", key)
    if extra:
        fields["extra"] = list(extra.items())
    return fields


def expand_stats(table: pa.Table, columns: Collection[str] | None = None) -> pa.Table:
    """Replace a `_stats` capture (batch statistics text) by its typed columns and `extra` map.

    Only keys whose column is in `columns` (the destination table's; all known keys when None) get
    a column: a decode-only key in a prefill line lands in `extra` rather than in no column at all.
    The classifier keeps the text whole; this step runs where the rows are typed for storage, which
    during a large ingest is the process that is not busy matching patterns.
    """
    if "_stats" not in table.column_names:
        return table
    stats_keys = {k: c for k, c in formats.STATS_KEYS.items() if columns is None or c in columns}
    stats = table.column("_stats").combine_chunks()
    return _with_stats(table.drop_columns(["_stats"]), stats, stats_keys)


def _with_stats(table: pa.Table, stats: pa.StringArray, stats_keys: Mapping[str, str]) -> pa.Table:
    """Add the stats columns of `stats` (one text per row of `table`), for the keys in `stats_keys`.

    A row whose pieces are all a known key and a value without `,` or `=` (nearly all) is typed
    here, by byte position; any other goes through `parse_stats`.
    """
    keys = list(stats_keys)
    columns = list(dict.fromkeys(stats_keys.values()))
    key_column = np.array([columns.index(stats_keys[k]) for k in keys] + [-1])
    stats = pc.utf8_rtrim(pc.fill_null(stats, ""), characters=", ")
    pieces = StatsPieces.of(stats)
    found = pieces.keys(stats).dictionary_encode()
    key_number = {key: i for i, key in enumerate(keys)}
    index_of = np.array([key_number.get(k, len(keys)) for k in pc.utf8_trim_whitespace(found.dictionary).to_pylist()]
                        + [len(keys)])
    # Unknown keys, other graph labels and repeated columns need the `extra` map: leave them to Python.
    index = np.where(pieces.bad, len(keys), index_of[ints(found.indices, len(index_of) - 1)])
    column = key_column[index]
    odd = (column < 0) | ((column == columns.index("graph")) & (index != keys.index("cuda graph")))
    slow = np.zeros(len(stats), dtype=bool)
    slow[pieces.parent[odd]] = True
    # A column twice in one row: the sum of the row's column bits differs from their union.
    if len(column):
        bits = np.where(column >= 0, np.left_shift(1, np.maximum(column, 0)), 0)
        row_first = np.flatnonzero(np.r_[True, pieces.parent[1:] != pieces.parent[:-1]])
        twice = np.add.reduceat(bits, row_first) != np.bitwise_or.reduceat(bits, row_first)
        slow[pieces.parent[row_first[twice]]] = True
    # Each column's value spans, one row per column; rows without that key get an empty span.
    value_start, value_stop, untrimmed = pieces.values(stats)
    slow[pieces.parent[untrimmed]] = True
    known = column >= 0
    where = column[known] * len(stats) + pieces.parent[known]  # in a (column, row) matrix, flattened
    start = np.tile(offsets(stats)[:-1], len(columns))
    stop = start.copy()
    present = np.zeros(len(start), dtype=bool)
    start[where], stop[where], present[where] = value_start[known], value_stop[known], True
    start, stop, present = (a.reshape(len(columns), len(stats)) for a in (start, stop, present))
    for c, name in enumerate(columns):
        values = spans(stats, start[c], stop[c], present[c]) if present[c].any() else pa.nulls(len(stats), pa.string())
        table = table.append_column(name, values)
    if not slow.any():
        return table
    fast_table = table.filter(pa.array(~slow))
    slow_rows = np.nonzero(slow)[0]
    slow_table = table.take(pa.array(slow_rows)).drop_columns(columns)
    parsed = records_table([parse_stats(stats[int(i)].as_py(), stats_keys) for i in slow_rows])
    for name in parsed.column_names:
        slow_table = slow_table.append_column(name, parsed.column(name))
    return pa.concat_tables([fast_table, slow_table], promote_options="permissive")


@dataclass
class StatsPieces:
    """The `key: value` pieces of stats texts, as byte positions in the texts' data buffer.

    Texts are split on `, ` and each piece on its first `: `, as `parse_stats` reads them; `bad` marks
    the pieces it might read otherwise (no `: `, a lone `,`, `=` in the value, `:` in the key).
    """

    parent: np.ndarray  # row of each piece
    start: np.ndarray
    colon: np.ndarray  # position of the first `: `, -1 when there is none
    stop: np.ndarray
    bad: np.ndarray

    @classmethod
    def of(cls, stats: pa.StringArray) -> StatsPieces:
        bounds, data = offsets(stats), data_bytes(stats)
        text = data[bounds[0]:bounds[-1]]
        space_next = np.zeros(len(text), dtype=bool)
        np.equal(text[1:], ord(" "), out=space_next[:-1])
        found = np.empty(len(text), dtype=bool)  # reused: fresh large arrays cost page faults

        def at(byte: int) -> tuple[np.ndarray, np.ndarray]:
            """Positions of `byte` followed by a space, and of `byte` not followed by one (rare)."""
            np.equal(text, byte, out=found)
            total = np.count_nonzero(found)
            np.logical_and(found, space_next, out=found)
            paired = np.flatnonzero(found) + bounds[0]
            if total == len(paired):
                return paired, paired[:0]
            return paired, np.flatnonzero((text == byte) & ~space_next) + bounds[0]

        separators, lone_commas = at(ord(","))
        begin, end = bounds[:-1], bounds[1:]
        rows = np.flatnonzero(begin < end)
        count = np.searchsorted(separators, end[rows]) - np.searchsorted(separators, begin[rows]) + 1
        first = np.r_[0, np.cumsum(count)[:-1]]
        last = first + count - 1
        start, stop = np.empty(int(count.sum()), dtype=np.int64), np.empty(int(count.sum()), dtype=np.int64)
        inner = np.ones(len(start), dtype=bool)
        inner[first] = False
        start[first], start[inner] = begin[rows], separators + 2
        inner[first], inner[last] = True, False
        stop[last], stop[inner] = end[rows], separators
        parent = np.repeat(rows, count)

        def piece_of(positions: np.ndarray, width: int = 1) -> tuple[np.ndarray, np.ndarray]:
            piece = np.searchsorted(start, positions, side="right") - 1
            inside = (piece >= 0) & (positions + width <= stop[np.maximum(piece, 0)])
            return piece[inside], positions[inside]

        colons, lone_colons = at(ord(":"))
        if len(colons) == len(start) and (colons >= start).all() and (colons + 2 <= stop).all():
            colon = colons  # one `: ` in each piece, the usual case
        else:
            colon = np.full(len(start), -1, dtype=np.int64)
            piece, pos = piece_of(colons, 2)
            head = np.r_[True, piece[1:] != piece[:-1]][:len(piece)]  # the first `: ` of each piece
            colon[piece[head]] = pos[head]
        bad = colon < 0
        piece, _ = piece_of(lone_commas)
        bad[piece] = True
        np.equal(text, ord("="), out=found)
        if found.any():
            piece, pos = piece_of(np.flatnonzero(found) + bounds[0])
            bad[piece[pos > colon[piece]]] = True
        piece, pos = piece_of(lone_colons)
        bad[piece[pos < colon[piece]]] = True
        return cls(parent, start, colon, stop, bad)

    def keys(self, stats: pa.StringArray) -> pa.StringArray:
        return spans(stats, self.start, np.where(self.bad, self.start, self.colon))

    def values(self, stats: pa.StringArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start, stop) of each piece's value, trailing `%` and spaces left out (`12.5% ` -> `12.5`),
        and which pieces end in more of them than `TRIM_PASSES` (for `parse_stats`: a pass per byte
        over every piece would take time quadratic in such a run)."""
        data = data_bytes(stats)
        start = np.where(self.bad, self.stop, self.colon + 2)
        stop = self.stop.copy()
        trim = np.zeros(len(stop), dtype=bool)
        for _ in range(TRIM_PASSES + 1):
            last = data[np.maximum(stop - 1, 0)] if len(data) else np.zeros(len(stop), dtype=np.uint8)
            trim = (stop > start) & ((last == ord("%")) | (last == ord(" ")))
            if not trim.any():
                break
            stop[trim] -= 1
        return start, stop, trim


def split_carriage_returns(message: str) -> tuple[str, str | None]:
    """For a `\\r`-joined progress-bar entry, return (the text to classify, the progress description).

    SGLang lines can begin in the middle of a physical line after a bar; so can C++ aborts.
    """
    segments = [s for s in message.split("\r") if s.strip()]
    if not segments:
        return "", None
    last = segments[-1]
    embedded = EMBEDDED_PREFIX.search(last)
    if embedded:
        return last[embedded.start():], None
    abort = last.find("terminate called after throwing")
    if abort >= 0:
        return last[abort:], None
    return last, progress_description(last)


def progress_description(text: str) -> str:
    """The description of the progress bar in `text`; its first 60 characters when it shows no bar."""
    described = bar_description(text)
    return text[:60] if described is None else described


def bar_description(text: str) -> str | None:
    """`Loading safetensors: 45%|███` -> `Loading safetensors`; None when `text` shows no progress bar.

    Found without a backtracking regex: one that looked back from the percentage took time quadratic in
    the length of a line without a bar.
    """
    bar = PERCENT_BAR.search(text)
    if not bar:
        return None
    head = text[:bar.start()].rstrip().removesuffix(":")
    return head[max(head.rfind("|"), head.rfind("\r")) + 1:].strip()


# ---------------------------------------------------------------- tracebacks

CXX_ABORT_START = re.compile(formats.CXX_ABORT_START)
FATAL_START = re.compile(formats.FATAL_START)


def opens_traceback(text: str) -> bool:
    return formats.TRACEBACK_HEADER in text


def traceback_origin(text: str) -> str | None:
    """`Scheduler` in `Scheduler hit an exception: Traceback (most recent call last):`, else None.

    The word is read backwards from the header: a regex searching for it took time quadratic in the
    length of a long run of word characters.
    """
    before = text[:text.find(formats.TRACEBACK_HEADER)]
    if not before.endswith(formats.TRACEBACK_ORIGIN_SUFFIX):
        return None
    word = WORD.match(before[:-len(formats.TRACEBACK_ORIGIN_SUFFIX)][::-1])
    return word[0][::-1] if word else None


def could_start_error(body: str) -> bool:
    """Whether a line opens a Python traceback, a C++ abort or a faulthandler dump."""
    return bool(opens_traceback(body) or CXX_ABORT_START.match(body) or FATAL_START.match(body))


EXCEPTION_SUFFIXES = ("Error", "Exception", "Exit", "Interrupt", "Warning", "Failure")
DOTTED_NAME = re.compile(r"[\w.]+")
UPPERCASE = re.compile(r"[A-Z]")


def exception_line(text: str) -> tuple[str, str | None] | None:
    """(type, message) of `ValueError: bad value` or `torch.OutOfMemoryError`, else None.

    The type is a name ending in Error, Exception, ... or a dotted name whose last part has a capital.
    Read without a backtracking regex, which took time quadratic in the length of a long dotted name.
    """
    name = DOTTED_NAME.match(text)
    if not name or not (name.end() == len(text) or text.startswith(": ", name.end())):
        return None
    kind = name[0]
    first = kind[0]
    named = (first == "_" or first.isascii() and first.isalpha()) and \
        any(kind.endswith(s) and len(kind) > len(s) for s in EXCEPTION_SUFFIXES)
    dotted = (first == "_" or "a" <= first <= "z") and "." in kind and UPPERCASE.search(kind.rsplit(".", 1)[1])
    if not (named or dotted):
        return None
    return kind, text[name.end() + 2:] if name.end() < len(text) else None
OOM = re.compile(formats.OOM_TEXT, re.IGNORECASE)
HOST_MEMORY = re.compile(formats.HOST_MEMORY_TEXT)
MAX_TRACEBACK_LINES = 5000
# One traceback per rank may be open at once; beyond this many the oldest is closed, since every line
# offered is weighed against each open one.
MAX_OPEN_TRACEBACKS = 1024


@dataclass
class OpenError:
    first_line_no: int
    origin: str | None
    context: dict[str, object]
    is_abort: bool = False
    lines: list[str] = field(default_factory=list)
    last_line_no: int = 0
    last_shape: str = "header"
    exception_type: str | None = None
    exception_message: str | None = None
    idle: int = 0


def line_shape(line: str) -> str:
    """What part of a traceback a raw line is: file, code, exception, chain, blank or other."""
    stripped = line.strip()
    if not stripped:
        return "blank"
    if line.startswith("  File \"") or line.startswith('File "'):
        return "file"
    if line.startswith(("    ", "\t")):
        return "code"
    if stripped.startswith(("During handling of the above exception", "The above exception was the direct cause")):
        return "chain"
    if stripped.startswith("Traceback (most recent call last)"):
        return "restart"
    if line.startswith(("  what():", "frame #", "Exception raised from", "Extension modules:")):
        return "abort"
    if line.startswith("Fatal Python error"):
        return "fatal"
    if line.startswith(("Thread 0x", "Current thread 0x")):
        return "thread"
    if exception_line(stripped):
        return "exception"
    return "other"


# Which shapes may follow which: the last shape of a traceback -> shapes it accepts next.
ACCEPTS = {
    "header": {"file", "exception", "abort", "restart"},
    "file": {"code", "file", "exception"},
    "code": {"code", "file", "exception"},
    "exception": {"other", "blank", "chain", "code"},
    "other": {"other", "blank", "chain", "code", "exception"},
    "chain": {"blank", "restart"},
    "blank": {"restart", "chain"},
    "restart": {"file", "exception"},
    "abort": {"abort", "other", "code", "blank", "fatal", "thread", "file"},
    # faulthandler's dump after an abort: `Thread 0x… (most recent call first):` and `  File "…", line N in f`.
    "fatal": {"blank", "thread", "file", "abort"},
    "thread": {"file", "blank", "thread"},
}
# The shape each state most expects next: used first, to separate interleaved tracebacks.
EXPECTS = {"header": {"file"}, "restart": {"file"}, "file": {"code"}, "code": {"file", "exception"},
           "exception": {"blank"}, "chain": {"blank"}, "blank": {"restart"}}
# After an abort, file lines may follow thread headers, and blank lines separate the threads' stacks.
ABORT_ACCEPTS = {**ACCEPTS, "file": {"file", "blank", "thread", "abort", "fatal"},
                 "blank": {"thread", "fatal", "abort", "blank"}, "other": {"blank", "abort", "fatal"}}


class TracebackAssembler:
    """Collect unprefixed traceback lines into errors; several may be open at once (one per rank)."""

    def __init__(self) -> None:
        self.open: list[OpenError] = []
        self.evicted: list[OpenError] = []  # closed for want of room (MAX_OPEN_TRACEBACKS), not yet taken

    def start(self, body: str, line_no: int, context: Callable[[], dict[str, object]]) -> bool:
        """Open an error when `body` begins a traceback or a C++ abort; returns whether it did.

        `context` gives the common columns of the line (only asked for when an error opens).
        """
        if opens_traceback(body):
            origin, is_abort = traceback_origin(body), False
        else:
            m = CXX_ABORT_START.match(body) or FATAL_START.match(body)
            if not m:
                return False
            origin, is_abort = m["origin"], True
        err = OpenError(line_no, origin, context(), is_abort=is_abort, lines=[body], last_line_no=line_no,
                        last_shape="abort" if is_abort else "header")
        if len(self.open) >= MAX_OPEN_TRACEBACKS:
            self.evicted.append(self.open.pop(0))
        self.open.append(err)
        return True

    def take_evicted(self) -> list[OpenError]:
        taken, self.evicted = self.evicted, []
        return taken

    def feed(self, line: str, line_no: int) -> OpenError | None:
        """Offer an unprefixed line; returns the error it joined, or None when it belongs to none."""
        if not self.open or opens_traceback(line) or CXX_ABORT_START.match(line):
            return None  # a new traceback or abort begins; the caller opens it
        shape = line_shape(line)
        err = self._owner(shape)
        if err is None:
            return None
        err.lines.append(line)
        err.last_line_no = line_no
        err.idle = 0
        if shape == "exception" and err.last_shape in ("file", "code", "header", "restart", "other"):
            found = exception_line(line.strip())
            if found:
                err.exception_type, err.exception_message = found
        elif shape in ("other", "abort") and err.is_abort and err.exception_message is None:
            err.exception_message = line.strip().removeprefix("what():").strip()
        err.last_shape = shape if shape != "restart" else "restart"
        return err

    def _owner(self, shape: str) -> OpenError | None:
        """The open error this line most likely continues.

        Interleaved tracebacks of several ranks are told apart by what each expects next (a code line
        after a File line, say); Python tracebacks are tried oldest first, C++ aborts newest first,
        since aborts of several ranks print one after another.
        """
        candidates = [e for e in self.open if not e.is_abort] + [e for e in reversed(self.open) if e.is_abort]
        candidates = [e for e in candidates if len(e.lines) < MAX_TRACEBACK_LINES]
        for err in candidates:
            if shape in EXPECTS.get(err.last_shape, ()):
                return err
        for err in candidates:
            if shape in (ABORT_ACCEPTS if err.is_abort else ACCEPTS)[err.last_shape]:
                return err
        return None

    def tick(self) -> list[OpenError]:
        """Called for every prefixed line: close errors that are complete or have gone quiet."""
        done = []
        for err in self.open:
            err.idle += 1
            complete = err.exception_type is not None or (err.is_abort and err.exception_message is not None)
            if (complete and err.last_shape in ("exception", "other", "blank", "abort", "file")) or err.idle > 200:
                done.append(err)
        if done:
            closed = {id(e) for e in done}  # by identity: comparing the dataclasses field by field was quadratic
            self.open = [e for e in self.open if id(e) not in closed]
        return done

    def close_all(self) -> list[OpenError]:
        done, self.open = self.open, []
        return done


def error_fields(err: OpenError) -> dict[str, object]:
    """The `errors` row of a finished traceback or abort."""
    lines = err.lines
    while len(lines) > 1 and not lines[-1].strip():
        lines = lines[:-1]
    text = "\n".join(lines)
    if OOM.search(text):
        kind = "oom"
    elif HOST_MEMORY.search(text):
        kind = "host_memory"
    elif err.is_abort:
        kind = "abort"
    else:
        kind = "exception"
    last = next((ln.strip() for ln in reversed(lines) if ln.strip()), "")
    if err.exception_type:
        last = f"{err.exception_type}: {err.exception_message}" if err.exception_message else err.exception_type
    return {
        "error_kind": kind, "origin": err.origin, "exception_type": err.exception_type,
        "exception_message": err.exception_message, "last_line": last, "first_line_no": err.first_line_no,
        "last_line_no": err.last_line_no, "n_lines": len(err.lines), "text": text,
    }
