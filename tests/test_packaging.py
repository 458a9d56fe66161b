"""What `pip install logmine` gives a user: every package of the tree in the wheel, and a logmine that starts
from it in a new virtual environment (the editable install of the checkout would hide a missing package)."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "demo"


def declared() -> tuple[set[str], dict[str, str]]:
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return set(setup["packages"]), setup["package-dir"]


def test_every_package_of_the_tree_is_declared():
    packages, folders = declared()
    in_tree = set()
    for package, folder in folders.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            in_tree.add(".".join([package, *parts]))
    assert in_tree == packages


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out),
                    str(ROOT)], check=True, capture_output=True, timeout=300)
    (built,) = out.glob("logmine-*.whl")
    return built


def test_the_wheel_carries_every_module_and_data_file(wheel: Path):
    names = set(zipfile.ZipFile(wheel).namelist())
    packages, folders = declared()
    expected = set()
    for package, folder in folders.items():
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in {".py", ".sql", ".ipynb", ".tsv", ".json", ".jsonl", ".j2",
                                                   ".properties"} and "__pycache__" not in path.parts:
                if ".ipynb_checkpoints" in path.parts:
                    continue
                expected.add("/".join([*package.split("."), *path.relative_to(ROOT / folder).parts]))
    assert expected - names == set()


def test_an_installed_wheel_ingests_and_answers(wheel: Path, tmp_path: Path):
    """A new venv (with this machine's packages for the dependencies) holding only the wheel's logmine."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, system_site_packages=True, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True,
                   capture_output=True, timeout=300)
    where = subprocess.run([python, "-c", "import logmine, logmine.parsers; print(logmine.__file__); "
                            "print(logmine.parsers.__file__)"], cwd=tmp_path, capture_output=True, text=True,
                           check=True).stdout.split()
    assert all(str(env_dir) in w for w in where), where  # the wheel's copy, not the checkout's
    db = tmp_path / "demo.duckdb"
    logmine = env_dir / "bin" / "logmine"
    ingested = subprocess.run([logmine, "ingest", EXAMPLE / "journal.txt", EXAMPLE / "session.opencode.json",
                               "--db", db], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert ingested.returncode == 0, ingested.stderr
    runs = subprocess.run([logmine, "runs", "--db", db, "--format", "csv", "--columns", "ordinal,end_reason"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert runs.returncode == 0, runs.stderr
    assert runs.stdout.splitlines()[0] == "ordinal,end_reason"
    assert len(runs.stdout.splitlines()) == 4  # the demo's three runs
