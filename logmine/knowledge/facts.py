"""Facts: the entities of each message's sentences as rows, quantities normalised to bytes, seconds, tokens.

A row says where the fact is (session, message, sentence, character span in the message's text), what
kind it is, its raw text, and for a quantity its value as written and normalised (`value`, `unit`:
`bytes`, `seconds`, `tokens`, `tokens/s`, `percent`, `factor`, `bytes/token`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .quantities import APPROXIMATE_MARKS, MAGNITUDES, Quantity, number, units
from .verdicts import knowledge

if TYPE_CHECKING:
    from spacy.tokens import Span


def quantity(span: Span) -> Quantity | None:
    """The Quantity of a QUANTITY entity, or None when its text does not parse."""
    table = units()
    numbers = [t for t in span if t.norm_ == "§num"]
    unit_token = next((t for t in reversed(span) if t.text in table or t.lower_ in table), None)
    if not numbers or unit_token is None:
        return None
    parsed = number(numbers[0].text)
    if parsed is None:
        return None
    canonical, dimension, factor = table.get(unit_token.text) or table[unit_token.lower_]
    high = number(numbers[1].text)[0] if len(numbers) > 1 and number(numbers[1].text) else None
    written, step = parsed
    magnitude = MAGNITUDES.get(numbers[-1].text[-1:], 1.0)
    if high is not None and magnitude != 1.0 and numbers[0].text[-1:] not in MAGNITUDES:
        written, step = written * magnitude, step * magnitude  # "15-25k tokens": both ends in thousands
    before = " ".join(t.lower_ for t in span.doc[max(0, span.start - 3):span.start])
    approximate = numbers[0].text.startswith(APPROXIMATE_MARKS) or any(
        before == word or before.endswith(" " + word) for word in knowledge()["approximate"])
    return Quantity(written, canonical, dimension, written * factor, factor, step, approximate, high)


def fact_rows(doc_span: Span, base: dict, sentence_no: int, offset: int) -> list[dict]:
    """One row per entity of a sentence; `offset` is the sentence's line offset in the message text."""
    rows = []
    for ent in doc_span.ents:
        row = {**base, "sentence": sentence_no, "span_start": offset + ent.start_char,
               "span_end": offset + ent.end_char, "kind": ent.label_.lower(), "text": ent.text,
               "value": None, "unit": None, "written_value": None, "written_unit": None, "detail": None}
        if ent.label_ == "QUANTITY":
            q = quantity(ent)
            if q is not None:
                row.update(value=q.value, unit=q.dimension, written_value=q.written, written_unit=q.written_unit,
                           detail="approximate" if q.approximate else ("range" if q.high is not None else None))
        elif ent.label_ == "FLAG":
            name, _, value = ent.text.replace("=", " ", 1).partition(" ")
            parsed = number(value.strip()) if value.strip() else None
            row.update(detail=name, value=parsed[0] if parsed else None)
        else:
            row["detail"] = ent.text.lower()
        rows.append(row)
    return rows
