"""The README's example outputs are what the commands print on the bundled example, so they never drift.

After a change that moves them: `LOGMINE_UPDATE_README=1 python -m pytest tests/test_readme.py` rewrites
the blocks, and `git diff README.md` shows what a reader will now see.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .test_terminal import in_terminal

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
# A block that starts with `$ logmine ...` holds that command's output; tables are shown at this width.
EXAMPLE = re.compile(r"```\n\$ (logmine [^\n]*)\n(.*?)```", re.S)
WIDTH = 120


def printed(command: str, db: Path) -> str:
    """What `command` prints, run from the repository on the database `db` (named demo.duckdb in the README)."""
    args = [str(db) if word == "demo.duckdb" else word for word in shlex.split(command)[1:]]
    if args[0] == "ingest":  # what it prints does not depend on the terminal; its progress bar would
        result = subprocess.run([sys.executable, "-m", "logmine", *args], cwd=REPO, capture_output=True,
                                text=True, check=True)
        text = result.stdout
    else:
        text = in_terminal(WIDTH, *args, rows=10_000)  # tall enough that no pager starts
    text = text.replace(str(db), "demo.duckdb")
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def test_the_readme_shows_what_the_commands_print(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    db = tmp_path / "demo.duckdb"
    text = README.read_text()
    examples = list(EXAMPLE.finditer(text))
    assert examples and examples[0].group(1).startswith("logmine ingest"), "the first example builds the database"
    actual = {m.group(1): printed(m.group(1), db) for m in examples}
    if os.environ.get("LOGMINE_UPDATE_README"):
        README.write_text(EXAMPLE.sub(lambda m: f"```\n$ {m.group(1)}\n{actual[m.group(1)]}```", text))
        return
    assert [(c, actual[c]) for c in actual] == [(m.group(1), m.group(2)) for m in examples]


def test_the_tables_section_lists_every_table(demo_db: Path) -> None:
    """The README's table list and the tables an ingest makes are the same names: a table added in code
    without a line here, or a line left for a table that is gone, fails."""
    import duckdb

    section = README.read_text().split("\n## Tables\n", 1)[1].split("\n## ", 1)[0]
    listed = set()
    for row in section.splitlines():
        if row.startswith("| `"):
            listed |= set(re.findall(r"`([a-z_]+)`", row.split(" | ")[0]))
    with duckdb.connect(str(demo_db), read_only=True) as con:
        made = {name for (name,) in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'").fetchall()}
    assert made - listed == set(), "tables with no line in the README's Tables section"
    assert listed - made == set(), "README lines for tables an ingest does not make"
