"""What a secret looks like in a server log, a unit file, a launch command or an agent transcript.

`logmine.ingest.redact` replaces the `secret` group of every pattern (the text around it stays, so a line still
reads as what it was). Provider tokens not listed here are found by detect-secrets' plugins, on the lines
`HINT` lets through. Each `example` holds a made-up secret of its kind: the tests check that it is found.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class SecretPattern:
    name: str
    regex: str  # Python `re`, with a group named `secret`
    example: str
    # What a match must also pass: "not-a-name" (`reads_as_a_name` is false), "base64-token" (it decodes to
    # text that begins with a provider's prefix).
    check: str | None = None


# A value after `key=`/`key:` that is no number, None, null or boolean (SGLang prints `#token: 30000`), and
# no call (`csrfToken = document.querySelector(...)` in source code an agent read): it runs to a delimiter.
_END = r"""(?:[\s"',;)}\]]|$)"""
_VALUE = rf"""["']?(?P<secret>(?!(?:None|null|true|false|[\d.eE+-]+){_END})[^\s"',;(){{}}\[\]]{{4,}})(?={_END})"""

PATTERNS: list[SecretPattern] = [
    SecretPattern("openai-anthropic", r"(?<![\w-])(?P<secret>sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,})",
                  "export OPENAI_API_KEY; curl -H 'x-api-key: sk-ant-api03-Zx81kQpLm2Vb7Hy4Tr9WcN3aFd6'"),
    SecretPattern("huggingface", r"(?<!\w)(?P<secret>hf_[A-Za-z0-9]{30,})",
                  "huggingface-cli login --token hf_QmZx81kQpLm2Vb7Hy4Tr9WcN3aFd6Ue5J"),
    SecretPattern("github", r"(?<!\w)(?P<secret>gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
                  "git clone https://ghp_Zx81kQpLm2Vb7Hy4Tr9WcN3aFd6Ue5JqR2sT@github.com/o/r"),
    SecretPattern("aws-access-key", r"(?<![A-Z0-9])(?P<secret>(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})(?![A-Z0-9])",
                  "aws_access_key_id = AKIAZX81KQPLM2VB7HY4"),
    SecretPattern("google-api-key", r"(?<![\w-])(?P<secret>AIza[0-9A-Za-z_-]{35})",
                  "GOOGLE_API_KEY: AIzaSyZx81kQpLm2Vb7Hy4Tr9WcN3aFd6Ue5JqR"),
    SecretPattern("slack-token", r"(?<![\w-])(?P<secret>xox[abposr]-[A-Za-z0-9-]{10,})",
                  "SLACK_BOT=xoxb-2741-9963-Zx81kQpLm2Vb7Hy4"),
    SecretPattern("slack-webhook", r"hooks\.slack\.com/services/(?P<secret>[A-Za-z0-9/]+)",
                  "curl https://hooks.slack.com/services/T0001/B0001/Zx81kQpLm2Vb7Hy4"),
    SecretPattern("jwt", r"(?<![\w-])(?P<secret>eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*)",
                  "cookie session=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbmEifQ.Zx81kQpLm2Vb7Hy4"),
    SecretPattern("authorization-header",
                  r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest)\s+)?"
                  r"(?P<secret>[^\s\"',;]{6,})",
                  "curl -H 'Authorization: Basic YW5hOnpYODFrUXBMbTI=' http://gpu-box:30000/v1/models"),
    SecretPattern("bearer", r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{8,})",
                  "INFO: request with bearer Zx81kQpLm2Vb7Hy4Tr9W rejected"),
    SecretPattern("option", r"(?i)(?<![\w-])--(?:[a-z0-9]+[-_])*(?:api-key|token|password|passwd|secret)(?:=|\s+)[\"']?"
                            r"(?P<secret>[^\s\"'\\]{4,})",
                  "python -m sglang.launch_server --model-path Qwen/Qwen3-32B --api-key Zx81kQpLm2Vb7"),
    # The value on the next line of a command continued with a backslash (a unit's ExecStart=, a script).
    SecretPattern("option-continued", r"(?i)(?<![\w-])--(?:[a-z0-9]+[-_])*(?:api-key|token|password|passwd|secret)"
                                      r"[ \t]*\\\r?\n[ \t]*[\"']?(?P<secret>[^\s\"'\\]{4,})",
                  "python -m sglang.launch_server --api-key \\\n    Zx81kQpLm2Vb7 \\\n    --port 30000"),
    # A key or token that reads as a name (`_csrf_token: csrfToken`, `token = next_token` in code an agent
    # read) is a variable, not a secret; a password is taken whatever it looks like.
    SecretPattern("assignment", r"(?i)(?<![\w/-])[\w.-]*(?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|"
                                rf"token|secret)[\"']?\s*[=:]\s*(?![\"']?[A-Za-z_.]+{_END})" + _VALUE,
                  "Environment=HF_TOKEN=Zx81kQpLm2Vb7Hy4 SGLANG_API_KEY=Qm4nT5r"),
    # A key of letters only: taken unless it reads as a name (`reads_as_a_name`).
    SecretPattern("assignment-letters", r"(?i)(?<![\w/-])[\w.-]*(?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|"
                                        rf"token|secret)[\"']?\s*[=:]\s*[\"']?(?P<secret>[A-Za-z]{{16,}})(?={_END})",
                  "export OPENAI_API_KEY=XkQpLmVbHyTrWcNaFdUeJqRs", check="not-a-name"),
    SecretPattern("password", r"(?i)(?<![\w/-])[\w.-]*(?:password|passwd)[\"']?\s*[=:]\s*" + _VALUE,
                  "Environment=DB_PASSWORD=hunter"),
    # A password is one whatever its characters: digits alone too (a birth date).
    SecretPattern("password-digits", r"(?i)(?<![\w/-])[\w.-]*(?:password|passwd)[\"']?\s*[=:]\s*[\"']?"
                                     rf"(?P<secret>\d{{4,}})(?={_END})",
                  "Environment=DB_PASSWORD=19830512"),
    SecretPattern("url-password", r"(?i)\b[a-z][a-z0-9+.-]*://[^/\s:@]+:(?P<secret>[^@\s/]+)@",
                  "redis_url='redis://default:Zx81kQpLm2@cache:6379/0'"),
]

