"""SC202 mask-shape."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.domain.values import ModuleValue, ScoresTag, TriangleTag, dim_of
from shapecheck.engine.facts.queries import (
    MaskApplication,
    given,
    in_some_context,
    mask_applications,
)
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.engine.symbolic.dims import Dim, Truth, equal
from shapecheck.engine.symbolic.shapes import ANONYMOUS_PREFIX
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class MaskShape(Rule):
    """A mask that cannot broadcast against the attention scores.

    ## What it does
    Finds masks whose shape does not fit what they mask: a mask that provably cannot broadcast
    against the scores in `masked_fill`; a causal mask registered at `max_len x max_len` and used
    without slicing it to the sequence length; a 3-D `(B, T, T)` `attn_mask` given to
    `nn.MultiheadAttention` (which wants `(T, T)` or `(B * num_heads, T, T)`); a `key_padding_mask`
    that is not `(B, S)`.

    ## Why is this bad?
    These crash at run time with `RuntimeError: The size of tensor a (T) must match the size of
    tensor b (max_len)` or `The shape of the 3D attn_mask is ..., but should be ...` — often only
    for the batch size or sequence length that production uses, not the one in the unit test.

    ## Example
    ```python
    scores = scores.masked_fill(self.mask, float("-inf"))  # mask is (max_len, max_len)
    ```

    ## Use instead
    ```python
    scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
    ```
    """

    code = "SC202"
    name = "mask-shape"
    severity = Severity.ERROR
    summary = "Mask cannot broadcast against the scores (unsliced max_len buffer, (B,T,T) mask to nn.MultiheadAttention, wrong-rank key_padding_mask)."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        reported = set()
        for conflict in facts.conflicts_of("mask-broadcast"):
            if conflict.node in reported:
                continue
            reported.add(conflict.node)
            yield Report(conflict.node, conflict.detail, hint="slice or reshape the mask to the scores' (..., t_q, t_k)", causes=conflict.causes)
        applications = {id(a.event): a for a in mask_applications(facts)}
        events = [a.event for a in applications.values()]
        for event in in_some_context(events, lambda e: _unsliced_buffer(applications[id(e)], facts.read_sizes)):
            if event.node in reported:
                continue
            application = applications[id(event)]
            mask, scores = application.mask, application.scores
            triangle = mask.tag(TriangleTag)
            yield Report(
                application.mask_node or event.node,
                f"mask built at {triangle.full_size} x {triangle.full_size} is used unsliced against scores "
                f"{scores.shape}; slice it to the sequence length",
                hint="index the buffer as mask[:T, :T] (or [:, :, :T, :T])",
            )
        for event in in_some_context(facts.events_of("module.MultiheadAttention"), lambda e: _mha_problem(e) is not None):
            node, message = _mha_problem(event)  # type: ignore[misc]
            yield Report(node, message, hint="attn_mask is (T, S) or (B * num_heads, T, S); key_padding_mask is (B, S)")


def _unsliced_buffer(application: MaskApplication, read_sizes: set) -> bool:
    mask, scores = application.mask, application.scores
    triangle = mask.tag(TriangleTag)
    if triangle is None or triangle.sliced or triangle.full_size is None or not scores.has(ScoresTag):
        return False
    if any(Dim.sym(name) in read_sizes for name in triangle.full_size.symbols()):
        return False  # built at a size read from the input at run time: it fits by construction
    if scores.shape is None:
        return False
    key_len = scores.shape.dim(-1)
    if key_len is None or any(name.startswith(ANONYMOUS_PREFIX) for name in key_len.symbols()):
        return False  # a size the engine had to invent says nothing about the sequence length
    return equal(key_len, triangle.full_size) is not Truth.TRUE


def _mha_problem(event: OpEvent):
    module = event.arg(0)
    if not isinstance(module, ModuleValue):
        return None
    query = event.tensor(1, "query")
    heads = dim_of(module.param("num_heads"))
    batch_first = getattr(module.param("batch_first"), "value", False) is True
    if given(event, 6, "attn_mask"):
        mask = event.tensor(6, "attn_mask")
        node = event.kwarg_nodes.get("attn_mask") or event.node
        if mask.shape is not None and mask.rank == 3 and query.shape is not None and query.rank == 3 and heads is not None:
            batch = query.shape.dims[0 if batch_first else 1]
            if equal(mask.shape.dims[0], batch * heads) is Truth.FALSE and not (heads.is_const and heads.value == 1):
                return node, (
                    f"3-D attn_mask {mask.shape} given to nn.MultiheadAttention: its first axis must be "
                    f"batch * num_heads = {batch * heads}, not {mask.shape.dims[0]}"
                )
        if mask.shape is not None and mask.rank is not None and mask.rank not in (2, 3):
            return node, f"attn_mask of rank {mask.rank} given to nn.MultiheadAttention, which takes (T, S) or (B * num_heads, T, S)"
    if given(event, 4, "key_padding_mask"):
        mask = event.tensor(4, "key_padding_mask")
        node = event.kwarg_nodes.get("key_padding_mask") or event.node
        if mask.shape is not None and mask.rank is not None and mask.rank != 2:
            return node, f"key_padding_mask {mask.shape} has rank {mask.rank}; nn.MultiheadAttention wants (B, S)"
    return None
