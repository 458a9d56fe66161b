"""The bundled notebooks run top to bottom in a real Jupyter kernel on a database they are pointed at
through LOGMINE_DB (as `logmine lab` does), and show the figures of the run and source asked for."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .conftest import SAMPLE, shared_path

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("sql", reason="jupysql (the notebook extra) is not installed")

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "examples" / "demo"
# Appended to explore.ipynb: what its charts show, read from the figures it drew, and the rows of its %%sql cell.
EXPLORE_PROBE = """
import json
from matplotlib.backends.backend_agg import FigureCanvasAgg

FigureCanvasAgg(phases_fig).draw()  # shown and closed by now: drawn again off screen
renderer = phases_fig.canvas.get_renderer()
legend_box = phases_ax.get_legend().get_window_extent(renderer)
print(json.dumps({
    "phase_labels": [label.get_text() for label in phases_ax.get_yticklabels()],
    "legend_over_a_bar": any(legend_box.overlaps(bar.get_window_extent(renderer)) for bar in phases_ax.patches),
    "decode_minutes": {line.get_label(): [float(min(line.get_xdata())), float(max(line.get_xdata()))]
                       for line in decode_ax.get_lines()},
    "unfinished": [[patch.get_y() + patch.get_height() / 2, patch.get_x() + patch.get_width()]
                   for patch in phases_ax.patches if patch.get_hatch() == "//"],
    "sql_rows": next(v for v in Out.values() if isinstance(v, pd.DataFrame) and "decode_lines" in v).values.tolist(),
}, default=int))
"""
# Appended to postmortem.ipynb: the run it chose and the runs it listed.
POSTMORTEM_PROBE = """
import json
print(json.dumps({"source": SOURCE, "run": RUN, "listed": runs[["source", "ordinal"]].values.tolist()}, default=int))
"""


def execute(name: str, db: Path | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, run: str | None = None,
            source: str | None = None, probe: str | None = None) -> dict[str, str]:
    """Run notebooks/NAME.ipynb in tmp_path with LOGMINE_DB=db (unset for None), LOGMINE_RUN and
    LOGMINE_SOURCE; each tagged cell's outputs as one text (the probe's under the tag `probe`)."""
    for variable, value in {"LOGMINE_DB": db, "LOGMINE_RUN": run, "LOGMINE_SOURCE": source}.items():
        if value is None:
            monkeypatch.delenv(variable, raising=False)
        else:  # the kernel inherits the environment, as under `logmine lab`
            monkeypatch.setenv(variable, str(value))
    notebook = nbformat.read(REPO / "notebooks" / f"{name}.ipynb", as_version=4)
    if probe:
        notebook.cells.append(nbformat.v4.new_code_cell(probe, metadata={"tags": ["probe"]}))
    tmp_path.mkdir(parents=True, exist_ok=True)
    nbclient.NotebookClient(notebook, timeout=180, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert (tmp_path / "demo.duckdb").exists() == (db is None)  # the database given, else the example
    return {tag: "\n".join(cell_text(o) for o in cell.outputs)
            for cell in notebook.cells for tag in cell.metadata.get("tags", [])}


def cell_text(output: dict) -> str:
    data = output.get("data", {})
    return (output.get("text", "") + str(data.get("text/markdown") or data.get("text/plain", ""))
            + ("<image/png>" if "image/png" in data else ""))


def test_explore_notebook(demo_db: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A pyproject.toml above the notebook's folder: jupysql looks for its settings there, and must not say so.
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'mine'\n")
    out = execute("explore", demo_db, monkeypatch, tmp_path, probe=EXPLORE_PROBE)
    assert f"database: {demo_db}" in out["setup"]
    assert re.search(r"decode_batches_by_run\s+view\s+789", out["tables"])
    assert "decode_batch    789" in out["line-kinds"]
    assert out["jupysql-connect"] == ""  # no "The 'toml' package isn't installed", no tips
    charts = json.loads(out["probe"])
    # jupysql over the SQLAlchemy engine: decode lines and peak batch per source and run, then its connection
    # is closed.
    journal = str(DEMO / "journal.txt")
    assert charts["sql_rows"] == [[journal, 1, 648, 107.1, 7], [journal, 3, 141, 42.6, 2]]
    assert "run  decode_batches" not in out["named-queries"] and re.search(r"memory-budget +9\b", out["named-queries"])
    assert "<image/png>" in out["load-phases"] and "host_cache_s" in out["load-phases"]
    assert "<image/png>" in out["serving"] and "648" in out["serving"]
    assert charts["phase_labels"] == ["journal.txt run 1", "journal.txt run 2", "journal.txt run 3"]
    assert not charts["legend_over_a_bar"]
    # Run 2 failed while starting: its bar goes on, unfinished, to where it stopped (10:33:42 to 10:35:02).
    assert charts["unfinished"] == [[1.0, 80.0]]
    # Minutes since each run's start: run 1 decoded from 2.3 to 27.75 min after its start, run 3 from 2.6.
    assert charts["decode_minutes"] == {"journal.txt run 1": [2.3, 27.75],
                                        "journal.txt run 3": [2.6, pytest.approx(9.6167, abs=1e-3)]}


def test_explore_notebook_names_each_run_by_its_source(two_journals_db: Path, monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    charts = json.loads(execute("explore", two_journals_db, monkeypatch, tmp_path, probe=EXPLORE_PROBE)["probe"])
    a, b = (str(two_journals_db.parent / host / "journal.txt") for host in ("gpu-a", "gpu-b"))
    assert charts["sql_rows"] == [[a, 1, 648, 107.1, 7], [a, 3, 141, 42.6, 2], [b, 1, 648, 107.1, 7]]
    assert charts["phase_labels"] == ["gpu-a/journal.txt run 1", "gpu-a/journal.txt run 2",
                                      "gpu-a/journal.txt run 3", "gpu-b/journal.txt run 1",
                                      "gpu-b/journal.txt run 2"]
    assert charts["decode_minutes"] == {"gpu-a/journal.txt run 1": [2.3, 27.75],
                                        "gpu-a/journal.txt run 3": [2.6, pytest.approx(9.6167, abs=1e-3)],
                                        "gpu-b/journal.txt run 1": [2.3, 27.75]}


def test_explore_legend_beside_the_longest_start(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The kimi-k25 sample's run 3 is its longest start: its bar reaches the right edge of the chart."""
    db = tmp_path / "kimi.duckdb"
    from logmine import api

    api.ingest([str(shared_path("samples", "kimi-k25", "journal.txt"))], db=db)
    charts = json.loads(execute("explore", db, monkeypatch, tmp_path, probe=EXPLORE_PROBE)["probe"])
    assert charts["phase_labels"] == ["journal.txt run 1", "journal.txt run 2", "journal.txt run 3"]
    assert not charts["legend_over_a_bar"]
    # Run 2 never became ready: its bar goes on, unfinished, to where it stopped (23:31:07 to 23:33:41).
    assert charts["unfinished"] == [[1.0, 154.0]]


