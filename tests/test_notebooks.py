"""The bundled notebooks run top to bottom in a real Jupyter kernel on a database they are pointed at
through LOGMINE_DB (as `logmine lab` does), and show the demo's figures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("sql", reason="jupysql (the notebook extra) is not installed")

REPO = Path(__file__).resolve().parents[1]


def execute(name: str, db: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """Run notebooks/NAME.ipynb with LOGMINE_DB=db; each tagged cell's outputs as one text."""
    monkeypatch.setenv("LOGMINE_DB", str(db))  # the kernel inherits the environment, as under `logmine lab`
    monkeypatch.delenv("LOGMINE_RUN", raising=False)
    notebook = nbformat.read(REPO / "notebooks" / f"{name}.ipynb", as_version=4)
    nbclient.NotebookClient(notebook, timeout=180, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert not (tmp_path / "demo.duckdb").exists()  # it used the database it was given
    return {tag: "".join(o.get("text", "") + str(o.get("data", {}).get("text/plain", "")) +
                         ("<image/png>" if "image/png" in o.get("data", {}) else "") for o in cell.outputs)
            for cell in notebook.cells for tag in cell.metadata.get("tags", [])}


def test_explore_notebook(demo_db: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    out = execute("explore", demo_db, monkeypatch, tmp_path)
    assert f"database: {demo_db}" in out["setup"]
    assert re.search(r"decode_batches_by_run\s+view\s+789", out["tables"])
    assert "decode_batch    789" in out["line-kinds"]
    # jupysql over the SQLAlchemy engine: decode lines and peak batch per run, then its connection is closed.
    assert out["sql-magic"].split("\n")[1].split() == ["0", "1", "648", "107.1", "7"]
    assert "run  decode_batches" not in out["named-queries"] and re.search(r"memory-budget +9\b", out["named-queries"])
    assert "<image/png>" in out["load-phases"] and "host_cache_s" in out["load-phases"]
    assert "<image/png>" in out["serving"] and "648" in out["serving"]


def test_postmortem_notebook_looks_at_the_run_that_failed(demo_db: Path, monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    out = execute("postmortem", demo_db, monkeypatch, tmp_path)
    assert out["why-it-ended"].startswith("run 2: failed; Main process exited, code=exited, status=1/FAILURE; "
                                          "2 error(s) logged")
    assert out["why-it-ended"].count("host_memory") == 2
    assert "38.65" in out["phases"] and "all ranks" in out["memory"]
    assert "hicache_ratio        2.0        3.0" in out["config-changes"]
    assert "enable_hierarchical_cache': [False, True]" in out["links"]
