"""Guards against input that would make parsing take minutes: long chains of binary operators.

libcst's parser takes time that grows with the cube of the length of a chain of arithmetic
operators at one bracket level (``a0 + a1 + ... + a1999`` takes about 15 s, 20,000 terms hours),
and the parse cannot be interrupted. ``longest_operator_chain`` finds such a chain before parsing:
a quick scan of the raw text first (it may overcount: operators inside strings and comments), and
only when that exceeds the limit, an exact count over Python's tokens.
"""

from __future__ import annotations

import io
import re
import tokenize

#: Longer chains are not parsed (1,000 terms take libcst about 2 s; it grows with the cube).
MAX_OPERATOR_CHAIN = 1000

_ROUGH = re.compile(r"\*\*|//|<<|>>|[-+*/%@&|^]|[()\[\]{},;\n]")
_ARITHMETIC = frozenset(
    {"+", "-", "*", "/", "//", "%", "@", "**", "<<", ">>", "&", "|", "^"}
)
_OPEN = frozenset("([{")
_CLOSE = frozenset(")]}")


def longest_operator_chain(source: str, limit: int = MAX_OPERATOR_CHAIN) -> tuple[int, int]:
    """(length, line) of the longest operator chain, exact only when the rough scan exceeds ``limit``
    (otherwise ``(rough length, 0)``)."""
    rough = _rough_longest(source)
    if rough <= limit:
        return rough, 0
    return _exact_longest(source)


def _rough_longest(source: str) -> int:
    counts = [0]
    longest = 0
    for match in _ROUGH.finditer(source):
        token = match.group()
        if token in _OPEN:
            counts.append(0)
        elif token in _CLOSE:
            if len(counts) > 1:
                counts.pop()
        elif token in ",;" or (token == "\n" and len(counts) == 1):
            counts[-1] = 0
        elif token != "\n":
            counts[-1] += 1
            longest = max(longest, counts[-1])
    return longest


def _exact_longest(source: str) -> tuple[int, int]:
    counts = [0]
    longest, line = 0, 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                counts = [0]
            elif token.type != tokenize.OP:
                continue
            elif token.string in _OPEN:
                counts.append(0)
            elif token.string in _CLOSE:
                if len(counts) > 1:
                    counts.pop()
            elif token.string in _ARITHMETIC:
                counts[-1] += 1
                if counts[-1] > longest:
                    longest, line = counts[-1], token.start[0]
            else:
                counts[-1] = 0
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # the parser reports the syntax error; the count so far stands
    return longest, line
