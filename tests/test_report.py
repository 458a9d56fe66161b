"""`logmine report`: the postmortem rendered from real databases (the bundled example and the kimi-k25
sample), read back as a browser shows it (headless Chromium), in both formats."""

from __future__ import annotations

import html as html_module
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from click.testing import CliRunner

from logmine import api
from logmine.cli import main
from logmine.query import named_queries
from logmine.report import build
from logmine.report.data import gather
from logmine.report.serving import trend_panels
from tests.conftest import REPO, shared_path

CHROMIUM = Path("/usr/bin/chromium")
DEMO = REPO / "examples" / "demo"
# The page's own requests carry its (opaque, file://) origin as initiator; Chromium's background
# services (updates, time) say "not an origin".
BROWSER_OWN = "not an origin"

XSS_LOG = """\
[2026-03-01 10:00:00] server_args=ServerArgs(model_path='/m/<script>alert(1)</script>', \
served_model_name='<img src=x onerror=alert(3)>', tp_size=1, mem_fraction_static=0.8)
[2026-03-01 10:00:02] Init torch distributed begin.
[2026-03-01 10:00:03] Load weight begin. avail mem=78.00 GB
[2026-03-01 10:00:05] Scheduler hit an exception: Traceback (most recent call last):
  File "/opt/sglang/scheduler.py", line 10, in run_scheduler_process
    raise ValueError("<script>alert(1)</script>")
ValueError: <img src=x onerror=alert(2)> <script>alert(1)</script>
[2026-03-01 10:00:05] Received sigquit from a child process. It usually means the child failed.
"""


