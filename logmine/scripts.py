"""Load a script that is no package module (a file of bench/ or examples/) by its path.

bench/ and examples/ are folders of scripts run as `python bench/x.py`, not packages. A script or a
test that reuses another script's code loads it with `load_script` rather than editing `sys.path`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_script(path: Path) -> ModuleType:
    """The script at `path` as a module named after its file, loaded once per process like an import."""
    path = Path(path).resolve()
    loaded = sys.modules.get(path.stem)
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() == path:
        return loaded
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not a Python script")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module
