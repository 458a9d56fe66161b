"""Verdicts: a claim read from the agent's prose, judged against what the logs measured for its run.

`logmine.knowledge.claims` reads each claim once, with spaCy, into a reading (plain data: the number as written,
its arithmetic, the cue words near it and how near, the flag values of its sentence), kept per message.
Judging a reading needs no spaCy, so when only the logs change (a journal grew, a run was added) every
claim is judged again against the new runs without reading the prose again.

For each quantity (bytes, seconds, tokens) in assistant text: which measured figure it speaks of
(cue words of `parsers/knowledge/quantities.json` in the same clause, or weaker, the same sentence),
which run (the run the message's configuration change produced, else the run current at the message's
time, else the nearest), and the verdict:

- `consistent`: within the rounding of the number as written (half a unit of its last digit; a whole
  unit when marked approximate, "~41.7"), read either as the log prints it (SGLang's device "GB" is
  GiB) or converted to the unit the agent wrote;
- `inconsistent`: a cue in the same clause names a measured figure that disagrees, the arithmetic
  inside the claim is wrong, or the figure matches only once GiB and GB are swapped (the `cause`);
- `unverifiable`: no cue, or nothing measured that figure for that run.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from .quantities import Quantity, data_file

VERIFIABLE = {"bytes", "seconds", "tokens"}
BINARY_COUNTERPART = {1e9: 2**30, 2**30: 1e9, 1e6: 2**20, 2**20: 1e6, 1e12: 2**40, 2**40: 1e12, 1e3: 1024, 1024: 1e3}
UNIT_NAME = {1e9: "GB", 2**30: "GiB", 1e6: "MB", 2**20: "MiB", 1e12: "TB", 2**40: "TiB", 1e3: "KB", 1024: "KiB"}


@dataclass(frozen=True)
class Measured:
    quantity: str
    scope: str
    value: float
    unit: str                     # as the log prints it
    bytes_per_unit: float | None  # what the printed unit means
    source: str                   # file:line
    slack: float = 0.0            # the measured figure's own uncertainty, in its printed unit
    derivation: str | None = None  # how a figure the log did not print as such came about ("per rank x 4 ranks")


@dataclass
class Candidate:
    measured: Measured
    strong: bool      # the cue is the nearest one in the claim's clause
    distance: int     # tokens between cue and number
    what_if: bool = False  # the figure a proposed change predicts, not one the log printed


@functools.cache
def knowledge() -> dict:
    return json.loads(data_file("quantities.json"))


def tolerance(q: Quantity) -> float:
    """Half a unit of the last digit as written, a whole unit when approximate (in the written unit)."""
    return (q.step if q.approximate else q.step / 2) + 1e-9


def within(written: float, measured: float, tol: float, bound: str | None, high: float | None = None) -> bool:
    """Whether the measured figure agrees with the number as written: equal within `tol`, on the right
    side of it when the number is a bound ('under 12 minutes' is `upper`, 'at least 8 GB' `lower`), or
    between its ends when it is a range (`high`, '651.7-652.1 s')."""
    if high is not None:
        return written - tol <= measured <= high + tol
    if bound == "upper":
        return measured <= written + tol
    if bound == "lower":
        return measured >= written - tol
    return abs(written - measured) <= tol


def compare(q: Quantity, m: Measured, bound: str | None = None) -> tuple[bool, str | None, float]:
    """(agrees, cause of a disagreement when it is a unit mix-up, measured value in the written unit)."""
    factor = q.factor
    tol = tolerance(q) + m.slack * (m.bytes_per_unit or 1.0) / factor
    if m.bytes_per_unit is None:
        measured = m.value / factor if q.dimension != "bytes" else m.value
        return within(q.written, measured, tol, bound, q.high), None, measured
    as_printed = q.written_unit == m.unit and within(q.written, m.value, tol, bound, q.high)
    in_bytes = m.value * m.bytes_per_unit
    converted = in_bytes / factor
    if as_printed or within(q.written, converted, tol, bound, q.high):
        return True, None, m.value if as_printed else converted
    shown = m.value if q.written_unit == m.unit else converted  # as the log prints it when the labels agree
    counterpart = BINARY_COUNTERPART.get(factor)
    if bound is None and q.high is None and counterpart and abs(q.written - in_bytes / counterpart) <= tol:
        true_unit = UNIT_NAME.get(m.bytes_per_unit, m.unit)
        cause = (f"{UNIT_NAME[counterpart]} written as {q.written_unit}: "
                 f"{m.value:g} {true_unit} = {in_bytes / counterpart:.2f} {UNIT_NAME[counterpart]}")
        return False, cause, shown
    return False, None, shown


# A figure with no cue, or one that disagrees with its cue's quantity, is taken for another measured figure
# whose value it matches only when written with this many significant digits ("7.78 GB", "261,929 tokens"):
# a "12 minutes" matches too many things by chance.
VALUE_MATCH_DIGITS = 3


def significant_digits(q: Quantity) -> int:
    if q.written == 0 or q.step <= 0:
        return 0
    return int(math.floor(math.log10(abs(q.written))) - round(math.log10(q.step))) + 1


def judge(q: Quantity, found: list[Candidate], arith: tuple[str, float] | None, bound: str | None = None,
          hypothetical: bool = False, run_measured: dict | None = None, not_measured: str | None = None) -> dict:
    """The verdict of one claim over its candidates. A number of a plan or prediction (`hypothetical`)
    speaks of a configuration the log did not measure: only a unit mix-up, wrong arithmetic or a what-if
    rule's figure can contradict it. A figure its cue's quantity contradicts is `inconsistent` only when
    no other figure of the run explains it: the same quantity at another scope (per rank for a total, per
    node) makes it `unverifiable`, said so in the cause; another quantity's figure it matches exactly makes
    it that figure's. A figure its words say no log measures (`not_measured`: the host's RAM) is
    `unverifiable` unless a measured figure agrees with it."""
    if arith is not None and abs(arith[1] - q.written) > tolerance(q):
        best = found[0].measured if found else None
        return _verdict("inconsistent", best, None if best is None else compare(q, best)[2],
                        f"arithmetic: {arith[0]} = {arith[1]:.4g}, not {q.written:g}", "arithmetic of the claim")
    results = [(c, *compare(q, c.measured, bound)) for c in found]
    for c, agrees, _, measured in results:
        if agrees:
            return _verdict("consistent", c.measured, measured, None, _how(q, c.measured, measured))
    for c, _, cause, measured in results:
        if cause:
            return _verdict("inconsistent", c.measured, measured, cause,
                            _how(q, c.measured, None) + "; GiB and GB swapped")
    strong = [(c, measured) for c, _, _, measured in results if c.strong and (c.what_if or not hypothetical)]
    named = {c.measured.quantity for c in found}
    other = by_value(q, run_measured or {}, bound)
    if other is not None:  # a figure the run measured agrees with it: it is no error, whatever its words say
        m, measured = other
        if m.quantity in named:  # the quantity its words name, at a scope they did not say
            return _verdict("unverifiable", None, None,
                            f"matches the {m.scope} figure {m.value:g} {m.unit} of {m.quantity}, not the scope written",
                            None)
        if significant_digits(q) >= VALUE_MATCH_DIGITS and not hypothetical and not not_measured:
            return _verdict("consistent", m, measured, None, "matched by value: " + _how(q, m, measured))
        return _verdict("unverifiable", None, None, None, None)
    if not_measured:
        return _verdict("unverifiable", None, None, f"{not_measured}: no log measures it", None)
    if strong:
        return _verdict("inconsistent", strong[0][0].measured, strong[0][1], None, _how(q, strong[0][0].measured, None))
    return _verdict("unverifiable", None, None, None, None)


def by_value(q: Quantity, run_measured: dict, bound: str | None) -> tuple[Measured, float] | None:
    """The first measured figure of the claim's dimension (quantities.json order, per rank first) that it
    agrees with."""
    spec = knowledge()["quantities"]
    order = {name: k for k, name in enumerate(spec)}
    figures = sorted((m for m in run_measured.values() if m.quantity in spec
                      and spec[m.quantity]["dimension"] == q.dimension and spec[m.quantity].get("by_value", True)),
                     key=lambda m: (m.scope != "rank", order[m.quantity]))
    for m in figures:
        agrees, _, measured = compare(q, m, bound)
        if agrees:
            return m, measured
    return None


def _how(q: Quantity, m: Measured, measured: float | None) -> str:
    """How the measured figure was reached: printed by the log, or derived (with the rule and arithmetic),
    and the conversion to the unit written."""
    parts = [f"derived: {m.derivation}" if m.derivation else "observed"]
    if measured is not None and m.bytes_per_unit and q.written_unit not in (m.unit, _true_unit(m)):
        parts.append(f"converted: {m.value:g} {_true_unit(m)} = {measured:.2f} {q.written_unit}")
    return "; ".join(parts)


def _true_unit(m: Measured) -> str:
    """What the printed unit means: SGLang's device "GB" is GiB."""
    return UNIT_NAME.get(m.bytes_per_unit, m.unit) if m.bytes_per_unit else m.unit


