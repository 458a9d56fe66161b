"""SGLang server configuration from the three places it shows up: systemd unit files, launch command
lines, and the ``server_args=ServerArgs(...)`` dump SGLang logs at start-up.

Every result is a dict keyed like the ServerArgs dataclass fields (``tp_size``, ``hicache_ratio``, ...)
with typed values, so a configuration an agent wrote can be compared with the one the server printed.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field

from logmine.parsers.shell_commands import parse_script, program_name, strip_command_prefixes

# ---------------------------------------------------------------------------------------------------------
# systemd unit files
# ---------------------------------------------------------------------------------------------------------

_SECTION_RE = re.compile(r"\[([^\]]+)\]")
_CAT_HEADER_RE = re.compile(r"# (/\S+)")
_EXEC_PREFIX_RE = re.compile(r"^[-@:+!]+")  # systemd ExecStart= prefixes: ignore-failure, privileges, ...


@dataclass
class UnitFile:
    sections: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    environment_files: list[str] = field(default_factory=list)
    exec_start: str = ""  # continuation lines joined, systemd prefixes (`-`, `@`, `+`, `!`) removed
    working_directory: str | None = None
    user: str | None = None
    description: str | None = None
    path: str | None = None  # `systemctl cat` heads each file with `# /etc/systemd/system/x.service`

    def get(self, section: str, key: str) -> str | None:
        """Last value of ``key`` in ``section`` (later assignments win in systemd)."""
        values = [v for k, v in self.sections.get(section, []) if k == key]
        return values[-1] if values else None


def _logical_lines(text: str) -> Iterator[str]:
    """Lines with backslash continuations joined; systemd replaces the backslash with a space."""
    pending: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if pending and stripped.startswith(("#", ";")):
            continue  # systemd skips comment lines inside a continuation
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        yield " ".join(p for p in pending if p)
        pending = []
    if pending:
        yield " ".join(p for p in pending if p)


def _environment_pairs(value: str) -> Iterator[tuple[str, str]]:
    """`Environment="A=1 2" B=3`: whitespace-separated assignments, each optionally quoted."""
    try:
        items = shlex.split(value)
    except ValueError:  # unbalanced quotes: fall back to plain words
        items = value.split()
    for item in items:
        key, sep, val = item.partition("=")
        if sep and key:
            yield key, val


def parse_unit_file(text: str) -> UnitFile:
    """Parse a systemd unit (also `systemctl cat` output with drop-ins); never raises."""
    unit = UnitFile()
    section = ""
    for line in _logical_lines(text):
        if not line or line.startswith(("#", ";")):
            if unit.path is None and (path := _CAT_HEADER_RE.fullmatch(line)):
                unit.path = path.group(1)
            continue
        header = _SECTION_RE.fullmatch(line)
        if header:
            section = header.group(1)
            continue
        key, sep, value = line.partition("=")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        unit.sections.setdefault(section, []).append((key, value))
        _apply_assignment(unit, key, value)
    return unit


def _apply_assignment(unit: UnitFile, key: str, value: str) -> None:
    # An empty assignment resets list-like settings, which is how drop-ins replace ExecStart=.
    if key == "Environment":
        if not value:
            unit.environment.clear()
        unit.environment.update(_environment_pairs(value))
    elif key == "EnvironmentFile":
        if value:
            unit.environment_files.append(value)
        else:
            unit.environment_files.clear()
    elif key == "ExecStart":
        unit.exec_start = _EXEC_PREFIX_RE.sub("", value)
    elif key == "WorkingDirectory":
        unit.working_directory = value or None
    elif key == "User":
        unit.user = value or None
    elif key == "Description":
        unit.description = value or None


# ---------------------------------------------------------------------------------------------------------
# Launch command lines
# ---------------------------------------------------------------------------------------------------------

_LAUNCH_MODULES = frozenset({"sglang.launch_server"})
# Alternative spellings documented in SGLang's server_arguments.md; `--tp`/`--dp` are the argparse prefix
# abbreviations the SGLang docs themselves use ("add `--tp 2`").
_FLAG_ALIASES = {
    "model": "model_path",
    "tp": "tp_size",
    "tensor_parallel_size": "tp_size",
    "dp": "dp_size",
    "data_parallel_size": "dp_size",
    "pp": "pp_size",
    "pipeline_parallel_size": "pp_size",
    "ep": "ep_size",
    "expert_parallel_size": "ep_size",
    "speculative_draft_model": "speculative_draft_model_path",
    "nccl_init_addr": "dist_init_addr",
}
# nargs='+' flags: ServerArgs prints them as lists even when one value was given.
_LIST_KEYS = frozenset(
    {
        "cuda_graph_bs",
        "lora_paths",
        "lora_target_modules",
        "log_requests_target",
        "uvicorn_access_log_exclude_prefixes",
        "tokenizer_metrics_allowed_custom_labels",
        "bucket_time_to_first_token",
        "bucket_inter_token_latency",
        "bucket_e2e_request_latency",
        "prompt_tokens_buckets",
        "generation_tokens_buckets",
    }
)
_INT_RE = re.compile(r"[+-]?\d+")
_FLOAT_RE = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")
_NEGATIVE_NUMBER_RE = re.compile(r"-\.?\d")
_MAX_NESTING = 4  # bash -c inside ssh inside bash -c ...


def _typed(text: str) -> object:
    """A command-line value as the type ServerArgs would hold: '8' -> 8, '0.88' -> 0.88, 'true' -> True."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    if _INT_RE.fullmatch(text):
        return int(text)
    if _FLOAT_RE.fullmatch(text):
        return float(text)
    return text


