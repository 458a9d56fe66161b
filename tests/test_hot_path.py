"""The compiled parse path and the vectorised Python path give the same tables.

`parsers/line_kernels.py` is compiled where the package was built with a C compiler (`setup.py`); its
source also runs as plain Python. Each loop is checked against the vectorised path on generated inputs,
compiled and as its source run uncompiled, and whole ingests of the bundled example, the samples and the
corpus are compared table by table between the two paths.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from logmine.parsers import hot_path, line_kernels
from logmine.parsers import sglang_formats as formats
from logmine.parsers.batch_stats import expand_stats
from logmine.parsers.envelopes import TimeContext, read_envelopes
from logmine.parsers.sglang_classifier import COMPILED_GROUPS, Classifier, compile_pattern
from logmine.parsers.sglang_prefix import parse_prefixes
from logmine.parsers.vector_columns import flags

from logmine import api
from tests.conftest import SHARED
from tests.test_envelope_properties import mutated_lines

ROOT = Path(__file__).resolve().parents[1]
PROPERTIES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Columns that name the moment or place of an ingest, not what it read.
VOLATILE_COLUMNS = {"ingested_at", "mtime", "db_path", "created_at", "updated_at"}


def source_kernels() -> ModuleType:
    """`line_kernels` run from its source, uncompiled, whether or not a compiled one is installed."""
    spec = importlib.util.spec_from_file_location("line_kernels_source",
                                                  Path(line_kernels.__file__).with_name("line_kernels.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SOURCE = source_kernels()
KERNELS = {"source": SOURCE, **({"compiled": line_kernels} if hot_path.compiled() else {})}


def with_kernels(monkeypatch: pytest.MonkeyPatch, kernels: ModuleType | None) -> None:
    monkeypatch.setattr(hot_path, "kernels", lambda: kernels)


def alike_on_every_path(read: Callable[[], object]) -> None:
    """`read()` gives the same on the Python path as with the loops, compiled and run from their source."""
    with pytest.MonkeyPatch.context() as patch:
        with_kernels(patch, None)
        expected = read()
        for kernels in KERNELS.values():
            with_kernels(patch, kernels)
            assert read() == expected, kernels.__name__


def test_ci_builds_the_compiled_path() -> None:
    """CI installs the package as a user does, with gcc there: the loops must have been compiled."""
    if os.environ.get("CI") != "true" and not hot_path.compiled():
        pytest.skip("line_kernels is not compiled in this install (no compiler when it was built)")
    assert hot_path.compiled()
    assert line_kernels.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def test_without_compiler_or_cython_the_python_path_ingests(tmp_path: Path) -> None:
    """A machine that could not compile the loops, with no Cython for their source: the parse still runs."""
    code = ("import sys; sys.modules['cython'] = None; sys.modules['logmine.parsers.line_kernels'] = None\n"
            "from logmine.parsers import hot_path; from logmine import api\n"
            f"api.ingest([{str(ROOT / 'examples' / 'demo' / 'journal.txt')!r}], db={str(tmp_path / 'p.duckdb')!r})\n"
            "print(hot_path.path_name())")
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.split()[-1] == "Python"
    con = duckdb.connect(str(tmp_path / "p.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM lines").fetchone()[0] == 1205
    con.close()


def test_the_python_path_can_be_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(hot_path.PURE_PYTHON_ENV, "1")
    assert hot_path.kernels() is None and hot_path.path_name() == "Python"
    monkeypatch.delenv(hot_path.PURE_PYTHON_ENV)
    assert hot_path.path_name() == ("compiled" if hot_path.compiled() else "Python")


KEYS = list(formats.STATS_KEYS) + ["#new-thing", " #token", "gen throughput (token/s) ", "a:b", ""]
VALUES = ["1", "82", "0.00", "12.5%", "12.5% ", "%" * 9, "True", "full=35", "1,2", "x: y", "", " 3 ", "7%%"]


@st.composite
def stats_texts(draw: st.DrawFn) -> str:
    """Batch-statistics texts as SGLang writes them, and as no release does: unknown, repeated and
    padded keys, values with `=`, `,`, `:` and runs of `%`, separators without their space."""
    pieces = [draw(st.sampled_from(KEYS)) + draw(st.sampled_from([": ", ":", ": "])) + draw(st.sampled_from(VALUES))
              for _ in range(draw(st.integers(0, 8)))]
    text = draw(st.sampled_from([", ", ",", ", "])).join(pieces)
    return text + draw(st.sampled_from(["", ", ", ",", " "]))


@PROPERTIES
@given(st.lists(stats_texts(), min_size=1, max_size=12))
def test_stats_split_alike(texts: list[str]) -> None:
    table = pa.table({"_row": pa.array(range(len(texts)), pa.int64()), "_stats": pa.array(texts)})
    alike_on_every_path(lambda: expand_stats(table).sort_by("_row").to_pylist())


STAMPED = ["Mar  1 08:00:07 gpu-7 python3[2661]: [2026-03-01 08:00:07 TP0] Decode batch. #running-req: 1",
           "Dec 31 23:59:59.123456 h sglang[1]: x", "Jan 05 00:00:00.12 h k: ", "Feb 29 10:10:10. h i[9]: m",
           "Mar  1 08:00:07 h i[2]:no space", "Mar  1 08:00:07.1234567 h i: m", "Mar  1 8:00:07 h i: m",
           "Mär  1 08:00:07 h i: m", "Mar  1 08:00:07 h: m: n", "mar  1 08:00:07 h i: m", "Mar  1 08:00:07"]


@PROPERTIES
@given(st.lists(st.one_of(mutated_lines(), st.sampled_from(STAMPED).map(str.encode)), min_size=1, max_size=8))
def test_journal_short_envelopes_alike(raw: list[bytes]) -> None:
    lines = pa.array([line.decode("utf-8", "replace").replace("\n", " ") for line in raw])
    ascii_rows = flags(pc.string_is_ascii(lines))

    def read() -> dict:
        env = read_envelopes(lines, "journal-short", TimeContext(2026), ascii_rows.copy())
        return {name: getattr(env, name) for name in ("ts", "host", "ident", "pid", "unit", "message", "level",
                                                      "logger")}

    alike_on_every_path(read)


BRACKETS = ["[2026-03-01 08:00:07 TP0] Decode batch. #running-req: 1", "[2026-03-01 08:00:07.123 DP1 TP3 EP2] x",
            "[08:00:07] INFO:     127.0.0.1:1 - \"GET / HTTP/1.1\" 200 OK", "[2026-03-01 08:00:07,123] m",
            "[2026-03-01 08:00:07] WARNING server_args.py:12: x", "[2026-03-01 08:00:07 TP0]x", "[2026-03-01 08:00:07]",
            "[2026-03-01 8:00:07 TP0] x", "[2026-3-01 08:00:07 TP0] x", "[08:00:07.12] x", "(pid=1) [08:00:07] y",
            "[rank1]: Traceback (most recent call last):", "[rank3]:[E1203 10:02:11.123456 ProcessGroupNCCL.cpp:616] x",
            "(Engine pid=5) [rank2]: [2026-03-01 08:00:07 TP0] y", "[rank]: x", "[rank12]:   File \"a.py\"",
            "- pipeline.run - INFO - [2026-03-01 08:00:07 TP0] y", "2026-03-01 08:00:07,123 - __main__ - ERROR -   x",
            "- a - WARNING -", "- a - NOTICE - [08:00:07] x",
            "(TaskRunner pid=4) (EngineCore_DP0 pid=5, ip=10.0.0.5) [2026-03-01 08:00:07 TP0] y [repeated 3x across "
            "cluster]", "(pid=6) [08:00:07] x  [repeated 2x across cluster] (Ray deduplicates logs by default. Set "
            "RAY_DEDUP_LOGS=0.)", "(Worker pid=7) 2026-03-01 08:00:07,123 - rollout - INFO - [rank1]: [08:00:07 TP1] z"]


@st.composite
def bracketed(draw: st.DrawFn) -> str:
    """SGLang's message prefixes, each perhaps cut or with characters replaced by ones its shape uses."""
    text = draw(st.sampled_from(BRACKETS))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(["", " ", "-", ":", ".", ",", "]", "[", "1", "é", "T"])) + text[at + 1:]
    return text