def _verdict(verdict: str, m: Measured | None, measured: float | None, cause: str | None,
             derivation: str | None) -> dict:
    return {"verdict": verdict, "derivation": derivation, "quantity": m.quantity if m else None,
            "scope": m.scope if m else None,
            "measured": None if measured is None else round(measured, 4),
            "measured_figure": None if m is None else f"{round(m.value, 2):g} {_true_unit(m)}",
            "measured_source": m.source if m else None, "cause": cause}


def judged(reading: dict, which: tuple[int, int] | None, run_measured: dict) -> dict:
    """A claim row: the reading, the run it speaks of, and its verdict over that run's measured figures."""
    q = Quantity(*reading["quantity"])
    arith = reading["arithmetic"]
    return {"sentence": reading["sentence"], "span_start": reading["span_start"], "span_end": reading["span_end"],
            "text": reading["text"], "value": q.written, "unit": q.written_unit, "approximate": q.approximate,
            "arithmetic": None if arith is None else f"{arith[0]} = {arith[1]:.4g}",
            "source_id": which[0] if which else None, "run": which[1] if which else None,
            "sentence_text": reading["sentence_text"],
            **judge(q, candidates(reading, run_measured), arith, reading.get("bound"),
                    reading.get("hypothetical", False), run_measured, reading.get("unmeasured"))}


