"""Verdicts: a claim read from the agent's prose, judged against what the logs measured for its run.

`logmine.claims` reads each claim once, with spaCy, into a reading (plain data: the number as written,
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
from dataclasses import dataclass
from datetime import datetime

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


@dataclass
class Candidate:
    measured: Measured
    strong: bool      # the cue is the nearest one in the claim's clause
    distance: int     # tokens between cue and number


@functools.cache
def knowledge() -> dict:
    return json.loads(data_file("quantities.json"))


def tolerance(q: Quantity) -> float:
    """Half a unit of the last digit as written, a whole unit when approximate (in the written unit)."""
    return (q.step if q.approximate else q.step / 2) + 1e-9


def compare(q: Quantity, m: Measured) -> tuple[bool, str | None, float]:
    """(agrees, cause of a disagreement when it is a unit mix-up, measured value in the written unit)."""
    factor = q.factor
    tol = tolerance(q) + m.slack * (m.bytes_per_unit or 1.0) / factor
    if m.bytes_per_unit is None:
        measured = m.value / factor if q.dimension != "bytes" else m.value
        return abs(q.written - measured) <= tol, None, measured
    as_printed = q.written_unit == m.unit and abs(q.written - m.value) <= tol
    in_bytes = m.value * m.bytes_per_unit
    converted = in_bytes / factor
    if as_printed or abs(q.written - converted) <= tol:
        return True, None, m.value if as_printed else converted
    shown = m.value if q.written_unit == m.unit else converted  # as the log prints it when the labels agree
    counterpart = BINARY_COUNTERPART.get(factor)
    if counterpart and abs(q.written - in_bytes / counterpart) <= tol:
        true_unit = UNIT_NAME.get(m.bytes_per_unit, m.unit)
        cause = (f"{UNIT_NAME[counterpart]} written as {q.written_unit}: "
                 f"{m.value:g} {true_unit} = {in_bytes / counterpart:.2f} {UNIT_NAME[counterpart]}")
        return False, cause, shown
    return False, None, shown


def judge(q: Quantity, found: list[Candidate], arith: tuple[str, float] | None) -> dict:
    """The verdict of one claim over its candidates."""
    if arith is not None and abs(arith[1] - q.written) > tolerance(q):
        best = found[0].measured if found else None
        return _verdict("inconsistent", best, None if best is None else compare(q, best)[2],
                        f"arithmetic: {arith[0]} = {arith[1]:.4g}, not {q.written:g}")
    results = [(c, *compare(q, c.measured)) for c in found]
    for c, agrees, _, measured in results:
        if agrees:
            return _verdict("consistent", c.measured, measured, None)
    for c, _, cause, measured in results:
        if cause:
            return _verdict("inconsistent", c.measured, measured, cause)
    strong = [(c, measured) for c, _, _, measured in results if c.strong]
    if strong:
        return _verdict("inconsistent", strong[0][0].measured, strong[0][1], None)
    return _verdict("unverifiable", None, None, None)


def _true_unit(m: Measured) -> str:
    """What the printed unit means: SGLang's device "GB" is GiB."""
    return UNIT_NAME.get(m.bytes_per_unit, m.unit) if m.bytes_per_unit else m.unit


def _verdict(verdict: str, m: Measured | None, measured: float | None, cause: str | None) -> dict:
    return {"verdict": verdict, "quantity": m.quantity if m else None, "scope": m.scope if m else None,
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
            "sentence_text": reading["sentence_text"], **judge(q, candidates(reading, run_measured), arith)}


def candidates(reading: dict, run_measured: dict) -> list[Candidate]:
    """Measured figures the number may speak of, nearest cue first, strong (same clause) first."""
    found: list[Candidate] = []
    special = what_if(reading, run_measured)
    if special is not None:
        found.append(Candidate(special, True, 0))
    for name, strong, distance in reading["cues"]:
        for scope in reading["scopes"]:
            m = run_measured.get((name, scope))
            if m is not None:
                found.append(Candidate(m, strong, distance))
    found.sort(key=lambda c: (not c.strong, c.distance, c.measured.scope != "rank"))
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


def run_of_message(when: datetime | None, message_index: int, session_links: list[tuple[int, int, int]],
                   runs: list[tuple[int, int, object, dict | None]]) -> tuple[int, int] | None:
    """The run a message speaks of: the one its configuration change produced (or the latest change
    before it), unless a later run was already up; else the run current at its time, else the nearest."""
    started = {(s, o): t for s, o, t, _ in runs}
    linked = [(s, o) for idx, s, o in session_links if idx <= message_index]
    current = [(t, s, o) for s, o, t, _ in runs if when is not None and t is not None and t <= when]
    best = max(current)[1:] if current else None
    if linked:
        candidate = linked[-1]
        if best is None or (started.get(candidate) and started[candidate] > started[best]):
            best = candidate
    if best is None and when is not None:
        nearest = [(abs((t - when).total_seconds()), s, o) for s, o, t, _ in runs if t is not None]
        best = min(nearest)[1:] if nearest else None
    return best


def run_with_settings(default: tuple[int, int] | None, when: datetime | None, settings: dict[str, float],
                      runs: list[tuple[int, int, object, dict | None]]) -> tuple[int, int] | None:
    """A sentence naming flag values speaks of a configuration: when the message's run was not started
    with them, the first run from the message's time on that was ("--hicache-ratio 2.0 asks for ...")."""
    configs = {(s, o): c for s, o, _, c in runs}
    if not settings or default is None or _has_settings(configs.get(default), settings):
        return default
    later = [(t, s, o) for s, o, t, c in runs
             if t is not None and (when is None or t >= when) and _has_settings(c, settings)]
    return min(later)[1:] if later else default


def _has_settings(config: dict | None, settings: dict[str, float]) -> bool:
    known = {k: v for k, v in settings.items() if config and k in config}
    return bool(known) and all(isinstance(config[k], int | float) and float(config[k]) == v for k, v in known.items())
