"""Rebuild the SGLang message catalogue from SGLang's released source.

```
python bench/catalogue_build.py SRC_ROOT [--catalogue parsers/sglang_catalogue.tsv]
                                [--unnamed bench/sglang_unnamed_calls.tsv]
```

SRC_ROOT holds one folder per release, named `vX.Y.Z` (e.g. the `sglang/` tree of each release's
wheel unpacked into `SRC_ROOT/v0.5.9/`). Every logger call of `sglang/srt` and `launch_server.py`
is read with `ast` (never imported): `logger.info/warning/error/...(...)`, `warning_once`,
`print_warning_once`, `rank0_log`, `log_info_on_rank0`, ... with f-strings, `%` and `.format` turned into a template
whose variable parts are `<*>`. Only the first line of a message counts: later lines carry no prefix.

Two files come out, one row per (module, level, template) with the releases it was seen in:
- the catalogue (`--catalogue`): the nameable templates (enough fixed text to be told from other
  lines), with an id and a topic;
- the other calls (`--unnamed`): too little fixed text (`logger.info(msg)`, `f"{k}: {v}"`), one row
  per release with its number of call sites (many calls share the bare template `<*>`); with the
  catalogue, every call enumerated, which `catalogue_coverage.py` counts per release.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ANY = "<*>"
LEVELS = {"debug": "DEBUG", "info": "INFO", "warning": "WARNING", "warn": "WARNING", "error": "ERROR",
          "exception": "ERROR", "critical": "CRITICAL", "fatal": "CRITICAL", "info_once": "INFO",
          "warning_once": "WARNING", "debug_once": "DEBUG", "error_once": "ERROR"}
# SGLang's helpers that log a message: name -> (level, index of the message argument)
HELPERS = {"print_warning_once": ("WARNING", 0), "print_info_once": ("INFO", 0), "rank0_log": ("INFO", 0),
           "log_info_on_rank0": ("INFO", 1), "log_debug_on_rank0": ("DEBUG", 1), "_warn_once": ("WARNING", 1)}
PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[hlL]?[diouxXeEfFgGcrsa%]")
FORMAT_FIELD = re.compile(r"\{\{|\}\}|\{[^{}]*\}")
MIN_FIXED = 8  # fixed characters (not spaces) a template needs to name a line
WORDY = re.compile(r"[A-Za-z]{3}")
# First matching path fragment -> topic of the notices the module's lines become.
TOPICS = (
    ("speculative", "speculative"), ("eagle", "speculative"), ("hicache", "hicache"), ("hi_", "hicache"),
    ("mem_cache/storage", "hicache"), ("cache_controller", "hicache"), ("mem_cache", "memory"),
    ("model_loader", "weights"), ("cuda_graph", "cuda_graph"), ("graph_runner", "cuda_graph"),
    ("npu", "npu"), ("ascend", "npu"), ("rocm", "rocm"), ("hip", "rocm"), ("aiter", "rocm"),
    ("/cpu", "cpu"), ("cpu_", "cpu"), ("disaggregation", "disaggregation"), ("managers/scheduler", "scheduler"),
    ("managers/tokenizer", "tokenizer"), ("managers/detokenizer", "tokenizer"), ("managers", "scheduler"),
    ("model_executor", "startup"), ("entrypoints", "server"), ("launch_server", "server"),
    ("server_args", "server_args"), ("distributed", "distributed"), ("layers/quantization", "quantization"),
    ("layers/attention", "attention_backend"), ("layers/moe", "moe"), ("lora", "lora"), ("models/", "model"),
    ("layers", "model"), ("configs", "config"), ("function_call", "parser"), ("parser", "parser"),
    ("multimodal", "multimodal"), ("utils", "utils"),
)


def version_key(release: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", release))


def topic_of(module: str) -> str:
    return next((topic for fragment, topic in TOPICS if fragment in module), "sglang")


def literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def template_of(node: ast.expr, has_args: bool) -> str:
    """The message of a call's first argument, variable parts as `<*>`."""
    text = literal(node)
    if text is not None:
        return PERCENT.sub(lambda m: "%" if m[0] == "%%" else ANY, text) if has_args else text
    if isinstance(node, ast.JoinedStr):
        return "".join(literal(v) if literal(v) is not None else ANY for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and literal(node.left) is not None:
        return template_of(node.left, True)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return template_of(node.left, False) + template_of(node.right, False)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
            and literal(node.func.value) is not None):
        return FORMAT_FIELD.sub(lambda m: m[0][0] if m[0] in ("{{", "}}") else ANY, literal(node.func.value))
    return ANY


