"""Claims: the numbers in an agent's text, checked against what the logs measured.

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

Only the cues nearest a number in its clause (clauses break at , ; : -> and parentheses) can
contradict it; any cue of the sentence may confirm it, and contradicts it only through a unit mix-up,
since a farther cue is often another figure's. A cue of the other memory domain than its clause names
(host RAM or GPU) is ignored. Per-quantity tolerances, cues and domains are data in quantities.json.
A "+3.82 GB" beside "--mem-fraction-static 0.92" is checked against what that change would add, and a
sentence naming flag values ("--hicache-ratio 2.0 asks for 80.23 GB") speaks of the run started with them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from spacy.matcher import PhraseMatcher
from spacy.tokens import Doc, Span

from .facts import Quantity, number, quantity
from .nlp import data_file, pipeline

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


@functools.cache
def matchers() -> dict[str, PhraseMatcher]:
    """Phrase matchers: `cue` keyed by quantity name, `scope` by total/rank, `domain` by host/gpu."""
    nlp = pipeline()
    spec = knowledge()
    groups = {"cue": {name: q["cues"] for name, q in spec["quantities"].items()}, "scope": spec["scope"],
              "domain": {k: v for k, v in spec["domains"].items() if not k.startswith("_")}}
    found = {}
    for group, phrases in groups.items():
        matcher = PhraseMatcher(nlp.vocab, attr="LOWER")
        for name, words in phrases.items():
            matcher.add(name, [nlp.make_doc(w) for w in words])
        found[group] = matcher
    return found


def dimension_of(name: str) -> str:
    return knowledge()["quantities"][name]["dimension"]


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


@dataclass(frozen=True)
class Arithmetic:
    start_char: int   # where the expression starts in the doc
    expression: str   # "0.95 + 0.60", as written
    value: float      # what it comes to


def arithmetic(sent: Span, ent: Span) -> Arithmetic | None:
    """The expression that `ent` is the result of: '0.95 + 0.60 = 1.55 GB'."""
    operators = knowledge()["arithmetic_operators"]
    doc = sent.doc
    i = ent.start - 1
    if i < sent.start or doc[i].text != "=":
        return None
    terms: list[str] = []
    units_seen: set[str] = set()
    i -= 1
    expect_number = True
    while i >= sent.start:
        tok = doc[i]
        if expect_number:
            unit_tok = None
            if tok.norm_ != "§num" and i - 1 >= sent.start and doc[i - 1].norm_ == "§num":
                unit_tok, tok, i = tok, doc[i - 1], i - 1
            if tok.norm_ != "§num":
                break
            parsed = number(tok.text)
            if parsed is None:
                break
            terms.insert(0, repr(parsed[0]))
            if unit_tok is not None:
                units_seen.add(unit_tok.text)
            expect_number = False
        else:
            if tok.text not in operators:
                break
            terms.insert(0, operators[tok.text])
            expect_number = True
        i -= 1
    if terms and terms[0] in operators.values():
        terms = terms[1:]
    if len(terms) < 3 or units_seen - {ent[-1].text}:
        return None
    expression = "".join(terms)
    try:
        value = eval(expression, {"__builtins__": {}})  # numbers and + - * / only, built above
    except ZeroDivisionError:
        return None
    start = doc[i + 1].idx
    return Arithmetic(start, doc.text[start:doc[ent.start - 1].idx].strip(), float(value))


def clause_of(sent: Span) -> list[int]:
    """Clause number of each token of the sentence (clauses break at , ; : -> and dashes)."""
    breaks = set(knowledge()["clause_breaks"])
    numbers, current = [], 0
    for k, tok in enumerate(sent):
        if tok.text in breaks or (tok.text == ">" and k and sent[k - 1].text == "-"):
            current += 1
        numbers.append(current)
    return numbers


def claim_text(sent: Span, ent: Span, clauses: list[int], start_char: int) -> str:
    """The claim as written: from its expression or number to the end of its clause or the next
    quantity (at most 10 tokens)."""
    starts = {e.start for e in sent.ents if e.label_ == "QUANTITY"}
    clause = clauses[ent.start - sent.start]
    operators = {*knowledge()["arithmetic_operators"], "="}
    end = ent.end
    while (end < sent.end and clauses[end - sent.start] == clause and end not in starts and end - ent.end < 10
           and not (end == ent.end and sent.doc[end].text in operators)):
        end += 1
    while end > ent.end and (sent.doc[end - 1].is_punct or sent.doc[end - 1].text in operators):
        end -= 1  # "44.77 GB x 8 =" before the next quantity, "+3.82 GB per GPU -" before "->"
    last = sent.doc[end - 1]
    return sent.doc.text[start_char:last.idx + len(last.text)]


def what_if(sent: Span, ent: Span, q: Quantity, run_measured: dict) -> Measured | None:
    """'+3.82 GB' beside '--mem-fraction-static ... 0.92': the figure that change predicts."""
    if not ent.text.startswith("+"):
        return None
    for spec in knowledge()["what_if"].values():
        if not isinstance(spec, dict) or spec["dimension"] != q.dimension:
            continue
        flags = [e for e in sent.ents if e.label_ == "FLAG" and flag_parts(e)[0] == spec["flag"]]
        base, setting = run_measured.get((spec["base"], "rank")), run_measured.get((spec["setting"], "rank"))
        if not flags or base is None or setting is None:
            continue
        # "--mem-fraction-static 0.92", or the value a few words on: "raise `--mem-fraction-static` to 0.92"
        value = flag_parts(flags[0])[1] or next(
            (number(t.text)[0] for t in sent.doc[flags[0].end:min(flags[0].end + 4, sent.end)] if t.norm_ == "§num"),
            None)
        if value is None:
            continue
        delta = base.value * (value - setting.value)
        return Measured(f"{spec['base']} x change of {spec['setting']}", "rank", round(delta, 4), base.unit,
                        base.bytes_per_unit, base.source, spec["slack"])
    return None


def candidates(sent: Span, ent: Span, q: Quantity, hits: dict[str, list], run_measured: dict,
               clauses: list[int]) -> list[Candidate]:
    """Measured figures the number may speak of, nearest cue first, strong (same clause) first."""
    clause = clauses[ent.start - sent.start]
    scopes = {name for name, s, _ in hits["scope"] if clauses[s - sent.start] == clause}
    domains = {name for name, s, _ in hits["domain"] if clauses[s - sent.start] == clause}
    wanted_scopes = ["rank", "total"] if len(scopes) != 1 else sorted(scopes)
    others = [e.start for e in sent.ents if e.label_ == "QUANTITY" and e != ent]
    found: list[Candidate] = []
    special = what_if(sent, ent, q, run_measured)
    if special is not None:
        found.append(Candidate(special, True, 0))
    # Only the cues nearest the number in its clause are strong: a farther one is often another figure's,
    # and when the nearest cue names a quantity of another dimension or domain, the number is about that.
    def distance(start: int, end: int) -> int:
        return start - ent.end if start >= ent.end else ent.start - end

    in_clause = [(distance(s, e), name, s, e) for name, s, e in hits["cue"]
                 if clauses[s - sent.start] == clause and not ent.start <= s < ent.end]
    nearest = min((d for d, *_ in in_clause), default=None)
    for name, start, end in hits["cue"]:
        domain = knowledge()["quantities"][name].get("domain")
        if dimension_of(name) != q.dimension or ent.start <= start < ent.end or (
                domain and domains and domain not in domains):
            continue
        between = range(end, ent.start) if start < ent.start else range(ent.end, start)
        # a cue with another quantity between it and this number speaks of that one
        strong = (clauses[start - sent.start] == clause and distance(start, end) == nearest
                  and not any(o in between for o in others))
        for scope in wanted_scopes:
            m = run_measured.get((name, scope))
            if m is not None:
                found.append(Candidate(m, strong, distance(start, end)))
    found.sort(key=lambda c: (not c.strong, c.distance, c.measured.scope != "rank"))
    return found


def judge(q: Quantity, found: list[Candidate], arith: Arithmetic | None) -> dict:
    """The verdict of one claim over its candidates."""
    if arith is not None and abs(arith.value - q.written) > tolerance(q):
        best = found[0].measured if found else None
        return _verdict("inconsistent", best, None if best is None else compare(q, best)[2],
                        f"arithmetic: {arith.expression} = {arith.value:.4g}, not {q.written:g}")
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


def flag_parts(flag: Span) -> tuple[str, float | None]:
    """'--hicache-ratio 2.0' or '--hicache-ratio=2.0' -> ('--hicache-ratio', 2.0); no number -> None."""
    name, _, value = flag.text.replace("=", " ", 1).partition(" ")
    parsed = number(value.strip()) if value.strip() else None
    return name, parsed[0] if parsed else None


def flag_settings(sent: Span) -> dict[str, float]:
    """Numeric flag values the sentence names: {"hicache_ratio": 2.0} for `--hicache-ratio 2.0`."""
    settings = {}
    for name, value in (flag_parts(e) for e in sent.ents if e.label_ == "FLAG"):
        if value is not None:
            settings[name.lstrip("-").replace("-", "_")] = value
    return settings


def claims_of_doc(doc: Doc, base: dict, offset: int, sentence_base: int,
                  measured_for: Callable[[dict[str, float]], tuple[tuple[int, int] | None, dict]]) -> list[dict]:
    """Every checkable number of one line of assistant text; `measured_for(flag settings)` gives the run
    a sentence speaks of and its measured figures."""
    strings = doc.vocab.strings
    hits_in_doc = {group: [(strings[k], s, e) for k, s, e in m(doc)] for group, m in matchers().items()}
    rows = []
    for sentence_no, sent in enumerate(doc.sents):
        ents = [e for e in sent.ents if e.label_ == "QUANTITY"]
        if not ents:
            continue
        clauses = clause_of(sent)
        hits = {group: [h for h in found if sent.start <= h[1] < sent.end] for group, found in hits_in_doc.items()}
        which, run_measured = measured_for(flag_settings(sent))
        for ent in ents:
            q = quantity(ent)
            if q is None or q.dimension not in VERIFIABLE or q.high is not None:
                continue
            arith = arithmetic(sent, ent)
            found = candidates(sent, ent, q, hits, run_measured, clauses)
            start_char = arith.start_char if arith else ent.start_char
            rows.append({**base, "sentence": sentence_base + sentence_no,
                         "span_start": offset + ent.start_char, "span_end": offset + ent.end_char,
                         "text": claim_text(sent, ent, clauses, start_char), "value": q.written,
                         "unit": q.written_unit, "approximate": q.approximate,
                         "arithmetic": None if arith is None else f"{arith.expression} = {arith.value:.4g}",
                         "source_id": which[0] if which else None, "run": which[1] if which else None,
                         "sentence_text": sent.text, **judge(q, found, arith)})
    return rows


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
