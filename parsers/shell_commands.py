"""What a coding agent ran in a shell: per-host steps and the files those steps write.

An agent drives remote servers with commands such as
``ssh root@node 'cat > /etc/systemd/system/x.service <<EOF ... EOF && systemctl restart x'``.
``split_command`` turns one such command string into ``ShellStep``s (one per host hop, the local remainder
grouped together) and lists the files each step writes (heredocs, tee, redirects) with their content
where the command text holds it.

Pure text analysis: nothing is executed and no variable is expanded, so ``$VAR`` stays literal.
The small lexer below knows just enough shell (quotes, escapes, operators, redirections, heredocs,
``$(...)``) to find command boundaries; it never raises on malformed input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

WriteMethod = Literal["heredoc", "tee", "sudo tee", "redirect", "write_tool", "edit_tool", "copy", "sed",
                      "apply_patch"]


@dataclass(frozen=True)
class FileRef:
    """A file on a host (None: the machine the agent runs on)."""

    path: str
    host: str | None


@dataclass(frozen=True)
class Edit:
    """One replacement in a file's text: `sed -i 's/a/b/g'` (a regex) or an edit tool's old -> new."""

    old: str
    new: str  # for a regex, a Python `re.sub` template
    regex: bool
    replace_all: bool
    ignore_case: bool = False


@dataclass
class FileWrite:
    path: str
    content: str | None  # None when the command text does not hold it (e.g. `make > build.log`)
    method: WriteMethod
    append: bool = False
    # When the new content follows from files the agent's session knew rather than from the command:
    source: FileRef | None = None  # the file copied here (scp, rsync, cp, install, `cat < file`)
    edits: tuple[Edit, ...] = ()  # applied to the file's last known content (sed -i, edit tools)
    remote_host: str | None = None  # where a copy lands when not on the step's host (`scp f host:path`)


@dataclass
class ShellStep:
    host: str | None  # None: the machine the agent runs on
    user: str | None
    command: str
    writes: list[FileWrite] = field(default_factory=list)


@dataclass
class Redirect:
    op: str  # '>', '>>', '>|', '&>', '&>>', '<', '<<', '<<-', '<<<', '>&', '<&', '<>'
    fd: int | None
    target: str  # file name, fd, or heredoc delimiter
    body: str | None = None  # heredoc body / here-string text


@dataclass
class SimpleCommand:
    words: list[str]  # quote-removed, unexpanded
    redirects: list[Redirect]
    start: int  # span in the parsed script
    end: int


@dataclass
class Pipeline:
    commands: list[SimpleCommand]

    @property
    def start(self) -> int:
        return self.commands[0].start

    @property
    def end(self) -> int:
        return self.commands[-1].end


# ---------------------------------------------------------------------------------------------------------
# Lexer
# ---------------------------------------------------------------------------------------------------------

_REDIRECT_RE = re.compile(r"(\d*)(&>>|&>|>>|>\||>&|<<<|<<-|<<|<>|<&|>|<)")
_LIST_OPS = ("&&", "||", ";;", "|&", "|", "&", ";", "(", ")")
_WORD_BREAK = frozenset(" \t\n;&|()<>")
_DQ_ESCAPABLE = frozenset('"\\$`\n')
_ANSI_C_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0"}
_PAIRS = {"(": ")", "{": "}"}


def _skip_balanced(text: str, i: int) -> int:
    """Index just past the bracket closing the one at text[i]; respects quotes. len(text) if unclosed."""
    opener, closer = text[i], _PAIRS[text[i]]
    depth, i, n = 0, i, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            end = text.find("'", i + 1)
            i = n if end < 0 else end + 1
            continue
        if c == '"':
            i = _skip_double_quoted(text, i)
            continue
        if c == opener:
            depth += 1
        elif c == closer:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _skip_double_quoted(text: str, i: int) -> int:
    """Index just past the double-quoted string starting at text[i] (len(text) if unterminated)."""
    i, n = i + 1, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i + 1
        elif c == "$" and text[i + 1 : i + 2] == "(":
            i = _skip_balanced(text, i + 1)
        else:
            i += 1
    return n


class _Lexer:
    """Turns a script into pipelines of simple commands; heredoc bodies are attached to their redirect."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.pipelines: list[Pipeline] = []
        self._commands: list[SimpleCommand] = []
        self._words: list[str] = []
        self._redirects: list[Redirect] = []
        self._start: int | None = None
        self._end = 0
        self._pending_heredocs: list[Redirect] = []

    def parse(self) -> list[Pipeline]:
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c in " \t":
                self.pos += 1
            elif c == "\\" and text[self.pos + 1 : self.pos + 2] == "\n":
                self.pos += 2
            elif c == "#" and self._at_word_start():
                newline = text.find("\n", self.pos)
                self.pos = n if newline < 0 else newline
            elif c == "\n":
                self._end_pipeline()
                self.pos += 1
                self._read_heredoc_bodies()
            elif self._try_redirect() or self._try_operator():
                pass
            else:
                self._read_word_token()
        self._read_heredoc_bodies()  # a heredoc opened on the last line: body is empty
        self._end_pipeline()
        return self.pipelines

    def _at_word_start(self) -> bool:
        return self.pos == 0 or self.text[self.pos - 1] in _WORD_BREAK

    def _mark(self, start: int, end: int) -> None:
        if self._start is None:
            self._start = start
        self._end = end

    def _try_redirect(self) -> bool:
        m = _REDIRECT_RE.match(self.text, self.pos)
        if m is None or (m.group(1) and not self._at_word_start()):
            return False
        start = self.pos
        self.pos = m.end()
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1
        target, _quoted = self._read_word() if self._word_follows() else ("", False)
        redirect = Redirect(op=m.group(2), fd=int(m.group(1)) if m.group(1) else None, target=target)
        if redirect.op in ("<<", "<<-"):
            self._pending_heredocs.append(redirect)
        elif redirect.op == "<<<":
            redirect.body = target + "\n"
        self._redirects.append(redirect)
        self._mark(start, self.pos)
        return True

    def _word_follows(self) -> bool:
        return self.pos < len(self.text) and self.text[self.pos] not in _WORD_BREAK

    def _try_operator(self) -> bool:
        for op in _LIST_OPS:
            if self.text.startswith(op, self.pos):
                self.pos += len(op)
                if op in ("|", "|&"):
                    self._end_command()
                else:
                    self._end_pipeline()
                return True
        return False

    def _read_word_token(self) -> None:
        start = self.pos
        word, _quoted = self._read_word()
        self._words.append(word)
        self._mark(start, self.pos)

    def _read_word(self) -> tuple[str, bool]:
        """Read one word at self.pos; returns (quote-removed value, whether any quoting was seen)."""
        text, n = self.text, len(self.text)
        out: list[str] = []
        quoted = False
        i = self.pos
        while i < n and text[i] not in _WORD_BREAK:
            c = text[i]
            if c == "\\":
                if text[i + 1 : i + 2] != "\n":
                    out.append(text[i + 1 : i + 2])
                    quoted = True
                i += 2
            elif c == "'":
                end = text.find("'", i + 1)
                end = n if end < 0 else end  # unterminated: take the rest literally
                out.append(text[i + 1 : end])
                quoted, i = True, end + 1
            elif c == '"':
                end = _skip_double_quoted(text, i)
                body_end = end - 1 if text[end - 1 : end] == '"' else end
                out.append(_unescape_double_quoted(text[i + 1 : body_end]))
                quoted, i = True, end
            elif c == "$" and text[i + 1 : i + 2] == "'":
                value, i = _read_ansi_c(text, i + 2)
                out.append(value)
                quoted = True
            elif c == "$" and text[i + 1 : i + 2] in ("(", "{"):
                end = _skip_balanced(text, i + 1)
                out.append(text[i:end])
                i = end
            elif c == "`":
                end = text.find("`", i + 1)
                end = n if end < 0 else end + 1
                out.append(text[i:end])
                i = end
            else:
                out.append(c)
                i += 1
        self.pos = min(i, n)
        return "".join(out), quoted

    def _read_heredoc_bodies(self) -> None:
        """Consume the lines after a newline as the bodies of the heredocs opened on the previous line."""
        if not self._pending_heredocs:
            return
        for redirect in self._pending_heredocs:
            redirect.body = self._read_heredoc_body(redirect.target, strip_tabs=redirect.op == "<<-")
        self._pending_heredocs = []
        # The bodies belong to the line's commands: stretch the last one so step texts include them.
        if self.pipelines:
            body_end = self.pos - 1 if self.text[self.pos - 1 : self.pos] == "\n" else self.pos
            last = self.pipelines[-1].commands[-1]
            last.end = max(last.end, body_end)

    def _read_heredoc_body(self, delimiter: str, strip_tabs: bool) -> str:
        text, n = self.text, len(self.text)
        lines: list[str] = []
        while self.pos < n:
            newline = text.find("\n", self.pos)
            line_end = n if newline < 0 else newline
            line = text[self.pos : line_end]
            self.pos = min(line_end + 1, n)
            if strip_tabs:
                line = line.lstrip("\t")
            # Lenient on trailing blanks: agents' text sometimes has `EOF ` and the intent is clear.
            if line.rstrip() == delimiter:
                break
            lines.append(line + "\n")
        return "".join(lines)

    def _end_command(self) -> None:
        if self._start is not None:
            self._commands.append(SimpleCommand(self._words, self._redirects, self._start, self._end))
        self._words, self._redirects, self._start = [], [], None

    def _end_pipeline(self) -> None:
        self._end_command()
        if self._commands:
            self.pipelines.append(Pipeline(self._commands))
        self._commands = []


