"""SGLang's line prefix: `[date time.ms RANKS] ` (§1 of the format notes), split off the message body.

The tags and level words come from `sglang_formats`; `parse_prefix` reads one message, `parse_prefixes`
a block of them as columns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import hot_path
from .sglang_formats import LEVELS, RANK_COLUMNS, RANK_MAX, RANK_TAGS, ROLE_TAGS
from .vector_columns import bounded_int, bounded_ints, cut, data_bytes, first_bytes, flags, ints, offsets, patch

TAG_NAMES = "|".join(RANK_TAGS)
LEVEL_NAMES = "|".join(LEVELS)
RANK_TAG_LIST = rf"(?: (?:{TAG_NAMES})\d+)*"
ROLE_TAG = rf"(?: (?:{ROLE_TAGS}))?"
PREFIX = re.compile(
    r"\[(?:(?P<date>\d{4}-\d\d-\d\d) )?(?P<time>\d\d:\d\d:\d\d)(?:[.,](?P<ms>\d{3}))?"
    rf"(?P<ranks>{RANK_TAG_LIST}){ROLE_TAG}\] ?"
    # A foreign root handler prints `LEVEL file.py:N:`; uvicorn prints a padded `INFO:`.
    rf"(?:(?P<level>{LEVEL_NAMES}) (?P<logger>[\w.]+:\d+): |"
    rf"(?P<uvlevel>{LEVEL_NAMES}):\s+)?"
)
BARE_UVICORN = re.compile(rf"(?P<uvlevel>{LEVEL_NAMES}):\s{{2,}}")
# Ray's driver puts the actor (or task) and its process before each line a worker prints, one per level of
# nesting (`(VllmWorker pid=1, ip=10.0.0.5) (EngineCore_DP0 pid=2) `), none for a bare task (`(pid=3) `); and
# where it drops lines like one it printed (numbers aside) it says how many after it, the first time with a
# note on how to stop it.
RAY_PREFIX = re.compile(r"\((?:[\w.:-]+ )?pid=\d+(?:, ip=[\w.:]+)?\) ")
RAY_REPEATED = re.compile(r" +\[repeated \d+x across cluster\](?: \(Ray deduplicates logs by default\..*\))?$")
RAY_REPEATED_WORDS = "x across cluster]"
# torch.distributed's `[rank1]: ` before each line of a rank's traceback (torchrun, an RL trainer's rollout
# engines): the launcher's global rank, not SGLang's TP rank, so it is left out like Ray's actor tag. Its C++
# log lines (`[rank1]:[W104 ...]`, no space) are the `torch_log` pattern's, which keeps that rank.
TORCH_RANK_PREFIX = re.compile(r"\[rank\d+\]: ")
# A launcher that reads the server's output and logs each line again through Python's `logging` with the
# cookbook's format, `%(asctime)s - %(name)s - %(levelname)s - %(message)s` (olmOCR's pipeline, other batch
# drivers): its stamp, logger and level say nothing of the line's own. A `stamped` envelope has read the stamp
# already; inside a journal's, the stamp is still there.
PYTHON_LOGGING_PREFIX = re.compile(r"(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} )?- [\w.<>-]+ - "
                                   r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) -(?: |$)")
LAUNCHER_PREFIX = re.compile(rf"(?:{PYTHON_LOGGING_PREFIX.pattern}|{RAY_PREFIX.pattern})*"
                             rf"(?:{TORCH_RANK_PREFIX.pattern})?")
# How a line behind one of them may begin: Ray's `(`, Python logging's `- ` or its stamp's digit, torch's `[rank`.
# A line that begins so and is behind none loses nothing: LAUNCHER_PREFIX matches nothing of it.
LAUNCHER_FIRST = "(-0123456789"
LAUNCHER_FIRST_BYTES = np.frombuffer(LAUNCHER_FIRST.encode(), dtype=np.uint8)
TORCH_RANK_START = "[rank"
RANK_TAG = re.compile(rf"({TAG_NAMES})(\d+)")


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
    if message[:1] in LAUNCHER_FIRST or message.startswith(TORCH_RANK_START):
        message = message[LAUNCHER_PREFIX.match(message).end():]
        if RAY_REPEATED_WORDS in message:
            message = RAY_REPEATED.sub("", message)
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
LAUNCHER_PREFIX_RE2 = f"^{LAUNCHER_PREFIX.pattern}"
PREFIX_FIELDS = ("date", "time", "ms", "level", "logger")


def parse_prefixes(messages: pa.StringArray, ascii_rows: np.ndarray) -> Prefixes:
    """`parse_prefix` over a block: by position where the bracket has its usual shape, else with RE2;
    non-ASCII rows go through `parse_prefix` itself."""
    slow = np.nonzero(~ascii_rows)[0]
    launched = np.isin(first_bytes(messages), LAUNCHER_FIRST_BYTES) | flags(pc.starts_with(messages, TORCH_RANK_START))
    outer = np.nonzero(launched & ascii_rows)[0]
    if len(outer):
        stripped = pc.replace_substring_regex(messages.take(pa.array(outer)), LAUNCHER_PREFIX_RE2, "",
                                              max_replacements=1)
        messages = patch(messages, outer, stripped)
    prefixed, cols, head_len = _bracket_prefixes(messages, ascii_rows)
    todo = np.nonzero(ascii_rows & ~prefixed & flags(pc.starts_with(messages, "[")))[0]
    if len(todo):
        _regex_prefixes(messages, todo, prefixed, cols, head_len)
    body = cut(messages, head_len)
    if len(outer):
        body = _without_ray_repeats(body, outer)
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
                   {column: cols[column] for column in RANK_COLUMNS})
    if len(slow):
        _patch_prefixes(out, messages, slow)
    return out


def _without_ray_repeats(body: pa.StringArray, launched: np.ndarray) -> pa.StringArray:
    """`body` without Ray's count of the lines it dropped, on the `launched` rows (only Ray's driver writes it)."""
    rows = launched[flags(pc.match_substring(body.take(pa.array(launched)), RAY_REPEATED_WORDS))]
    if not len(rows):
        return body
    return patch(body, rows, pc.replace_substring_regex(body.take(pa.array(rows)), RAY_REPEATED.pattern, ""))


BRACKET_STAMP_RE2 = r"^\[(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d(?:[.,]\d{3})?[ \]]"
BRACKET_TAGS = re.compile(RANK_TAG_LIST + ROLE_TAG)
LEVEL_WORD = re.compile(rf"(?:{LEVEL_NAMES})[ :]")
LEVEL_REGION = 16
UVICORN_LEVEL = re.compile(rf"({LEVEL_NAMES}):[\t\n\f\r ]+")  # RE2's \s


def _bracket_prefixes(messages: pa.StringArray, ascii_rows: np.ndarray
                      ) -> tuple[np.ndarray, dict[str, pa.Array], np.ndarray]:
    """(prefixed, columns, head length) of the rows whose bracket is `[date time.ms TAGS] `.

    The date, time and milliseconds sit at fixed columns and the rank tags take a handful of values per
    file, so only the distinct tags meet a regex; other rows are left unprefixed for the RE2 pass.
    """
    n = len(messages)
    if compiled := hot_path.kernels():
        fast, dated, has_ms, close = compiled.bracket_heads(data_bytes(messages), offsets(messages),
                                                            np.ascontiguousarray(ascii_rows, dtype=np.uint8))
    else:
        fast, dated, has_ms, close = _bracket_stamps(messages, ascii_rows)
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
    for column in RANK_COLUMNS:
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


def _bracket_stamps(messages: pa.StringArray, ascii_rows: np.ndarray) -> tuple[np.ndarray, ...]:
    """`line_kernels.bracket_heads` by Arrow's kernels."""
    binary = messages.cast(pa.binary())
    close = ints(pc.find_substring(messages, "]"))
    fast = ascii_rows & (close > 0) & flags(pc.match_substring_regex(messages, BRACKET_STAMP_RE2))
    dated = flags(pc.equal(pc.binary_slice(binary, 5, 6), b"-"))
    has_ms = np.where(dated, flags(pc.is_in(pc.binary_slice(binary, 20, 21), MS_SEPARATORS)),
                      flags(pc.is_in(pc.binary_slice(binary, 9, 10), MS_SEPARATORS)))
    return fast, dated, has_ms, close


def _ranks_of(tags: str) -> dict[str, int]:
    """Rank tags as columns (a repeated tag keeps its last value; a number too large for the SMALLINT
    rank columns is no rank, and is left out)."""
    ranks = {RANK_TAGS[tag]: bounded_int(n, RANK_MAX + 1) for tag, n in RANK_TAG.findall(tags)}
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
    for tag, column in RANK_TAGS.items():
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
    for column in RANK_COLUMNS:
        values = pa.array([p.ranks.get(column) if p else None for p, _ in parsed], pa.int64())
        out.ranks[column] = patch(out.ranks[column], rows, values)

