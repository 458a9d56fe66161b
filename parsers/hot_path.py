"""Which parse path runs: the compiled loops of `line_kernels` where they were built, else the vectorised
Python path. Both give the same tables; `LOGMINE_PURE_PYTHON=1` asks for the Python path even where the
loops are compiled (the tests run both, and the benches say which one ran).
"""

from __future__ import annotations

import os
from functools import cache
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from types import ModuleType

try:
    from . import line_kernels
except ImportError:  # not compiled, and no Cython installed for its source's decorators: the Python path
    line_kernels = None

PURE_PYTHON_ENV = "LOGMINE_PURE_PYTHON"


@cache  # of the module this process loaded, which does not change while it runs
def compiled() -> bool:
    """Whether `line_kernels` was imported from a compiled extension that is as new as its source."""
    if line_kernels is None:
        return False
    path = Path(line_kernels.__file__ or "")
    if not path.name.endswith(tuple(EXTENSION_SUFFIXES)):
        return False
    # An editable install keeps the extension built when it was installed: once the source is edited
    # it is stale, and the Python path is the one that matches the source (`pip install -e .` rebuilds).
    source = path.with_name("line_kernels.py")
    return not source.exists() or source.stat().st_mtime <= path.stat().st_mtime


def kernels() -> ModuleType | None:
    """The compiled loops, or None where they are not built or the Python path is asked for."""
    if os.environ.get(PURE_PYTHON_ENV) == "1" or not compiled():
        return None
    return line_kernels


def path_name() -> str:
    """`compiled` or `Python`: the path an ingest started now takes."""
    return "compiled" if kernels() else "Python"
