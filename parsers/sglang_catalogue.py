"""SGLang's own logger messages, as read from its source: lines logmine names without typing columns.

`sglang_catalogue.tsv` (built by `bench/catalogue_build.py` from the logger calls of each sampled
release) has one row per message template: `id`, `level`, `module`, `topic`, `versions` (the sampled
releases it was seen in) and `template`, whose variable parts are `<*>`. A line the format table
(`sglang_formats`) does not type but a template matches becomes a notice: kind `notice`, the row's
topic and level, origin = the template id, detail = the line from the first variable part on.

Templates are matched as a whole from the start of the message body, variable parts lazily; the
templates sharing their first characters are one RE2 alternation, longest fixed text first. Their
regexes hold only literals and `.*?`, which RE2 reads alike on any text, ASCII or not.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .traceback_formats import CXX_ABORT_OPENING, FATAL_OPENING, TRACEBACK_HEADER
from .vector_columns import cut, flags

ANY = "<*>"
HEAD_CHARS = 4
REGEX_SPECIAL = re.compile(r"([.^$*+?{}\[\]\\|()])")
MATCH_CHARS = 2000
# Lines that may open an error are left to the traceback assembler, whatever their text.
ERROR_OPENINGS = (CXX_ABORT_OPENING, FATAL_OPENING)
COLUMNS = ("id", "level", "module", "topic", "versions", "template")


@dataclass(frozen=True)
class Template:
    id: str
    level: str
    module: str
    topic: str
    versions: str
    template: str

    @property
    def head(self) -> str:
        """The fixed text before the first variable part."""
        return self.template.split(ANY, 1)[0]

    @property
    def fixed_chars(self) -> int:
        return len(self.template) - self.template.count(ANY) * len(ANY)

    def regex(self) -> str:
        """The template as a regex read alike by RE2 and Python (no anchors, no groups)."""
        return ".*?".join(REGEX_SPECIAL.sub(r"\\\1", part) for part in self.template.split(ANY))


def read_templates(path: Path | None = None) -> tuple[Template, ...]:
    """The catalogue's rows (the shipped `sglang_catalogue.tsv` when `path` is None)."""
    source = resources.files(__package__).joinpath("sglang_catalogue.tsv") if path is None else path
    with source.open(encoding="utf-8", newline="") as f:
        rows = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(rows)
        if tuple(header) != COLUMNS:
            raise ValueError(f"{source}:1: expected the columns {', '.join(COLUMNS)}")
        templates = []
        for line_no, row in enumerate(rows, start=2):
            if len(row) != len(COLUMNS):
                raise ValueError(f"{source}:{line_no}: expected {len(COLUMNS)} tab-separated fields, got {len(row)}")
            templates.append(Template(*row))
    return tuple(templates)


class Alternation:
    """Templates tried at once, the first that matches a line naming it.

    Which one matched is found by halving the list, RE2 telling only whether a line matches: reading
    the capture groups of hundreds of alternatives took a hundred times longer.
    """

    def __init__(self, templates: list[Template]) -> None:
        self.templates = sorted(templates, key=lambda t: -t.fixed_chars)
        self._spans: dict[tuple[int, int], str] = {}

    @cached_property
    def regexes(self) -> list[str]:
        # Built when first needed: most groups meet no line in an ingest, and building all took 0.1 s.
        return [t.regex() for t in self.templates]

    def _span(self, low: int, high: int) -> str:
        """RE2 for templates[low:high], anchored at the start of the line."""
        if (low, high) not in self._spans:
            self._spans[(low, high)] = "^(?:" + "|".join(self.regexes[low:high]) + ")"
        return self._spans[(low, high)]

    def match(self, texts: pa.StringArray) -> np.ndarray:
        """Index of the template naming each text, -1 where none does."""
        which = np.full(len(texts), -1, dtype=np.int64)
        some = flags(pc.match_substring_regex(texts, self._span(0, len(self.templates))))
        self._narrow(texts, np.flatnonzero(some), 0, len(self.templates), which)
        return which

    def _narrow(self, texts: pa.StringArray, at: np.ndarray, low: int, high: int, which: np.ndarray) -> None:
        """Set `which` for the rows `at`, each known to match one of templates[low:high]."""
        if not len(at):
            return
        if high - low == 1:
            which[at] = low
            return
        middle = (low + high) // 2
        first = flags(pc.match_substring_regex(texts.take(pa.array(at, pa.int64())), self._span(low, middle)))
        self._narrow(texts, at[first], low, middle, which)
        self._narrow(texts, at[~first], middle, high, which)