def _unescape_double_quoted(body: str) -> str:
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c == "\\" and i + 1 < n and body[i + 1] in _DQ_ESCAPABLE:
            if body[i + 1] != "\n":  # backslash-newline is a line continuation
                out.append(body[i + 1])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _read_ansi_c(text: str, i: int) -> tuple[str, int]:
    """Read the body of $'...' starting at text[i]; returns (value, index past the closing quote)."""
    out: list[str] = []
    n = len(text)
    while i < n and text[i] != "'":
        if text[i] == "\\" and i + 1 < n:
            out.append(_ANSI_C_ESCAPES.get(text[i + 1], "\\" + text[i + 1]))
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out), i + 1


def parse_script(script: str) -> list[Pipeline]:
    """Pipelines of ``script`` in order (separated by ``&&``, ``||``, ``;``, ``&``, newlines)."""
    return _Lexer(script).parse()


# ---------------------------------------------------------------------------------------------------------
# Command words
# ---------------------------------------------------------------------------------------------------------

_ASSIGNMENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
# Wrappers that run the command given after their own options; value = short options taking an argument.
_WRAPPERS: dict[str, str] = {
    "sudo": "ugCDhprtUT",
    "env": "uCS",
    "nohup": "",
    "exec": "a",
    "time": "",
    "command": "",
    "nice": "n",
    "stdbuf": "ioe",
    "numactl": "CNmipP",
    "timeout": "sk",
}
_DEV_FILES = ("/dev/",)


