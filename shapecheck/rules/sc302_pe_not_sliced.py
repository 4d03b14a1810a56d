"""SC302 pe-not-sliced."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from shapecheck.diagnostics import Edit, Fix, Severity
from shapecheck.engine.domain.tags import ParameterTag
from shapecheck.engine.domain.values import (
    Opaque,
    PositionTag,
    TensorValue,
    TokenEmbeddingTag,
    as_tensor,
)
from shapecheck.engine.domain.joins import may_agree_on_a_path
from shapecheck.engine.facts.queries import in_some_context
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.engine.symbolic.dims import Dim, Truth, equal
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class PeNotSliced(Rule):
    """The whole max_len positional table added to a shorter sequence.

    ## What it does
    Finds an addition of a positional table (a `max_len x d_model` buffer or parameter, recognised
    by how it was built) to a sequence of token embeddings when the table was not sliced to the
    sequence length and its length is not provably the sequence length.

    ## Why is this bad?
    `(B, T, d) + (max_len, d)` cannot broadcast unless T happens to equal max_len: training
    crashes with `The size of tensor a (T) must match the size of tensor b (max_len)`, or works
    only for full-length batches and fails on the first shorter one.

    ## Example
    ```python
    x = self.tok_emb(idx) + self.pe
    ```

    ## Use instead
    ```python
    x = self.tok_emb(idx) + self.pe[: idx.size(1)]
    ```
    """

    code = "SC302"
    name = "pe-not-sliced"
    severity = Severity.ERROR
    fixable = True
    summary = "Whole max_len positional table added to a length-T sequence without slicing."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        adds = [e for e in facts.events_of("binary") if getattr(e.kwargs.get("operator"), "value", None) == "add"]
        def known(dim) -> bool:
            return not facts.made_up(dim)

        for event in in_some_context(adds, lambda e: _unsliced(e, known) is not None):
            table_index, length, seq = _unsliced(event, known)  # type: ignore[misc]
            yield Report(
                event.arg_node(table_index) or event.node,
                f"positional table of length {length} added unsliced to a sequence of length {seq}",
                hint="slice the table to the sequence length",
                fix=_fix(event, table_index),
            )


def _unsliced(event: OpEvent, known=lambda dim: True):
    """(operand index of the table, its length, the sequence length) for an unsliced table."""
    if not all(isinstance(arg, (TensorValue, Opaque)) for arg in event.args[:2]):
        return None
    tensors = [as_tensor(event.arg(0)), as_tensor(event.arg(1))]
    for index, table in enumerate(tensors):
        other = tensors[1 - index]
        length = _table_length(table, other)
        if length is None or _table_length(other, table) is not None:
            continue  # two whole tables: a sum of configured maxima, no sequence
        seq = _sequence_dim(table, other, length)
        if seq is None:
            continue
        if equal(seq, length, event.assumptions) is Truth.TRUE or (seq.is_const and seq.value == 1):
            continue
        if not known(seq) or not known(length):
            continue  # a length the engine made up says nothing about the table
        if _same_formula(seq, length) or may_agree_on_a_path(seq, length):
            continue
        return index, length, seq
    return None


def _same_formula(seq, length) -> bool:
    """The sequence length is the table's length computed from the input's sizes instead of the
    configured ones: ``(height // p) * (width // p) + 1`` patches against a table of
    ``(image_size // p) ** 2 + 1``. The table was made for exactly that many tokens, and the code
    checks the input size (or interpolates the table) where it reads it, so this is not an
    unsliced maximum-length table. Two plain sizes (``T`` against ``max_len``) are not a formula.
    Analysed alone with the configured defaults, the table's length is a number (``224 // 16``)
    while the tokens are still a formula of the input's sizes with the strides of a conv stem in
    it (``((height - 1) // 2 + 1) // 4``): the same contract, an input of the configured size."""
    if seq.name is not None or seq.is_const:
        return False
    if length.is_const:
        return bool(seq.floor_divisions())
    if length.name is not None:
        return False
    common = Dim.sym("size")
    try:
        left = seq.substitute({symbol: common for symbol in seq.symbols()})
        right = length.substitute({symbol: common for symbol in length.symbols()})
    except (ArithmeticError, ValueError):  # a divisor renamed to 0, or DimTooComplex: no claim
        return False
    return equal(left, right) is Truth.TRUE


def _table_length(table: TensorValue, other: TensorValue):
    """The length of a positional table that was not sliced to the sequence, else None. For a
    per-position parameter, the rows it was declared with: cut to the sequence, it has no axis of
    that length left (``_sequence_dim`` finds none); transposed or permuted, it still has one."""
    tag = table.tag(PositionTag)
    if tag is not None and tag.kind == "table" and not tag.sliced and tag.full_length is not None:
        # A 2-d grid's cells, flattened: a table for images of that grid; its first rows are not
        # the positions of a shorter sequence.
        return None if tag.flattened_grid else tag.full_length
    parameter = table.tag(ParameterTag)
    if parameter is not None and parameter.per_position and other.has(TokenEmbeddingTag):
        return parameter.shape.dims[-2]
    return None


def _sequence_dim(table: TensorValue, other: TensorValue, length):
    """The other operand's dim aligned (from the right) with the table's length axis."""
    if table.shape is None or other.shape is None or table.shape.variadic:
        return None
    dims = table.shape.dims
    positions = [i for i, d in enumerate(dims) if d == length]
    if not positions:
        return None
    offset = len(dims) - positions[0]
    return other.shape.dim(-offset)


def _fix(event: OpEvent, table_index: int) -> Fix | None:
    table_node = event.arg_node(table_index)
    other_node = event.arg_node(1 - table_index)
    table = as_tensor(event.arg(table_index))
    if not isinstance(table_node, (cst.Name, cst.Attribute)) or not isinstance(other_node, (cst.Name, cst.Attribute)):
        return None
    if table.shape is None or table.shape.variadic:
        return None
    length = _table_length(table, as_tensor(event.arg(1 - table_index)))
    axes = [i for i, d in enumerate(table.shape.dims) if d == length]
    if not axes:
        return None
    axis = axes[0]
    offset = table.shape.rank - axis
    length = cst.Call(
        func=cst.Attribute(value=other_node, attr=cst.Name("size")),
        args=[cst.Arg(cst.UnaryOperation(cst.Minus(), cst.Integer(str(offset))))],
    )
    elements = [cst.SubscriptElement(cst.Slice(lower=None, upper=None)) for _ in range(axis)]
    elements.append(cst.SubscriptElement(cst.Slice(lower=None, upper=length)))
    return Fix("slice the positional table to the sequence length", (Edit(table_node, cst.Subscript(value=table_node, slice=elements)),))