def _is_flag(token: str) -> bool:
    return token.startswith("-") and len(token) > 1 and not _NEGATIVE_NUMBER_RE.match(token)


def _server_key(flag: str) -> str:
    name = flag.lstrip("-").replace("-", "_")
    return _FLAG_ALIASES.get(name, name)


def parse_server_flags(args: list[str]) -> dict[str, object]:
    """argv after `-m sglang.launch_server` -> ServerArgs-named typed values (last occurrence wins)."""
    config: dict[str, object] = {}
    positional: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if not _is_flag(token):
            positional.append(token)
            continue
        flag, has_inline, inline = token.partition("=")
        if has_inline:
            values = [inline]
        else:
            start = i
            while i < len(args) and not _is_flag(args[i]):
                i += 1
            values = args[start:i]
        key = _server_key(flag)
        config[key] = _flag_value(key, values)
    if positional and "model_path" not in config:
        config["model_path"] = positional[0]  # `sglang serve MODEL`
    return config


def _flag_value(key: str, values: list[str]) -> object:
    if not values:
        return True  # store_true flag such as --enable-hierarchical-cache
    typed = [_typed(v) for v in values]
    if len(typed) == 1 and key not in _LIST_KEYS:
        return typed[0]
    return typed


def _server_argv(words: list[str]) -> list[str] | None:
    """The server's arguments if ``words`` launch an SGLang server, else None."""
    for i, word in enumerate(words):
        launches_module = (
            word == "-m"
            and i + 1 < len(words)
            and words[i + 1] in _LAUNCH_MODULES
            and any(program_name(w).startswith("python") for w in words[:i])
        )
        if launches_module:
            return words[i + 2 :]
        if program_name(word) == "sglang" and words[i + 1 : i + 2] == ["serve"]:
            return words[i + 2 :]
    return None


def _find_launch(script: str, depth: int) -> dict[str, object] | None:
    for pipeline in parse_script(script):
        for command in pipeline.commands:
            words, _sudo = strip_command_prefixes(command.words)
            argv = _server_argv(words)
            if argv is not None:
                return parse_server_flags(argv)
            if depth >= _MAX_NESTING:
                continue
            # A nested script (`bash -c '...'`, `ssh host '...'`, `docker exec c sh -c '...'`).
            for word in words[1:]:
                if "sglang" in word and any(ch.isspace() for ch in word):
                    found = _find_launch(word, depth + 1)
                    if found is not None:
                        return found
    return None


def parse_launch_command(cmd: str) -> dict[str, object] | None:
    """Typed server args of an SGLang launch command line, or None if ``cmd`` launches no SGLang server.

    Recognises `python[3] -m sglang.launch_server`, `/venv/bin/python -m ...`, `sglang serve`, after env
    assignments and wrappers (sudo, env, nohup, exec, ...), and inside `bash -c '...'` or `ssh host '...'`.
    """
    try:
        return _find_launch(cmd, 0)
    except Exception:  # defensive: a parser bug must not stop ingestion
        return None