def first_line(template: str) -> str:
    """What the prefixed line shows: the first line, placeholders merged, trailing spaces dropped."""
    line = template.split("\n", 1)[0].rstrip()
    while ANY + ANY in line:
        line = line.replace(ANY + ANY, ANY)
    return line


def nameable(template: str) -> bool:
    fixed = "".join(template.split(ANY))
    return len(fixed.replace(" ", "")) >= MIN_FIXED and bool(WORDY.search(fixed))


def logger_calls(tree: ast.AST) -> list[tuple[str, str]]:
    """(level, template) of every logger call in a module."""
    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in LEVELS:
            receiver = ast.unparse(func.value)
            if not (receiver.lower().endswith("logger") or receiver == "logging"):
                continue
            level, message = LEVELS[func.attr], node.args[0]
            has_args = len(node.args) > 1
        else:
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name not in HELPERS or len(node.args) <= HELPERS[name][1]:
                continue
            level, index = HELPERS[name]
            message, has_args = node.args[index], False
        calls.append((level, first_line(template_of(message, has_args))))
    return calls


def release_calls(root: Path) -> Counter[tuple[str, str, str]]:
    """(module, level, template) -> call sites, for one release's source tree."""
    found: Counter[tuple[str, str, str]] = Counter()
    package = root / "sglang"
    files = sorted(package.glob("srt/**/*.py")) + [package / "launch_server.py"]
    for path in files:
        if not path.exists():
            continue
        module = path.relative_to(package).with_suffix("").as_posix()
        try:
            tree = ast.parse(path.read_text(encoding="utf-8-sig", errors="replace"))
        except SyntaxError as exc:
            print(f"{path}:{exc.lineno}: not parsed ({exc.msg})", file=sys.stderr)
            continue
        for level, template in logger_calls(tree):
            found[(module, level, template)] += 1
    return found


def versions_text(releases: list[str], seen: set[str]) -> str:
    """`v0.4.0-v0.5.18` for consecutive sampled releases; runs joined by `,` when a message came back."""
    runs, current = [], []
    for release in releases:
        if release in seen:
            current.append(release)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return ",".join(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def template_id(module: str, level: str, template: str) -> str:
    digest = hashlib.sha1(f"{module}\t{level}\t{template}".encode()).hexdigest()[:8]
    return f"{module.rsplit('/', 1)[-1]}.{digest}"


def clean(text: str) -> str:
    """A TSV field: tabs and carriage returns would break the row."""
    return text.replace("\t", " ").replace("\r", " ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src_root", type=Path)
    parser.add_argument("--catalogue", type=Path, default=Path("parsers/sglang_catalogue.tsv"))
    parser.add_argument("--unnamed", type=Path, default=Path("bench/sglang_unnamed_calls.tsv"))
    args = parser.parse_args()
    releases = sorted((p.name for p in args.src_root.iterdir() if (p / "sglang").is_dir()), key=version_key)
    seen: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    bare: list[tuple[str, str, str, str, int]] = []
    for release in releases:
        for key, sites in sorted(release_calls(args.src_root / release).items()):
            seen[key].add(release)
            if not nameable(key[2]):
                bare.append((release, *key, sites))
    keys = sorted(seen, key=lambda k: (k[0], k[2], k[1]))
    named = [key for key in keys if nameable(key[2])]
    with args.catalogue.open("w", encoding="utf-8") as out:
        out.write("id\tlevel\tmodule\ttopic\tversions\ttemplate\n")
        for module, level, template in named:
            out.write(f"{template_id(module, level, template)}\t{level}\t{module}\t{topic_of(module)}\t"
                      f"{versions_text(releases, seen[(module, level, template)])}\t{clean(template)}\n")
    with args.unnamed.open("w", encoding="utf-8") as out:
        out.write(f"# releases read: {' '.join(releases)}\n")
        out.write("release\tlevel\tmodule\tsites\ttemplate\n")
        for release, module, level, template, sites in bare:
            out.write(f"{release}\t{level}\t{module}\t{sites}\t{clean(template)}\n")
    print(f"{len(releases)} releases, {len(keys)} distinct calls, {len(named)} catalogue templates, "
          f"{sum(row[-1] for row in bare)} bare call sites over all releases")


if __name__ == "__main__":
    main()