def program_name(word: str) -> str:
    """Basename of a command word: `/opt/venv/bin/python3` -> `python3`."""
    return word.rsplit("/", 1)[-1]


def _skip_options(words: list[str], i: int, takes_argument: str) -> int:
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        if words[i] == "--":
            return i + 1
        is_short_with_arg = len(words[i]) == 2 and words[i][1] in takes_argument
        i += 2 if is_short_with_arg else 1
    return i


def strip_command_prefixes(words: list[str]) -> tuple[list[str], bool]:
    """Drop leading `VAR=value`s and wrappers (sudo, env, nohup, timeout 30, ...); says if sudo was one."""
    i, sudo = 0, False
    while i < len(words):
        word = words[i]
        name = program_name(word)
        if _ASSIGNMENT_RE.match(word):
            i += 1
        elif name in _WRAPPERS:
            sudo = sudo or name == "sudo"
            i = _skip_options(words, i + 1, _WRAPPERS[name])
            if name == "timeout":
                i += 1  # the duration
        else:
            break
    return words[i:], sudo


def shell_c_script(words: list[str]) -> str | None:
    """The script of `bash -lc 'SCRIPT'` / `sh -c SCRIPT` (words already stripped of prefixes), else None."""
    if not words or program_name(words[0]) not in _SHELLS:
        return None
    has_c, i = False, 1
    while i < len(words) and words[i].startswith("-"):
        option = words[i]
        if not option.startswith("--"):
            has_c = has_c or "c" in option
            if "o" in option[1:]:
                i += 1  # `-o pipefail`
        i += 1
    return words[i] if has_c and i < len(words) else None


