"""Loading a rule's example corpus from ``shapecheck/rules/examples/scNNN.py``.

A corpus module defines ``INVALID`` and ``VALID`` lists of ``(title, code)`` pairs (an INVALID entry
may carry a third item, the fixed code, or be named in ``FIXED``) and optionally ``KNOWN_MISSES``: titles of INVALID examples
the engine cannot see yet, each with the reason. Those are kept apart so that the recall they cost
stays visible, and a test notices when one starts being caught.
"""

from __future__ import annotations

import importlib

from shapecheck.rules.base import Invalid, Valid


def load(code: str) -> tuple[list[Valid], list[Invalid]]:
    """The VALID and INVALID examples of rule ``code`` (e.g. "SC101"); empty lists if none."""
    valid, invalid, _ = load_all(code)
    return valid, invalid


def load_all(code: str) -> tuple[list[Valid], list[Invalid], list[tuple[Invalid, str]]]:
    """VALID, INVALID and the known misses (example, reason) of rule ``code``."""
    try:
        module = importlib.import_module(f"shapecheck.rules.examples.{code.lower()}")
    except ModuleNotFoundError:
        return [], [], []
    misses: dict[str, str] = getattr(module, "KNOWN_MISSES", {})
    fixes: dict[str, str] = getattr(module, "FIXED", {})
    valid = [Valid(text, title) for title, text in getattr(module, "VALID", [])]
    invalid: list[Invalid] = []
    missed: list[tuple[Invalid, str]] = []
    for entry in getattr(module, "INVALID", []):
        title, text = entry[0], entry[1]
        fixed = entry[2] if len(entry) > 2 else fixes.get(title)
        example = Invalid(text, title, fixed)
        if title in misses:
            missed.append((example, misses[title]))
        else:
            invalid.append(example)
    return valid, invalid, missed
