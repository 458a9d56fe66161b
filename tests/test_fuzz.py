"""Every fuzz target runs under atheris for a few seconds without a broken promise (longer runs: fuzz/run.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parents[1] / "fuzz" / "run.py"


def test_every_fuzz_target_runs_clean_for_a_few_seconds(tmp_path: Path) -> None:
    pytest.importorskip("atheris")
    done = subprocess.run([sys.executable, str(RUN), "all", "--seconds", "3"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = re.search(r"stat::number_of_executed_units: (\d+)", done.stderr)
    assert runs and int(runs[1]) > 0, done.stderr[-3000:]
