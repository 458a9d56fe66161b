"""Claims: reading the numbers of an agent's text, with spaCy, into readings `logmine.knowledge.verdicts` judges.

A reading holds what the prose says about one number and nothing about the logs: the number as written,
the arithmetic it is the result of, the cue words of `parsers/knowledge/quantities.json` near it (and
whether each is the nearest in its clause, with no other quantity between), the scope (per rank or
total) its clause names, and the flag values of its sentence.

Only the cues nearest a number in its clause (clauses break at , ; : -> and parentheses) can
contradict it; any cue of the sentence may confirm it, and contradicts it only through a unit mix-up,
since a farther cue is often another figure's. A cue of the other memory domain than its clause names
(host RAM or GPU) is ignored. Per-quantity tolerances, cues and domains are data in quantities.json.
A "+3.82 GB" beside "--mem-fraction-static 0.92" is checked against what that change would add, and a
sentence naming flag values ("--hicache-ratio 2.0 asks for 80.23 GB") speaks of the run started with them.
"""

from __future__ import annotations

import functools
from dataclasses import astuple, dataclass

from spacy.matcher import PhraseMatcher
from spacy.tokens import Doc, Span

from .facts import quantity
from .nlp import pipeline
from .quantities import Quantity, number
from .verdicts import VERIFIABLE, knowledge


@functools.cache
def matchers() -> dict[str, PhraseMatcher]:
    """Phrase matchers: `cue` and `not_with` keyed by quantity name, `scope` by total/rank, `domain` by
    host/gpu, `bound` by upper/lower, and the `hypothetical` and `reported` sentence markers."""
    nlp = pipeline()
    spec = knowledge()
    groups = {"cue": {name: q["cues"] for name, q in spec["quantities"].items()}, "scope": spec["scope"],
              "domain": {k: v for k, v in spec["domains"].items() if not k.startswith("_")},
              "not_with": {name: q["not_with"] for name, q in spec["quantities"].items() if q.get("not_with")},
              "hypothetical": {"hypothetical": spec["hypothetical"]}, "reported": {"reported": spec["reported"]},
              "bound": spec["bounds"],
              "unmeasured": {k: v for k, v in spec["unmeasured"].items() if not k.startswith("_")}}
    found = {}
    for group, phrases in groups.items():
        matcher = PhraseMatcher(nlp.vocab, attr="LOWER")
        for name, words in phrases.items():
            matcher.add(name, [nlp.make_doc(w) for w in words])
        found[group] = matcher
    return found


def dimension_of(name: str) -> str:
    return knowledge()["quantities"][name]["dimension"]


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


def labelled(sent: Span, clauses: list[int], clause: int) -> set[int]:
    """The clauses whose words name a number of `clause`: its own, and where it follows a colon the label before
    it ("Total KV across both GPUs: ~74.7 GiB")."""
    first = clauses.index(clause)
    return {clause, clause - 1} if clause and sent[first].text == ":" else {clause}


def claim_text(sent: Span, ent: Span, clauses: list[int], start_char: int) -> str:
    """The claim as written: from its expression or number to the end of its clause or the next
    quantity (at most 10 tokens)."""
    starts = {e.start for e in sent.ents if e.label_ == "QUANTITY"}
    clause = clauses[ent.start - sent.start]
    operators = {*knowledge()["arithmetic_operators"], "="}
    end = ent.end
    while (end < sent.end and clauses[end - sent.start] == clause and end not in starts and end - ent.end < 10
           and not (end == ent.end and sent.doc[end].text in operators) and sent.doc[end].text != "|"):
        end += 1  # (a markdown table's cell ends at its bar)
    while end > ent.end and (sent.doc[end - 1].is_punct or sent.doc[end - 1].text in operators):
        end -= 1  # "44.77 GB x 8 =" before the next quantity, "+3.82 GB per GPU -" before "->"
    last = sent.doc[end - 1]
    return sent.doc.text[start_char:last.idx + len(last.text)]


def what_if_settings(sent: Span, ent: Span, q: Quantity) -> list[tuple[str, float]]:
    """For '+3.82 GB' beside '--mem-fraction-static 0.92': the what-if rules the number may answer, with the
    flag value the sentence gives each."""
    if not ent.text.startswith("+"):
        return []
    found = []
    for name, spec in knowledge()["what_if"].items():
        if not isinstance(spec, dict) or spec["dimension"] != q.dimension:
            continue
        flags = [e for e in sent.ents if e.label_ == "FLAG" and flag_parts(e)[0] == spec["flag"]]
        if not flags:
            continue
        # "--mem-fraction-static 0.92", or the value a few words on: "raise `--mem-fraction-static` to 0.92"
        value = flag_parts(flags[0])[1] or next(
            (number(t.text)[0] for t in sent.doc[flags[0].end:min(flags[0].end + 4, sent.end)] if t.norm_ == "§num"),
            None)
        if value is not None:
            found.append((name, value))
    return found


