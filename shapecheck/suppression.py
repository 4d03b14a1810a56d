"""Inline suppression: ``# shapecheck: ignore[SC101]``, bare ``# shapecheck: ignore``,
``# noqa: SC101`` / bare ``# noqa``, and ``# shapecheck: ignore-file`` near the top of a file.

Comments are found with ``tokenize`` (never in strings), and only for files that have findings.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from shapecheck.diagnostics import Diagnostic

_IGNORE = re.compile(r"#\s*shapecheck\s*:\s*ignore(?!-file)(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_IGNORE_FILE = re.compile(r"^\s*#\s*shapecheck\s*:\s*ignore-file\b", re.IGNORECASE | re.MULTILINE)

#: ``ignore-file`` counts only in a file's leading comment block (before any code), like ruff/flake8.
_HEADER_LINES = 50
ALL = "*"


def has_ignore_file(source: str) -> bool:
    """True when ``# shapecheck: ignore-file`` stands in the first lines of the file."""
    head = "\n".join(source.splitlines()[:_HEADER_LINES])
    return bool(_IGNORE_FILE.search(head))


def _codes(text: str | None) -> set[str]:
    if text is None:
        return {ALL}
    codes = {part.strip().upper() for part in re.split(r"[\s,]+", text) if part.strip()}
    return codes or {ALL}


@dataclass
class Suppressions:
    """Per line: the codes (or names) silenced there; ``*`` silences everything."""

    by_line: dict[int, set[str]] = field(default_factory=dict)

    @classmethod
    def from_source(cls, source: str) -> "Suppressions":
        table: dict[int, set[str]] = {}
        if not (_IGNORE.search(source) or _NOQA.search(source)):
            return cls(table)  # no such text anywhere, so no such comment: skip the tokenizer
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
        except (tokenize.TokenError, SyntaxError, IndentationError):
            tokens = []
        for token in tokens:
            if token.type != tokenize.COMMENT:
                continue
            line = token.start[0]
            for pattern in (_IGNORE, _NOQA):
                for match in pattern.finditer(token.string):
                    table.setdefault(line, set()).update(_codes(match.group("codes")))
        return cls(table)

    def suppresses(self, diagnostic: Diagnostic) -> bool:
        for line in {diagnostic.span.line, diagnostic.span.end_line}:
            codes = self.by_line.get(line)
            if codes and (ALL in codes or diagnostic.code in codes or diagnostic.name.upper() in codes):
                return True
        return False