def _is_bare_shell(words: list[str]) -> bool:
    """`bash`, `bash -s`, `sudo sh -e`: a shell reading its script from stdin."""
    stripped, _sudo = strip_command_prefixes(words)
    if not stripped or program_name(stripped[0]) not in _SHELLS:
        return False
    return all(w.startswith("-") and "c" not in w for w in stripped[1:])


# ---------------------------------------------------------------------------------------------------------
# File writes
# ---------------------------------------------------------------------------------------------------------


Stdin = str | FileRef | None  # what a command reads: text the command holds, a file, or unknown


def _stdin_of(command: SimpleCommand, host: str | None) -> Stdin:
    """The command's own standard input: a heredoc or here-string, or a `< file` on `host`."""
    for redirect in command.redirects:
        if redirect.op in ("<<", "<<-", "<<<"):
            return redirect.body
        if redirect.op == "<" and redirect.fd in (None, 0) and redirect.target:
            return None if redirect.target.startswith(_DEV_FILES) else FileRef(redirect.target, host)
    return None


def _has_heredoc(command: SimpleCommand) -> bool:
    return any(r.op in ("<<", "<<-") for r in command.redirects)


def _echo_text(args: list[str]) -> str:
    newline = "\n"
    while args and re.fullmatch(r"-[neE]+", args[0]):
        if "n" in args[0]:
            newline = ""
        args = args[1:]
    return " ".join(args) + newline


def _produced_text(words: list[str], stdin: Stdin, host: str | None) -> Stdin:
    """What a pipeline stage prints when known: `cat` of a known stdin or of one file, `echo ...`."""
    if not words:
        return None
    name = program_name(words[0])
    if name == "cat" and len(words) == 1:
        return stdin
    if name == "cat" and len(words) == 2 and not words[1].startswith("-"):
        return FileRef(words[1], host)
    if name == "echo":
        return _echo_text(words[1:])
    return None


def _written(path: str, produced: Stdin, method: WriteMethod, append: bool = False) -> FileWrite:
    """A write of `produced`: text the command holds, or a file's content (a copy)."""
    if isinstance(produced, FileRef):
        return FileWrite(path, None, method, append, source=produced)
    return FileWrite(path, produced, method, append)


def _redirect_writes(command: SimpleCommand, words: list[str], stdin: Stdin, host: str | None) -> list[FileWrite]:
    writes = []
    for redirect in command.redirects:
        writes_stdout = redirect.op in (">", ">>", ">|") and redirect.fd in (None, 1)
        if not (writes_stdout or redirect.op in ("&>", "&>>")):
            continue
        if not redirect.target or redirect.target.startswith(_DEV_FILES):
            continue
        is_cat_heredoc = len(words) == 1 and program_name(words[0]) == "cat" and _has_heredoc(command)
        method: WriteMethod = "heredoc" if is_cat_heredoc else "redirect"
        writes.append(_written(redirect.target, _produced_text(words, stdin, host), method,
                               redirect.op in (">>", "&>>")))
    return writes


