"""JSON read with a bound on its nesting: Python's decoder recurses once per level and fails with a
RecursionError (a traceback, the ingest lost) on a crafted record a thousand levels deep. Text nested
deeper than `limits.MAX_JSON_DEPTH` is refused as malformed JSON, which every reader already
reports as a problem of its file and line, and the rest of the input is read."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from .limits import MAX_JSON_DEPTH

STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
OPENERS, CLOSERS = np.array([ord("["), ord("{")], np.uint8), np.array([ord("]"), ord("}")], np.uint8)


class TooDeep(json.JSONDecodeError):
    """JSON nested deeper than the limit (a JSONDecodeError, so that readers report it as malformed)."""

    def __str__(self) -> str:
        return self.msg


def depth(text: str) -> int:
    """How deep `text`'s arrays and objects nest (brackets inside strings not counted)."""
    data = np.frombuffer(STRINGS.sub("", text).encode("utf-8", "surrogatepass"), np.uint8)
    steps = np.isin(data, OPENERS).astype(np.int32) - np.isin(data, CLOSERS)
    return int(np.cumsum(steps).max(initial=0))


def loads(text: str | bytes) -> Any:
    """`json.loads`, refusing text nested deeper than MAX_JSON_DEPTH (TooDeep)."""
    if isinstance(text, bytes | bytearray):
        text = text.decode("utf-8", "surrogatepass")
    if not isinstance(text, str):
        return json.loads(text)  # its TypeError, as json's
    limit = MAX_JSON_DEPTH.value()
    if text.count("[") + text.count("{") > limit and (found := depth(text)) > limit:
        raise TooDeep(f"nested {found:,} levels deep, over the limit of {limit:,} ({MAX_JSON_DEPTH.env})", text, 0)
    try:
        return json.loads(text)
    except RecursionError:  # a limit set above what the interpreter's stack holds
        raise TooDeep(f"nested too deep for this interpreter (limit {limit:,}, {MAX_JSON_DEPTH.env})", text,
                      0) from None
