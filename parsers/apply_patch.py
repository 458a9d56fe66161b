"""The files an `apply_patch` call changes: the patch language Codex edits with (and opencode, with GPT
models), between `*** Begin Patch` and `*** End Patch`:

    *** Add File: PATH        then the file's lines, each after `+`
    *** Update File: PATH     optionally `*** Move to: NEW PATH`, then hunks after `@@ [context]`:
                              lines after ` ` (kept), `-` (removed) and `+` (added)
    *** Delete File: PATH

An added file's content is known from the patch; an update is a list of edits (each hunk's old lines to
its new ones) applied to the file's last known content. A deleted file writes nothing.
"""

from __future__ import annotations

from .shell_commands import Edit, FileWrite

ADD, UPDATE, DELETE, MOVE = "*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "
FILE_HEADS = (ADD, UPDATE, DELETE)


def patch_writes(patch: str) -> list[FileWrite]:
    """One FileWrite per file the patch adds or updates, in the patch's order."""
    writes: list[FileWrite] = []
    head, path, body = None, None, []
    # Lines end at \n only: splitlines() would also cut at form feeds and Unicode separators inside a line.
    for line in [*patch.split("\n"), "*** End Patch"]:
        starts = next((h for h in FILE_HEADS if line.startswith(h)), None)
        if starts is None and not line.startswith("*** End Patch"):
            if line.startswith(MOVE) and head == UPDATE:
                path = line[len(MOVE):].strip()
            elif head is not None:
                body.append(line)
            continue
        if head == ADD and path:
            writes.append(FileWrite(path, "".join(b[1:] + "\n" for b in body if b.startswith("+")), "apply_patch"))
        elif head == UPDATE and path:
            writes.append(FileWrite(path, None, "apply_patch", edits=_hunk_edits(body)))
        head, body = starts, []
        path = line[len(starts):].strip() if starts else None
    return writes


def _hunk_edits(lines: list[str]) -> tuple[Edit, ...]:
    """Each `@@` hunk as one replacement of its kept and removed lines by its kept and added lines; none at
    all when a hunk only adds lines (where they go is not in the text: the file's content is then unknown)."""
    edits, old, new = [], [], []
    for line in [*lines, "@@"]:
        if line.startswith("@@") or line.startswith("*** End of File"):
            if not old and new:
                return ()
            if old != new:
                edits.append(Edit("\n".join(old), "\n".join(new), regex=False, replace_all=False))
            old, new = [], []
            continue
        sign, text = (line[:1], line[1:]) if line[:1] in " -+" else (" ", line)  # a kept blank line loses its space
        if sign != "+":
            old.append(text)
        if sign != "-":
            new.append(text)
    return tuple(edits)
