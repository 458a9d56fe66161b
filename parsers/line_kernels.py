"""The parse hot path's loops, written in Cython's pure-Python mode and compiled when the machine has a compiler.

Each loop reads a block's bytes once and gives the byte positions that the vectorised path (numpy and
Arrow passes over the same buffers) finds in many passes, so the tables stored are the same either way.
`hot_path.kernels()` hands this module out only when it is compiled. Run as plain Python (the decorators
then come from an installed Cython and do nothing) it gives the same answers far more slowly, which the
tests use to check its logic where nothing is compiled.
"""

import cython
import numpy as np

COMMA = cython.declare(cython.uchar, 44)
SPACE = cython.declare(cython.uchar, 32)
COLON = cython.declare(cython.uchar, 58)
EQUALS = cython.declare(cython.uchar, 61)
PERCENT = cython.declare(cython.uchar, 37)
DOT = cython.declare(cython.uchar, 46)
DASH = cython.declare(cython.uchar, 45)
OPEN = cython.declare(cython.uchar, 91)
CLOSE = cython.declare(cython.uchar, 93)
GUESSES = cython.declare(cython.Py_ssize_t, 64)  # pieces per text whose key is remembered from the text before


@cython.boundscheck(False)
@cython.wraparound(False)
@cython.locals(rows=cython.Py_ssize_t, data_end=cython.Py_ssize_t, keys=cython.Py_ssize_t, row=cython.Py_ssize_t,
               column=cython.Py_ssize_t, begin=cython.Py_ssize_t, end=cython.Py_ssize_t, piece=cython.Py_ssize_t,
               piece_end=cython.Py_ssize_t, colon=cython.Py_ssize_t, at=cython.Py_ssize_t,
               key_start=cython.Py_ssize_t, key_end=cython.Py_ssize_t, key=cython.Py_ssize_t,
               length=cython.Py_ssize_t, offset=cython.Py_ssize_t, pieces=cython.Py_ssize_t,
               tried=cython.Py_ssize_t, value_start=cython.Py_ssize_t, value_stop=cython.Py_ssize_t,
               trimmed=cython.Py_ssize_t, byte=cython.uchar, bad=cython.bint, same=cython.bint,
               seen=cython.ulonglong, one=cython.ulonglong, guess=cython.longlong[::1],
               start=cython.longlong[::1], stop=cython.longlong[::1], present=cython.uchar[::1],
               slow=cython.uchar[::1])