def cues(sent: Span, ent: Span, q: Quantity, hits: dict[str, list],
         clauses: list[int]) -> tuple[list[str], list[tuple[str, bool, int]]]:
    """The scopes the number's clause names, and the cues of its dimension in the sentence as
    (quantity name, strong, distance in tokens): strong when nearest in the clause, nothing between."""
    clause = clauses[ent.start - sent.start]
    own = labelled(sent, clauses, clause)
    scopes = {name for name, s, _ in hits["scope"] if clauses[s - sent.start] in own}
    domains = {name for name, s, _ in hits["domain"] if clauses[s - sent.start] in own}
    wanted_scopes = ["rank", "total", "node"] if len(scopes) != 1 else sorted(scopes)
    others = [e.start for e in sent.ents if e.label_ == "QUANTITY" and e != ent]

    # Only the cues nearest the number in its clause are strong: a farther one is often another figure's,
    # and when the nearest cue names a quantity of another dimension or domain, the number is about that.
    def distance(start: int, end: int) -> int:
        return start - ent.end if start >= ent.end else ent.start - end

    other_figure = {name for name, s, _ in hits["not_with"] if clauses[s - sent.start] in own}
    in_clause = [(distance(s, e), name, s, e) for name, s, e in hits["cue"]
                 if clauses[s - sent.start] in own and not ent.start <= s < ent.end]
    nearest = min((d for d, *_ in in_clause), default=None)
    found = []
    for name, start, end in hits["cue"]:
        domain = knowledge()["quantities"][name].get("domain")
        if dimension_of(name) != q.dimension or ent.start <= start < ent.end or name in other_figure or (
                domain and domains and domain not in domains):
            continue
        between = range(end, ent.start) if start < ent.start else range(ent.end, start)
        # a cue with another quantity between it and this number speaks of that one
        strong = (clauses[start - sent.start] in own and distance(start, end) == nearest
                  and not any(o in between for o in others))
        found.append((name, strong, distance(start, end)))
    return wanted_scopes, found


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


# Words inside a quantity that make it an increment ("3 more minutes"), not a figure of its own.
INCREMENT_WORDS = {"more", "extra", "additional", "further", "another"}
# Words right after a count that make it a rate ("1,235 tokens per second").
RATE_STARTS = (("per", "second"), ("per", "sec"), ("per", "s"), ("a", "second"), ("each", "second"), ("/s",))


def is_change(sent: Span, ent: Span) -> bool:
    """'grew the KV pool by 40,000 tokens': a difference between two figures, neither of them."""
    return ent.start > sent.start and sent.doc[ent.start - 1].lower_ == "by"


def is_rate(sent: Span, ent: Span) -> bool:
    after = tuple(t.lower_ for t in sent.doc[ent.end:min(ent.end + 2, sent.end)])
    return any(after[:len(start)] == start for start in RATE_STARTS)


def bound_of(sent: Span, ent: Span, hits: dict[str, list], clauses: list[int]) -> str | None:
    """`upper` for 'under 12 minutes', `lower` for 'at least 8 GB', read in the words just before the number
    (past an approximate word); 'between A and B' makes A a lower and B an upper bound."""
    start = ent.start
    while start > sent.start and sent.doc[start - 1].lower_ in knowledge()["approximate"]:
        start -= 1
    named = next((name for name, _, end in hits["bound"] if end == start), None)
    if named:
        return named
    before = sent.doc[start - 1].lower_ if start > sent.start else ""
    clause = clauses[ent.start - sent.start]
    between = [t.i for t in sent if t.lower_ == "between" and t.i < ent.start and clauses[t.i - sent.start] == clause]
    if between:
        return "upper" if before == "and" else ("lower" if before == "between" else None)
    return None


UNMEASURED_REACH = 3  # tokens between a number and a word that says no log measures it


def unmeasured(sent: Span, ent: Span, hits: dict[str, list], clauses: list[int]) -> str | None:
    """What a number is when the words beside it say no log measures it ('a 503 GiB machine', '2 TiB of RAM')."""
    clause = clauses[ent.start - sent.start]
    for name, start, end in hits["unmeasured"]:
        near = ent.end <= start <= ent.end + UNMEASURED_REACH or ent.start - UNMEASURED_REACH <= end <= ent.start
        if near and clauses[start - sent.start] == clause:
            return name
    return None


def marked(hits: list, sent: Span, clauses: list[int] | None = None, clause: int | None = None) -> bool:
    """Whether a marker phrase is in the sentence (or, given one, in that clause)."""
    return any(clause is None or clauses[s - sent.start] == clause for _, s, _ in hits)


