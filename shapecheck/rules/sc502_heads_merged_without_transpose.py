"""SC502 heads-merged-without-transpose."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.facts.layouts import causes, heads_merged_without_transpose
from shapecheck.engine.facts.queries import in_every_context
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class HeadsMergedWithoutTranspose(Rule):
    """Attention heads `(b, h, t, d_k)` reshaped straight to `(b, t, h * d_k)`.

    ## What it does
    Finds a `view` / `reshape` of a 4-D attention tensor `(b, h, t, d_k)` (an attention output,
    or a projection split into heads) to `(b, t, h * d_k)`, where the result's time axis is the
    source's axis 2: the head axis was never moved next to the head dim. It works from the dims
    (which axis holds the sequence length), not from names, and stays quiet on
    `transpose(1, 2).contiguous().view(b, t, d)`, `reshape` / `flatten(2)` after the transpose,
    einops and the fused `(b * h, t, d_k)` layout.

    ## Why is this bad?
    The number of elements is right, so nothing raises. But memory is in `(h, t, d_k)` order: each
    "token" of the result is a slice of one head across several positions. Every token's output
    mixes positions, the model trains on scrambled features and quietly does worse.

    ## Example
    ```python
    out = (attn @ v).reshape(b, t, h * d_k)       # (b, h, t, d_k) -> (b, t, h*d_k)
    ```

    ## Use instead
    ```python
    out = (attn @ v).transpose(1, 2).reshape(b, t, h * d_k)
    ```
    """

    code = "SC502"
    name = "heads-merged-without-transpose"
    severity = Severity.ERROR
    summary = "(b,h,t,d) reshaped to (b,t,h*d) without moving h next to d first."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        for event in in_every_context(facts.events_of("view", "reshape"), _verdict):
            source, result = heads_merged_without_transpose(event)  # type: ignore[misc]  # the verdict found it
            heads, time = source.dims[1], source.dims[2]
            yield Report(
                event.node,
                f"{event.op} of heads {source} (batch, heads={heads}, time={time}, head_dim) straight to {result}: "
                f"axis 1 of the result is time, but the heads sit between batch and time in memory, so each "
                f"token gets a slice of one head over several positions; expected the heads moved next to "
                f"head_dim first, (batch, {time}, {heads}, head_dim)",
                hint="transpose(1, 2) before merging: x.transpose(1, 2).reshape(b, t, h * d_k)",
                causes=causes(event.tensor(0)),
            )


def _verdict(event: OpEvent) -> bool | None:
    return True if heads_merged_without_transpose(event) is not None else None
