"""Rename the user's own identifiers in a snippet, consistently, keeping what the code means.

Used by tests/test_rule_renaming.py: a rule must find the same bug whatever the user called their
classes, functions, variables and attributes. Renamed: classes, functions and methods (not
``forward`` or dunders), parameters (not ``self`` / ``cls``), assigned names, attributes assigned on
any object (``self.q_proj``, dataclass fields) and the string names given to ``register_buffer`` /
``register_parameter`` / ``getattr``, and the dim names inside string annotations
(``Float[Tensor, "b t d_model"]``). Kept: builtins, imported names, and every name the snippet
passes as a keyword to something it did not define (``dim=``, ``batch_first=``, einops axes), plus
the attribute names of torch's own objects (``protected``), so that no renaming changes behaviour.
Names are replaced by neutral ones of the same kind (``C0``, ``f1``, ``v2``, ``a3``) so that no
rule can lean on a word the examples happen to use; ``keep_words`` keeps a documented vocabulary
(e.g. SC204's "Causal" in a class name, which is user evidence by design) as a prefix.

A renamed name changes everywhere it is an identifier: every name token of the source (attribute
names, keyword-argument names and the expressions inside f-strings included), never inside other
strings except the two kinds above. The definitions are found with ``ast`` in source order and the
text is rewritten token by token (``tokenize``): the layout and comments stay as they were. (A
libcst transformer did the same 25 times slower: the renaming tests spent more time renaming than
linting.)
"""

from __future__ import annotations

import ast
import builtins
import io
import keyword
import re
import tokenize
from collections.abc import Iterable, Iterator

NAME_REGISTRARS = {"register_buffer", "register_parameter", "add_module", "getattr", "setattr", "hasattr"}
KEEP = {"self", "cls", "forward", "super"}
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
JAXTYPING_TYPES = re.compile(r"(Float|Int|Bool|Shaped|Num|Real|Inexact|Integer|UInt|Complex|Key)(\d*)")
STRING_PREFIX = re.compile(r"[A-Za-z]*")


class _Source:
    """The snippet's text, its tokens, and (line, column) to offset."""

    def __init__(self, code: str) -> None:
        self.code = code
        self.starts = _line_starts(code)
        self.tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
        self.string_at = {tok.start: tok for tok in self.tokens if tok.type == tokenize.STRING}

    def offset(self, line: int, column: int) -> int:
        return self.starts[line - 1] + column

    def single_string(self, node: ast.expr) -> tokenize.TokenInfo | None:
        """The one string token ``node`` is written as (not implicitly concatenated, not an f-string)."""
        if not isinstance(node, ast.Constant) or not isinstance(node.value, (str, bytes)):
            return None
        token = self.string_at.get((node.lineno, node.col_offset))
        if token is None or token.end != (node.end_lineno, node.end_col_offset):
            return None
        return token


def _line_starts(text: str) -> list[int]:
    """Offset of each line's first character, lines as ``tokenize`` reads them (ending at ``\\n``)."""
    starts = [0]
    for line in io.StringIO(text):
        starts.append(starts[-1] + len(line))
    return starts


def _string_parts(token: tokenize.TokenInfo) -> tuple[str, str, str]:
    """(prefix, quote, body) of a string token."""
    prefix = STRING_PREFIX.match(token.string).group(0)
    rest = token.string[len(prefix) :]
    quote = rest[:3] if rest[:3] in ('"""', "'''") else rest[0]
    return prefix, quote, rest[len(quote) : -len(quote)]


def _target_names(target: ast.expr | None) -> Iterator[tuple[str, str]]:
    """(bucket, name) for what an assignment target binds: variables and attributes."""
    if isinstance(target, ast.Name):
        yield "variables", target.id
    elif isinstance(target, ast.Attribute):
        yield "attributes", target.attr
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _target_names(element)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


