"""Two quieter failures of the hostile round: a growing file cut inside an untyped line left its cut key in
every template table, and a clock stepped back 20 days was read as the next year."""

from __future__ import annotations

from pathlib import Path

import duckdb

from logmine import api
from tests.conftest import REPO

DEMO = (REPO / "examples" / "demo" / "journal.txt").read_text()
STAMP = "Mar 12 10:40:00 gpu-box python[25133]: "
UNKNOWN = [STAMP + "frobnicating the quux 42 of worker 3\n", STAMP + "frobnicating the quux 17 of worker 9\n",
           STAMP + "a message no pattern knows, from module zebra\n"]


def template_tables(db: Path) -> tuple[list, list, int]:
    """The keys with their templates' text, the templates, and the clusters the miner's state holds."""
    from drain3 import TemplateMiner
    from drain3.template_miner_config import TemplateMinerConfig

    from logmine.derive.line_templates import DatabaseState

    with duckdb.connect(str(db)) as con:
        keys = con.execute("SELECT key, template FROM untyped_keys JOIN untyped_templates USING (template_id) "
                           "ORDER BY key").fetchall()
        templates = sorted(r[0] for r in con.execute("SELECT template FROM untyped_templates").fetchall())
        miner = TemplateMiner(DatabaseState(con), TemplateMinerConfig())
        return keys, templates, len(miner.drain.clusters)


def test_growth_cut_inside_an_untyped_line_leaves_no_stale_template(tmp_path: Path) -> None:
    text = DEMO + "".join(UNKNOWN)
    cut = len(DEMO) + len(UNKNOWN[0]) + len(STAMP) + 4  # inside the second unknown line: "frob"
    log = tmp_path / "server.log"
    log.write_text(text[:cut])
    api.ingest([str(log)], db=tmp_path / "grown.duckdb")
    stale = template_tables(tmp_path / "grown.duckdb")
    assert any(key.split()[-1] == "frob" for key, _ in stale[0])  # the cut line's key, mined
    log.write_text(text)
    api.ingest([str(log)], db=tmp_path / "grown.duckdb")
    (tmp_path / "whole").mkdir()
    (tmp_path / "whole" / "server.log").write_text(text)
    api.ingest([str(tmp_path / "whole" / "server.log")], db=tmp_path / "whole.duckdb")
    grown, whole = template_tables(tmp_path / "grown.duckdb"), template_tables(tmp_path / "whole.duckdb")
    assert [key for key, _ in grown[0]] == [key for key, _ in whole[0]]
    assert grown[1] == whole[1] and grown[2] == whole[2] == len(whole[1])


def test_a_clock_stepped_back_is_not_the_next_year(tmp_path: Path) -> None:
    """NTP steps the clock back 20 days (Apr 2 -> Mar 13): the same year; the real new year still counts."""
    log = tmp_path / "server.log"
    log.write_text("Apr  2 09:00:00 gpu-box python[7]: [2026-04-02 09:00:00] before the step\n"
                   "Mar 13 09:00:05 gpu-box python[7]: [2026-03-13 09:00:05] after the step\n"
                   "Apr  2 09:10:00 gpu-box python[7]: [2026-04-02 09:10:00] caught up\n"
                   "Dec 31 23:59:59 gpu-box python[7]: [2026-12-31 23:59:59] the year ends\n"
                   "Jan  1 00:00:01 gpu-box python[7]: [2027-01-01 00:00:01] a new year\n")
    api.ingest([str(log)], db=tmp_path / "x.duckdb")
    with duckdb.connect(str(tmp_path / "x.duckdb"), read_only=True) as con:
        stamps = [r[0] for r in con.execute("SELECT CAST(ts AS VARCHAR) FROM lines ORDER BY line_no").fetchall()]
    assert stamps == ["2026-04-02 09:00:00", "2026-03-13 09:00:05", "2026-04-02 09:10:00", "2026-12-31 23:59:59",
                      "2027-01-01 00:00:01"]