def stats_spans(data: cython.const[cython.uchar][::1], offsets: cython.const[cython.longlong][::1],
                key_bytes: cython.const[cython.uchar][::1],
                key_bounds: cython.const[cython.longlong][::1], key_columns: cython.const[cython.longlong][::1],
                columns: cython.Py_ssize_t,
                trim_passes: cython.Py_ssize_t) -> tuple:
    """Where each known key's value is in every batch-statistics text, and which texts need `parse_stats`.

    `data` and `offsets` are a string array's buffers (texts already stripped of trailing `, `). A text
    splits on `, ` into pieces and a piece on its first `: ` into a key (trimmed of spaces) and a value
    (trailing `%` and spaces left out). Known keys are the `key_bounds` slices of `key_bytes`, key `j`
    going to column `key_columns[j]` (-1: a key only `parse_stats` may read). Returns `start`, `stop`
    (int64) and `present` (bool) as flat (column, row) matrices, empty spans at the text's start where a
    key is absent, and `slow` (a bool per row): a piece without `: `, a lone `,`, a `:` before the first
    `: `, a `=` in a value, an unknown key, a column twice, or a value ending in more than `trim_passes`
    `%` and spaces.
    """
    rows = offsets.shape[0] - 1
    data_end = offsets[rows]
    start = np.tile(offsets[:rows], columns)
    stop = np.asarray(start).copy()
    present = np.zeros(columns * rows, dtype=np.uint8)
    slow = np.zeros(rows, dtype=np.uint8)
    keys = key_columns.shape[0]
    guess = np.zeros(GUESSES, dtype=np.int64)
    one = 1  # typed as a 64-bit word in the .pxd, so that `one << column` does not overflow
    for row in range(rows):
        begin = offsets[row]
        end = offsets[row + 1]
        seen = 0
        pieces = 0
        piece = begin
        while piece < end:
            # One pass to the piece's end (the next `, `, else the text's): its first `: `, and what makes
            # it a piece only parse_stats reads right (a lone `,`, a `:` before the first `: `, a `=` after).
            colon = -1
            bad = False
            at = piece
            while at < end:
                byte = data[at]
                if byte == COMMA:
                    if at + 1 < data_end and data[at + 1] == SPACE:
                        break
                    bad = True
                elif byte == COLON and colon < 0:
                    if at + 1 < data_end and data[at + 1] == SPACE:
                        colon = at
                    else:
                        bad = True
                elif byte == EQUALS and colon >= 0:
                    bad = True
                at += 1
            piece_end = at
            if bad or colon < 0 or colon + 2 > piece_end:
                slow[row] = 1
                break
            key_start = piece
            key_end = colon
            while key_start < key_end and (data[key_start] == SPACE or 9 <= data[key_start] <= 13):
                key_start += 1
            while key_end > key_start and (data[key_end - 1] == SPACE or 9 <= data[key_end - 1] <= 13):
                key_end -= 1
            # The keys come in the same order line after line: try the key this piece had last time first.
            column = -1
            key = guess[pieces] if pieces < GUESSES else 0
            for tried in range(keys + 1):
                if tried > 0:
                    key = tried - 1
                length = key_bounds[key + 1] - key_bounds[key]
                if length != key_end - key_start:
                    continue
                same = True
                for offset in range(length):
                    if data[key_start + offset] != key_bytes[key_bounds[key] + offset]:
                        same = False
                        break
                if same:
                    column = key_columns[key]
                    if pieces < GUESSES:
                        guess[pieces] = key
                    break
            pieces += 1
            if column < 0 or seen & (one << column):
                slow[row] = 1
                break
            seen |= one << column
            value_start = colon + 2
            value_stop = piece_end
            trimmed = 0
            while value_stop > value_start and (data[value_stop - 1] == PERCENT or data[value_stop - 1] == SPACE):
                value_stop -= 1
                trimmed += 1
            if trimmed > trim_passes:
                slow[row] = 1
                break
            start[column * rows + row] = value_start
            stop[column * rows + row] = value_stop
            present[column * rows + row] = 1
            piece = piece_end + 2
        if slow[row]:
            for column in range(columns):  # spans must ascend: a slow row's are emptied again
                if seen & (one << column):
                    start[column * rows + row] = begin
                    stop[column * rows + row] = begin
                    present[column * rows + row] = 0
    return np.asarray(start), np.asarray(stop), np.asarray(present).view(np.bool_), np.asarray(slow).view(np.bool_)



@cython.boundscheck(False)
@cython.wraparound(False)
@cython.locals(rows=cython.Py_ssize_t, row=cython.Py_ssize_t, begin=cython.Py_ssize_t, end=cython.Py_ssize_t,
               at=cython.Py_ssize_t, stamp=cython.Py_ssize_t, colon=cython.Py_ssize_t, b=cython.uchar,
               ok=cython.bint, fast=cython.uchar[::1], dot=cython.uchar[::1], stamp_end=cython.longlong[::1],
               colon_at=cython.longlong[::1])
