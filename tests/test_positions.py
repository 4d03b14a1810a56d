"""Positions of reported nodes are libcst's ``PositionProvider`` positions, computed without the
metadata machinery (``shapecheck.positions``): the two tables agree node for node."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from conftest import REPO
from shapecheck.positions import PositionIndex, positions

TRICKY = {
    "crlf": "import torch\r\n\r\n\r\ndef f(x):\r\n    return x @ x.T\r\n",
    "old mac newlines": "x = 1\ry = [1,\r 2]\r",
    "tabs and comments": "class A:\n\t# a comment\n\tdef f(self):  # trailing\n\t\treturn (1 +\n\t\t\t2)\n",
    "decorators and strings": '@dec\n@other(1)\ndef f():\n    """doc\n    lines"""\n    s = f"{1}" "x"\n    return s\n',
    "no final newline": "x = [\n    1,\n]\ny = x",
    "empty": "",
    "backslash continuation": "total = 1 + \\\n    2\n",
}


def _reference(module: cst.Module) -> dict:
    table = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {node: ((r.start.line, r.start.column), (r.end.line, r.end.column)) for node, r in table.items()}


@pytest.mark.parametrize("source", TRICKY.values(), ids=TRICKY.keys())
def test_positions_equal_libcst_positions(source: str) -> None:
    module = cst.parse_module(source)
    assert positions(module) == _reference(module)


def test_positions_equal_libcst_positions_on_the_shipped_code() -> None:
    # The bug examples (one per rule, every style) and the reference model's attention: a sample
    # that keeps the test fast, the comparison on real model code is the benchmark's.
    files = sorted(REPO.glob("examples/bugs/*.py")) + [REPO / "reference_model" / "attention.py"]
    assert len(files) > 20 and all(path.is_file() for path in files)
    for path in files:
        module = cst.parse_module(path.read_text())
        assert positions(module) == _reference(module), path


def test_a_span_counts_columns_from_one_and_unknown_nodes_get_the_first_column() -> None:
    module = cst.parse_module("x = 1\nvalue = f(x)\n")
    call = module.body[1].body[0].value  # type: ignore[attr-defined]
    index = PositionIndex(module)
    span = index.span(call)
    assert (span.line, span.column, span.end_line, span.end_column) == (2, 9, 2, 13)
    assert call in index and cst.Name("elsewhere") not in index
    missing = index.span(cst.Name("elsewhere"))
    assert (missing.line, missing.column) == (1, 1)
