"""The spaCy pipeline that reads agent prose: tokenizer, sentencizer and an entity ruler, built on
`spacy.blank("en")` from the data files in `parsers/knowledge/` (no model is ever downloaded).

Entity kinds: QUANTITY (number + unit), FLAG (a CLI flag and its value), HARDWARE, MODEL, HOST, IP,
UNIT (systemd), PATH and TERM (SGLang and agent vocabulary). Importing this module imports spaCy:
callers import it only when there is prose to read.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator

import spacy
from spacy.attrs import NORM
from spacy.language import Language
from spacy.tokenizer import Tokenizer
from spacy.tokens import Doc
from spacy.util import compile_infix_regex, compile_prefix_regex, compile_suffix_regex

from .quantities import data_file, units

CLASS_MARK = "§"  # token classes are NORM values no English word has: "§num", "§path"
LONGEST_LINE = 20_000  # characters read of one line: longer ones are pasted data, not prose


@functools.cache
def pipeline() -> Language:
    """The shared pipeline (built once per process; with spaCy's import about a second)."""
    spec = json.loads(data_file("tokenizer.json"))
    nlp = spacy.blank("en")
    _classify_tokens(nlp, spec["token_classes"])
    patterns = list(entity_patterns())
    # A one-token entity of a token class ("§path") is a phrase on NORM: a hash lookup per token, where a
    # Matcher pattern costs a state-machine step per token (each of them ~0.3 us a token).
    by_class = [p for p in patterns if isinstance(p["pattern"], str) and p["pattern"].startswith(CLASS_MARK)]
    nlp.tokenizer = _tokenizer(nlp, spec, [p["pattern"] for p in by_class])
    nlp.add_pipe("sentencizer")
    ruler = nlp.add_pipe("entity_ruler", config={"phrase_matcher_attr": "LOWER", "validate": True})
    ruler.add_patterns([p for p in patterns if p not in by_class])
    classes = nlp.add_pipe("entity_ruler", name="token_class_ruler", config={"phrase_matcher_attr": "NORM"})
    classes.add_patterns(by_class)
    return nlp


def entity_patterns() -> Iterator[dict]:
    """`entities.jsonl`, with "@units" replaced by every unit surface but the factor sign `x`. A pattern
    that is a token class ("§path") labels each token of that class."""
    surfaces = [s for s, (_, dimension, _) in units().items() if dimension != "factor"]
    for line in data_file("entities.jsonl").splitlines():
        if line.strip():
            pattern = json.loads(line)
            if isinstance(pattern["pattern"], list):
                for token in pattern["pattern"]:
                    for attr, value in token.items():
                        if isinstance(value, dict) and value.get("IN") == "@units":
                            token[attr] = {"IN": surfaces}
            yield pattern


def _classify_tokens(nlp: Language, classes: dict[str, str]) -> None:
    """NORM of a word type becomes its class (computed once per type, cached in the vocab)."""
    compiled = [(CLASS_MARK + name, re.compile(rx)) for name, rx in classes.items()]
    default = nlp.vocab.lex_attr_getters.get(NORM) or str.lower

    def norm(text: str) -> str:
        for name, rx in compiled:
            if rx.fullmatch(text):
                return name
        return default(text)

    nlp.vocab.lex_attr_getters[NORM] = norm
    for lexeme in nlp.vocab:  # types made before the getter (the tokenizer's exceptions: "11" of "11pm")
        lexeme.norm_ = norm(lexeme.orth_)


def _tokenizer(nlp: Language, spec: dict, class_marks: list[str]) -> Tokenizer:
    """Keep flags, paths, hosts, IPs, units and hyphenated names whole; split units glued to numbers.

    Built in one go: each tokenizer setting assigned afterwards reloads the language's ~900 special
    cases. The class marks ("§path") are special cases so that the ruler reads each as one token.
    """
    # A kept-whole chunk never ends in punctuation: "sglang-kimi.service." loses its full stop.
    whole = re.compile("|".join(f"(?:{rx})" for rx in spec["keep_whole"]))
    glued = "|".join(re.escape(u) for u in sorted(spec["split_after_number"], key=len, reverse=True))
    # English splits a full stop off a word that ends in a lower-case letter only ("GiB." would be one token).
    after_unit = "|".join(f"(?<={re.escape(u)})" for u in spec["split_after_number"] if u[-1:].isupper())
    suffixes = [*nlp.Defaults.suffixes, rf"(?<=[0-9])(?:{glued})$", rf"(?:{after_unit})\.$", "`", r"\*+"]
    prefixes = [*nlp.Defaults.prefixes, "`", r"\*+"]
    # "80.2GB/rank": the slash splits the chunk, and the pieces are not split again.
    infixes = [*nlp.Defaults.infixes, spec["split_name_value"], rf"(?<=[0-9])(?:{glued})(?=/)"]
    # English keeps "s." and "h." as abbreviations: "took 38.7 s." must end in the unit and a full stop.
    rules = {k: v for k, v in nlp.tokenizer.rules.items() if not re.fullmatch(r"[A-Za-z]\.", k)}
    return Tokenizer(
        nlp.vocab, rules={**rules, **{mark: [{"ORTH": mark}] for mark in class_marks}},
        prefix_search=compile_prefix_regex(prefixes).search, suffix_search=compile_suffix_regex(suffixes).search,
        infix_finditer=compile_infix_regex(infixes).finditer,
        token_match=lambda text: whole.fullmatch(text) if text[-1:].isalnum() or text[-1:] in "/_" else None,
        url_match=None)  # URLs would swallow "host:port/path" shapes the rules above already keep


# A markdown code block, to its closing fence or the end of the text.
FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,}).*?(?:^[ \t]*\1[ \t]*$|\Z)", re.S | re.M)


def code_blocks(text: str) -> list[tuple[int, int]]:
    """Character spans of the text's fenced code blocks (commands, config, output): numbers there are not
    claims. Inline `code` stays prose: agents quote the log's figures in it (`available_gpu_mem=7.90 GB`)."""
    return [m.span() for m in FENCED.finditer(text)]


def lines(text: str) -> Iterator[tuple[int, str]]:
    """Each non-blank line of a message (its first LONGEST_LINE characters) and its character offset;
    markdown lists are one item a line."""
    offset = 0
    for line in text.split("\n"):
        if line.strip():
            yield offset, line[:LONGEST_LINE]
        offset += len(line) + 1


# A markdown table's rule under its header row: `|---|:--:|`.
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")


def table_cells(row: str) -> list[str]:
    """The cells of a markdown table's row, without its outer bars."""
    return [cell.strip() for cell in row.strip().removeprefix("|").removesuffix("|").split("|")]


def table_headers(text: str) -> dict[int, list[str]]:
    """The header cells of each markdown table row of a message, by the row's character offset (as `lines` gives
    it): what a figure in a cell is, where the row itself does not say ("| 3 | 115 s |" under "| run | ready
    after |")."""
    headers: dict[int, list[str]] = {}
    header, previous = None, None
    for offset, line in lines(text):
        if previous is not None and TABLE_RULE.match(line) and previous.lstrip().startswith("|"):
            header = table_cells(previous)
        elif header is not None and line.lstrip().startswith("|"):
            headers[offset] = header
        else:
            header = None
        previous = line
    return headers


def read(texts: Iterable[str], batch_size: int = 256) -> Iterator[Doc]:
    """Docs for many texts at once (`nlp.pipe`, in batches)."""
    return pipeline().pipe(texts, batch_size=batch_size)
