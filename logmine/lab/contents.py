"""The contents manager `logmine lab` gives JupyterLab: Jupyter's own, confined to the notebooks' folder.

Jupyter checks that an API path stays under its root by the path's text alone, and writes through a
symlink to wherever it points, so a link in the folder (even one whose target does not exist yet) would
let the lab write outside it. Here every path is resolved to the end of its links first and refused (404,
as Jupyter answers for a path outside its root) when it leaves the folder.
"""

from __future__ import annotations

import os

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from tornado.web import HTTPError

from .server import inside


class ConfinedContentsManager(AsyncLargeFileManager):
    """Jupyter's default contents manager, refusing paths that resolve outside `root_dir`."""

    def _get_os_path(self, path: str) -> str:
        os_path = super()._get_os_path(path)
        if not inside(os.path.realpath(os_path), os.path.realpath(self.root_dir)):
            raise HTTPError(404, f"{path} leads outside the notebooks' folder")
        return os_path