class Catalogue:
    """Name message bodies by the catalogue's templates; see the module's docstring."""

    def __init__(self, templates: tuple[Template, ...]) -> None:
        by_head: dict[str, list[Template]] = {}
        anywhere: list[Template] = []
        for template in templates:
            head = template.head
            if len(head) >= HEAD_CHARS:
                by_head.setdefault(head[:HEAD_CHARS], []).append(template)
            else:
                anywhere.append(template)
        self.by_head = {head: Alternation(group) for head, group in by_head.items()}
        self.anywhere = Alternation(anywhere) if anywhere else None
        self.size = len(templates)

    def name(self, bodies: pa.StringArray, rows: np.ndarray) -> pa.Table | None:
        """The notices of the rows a template names (`_row`, kind, topic, level, origin, detail), or None."""
        if not len(rows):
            return None
        texts = bodies.take(pa.array(rows, pa.int64()))
        opening = flags(pc.match_substring(texts, TRACEBACK_HEADER))
        for start in ERROR_OPENINGS:
            opening |= flags(pc.starts_with(texts, start))
        rows, texts = rows[~opening], texts.filter(pa.array(~opening))
        # A template's fixed parts are looked for in the first MATCH_CHARS characters only, which bounds
        # the time a huge line (a request's repr) takes.
        head_texts = pc.utf8_slice_codeunits(texts, 0, MATCH_CHARS)
        named: list[tuple[np.ndarray, np.ndarray, Alternation]] = []  # (positions in texts, indexes, where)
        left = np.ones(len(rows), dtype=bool)
        heads = pc.utf8_slice_codeunits(texts, 0, HEAD_CHARS).dictionary_encode()
        codes = heads.indices.to_numpy(zero_copy_only=False)
        for code, head in enumerate(heads.dictionary.to_pylist()):
            alternation = self.by_head.get(head)
            if alternation is not None:
                at = np.flatnonzero(codes == code)
                self._match(alternation, head_texts, at, named, left)
        if self.anywhere is not None and left.any():
            self._match(self.anywhere, head_texts, np.flatnonzero(left), named, left)
        return self._notices(texts, rows, named) if named else None

    @staticmethod
    def _match(alternation: Alternation, texts: pa.StringArray, at: np.ndarray, named: list,
               left: np.ndarray) -> None:
        which = alternation.match(texts.take(pa.array(at, pa.int64())))
        hit = which >= 0
        if hit.any():
            named.append((at[hit], which[hit], alternation))
            left[at[hit]] = False

    @staticmethod
    def _notices(texts: pa.StringArray, rows: np.ndarray, named: list) -> pa.Table:
        at = np.concatenate([positions for positions, _, _ in named])
        templates = [alternation.templates[i] for _, which, alternation in named for i in which]
        found = texts.take(pa.array(at, pa.int64()))
        # The detail starts where the first variable part does: after the head, which each line starts with.
        start = np.array([len(t.head.encode()) for t in templates], dtype=np.int64)
        fixed = np.array([ANY not in t.template for t in templates], dtype=bool)
        detail = pc.if_else(pa.array(fixed), pa.scalar(None, pa.string()), cut(found, start))
        n = len(at)
        return pa.table({
            "_row": pa.array(rows[at], pa.int64()),
            "kind": pa.repeat(pa.scalar("notice"), n),
            "topic": pa.array([t.topic for t in templates], pa.string()),
            "level": pa.array([t.level for t in templates], pa.string()),
            "origin": pa.array([t.id for t in templates], pa.string()),
            "detail": detail,
        })


@cache
def shipped_catalogue() -> Catalogue:
    """The catalogue shipped with logmine, read once per process."""
    return Catalogue(read_templates())
