"""Loading a rule's example corpus from ``shapecheck/rules/examples/scNNN.py``."""

from __future__ import annotations

import importlib

from shapecheck.rules.base import Invalid, Valid


def load(code: str) -> tuple[list[Valid], list[Invalid]]:
    """The VALID and INVALID examples of rule ``code`` (e.g. "SC101"); empty lists if none."""
    try:
        module = importlib.import_module(f"shapecheck.rules.examples.{code.lower()}")
    except ModuleNotFoundError:
        return [], []
    valid = [Valid(text, title) for title, text in getattr(module, "VALID", [])]
    invalid = []
    for entry in getattr(module, "INVALID", []):
        title, text = entry[0], entry[1]
        fixed = entry[2] if len(entry) > 2 else None
        invalid.append(Invalid(text, title, fixed))
    return valid, invalid
