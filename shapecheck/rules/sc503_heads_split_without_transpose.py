"""SC503 heads-split-without-transpose."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.facts.layouts import causes, heads_split_without_transpose
from shapecheck.engine.facts.queries import in_every_context
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class HeadsSplitWithoutTranspose(Rule):
    """Hidden states `(b, t, d_model)` viewed straight as `(b, h, t, d_k)`.

    ## What it does
    Finds a `view` / `reshape` of a `(b, t, d_model)` projection or hidden state to a 4-D
    `(b, h, t, d_model / h)`: the result's axis 2 is the source's time axis and its axes 1 and 3
    multiply to `d_model`, so axis 1 is the head count placed before time. It works from the dims,
    not from names, and stays quiet on `view(b, t, h, d_k).transpose(1, 2)`, einops, and the
    fused `(b * h, t, d_k)` layout.

    ## Why is this bad?
    The number of elements is right, so nothing raises. But memory is in `(t, d_model)` order:
    "head 0" gets the first `t / h` tokens' features laid out as if they were `t` positions. The
    heads do not see the tokens they claim to, attention runs over scrambled rows, and the model
    quietly trains to a worse result.

    ## Example
    ```python
    q = self.W_q(x).view(b, self.h, t, self.d_k)
    ```

    ## Use instead
    ```python
    q = self.W_q(x).view(b, t, self.h, self.d_k).transpose(1, 2)
    ```
    """

    code = "SC503"
    name = "heads-split-without-transpose"
    severity = Severity.ERROR
    summary = "(b,t,d_model) viewed directly as (b,h,t,d_k)."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        for event in in_every_context(facts.events_of("view", "reshape"), _verdict):
            source, result = heads_split_without_transpose(event)  # type: ignore[misc]  # the verdict found it
            heads = result.dims[1]
            if source.variadic or source.rank != 3:
                time = result.dims[2]
                what = f"{source} (features {source.dims[-1]} = heads x head_dim last)"
            else:
                time = source.dims[1]
                what = f"{source} (batch, time={time}, features)"
            yield Report(
                event.node,
                f"{event.op} of {what} straight to {result} (batch, heads={heads}, "
                f"time, head_dim): the features of each token are not laid out head-first, so the heads get "
                f"scrambled rows; expected (batch, {time}, {heads}, head_dim) then transpose(1, 2)",
                hint="split then transpose: x.view(b, t, h, d_k).transpose(1, 2)",
                causes=causes(event.tensor(0)),
            )


def _verdict(event: OpEvent) -> bool | None:
    return True if heads_split_without_transpose(event) is not None else None