@PROPERTIES
@given(st.lists(bracketed(), min_size=1, max_size=8))
def test_sglang_prefixes_alike(texts: list[str]) -> None:
    messages = pa.array(texts)
    ascii_rows = flags(pc.string_is_ascii(messages))

    def read() -> dict:
        found = parse_prefixes(messages, ascii_rows.copy())
        return {**{name: getattr(found, name) for name in ("body", "date", "time", "ms", "level", "logger")},
                "prefixed": found.prefixed.tolist(), **found.ranks}

    alike_on_every_path(read)


ACCESS = ['127.0.0.1:51234 - "POST /generate HTTP/1.1" 200 OK', '10.0.0.5:1 - "GET /health HTTP/1.0" 503',
          '[::1]:80 - "GET /v1/models?x=1 HTTP/2" 404 Not Found', 'h - "PUT / HTTP/1.1" 200 ', '- - "A b HTTP/." 999x']
ACCESS_EDITS = ["", " ", "\t", "\x0b", "\x0c", "\r", "\n", '"', "-", "G", "g", "1", ".", "/", "HTTP/", "x y"]


@st.composite
def access_lines(draw: st.DrawFn) -> str:
    """uvicorn's access lines, perhaps with characters replaced by ones that end or break a token (RE2's
    `\\s` has no vertical tab, `.` stops at a newline)."""
    text = draw(st.sampled_from(ACCESS))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(ACCESS_EDITS)) + text[at + draw(st.integers(0, 2)):]
    return text


