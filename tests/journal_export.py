"""Real journal files for tests and benchmarks: entries written in journald's export format and stored by
Debian's `systemd-journal-remote`, so that the real `journalctl --file ... -f` reads them.

Export format (systemd's JOURNAL_EXPORT_FORMATS): one `FIELD=value` line per field, a blank line after
each entry; a value holding a newline is written as `FIELD\\n`, its length as 64-bit little endian, the
bytes and `\\n`.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from datetime import datetime
from pathlib import Path

JOURNAL_REMOTE = Path("/lib/systemd/systemd-journal-remote")
BOOT_ID = "5f1c0e9a2b7d4c81a6e3f0d29b8c7a14"
SHORT_LINE = re.compile(rb"^(?P<stamp>\w{3} [ \d]\d \d\d:\d\d:\d\d) (?P<host>\S+) (?P<ident>[^\[:\s]+)"
                        rb"(?:\[(?P<pid>\d+)\])?: (?P<message>.*)$")


def available() -> bool:
    return JOURNAL_REMOTE.exists() and shutil.which("journalctl") is not None


def entries_from_short(text: bytes, year: int = 2026, unit: str = "sglang-qwen.service") -> list[dict[str, bytes]]:
    """The journal entries a `journalctl` short-format text came from (its `-- Boot` lines left out): host,
    identifier, PID and message of each line, its time as the entry's realtime stamp (the line's second,
    plus a microsecond per entry so that the order holds)."""
    entries = []
    for number, line in enumerate(text.splitlines()):
        found = SHORT_LINE.match(line)
        if not found:
            continue
        stamp = datetime.strptime(f"{year} {found['stamp'].decode()}", "%Y %b %d %H:%M:%S")
        micros = int(stamp.timestamp()) * 1_000_000 + number
        entry = {"__REALTIME_TIMESTAMP": str(micros).encode(), "__MONOTONIC_TIMESTAMP": str(number).encode(),
                 "_BOOT_ID": BOOT_ID.encode(), "_HOSTNAME": found["host"], "SYSLOG_IDENTIFIER": found["ident"],
                 "PRIORITY": b"6", "MESSAGE": found["message"]}
        if found["pid"]:
            entry["_PID"] = found["pid"]
        entry["_SYSTEMD_UNIT"] = b"init.scope" if found["ident"] == b"systemd" else unit.encode()
        entries.append(entry)
    return entries


def export_format(entries: list[dict[str, bytes]]) -> bytes:
    out = bytearray()
    for entry in entries:
        for name, value in entry.items():
            if b"\n" in value:
                out += name.encode() + b"\n" + struct.pack("<Q", len(value)) + value + b"\n"
            else:
                out += name.encode() + b"=" + value + b"\n"
        out += b"\n"
    return bytes(out)


def append_entries(journal: Path, entries: list[dict[str, bytes]]) -> None:
    """Store the entries in the journal file (created, or added to), as journald would have."""
    subprocess.run([str(JOURNAL_REMOTE), f"--output={journal}", "-"], input=export_format(entries), check=True,
                   capture_output=True)


def journal_json(journal: Path) -> bytes:
    """What `journalctl -o json --all` prints of the whole file: the text an `ingest` of the same entries reads."""
    return subprocess.run(["journalctl", "--file", str(journal), "-o", "json", "--all", "--no-pager"],
                          check=True, capture_output=True).stdout
