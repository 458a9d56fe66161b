"""The files an agent's file tools write, apply_patch's patch language included."""

from __future__ import annotations

from logmine.parsers.file_tools import file_writes_from_tool
from logmine.parsers.shell_commands import Edit, FileWrite

from logmine.ingest.file_contents import apply_edits

PATCH = """*** Begin Patch
*** Add File: /etc/systemd/system/sglang.service.d/override.conf
+[Service]
+ExecStart=
+ExecStart=/usr/bin/python -m sglang.launch_server --model-path m --mem-fraction-static 0.8
*** Update File: src/server.py
*** Move to: src/serve.py
@@ def main():
     port = 30000
-    tp = 1
+    tp = 2

     run(port, tp)
*** Delete File: old.txt
*** Update File: README.md
@@
-TP=1
+TP=2
*** End of File
*** End Patch"""


def test_write_and_edit_tools() -> None:
    assert file_writes_from_tool("write", {"filePath": "/a", "content": "x"}) == [FileWrite("/a", "x", "write_tool")]
    assert file_writes_from_tool("Edit", {"file_path": "/b", "old_string": "o", "new_string": "n"}) == \
        [FileWrite("/b", "n", "edit_tool", edits=(Edit("o", "n", False, False),))]
    (multi,) = file_writes_from_tool("MultiEdit", {"file_path": "/b", "edits": [
        {"old_string": "o", "new_string": "n", "replace_all": True}, {"old_string": "p", "new_string": "q"}]})
    assert multi.edits == (Edit("o", "n", False, True), Edit("p", "q", False, False))
    assert file_writes_from_tool("NotebookEdit", {"notebook_path": "/n.ipynb", "new_source": "1"}) == \
        [FileWrite("/n.ipynb", None, "edit_tool")]
    assert file_writes_from_tool("bash", {"command": "ls"}) == []


def test_apply_patch_adds_updates_and_moves_files_in_its_order() -> None:
    codex = file_writes_from_tool("apply_patch", {"input": PATCH})
    assert codex == file_writes_from_tool("apply_patch", {"patchText": PATCH})  # opencode's parameter
    assert [(w.path, w.method) for w in codex] == [
        ("/etc/systemd/system/sglang.service.d/override.conf", "apply_patch"), ("src/serve.py", "apply_patch"),
        ("README.md", "apply_patch")]
    assert codex[0].content == ("[Service]\nExecStart=\nExecStart=/usr/bin/python -m sglang.launch_server "
                                "--model-path m --mem-fraction-static 0.8\n")
    server = "def main():\n    port = 30000\n    tp = 1\n\n    run(port, tp)\n"
    assert apply_edits(server, codex[1].edits) == server.replace("tp = 1", "tp = 2")
    assert apply_edits("# x\nTP=1\n", codex[2].edits) == "# x\nTP=2\n"
    assert file_writes_from_tool("apply_patch", {"input": "not a patch"}) == []


def test_what_a_patch_cannot_say_is_unknown_not_made_up() -> None:
    """A hunk that only adds lines does not say where; a hunk whose old lines are not in the file known
    was applied to another text; a form feed inside a line does not end it."""
    (appended,) = file_writes_from_tool("apply_patch", {"input": (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n+appended\n*** End of File\n*** End Patch")})
    assert appended.edits == ()
    (stale,) = file_writes_from_tool("apply_patch", {"input": (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-not there\n+new\n*** End Patch")})
    assert apply_edits("line1\nline2\n", stale.edits) is None
    (added,) = file_writes_from_tool("apply_patch", {"input": (
        "*** Begin Patch\n*** Add File: b.c\n+int a;\x0cint b;\n+x\u2028y\n*** End Patch")})
    assert added.content == "int a;\x0cint b;\nx\u2028y\n"