def short_heads(data: cython.const[cython.uchar][::1], offsets: cython.const[cython.longlong][::1],
                ascii_rows: cython.const[cython.uchar][::1]) -> tuple:
    """Where the `journalctl -o short` stamp of each line ends and its first `: ` is, relative to the line.

    A line is `fast` when it is ASCII, begins with `Mmm dd hh:mm:ss` and a space or a `.` (then a space
    within the next 7 bytes ends the fraction: `dot`), and has a `: ` after the stamp. Its `stamp_end` is
    that space and `colon` the `: `; other lines get 0 and -2, for the line-by-line reader.
    """
    rows = offsets.shape[0] - 1
    fast = np.zeros(rows, dtype=np.uint8)
    dot = np.zeros(rows, dtype=np.uint8)
    stamp_end = np.zeros(rows, dtype=np.int64)
    colon_at = np.full(rows, -2, dtype=np.int64)
    for row in range(rows):
        begin = offsets[row]
        end = offsets[row + 1]
        if not ascii_rows[row] or end - begin < 16:
            continue
        ok = (65 <= data[begin] <= 90 and 97 <= data[begin + 1] <= 122 and 97 <= data[begin + 2] <= 122
              and data[begin + 3] == SPACE and (data[begin + 4] == SPACE or 48 <= data[begin + 4] <= 57)
              and 48 <= data[begin + 5] <= 57 and data[begin + 6] == SPACE)
        ok = (ok and 48 <= data[begin + 7] <= 57 and 48 <= data[begin + 8] <= 57 and data[begin + 9] == COLON
              and 48 <= data[begin + 10] <= 57 and 48 <= data[begin + 11] <= 57 and data[begin + 12] == COLON
              and 48 <= data[begin + 13] <= 57 and 48 <= data[begin + 14] <= 57)
        b = data[begin + 15]
        if not ok or (b != SPACE and b != DOT):
            continue
        stamp = 15
        if b == DOT:
            stamp = -1
            for at in range(16, 23):
                if begin + at >= end:
                    break
                if data[begin + at] == SPACE:
                    stamp = at
                    break
            if stamp < 0:
                continue
        colon = -1
        for at in range(begin, end - 1):
            if data[at] == COLON and data[at + 1] == SPACE:
                colon = at - begin
                break
        if colon <= stamp:
            continue
        fast[row] = 1
        dot[row] = b == DOT
        stamp_end[row] = stamp
        colon_at[row] = colon
    return np.asarray(fast).view(np.bool_), np.asarray(dot).view(np.bool_), np.asarray(stamp_end), np.asarray(colon_at)


@cython.boundscheck(False)
@cython.wraparound(False)
@cython.locals(rows=cython.Py_ssize_t, row=cython.Py_ssize_t, begin=cython.Py_ssize_t, end=cython.Py_ssize_t,
               at=cython.Py_ssize_t, clock=cython.Py_ssize_t, close=cython.Py_ssize_t, b=cython.uchar,
               ok=cython.bint, dated=cython.bint, ms=cython.bint, fast=cython.uchar[::1],
               dated_rows=cython.uchar[::1], ms_rows=cython.uchar[::1], close_at=cython.longlong[::1])
def bracket_heads(data: cython.const[cython.uchar][::1], offsets: cython.const[cython.longlong][::1],
                  ascii_rows: cython.const[cython.uchar][::1]) -> tuple:
    """Which messages open with SGLang's `[YYYY-MM-DD hh:mm:ss.mmm` bracket (date and milliseconds
    optional, then a space or `]`), whether the date and the milliseconds are there, and where the
    message's first `]` is (relative to it). Other rows get 0 for all four."""
    rows = offsets.shape[0] - 1
    fast = np.zeros(rows, dtype=np.uint8)
    dated_rows = np.zeros(rows, dtype=np.uint8)
    ms_rows = np.zeros(rows, dtype=np.uint8)
    close_at = np.zeros(rows, dtype=np.int64)
    for row in range(rows):
        begin = offsets[row]
        end = offsets[row + 1]
        if not ascii_rows[row] or end - begin < 10 or data[begin] != OPEN:
            continue
        dated = end - begin >= 21 and data[begin + 5] == DASH
        if dated:
            ok = data[begin + 8] == DASH and data[begin + 11] == SPACE
            for at in range(1, 11):
                if at != 5 and at != 8:
                    ok = ok and 48 <= data[begin + at] <= 57
            if not ok:
                continue
        clock = 12 if dated else 1
        if end - begin < clock + 9:
            continue
        ok = (48 <= data[begin + clock] <= 57 and 48 <= data[begin + clock + 1] <= 57
              and data[begin + clock + 2] == COLON and 48 <= data[begin + clock + 3] <= 57
              and 48 <= data[begin + clock + 4] <= 57 and data[begin + clock + 5] == COLON
              and 48 <= data[begin + clock + 6] <= 57 and 48 <= data[begin + clock + 7] <= 57)
        if not ok:
            continue
        at = begin + clock + 8
        b = data[at]
        ms = b in (DOT, COMMA)
        if ms:
            if end - at < 5:
                continue
            ok = 48 <= data[at + 1] <= 57 and 48 <= data[at + 2] <= 57 and 48 <= data[at + 3] <= 57
            if not ok:
                continue
            at += 4
            b = data[at]
        if b != SPACE and b != CLOSE:
            continue
        close = -1
        for at in range(begin, end):
            if data[at] == CLOSE:
                close = at - begin
                break
        if close <= 0:
            continue
        fast[row] = 1
        dated_rows[row] = dated
        ms_rows[row] = ms
        close_at[row] = close
    return (np.asarray(fast).view(np.bool_), np.asarray(dated_rows).view(np.bool_), np.asarray(ms_rows).view(np.bool_),
            np.asarray(close_at))


