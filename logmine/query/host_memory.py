"""Host memory audit: the HiCache pool each rank asks for, what it pins, per node, against the host's memory.

The host's memory is read where the log or the agent's session shows it: `free` output (any unit flag) and
`/proc/meminfo` in a tool call's output, and SGLang's own "Not enough host memory" error, whose "free" figure
is `psutil.virtual_memory().available` less a 10 GiB reserve. Each reader below is data with an example it
must read (tests/test_plan.py reads them all).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .plan import GB, GIB

if TYPE_CHECKING:
    import duckdb

# SGLang keeps this much host memory out of the HiCache pools' reach (`Not enough host memory` check).
SGLANG_HOST_RESERVE_BYTES = 10 * GIB

# How each release pins the HiCache host pool on CUDA, read from the released wheels' `memory_pool(_host).py`.
# torch's pinned allocator (`torch.empty(..., pin_memory=True)`, the CachingHostAllocator) rounds every block
# up to the next power of two (sglang #36562: 20.4 GiB asked, 32 GiB pinned); a plain tensor registered with
# `cudaHostRegister` pins the exact size. v0.4.6 and v0.5.4 build the host pool with `pin_memory=True` (the
# default HiRadixCache leaves); v0.5.5 and v0.5.6 register a plain tensor, v0.5.7 on do so through
# `ALLOC_MEMORY_FUNCS` (`alloc_with_host_register`; NPU keeps torch's allocator). Before v0.4.5 the pool was
# not pinned at all (`pin_memory=False`, sglang #4636).
PINNING = [
    {"from": (0, 4, 0), "to": (0, 4, 4), "allocator": "pageable memory (pin_memory=False)", "rounds": False},
    {"from": (0, 4, 5), "to": (0, 5, 4), "allocator": "torch pin_memory (CachingHostAllocator)", "rounds": True},
    {"from": (0, 5, 5), "to": None, "allocator": "cudaHostRegister of a plain tensor", "rounds": False},
]

# Unit of the numbers in `free` output by flag (the header says nothing of it); -h writes its own suffixes.
FREE_UNITS = {"-b": 1, "--bytes": 1, "-k": 1024, "--kibi": 1024, "-m": 2**20, "--mebi": 2**20, "-g": GIB,
              "--gibi": GIB, "--tebi": 2**40, "--kilo": 1e3, "--mega": 1e6, "--giga": 1e9, "--tera": 1e12}
SUFFIX_BYTES = {"B": 1, "K": 1024, "Ki": 1024, "M": 2**20, "Mi": 2**20, "G": GIB, "Gi": GIB, "T": 2**40, "Ti": 2**40}

READERS = {
    "free": {
        "pattern": re.compile(r"^\s*total\s+used\s+free\s+shared\s+(?:buff/cache|buffers\s+cached)"
                              r"(?P<available>\s+available)?\s*\n\s*Mem:\s+(?P<row>[^\n]+)", re.M),
        "example": "               total        used        free      shared  buff/cache   available\n"
                   "Mem:           449Gi        40Gi       6.9Gi       1.2Gi       402Gi       396Gi\n",
        "available_bytes": 396 * GIB,
    },
    "meminfo": {
        "pattern": re.compile(r"^MemAvailable:\s+(?P<kb>\d+)\s*kB", re.M),
        "example": "MemTotal:       471236812 kB\nMemAvailable:   415389276 kB\n",
        "available_bytes": 415389276 * 1024,
    },
}

# `pip list` / `pip show` / `pip freeze` / `python -c 'import sglang; print(sglang.__version__)'` lines.
VERSION = re.compile(r"^(?:sglang\s+|Name: sglang\s*\nVersion:\s*|sglang==|sglang version:?\s*)v?(\d+\.\d+\.\d+)",
                     re.M | re.I)


@dataclass
class Reading:
    """The host's available memory at one moment."""

    available_bytes: float
    origin: str  # "free -g", "/proc/meminfo", "SGLang host-memory error"
    at: Any  # the moment, in the journal's clock where known
    cited: str  # session/message or file:line
    host: str | None = None

    @property
    def available_gb(self) -> float:
        return self.available_bytes / GB