class Page(HTMLParser):
    """What a reader of the rendered DOM sees: its text (style sheets left out) and its elements."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.tags: list[str] = []
        self.links: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self._in_style = tag == "style"
        self.links += [v or "" for k, v in attrs if k in ("src", "href", "xlink:href", "action", "srcset", "poster")]

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if not self._in_style:
            self.text.append(data)

    @classmethod
    def read(cls, html: str) -> Page:
        page = cls()
        page.feed(html)
        return page

    @property
    def words(self) -> str:
        return " ".join(" ".join(self.text).split())


def chromium(page: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", *args, page.as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    shutil.rmtree(profile, ignore_errors=True)
    return done


def rendered(con: duckdb.DuckDBPyConnection, tmp: Path, name: str) -> tuple[str, str, Path]:
    html, markdown = api.report(con, fmt="html"), api.report(con, fmt="markdown")
    path = tmp / f"{name}.html"
    path.write_text(html, encoding="utf-8")
    return html, markdown, path


@pytest.fixture(scope="module")
def kimi(ingested: Callable[..., duckdb.DuckDBPyConnection], tmp_path_factory: pytest.TempPathFactory):
    sample = shared_path("samples", "kimi-k25")
    con = ingested(sample / "journal.txt", sample / "session.opencode.json")
    tmp = tmp_path_factory.mktemp("report-kimi")
    html, markdown, path = rendered(con, tmp, "kimi")
    con.close()
    net_log = tmp / "net.json"
    dom = chromium(path, tmp, '--host-resolver-rules=MAP * ~NOTFOUND', f"--log-net-log={net_log}",
                   "--dump-dom").stdout
    return {"html": html, "markdown": markdown, "path": path, "dom": dom, "net_log": net_log, "tmp": tmp}


@pytest.fixture(scope="module")
def demo(ingested: Callable[..., duckdb.DuckDBPyConnection], tmp_path_factory: pytest.TempPathFactory):
    con = ingested(DEMO / "journal.txt", DEMO / "session.opencode.json")
    tmp = tmp_path_factory.mktemp("report-demo")
    html, markdown, path = rendered(con, tmp, "demo")
    con.close()
    return {"html": html, "markdown": markdown, "dom": chromium(path, tmp, "--dump-dom").stdout}


def test_kimi_report_shows_the_scenario_as_a_browser_renders_it(kimi: dict) -> None:
    seen = Page.read(kimi["dom"]).words
    assert "3 server starts of kimi-k2.5 (8 ranks)" in seen
    assert "Run 1 was ready after 690 s (11 min 30 s)" in seen
    assert "Run 3 was ready after 736 s (12 min 16 s)" in seen
    # Run 2 was restarted by the agent while loading: the report says so, and that it was no crash.
    assert "Run 2 never became ready: it was stopped while still loading weights" in seen
    assert "an operator's restart, not a crash" in seen
    assert "44.77 GB (41.70 GiB)" in seen and "358.16 GB (333.56 GiB)" in seen
    assert "159,277 tokens, 10.42 GiB" in seen
    assert "1,274,216" not in seen  # KV tokens are per rank, never summed over the 8 ranks
    assert "hicache_ratio 2.0 → 4.0" in seen
    assert "after the user asked “can we do ratio 4?”" in seen
    assert "“What about hicache?”" in seen
    assert "All 26 tool calls, in order; 1 failed" in seen  # message 22's, which the bash tool's timeout ended
    assert "Tool calls the tool ended (timeouts, interrupts, denials) message tool ended by after command 22" in seen
    # The agent's claims (knowledge extraction's query), inconsistent first: the GiB/GB mix-up of message 22.
    claims = seen.split("The agent's claims, checked against the logs")[1]
    assert claims.index("inconsistent") < claims.index("consistent message")
    assert "4 x 10.42 = ~41.7 GB per GPU" in claims and "GiB written as GB" in claims
    # Citations: the figure's line, shown with it (hover chip with the line's text inside).
    assert "journal.txt:1517" in seen and "Allocating 44.77 GB host memory for hierarchical KV cache" in seen
    for section in ("Summary", "Timeline of every run", "Why each run ended", "Memory budget per configuration",
                    "Configuration changes", "Serving", "The agent"):
        assert section in seen


def test_kimi_report_in_markdown_carries_the_same_figures(kimi: dict) -> None:
    md = kimi["markdown"]
    for figure in ("690 s", "736 s", "44.77 GB (41.70 GiB)", "358.16 GB (333.56 GiB)", "159,277 tokens, 10.42 GiB",
                   "hicache\\_ratio 2.0 → 4.0", "“can we do ratio 4?”", "[`journal.txt:1517`]"):
        assert figure in md
    assert md.rstrip().endswith("```") and "journal.txt:1517  [2026-03-01 23:43:32 TP0] Allocating 44.77 GB" in md


def test_no_request_leaves_the_page(kimi: dict) -> None:
    page = Page.read(kimi["html"])
    assert all(link.startswith("#") for link in page.links), page.links
    assert not {"script", "link", "iframe", "img", "object", "embed"} & set(page.tags)
    assert not re.search(r"url\((?!#)|@import", kimi["html"])  # SVG clip paths refer to ids in the page
    assert "default-src 'none'" in kimi["html"]  # and the browser is told to refuse anything else
    events = json.loads(kimi["net_log"].read_text())
    start_job = events["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    jobs = [e["params"] for e in events["events"] if e["type"] == start_job and "url" in e.get("params", {})]
    requested = [job["url"] for job in jobs if job.get("initiator") != BROWSER_OWN]
    assert jobs  # the log was on (Chromium's own services are in it): an empty log would prove nothing
    assert [url for url in requested if not url.startswith("file:")] == []


def test_screenshot_of_the_kimi_report(kimi: dict) -> None:
    png = kimi["tmp"] / "kimi-report.png"
    chromium(kimi["path"], kimi["tmp"], f"--screenshot={png}", "--window-size=1280,4000")
    from PIL import Image

    image = Image.open(png)
    assert image.size == (1280, 4000)
    # Text, charts and tables, not a blank page: many colours in the page's top half.
    assert len(image.crop((0, 0, 1280, 2000)).getcolors(1 << 20) or []) > 200
    print(f"screenshot: {png}")


def test_demo_report_in_both_formats(demo: dict) -> None:
    seen = Page.read(demo["dom"]).words
    assert "3 server starts of qwen3-32b (2 ranks)" in seen
    assert "Run 2 never became ready: it failed while allocating the HiCache host pool: host memory failure" in seen
    assert "Requesting 120.34 GB but only have 88.10 GB free" in seen
    assert "80.23 GB (74.72 GiB)" in seen and "160.46 GB (149.44 GiB)" in seen
    assert "hicache_ratio 3.0 → 2.0" in seen and "“yes go with 2.0, before it retries”" in seen
    md = demo["markdown"]
    assert "Run 3 was ready after 115 s" in md and "<details><summary>" in md


def test_log_text_is_escaped(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(XSS_LOG)
    db = tmp_path / "x.duckdb"
    api.ingest([str(log)], db=db)
    with api.open_db(db) as con:
        html, markdown, path = rendered(con, tmp_path, "xss")
    assert not re.search(r"<script|<img", html, re.I)
    page = Page.read(chromium(path, tmp_path, "--dump-dom").stdout)
    assert not {"script", "img"} & set(page.tags)
    assert "ValueError: <img src=x onerror=alert(2)> <script>alert(1)</script>" in page.words
    assert "of <img src=x onerror=alert(3)>" in page.words
    # Markdown: raw only inside code fences (shown literally), escaped everywhere else.
    outside_code = re.sub(r"^(`{3,})\n.*?^\1$", "", markdown, flags=re.S | re.M)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in outside_code
    assert not re.search(r"<script|<img", outside_code, re.I)


def test_cli_writes_by_suffix_and_to_stdout(tmp_path: Path, ingested: Callable[..., duckdb.DuckDBPyConnection]) -> None:
    con = ingested(DEMO / "journal.txt", DEMO / "session.opencode.json")
    db = next(path for _, name, path in con.execute("PRAGMA database_list").fetchall() if name != "temp")
    con.close()
    runner = CliRunner()
    done = runner.invoke(main, ["report", "--db", str(db), "--run", "3", "-o", str(tmp_path / "r.md")])
    assert done.exit_code == 0, done.output
    text = (tmp_path / "r.md").read_text()
    assert text.startswith("# Postmortem: qwen3-32b on gpu-box, 2026-03-12\n") and "1 run of journal.txt," in text
    assert "Run 3 was ready after 115 s" in text
    done = runner.invoke(main, ["report", "--db", str(db), "-o", "-", "--format", "html"])
    assert done.exit_code == 0 and done.output.startswith("<!DOCTYPE html>")
    done = runner.invoke(main, ["report", "--db", str(db), "-o", str(tmp_path / "r.pdf")])
    assert done.exit_code != 0 and "unknown report suffix '.pdf'" in str(done.exception or done.output)


def test_claims_table_puts_inconsistent_first(monkeypatch: pytest.MonkeyPatch,
                                                   ingested: Callable[..., duckdb.DuckDBPyConnection]) -> None:
    """The claims table from rows chosen for it (the claims query's columns): every verdict, inconsistent first."""
    claims = pd.DataFrame({
        "session": ["s1", "s1", "s1"], "message": [3, 5, 6], "text": ["KV pool 37.36 GB", "~334 GB total", "maybe"],
        "value": [37.36, 334.0, None], "unit": ["GB", "GB", None], "measured": [37.36, 358.16, None],
        "measured_source": ["journal run 1 TP0", "journal run 3: sum of 8 lines", None],
        "verdict": ["consistent", "inconsistent", "unverifiable"]})
    real_execute = named_queries.execute
    monkeypatch.setattr(named_queries, "execute",
                        lambda con, name, **params: claims if name == "claims" else real_execute(con, name, **params))
    con = ingested(DEMO / "journal.txt", DEMO / "session.opencode.json")
    md = api.report(con, fmt="markdown")
    con.close()
    counts, table = md.split("### The agent's claims, checked against the logs")[1].split("\n\n")[1:3]
    assert counts.strip() == "1 inconsistent, 1 consistent, 1 unverifiable."
    table = table.splitlines()
    assert [row.split(" | ")[0] for row in table[2:]] == ["| inconsistent", "| consistent", "| unverifiable"]
    assert "~334 GB total | 334.00 GB | 358.16 GB | journal run 3: sum of 8 lines" in table[2]


# A log line cited in Markdown: [`FILE:LINE`] (a transcript message's citation has a space in it).
CITED_LINE = re.compile(r"\[`(\S+):\d+`\]")


def section(markdown: str, title: str) -> str:
    return markdown.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def table_rows(markdown: str) -> list[list[str]]:
    """The cells of a Markdown table's body rows (the header and its rule left out)."""
    lines = [line for line in markdown.splitlines() if line.startswith("| ")][1:]
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]


