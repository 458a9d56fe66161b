"""The last known content of each file an agent's session wrote or printed, to follow copies and edits.

A command often says only how a file changes (`sed -i 's/ratio 2/ratio 4/'`, an edit tool's old and
new text, `scp unit host:/etc/systemd/system/`, a drop-in next to a unit): the new content is known
when the content before it is, from an earlier write or an earlier `cat` in the same session.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..parsers.shell_commands import Edit, FileWrite

# `/etc/systemd/system/x.service.d/override.conf` -> `/etc/systemd/system/x.service`
DROP_IN = re.compile(r"(?P<unit>.+\.service)\.d/[^/]+\.conf")


@dataclass
class FileContents:
    known: dict[tuple[str, str | None, str], str] = field(default_factory=dict)  # (session, host, path)

    def remember(self, session: str, host: str | None, path: str, content: str | None) -> None:
        if content is not None:
            self.known[(session, host, path)] = content

    def written(self, session: str, host: str | None, write: FileWrite) -> str | None:
        """The file's content after `write`, as far as it is known; remembered for later writes."""
        before = self.known.get((session, host, write.path))
        content = write.content
        if write.source is not None:
            content = self.known.get((session, write.source.host, write.source.path))
        elif write.edits and before is not None:
            content = apply_edits(before, write.edits)
        elif write.method == "sed":
            content = None  # an edit of a file whose content is not known
        elif write.append and before is not None and content is not None:
            content = before + content
        self.remember(session, host, write.path, content)
        return content

    def unit_with_drop_in(self, session: str, host: str | None, path: str, content: str) -> tuple[str, str]:
        """(unit path, text) of the unit a drop-in belongs to, the drop-in after the unit's last known text
        (systemd reads drop-ins after the unit: an empty `ExecStart=` resets it)."""
        drop_in = DROP_IN.fullmatch(path)
        if drop_in is None:
            return path, content
        unit = drop_in.group("unit")
        return unit, self.known.get((session, host, unit), "") + "\n" + content


def apply_edits(text: str, edits: tuple[Edit, ...]) -> str | None:
    """`text` after the edits; None where one cannot be applied (a bad regex, a text to replace that is
    not there)."""
    for edit in edits:
        if not edit.regex:
            if edit.old not in text:  # the file was not what the session last knew of it
                return None
            text = text.replace(edit.old, edit.new, -1 if edit.replace_all else 1)
            continue
        flags = re.MULTILINE | (re.IGNORECASE if edit.ignore_case else 0)
        try:
            # sed substitutes line by line: the first match of each line unless `g`
            text = "".join(re.sub(edit.old, edit.new, line, count=0 if edit.replace_all else 1, flags=flags)
                           for line in text.splitlines(keepends=True))
        except (re.error, IndexError):
            return None
    return text