class _Collector:
    """Find what the snippet defines, and what must keep its name (in source order)."""

    def __init__(self, source: _Source) -> None:
        self.source = source
        self.buckets: dict[str, list] = {"classes": [], "functions": [], "variables": [], "attributes": []}
        self.imported: set[str] = set()
        self.foreign_keywords: set[str] = set()

    def add(self, bucket: str, name: object) -> None:
        if name not in self.buckets[bucket]:
            self.buckets[bucket].append(name)

    def run(self, tree: ast.Module) -> None:
        events = sorted(self._events(tree), key=lambda event: event[0])
        for _, handle in events:
            handle()

    def _events(self, tree: ast.Module) -> Iterator[tuple[tuple[int, int, int], object]]:
        """(position, action) for every node the collector reads: actions run in source order."""
        for order, node in enumerate(ast.walk(tree)):
            position = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0), order)
            if isinstance(node, ast.ClassDef):
                yield position, lambda node=node: self.add("classes", node.name)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield position, lambda node=node: self.add("functions", node.name)
            elif isinstance(node, ast.arg):
                yield position, lambda node=node: self.add("variables", node.arg)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                yield position, lambda node=node: self._import(node)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    yield (target.lineno, target.col_offset, order), lambda target=target: self._bind(target)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
                yield (node.target.lineno, node.target.col_offset, order), lambda node=node: self._bind(node.target)
            elif isinstance(node, ast.comprehension):
                yield (node.target.lineno, node.target.col_offset, order), lambda node=node: self._bind(node.target)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                target = node.optional_vars
                yield (target.lineno, target.col_offset, order), lambda target=target: self._bind(target)
            elif isinstance(node, ast.ExceptHandler) and node.name is not None:
                yield position, lambda node=node: self.add("variables", node.name)
            elif isinstance(node, ast.Call):
                yield position, lambda node=node: self._call(node)

    def _bind(self, target: ast.expr) -> None:
        for bucket, name in _target_names(target):
            self.add(bucket, name)

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name == "*":
                return
            if alias.asname is not None:
                self.add("variables", alias.asname)
            bound = alias.asname or alias.name
            self.imported.add(bound.split(".")[0] if isinstance(node, ast.Import) else bound)

    def _call(self, node: ast.Call) -> None:
        callee = node.func
        called = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", None)
        index = 0 if isinstance(callee, ast.Attribute) else 1
        arguments = _arguments_in_order(node)
        if called in NAME_REGISTRARS and len(arguments) > index:
            token = self.source.single_string(arguments[index])
            if token is not None:
                self.add("attributes", arguments[index].value)
        own = isinstance(callee, ast.Name) and callee.id not in self.imported
        if not own:
            self.foreign_keywords.update(k.arg for k in node.keywords if k.arg is not None)


def _arguments_in_order(call: ast.Call) -> list[ast.expr]:
    """The values of a call's arguments, positional and keyword, in the order they are written."""
    written = [(a.lineno, a.col_offset, a.value if isinstance(a, ast.Starred) else a) for a in call.args]
    written += [(k.lineno, k.col_offset, k.value) for k in call.keywords]
    return [value for _, _, value in sorted(written, key=lambda item: item[:2])]