def _tee_writes(args: list[str], sudo: bool, content: Stdin) -> list[FileWrite]:
    append, paths, options_done = False, [], False
    for arg in args:
        if not options_done and arg == "--":
            options_done = True
        elif not options_done and arg.startswith("-") and arg != "-":
            append = append or arg == "--append" or (not arg.startswith("--") and "a" in arg)
        elif not arg.startswith(_DEV_FILES):
            paths.append(arg)
    method: WriteMethod = "sudo tee" if sudo else "tee"
    return [_written(p, content, method, append) for p in paths]


# Options that take an argument, per copying program (the rest are flags).
_COPY_OPTIONS_WITH_ARGUMENT = {"scp": "cDFiJlmoPSX", "rsync": "eBfMT", "cp": "St", "install": "gmoSt"}
_REMOTE_PATH_RE = re.compile(r"(?:[^@/:\s]+@)?([^:/\s]+):(.*)")


def _positional(words: list[str], takes_argument: str) -> list[str]:
    """The operands of a command, wherever its options stand."""
    operands, i = [], 1
    while i < len(words):
        word = words[i]
        if word == "--":
            return operands + words[i + 1:]
        if word.startswith("-") and word != "-":
            i += 2 if len(word) == 2 and word[1] in takes_argument else 1
            continue
        operands.append(word)
        i += 1
    return operands


def _copy_writes(words: list[str], host: str | None) -> list[FileWrite]:
    """`scp`/`rsync SRC... [user@]HOST:DEST`, `cp`/`install [-m MODE] SRC... DEST`."""
    name = program_name(words[0])
    if name == "install" and any(w in ("-d", "--directory") for w in words):
        return []
    operands = _positional(words, _COPY_OPTIONS_WITH_ARGUMENT[name])
    if len(operands) < 2:
        return []

    def located(operand: str) -> FileRef:
        remote = _REMOTE_PATH_RE.fullmatch(operand) if name in ("scp", "rsync") else None
        return FileRef(remote.group(2), remote.group(1)) if remote else FileRef(operand, host)

    target = located(operands[-1])
    writes = []
    for source in map(located, operands[:-1]):
        path = target.path + source.path.rsplit("/", 1)[-1] if target.path.endswith("/") else target.path
        remote_host = target.host if target.host != host else None
        writes.append(FileWrite(path, None, "copy", source=source, remote_host=remote_host))
    return writes


def _sed_writes(words: list[str]) -> list[FileWrite]:
    """`sed -i [-E] [-e SCRIPT]... [SCRIPT] FILE...`: the files it edits in place, with its substitutions
    (none when the script does more than substitute: the new content is then unknown)."""
    scripts, operands, in_place, extended, i = [], [], False, False, 1
    while i < len(words):
        word = words[i]
        if word in ("-e", "--expression") and i + 1 < len(words):
            scripts.append(words[i + 1])
            i += 1
        elif word.startswith("--expression="):
            scripts.append(word.split("=", 1)[1])
        elif word in ("-f", "--file") or word.startswith("--file="):
            return []  # a script file: what it does is not in the command
        elif word.startswith("--in-place"):
            in_place = True
        elif word == "--regexp-extended":
            extended = True
        elif word.startswith("-") and not word.startswith("--") and word != "-":
            flags = word[1:].split("i", 1)[0] if "i" in word[1:] else word[1:]  # -i takes a suffix: -i.bak
            in_place = in_place or "i" in word[1:]
            extended = extended or "E" in flags or "r" in flags
        elif not word.startswith("--"):
            operands.append(word)
        i += 1
    if not scripts and operands:
        scripts.append(operands.pop(0))
    if not in_place:
        return []
    edits = [sed_substitutions(script, extended) for script in scripts]
    known = () if any(e is None for e in edits) else tuple(x for e in edits for x in e)
    return [FileWrite(path, None, "sed", edits=known) for path in operands]