def timeline_phases(markdown: str) -> dict[str, list[str]]:
    """The timeline's tables (one per source): each phase's cells, one per run, the sources' runs in order."""
    phases: dict[str, list[str]] = {}
    for block in section(markdown, "Timeline of every run").split("\n\n"):
        for row in table_rows(block):
            phases.setdefault(row[0], []).extend(row[1:])
    return phases


@pytest.fixture(scope="module")
def two_journals(two_journals_db: Path) -> str:
    with api.open_db(two_journals_db) as con:
        return api.report(con, fmt="markdown")


def test_a_report_of_two_journals_describes_each_server_apart(two_journals: str) -> None:
    md = two_journals
    assert md.startswith("# Postmortem: qwen3-32b, qwen3-8b on gpu-box, 2026-03-12\n\n"
                         "_5 runs of gpu-a/journal.txt, gpu-b/journal.txt, ")
    summary = section(md, "Summary").strip().split("\n\n")
    openers = [i for i, sentence in enumerate(summary) if " server starts of " in sentence]
    assert [summary[i] for i in openers] == [
        "3 server starts of qwen3-32b (2 ranks) in gpu-a/journal.txt, from 2026-03-12 10:05:20 to 2026-03-12 "
        "10:48:51; 2 became ready. [`gpu-a/journal.txt:3`]",  # its last line: run 3 serves to the end
        "2 server starts of qwen3-8b (2 ranks) in gpu-b/journal.txt, from 2026-03-12 10:05:20 to 2026-03-12 "
        "10:35:02; 1 became ready. [`gpu-b/journal.txt:3`]"]
    # Each source's runs and changes follow its own opener, and name their file.
    gpu_a, gpu_b = summary[openers[0]:openers[1]], summary[openers[1]:]
    assert [s.split(" was ")[0].split(" never ")[0] for s in gpu_a if s.startswith("Run ")] == [
        "Run 1 of gpu-a/journal.txt", "Run 2 of gpu-a/journal.txt", "Run 3 of gpu-a/journal.txt"]
    assert [s.split(" was ")[0].split(" never ")[0] for s in gpu_b if s.startswith("Run ")] == [
        "Run 1 of gpu-b/journal.txt", "Run 2 of gpu-b/journal.txt"]
    assert ("From run 1 to run 2 of gpu-b/journal.txt the configuration changed: enable\\_hierarchical\\_cache "
            "False → True, hicache\\_ratio 2.0 → 3.0; run 2 never became ready. [`gpu-b/journal.txt:912`]") in gpu_b
    assert gpu_b[-1] == ("The last configuration's KV pool holds 306,048 tokens (37.36 GiB) on each of its 2 ranks. "
                         "[`gpu-b/journal.txt:925`]")
    assert re.findall(r"^### (Run \d+ of \S+):", md, re.M) == [
        "Run 1 of gpu-a/journal.txt", "Run 2 of gpu-a/journal.txt", "Run 1 of gpu-b/journal.txt",
        "Run 2 of gpu-b/journal.txt"]
    changes = [row[:4] for row in table_rows(section(md, "Configuration changes").split("### Who")[0])]
    assert [row for row in changes if row[0].endswith(" of gpu-b/journal.txt")] == [
        ["1 → 2 of gpu-b/journal.txt", "enable\\_hierarchical\\_cache", "False", "True"],
        ["1 → 2 of gpu-b/journal.txt", "hicache\\_ratio", "2.0", "3.0"],
        ["1 → 2 of gpu-b/journal.txt", "random\\_seed", "417099130", "936180750"]]


