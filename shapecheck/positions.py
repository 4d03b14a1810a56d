"""Source positions for the few nodes that are reported.

Positions are computed only for a file that has something to report, once, on the same tree, so
that the engine's nodes keep their identity. They are libcst's ``PositionProvider`` positions
(syntactic: leading whitespace and comments excluded), computed by one code generation pass that tracks
lines and columns as libcst's ``PositionProvidingCodegenState`` does, without the metadata machinery
around it (``tests/test_positions.py`` checks the tables are the same).
"""

from __future__ import annotations

import re
from dataclasses import replace

import libcst as cst
from libcst._nodes.internal import CodegenState

from shapecheck.diagnostics import Fix, Span


_NEWLINE = re.compile(r"\r\n?|\n")


class PositionIndex:
    """Lazily computed positions of the nodes of one module."""

    def __init__(self, module: cst.Module) -> None:
        self._module = module
        self._positions: dict[cst.CSTNode, tuple[tuple[int, int], tuple[int, int]]] | None = None

    def _table(self) -> dict[cst.CSTNode, tuple[tuple[int, int], tuple[int, int]]]:
        if self._positions is None:
            self._positions = positions(self._module)
        return self._positions

    def __contains__(self, node: cst.CSTNode) -> bool:
        return node in self._table()

    def span(self, node: cst.CSTNode) -> Span:
        found = self._table().get(node)
        if found is None:
            return Span(1, 1, 1, 1)
        (line, column), (end_line, end_column) = found
        return Span(line, column + 1, end_line, end_column + 1)

    def with_spans(self, fix: Fix) -> Fix:
        edits = tuple(
            replace(edit, span=self.span(edit.node), content=self._module.code_for_node(edit.replacement))
            for edit in fix.edits
        )
        return replace(fix, edits=edits)


def positions(module: cst.Module) -> dict[cst.CSTNode, tuple[tuple[int, int], tuple[int, int]]]:
    """Every node's ``PositionProvider`` range as ``((line, column), (line, column))``, lines from
    1 and columns from 0: the table a ``MetadataWrapper`` resolves, without building it."""
    state = _PositionState(module.default_indent, module.default_newline)
    module._codegen(state)
    return state.table


class _PositionState(CodegenState):
    """libcst's position-tracking code generation (``PositionProvidingCodegenState``), keeping
    plain tuples, with a fast path for the tokens without a line break (nearly all of them)."""

    def __init__(self, default_indent: str, default_newline: str) -> None:
        super().__init__(default_indent=default_indent, default_newline=default_newline)
        self.line = 1
        self.column = 0
        self.table: dict[cst.CSTNode, tuple[tuple[int, int], tuple[int, int]]] = {}
        self._starts: list[tuple[int, int]] = []

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self._advance(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self._advance(value)

    def _advance(self, value: str) -> None:
        if "\n" not in value and "\r" not in value:
            self.column += len(value)
            return
        segments = _NEWLINE.split(value)
        self.line += len(segments) - 1
        self.column = len(segments[-1])

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._starts.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._starts.pop()
        if node not in self.table:  # a syntactic position recorded inside wins
            self.table[node] = (start, (self.line, self.column))

    def record_syntactic_position(  # type: ignore[override]
        self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None, end_node: cst.CSTNode | None = None
    ) -> "_Syntactic":
        return _Syntactic(self, node, start_node, end_node)


class _Syntactic:
    """The span of a node without its leading whitespace, or hoisted from its first and last
    children (``record_syntactic_position``)."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: _PositionState, node: cst.CSTNode, start_node: cst.CSTNode | None, end_node: cst.CSTNode | None) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc: object) -> None:
        state = self.state
        start = state.table[self.start_node][0] if self.start_node is not None else self.start
        end = state.table[self.end_node][1] if self.end_node is not None else (state.line, state.column)
        state.table[self.node] = (start, end)
