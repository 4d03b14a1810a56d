"""The rich console every command prints tables and documents with.

On a terminal it takes the terminal's width; when the output is piped or redirected it has no
width limit (``PIPED_WIDTH``), so that ``shapecheck rules | less`` or ``> file`` never cuts a name
or a shape in two. Colour and markup follow rich's detection (``NO_COLOR`` is honoured).
"""

from __future__ import annotations

import sys
from typing import TextIO

#: Width used when stdout is not a terminal: wider than any table row, so nothing wraps.
PIPED_WIDTH = 100_000
#: Width for flowing text (Markdown paragraphs) when piped: prose still reads as paragraphs.
PIPED_TEXT_WIDTH = 100


def make_console(stream: TextIO | None = None, prose: bool = False):
    """A console on ``stream`` (stdout): the terminal's width, or no limit when piped."""
    from rich.console import Console

    stream = stream if stream is not None else sys.stdout
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return Console(file=stream, highlight=False)
    return Console(file=stream, highlight=False, width=PIPED_TEXT_WIDTH if prose else PIPED_WIDTH)
