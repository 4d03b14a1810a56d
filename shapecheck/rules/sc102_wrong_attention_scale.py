"""SC102 wrong-attention-scale."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

from shapecheck.diagnostics import Severity
from shapecheck.engine.domain.values import Scale, ScaleTag, ScoresTag, scale_of
from shapecheck.engine.facts.queries import attention_softmaxes, given, in_every_context
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.engine.symbolic.dims import Dim, Truth, equal
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule

HALF = Fraction(1, 2)
HINT = "scale the scores by 1 / math.sqrt(d_k), d_k being the per-head dim"


class WrongAttentionScale(Rule):
    """Attention scores scaled by the wrong factor.

    ## What it does
    Reads the scale factor the engine accumulated on the attention scores (from `/`, `*`, `**`,
    `math.sqrt`, on the scores or on q / k before the product) and compares it with the head
    dim d_k that the product contracted. It reports scores divided by d_k instead of sqrt(d_k),
    multiplied by sqrt(d_k) instead of divided, scaled by any other power of d_k (`d_k ** -0.25` on
    q only, when the model splits `d_k ** -0.5` over q and k as Whisper does), or divided by
    sqrt(d_model) in multi-head attention, where d_model = n_heads * d_k.

    ## Why is this bad?
    Dividing by d_k (or by sqrt(d_model)) shrinks the scores too much: softmax becomes nearly
    uniform and attention cannot focus. Multiplying by sqrt(d_k) makes the saturation the scale was
    meant to prevent worse. Either way the model runs and quietly learns less.

    ## Example
    ```python
    scores = q @ k.transpose(-2, -1) / self.d_k
    ```

    ## Use instead
    ```python
    scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
    ```
    """

    code = "SC102"
    name = "wrong-attention-scale"
    severity = Severity.WARNING
    summary = "Scores scaled by d_k (not its sqrt), by sqrt(d_model) in multi-head attention, or multiplied instead of divided."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        events = [e for e in attention_softmaxes(facts) if e.tensor(0, "input").has(ScaleTag)]
        for event in in_every_context(events, lambda e: _wrongly_scaled(e, facts), _lands):
            problem = _problem(event)
            scale = event.tensor(0, "input").tag(ScaleTag)
            # Reported where the factor was written (``self.scale = dim_head ** -1``): that is the
            # line to edit; where it is applied when several factors make it up.
            yield Report(scale.origin or scale.node, problem, hint=HINT, fallback=scale.node if scale.origin is not None else None)
        sdpa = [e for e in facts.events_of("scaled_dot_product_attention") if given(e, 6, "scale")]
        for event in in_every_context(sdpa, lambda e: _sdpa_problem(e) is not None):
            yield Report(event.kwarg_nodes.get("scale") or event.node, _sdpa_problem(event), hint=HINT)


def _lands(event: OpEvent) -> object:
    """Where this context's finding lands: where its factor was written, else where applied."""
    scale = event.tensor(0, "input").tag(ScaleTag)
    return scale.origin or scale.node


def _sdpa_problem(event: OpEvent) -> str | None:
    query = event.tensor(0, "query")
    factor = scale_of(event.arg(6, "scale"))
    head_dim = query.shape.dim(-1) if query.shape is not None else None
    if factor is None or head_dim is None:
        return None
    return _judge(factor, head_dim, query.shape.dim(-3) if query.shape.rank != 3 else None, event.assumptions)


def _wrongly_scaled(event: OpEvent, facts: FileFacts) -> bool | None:
    """True / False when this context can judge the scale; None when it cannot (the factor or the
    head dim is unknown here, or a size the engine had to invent), which vetoes nothing."""
    scores = event.tensor(0, "input")
    tag, scale = scores.tag(ScoresTag), scores.tag(ScaleTag)
    if tag is None or scale is None or scale.readable is None or tag.head_dim is None:
        return None
    if facts.made_up(tag.head_dim) or _unrelated(scale.readable, tag.head_dim, event.assumptions):
        return None
    return _problem(event) is not None


def _unrelated(factor: Scale, head_dim: Dim, assumptions) -> bool:
    """A factor this context cannot hold against the head dim, so that what it is depends on the
    caller: no number and sharing no size with the head dim (``* scaling``, a parameter of an
    attention function run on its own), or a number against a head dim that is no number here
    (``* 0.125`` in a helper that reads ``b, h, t, d = q.shape``: right for d = 64, the width for
    16-wide heads)."""
    if assumptions is not None:
        factor = Scale(factor.coef, tuple((assumptions.simplify(b), e) for b, e in factor.factors))
        head_dim = assumptions.simplify(head_dim)
    if factor.value is not None:
        return not head_dim.is_const
    sizes = {symbol for base, _ in factor.factors for symbol in base.symbols()}
    return not sizes & set(head_dim.symbols())


