"""Secrets replaced before they are stored (`logmine ingest --redact`).

Applied where text becomes rows: to each log line before it is parsed (so the typed tables, server_args
dumps included, are made from redacted text) and to every text cell of a transcript's rows. A secret
becomes a placeholder that keeps its public prefix and a short hash of the value, `<secret:hf_…3fa2c1>`:
equal secrets get equal placeholders, so they stay joinable across sources.

What a secret looks like is data (`parsers.secret_patterns`); providers it does not list are found by
detect-secrets' plugins. Both run only on the lines a column-wide RE2 hint lets through.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from importlib import import_module

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..parsers.secret_patterns import (
    HINT,
    KEY_MATERIAL,
    MAX_KEY_LINES,
    PATTERNS,
    PRIVATE_KEY_BEGIN,
    PRIVATE_KEY_END,
    PUBLIC_PREFIXES,
    reads_as_a_name,
)
from ..parsers.vector_columns import flags, patch

# The lines a secret other than a private key's material may be on (a BEGIN marker alone is none).
SECRET_HINT = "|".join(part for part in HINT.split("|") if part != "PRIVATE KEY")
PLACEHOLDER = "<secret:"
PLACEHOLDERS = re.compile(r"<secret:[^>\s]*>")
# detect-secrets plugins for providers the pattern table does not cover (their `analyze_string` gives
# the value). Its keyword, entropy and IP plugins are left out: on logs they take numbers and hashes.
DETECT_SECRETS_PLUGINS = [
    "artifactory.ArtifactoryDetector", "aws.AWSKeyDetector", "azure_storage_key.AzureStorageKeyDetector",
    "cloudant.CloudantDetector", "discord.DiscordBotTokenDetector", "gitlab_token.GitLabTokenDetector",
    "ibm_cloud_iam.IbmCloudIamDetector", "ibm_cos_hmac.IbmCosHmacDetector", "mailchimp.MailchimpDetector",
    "npm.NpmDetector", "openai.OpenAIDetector", "pypi_token.PypiTokenDetector", "sendgrid.SendGridDetector",
    "softlayer.SoftlayerDetector", "square_oauth.SquareOAuthDetector", "stripe.StripeDetector",
    "telegram_token.TelegramBotTokenDetector", "twilio.TwilioKeyDetector",
]
MIN_PLUGIN_VALUE = 8  # shorter values a plugin reports are parts of its match (a prefix), not the secret


def placeholder(value: str) -> str:
    """The stable stand-in of one secret value."""
    prefix = next((p for p in PUBLIC_PREFIXES if value.startswith(p)), "")
    return f"{PLACEHOLDER}{prefix}…{hashlib.blake2b(value.encode(), digest_size=3).hexdigest()}>"


def replacement(value: str) -> str:
    """The placeholder of `value`, once per line it spans (a token a terminal wrapped keeps its line break,
    so that no line is lost; both halves get the placeholder of the whole)."""
    whole = placeholder(re.sub(r"\r?\n", "", value))
    return "\n".join(whole for _ in value.split("\n"))


def holds_a_token(encoded: str) -> bool:
    """`encoded` is base64 of printable text that begins with a provider's prefix."""
    try:
        decoded = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return decoded.isprintable() and decoded.startswith(PUBLIC_PREFIXES)


CHECKS = {"not-a-name": lambda value: not reads_as_a_name(value), "base64-token": holds_a_token}
# A key written as one line with its line breaks escaped (`"-----BEGIN ... KEY-----\\nMIIE...\\n-----END"` in
# JSON): the body has no `-`, so each try stops at the next marker (linear however many markers there are).
ONE_LINE_KEY = re.compile(f"({PRIVATE_KEY_BEGIN})([^-]+)({PRIVATE_KEY_END})")


class KeyBlock:
    """Where a log (or a text) is in a private key: the lines after a BEGIN, up to its END or MAX_KEY_LINES,
    whose key material (`KEY_MATERIAL`) is replaced; every other line is kept as it is."""

    begin, end, material = re.compile(PRIVATE_KEY_BEGIN), re.compile(PRIVATE_KEY_END), re.compile(KEY_MATERIAL)

    def __init__(self, lines_left: int = 0) -> None:
        self.lines_left = lines_left  # lines of the open block still to look at; 0: outside any key

    def line(self, line: str) -> str | None:
        """The line with its key material replaced, or None when it is kept as it is."""
        if self.lines_left:
            self.lines_left -= 1
            if self.end.search(line):
                self.lines_left = 0
                return None
            found = self.material.search(line)
            if found:
                return line[:found.start("secret")] + placeholder(found["secret"]) + line[found.end("secret"):]
            return None
        if self.begin.search(line) and not self.end.search(line):
            self.lines_left = MAX_KEY_LINES
        return None


