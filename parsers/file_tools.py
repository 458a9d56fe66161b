"""The files an agent's file tools write: opencode's `write`/`edit`, Claude Code's `Write`/`Edit`/
`MultiEdit`/`NotebookEdit`, and `apply_patch` (Codex, and opencode with GPT models; opencode 2 calls it
`patch`). Shell commands' writes are `shell_commands`' business."""

from __future__ import annotations

from collections.abc import Mapping

from .apply_patch import patch_writes
from .shell_commands import Edit, FileWrite

# Where each agent puts an apply_patch call's patch: Codex's freeform tool, opencode's parameter.
PATCH_INPUTS = ("input", "patchText", "patch")
# Where each agent names the file a write or edit tool writes (opencode 2: `path`).
PATH_INPUTS = ("filePath", "file_path", "notebook_path", "path")


def file_writes_from_tool(tool: str, tool_input: Mapping[str, object]) -> list[FileWrite]:
    """What one file tool call writes; none for a tool that writes no file."""
    name = tool.lower()
    if name in ("apply_patch", "patch"):
        patch = next((tool_input[k] for k in PATCH_INPUTS if isinstance(tool_input.get(k), str)), "")
        return patch_writes(patch)
    path = next((tool_input[key] for key in PATH_INPUTS if tool_input.get(key)), None)
    if not isinstance(path, str):
        return []
    if name == "write":
        content = tool_input.get("content")
        return [FileWrite(path, content if isinstance(content, str) else None, "write_tool")]
    if name in ("edit", "multiedit"):
        changes = tool_input.get("edits") if name == "multiedit" else [tool_input]
        edits = tuple(_tool_edit(c) for c in changes if isinstance(c, Mapping)) if isinstance(changes, list) else ()
        new = tool_input.get("newString", tool_input.get("new_string"))
        # The new text alone stands for the file where its earlier content is not known.
        return [FileWrite(path, new if isinstance(new, str) else None, "edit_tool", edits=edits if all(edits) else ())]
    if name == "notebookedit":  # one cell of the notebook: the file's content is not known
        return [FileWrite(path, None, "edit_tool")]
    return []


def _tool_edit(change: Mapping[str, object]) -> Edit | None:
    old = change.get("oldString", change.get("old_string"))
    new = change.get("newString", change.get("new_string"))
    if not isinstance(old, str) or not isinstance(new, str):
        return None
    return Edit(old, new, False, bool(change.get("replaceAll", change.get("replace_all"))))
