"""Glob matching for ``exclude`` and ``per-file-ignores`` patterns.

A pattern is matched against a posix path relative to the configuration's folder. It matches when it
matches the whole path, the file or folder name alone (``*_pb2.py``, ``generated``), or any folder
on the way (``generated/*`` and ``generated`` both exclude everything below ``generated/``). ``**/``
may stand for any number of folders, including none.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase


def _variants(pattern: str) -> list[str]:
    pattern = pattern.strip().removeprefix("./")
    variants = [pattern.rstrip("/") or pattern]
    while variants[-1].startswith("**/"):
        variants.append(variants[-1][3:])
    return variants


def matches(relative: str, pattern: str) -> bool:
    """True when the posix path ``relative`` (or one of its parent folders) matches ``pattern``."""
    parts = relative.split("/")
    candidates = ["/".join(parts[: index + 1]) for index in range(len(parts))]
    for variant in _variants(pattern):
        if "/" not in variant:
            if any(fnmatchcase(part, variant) for part in parts):
                return True
        elif any(fnmatchcase(candidate, variant) for candidate in candidates):
            return True
    return False


def matches_any(relative: str, patterns: Iterable[str]) -> bool:
    """True when any of ``patterns`` matches ``relative``."""
    return any(matches(relative, pattern) for pattern in patterns)