class Redactor:
    """Replaces secrets in texts (`text`) and in a log's lines, block after block (`lines`).

    `key_lines_left`: the log resumes inside a private key whose BEGIN an earlier ingest read
    (`key_lines_left` lines of it may still come)."""

    def __init__(self, key_lines_left: int = 0) -> None:
        self.patterns = [(re.compile(p.regex), CHECKS.get(p.check)) for p in PATTERNS]
        self.plugins = []
        for name in DETECT_SECRETS_PLUGINS:
            module, cls = name.rsplit(".", 1)
            self.plugins.append(getattr(import_module(f"detect_secrets.plugins.{module}"), cls)())
        self.key = KeyBlock(key_lines_left)  # a log's private key, across its blocks
        # A line ending in `--api-key \`: the next line's first word is its value.
        self.option_open = re.compile(r"(?i)(?<![\w-])--(?:[a-z0-9]+[-_])*(?:api-key|token|password|passwd|secret)"
                                      r"[ \t]*\\[ \t\r]*$")
        self.continued_value = re.compile(r"^(?:[^\n]*?\]: )?[ \t]*[\"']?(?P<secret>[^\s\"'\\]{4,})")

    def text(self, text: str) -> str:
        """`text` with every secret replaced (a multi-line private key included)."""
        if PLACEHOLDER not in text and not self._hinted(text):
            return text
        if "PRIVATE KEY" in text:
            text = self._key_text(text)
        spans = [m.span("secret") for regex, check in self.patterns for m in regex.finditer(text)
                 if check is None or check(m["secret"])]
        for plugin in self.plugins:
            for value in set(plugin.analyze_string(text)):
                if isinstance(value, str) and len(value) >= MIN_PLUGIN_VALUE:
                    spans += [(m.start(), m.end()) for m in re.finditer(re.escape(value), text)]
        done = [m.span() for m in PLACEHOLDERS.finditer(text)]  # an earlier redaction's: kept as they are
        out, end = [], 0
        for start, stop in sorted(spans):
            if start < end or any(start < b and a < stop for a, b in done):
                continue
            out += [text[end:start], replacement(text[start:stop])]
            end = stop
        return "".join(out) + text[end:]

    def _key_text(self, text: str) -> str:
        """A text's private keys: each key line's material replaced, line by line (no line lost)."""
        text = ONE_LINE_KEY.sub(lambda m: f"{m[1]}{placeholder(m[2].strip())}{m[3]}", text)
        block, out = KeyBlock(), []
        for line in text.split("\n"):
            changed = block.line(line)
            out.append(line if changed is None else changed)
        return "\n".join(out)

    def lines(self, lines: pa.StringArray) -> pa.StringArray:
        """A block of consecutive log lines with their secrets replaced: a private key's material between
        its BEGIN and END lines (which may be blocks, or ingests, apart), an option's value on the line
        after `--api-key \\`."""
        hinted = flags(pc.match_substring_regex(lines, SECRET_HINT, ignore_case=True))
        rows = {int(i) for i in np.flatnonzero(hinted)}
        replaced: dict[int, str] = {}
        key_rows = np.flatnonzero(flags(pc.match_substring(lines, "PRIVATE KEY")))
        if self.key.lines_left or len(key_rows):
            i = 0 if self.key.lines_left else int(key_rows[0])
            while i < len(lines):
                if not self.key.lines_left:  # on to the next BEGIN: linear in the lines, whatever the markers
                    later = int(np.searchsorted(key_rows, i))
                    if later == len(key_rows):
                        break
                    i = int(key_rows[later])
                changed = self.key.line(lines[i].as_py() or "")
                if changed is not None:
                    replaced[i] = changed
                i += 1
        for i in sorted(rows - replaced.keys()):
            line = lines[i].as_py() or ""
            redacted = self.text(line)
            if redacted != line:
                replaced[i] = redacted
            if self.option_open.search(line) and i + 1 < len(lines):
                following = replaced.get(i + 1, lines[i + 1].as_py() or "")
                value = self.continued_value.search(following)
                if value and not value["secret"].startswith(PLACEHOLDER):
                    replaced[i + 1] = (following[:value.start("secret")] + placeholder(value["secret"]) +
                                       following[value.end("secret"):])
        if not replaced:
            return lines
        order = np.array(sorted(replaced), dtype=np.int64)
        return patch(lines, order, pa.array([replaced[int(i)] for i in order], pa.string()))

    def cells(self, values: pa.StringArray) -> pa.StringArray:
        """`text` of every cell of a column, each on its own (only the cells it could change are read)."""
        maybe = np.flatnonzero(flags(pc.or_(pc.match_substring_regex(values, HINT, ignore_case=True),
                                            pc.match_substring(values, PLACEHOLDER))))
        if not len(maybe):
            return values
        texts = values.take(pa.array(maybe)).to_pylist()
        return patch(values, maybe, pa.array([self.text(text) for text in texts], pa.string()))

    def _hinted(self, text: str) -> bool:
        return pc.any(pc.match_substring_regex(pa.array([text]), HINT, ignore_case=True)).as_py()