def test_a_run_that_never_became_ready_stops_at_a_phase_of_its_own_server(two_journals: str) -> None:
    """Run 2 of each server died in the phase its own lines show: HiCache refused its host pool (gpu-b's run 1
    never had one, so the phase is read from run 2's lines, not guessed from its siblings)."""
    timeline = timeline_phases(two_journals)
    died = "failed here (HiCache host pool)"
    # Each source's table names its file once and cites lines.
    assert timeline["HiCache host pool"] == ["", died, "34 s [`:995`]", "", died]
    assert timeline["warmup"][3:] == ["1 s [`:34`]", ""]
    assert "_Cited lines: gpu-a/journal.txt_" in two_journals and "_Cited lines: gpu-b/journal.txt_" in two_journals


def test_every_citation_of_two_journals_names_its_own_file(two_journals_db: Path, two_journals: str) -> None:
    assert set(CITED_LINE.findall(two_journals)) == {"gpu-a/journal.txt", "gpu-b/journal.txt"}
    with api.open_db(two_journals_db) as con:
        cited = build(con).citations()
    files = {(c.ref.rpartition(":")[0], c.where.removesuffix(c.ref.rpartition(":")[0])) for c in cited}
    assert {name for name, _ in files} == {"gpu-a/journal.txt", "gpu-b/journal.txt"}
    assert all(where.endswith("/") for _, where in files)  # the name is the end of the path it stands for
    evidence = section(two_journals, "Evidence")
    assert "\ngpu-b/journal.txt:934  Scheduler hit an exception: Traceback (most recent call last):\n" in evidence