def _string_edits(tree: ast.Module, source: _Source, names: dict) -> Iterator[tuple[tokenize.TokenInfo, str]]:
    """New text for the strings that name attributes (``register_buffer("mask", ...)``) and for the
    dim names of jaxtyping annotations (``Float[Tensor, "b d_model"]``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            callee = node.func
            called = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", None)
            index = 0 if isinstance(callee, ast.Attribute) else 1
            arguments = _arguments_in_order(node)
            if called in NAME_REGISTRARS and len(arguments) > index:
                token = source.single_string(arguments[index])
                if token is not None and arguments[index].value in names:
                    yield token, repr(names[arguments[index].value])
        elif isinstance(node, ast.Subscript):
            head = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", None)
            if head is None or not JAXTYPING_TYPES.fullmatch(head):
                continue
            for element in _subscript_elements(node, source):
                token = source.single_string(element)
                if token is None:
                    continue
                prefix, quote, body = _string_parts(token)
                if prefix == "":
                    renamed = WORD.sub(lambda match: names.get(match.group(0), match.group(0)), body)
                    yield token, f"{quote}{renamed}{quote}"


def _subscript_elements(node: ast.Subscript, source: _Source) -> list[ast.expr]:
    """The comma-separated elements between the brackets (a parenthesised tuple is one element)."""
    index = node.slice
    if isinstance(index, ast.Tuple) and index.elts:
        first = index.elts[0]
        parenthesised = (index.lineno, index.col_offset) != (first.lineno, first.col_offset)
        if not parenthesised:
            return list(index.elts)
    return [index]


def _fstring_edits(token: tokenize.TokenInfo, names: dict) -> str:
    """An f-string token (Python < 3.12 keeps it whole) with the names of its expressions renamed."""
    prefix, quote, body = _string_parts(token)
    return f"{prefix}{quote}{_rename_fields(body, names)}{quote}"


def _rename_fields(text: str, names: dict) -> str:
    """The literal text of an f-string with its ``{expression!conversion:spec}`` fields renamed."""
    out: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        if char in "{}" and text[position : position + 2] in ("{{", "}}"):
            out.append(text[position : position + 2])
            position += 2
        elif char == "{":
            end = _expression_end(text, position + 1)
            out.append("{" + _rename_expression(text[position + 1 : end], names))
            position = end
            if text[position : position + 1] == "=":
                out.append("=")
                position += 1
            if text[position : position + 1] == "!":
                out.append(text[position : position + 2])
                position += 2
            if text[position : position + 1] == ":":
                closing = _field_end(text, position + 1)
                out.append(":" + _rename_fields(text[position + 1 : closing], names))
                position = closing
            out.append("}")
            position += 1
        else:
            out.append(char)
            position += 1
    return "".join(out)


def _expression_end(text: str, start: int) -> int:
    """Where the expression of a field starting at ``start`` ends: at a top-level ``}``, ``!``
    (not ``!=``), ``:`` or a self-documenting ``=``."""
    depth = 0
    position = start
    while position < len(text):
        char = text[position]
        if char in "'\"":
            closing = text.find(char, position + 1)
            position = len(text) if closing < 0 else closing + 1
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                return position
            depth -= 1
        elif depth == 0 and char == "!" and text[position + 1 : position + 2] != "=":
            return position
        elif depth == 0 and char == ":":
            return position
        elif depth == 0 and char == "=" and text[position + 1 : position + 2] in ("}", "!", ":") and text[position - 1] not in "=!<>":
            return position
        position += 1
    return position


def _field_end(text: str, start: int) -> int:
    """The ``}`` that closes a format spec starting at ``start`` (specs may nest ``{...}``)."""
    depth = 0
    for position in range(start, len(text)):
        if text[position] == "{":
            depth += 1
        elif text[position] == "}":
            if depth == 0:
                return position
            depth -= 1
    return len(text)


def _rename_expression(expression: str, names: dict) -> str:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(expression).readline))
    except (tokenize.TokenError, SyntaxError):
        return expression
    starts = _line_starts(expression)
    out, last = [], 0
    for token in tokens:
        if token.type == tokenize.NAME and token.string in names and not keyword.iskeyword(token.string):
            text = names[token.string]
        elif token.type == tokenize.STRING and "f" in STRING_PREFIX.match(token.string).group(0).lower():
            text = _fstring_edits(token, names)  # an f-string inside an f-string's expression
        else:
            continue
        begin = starts[token.start[0] - 1] + token.start[1]
        out.append(expression[last:begin] + text)
        last = begin + len(token.string)
    return "".join(out) + expression[last:]


def rename(code: str, protected: Iterable[str] = (), keep_words: re.Pattern[str] | None = None) -> str:
    """``code`` with every user-defined identifier renamed consistently (see the module docstring)."""
    tree = ast.parse(code)
    source = _Source(code)
    found = _Collector(source)
    found.run(tree)
    kept = set(dir(builtins)) | KEEP | found.imported | found.foreign_keywords | set(protected)
    names: dict = {}
    prefixes = (("C", "classes"), ("f", "functions"), ("v", "variables"), ("a", "attributes"))
    for prefix, bucket in prefixes:
        for old in found.buckets[bucket]:
            if old in kept or old in names or (old.startswith("__") and old.endswith("__")):
                continue
            word = keep_words.search(old) if keep_words else None
            names[old] = f"{word.group(0)}_{prefix}{len(names)}" if word else f"{prefix}{len(names)}"
    edits: dict[tuple[int, int], tuple[int, str]] = {}
    for token, text in _string_edits(tree, source, names):
        edits[token.start] = (source.offset(*token.end), text)
    for token in source.tokens:
        if token.start in edits:
            continue
        if token.type == tokenize.NAME and token.string in names and not keyword.iskeyword(token.string):
            edits[token.start] = (source.offset(*token.end), names[token.string])
        elif token.type == tokenize.STRING and "f" in STRING_PREFIX.match(token.string).group(0).lower():
            renamed = _fstring_edits(token, names)
            if renamed != token.string:
                edits[token.start] = (source.offset(*token.end), renamed)
    out, last = [], 0
    for start in sorted(edits):
        begin = source.offset(*start)
        end, text = edits[start]
        out.append(code[last:begin] + text)
        last = end
    return "".join(out) + code[last:]
