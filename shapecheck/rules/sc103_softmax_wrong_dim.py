"""SC103 softmax-wrong-dim."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.facts import FileFacts, OpEvent
from shapecheck.engine.queries import in_every_context, softmax_dim, softmax_over_scores
from shapecheck.engine.values import ScoresTag
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class SoftmaxWrongDim(Rule):
    """Softmax over attention scores on an axis other than the key axis.

    ## What it does
    Finds a softmax over attention scores `(..., t_q, t_k)` whose `dim` is not the last axis, the
    key axis, including a softmax with no `dim` at all (PyTorch then picks dim 1 for 4-D scores).

    ## Why is this bad?
    Each query's weights over the keys must sum to 1. Normalising over the query axis (`dim=-2`)
    or the head axis mixes queries or heads: the output has the right shape, nothing crashes, and
    the model attends to the wrong things.

    ## Example
    ```python
    attn = F.softmax(scores, dim=-2)
    ```

    ## Use instead
    ```python
    attn = F.softmax(scores, dim=-1)
    ```
    """

    code = "SC103"
    name = "softmax-wrong-dim"
    severity = Severity.ERROR
    summary = "Softmax over attention scores on a dim other than the key dim (last)."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        for event in in_every_context(softmax_over_scores(facts), lambda e: _wrong_axis(e) is not None):
            axis, rank = _wrong_axis(event)  # type: ignore[misc]
            scores = event.tensor(0, "input")
            given = "no dim (implicitly dim 1)" if axis is None else f"dim={axis}"
            key_axis = scores.tag(ScoresTag).key_axis
            yield Report(
                event.node,
                f"softmax over attention scores {scores.shape} with {given}; the key axis of these scores is dim={key_axis}",
                hint=f"use dim={key_axis}",
            )


def _wrong_axis(event: OpEvent) -> tuple[int | None, int | None] | None:
    scores = event.tensor(0, "input")
    key_axis = scores.tag(ScoresTag).key_axis
    rank = scores.rank
    dim = softmax_dim(event)
    if dim == "?":
        return None
    if dim is None:
        if rank is None:
            return None
        dim = 0 if rank in (0, 1, 3) else 1
    assert isinstance(dim, int)
    if dim >= 0:
        if rank is None:
            return None
        dim -= rank
    return (softmax_dim(event), rank) if dim != key_axis else None