def test_a_report_of_one_journal_of_two_names_the_file_but_not_each_run(two_journals_db: Path) -> None:
    with api.open_db(two_journals_db) as con:
        md = api.report(con, fmt="markdown", source="gpu-b/journal.txt")
    assert md.startswith("# Postmortem: qwen3-8b on gpu-box, 2026-03-12\n\n_2 runs of gpu-b/journal.txt, ")
    assert "2 server starts of qwen3-8b (2 ranks) in gpu-b/journal.txt" in md
    assert "\n\nRun 2 never became ready: it failed while allocating the HiCache host pool" in md
    assert set(CITED_LINE.findall(md)) == {"gpu-b/journal.txt"}  # the database still holds gpu-a's journal.txt


@pytest.fixture(scope="module")
def demo_and_kimi(ingested: Callable[..., duckdb.DuckDBPyConnection]) -> Callable[[], duckdb.DuckDBPyConnection]:
    """A connection to a database of the demo and the kimi-k25 sample, journals and transcripts."""
    sample = shared_path("samples", "kimi-k25")
    paths = (DEMO / "journal.txt", DEMO / "session.opencode.json", sample / "journal.txt",
             sample / "session.opencode.json")
    return lambda: ingested(*paths)


def test_the_demo_and_the_kimi_sample_in_one_report(demo_and_kimi: Callable[[], duckdb.DuckDBPyConnection]) -> None:
    with demo_and_kimi() as con:
        md = api.report(con, fmt="markdown")
    summary = section(md, "Summary")
    assert "3 server starts of qwen3-32b (2 ranks) in demo/journal.txt" in summary
    assert "3 server starts of kimi-k2.5 (8 ranks) in kimi-k25/journal.txt" in summary
    assert ("Run 1 of kimi-k25/journal.txt was ready after 690 s (11 min 30 s) and was restarted by the agent "
            "(message 18") in summary
    assert "The last configuration's KV pool holds 159,277 tokens (10.42 GiB) on each of its 8 ranks." in summary
    timeline = timeline_phases(md)
    assert timeline["draft model"][:3] == ["", "", ""]  # only Kimi has one: the demo's failed run 2 never began it
    assert timeline["weights"][3] == "427 s [`:130`]" and "_Cited lines: kimi-k25/journal.txt_" in md
    claims = table_rows(section(md, "The agent").split("### The agent's claims, checked against the logs")[1])
    assert [row[5] for row in claims if row[0] == "inconsistent"] == [
        "kimi-k25/journal.txt:1517", "kimi-k25/journal.txt:1505"]  # where each figure was measured


