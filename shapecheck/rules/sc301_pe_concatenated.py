"""SC301 pe-concatenated."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from shapecheck.diagnostics import Edit, Fix, Severity
from shapecheck.engine.domain.tags import ParameterTag
from shapecheck.engine.domain.values import (
    PositionTag,
    TensorValue,
    TokenEmbeddingTag,
    TupleValue,
    as_tensor,
    int_of,
)
from shapecheck.engine.facts.queries import in_some_context
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.engine.symbolic.dims import Truth, equal
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class PeConcatenated(Rule):
    """Positional encoding concatenated to the token embeddings instead of added.

    ## What it does
    Finds `torch.cat` along the feature (last) axis of a token-embedding tensor and a positional
    tensor (a positional table, a position embedding looked up with `arange` indices, or a
    sinusoidal table). Token embeddings and positional information are recognised by where they
    came from, not by their names.

    ## Why is this bad?
    Concatenation doubles the feature width: the next layer built for `d_model` crashes with
    `mat1 and mat2 shapes cannot be multiplied`, or, if it was sized `2 * d_model` to make it run,
    every later layer works on a representation in which position and content sit in separate
    halves instead of one shared space, unlike every Transformer it is compared with.

    ## Example
    ```python
    x = torch.cat([tok_emb, pos_emb], dim=-1)
    ```

    ## Use instead
    ```python
    x = tok_emb + pos_emb
    ```
    """

    code = "SC301"
    name = "pe-concatenated"
    severity = Severity.ERROR
    fixable = True
    summary = "Positional encoding concatenated to token embeddings instead of added."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        for event in in_some_context(facts.events_of("cat"), _concatenates_positions):
            yield Report(
                event.node,
                "positional encoding concatenated to the token embeddings along the feature axis; "
                "this doubles the width instead of adding position information",
                hint="add them: tok + pos",
                fix=_fix(event),
            )


def _concatenates_positions(event: OpEvent) -> bool:
    items = event.arg(0, "tensors")
    if not isinstance(items, TupleValue) or len(items.items) < 2:
        return False
    tensors = [as_tensor(item) for item in items.items]
    tokens = [t for t in tensors if _token_features(t) and not _positional(t)]
    positions = [t for t in tensors if _positional(t) and not t.has(TokenEmbeddingTag)]
    if not tokens or not positions:
        return False
    axis = int_of(event.arg(1, "dim")) if event.has_arg(1, "dim") else 0
    if axis is None:
        return False
    if axis == -1:
        return True
    ranks = {t.rank for t in tensors}
    return len(ranks) == 1 and None not in ranks and axis == next(iter(ranks)) - 1  # type: ignore[operator]


def _token_features(tensor: TensorValue) -> bool:
    """Token embeddings whose last axis is still the embedding's feature axis."""
    tag = tensor.tag(TokenEmbeddingTag)
    if tag is None or tag.width is None or tensor.shape is None:
        return False
    last = tensor.shape.dim(-1)
    return last is not None and equal(last, tag.width) is Truth.TRUE


def _positional(tensor: TensorValue) -> bool:
    """A positional table or embedding: built from positions, or a per-position parameter."""
    tag = tensor.tag(PositionTag)
    if tag is not None and tag.kind in ("table", "embedding", "learned"):
        return True
    parameter = tensor.tag(ParameterTag)
    return parameter is not None and parameter.per_position


def _fix(event: OpEvent) -> Fix | None:
    node = event.node
    sequence = event.arg_node(0, "tensors")
    if not isinstance(node, cst.Call) or not isinstance(sequence, (cst.List, cst.Tuple)) or len(sequence.elements) != 2:
        return None
    if any(isinstance(e, cst.StarredElement) for e in sequence.elements):
        return None
    left, right = (element.value for element in sequence.elements)
    replacement = cst.BinaryOperation(
        left=left,
        operator=cst.Add(whitespace_before=cst.SimpleWhitespace(" "), whitespace_after=cst.SimpleWhitespace(" ")),
        right=right,
        lpar=list(node.lpar),
        rpar=list(node.rpar),
    )
    return Fix("add the positional encoding instead of concatenating it", (Edit(node, replacement),))