def sed_substitutions(script: str, extended: bool) -> list[Edit] | None:
    """The `s/old/new/flags` commands of a sed script as edits; None if it holds anything else."""
    edits, i = [], 0
    while i < len(script):
        if script[i] in " \t\n;":
            i += 1
            continue
        if script[i] != "s" or i + 1 >= len(script):
            return None
        delimiter, parts, i = script[i + 1], [], i + 2
        for _ in range(2):
            part, i = _sed_part(script, i, delimiter)
            if part is None:
                return None
            parts.append(part)
        flags = ""
        while i < len(script) and script[i] not in ";\n":
            flags += script[i]
            i += 1
        if set(flags.strip()) - set("gI"):
            return None  # p, w, a count: not a plain substitution
        edits.append(Edit(_sed_regex(parts[0], extended, delimiter), _sed_template(parts[1]), True,
                          "g" in flags, "I" in flags))
    return edits


def _sed_part(script: str, i: int, delimiter: str) -> tuple[str | None, int]:
    """The text up to the next unescaped delimiter (an escaped delimiter stands for itself)."""
    out = []
    while i < len(script):
        char = script[i]
        if char == "\\" and i + 1 < len(script):
            nxt = script[i + 1]
            out.append(nxt if nxt == delimiter else char + nxt)
            i += 2
        elif char == delimiter:
            return "".join(out), i + 1
        else:
            out.append(char)
            i += 1
    return None, i


_BRE_ESCAPED = {"(": "(", ")": ")", "{": "{", "}": "}", "+": "+", "?": "?", "|": "|", "<": r"\b", ">": r"\b"}


def _sed_regex(pattern: str, extended: bool, delimiter: str) -> str:
    """A sed regex as Python's: in a basic regex `\\(` groups and a bare `(` is literal."""
    out, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt in "<>":
                out.append(r"\b")
            elif not extended and nxt in _BRE_ESCAPED:
                out.append(_BRE_ESCAPED[nxt])
            else:
                out.append(char + nxt)
            i += 2
            continue
        out.append(re.escape(char) if not extended and char in "(){}+?|" or char == delimiter else char)
        i += 1
    return "".join(out)


def _sed_template(replacement: str) -> str:
    """A sed replacement as an `re.sub` template: `&` is the match, `\\1` a group, `\\n` a newline."""
    out, i = [], 0
    while i < len(replacement):
        char = replacement[i]
        if char == "&":
            out.append(r"\g<0>")
        elif char == "\\" and i + 1 < len(replacement):
            nxt = replacement[i + 1]
            out.append(rf"\g<{nxt}>" if nxt.isdigit() else "\n" if nxt == "n" else nxt.replace("\\", r"\\"))
            i += 1
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _pipeline_writes(pipeline: Pipeline, depth: int, stdin: Stdin = None, host: str | None = None) -> list[FileWrite]:
    """The files a pipeline run on `host` writes; `stdin` is what it reads (an ssh command's heredoc)."""
    writes: list[FileWrite] = []
    upstream = stdin  # what the previous stage printed, when known
    for command in pipeline.commands:
        words, sudo = strip_command_prefixes(command.words)
        own_stdin = _stdin_of(command, host)
        stdin = own_stdin if own_stdin is not None else upstream
        name = program_name(words[0]) if words else ""
        if name == "tee":
            writes += _tee_writes(words[1:], sudo, stdin)
        elif name in _COPY_OPTIONS_WITH_ARGUMENT:
            writes += _copy_writes(words, host)
        elif name == "sed":
            writes += _sed_writes(words)
        elif depth < _MAX_DEPTH and (script := shell_c_script(words)) is not None:
            writes += _script_writes(script, depth + 1, host)
        elif depth < _MAX_DEPTH and isinstance(stdin, str) and _is_bare_shell(words):
            writes += _script_writes(stdin, depth + 1, host)  # `bash -s <<'EOF' ... EOF`
        writes += _redirect_writes(command, words, stdin, host)
        upstream = _produced_text(words, stdin, host)
    return writes