def test_a_log_cut_off_while_the_server_loads_says_how_far_it_got(tmp_path: Path) -> None:
    """It said "still running at the end of the log", over a span from the start to the start again."""
    lines = ["[2026-08-01 21:40:26] server_args=ServerArgs(model_path='m/laguna', tp_size=1)",
             "[2026-08-01 21:40:38 TP0] Init torch distributed begin.",
             "[2026-08-01 21:40:39 TP0] Init torch distributed ends. mem usage=0.23 GB",
             "[2026-08-01 21:40:40 TP0] Load weight begin. avail mem=100.00 GB",
             "[2026-08-01 21:50:58 TP0] Load weight end. type=Laguna, avail mem=60.00 GB, mem usage=40.00 GB.",
             "[2026-08-01 21:51:00 TP0] KV Cache is allocated. #tokens: 32997, KV size: 5.14 GB",
             "[2026-08-01 21:51:16 TP0] Capture cuda graph begin. This can take up to several minutes. "
             "avail mem=11.78 GB"]
    (tmp_path / "cut.log").write_text("\n".join(lines) + "\n")
    api.ingest([str(tmp_path / "cut.log")], db=tmp_path / "cut.duckdb")
    with api.open_db(tmp_path / "cut.duckdb") as con:
        markdown = api.report(con, fmt="markdown").replace("\\", "")
    assert markdown.startswith("# Postmortem: laguna, 2026-08-01\n\n_1 run of cut.log, 2026-08-01 21:40:26 – "
                               "2026-08-01 21:51:16.")
    assert "1 server start of m/laguna (1 rank) in cut.log, from 2026-08-01 21:40:26 to 2026-08-01 21:51:16" in markdown
    assert "Run 1 never became ready: it was still capturing CUDA graphs when the log ends." in markdown
    assert "The last configuration's KV pool holds 32,997 tokens (5.14 GiB) on its rank." in markdown


@pytest.mark.parametrize(("args", "more", "doing"), [
    ("tp_size=1", [], "warming up"),
    ("tp_size=1, speculative_algorithm='EAGLE3'", [], "loading the draft model"),
    ("tp_size=1, speculative_algorithm='EAGLE3'",
     ["[2026-08-01 21:53:00 TP0] Load weight begin. avail mem=10.00 GB",
      "[2026-08-01 21:53:30 TP0] Load weight end. type=LlamaForCausalLMEagle3, avail mem=9.00 GB, mem usage=1.00 GB."],
     "capturing the draft model's CUDA graphs"),
    ("tp_size=1, speculative_algorithm=None", [], "warming up"),
])
def test_a_log_cut_off_after_the_graphs_names_what_its_configuration_loads_next(
        tmp_path: Path, args: str, more: list[str], doing: str) -> None:
    """After the target's CUDA graphs it said "loading the draft model or warming up" of every server, a server
    that has no draft model too: the configuration tells which comes next."""
    lines = [f"[2026-08-01 21:40:26] server_args=ServerArgs(model_path='m/laguna', {args})",
             "[2026-08-01 21:40:40 TP0] Load weight begin. avail mem=100.00 GB",
             "[2026-08-01 21:50:58 TP0] Load weight end. type=Laguna, avail mem=60.00 GB, mem usage=40.00 GB.",
             "[2026-08-01 21:51:00 TP0] KV Cache is allocated. #tokens: 32997, KV size: 5.14 GB",
             "[2026-08-01 21:51:16 TP0] Capture cuda graph begin. This can take up to several minutes. "
             "avail mem=11.78 GB",
             "[2026-08-01 21:52:16 TP0] Capture cuda graph end. Time elapsed: 60.00 s. mem usage=0.50 GB. "
             "avail mem=11.28 GB.", *more]
    (tmp_path / "cut.log").write_text("\n".join(lines) + "\n")
    api.ingest([str(tmp_path / "cut.log")], db=tmp_path / "cut.duckdb")
    with api.open_db(tmp_path / "cut.duckdb") as con:
        markdown = api.report(con, fmt="markdown").replace("\\", "")
    assert f"Run 1 never became ready: it was still {doing} when the log ends." in markdown


def test_a_log_with_no_sglang_start_in_it_is_not_said_to_be_initialising(tmp_path: Path) -> None:
    """SGLang's router logs in Dynamo's shape; its log was a server "still initialising when the log ends"."""
    lines = ["2026-01-10T12:00:00.123456Z  INFO sglang_router_rs::server: Starting router on 0.0.0.0:8000",
             "2026-01-10T12:00:00.223456Z  INFO sglang_router_rs::routers::http::pd_router: Added prefill server: "
             "http://10.0.0.1:30000",
             "2026-01-10T12:01:10.123456Z ERROR sglang_router_rs::routers::http::pd_router: Decode server error: 502"]
    (tmp_path / "router.log").write_text("\n".join(lines) + "\n")
    api.ingest([str(tmp_path / "router.log")], db=tmp_path / "r.duckdb")
    with api.open_db(tmp_path / "r.duckdb") as con:
        summary = api.summary(con)
    assert summary[1] == ("Run 1 never became ready: it logged none of an SGLang server's start-up lines (no server "
                          "arguments, no weights, no KV pool) before the log ends.")