def test_postmortem_notebook_looks_at_the_run_that_failed(demo_db: Path, monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    out = execute("postmortem", demo_db, monkeypatch, tmp_path)
    # The run's root cause first, then systemd's verdict.
    assert out["setup"].startswith("**Run 2** of `journal.txt`: started 2026-03-12 10:33:42, **failed**: host "
                                   "memory: ValueError: Not enough host memory available.")
    assert out["why-it-ended"].startswith("run 2: failed; host memory: ValueError: Not enough host memory available.")
    assert "; Main process exited, code=exited, status=1/FAILURE; 2 error(s) logged" in out["why-it-ended"]
    assert out["why-it-ended"].count("host_memory") == 2
    assert "38.65" in out["phases"] and "all ranks" in out["memory"]
    assert "hicache_ratio        2.0        3.0" in out["config-changes"]
    assert "enable_hierarchical_cache': [False, True]" in out["links"]
    # What the next configuration would cost, from run 2's own figures, and its host pools against the host.
    assert out["next-config"].startswith("from run 2; host pools: 240.68 GB per node, 98.84 GB available, fits: False")
    assert "raise mem_fraction_static" in out["next-config"] and "FP8 KV cache" in out["next-config"]


def test_postmortem_of_a_run_without_an_exit_line(demo_db: Path, monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    out = execute("postmortem", demo_db, monkeypatch, tmp_path, run="3")
    assert out["setup"] == "**Run 3** of `journal.txt`: started 2026-03-12 10:37:02, **running**"
    assert out["why-it-ended"].startswith("run 3: running; no exit line; 0 error(s) logged")
    assert "nan" not in out["setup"] + out["why-it-ended"].splitlines()[0]


def test_postmortem_chooses_a_run_by_source_and_ordinal(two_journals_db: Path, monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    """Both journals' runs 2 failed at the same time: the last-ingested source's is taken; its runs alone are
    listed (gpu-b has 2, gpu-a 3); a source or SOURCE:ORDINAL picks the other."""
    a, b = (str(two_journals_db.parent / host / "journal.txt") for host in ("gpu-a", "gpu-b"))
    default = execute("postmortem", two_journals_db, monkeypatch, tmp_path / "default", probe=POSTMORTEM_PROBE)
    assert default["setup"].startswith("**Run 2** of `gpu-b/journal.txt`: started 2026-03-12 10:33:42, **failed**")
    assert default["runs"].startswith("`gpu-b/journal.txt`: 2 run(s)")
    assert json.loads(default["probe"]) == {"source": b, "run": 2, "listed": [[b, 1], [b, 2]]}
    for i, (run, source) in enumerate([(None, "gpu-a/journal.txt"), ("2", a), ("gpu-a/journal.txt:2", None)]):
        out = execute("postmortem", two_journals_db, monkeypatch, tmp_path / str(i), run=run, source=source,
                      probe=POSTMORTEM_PROBE)
        assert out["setup"].startswith("**Run 2** of `gpu-a/journal.txt`: started 2026-03-12 10:33:42, **failed**")
        assert out["runs"].startswith("`gpu-a/journal.txt`: 3 run(s)")
        assert out["why-it-ended"].startswith("run 2: failed; host memory: ValueError")
        assert json.loads(out["probe"]) == {"source": a, "run": 2, "listed": [[a, 1], [a, 2], [a, 3]]}


def test_postmortem_among_sources_months_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo, the kimi-k25 sample and a GLM-Air probe that failed in June: the last run to end badly is the
    probe's only run, not run 1 of another source."""
    glm = shared_path("corpus", "sglang", "mattbucci__2x-3090-GA102-300-A1-sglang-inference__benchmarks__"
                                          "glm-air-probe-2026-06-11__server-a2-tail.log")
    db = tmp_path / "multi.duckdb"
    from logmine import api

    api.ingest([str(DEMO / "journal.txt"), str(shared_path("samples", "kimi-k25", "journal.txt")), str(glm)], db=db)
    out = execute("postmortem", db, monkeypatch, tmp_path, probe=POSTMORTEM_PROBE)
    assert json.loads(out["probe"]) == {"source": str(glm), "run": 1, "listed": [[str(glm), 1]]}
    assert out["setup"].startswith(f"**Run 1** of `{glm.name}`: started 2026-06-11 05:11:58, **failed**: device "
                                   "memory: torch.OutOfMemoryError: CUDA out of memory.")
    assert out["runs"].startswith(f"`{glm.name}`: 1 run(s)")
    assert out["why-it-ended"].startswith("run 1: failed; device memory: torch.OutOfMemoryError")
    assert "; 1 error(s) logged" in out["why-it-ended"]
    assert "torch.OutOfMemoryError" in out["why-it-ended"]
    kimi = execute("postmortem", db, monkeypatch, tmp_path / "kimi", source=str(SAMPLE / "journal.txt"), run="3")
    assert kimi["setup"] == "**Run 3** of `kimi-k25/journal.txt`: started 2026-03-01 23:33:42, **running**"
    # Config values as the log wrote them: a ratio of 4.0 and a seed of ten digits, not 4.000000e+00.
    assert re.search(r"hicache_ratio\s+2\.0\s+4\.0\n", kimi["config-changes"]), kimi["config-changes"]
    assert "e+0" not in kimi["config-changes"]


def test_postmortem_refuses_a_bare_ordinal_of_several_sources(two_journals_db: Path,
                                                             monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(nbclient.exceptions.CellExecutionError) as refused:
        execute("postmortem", two_journals_db, monkeypatch, tmp_path, run="2")
    assert (refused.value.ename, refused.value.evalue) == (
        "LookupError", "run '2': several sources have runs (gpu-a/journal.txt, gpu-b/journal.txt); name it as "
                       "SOURCE:ORDINAL, e.g. gpu-a/journal.txt:2")


def test_postmortem_without_a_database_shows_the_bundled_example(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    out = execute("postmortem", None, monkeypatch, tmp_path)
    assert out["setup"].startswith("**Run 2** of `journal.txt`: started 2026-03-12 10:33:42, **failed**")
    assert "enable_hierarchical_cache': [False, True]" in out["links"]  # the example's transcript too