def parse_free(text: str, command: str = "free") -> float | None:
    """The `available` bytes in `free` output (older procps without the column: free + buffers + cached)."""
    found = READERS["free"]["pattern"].search(text)
    if not found:
        return None
    flag = next((f for f in command.split() if f in FREE_UNITS), None)
    si = "--si" in command.split()
    cells = found["row"].split()
    values = [_bytes(c, FREE_UNITS.get(flag or "", 1024), si) for c in cells]
    if None in values:
        return None
    if found["available"]:
        return values[5]
    return values[2] + values[4] + values[5] if len(values) >= 6 else None


def _bytes(cell: str, unit: float, si: bool) -> float | None:
    match = re.fullmatch(r"(\d+(?:[.,]\d+)?)([KMGT]i?|B)?", cell)
    if not match:
        return None
    number = float(match[1].replace(",", "."))
    if match[2]:
        suffix = match[2]
        return number * (1000 ** "BKMGT".index(suffix[0]) if si and not suffix.endswith("i") else SUFFIX_BYTES[suffix])
    return number * unit


def parse_meminfo(text: str) -> float | None:
    found = READERS["meminfo"]["pattern"].search(text)
    return int(found["kb"]) * 1024 if found else None


def sglang_version(text: str) -> tuple[int, int, int] | None:
    found = VERSION.search(text)
    return tuple(int(p) for p in found[1].split(".")) if found else None  # type: ignore[return-value]


def pinning(version: tuple[int, int, int] | None) -> dict[str, Any] | None:
    """How `version` pins the host pool (None when the release is not known)."""
    if version is None:
        return None
    return next((p for p in PINNING if p["from"] <= version and (p["to"] is None or version <= p["to"])), None)


def pinned_bytes(requested: float, rounds: bool) -> float:
    """What the allocator locks for `requested` bytes: the next power of two where it rounds."""
    if not rounds or requested <= 0:
        return requested
    return float(2 ** (int(requested - 1).bit_length()))


# --- reading the database -------------------------------------------------------------------------------

def readings(con: duckdb.DuckDBPyConnection, source: str | None = None) -> list[Reading]:
    """Every host-memory figure in the sessions' tool outputs and the logs' host-memory errors, oldest first.
    With `source` (a display name), only those of its host: its own errors, and the outputs of sessions linked
    to its runs, of commands run on its host by name, or of any session when it is the only log source."""
    from . import named_queries

    found: list[Reading] = []
    outputs = named_queries.fetch(con, """
        SELECT t.session_id, t.message_index, t.call_id,
               any_value(coalesce(t.started_at, t.ended_at) + to_seconds(coalesce(k.utc_offset_s, 0))) AS seen_at,
               any_value(t.output),
               coalesce(string_agg(c.command, '; ' ORDER BY c.step), any_value(CAST(t.input AS VARCHAR))),
               any_value(c.host)
        FROM tool_calls AS t LEFT JOIN commands AS c USING (call_id)
        LEFT JOIN session_clock AS k ON k.session_id = t.session_id
        WHERE (t.output LIKE '%Mem:%' OR t.output LIKE '%MemAvailable%') AND ($source IS NULL
            OR (SELECT count(*) FROM sources WHERE kind = 'log') = 1
            OR t.session_id IN (SELECT l.session_id FROM links AS l JOIN sources AS s USING (source_id)
                                WHERE s.display = $source)
            OR c.host = (SELECT l.host FROM lines AS l JOIN sources AS s USING (source_id)
                         WHERE s.display = $source AND l.host IS NOT NULL LIMIT 1))
        GROUP BY t.session_id, t.message_index, t.call_id ORDER BY seen_at""", source=source).rows
    for session, index, _call, at, output, command, host in outputs:
        cited = f"session {session}, message {index}"
        free_command = next((part.strip() for part in re.split(r"[;&|\n]", command or "")
                             if re.match(r"\s*(?:sudo\s+)?free\b", part)), "free")
        available = parse_free(output, free_command)
        if available is not None:
            found.append(Reading(available, free_command, at, cited, host))
        meminfo = parse_meminfo(output)
        if meminfo is not None:
            found.append(Reading(meminfo, "/proc/meminfo MemAvailable", at, cited, host))
    errors = named_queries.fetch(con, """
        SELECT h.ts, s.display || ':' || h.line_no, h.free_gb, l.host
        FROM host_cache AS h JOIN sources AS s USING (source_id)
        LEFT JOIN lines AS l ON l.source_id = h.source_id AND l.line_no = h.line_no
        WHERE h.kind = 'host_memory_short' AND h.free_gb IS NOT NULL AND ($source IS NULL OR s.display = $source)
        ORDER BY h.ts""", source=source).rows
    for ts, cited, free_gb, host in errors:
        found.append(Reading(free_gb * GB + SGLANG_HOST_RESERVE_BYTES, "SGLang host-memory error", ts, cited, host))
    return sorted(found, key=lambda r: (r.at is None, r.at))


