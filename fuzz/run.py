"""Run a fuzz target with atheris (libFuzzer) for a bounded time.

    python fuzz/run.py --list
    python fuzz/run.py journal-short --seconds 60
    python fuzz/run.py all --seconds 10        # every target, each input read by the one its first byte picks

Targets come from the modules beside this one that define `TARGETS` (names), `target(name)` (a function
of bytes that raises on a broken promise) and `seeds(name)` (inputs to start from): `envelopes.py` reads
logs, a module per family of readers may add more. logmine's own modules are instrumented for coverage.
A crash leaves its input as `fuzz/crashes/crash-*`; rerun it with `python fuzz/run.py NAME FILE`, and make
it a regression test.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # `fuzz` and `tests` as packages, whatever the working directory

import atheris  # noqa: E402 - after the path it needs

with atheris.instrument_imports(include=["logmine"]):
    import logmine.ingest.logs  # noqa: F401 - instrumented here, before any target module imports it


def target_modules() -> list:
    names = sorted(p.stem for p in HERE.glob("*.py") if p.stem not in ("__init__", "run"))
    return [m for m in (importlib.import_module(f"fuzz.{name}") for name in names) if hasattr(m, "TARGETS")]


def registry() -> dict[str, tuple[Callable[[bytes], None], list[bytes]]]:
    return {name: (module.target(name), module.seeds(name)) for module in target_modules() for name in module.TARGETS}


def every_target(found: dict) -> tuple[Callable[[bytes], None], list[bytes]]:
    """One target reading each input with the reader its first byte picks, so one process covers them all."""
    names = sorted(found)

    def one_input(data: bytes) -> None:
        if data:
            found[names[data[0] % len(names)]][0](data[1:])

    seeds = [bytes([i]) + seed for i, name in enumerate(names) for seed in found[name][1]]
    return one_input, seeds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", nargs="?", help="a target name, or 'all'")
    parser.add_argument("inputs", nargs="*", help="inputs to run once (a crash file) instead of fuzzing")
    parser.add_argument("--seconds", type=int, default=60, help="how long to fuzz (default 60)")
    parser.add_argument("--list", action="store_true", help="list the targets")
    args = parser.parse_args()
    found = registry()
    if args.list or not args.target:
        print("\n".join(["all", *sorted(found)]))
        return
    if args.target != "all" and args.target not in found:
        sys.exit(f"fuzz/run.py: no target {args.target!r}; choose one of: all, {', '.join(sorted(found))}")
    one_input, seeds = every_target(found) if args.target == "all" else found[args.target]
    if args.inputs:
        for path in args.inputs:
            one_input(Path(path).read_bytes())
        print(f"{len(args.inputs)} inputs read without a broken promise")
        return
    crashes = HERE / "crashes"
    crashes.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="logmine-fuzz-") as corpus:
        for i, seed in enumerate(seeds):
            Path(corpus, f"seed-{i}").write_bytes(seed)
        libfuzzer = [sys.argv[0], corpus, f"-max_total_time={args.seconds}", "-max_len=4096", "-timeout=10",
                     "-rss_limit_mb=2048", f"-artifact_prefix={crashes}/", "-print_final_stats=1"]
        atheris.Setup(libfuzzer, one_input)
        atheris.Fuzz()


if __name__ == "__main__":
    main()
