"""Output formats of ``shapecheck lint``: one module per format, each with a ``write`` function.

A reporter gets the whole run as a ``LintReport`` and writes it to a text stream; it never decides
the exit code. ``get(name)`` imports only the module asked for, so the text reporter's rich import
is paid only when text is printed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TextIO

from shapecheck.reporters.base import LintReport

#: --format value -> module under shapecheck.reporters
FORMATS: dict[str, str] = {
    "text": "text",
    "concise": "concise",
    "json": "json_format",
    "sarif": "sarif",
    "github": "github",
}

Writer = Callable[[LintReport, TextIO], None]


def get(name: str) -> Writer:
    """The ``write`` function of the format called ``name``."""
    module = importlib.import_module(f"shapecheck.reporters.{FORMATS[name]}")
    return module.write


__all__ = ["FORMATS", "LintReport", "Writer", "get"]