# Provider prefixes that say a token begins; a token cut by a terminal's wrap goes on at the next line's start.
WRAPPABLE_PREFIXES = ("sk-ant-", "sk-proj-", "sk-", "hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
                      "xoxb-", "xoxp-", "glpat-", "npm_", "pypi-")
PATTERNS.append(SecretPattern(
    "wrapped-token", r"(?<![\w-])(?P<secret>(?:" + "|".join(map(re.escape, WRAPPABLE_PREFIXES)) +
    r")[A-Za-z0-9_-]{4,}\r?\n[A-Za-z0-9_-]{4,})(?=[\s\"',;]|$)",
    "$ echo $HF_TOKEN\nhf_QmZx81kQpLm2Vb7Hy4\nTr9WcN3aFd6Ue5J\n$"))


def reads_as_a_name(value: str) -> bool:
    """A letters-only value that is a word or words (`nextToken`, `getElementsByClassName`), not a key
    (`XkQpLmVbHyTrWcNa`): camel-case parts of four letters or more on average, or one lower-case word."""
    parts = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", value)
    return len(parts) > 1 and sum(map(len, parts)) / len(parts) >= 4


# Prefixes a placeholder keeps, so that `<secret:hf_…3fa2c1>` still says what kind of secret it was.
PUBLIC_PREFIXES = ("sk-ant-", "sk-proj-", "sk-", "hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
                   "AKIA", "ASIA", "AIza", "xoxb-", "xoxp-", "xoxa-", "xoxo-", "xoxr-", "xoxs-", "eyJ",
                   "sk_live_", "rk_live_", "SG.", "npm_", "pypi-", "glpat-")

# Lines of a PEM private key, between its BEGIN and END lines (a transcript holds them in one text).
PRIVATE_KEY_BEGIN = r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
PRIVATE_KEY_END = r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
PRIVATE_KEY_EXAMPLE = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAZx81kQpLm2Vb7Hy4\n" \
                      "-----END OPENSSH PRIVATE KEY-----"


def base64_heads(prefix: str) -> list[str]:
    """The base64 characters that `prefix` alone decides when it begins the encoded text."""
    encoded = base64.b64encode(prefix.encode()).decode().rstrip("=")
    return [encoded[:len(prefix) * 4 // 3]]


# Base64 of a provider token (`echo -n hf_... | base64`): its first characters are known; the value is
# decoded and taken when it holds a token.
BASE64_HEADS = sorted({head for prefix in PUBLIC_PREFIXES if len(prefix) >= 3 for head in base64_heads(prefix)})
PATTERNS.append(SecretPattern(
    "base64-token", r"(?<![A-Za-z0-9+/])(?P<secret>(?:" + "|".join(BASE64_HEADS) + r")[A-Za-z0-9+/]{16,}={0,2})"
    r"(?![A-Za-z0-9+/=])",
    "Environment=TOKEN_B64=aGZfUW1aeDgxa1FwTG0yVmI3SHk0VHI5V2NOM2FGZDZVZTVK", check="base64-token"))

# A private key's line: base64 at the end of the line (after a journal's envelope), with a digit, `+`, `/`
# or padding in it (a word is no key material). Between BEGIN and END
# only such lines are replaced, and a BEGIN without its END stops after MAX_KEY_LINES: a stray marker must
# not take the rest of the log.
KEY_MATERIAL = (r"(?:^|(?<=\s))(?P<secret>(?=[A-Za-z]*[0-9+/])[A-Za-z0-9+/]{8,}={0,2}|[A-Za-z0-9+/]{2,}={1,2})"
                r"[ \t\r]*$")
MAX_KEY_LINES = 200

# RE2 (case-insensitive), matched over whole columns: only lines it matches are searched with the patterns
# above and detect-secrets' plugins. Every pattern's text matches it; it adds other providers' prefixes
# (Stripe, SendGrid, npm, PyPI, Azure, GitLab) for the plugins.
HINT = "|".join([
    r"sk-", r"hf_", r"gh[pousr]_", r"github_pat_", r"A[SK]IA|ABIA|ACCA", r"AIza", r"xox[abposr]-",
    r"hooks\.slack\.com", r"eyJ", r"authorization", r"bearer", r"--[\w-]*(?:api-key|token|passw|secret)",
    r"(?:key|token|secret|passw\w*)[\"']?\s*[=:]\s*[\"']?[\d.]*[A-Za-z_/+]", r"://[^/\s:@]+:[^@\s/]+@",
    r"PRIVATE KEY", r"[sr]k_live_", r"SG\.", r"npm_", r"pypi-", r"AccountKey=", r"glpat-",
    r"passw\w*[\"']?\s*[=:]\s*[\"']?\d", *BASE64_HEADS,
])