def version_seen(con: duckdb.DuckDBPyConnection) -> tuple[tuple[int, int, int] | None, str | None]:
    """The SGLang release a session's tool output shows (`pip list`, `pip show sglang`...), and where."""
    from . import named_queries

    for session, index, output in named_queries.fetch(con, """
            SELECT session_id, message_index, output FROM tool_calls
            WHERE output ILIKE '%sglang%' ORDER BY started_at DESC""").rows:
        version = sglang_version(output or "")
        if version:
            return version, f"session {session}, message {index}"
    return None, None


def audit(con: duckdb.DuckDBPyConnection, source: str, run: int, version: str | None = None) -> dict[str, Any]:
    """The host-memory audit of one run (see the module's docstring); `findings` says what cannot fit."""
    from . import named_queries, plan

    base = plan.baseline(con, source, run) if _has_pool(con, source, run) else None
    config = base.config if base else _config(con, source, run)
    logged = named_queries.fetch(con, """
        SELECT max(h.host_gb) FILTER (h.kind = 'hicache_host_alloc'),
               max(h.requested_gb) FILTER (h.kind = 'host_memory_short'), min(r.started_at)
        FROM runs AS r JOIN sources AS s USING (source_id)
        LEFT JOIN host_cache_by_run AS h ON h.source_id = r.source_id AND h.run = r.ordinal
        WHERE s.display = $source AND r.ordinal = $run""", source=source, run=run).rows
    allocated_gb, refused_gb, started_at = logged[0] if logged else (None, None, None)
    requested_gb, how = allocated_gb, "logged (Allocating ... GB host memory)" if allocated_gb else None
    if requested_gb is None and refused_gb is not None:
        requested_gb, how = refused_gb, "logged (Not enough host memory ... Requesting)"
    if requested_gb is None and config.get("enable_hierarchical_cache"):
        # Not logged (the run ended first, or is still loading): SGLang's formula on this run's KV pool, else on
        # the last earlier run's with this run's settings, which is what a watcher needs before the pool is made.
        earlier = base or _earlier_baseline(con, source, run)
        if earlier is not None:
            changes = {k: config.get(k) for k in plan.SETTINGS if config.get(k) != earlier.config.get(k)}
            requested_gb = plan.predict(earlier, changes)["host_cache_gb_per_rank"]
            how = ("predicted from the run's KV pool and hicache settings" if base else
                   f"predicted from run {earlier.run}'s KV pool with this run's settings")
    release, release_cited = (_version(version), "given") if version else version_seen(con)
    pins = pinning(release)
    per_node = plan.ranks_per_node(config)
    result: dict[str, Any] = {
        "source": source, "run": run, "hicache": bool(config.get("enable_hierarchical_cache")),
        "requested_gb_per_rank": requested_gb, "requested_from": how,
        "sglang_version": ".".join(map(str, release)) if release else None, "version_from": release_cited,
        "allocator": pins["allocator"] if pins else None,
        "rounds_to_power_of_two": pins["rounds"] if pins else None,
        "ranks_per_node": per_node, "ranks": plan.world_size(config),
        "pinned_gb_per_rank": None, "pinned_gb_per_node": None, "host_available_gb": None,
        "host_available_from": None, "host_available_at": None, "fits": None, "findings": [],
    }
    reading = _reading_for(readings(con, source), started_at)
    if reading is not None:
        result.update(host_available_gb=round(reading.available_gb, 2),
                      host_available_from=f"{reading.origin} ({reading.cited})", host_available_at=str(reading.at))
    if requested_gb is None:
        return result
    pinned = pinned_bytes(requested_gb * GB, bool(pins and pins["rounds"])) / GB
    result["pinned_gb_per_rank"] = round(pinned, 2)
    result["pinned_gb_per_node"] = round(pinned * per_node, 2)
    if pins and pins["rounds"] and pinned > requested_gb:
        result["findings"].append(
            f"SGLang v{result['sglang_version']} pins through {pins['allocator']}, which rounds each rank's "
            f"{requested_gb:.2f} GB ({requested_gb * GB / GIB:.2f} GiB) up to {pinned * GB / GIB:.0f} GiB: "
            f"{(pinned - requested_gb) * per_node:.2f} GB more per node than asked")
    if reading is None:
        return result
    budget_gb = reading.available_gb - SGLANG_HOST_RESERVE_BYTES / GB
    node_gb = pinned * per_node
    result["fits"] = node_gb <= budget_gb
    if node_gb > budget_gb:
        result["findings"].append(
            f"the host pools cannot fit: {per_node} ranks x {pinned:.2f} GB = {node_gb:.2f} GB per node, against "
            f"{reading.available_gb:.2f} GB available ({reading.origin}, {reading.cited}) less SGLang's 10 GiB "
            f"reserve = {budget_gb:.2f} GB"
            + ("; SGLang's own check (one rank's pool against the free memory) passes, so the node is "
               f"oversubscribed once all {per_node} ranks have pinned theirs" if pinned <= budget_gb < node_gb else
               ""))
    elif node_gb > 0.9 * budget_gb:
        result["findings"].append(f"the host pools take {node_gb / budget_gb:.0%} of the host's available memory "
                                  f"after SGLang's reserve ({node_gb:.2f} of {budget_gb:.2f} GB)")
    return result


