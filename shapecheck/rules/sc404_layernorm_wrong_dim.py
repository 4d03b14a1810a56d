"""SC404 layernorm-wrong-dim."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from shapecheck.diagnostics import Severity
from shapecheck.engine.domain.values import ModuleValue
from shapecheck.engine.facts.layouts import causes
from shapecheck.engine.facts.norms import (
    LayerNormSite,
    is_token_sequence,
    layer_norm_sites,
    sequence_lengths,
    width_taken_after,
)
from shapecheck.engine.facts.records import FileFacts
from shapecheck.engine.symbolic.dims import Truth, equal
from shapecheck.engine.symbolic.shapes import Shape
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class LayernormWrongDim(Rule):
    """A LayerNorm whose `normalized_shape` is not the feature dim of what it normalizes.

    ## What it does
    Compares the `normalized_shape` of `nn.LayerNorm(...)` / `F.layer_norm(x, ...)` with the shape
    of the tensor it is applied to. It flags a `normalized_shape` that is not a trailing slice of
    the input (`nn.LayerNorm(T)` or `nn.LayerNorm(max_len)` on `(b, t, d)`), and, on token states
    `(b, t, d)` of a sequence model (recognised by provenance: token embeddings, positions,
    attention outputs), a normalized shape that spans the sequence axis too
    (`F.layer_norm(x, x.shape[1:])`). `LayerNorm(d_model)`, `RMSNorm`, `GroupNorm` and
    channel-first norms of conv features are left alone.

    ## Why is this bad?
    A normalized shape that is not the trailing shape raises at the first forward pass (or, if
    `T == d` by chance, normalizes over the wrong axis). Normalizing over `(t, d)` mixes statistics
    across positions: each token's output depends on the other tokens (and on future ones in a
    causal model), and the result changes with the sequence length.

    ## Example
    ```python
    self.norm = nn.LayerNorm(max_len)
    x = self.norm(x)                       # x: (b, t, d_model)
    ```

    ## Use instead
    ```python
    self.norm = nn.LayerNorm(d_model)
    ```
    """

    code = "SC404"
    name = "layernorm-wrong-dim"
    severity = Severity.ERROR
    summary = "LayerNorm normalized_shape is not the feature dim."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        reported = set()
        lengths = sequence_lengths(facts)
        for site in layer_norm_sites(facts):
            if site.node in reported:
                continue
            problem = _problem(site) or _sequence_length(site, lengths, facts)
            if problem is None:
                continue
            reported.add(site.node)
            # A layer built with the wrong size is reported where it is built (the size to change),
            # once however often it is applied; the application is the fallback.
            built = _construction(site)
            if built is not None and built in reported:
                continue
            reported.add(built)
            yield Report(
                built if built is not None else site.node,
                problem.message,
                hint=problem.hint,
                causes=causes(site.input),
                fallback=site.node if built is not None else None,
            )


def _construction(site: LayerNormSite):
    """The ``nn.LayerNorm(...)`` call that built the applied layer, when it is one."""
    if site.functional:
        return None
    module = site.event.arg(0)
    return module.node if isinstance(module, ModuleValue) and module.node is not None else None


@dataclass(frozen=True)
class _Problem:
    message: str
    hint: str


def _problem(site: LayerNormSite) -> _Problem | None:
    shape, normalized = site.input.shape, site.normalized
    if shape is None or normalized is None or not shape.dims:
        return None
    assumptions = site.event.assumptions
    what = "F.layer_norm" if site.functional else "LayerNorm"
    given = "(" + ", ".join(str(d) for d in normalized) + ("," if len(normalized) == 1 else "") + ")"
    feature = shape.dims[-1]
    if not shape.variadic and len(normalized) > shape.rank:  # type: ignore[operator]
        return _Problem(
            f"{what} over normalized_shape {given} on an input of shape {shape}: more dims than the input has",
            f"normalize over the feature dim: LayerNorm({feature})",
        )
    trailing = shape.dims[-len(normalized):]
    if len(trailing) == len(normalized):
        for offset, (have, want) in enumerate(zip(trailing, normalized)):
            if equal(have, want, assumptions) is Truth.FALSE:  # type: ignore[arg-type]
                where = _axis_named(shape, normalized, assumptions)
                return _Problem(
                    f"{what} normalized_shape {given} is not the trailing shape of its input {shape}{where}: "
                    f"expected the feature dim {feature}",
                    f"normalize over the feature dim: LayerNorm({feature})",
                )
    if (
        len(normalized) >= 2
        and not shape.variadic
        and shape.rank is not None
        and shape.rank >= 3
        and len(normalized) >= shape.rank - 1
        and is_token_sequence(site.input)
    ):
        return _Problem(
            f"{what} over {given} normalizes token states {shape} over the sequence axis too: each token's "
            f"output depends on the other positions; a per-token LayerNorm normalizes the feature dim {feature} only",
            f"normalize each token over its features: {what}(x, ({feature},))" if site.functional
            else f"normalize each token over its features: LayerNorm({feature})",
        )
    return None


def _axis_named(shape, normalized, assumptions) -> str:
    """`` (it is axis 1, the sequence length)`` when a 1-d normalized shape equals another axis."""
    if len(normalized) != 1 or shape.variadic:
        return ""
    for axis, dim in enumerate(shape.dims[:-1]):
        if equal(dim, normalized[0], assumptions) is Truth.TRUE:
            label = " (the sequence axis)" if axis == 1 and shape.rank == 3 else ""
            return f"; {normalized[0]} is the size of axis {axis}{label}"
    return ""


def _sequence_length(site: LayerNormSite, lengths: list, facts: FileFacts) -> _Problem | None:
    """``LayerNorm(max_len)`` on ``(b, t, d)`` with symbolic sizes: the normalized size is a sequence
    length (the input's time axis, or the length of a positional table) and not the feature dim.
    An input the engine cannot see has the width the Linear after the norm in its
    ``nn.Sequential`` takes (``nn.Sequential(nn.LayerNorm(max_len), nn.Linear(d, vocab))``)."""
    shape, normalized = site.input.shape, site.normalized
    if normalized is None or len(normalized) != 1:
        return None
    whose = f"of its input {shape}"
    if shape is None or not shape.dims:
        taken = None if site.functional else width_taken_after(facts, site.event.arg(0))
        if taken is None:
            return None
        shape, whose = Shape((taken,), variadic=True), "that the Linear after it in its nn.Sequential takes"
        # The path's assumptions hold what the Linear's application presumed so the code runs
        # (``max_len == d``): that presumption is what is in question here, so none is used.
        assumptions = None
    else:
        assumptions = site.event.assumptions
    size, feature = normalized[0], shape.dims[-1]
    if equal(size, feature, assumptions) is Truth.TRUE:  # type: ignore[arg-type]
        return None
    time = shape.dims[1] if not shape.variadic and shape.rank == 3 else None
    if time is not None and is_token_sequence(site.input) and equal(size, time, assumptions) is Truth.TRUE:  # type: ignore[arg-type]
        what = "the sequence length (axis 1)"
    elif any(equal(size, length, assumptions) is Truth.TRUE for length in lengths):  # type: ignore[arg-type]
        what = "a sequence length (the size of a positional table or lookup)"
    else:
        return None
    name = "F.layer_norm" if site.functional else "LayerNorm"
    return _Problem(
        f"{name} normalized_shape ({size},) is {what}, not the feature dim {feature} {whose}: "
        f"expected {name}({feature})",
        f"normalize over the feature dim: LayerNorm({feature})",
    )
