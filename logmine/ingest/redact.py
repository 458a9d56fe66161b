"""Secrets replaced before they are stored (`logmine ingest --redact`).

Applied where text becomes rows: to each log line before it is parsed (so the typed tables, server_args
dumps included, are made from redacted text) and to every text cell of a transcript's rows. A secret
becomes a placeholder that keeps its public prefix and a short hash of the value, `<secret:hf_…3fa2c1>`:
equal secrets get equal placeholders, so they stay joinable across sources.

What a secret looks like is data (`parsers.secret_patterns`); providers it does not list are found by
detect-secrets' plugins. Both run only on the lines a column-wide RE2 hint lets through.
"""

from __future__ import annotations

import hashlib
import re
from importlib import import_module

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..parsers.secret_patterns import HINT, PATTERNS, PRIVATE_KEY_BEGIN, PRIVATE_KEY_END, PUBLIC_PREFIXES
from ..parsers.vector_columns import flags, patch

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


class Redactor:
    """Replaces secrets in texts (`text`) and in a log's lines, block after block (`lines`)."""

    def __init__(self) -> None:
        self.patterns = [re.compile(p.regex) for p in PATTERNS]
        self.key_block = re.compile(f"({PRIVATE_KEY_BEGIN})(.*?)({PRIVATE_KEY_END})", re.DOTALL)
        self.key_begin, self.key_end = re.compile(PRIVATE_KEY_BEGIN), re.compile(PRIVATE_KEY_END)
        self.plugins = []
        for name in DETECT_SECRETS_PLUGINS:
            module, cls = name.rsplit(".", 1)
            self.plugins.append(getattr(import_module(f"detect_secrets.plugins.{module}"), cls)())
        self.in_key = False  # inside a private key's lines at the end of the last block of a log

    def text(self, text: str) -> str:
        """`text` with every secret replaced (a multi-line private key included)."""
        if PLACEHOLDER not in text and not self._hinted(text):
            return text
        text = self.key_block.sub(lambda m: f"{m[1]}\n{placeholder(m[2].strip())}\n{m[3]}", text)
        spans = [m.span("secret") for regex in self.patterns for m in regex.finditer(text)]
        for plugin in self.plugins:
            for value in set(plugin.analyze_string(text)):
                if isinstance(value, str) and len(value) >= MIN_PLUGIN_VALUE:
                    spans += [(m.start(), m.end()) for m in re.finditer(re.escape(value), text)]
        done = [m.span() for m in PLACEHOLDERS.finditer(text)]  # an earlier redaction's: kept as they are
        out, end = [], 0
        for start, stop in sorted(spans):
            if start < end or any(start < b and a < stop for a, b in done):
                continue
            out += [text[end:start], placeholder(text[start:stop])]
            end = stop
        return "".join(out) + text[end:]

    def lines(self, lines: pa.StringArray) -> pa.StringArray:
        """A block of consecutive log lines with their secrets replaced; a private key's lines (between
        its BEGIN and END lines, which may be blocks apart) are replaced whole."""
        hinted = flags(pc.match_substring_regex(lines, HINT, ignore_case=True))
        rows = {int(i) for i in np.flatnonzero(hinted)}
        replaced = {}
        key_rows = [i for i in sorted(rows) if "PRIVATE KEY" in lines[i].as_py()]
        if self.in_key or key_rows:
            for i in range(0 if self.in_key else key_rows[0], len(lines)):
                line = lines[i].as_py() or ""
                if self.in_key and self.key_end.search(line):
                    self.in_key = False
                elif self.in_key:
                    replaced[i] = placeholder(line.strip())
                elif self.key_begin.search(line):
                    self.in_key = True
        for i in sorted(rows - replaced.keys()):
            line = lines[i].as_py()
            redacted = self.text(line)
            if redacted != line:
                replaced[i] = redacted
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