QUOTE = cython.declare(cython.uchar, 34)
NEWLINE = cython.declare(cython.uchar, 10)
ACCESS_GROUPS = cython.declare(cython.Py_ssize_t, 6)  # client, method, path, http_version, status, reason


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _re2_space(b: cython.uchar) -> cython.bint:
    """RE2's `\\s`: tab, newline, form feed, carriage return and space (not vertical tab, which Python's has)."""
    return b in (SPACE, 9, NEWLINE, 12, 13)


@cython.boundscheck(False)
@cython.wraparound(False)
@cython.locals(rows=cython.Py_ssize_t, row=cython.Py_ssize_t, begin=cython.Py_ssize_t, end=cython.Py_ssize_t,
               at=cython.Py_ssize_t, mark=cython.Py_ssize_t, group=cython.Py_ssize_t, ok=cython.uchar[::1],
               start=cython.longlong[::1], stop=cython.longlong[::1])
def access_spans(data: cython.const[cython.uchar][::1], offsets: cython.const[cython.longlong][::1]) -> tuple:
    """The groups of uvicorn's access line, as `sglang_formats`' `http_request` pattern reads it with RE2
    (anchored at the start, ASCII texts): `CLIENT - "METHOD PATH HTTP/V" STATUS[ REASON]`.

    Each token is a maximal run of its class followed by its one delimiter, so no backtracking can find
    another match. Returns `ok` (a bool per text) and `start`, `stop` as flat (group, row) matrices; a
    group that did not match, or a text that did not, has an empty span at the text's start.
    """
    rows = offsets.shape[0] - 1
    ok = np.zeros(rows, dtype=np.uint8)
    start = np.tile(offsets[:rows], ACCESS_GROUPS)
    stop = np.asarray(start).copy()
    for row in range(rows):
        begin = offsets[row]
        end = offsets[row + 1]
        at = begin
        while at < end and not _re2_space(data[at]):  # client: \S+, then ` - "`
            at += 1
        if at == begin or end - at < 4 or data[at] != SPACE or data[at + 1] != DASH or data[at + 2] != SPACE \
                or data[at + 3] != QUOTE:
            continue
        start[row], stop[row] = begin, at
        at += 4
        mark = at  # method: [A-Z]+, then a space
        while at < end and 65 <= data[at] <= 90:
            at += 1
        if at == mark or at >= end or data[at] != SPACE:
            continue
        start[rows + row], stop[rows + row] = mark, at
        at += 1
        mark = at  # path: \S+, then a space
        while at < end and not _re2_space(data[at]):
            at += 1
        if at == mark or at >= end or data[at] != SPACE:
            continue
        start[2 * rows + row], stop[2 * rows + row] = mark, at
        at += 1
        mark = at  # version: HTTP/[\d.]+, then `" `
        if end - at < 6 or data[at] != 72 or data[at + 1] != 84 or data[at + 2] != 84 or data[at + 3] != 80 \
                or data[at + 4] != 47:
            continue
        at += 5
        while at < end and (48 <= data[at] <= 57 or data[at] == DOT):
            at += 1
        if at == mark + 5 or end - at < 5 or data[at] != QUOTE or data[at + 1] != SPACE:
            continue
        start[3 * rows + row], stop[3 * rows + row] = mark, at
        at += 2  # status: \d{3}
        if not (48 <= data[at] <= 57 and 48 <= data[at + 1] <= 57 and 48 <= data[at + 2] <= 57):
            continue
        start[4 * rows + row], stop[4 * rows + row] = at, at + 3
        at += 3
        if at < end and data[at] == SPACE:  # reason: ` .*`, `.` stopping at a newline
            mark = at + 1
            at = mark
            while at < end and data[at] != NEWLINE:
                at += 1
            start[5 * rows + row], stop[5 * rows + row] = mark, at
        ok[row] = 1
    for group in range(ACCESS_GROUPS):  # a text that did not match keeps no group
        for row in range(rows):
            if not ok[row]:
                start[group * rows + row] = offsets[row]
                stop[group * rows + row] = offsets[row]
    return np.asarray(ok).view(np.bool_), np.asarray(start), np.asarray(stop)