def _script_writes(script: str, depth: int, host: str | None) -> list[FileWrite]:
    return [w for p in parse_script(script) for w in _pipeline_writes(p, depth, None, host)]


# ---------------------------------------------------------------------------------------------------------
# Configuration the command prints (read, not written)
# ---------------------------------------------------------------------------------------------------------

ConfigSource = Literal["unit_read", "process_args"]


def config_reads(command: str) -> list[tuple[ConfigSource, str | None]]:
    """What configuration a step prints, so that its output shows the state before the agent changed it:
    `systemctl cat UNIT` and `cat /etc/systemd/system/UNIT` (a unit file, with the path when the command
    names it) and `ps` (the running server's command line)."""
    reads: list[tuple[ConfigSource, str | None]] = []
    for pipeline in parse_script(command):
        for simple in pipeline.commands:
            words, _sudo = strip_command_prefixes(simple.words)
            name = program_name(words[0]) if words else ""
            if name == "systemctl" and "cat" in words[1:]:
                reads.append(("unit_read", None))  # systemctl prints each file's path as a comment
            elif name == "cat":
                reads += [("unit_read", w) for w in words[1:] if w.endswith(_UNIT_SUFFIXES)]
            elif name == "ps":
                reads.append(("process_args", None))
    return reads


_UNIT_SUFFIXES = (".service", ".conf")


# ---------------------------------------------------------------------------------------------------------
# ssh and steps
# ---------------------------------------------------------------------------------------------------------

_MAX_DEPTH = 8  # nesting of ssh / bash -c; guards against pathological input
_SSH_OPTIONS_WITH_ARGUMENT = frozenset("BbcDEeFIiJLlmOoPpQRSWw")


@dataclass
class _SshTarget:
    user: str | None
    host: str
    remote_words: list[str]


def _parse_destination(destination: str, user: str | None) -> tuple[str | None, str]:
    if destination.startswith("ssh://"):
        destination = destination[len("ssh://") :].split("/", 1)[0]
        destination = re.sub(r":\d+$", "", destination)
    if "@" in destination:
        user, destination = destination.rsplit("@", 1)
    return user, destination


def _parse_ssh(words: list[str]) -> _SshTarget | None:
    """`ssh [options] [user@]host [command...]` (words stripped of prefixes); None if not ssh."""
    if not words or program_name(words[0]) != "ssh":
        return None
    user, i = None, 1
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        option = words[i]
        i += 1
        if option == "--":
            break
        for position, letter in enumerate(option[1:], start=1):
            if letter in _SSH_OPTIONS_WITH_ARGUMENT:
                argument = option[position + 1 :]
                if not argument and i < len(words):
                    argument, i = words[i], i + 1
                if letter == "l":
                    user = argument
                break
    if i >= len(words):
        return None
    user, host = _parse_destination(words[i], user)
    return _SshTarget(user, host, words[i + 1 :])


def _ssh_target(command: SimpleCommand) -> _SshTarget | None:
    return _parse_ssh(strip_command_prefixes(command.words)[0])


def _remote_script(target: _SshTarget, stdin: Stdin) -> tuple[str, Stdin]:
    """The script the remote shell runs and what is on its standard input (ssh's own stdin)."""
    # ssh joins its command words with spaces and hands the result to the remote shell.
    remote = " ".join(target.remote_words)
    if isinstance(stdin, str) and (not remote or _is_bare_shell(target.remote_words)):
        return stdin, None  # `ssh host bash -s <<'EOF' ... EOF`: the heredoc is the remote script
    return remote, stdin