def test_a_report_of_one_source_holds_only_the_sessions_linked_to_its_runs(
        demo_and_kimi: Callable[[], duckdb.DuckDBPyConnection]) -> None:
    """The kimi session changed kimi's server, not the demo's: it has no place in the demo's report."""
    with demo_and_kimi() as con:
        md = api.report(con, fmt="markdown", source="demo/journal.txt", runs=[2])
    agent = section(md, "The agent")
    assert [row[0] for row in table_rows(agent.split("\n\n<details>")[0])] == ["ses\\_31e9d8b1…"]
    assert "All 6 tool calls, in order" in agent
    claims = table_rows(agent.split("### The agent's claims, checked against the logs")[1])
    assert claims and {row[5].rpartition(":")[0] for row in claims if row[5]} == {"demo/journal.txt"}
    assert "ses_36bb54d4" not in md.replace("\\", "") and "kimi" not in md


def test_a_tool_call_without_an_exit_code_says_how_it_ended(
        demo_and_kimi: Callable[[], duckdb.DuckDBPyConnection]) -> None:
    """An agent's `task` call has no exit code and no ending tool: its status, not `nan`."""
    with demo_and_kimi() as con:
        md = api.report(con, fmt="markdown")
    listing = section(md, "The agent").split("<details>")[1]
    task = [line for line in listing.splitlines() if "  task  " in line]
    assert len(task) == 1 and re.search(r"  task +81\.25 s  completed  \{", task[0]), task
    assert not re.search(r"\bnan\b", md)


# Logs of two more servers, months from the demo and the kimi sample: glm-air's tail begins with its crash
# (CUDA out of memory while starting, no start-up phase), the Ascend run has four ranks and a long name.
GLM_AIR = "mattbucci__2x-3090-GA102-300-A1-sglang-inference__benchmarks__glm-air-probe-2026-06-11__server-a2-tail.log"
ASCEND = "shun8686__for_debug__scripts__log__test_ascend_qwen3_32b_w8a8_2p_in2k_out2k_50ms.py.log"
# Measures the page as Chromium lays it out, into a <pre id="layout"> the DOM dump carries (a copy of the
# page, without its policy against scripts): the page's width, what sticks out of it, each table's
# columns and each chart's texts against the chart's box.
MEASURE = """<script>
const width = document.documentElement.clientWidth;
const box = e => e.getBoundingClientRect();
const layout = {width, page: document.documentElement.scrollWidth,
  overflowing: [...document.body.querySelectorAll('*')].filter(e => !e.closest('.scroll, svg, .line')
      && box(e).right > width + 1).map(e => e.tagName + ': ' + e.textContent.slice(0, 80)),
  columns: [...document.querySelectorAll('th')].map(c => [c.textContent, box(c).width]),
  cut: [...document.querySelectorAll('svg text')].filter(t => {
      const svg = box(t.closest('svg')), r = box(t);
      return r.left < svg.left - 1 || r.right > svg.right + 1; }).map(t => t.textContent)};
const pre = document.createElement('pre'); pre.id = 'layout'; pre.textContent = JSON.stringify(layout);
document.body.append(pre);
</script>"""