def states_no_figure(sent: Span, ent: Span, last: Span, hits: dict[str, list], clauses: list[int]) -> bool:
    """A number that is no figure of its own: an increment ('3 more minutes'), a change ('by 40,000
    tokens'), a rate ('tokens per second', read after `last`, the quantity's last entity) or someone
    else's words ('you said it takes 20 minutes')."""
    return (any(t.lower_ in INCREMENT_WORDS for t in ent) or is_change(sent, ent) or is_rate(sent, last)
            or marked(hits["reported"], sent, clauses, clauses[ent.start - sent.start]))


def compound_seconds(sent: Span, ents: list[Span], k: int) -> tuple[Quantity | None, Span | None]:
    """'6 min 30 s' as one duration: the minutes with the seconds after them added, and the seconds'
    entity (read as part of it, not alone); (None, None) when the entity is not such a pair's first."""
    first = quantity(ents[k])
    if first is None or first.dimension != "seconds" or k + 1 >= len(ents):
        return None, None
    nxt = ents[k + 1]
    gap = [t.lower_ for t in sent.doc[ents[k].end:nxt.start]]
    second = quantity(nxt)
    if second is None or second.dimension != "seconds" or gap not in ([], ["and"]) or second.factor >= first.factor:
        return None, None
    written = first.written + second.value / first.factor
    step = second.step * second.factor / first.factor
    return Quantity(written, first.written_unit, "seconds", written * first.factor, first.factor, step,
                    first.approximate), nxt


def header_cues(header: list[str], doc: Doc, ent: Span, q: Quantity) -> tuple[list[str], list[tuple[str, bool, int]]]:
    """The scopes and cues a markdown table's header names for the column of `ent` (a figure in a row of it):
    what the row's own words would say of it, as `cues` gives them."""
    column = doc.text[:ent.start_char].count("|") - doc.text.lstrip().startswith("|")
    if not 0 <= column < len(header):
        return [], []
    cue_names, scopes = header_words(header[column])
    return list(scopes), [(name, True, 0) for name in cue_names if dimension_of(name) == q.dimension]


@functools.lru_cache(maxsize=256)
def header_words(cell: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The quantities and scopes a table's header cell names (read once a cell, for every row under it)."""
    doc = pipeline().make_doc(cell)
    found = {group: sorted({doc.vocab.strings[k] for k, _, _ in matchers()[group](doc)}) for group in ("cue", "scope")}
    return tuple(found["cue"]), tuple(found["scope"])


def read_claims(doc: Doc, offset: int, sentence_base: int, code: list[tuple[int, int]] = (),
                header: list[str] | None = None) -> list[dict]:
    """The reading of every checkable number of one line of assistant text (plain data, JSON-able):
    `offset` is the line's character offset in its message, `sentence_base` its first sentence's number;
    numbers in `code` (character spans of the line in a code block) are commands, not claims. A row of a
    markdown table takes what its `header` cells name of a figure its own words do not (`header_cues`)."""
    strings = doc.vocab.strings
    hits_in_doc = {group: [(strings[k], s, e) for k, s, e in m(doc)] for group, m in matchers().items()}
    readings = []
    for sentence_no, sent in enumerate(doc.sents):
        ents = [e for e in sent.ents if e.label_ == "QUANTITY"
                and not any(a <= e.start_char < b for a, b in code)]
        if not ents:
            continue
        clauses = clause_of(sent)
        hits = {group: [h for h in found if sent.start <= h[1] < sent.end] for group, found in hits_in_doc.items()}
        settings = flag_settings(sent)
        hypothetical = marked(hits["hypothetical"], sent)
        joined: set[int] = set()  # seconds read as part of the minutes before them
        for k, ent in enumerate(ents):
            compound, part = compound_seconds(sent, ents, k)
            q = compound or quantity(ent)
            if (q is None or q.dimension not in VERIFIABLE or ent.start in joined
                    or states_no_figure(sent, ent, part or ent, hits, clauses)):
                continue
            if part is not None:
                joined.add(part.start)
            arith = arithmetic(sent, ent)
            scopes, cue_list = cues(sent, ent, q, hits, clauses)
            if header is not None and not any(strong for _, strong, _ in cue_list):
                column_scopes, column_cues = header_cues(header, doc, ent, q)
                cue_list += column_cues
                scopes = column_scopes if len(column_scopes) == 1 else scopes
            readings.append({
                "sentence": sentence_base + sentence_no, "span_start": offset + ent.start_char,
                "span_end": offset + (part or ent).end_char,
                "text": claim_text(sent, part or ent, clauses, arith.start_char if arith else ent.start_char),
                "sentence_text": sent.text, "quantity": list(astuple(q)),
                "arithmetic": None if arith is None else [arith.expression, arith.value],
                "settings": settings, "scopes": scopes, "cues": cue_list,
                "what_if": what_if_settings(sent, ent, q), "bound": bound_of(sent, ent, hits, clauses),
                "hypothetical": hypothetical, "unmeasured": unmeasured(sent, part or ent, hits, clauses)})
    return readings