def _sole_shell_script(pipelines: list[Pipeline]) -> str | None:
    """If the whole script is one `bash -lc 'X'` without redirections, X; else None."""
    if len(pipelines) != 1 or len(pipelines[0].commands) != 1:
        return None
    command = pipelines[0].commands[0]
    if command.redirects:
        return None
    return shell_c_script(strip_command_prefixes(command.words)[0])


def _steps(script: str, host: str | None, user: str | None, depth: int, stdin: Stdin = None) -> list[ShellStep]:
    """The steps of `script`, run on `host`; `stdin` is the text the script reads, when known (what
    was sent into `ssh host CMD`), read by its first pipeline."""
    pipelines = parse_script(script)
    inner = _sole_shell_script(pipelines)
    if inner is not None and depth < _MAX_DEPTH:
        return _steps(inner, host, user, depth + 1, stdin)
    first = pipelines[0] if pipelines else None
    steps: list[ShellStep] = []
    local_run: list[Pipeline] = []

    def flush_local_run() -> None:
        if local_run:
            text = script[local_run[0].start : local_run[-1].end].strip()
            writes = [w for p in local_run for w in _pipeline_writes(p, depth, stdin if p is first else None, host)]
            steps.append(ShellStep(host, user, text, writes))
            local_run.clear()

    for pipeline in pipelines:
        targets = [(c, _ssh_target(c)) for c in pipeline.commands]
        if all(t is None for _, t in targets) or depth >= _MAX_DEPTH:
            local_run.append(pipeline)
            continue
        flush_local_run()
        upstream = stdin if pipeline is first else None  # what each stage reads, when known
        for command, target in targets:
            own = _stdin_of(command, host)
            received = own if own is not None else upstream
            if target is not None:
                steps += _ssh_steps(target, depth, received)
                upstream = None
            else:
                upstream = _produced_text(strip_command_prefixes(command.words)[0], received, host)
        steps += _local_part_of_ssh_pipeline(script, pipeline, targets, host, user, depth)
    flush_local_run()
    return steps


def _ssh_steps(target: _SshTarget, depth: int, stdin: Stdin) -> list[ShellStep]:
    """The steps ssh runs on its host; `stdin` (a heredoc, or what was piped into ssh) is the remote
    command's standard input, or the remote script itself for a bare `ssh host` or `ssh host bash -s`."""
    remote, remote_stdin = _remote_script(target, stdin)
    if not remote.strip():
        return [ShellStep(target.host, target.user, "", [])]  # interactive login
    return _steps(remote, target.host, target.user, depth + 1, remote_stdin)


def _local_part_of_ssh_pipeline(
    script: str,
    pipeline: Pipeline,
    targets: list[tuple[SimpleCommand, _SshTarget | None]],
    host: str | None,
    user: str | None,
    depth: int,
) -> list[ShellStep]:
    """`ssh h 'cmd' | grep x > out.txt`: the grep and the redirect run where ssh was started."""
    local_commands = [c for c, t in targets if t is None]
    local_writes = [w for c, t in targets if t is not None for w in _redirect_writes(c, [], None, host)]
    if local_commands:
        local_writes += _pipeline_writes(Pipeline(local_commands), depth, None, host)
    if not local_commands and not local_writes:
        return []
    text = " | ".join(script[c.start : c.end].strip() for c in local_commands)
    return [ShellStep(host, user, text, local_writes)]


def split_command(command: str) -> list[ShellStep]:
    """Steps of one shell command string: each ssh hop's remote command, and the local remainder.

    `&&`/`;` chains stay inside one step; a whole-script `bash -lc '...'` is unwrapped. Never raises:
    on unexpected input the text comes back as one local step.
    """
    try:
        return _steps(command, None, None, 0)
    except Exception:  # defensive: a parser bug must not stop ingestion of a transcript
        return [ShellStep(None, None, command.strip(), [])]