def candidates(reading: dict, run_measured: dict) -> list[Candidate]:
    """Measured figures the number may speak of, nearest cue first, strong (same clause) first."""
    found: list[Candidate] = []
    special = what_if(reading, run_measured)
    if special is not None:
        found.append(Candidate(special, True, 0, what_if=True))
    for name, strong, distance in reading["cues"]:
        for scope in reading["scopes"]:
            m = run_measured.get((name, scope))
            if m is not None:
                found.append(Candidate(m, strong, distance))
    # Ties go to the quantity listed first in quantities.json: "weights" means the weights, not what they leave.
    order = {name: k for k, name in enumerate(knowledge()["quantities"])}
    found.sort(key=lambda c: (not c.strong, c.distance, c.measured.scope != "rank", order.get(c.measured.quantity, -1)))
    return found


def what_if(reading: dict, run_measured: dict) -> Measured | None:
    """'+3.82 GB' beside '--mem-fraction-static ... 0.92': the figure that change predicts."""
    specs = knowledge()["what_if"]
    for name, value in reading["what_if"]:
        spec = specs[name]
        base, setting = run_measured.get((spec["base"], "rank")), run_measured.get((spec["setting"], "rank"))
        if base is None or setting is None:
            continue
        delta = base.value * (value - setting.value)
        return Measured(f"{spec['base']} x change of {spec['setting']}", "rank", round(delta, 4), base.unit,
                        base.bytes_per_unit, base.source, spec["slack"])
    return None


