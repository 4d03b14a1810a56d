"""SC507 batch-first-mismatch."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.facts.layouts import causes
from shapecheck.engine.facts.records import FileFacts
from shapecheck.engine.facts.sequence_layers import batch_first, batch_first_evidence, layer_calls, seq_first_layer
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class BatchFirstMismatch(Rule):
    """Batch-first `(b, t, d)` tensors given to a layer built without `batch_first=True`.

    ## What it does
    Finds calls of `nn.MultiheadAttention`, `nn.TransformerEncoderLayer`,
    `nn.TransformerDecoderLayer`, `nn.Transformer` (and the encoder / decoder stacks of such
    layers) built without `batch_first=True`, whose input is provably laid out `(batch, seq,
    feature)`: a `key_padding_mask` of shape `(b, s)` that matches axes 0 and 1 of the input, an
    attention mask `(t, s)` or `(b * heads, t, s)` whose `t` is the input's axis 1, or a `batch_first=True` layer
    elsewhere in the file called on a tensor of the same shape. Code that transposes to
    `(t, b, d)` first is left alone. The finding is reported where the layer is built (for a
    stack, the layer it repeats), where `batch_first=True` goes, naming the function that calls it.

    ## Why is this bad?
    Such a layer reads axis 0 as the sequence and axis 1 as the batch. With `(b, t, d)` input it
    attends across the examples of the batch instead of across the tokens, silently: the shapes
    fit whenever the masks do, and the model trains on scrambled attention.

    ## Example
    ```python
    self.attn = nn.MultiheadAttention(d_model, n_heads)
    out, _ = self.attn(x, x, x, key_padding_mask=pad)   # x: (b, t, d), pad: (b, t)
    ```

    ## Use instead
    ```python
    self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
    ```
    """

    code = "SC507"
    name = "batch-first-mismatch"
    severity = Severity.ERROR
    summary = "Batch-first (b, t, d) tensors given to nn.MultiheadAttention / nn.Transformer* layers built without batch_first=True."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        calls = layer_calls(facts)
        built_reported = set()
        # A call met in several contexts may give several reports on its node: the linter keeps the first.
        for call in calls:
            if batch_first(call.module) is not False:
                continue
            evidence = batch_first_evidence(call, calls)
            if evidence is None:
                continue
            layer = seq_first_layer(call.module)
            what = f"nn.{call.module.kind}" + (f" of an nn.{layer.kind}" if layer is not None and layer is not call.module else "")
            seen = f"its input {call.input.shape}" if call.input is not None and call.input.shape is not None else "its input"
            message = (
                f"{what} built without batch_first=True reads {seen} as "
                f"(seq, batch, feature), but the input is (batch, seq, feature): {evidence}"
            )
            # Reported where the layer is built (where ``batch_first=True`` goes), once however often
            # it is called; the call is the fallback.
            built = layer.node if layer is not None else None
            if built is not None and id(built) in built_reported:
                continue
            if built is not None:
                built_reported.add(id(built))
            caller = call.event.run.qualname if call.event.run is not None else None
            yield Report(
                built if built is not None else call.event.node,
                message + (f" (called in {caller})" if built is not None and caller else ""),
                hint="build the layer with batch_first=True, or transpose the input to (seq, batch, feature)",
                causes=causes(call.input),
                fallback=call.event.node if built is not None else None,
                fallback_message=message if built is not None else None,
            )
