"""Source positions for the few nodes that are reported.

libcst's ``PositionProvider`` costs about two parses, so it runs only for a file that has something
to report, once, on the same tree (``unsafe_skip_copy``) so that the engine's nodes keep their
identity.
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from shapecheck.diagnostics import Fix, Span


class PositionIndex:
    """Lazily computed positions of the nodes of one module."""

    def __init__(self, module: cst.Module) -> None:
        self._module = module
        self._positions: dict[cst.CSTNode, CodeRange] | None = None

    def _table(self) -> dict[cst.CSTNode, CodeRange]:
        if self._positions is None:
            wrapper = MetadataWrapper(self._module, unsafe_skip_copy=True)
            self._positions = dict(wrapper.resolve(PositionProvider))
        return self._positions

    def __contains__(self, node: cst.CSTNode) -> bool:
        return node in self._table()

    def span(self, node: cst.CSTNode) -> Span:
        code_range = self._table().get(node)
        if code_range is None:
            return Span(1, 1, 1, 1)
        return Span(
            code_range.start.line,
            code_range.start.column + 1,
            code_range.end.line,
            code_range.end.column + 1,
        )

    def with_spans(self, fix: Fix) -> Fix:
        edits = tuple(
            replace(edit, span=self.span(edit.node), content=self._module.code_for_node(edit.replacement))
            for edit in fix.edits
        )
        return replace(fix, edits=edits)