def _reading_for(found: list[Reading], started_at: Any) -> Reading | None:
    """The last reading before the run started (its host pool not yet pinned), else the first after."""
    if not found:
        return None
    if started_at is None:
        return found[-1]
    before = [r for r in found if r.at is not None and r.at <= started_at]
    return before[-1] if before else found[0]


def _earlier_baseline(con: duckdb.DuckDBPyConnection, source: str, run: int) -> Any:
    from . import named_queries, plan

    found = named_queries.fetch(con, """
        SELECT max(k.run) FROM kv_cache_by_run AS k JOIN sources AS s USING (source_id)
        WHERE s.display = $source AND k.run < $run AND k.kind = 'kv_cache_allocated'""", source=source, run=run).rows
    return plan.baseline(con, source, found[0][0]) if found and found[0][0] is not None else None


def _has_pool(con: duckdb.DuckDBPyConnection, source: str, run: int) -> bool:
    from . import named_queries

    return bool(named_queries.fetch(con, """
        SELECT 1 FROM kv_cache_by_run AS k JOIN sources AS s USING (source_id)
        WHERE s.display = $source AND k.run = $run AND k.kind = 'kv_cache_allocated' LIMIT 1""",
        source=source, run=run).rows)


def _config(con: duckdb.DuckDBPyConnection, source: str, run: int) -> dict[str, Any]:
    from . import named_queries, plan

    rows = named_queries.fetch(con, """
        SELECT c.args FROM runs AS r JOIN sources AS s USING (source_id) JOIN configs AS c USING (config_id)
        WHERE s.display = $source AND r.ordinal = $run""", source=source, run=run).rows
    return plan.config_dict(rows[0][0]) if rows else {}


def _version(text: str) -> tuple[int, int, int]:
    parts = text.strip().lstrip("v").split(".")
    try:
        return tuple(int(re.match(r"\d+", p)[0]) for p in (parts + ["0", "0"])[:3])  # type: ignore[index,return-value]
    except TypeError:
        raise ValueError(f"--sglang-version {text!r}: expected a release such as 0.5.9") from None
