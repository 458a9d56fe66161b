"""Another local user reads nothing logmine writes from a database only its owner reads: not the database, its
report, its Parquet export (the lab's token and notebooks: tests/test_lab_confinement.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import as_second_user


def logmine(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "logmine", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


def test_a_second_user_reads_no_database_report_or_export(demo_db: Path, open_dir: Path) -> None:
    db = open_dir / "demo.duckdb"
    shutil.copy(demo_db, db)
    db.chmod(0o600)  # as `logmine ingest` makes it
    (open_dir / "old.html").write_text("old")
    (open_dir / "old.html").chmod(0o644)  # a report written before: overwritten, it is closed too
    for args in (["report", "-o", "report.html"], ["report", "-o", "report.md"], ["report", "-o", "old.html"],
                 ["export", "--parquet", "export"]):
        done = logmine(*args, "--db", str(db), cwd=open_dir)
        assert done.returncode == 0, done.stderr
    parquet = sorted((open_dir / "export").rglob("*.parquet"))
    assert parquet
    for path in [db, open_dir / "report.html", open_dir / "report.md", open_dir / "old.html", parquet[0]]:
        assert path.stat().st_mode & 0o077 == 0, path
        seen = as_second_user("cat", str(path))
        assert seen.returncode != 0 and seen.stdout == b"", path
        assert b"Permission denied" in seen.stderr, path
    assert as_second_user("ls", str(open_dir / "export")).returncode != 0  # the folders are closed too
    # The owner still reads them.
    assert (open_dir / "report.md").read_text().startswith("#")


def test_a_database_others_may_read_gives_files_they_may_read(demo_db: Path, open_dir: Path) -> None:
    """The database's access, not a fixed one: a database shared with the group shares its report."""
    db = open_dir / "demo.duckdb"
    shutil.copy(demo_db, db)
    db.chmod(0o640)
    assert logmine("report", "-o", "report.md", "--db", str(db), cwd=open_dir).returncode == 0
    assert (open_dir / "report.md").stat().st_mode & 0o777 == 0o640
