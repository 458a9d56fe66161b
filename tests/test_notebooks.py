"""The notebooks run top to bottom in a real Jupyter kernel and show the demo's figures."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")

REPO = Path(__file__).resolve().parents[1]


def test_explore_notebook_executes(tmp_path: Path) -> None:
    work = tmp_path / "repo"
    shutil.copytree(REPO / "examples", work / "examples")
    (work / "notebooks").mkdir()
    notebook = nbformat.read(REPO / "notebooks" / "explore.ipynb", as_version=4)
    nbclient.NotebookClient(notebook, timeout=180, kernel_name="python3",
                            resources={"metadata": {"path": str(work / "notebooks")}}).execute()
    outputs = {i: "".join(o.get("text", "") + str(o.get("data", {}).get("text/plain", "")) for o in cell.outputs)
               for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"}
    assert "(1205, 1205)" in outputs[1]
    assert "failed" in outputs[9] and "host_memory" in outputs[10]
    assert "image/png" in str(notebook.cells[5].outputs)
