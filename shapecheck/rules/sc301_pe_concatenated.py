"""SC301 pe-concatenated."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from shapecheck.diagnostics import Edit, Fix, Severity
from shapecheck.engine.domain.tags import ParameterTag, Permuted, Reordered
from shapecheck.engine.domain.values import (
    PositionTag,
    TensorValue,
    TokenEmbeddingTag,
    TupleValue,
    as_tensor,
    int_of,
    positional_features,
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
    sinusoidal table), and of any tensor and a per-token table built with a batch axis of 1,
    `(1, max_len, d)`, which was made to be broadcast-added (`torch.cat` does not broadcast).
    Token embeddings and positional information are recognised by where they came from, not by
    their names.

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
                "positional encoding concatenated to the token features along the feature axis; "
                "this doubles the width instead of adding position information",
                hint="add them: tok + pos",
                fix=_fix(event),
            )


def _concatenates_positions(event: OpEvent) -> bool:
    items = event.arg(0, "tensors")
    if not isinstance(items, TupleValue) or len(items.items) < 2:
        return False
    tensors = [as_tensor(item) for item in items.items]
    positions = [t for t in tensors if _positional(t) and not t.has(TokenEmbeddingTag)]
    others = [t for t in tensors if not any(t is p for p in positions)]
    tokens = [t for t in others if _token_features(t, positions)]
    if not positions or not others:
        return False
    if not tokens and not (len(tensors) == 2 and _made_to_broadcast(positions[0], others[0])):
        return False
    axis = int_of(event.arg(1, "dim")) if event.has_arg(1, "dim") else 0
    if axis is None:
        return False
    if axis == -1:
        return True
    ranks = {t.rank for t in tensors}
    return len(ranks) == 1 and None not in ranks and axis == next(iter(ranks)) - 1  # type: ignore[operator]


def _made_to_broadcast(table: TensorValue, other: TensorValue) -> bool:
    """A table of one row per token made to be added (by broadcasting) to a batch of token
    features, concatenated to one other tensor: built with a batch axis of 1, ``(1, max_len, d)``
    (or ``(1, blocks, len, d)``), or of a lower rank than the other tensor (``(max_len, d)`` beside
    ``(b, t, d)``). ``torch.cat`` does not broadcast, so whatever the other operand is,
    concatenating this table along the features is a bug; a table meant to be concatenated is
    expanded to the batch first (``pos.expand(b, -1, -1)``), which this is not."""
    shape = table.shape
    if shape is None:
        # Resampled by a function the engine cannot see (``resample_abs_pos_embed(self.pos_embed,
        # new_size)``: a table of positions alone, ``ops.base.positions_only``): still the parameter,
        # with the batch axis of 1 it was declared with. (Indexed by kept patches or expanded to a
        # batch of unknown size, its shape is unknown too, and it is no claim.)
        position = table.tag(PositionTag)
        if position is None or position.kind != "table":
            return False
        parameter = table.tag(ParameterTag)
        declared = parameter.shape if parameter is not None and parameter.per_position else None
        if declared is None or declared.variadic or declared.rank is None or declared.rank < 3:
            return False
        first = declared.dims[0]
        return first.is_const and first.value == 1
    if shape.variadic:
        return False
    if other.shape is not None and not other.shape.variadic and shape.rank < other.shape.rank:
        return True
    first = shape.dims[0]
    if shape.rank >= 3 and first.is_const and first.value == 1:
        return True
    # The batch axis of 1 elsewhere: CLIP's attention pool keeps its tokens sequence-first,
    # ``(L, N, C)``, and its table ``(L, C)`` made ``(L, 1, C)`` by ``[:, None, :]`` to be added to
    # them; the other operand has a batch there that is not 1.
    if shape.rank < 3 or other.shape is None or other.shape.variadic or other.shape.rank != shape.rank:
        return False
    return any(
        _is_one(mine) and not _is_one(theirs) and not (mine == theirs)
        for mine, theirs in zip(shape.dims[:-1], other.shape.dims[:-1])
    )


def _is_one(dim: object) -> bool:
    return getattr(dim, "is_const", False) and getattr(dim, "value", None) == 1


def _token_features(tensor: TensorValue, positions: list[TensorValue]) -> bool:
    """Token embeddings whose last axis is still the embedding's feature axis: known from their
    shape, or, when the shape was lost on the way, from a positional operand as wide as the
    embedding (built to be added to it)."""
    tag = tensor.tag(TokenEmbeddingTag)
    if tag is None:
        return False
    if tensor.shape is None:
        return tag.width is not None and any(_last_is(position, tag.width) for position in positions)
    if tag.width is not None and _last_is(tensor, tag.width):
        return True
    # Projected since the lookup (OPT's ``project_in``: the embedding's width is not the model's),
    # its last axis as wide as a positional operand's, which was built to be added to it; not
    # while its axes are reordered (the last axis may be the sequence's then).
    last = tensor.shape.dim(-1)
    if last is None or tensor.has(Permuted) or tensor.has(Reordered):
        return False
    return any(_last_is(position, last) for position in positions)


def _last_is(tensor: TensorValue, width: object) -> bool:
    last = tensor.shape.dim(-1) if tensor.shape is not None else None
    return last is not None and equal(last, width) is Truth.TRUE  # type: ignore[arg-type]


def _positional(tensor: TensorValue) -> bool:
    """A positional table or embedding: built from positions (a sinusoidal encoding computed from
    ``arange`` too), or a per-position parameter."""
    if positional_features(tensor):
        return True
    parameter = tensor.tag(ParameterTag)
    if parameter is None:
        return False
    if parameter.per_position:
        return True
    # A buffer registered from a value the engine cannot see (``torch.from_numpy(table)``), cut or
    # reshaped into a per-token table with a batch axis of 1, ``(1, N, d)``: made to broadcast.
    shape = tensor.shape
    if parameter.shape is not None or shape is None or shape.variadic or shape.rank is None or shape.rank < 3:
        return False
    first, rows = shape.dims[0], shape.dims[-2]
    return first.is_const and first.value == 1 and not (rows.is_const and rows.value == 1)


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
