"""How right the claim checker is, and how fast the knowledge pipeline reads agent prose.

    python bench/knowledge_bench.py [--claims-only] [--sentences N] [--batch-size B] [TRANSCRIPT ...]

First the claim checker against the frozen hand-annotated figures of bench/data/claims_eval (see its
README): precision and recall of `inconsistent` and `consistent`, and the recall of verdicts, per set
(tuning, held_apart), each scenario's journal and session ingested into a DuckDB file of its own.

Reads the message text of real transcripts (by default the kimi-k25 sample and every transcript of
../shared/corpus/transcripts), one line a text as `logmine.knowledge.rebuild` feeds them, and runs the spaCy
pipeline of `logmine.knowledge.nlp` over them with `nlp.pipe` in one process. Entity extraction alone; the claim
checker runs only on sentences with a quantity. Prints lines, sentences, entities, seconds and rates.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core: no BLAS threads (spaCy's rules use none anyway)

import claims_eval  # noqa: E402  (bench/ is on sys.path when this file runs)
from logmine.parsers.transcripts.detect import read_transcripts  # noqa: E402
from logmine.parsers.transcripts.model import Message  # noqa: E402

from logmine.knowledge import nlp  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared"
DEFAULT_INPUTS = [SHARED / "samples" / "kimi-k25" / "session.opencode.json",
                  *sorted((SHARED / "corpus" / "transcripts").glob("*.json*"))]


def prose_lines(paths: list[Path]) -> list[str]:
    """Every non-blank line of every message with text, in order."""
    lines: list[str] = []
    for path in paths:
        for record in read_transcripts(path):
            if isinstance(record, Message) and record.text:
                lines.extend(line for _, line in nlp.lines(record.text))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="*", type=Path, default=DEFAULT_INPUTS)
    parser.add_argument("--sentences", type=int, default=50_000, help="stop after about this many sentences")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--claims-only", action="store_true", help="the claim checker's scores, not the speed")
    args = parser.parse_args()
    started = time.perf_counter()
    pipeline = nlp.pipeline()  # built before the claim checker, which would build it unseen
    built = time.perf_counter() - started
    started = time.perf_counter()
    print(claims_eval.report(claims_eval.outcomes()))
    print(f"(claim checker: {time.perf_counter() - started:.1f} s; figures of ../shared/corpus skipped when absent)\n")
    if args.claims_only:
        return
    lines = prose_lines([p for p in args.inputs if p.exists()])
    print(f"pipeline built in {built:.2f} s (spaCy import and patterns)")
    print(f"{'pass':<6} {'lines':>9} {'sentences':>10} {'entities':>9} {'MB':>6} {'wall s':>7} {'cpu s':>6} "
          f"{'sentences/s':>12} {'per cpu s':>10}")
    # The corpus holds a few thousand sentences: it is read again until --sentences are done. The first
    # pass meets every word for the first time (each new word type is classified once); later passes find
    # the words in the vocabulary and the tokenizer's cache, as a long ingest does for common words.
    done = total_seconds = total_cpu = 0.0
    passes = 0
    while done < args.sentences:
        passes += 1
        sentences = entities = characters = 0
        started, cpu_started = time.perf_counter(), time.process_time()
        for doc in pipeline.pipe(lines, batch_size=args.batch_size):
            characters += len(doc.text)
            sentences += sum(1 for _ in doc.sents)
            entities += len(doc.ents)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        done += sentences
        total_seconds += seconds
        total_cpu += cpu
        if passes == 1:
            print(f"{'first':<6} {len(lines):>9,} {sentences:>10,} {entities:>9,} {characters / 1e6:>6.2f} "
                  f"{seconds:>7.2f} {cpu:>6.2f} {sentences / seconds:>12,.0f} {sentences / cpu:>10,.0f}")
    print(f"{'all ' + str(passes):<6} {len(lines) * passes:>9,} {int(done):>10,} {entities * passes:>9,} "
          f"{characters * passes / 1e6:>6.2f} {total_seconds:>7.2f} {total_cpu:>6.2f} {done / total_seconds:>12,.0f} "
          f"{done / total_cpu:>10,.0f}")
    print("(wall: sentences per second of elapsed time; per cpu s: per second of this process's CPU time, which "
          "other processes on a shared machine do not inflate)")


if __name__ == "__main__":
    main()
