"""SC304 sinusoidal-pe-formula."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.domain.values import TensorValue
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.engine.ops.frequencies import Trig, expected_slope, slope_ratio
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule

#: The two-halves layout (tensor2tensor) uses ln(10000) / (d/2 - 1) instead of 2 ln(10000) / d: a
#: ratio of d / (d - 2). Anything within these bounds is the formula; outside, a different one.
TOLERATED = (0.75, 1.4)


class SinusoidalPeFormula(Rule):
    """A sinusoidal positional encoding that does not follow the formula.

    ## What it does
    Follows the `arange` indices through the arithmetic that builds a sinusoidal table and checks
    it against PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)):
    - the frequency must fall with the pair index i at the rate 10000^(-2i/d): a lost minus sign
      (frequencies that grow), `i / d` instead of `2i / d`, or a position multiplied by
      10000^(2i/d) instead of divided are reported where the frequency is computed;
    - sin and cos must go to different slots: a second write to the same slots overwrites the
      first and is reported.

    ## Why is this bad?
    With growing frequencies, neighbouring positions get unrelated codes and far ones alias; with
    the wrong exponent the longest wavelength is far shorter than the sequence; with sin and cos
    in the same slots half of the table is zero. The model trains, with positional information that
    is mostly noise or missing.

    ## Example
    ```python
    div_term = torch.exp(torch.arange(0, d_model, 2) * (math.log(10000.0) / d_model))
    ```

    ## Use instead
    ```python
    div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    ```
    """

    code = "SC304"
    name = "sinusoidal-pe-formula"
    severity = Severity.WARNING
    summary = "Wrong sinusoidal frequency (exponent) or sin/cos written to the same slots."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        writes: dict[tuple[int, str], list[OpEvent]] = {}
        for event in facts.events_of("setitem"):
            value = event.args[1]  # a setitem event holds the table written into and the value written
            if not isinstance(value, TensorValue) or value.tag(Trig) is None:
                continue
            name = event.kwargs["name"].value  # type: ignore[union-attr]
            writes.setdefault((id(event.run), name), []).append(event)
            problem = _frequency_problem(event, value)
            if problem is not None:
                node, message = problem  # one report per node: the linter keeps the first
                yield Report(node, message, hint="use div_term = exp(arange(0, d, 2) * (-ln(10000) / d)) and pos * div_term")
        for events in writes.values():
            seen: dict[object, str] = {}
            for event in events:
                key = event.kwargs["index"].value  # type: ignore[union-attr]
                function = event.args[1].tag(Trig).function  # type: ignore[union-attr]
                if key is None:
                    continue
                if key in seen and seen[key] != function:
                    yield Report(
                        event.node,
                        f"{function} written to the same slots as the {seen[key]} before it, overwriting it; "
                        "sin goes to the even features (0::2) and cos to the odd ones (1::2)",
                        hint="write cos to pe[:, 1::2]",
                    )
                seen[key] = function


def _frequency_problem(event: OpEvent, value: TensorValue):
    trig = value.tag(Trig)
    phase = trig.phase
    table = event.args[0]
    if phase is None or not isinstance(table, TensorValue) or table.shape is None:
        return None
    width = table.shape.dim(-1)
    expected = expected_slope(width)
    if expected is None:
        return None
    ratio = slope_ratio(phase.slope, expected)
    if ratio is None:
        return None
    if ratio < 0:
        return phase.node, (
            "sinusoidal frequencies grow with the feature index (the exponent lost its minus sign, or the "
            "position is multiplied by 10000^(2i/d) instead of divided)"
        )
    if not TOLERATED[0] <= ratio <= TOLERATED[1]:
        return phase.node, (
            f"sinusoidal frequencies fall {ratio:g} times as fast as 10000^(-2i/d) for d = {width}; the exponent "
            "should be 2i / d_model"
        )
    return None

