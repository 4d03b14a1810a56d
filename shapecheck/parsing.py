"""Parsing with libcst, in pieces for large files.

libcst's native parser needs several times more memory while it parses than the tree it returns
(a 20,000-line file peaks near 500 MB; ten 2,000-line pieces of it, kept, need about 110 MB). A
file of more than ``CHUNK_LINES * 2`` lines is therefore cut at top-level statements into pieces
of about ``CHUNK_LINES`` lines, each piece parsed on its own, and the pieces joined into one
module, which prints back exactly the source (libcst round-trips each piece; the join moves no
text). A cut in the wrong place (inside a string or brackets, before ``else:``, after a decorator)
makes a piece fail to parse, and the file is then parsed whole.
"""

from __future__ import annotations

import re

import libcst as cst

CHUNK_LINES = 2000
#: A line that can start a top-level statement: not indented, not a comment or a closing bracket,
#: and not a clause that continues the statement before it.
_TOP_LEVEL = re.compile(r"(?!(?:else|elif|except|finally|case)\b)[A-Za-z_@]")


def parse_module(source: str) -> cst.Module:
    """``cst.parse_module(source)``, in pieces when the source is long (same tree shape, same code)."""
    lines = source.splitlines(keepends=True)
    if len(lines) <= CHUNK_LINES * 2:
        return cst.parse_module(source)
    pieces = _cut(lines)
    if len(pieces) < 2:
        return cst.parse_module(source)
    try:
        modules = [cst.parse_module(piece) for piece in pieces]
    except cst.ParserSyntaxError:
        return cst.parse_module(source)  # the whole file gives the real error, at its real place
    joined = _join(modules)
    return joined if joined is not None else cst.parse_module(source)


def _cut(lines: list[str]) -> list[str]:
    pieces: list[str] = []
    start = 0
    index = CHUNK_LINES
    while index < len(lines):
        previous = lines[index - 1].rstrip("\r\n")
        if _TOP_LEVEL.match(lines[index]) and not previous.endswith("\\") and not previous.startswith("@"):
            pieces.append("".join(lines[start:index]))
            start = index
            index += CHUNK_LINES
        else:
            index += 1
    pieces.append("".join(lines[start:]))
    return pieces


def _join(modules: list[cst.Module]) -> cst.Module | None:
    """One module with the statements of all; a piece's header and the previous piece's footer
    become leading lines of the piece's first statement."""
    first = modules[0]
    body = list(first.body)
    carried = list(first.footer)
    for module in modules[1:]:
        if not module.body:
            return None
        lead = module.body[0]
        if not hasattr(lead, "leading_lines"):
            return None
        prefix = carried + list(module.header)
        body.append(lead.with_changes(leading_lines=prefix + list(lead.leading_lines)))
        body.extend(module.body[1:])
        carried = list(module.footer)
    last = modules[-1]
    return first.with_changes(body=body, footer=carried, has_trailing_newline=last.has_trailing_newline)