def layout(html: str, tmp: Path, width: int) -> dict:
    """The page's layout at a window `width` px wide, as MEASURE reports it."""
    page = tmp / "measured.html"
    page.write_text(re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
                    .replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dom = chromium(page, tmp, f"--window-size={width},3000", "--dump-dom").stdout
    measured = re.search(r'<pre id="layout">(.*?)</pre>', dom, re.S)
    assert measured, dom[-2000:]
    return json.loads(html_module.unescape(measured.group(1)))


@pytest.fixture(scope="module")
def four_servers(ingested: Callable[..., duckdb.DuckDBPyConnection], tmp_path_factory: pytest.TempPathFactory):
    sample, corpus = shared_path("samples", "kimi-k25"), shared_path("corpus", "sglang")
    paths = (DEMO / "journal.txt", DEMO / "session.opencode.json", sample / "journal.txt",
             sample / "session.opencode.json", corpus / GLM_AIR, corpus / ASCEND)
    with ingested(*paths) as con:
        html, markdown = api.report(con, fmt="html"), api.report(con, fmt="markdown")
        panels = trend_panels(gather(con), gather(con)["serving-trend"])
    tmp = tmp_path_factory.mktemp("report-four")
    return {"html": html, "markdown": markdown, "panels": panels, "layout": layout(html, tmp, 800)}


def test_every_run_is_on_the_timeline_even_one_whose_log_begins_with_its_crash(four_servers: dict) -> None:
    md = four_servers["markdown"]
    timeline = section(md, "Timeline of every run")
    assert f"run 1 of {GLM_AIR}: failed before its log shows any start-up phase" in timeline.replace("\\", "")
    # A table per server, its runs side by side; the glm-air run never became ready.
    assert re.findall(r"^### Phases of (\S+)$", timeline, re.M) == [
        "demo/journal.txt", "kimi-k25/journal.txt", GLM_AIR.replace("_", "\\_"), ASCEND.replace("_", "\\_")]
    assert timeline_phases(md)["until ready"][6].startswith("never ready [`:")  # its file named once below
    assert [row[0] for row in table_rows(timeline.split("### Phases of shun")[1])][:1] == ["start → init"]
    assert "| phase | run 1 TP0 | run 1 TP1 | run 1 TP2 | run 1 TP3 |" in timeline


def test_serving_over_time_is_drawn_from_each_runs_own_start(four_servers: dict) -> None:
    """Runs months apart share an axis of minutes since each one started: each a line, none a stroke."""
    panels = four_servers["panels"]
    assert list(panels) == ["decode throughput (token/s)", "KV token usage", "queued requests",
                            "prefix-cache hit share"]
    lines = panels["KV token usage"]
    assert list(lines) == ["run 1 of demo/journal.txt", "run 3 of demo/journal.txt", "run 1 of kimi-k25/journal.txt",
                           "run 3 of kimi-k25/journal.txt", "run 1 of shun8686__fo…k_50ms.py.log"]
    for label, (minutes, _) in lines.items():
        assert 0 < minutes[0] < minutes[-1] < 60, label
    assert lines["run 1 of kimi-k25/journal.txt"][0][0] > 11.5  # it served only once ready, after 690 s


def test_a_report_of_four_servers_fits_an_800_px_window(four_servers: dict) -> None:
    seen = four_servers["layout"]
    assert seen["page"] <= seen["width"] and seen["overflowing"] == []
    # Wide tables scroll in their box; no column is squeezed narrower than a short word.
    narrowest = min(seen["columns"], key=lambda column: column[1])
    assert narrowest[1] >= 60, narrowest
    assert seen["cut"] == []  # no chart text (a Gantt note, a label, the legend) out of its chart
    # Memory bars are labelled by run, then by the ranks they stand for: never cut in the middle of a phrase.
    svg_text = " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", four_servers["html"]))
    assert "each of TP0–TP7, as run 1" in svg_text and "each of TP0–TP1, as run 1" in svg_text
    assert "run 1 of shun8686__fo…k_50ms.py.log" in svg_text


def test_the_kimi_report_fits_an_800_px_window(kimi: dict) -> None:
    seen = layout(kimi["html"], kimi["tmp"], 800)
    assert seen["page"] <= seen["width"] and seen["overflowing"] == [] and seen["cut"] == []


def test_a_run_of_a_report_is_refused_when_several_sources_have_one(two_journals_db: Path) -> None:
    """`report --run 2` took run 2 of every source, where `diff 2 3` refuses to guess."""
    with api.open_db(two_journals_db) as con:
        with pytest.raises(LookupError, match=r"run '2': several sources have runs \(gpu-a/journal.txt, "
                                              r"gpu-b/journal.txt\); give --source too"):
            api.report(con, fmt="markdown", runs=[2])
        named = api.report(con, fmt="markdown", runs=[2], source="gpu-b/journal.txt")
        assert named.startswith("# Postmortem: qwen3-8b on gpu-box, 2026-03-12\n\n_1 run of gpu-b/journal.txt, "
                                "2026-03-12 10:33:42 –")