@PROPERTIES
@given(st.lists(access_lines(), min_size=1, max_size=8))
def test_access_line_groups_alike(texts: list[str]) -> None:
    """The compiled loop reads the groups of `sglang_formats`' access pattern as it is now, as RE2 does."""
    (pattern,) = [compile_pattern(p) for p in formats.ALL_PATTERNS if p.kind == "http_request"]
    assert COMPILED_GROUPS["http_request"][1] == pattern.names, "access_spans no longer reads this pattern's groups"

    def read() -> tuple:
        fields, ok = Classifier._extract(pattern, pa.array(texts))
        return ok.tolist(), {name: values.to_pylist() for name, values in fields.items()}

    alike_on_every_path(read)


def input_sets() -> dict[str, list[Path]]:
    sets = {"example": [ROOT / "examples" / "demo"]}
    sets.update({f"sample {p.name}": [p] for p in sorted((SHARED / "samples").glob("*/")) if p.is_dir()})
    if (SHARED / "corpus").is_dir():
        sets["corpus"] = [SHARED / "corpus"]
    return sets


def table_contents(db: Path) -> dict[str, list[str]]:
    """Every table's rows as sorted texts, the columns that name the ingest's moment or place left out."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        contents = {}
        for (table,) in con.execute("SELECT table_name FROM information_schema.tables "
                                    "WHERE table_schema = 'main' ORDER BY 1").fetchall():
            cursor = con.execute(f'SELECT * FROM "{table}"')
            keep = [i for i, d in enumerate(cursor.description) if d[0] not in VOLATILE_COLUMNS]
            contents[table] = sorted(repr(tuple(row[i] for i in keep)) for row in cursor.fetchall())
        return contents
    finally:
        con.close()


@pytest.mark.parametrize("name", list(input_sets()))
def test_ingests_alike_on_both_paths(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not hot_path.compiled():
        pytest.skip("line_kernels is not compiled in this install: only the Python path can run")
    paths = [str(p) for p in input_sets()[name]]
    contents = {}
    for path_name, pure in (("compiled", "0"), ("Python", "1")):
        monkeypatch.setenv(hot_path.PURE_PYTHON_ENV, pure)
        assert hot_path.path_name() == path_name
        db = tmp_path / f"{path_name}.duckdb"
        api.ingest(paths, db=db)
        contents[path_name] = table_contents(db)
    assert contents["compiled"].keys() == contents["Python"].keys()
    for table, rows in contents["compiled"].items():
        assert rows == contents["Python"][table], table
    assert contents["compiled"]["lines"], "nothing was ingested"
