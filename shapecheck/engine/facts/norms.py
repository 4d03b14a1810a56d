"""Layer norms as rules see them: where a LayerNorm ran, on what, over which trailing shape.

``layer_norm_sites`` covers ``nn.LayerNorm(normalized_shape)`` modules called on a tensor and
``F.layer_norm(x, normalized_shape)``. ``normalized`` is the tuple of dims the norm was built for
(``LayerNorm(d)`` is ``(d,)``, ``F.layer_norm(x, x.shape[1:])`` is x's trailing dims), or None
when the engine cannot read it.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from shapecheck.engine.domain.layers import SHAPE_PRESERVING, torch_layer
from shapecheck.engine.domain.tags import AttentionOutputTag
from shapecheck.engine.domain.values import (
    ModuleValue,
    PositionTag,
    ShapeValue,
    TensorValue,
    TokenEmbeddingTag,
    TupleValue,
    Value,
    dim_of,
)
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.engine.symbolic.dims import Dim


@dataclass(frozen=True)
class LayerNormSite:
    """One application of a layer norm."""

    event: OpEvent
    node: cst.CSTNode
    input: TensorValue
    normalized: tuple[Dim, ...] | None
    functional: bool


def normalized_dims(value: Value | None) -> tuple[Dim, ...] | None:
    """``d``, ``(t, d)``, ``[d]``, ``x.shape[1:]`` as a tuple of dims."""
    if value is None:
        return None
    if isinstance(value, ShapeValue):
        shape = value.shape
        return shape.dims if shape is not None and not shape.variadic else None
    if isinstance(value, TupleValue):
        dims = [dim_of(item) for item in value.items]
        return tuple(dims) if dims and all(d is not None for d in dims) else None  # type: ignore[arg-type]
    dim = dim_of(value)
    return (dim,) if dim is not None else None


def layer_norm_sites(facts: FileFacts) -> list[LayerNormSite]:
    sites = []
    for event in facts.events_of("module.LayerNorm"):
        module = event.arg(0)
        if isinstance(module, ModuleValue):
            normalized = normalized_dims(module.params.get("normalized_shape"))
            sites.append(LayerNormSite(event, event.node, event.tensor(1, "input"), normalized, False))
    for event in facts.events_of("layer_norm"):
        if not event.has_arg(1, "normalized_shape"):
            continue
        normalized = normalized_dims(event.arg(1, "normalized_shape"))
        sites.append(LayerNormSite(event, event.node, event.tensor(0, "input"), normalized, True))
    return sites


def width_taken_after(facts: FileFacts, module: Value) -> Dim | None:
    """The width the first Linear after ``module`` in an applied ``nn.Sequential`` takes, past
    layers that keep any shape (dropouts, activations): the width ``module``'s output must have
    (``nn.Sequential(nn.LayerNorm(d), nn.Linear(d, vocab))``). None when no such Linear follows."""
    for event in facts.events_of("module.Sequential"):
        chain = event.arg(0)
        if not isinstance(chain, ModuleValue):
            continue
        items = [torch_layer(item) for item in chain.items]
        found = next((index for index, item in enumerate(chain.items) if item is module), None)
        if found is None:
            continue
        for item in items[found + 1:]:
            if isinstance(item, ModuleValue) and item.kind in SHAPE_PRESERVING:
                continue
            if isinstance(item, ModuleValue) and item.kind == "Linear":
                return dim_of(item.param("in_features"))
            break
    return None


def sequence_lengths(facts: FileFacts) -> list[Dim]:
    """Sizes that are sequence lengths, by provenance: the rows of an embedding looked up with
    positions (``max_len``, ``block_size``) and the length of a positional table or lookup (the
    rows of a table gathered with position ids, ``self.pos_encoding[position_ids]``)."""
    lengths: list[Dim] = []
    for event in facts.events_of("module.Embedding"):
        module, result = event.arg(0), event.result
        if isinstance(module, ModuleValue) and isinstance(result, TensorValue) and result.has(PositionTag) and result.tag(PositionTag).kind != "unknown":
            rows = dim_of(module.params.get("num_embeddings")) if module.params.get("num_embeddings") is not None else None
            if rows is not None and rows not in lengths:
                lengths.append(rows)
    for event in facts.events:
        # A table's lookup is an operand of the op that uses it (``self.pe[position_ids]`` is no op
        # of its own), so operands count as well as results.
        for value in (event.result, *event.args, *event.kwargs.values()):
            if not isinstance(value, TensorValue):
                continue
            tag = value.tag(PositionTag)
            if tag is not None and tag.kind == "table" and tag.full_length is not None and tag.full_length not in lengths:
                lengths.append(tag.full_length)
    for length in list(lengths):
        # A learned positional table with an offset (BART / OPT / MBart: ``max_positions + 2`` rows,
        # looked up at ``positions + 2``): the length it serves is ``max_positions``.
        offset = length.constant_term
        if offset is not None and 0 < offset <= MAX_TABLE_OFFSET:
            served = length - offset
            if served.name is not None and served not in lengths:
                lengths.append(served)
    return lengths


#: Rows a positional table keeps before its positions (padding, a class token, BART's 2).
MAX_TABLE_OFFSET = 4


def is_token_sequence(tensor: TensorValue) -> bool:
    """Token states ``(b, t, d)`` of a sequence model: computed from token embeddings, positions or
    attention outputs (by provenance)."""
    if tensor.has(TokenEmbeddingTag) or tensor.has(AttentionOutputTag):
        return True
    position = tensor.tag(PositionTag)
    return position is not None and position.kind in ("added", "embedding")