def _problem(event: OpEvent) -> str | None:
    """What is wrong with the scale of softmax ``event``'s scores (only called for scores that
    ``_wrongly_scaled`` could judge: a readable factor and a known head dim)."""
    scores = event.tensor(0, "input")
    tag, scale = scores.tag(ScoresTag), scores.tag(ScaleTag)
    heads = scores.shape.dim(-3) if scores.shape is not None else None
    # A factor the code wrote is judged even after a layer with its own gain (QK-norm) or a scalar
    # the engine cannot read: ``dim_head ** -1`` is the wrong formula whatever came before it.
    return _judge(scale.readable, tag.head_dim, heads, event.assumptions)


def _judge(factor: Scale, head_dim: Dim, heads: Dim | None, assumptions) -> str | None:
    """What is wrong with scaling scores of head dim ``head_dim`` by ``factor``, if anything."""
    d_k = assumptions.simplify(head_dim) if assumptions is not None else head_dim
    if assumptions is not None:
        factor = Scale(factor.coef, tuple((assumptions.simplify(b), e) for b, e in factor.factors))
    described = factor.describe()
    if _is_power(factor, d_k, Fraction(-1)):
        return f"scores scaled by {described}, that is by d_k = {d_k} itself; expected 1/sqrt({d_k})"
    if _is_power(factor, d_k, HALF):
        return f"scores multiplied by sqrt(d_k) = {described}; expected divided by sqrt({d_k})"
    # 1/sqrt(d_k) itself meets none of the checks below: no separate early exit for it.
    if len(factor.factors) == 1:
        base, exponent = factor.factors[0]
        if exponent != -HALF and exponent != 0 and equal(base, d_k) is Truth.TRUE:
            # d_k ** -0.25 on one operand only (Whisper splits d_k ** -0.5 over q and k), d_k ** 1,
            # and with a constant (``(head_dim / 2) ** -1`` is 2 / d_k): the power of d_k is wrong.
            constant = "" if factor.coef == 1 else f"{factor.coef:g} * "
            return f"scores scaled by {described}, that is by {constant}d_k ** {_exponent(exponent)}; expected d_k ** -0.5 = 1/sqrt({d_k})"
    if len(factor.factors) == 1 and factor.coef == 1:
        base, exponent = factor.factors[0]
        if exponent == Fraction(-1, 2) and heads is not None and not (heads.is_const and heads.value == 1):
            if equal(base, heads * d_k, assumptions) is Truth.TRUE:
                return (
                    f"scores scaled by 1/sqrt({base}), the model width; in multi-head attention the scale is "
                    f"1/sqrt(d_k) with d_k = {d_k} per head"
                )
    value = factor.value
    if heads is not None and assumptions is not None:
        heads = assumptions.simplify(heads)
    if value is not None and d_k.is_const and heads is not None and heads.is_const and heads.value > 1:
        width = float(d_k.value * heads.value)
        if abs(value - width ** -0.5) < 1e-9:
            return (
                f"scores scaled by {described} = 1/sqrt({d_k.value * heads.value}), the model width; in multi-head "
                f"attention the scale is 1/sqrt(d_k) with d_k = {d_k.value} per head"
            )
    if value is not None and d_k.is_const:
        d = float(d_k.value)
        if d > 1 and abs(value - 1 / d) < 1e-9:
            return f"scores scaled by {described} = 1/{d_k.value}, that is by d_k itself; expected 1/sqrt({d_k.value})"
        if d > 1 and abs(value - d ** 0.5) < 1e-9:
            return f"scores multiplied by {described} = sqrt({d_k.value}); expected divided by it"
    return None


def _exponent(exponent: Fraction) -> str:
    return f"{float(exponent):g}"  # 1, -1.5, -0.25


def _is_power(factor: Scale, base: Dim, exponent: Fraction) -> bool:
    """``factor`` is ``base ** exponent`` (both already simplified by the path's assumptions)."""
    if factor.coef != 1 or len(factor.factors) != 1:
        return False
    b, e = factor.factors[0]
    return e == exponent and equal(b, base) is Truth.TRUE
