"""Find the event kind of SGLang message bodies and extract their typed fields.

The body (after `sglang_prefix`) is looked up in the pattern table of `sglang_formats`, dispatching on
its first characters so a line is tried against a handful of patterns, not all; a prefixed line no
pattern types is named by the catalogue of SGLang's logger calls.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import hot_path
from . import sglang_formats as formats
from .sglang_catalogue import Catalogue, shipped_catalogue
from .vector_columns import cut, data_bytes, flags, ints, offsets, records_table, spans

HEAD_CHARS = 4
# Patterns whose groups a compiled loop of `line_kernels` reads in one pass, as RE2 would (the loop and the
# groups it gives, in the pattern's order): the access lines, most of a serving log's untyped-head rows.
# `test_hot_path` checks each loop against RE2 on the pattern as it is now.
COMPILED_GROUPS = {"http_request": ("access_spans", ("client", "method", "path", "http_version", "status", "reason"))}


@cache  # every LineParser's Classifier asks it of the same patterns: a third of a small ingest's time
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
    names: tuple[str, ...]  # the pattern's named groups, in order
    re2: str  # the regex anchored for RE2 (pyarrow.compute), which searches unanchored
    # A last group that runs to the end of the line (`(?P<detail>Rank \d+.*)`) is not captured by RE2,
    # which would re-scan the whole line for it: `re2` captures the text before it as `_head`, and the
    # group is cut off by position.
    tail: str | None = None

    @property
    def regex(self) -> re.Pattern[str]:
        """The regex for Python's `re`, which reads only the rows RE2 could read differently (non-ASCII):
        compiled when the first such row comes, since compiling the whole table costs a small ingest 70 ms."""
        return _python_regex(self.spec.regex)


# `(?P<name>INNER.*)` closing a pattern, INNER without groups
TAIL_GROUP = re.compile(r"\(\?P<(?P<name>\w+)>(?P<inner>[^()]*)\.\*\)$")
GROUP_NAME = re.compile(r"\(\?P<(\w+)>")


def compile_pattern(spec: formats.Pattern) -> CompiledPattern:
    return CompiledPattern(spec, *_compiled(spec.regex))


@cache  # each LineParser (one per input, one per agent tool output) compiles the same table
def _compiled(pattern: str) -> tuple[tuple[str, ...], str, str | None]:
    names = tuple(GROUP_NAME.findall(pattern))
    tail = TAIL_GROUP.search(pattern)
    if tail is None:
        return names, f"^(?:{pattern})", None
    head = pattern[:tail.start()]
    return names, f"^(?P<_head>(?:{head})){tail['inner']}", tail["name"]


@cache
def _python_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


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

    def __init__(self, patterns: Iterable[formats.Pattern] | None = None,
                 notice_heads: Iterable[tuple[str, str]] = formats.NOTICE_HEADS,
                 catalogue: Catalogue | None = None) -> None:
        """`patterns`: the format table as it is when the classifier is made (`formats.ALL_PATTERNS`)."""
        patterns = tuple(formats.ALL_PATTERNS if patterns is None else patterns)
        self.catalogue = shipped_catalogue() if catalogue is None else catalogue
        self.tables: dict[str, str] = {p.kind: p.table for p in patterns}  # kind -> its event table
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
                 idents: pa.StringArray | None = None, prefixed: np.ndarray | None = None) -> Classified:
        """Classify `bodies[rows]`; `ascii_rows` flags (per body) the rows RE2 reads like Python.

        `idents` (the journal identifier per row) gates patterns that name one (`Pattern.ident`).
        `prefixed` flags the rows with SGLang's prefix: those no pattern types are named by the
        catalogue of SGLang's messages (last, so a pattern's kind always wins).
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
        if prefixed is not None and self.catalogue.size:
            notices = self.catalogue.name(bodies, rest[prefixed[rest]])
            if notices is not None:
                out.kinds[notices.column("_row").to_numpy()] = "notice"
                out.add("notices", notices)
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
            if candidate.names:
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
        """(the named groups' texts, which rows matched) of RE2 matches of `candidate` on `texts`, or of the
        compiled loop that reads the same groups where there is one (`COMPILED_GROUPS`)."""
        loop = COMPILED_GROUPS.get(candidate.spec.kind)
        kernels = hot_path.kernels()
        if loop is not None and kernels is not None and loop[1] == candidate.names:
            ok, start, stop = getattr(kernels, loop[0])(data_bytes(texts), offsets(texts))
            n = len(texts)
            return {name: spans(texts, start[i * n:(i + 1) * n], stop[i * n:(i + 1) * n])
                    for i, name in enumerate(candidate.names)}, ok
        groups = pc.extract_regex(texts, candidate.re2)
        fields = {name: groups.field(name) for name in candidate.names if name != candidate.tail}
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
        for name in candidate.names:
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