class Run(NamedTuple):
    source_id: int
    ordinal: int
    started_at: datetime | None
    config: dict | None
    last_seen: datetime | None  # the time of its last line


# How long after a run's last line a message may still speak of it unprompted: a session days from any
# run (a journal and a transcript of different days ingested together) speaks of none of them.
RECENT = timedelta(hours=12)


def run_of_message(when: datetime | None, message_index: int, session_links: list[tuple[int, int, int]],
                   runs: list[Run]) -> tuple[int, int] | None:
    """The run a message speaks of: the one its configuration change produced (or the latest change
    before it), unless a later run was already up; else the run current at its time, else the nearest
    (neither when the message is far from every run)."""
    started = {r[:2]: r.started_at for r in runs}
    linked = [(s, o) for idx, s, o in session_links if idx <= message_index]
    near = [r for r in runs if r.started_at is not None and when is not None
            and r.started_at - RECENT <= when <= (r.last_seen or r.started_at) + RECENT]
    current = [(r.started_at, *r[:2]) for r in near if r.started_at <= when]
    best = max(current)[1:] if current else None
    if linked:
        candidate = linked[-1]
        if best is None or (started.get(candidate) and started[candidate] > started[best]):
            best = candidate
    if best is None and near:
        best = min((abs((r.started_at - when).total_seconds()), *r[:2]) for r in near)[1:]
    return best


def run_with_settings(default: tuple[int, int] | None, when: datetime | None, settings: dict[str, float],
                      runs: list[Run]) -> tuple[int, int] | None:
    """A sentence naming flag values speaks of a configuration: when the message's run was not started
    with them, the first run from the message's time on that was ("--hicache-ratio 2.0 asks for ...")."""
    configs = {r[:2]: r.config for r in runs}
    if not settings or default is None or _has_settings(configs.get(default), settings):
        return default
    later = [(r.started_at, *r[:2]) for r in runs if r.started_at is not None
             and (when is None or r.started_at >= when) and _has_settings(r.config, settings)]
    return min(later)[1:] if later else default


def judged_among_runs(reading: dict, which: tuple[int, int] | None, when: datetime | None, runs: list[Run],
                      measured: dict[tuple[int, int], dict]) -> dict:
    """`judged` against the run the message speaks of; a figure that contradicts it (not by a unit mix-up),
    or that it did not measure, but is what a run before it measured speaks of that run, and is no error."""
    claim = judged(reading, which, measured.get(which, {}))
    if which is None or claim["verdict"] == "consistent" or claim["cause"] is not None or (
            claim["verdict"] == "unverifiable" and not looks_back(reading["sentence_text"])):
        return claim
    for run in earlier_runs(which, when, runs):
        other = judged(reading, run, measured.get(run, {}))
        if other["verdict"] == "consistent":
            other["derivation"] = f"{other['derivation']}; of run {run[1]}, an earlier run"
            return other
    return claim


@functools.cache
def _looking_back() -> re.Pattern:
    words = sorted(knowledge()["looking_back"], key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\b", re.IGNORECASE)


def looks_back(sentence: str) -> bool:
    """Whether a sentence speaks of what happened ('took ~11 minutes to load', 'the previous start'): a
    figure of it the message's run did not measure may be an earlier run's; one of the present or future
    ('the model takes ~11 minutes to load') may not."""
    return _looking_back().search(sentence) is not None


def earlier_runs(which: tuple[int, int] | None, when: datetime | None, runs: list[Run]) -> list[tuple[int, int]]:
    """The runs started before the message other than `which`, latest first: what else a figure that
    contradicts its run may be about ("before the change the pool was 200,000 tokens")."""
    before = [r for r in runs if r[:2] != which and r.started_at is not None and (when is None or r.started_at <= when)]
    return [r[:2] for r in sorted(before, key=lambda r: r.started_at, reverse=True)]


def _has_settings(config: dict | None, settings: dict[str, float]) -> bool:
    known = {k: v for k, v in settings.items() if config and k in config}
    return bool(known) and all(isinstance(config[k], int | float) and float(config[k]) == v for k, v in known.items())