# ---------------------------------------------------------------------------------------------------------
# server_args=ServerArgs(...) dumps
# ---------------------------------------------------------------------------------------------------------

_DUMP_PREFIX = "server_args="
_REPR_START = "ServerArgs("
_REPR_SPECIAL_RE = re.compile(r"[,'\"()\[\]{}]")
# repr() never puts a raw newline inside a string, so a newline means the string was cut off.
_REPR_STRING_RE = {"'": re.compile(r"'(?:[^'\\\n]|\\.)*'"), '"': re.compile(r'"(?:[^"\\\n]|\\.)*"')}
_REPR_CONSTANTS: dict[str, object] = {"None": None, "True": True, "False": False}
_REPR_FLOAT_WORDS = frozenset({"inf", "-inf", "nan"})


def _repr_fields(text: str, pos: int, end: int) -> Iterator[str]:
    """`key=value` slices of text[pos:end] split at top-level commas; a field cut off by `end` is dropped."""
    depth, field_start = 0, pos
    while True:
        m = _REPR_SPECIAL_RE.search(text, pos, end)
        if m is None:
            return  # truncated dump: the field in progress is incomplete
        char, at = m.group(), m.start()
        if char in _REPR_STRING_RE:
            string = _REPR_STRING_RE[char].match(text, at, end)
            if string is None:
                return  # a string cut off by truncation
            pos = string.end()
            continue
        pos = at + 1
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:  # the `)` closing ServerArgs(
                yield text[field_start:at]
                return
            depth -= 1
        elif depth == 0:
            yield text[field_start:at]
            field_start = pos


def _repr_value(text: str) -> object:
    # Fast paths first: ast.literal_eval on each of ~400 fields would blow the time budget.
    if text in _REPR_CONSTANTS:
        return _REPR_CONSTANTS[text]
    if _INT_RE.fullmatch(text):
        return int(text)
    if _FLOAT_RE.fullmatch(text) or text in _REPR_FLOAT_WORDS:
        return float(text)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" and "\\" not in text:
        return text[1:-1]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text  # e.g. CudaGraphConfig(...) or an object repr: keep it readable


def parse_server_args_repr(text: str) -> dict[str, object]:
    """Fields of a `server_args=ServerArgs(k=v, ...)` dump, or of v0.5.19's `server_args={'k': v, ...}`
    (prefix optional), as typed Python values.

    Only the first line holding the dump is read. A dump truncated (journald's 48K line split, end of
    file) yields the fields that are complete. Values that are not Python literals stay raw strings.
    """
    start = text.find(_REPR_START)
    start = (len(_DUMP_PREFIX) if text.startswith(_DUMP_PREFIX) else 0) if start < 0 else start + len(_REPR_START)
    as_dict = text.startswith("{", start)
    start += as_dict
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    config: dict[str, object] = {}
    for raw in _repr_fields(text, start, end):
        key, value = _dict_item(raw) if as_dict else _keyword(raw)
        if key is not None and key.isidentifier():
            config[key] = _repr_value(value)
    return config


def _keyword(field: str) -> tuple[str | None, str]:
    key, sep, value = field.partition("=")
    return (key.strip() if sep else None), value.strip()


def _dict_item(field: str) -> tuple[str | None, str]:
    field = field.strip()
    key = _REPR_STRING_RE[field[0]].match(field) if field[:1] in _REPR_STRING_RE else None
    if key is None or not field[key.end():].lstrip().startswith(":"):
        return None, ""
    return key.group()[1:-1], field[key.end():].lstrip()[1:].strip()


# ---------------------------------------------------------------------------------------------------------


_UNIT_MARKER_RE = re.compile(r"^\s*(?:\[(?:Unit|Service|Install)\]|ExecStart\s*=)", re.MULTILINE)


def config_in_process_list(text: str) -> dict[str, object] | None:
    """Typed server args of the first SGLang server in `ps` output (one process per line)."""
    return next(filter(None, map(parse_launch_command, text.splitlines())), None)


def config_from_unit_or_command(text: str) -> dict[str, object] | None:
    """Typed server args from a unit file's ExecStart= or from a command line; None if no SGLang launch."""
    if _UNIT_MARKER_RE.search(text):
        exec_start = parse_unit_file(text).exec_start
        return parse_launch_command(exec_start) if exec_start else None
    return parse_launch_command(text)
