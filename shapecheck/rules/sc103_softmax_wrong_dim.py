"""SC103 softmax-wrong-dim."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from shapecheck.diagnostics import Severity
from shapecheck.engine.domain.tags import AttentionOutputTag
from shapecheck.engine.domain.values import ScoresTag
from shapecheck.engine.facts.queries import (
    attention_facts,
    attention_softmaxes,
    in_every_context,
    softmax_dim,
)
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class SoftmaxWrongDim(Rule):
    """Softmax over attention scores on an axis other than the key axis.

    ## What it does
    Finds a softmax over attention scores whose `dim` is not the key axis, including a softmax
    with no `dim` at all (PyTorch then picks dim 1 for 4-D scores). The key axis is read from the
    code, not assumed: it is the axis of the probabilities that is contracted with the values
    (`attn @ v`, or the shared index of `einsum("bhij,bhjd->bhid", attn, v)`), or, for
    `q @ k.transpose(-2, -1)`, the axis of the transposed operand.

    ## Why is this bad?
    Each query's weights over the keys must sum to 1. Normalising over the query axis (`dim=-2`)
    or the head axis mixes queries or heads: the output has the right shape, nothing crashes, and
    the model attends to the wrong things.

    ## Example
    ```python
    attn = F.softmax(scores, dim=-2)
    out = attn @ v
    ```

    ## Use instead
    ```python
    attn = F.softmax(scores, dim=-1)
    out = attn @ v
    ```
    """

    code = "SC103"
    name = "softmax-wrong-dim"
    severity = Severity.ERROR
    summary = "Softmax over attention scores on a dim other than the key dim (last)."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        key_axes = _contracted_key_axes(facts)
        # Slot attention normalises over the queries on purpose, then renormalises over the keys.
        renormalized = attention_facts(facts).renormalized
        events = [e for e in attention_softmaxes(facts) if e.node not in renormalized]
        for event in in_every_context(events, lambda e: _verdict(e, key_axes), _lands):
            dim = softmax_dim(event)
            key_axis = _key_axis(event, key_axes)
            scores = event.tensor(0, "input")
            given = f"no dim (implicitly dim {_implicit_dim(scores.rank)})" if dim is None else f"dim={dim}"
            shape = f" {scores.shape}" if scores.shape is not None else ""
            # A softmax helper given the dim by its caller (ProphetNet's ``softmax(x, dim=-2,
            # onnx_trace=...)``): the fix goes where the dim is passed.
            yield Report(
                _lands(event) or event.node,
                f"softmax over attention scores{shape} with {given}, but the key axis (the one "
                f"contracted with the values) is dim={key_axis}",
                hint=f"use dim={key_axis}",
                fallback=event.node if _lands(event) is not None else None,
            )


def _lands(event: OpEvent) -> cst.CSTNode | None:
    """The call that passed the softmax its ``dim`` when the softmax runs in a helper inlined there
    and its ``dim`` is one of the helper's parameters (``FunctionRun.call_that_chose``)."""
    node = event.kwarg_nodes.get("dim") or (event.arg_nodes[1] if len(event.arg_nodes) > 1 else None)
    return event.run.call_that_chose(node) if event.run is not None else None


def _contracted_key_axes(facts: FileFacts) -> dict[cst.CSTNode, set[int]]:
    axes: dict[cst.CSTNode, set[int]] = {}
    for event in facts.events:
        tag = event.result_tensor.tag(AttentionOutputTag)  # None for a non-tensor (an unknown tensor)
        if tag is not None and tag.softmax is not None and tag.key_axis is not None and tag.node is event.node:
            axes.setdefault(tag.softmax, set()).add(tag.key_axis)
    return axes


def _key_axis(event: OpEvent, key_axes: dict[cst.CSTNode, set[int]]) -> int | None:
    contracted = key_axes.get(event.node)
    if contracted:
        return next(iter(contracted)) if len(contracted) == 1 else None
    return event.tensor(0, "input").tag(ScoresTag).key_axis


def _implicit_dim(rank: int | None) -> int | str:
    """The dim torch's deprecated implicit-dim softmax picks: 0 for ranks 0, 1 and 3, else 1."""
    if rank is None:
        return "1 for 4-D scores, 0 for 3-D"
    return 0 if rank in (0, 1, 3) else 1


def _verdict(event: OpEvent, key_axes: dict[cst.CSTNode, set[int]]) -> bool | None:
    key_axis = _key_axis(event, key_axes)
    if key_axis is None:
        return None
    scores = event.tensor(0, "input")
    rank = scores.rank
    dim = softmax_dim(event)
    if dim == "?":
        return None
    if dim is None:
        if rank is None:
            return None
        dim = _implicit_dim(rank)
    assert isinstance(dim, int)
    if dim >= 0:
        if rank is None:
            # Rank unknown but at least len(dims), and scores (q @ k^T) are at least 2-D: dim counts
            # from the front, so it is the key axis only at rank dim - key_axis, which a rank that
            # large rules out.
            known = max(2, len(scores.shape.dims) if scores.shape is not None else 0)
            return True if key_axis < 0 and dim - key_axis < known else None
        dim -= rank
    return dim != key_axis
