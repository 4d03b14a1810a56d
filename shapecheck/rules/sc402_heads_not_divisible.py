"""SC402 heads-not-divisible."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.domain.values import IntValue, dim_of
from shapecheck.engine.facts.records import FileFacts
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule

#: Layers whose constructor takes (width, heads) and needs width % heads == 0.
HEADED_LAYERS = {
    "MultiheadAttention": ("embed_dim", "num_heads"),
    "TransformerEncoderLayer": ("d_model", "nhead"),
    "TransformerDecoderLayer": ("d_model", "nhead"),
    "Transformer": ("d_model", "nhead"),
}


class HeadsNotDivisible(Rule):
    """d_model is not divisible by n_heads for values known in the file.

    ## What it does
    Evaluates the divisibility checks the code itself makes (`assert d_model % n_heads == 0`,
    `if hidden_size % num_heads != 0: raise ...`) and the width / head arguments of
    `nn.MultiheadAttention` and `nn.Transformer*` layers, with the values the file gives them:
    constructor defaults, config dataclass defaults, and arguments at instantiation sites in the
    same file. It reports where the values make the check fail.

    ## Why is this bad?
    Multi-head attention splits d_model into n_heads slices of d_model // n_heads. If it does not
    divide, the model fails at construction (`AssertionError`, `embed_dim must be divisible by
    num_heads`) or, without a check, `view(B, T, n_heads, d_k)` fails at the first forward pass
    with `shape '[...]' is invalid for input of size ...`.

    ## Example
    ```python
    layer = EncoderLayer(d_model=512, n_heads=6)  # 512 % 6 == 2
    ```

    ## Use instead
    ```python
    layer = EncoderLayer(d_model=512, n_heads=8)  # d_k = 64
    ```
    """

    code = "SC402"
    name = "heads-not-divisible"
    severity = Severity.ERROR
    summary = "d_model % n_heads != 0 for statically known values."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        # Every conflict, check and construction is recorded in a run (the module's own is
        # ``<module>``). Two splits configured at one place give two reports on one node, of which the
        # linter keeps the first.
        for conflict in _one_per_split(facts.conflicts_of("heads")):
            built = _origin(conflict) or conflict.node
            node = conflict.at or built
            fallback = built if built is not node else None
            yield Report(
                node,
                _naming_the_split(facts, conflict, node),
                hint="choose n_heads that divides d_model (d_k = d_model // n_heads)",
                fallback=fallback,
                fallback_message=_naming_the_split(facts, conflict, fallback) if fallback is not None else None,
            )
        for check in facts.divisibility:
            if check.holds is not False:
                continue
            dividend, divisor = dim_of(check.dividend), dim_of(check.divisor)
            # The instantiation whose values reached the check; with none (the class analysed on
            # its own), the default the head count (else the width) came from: the number to
            # change. Else the check itself.
            built = check.run.origin()  # type: ignore[union-attr]
            node = built or _written(check.divisor) or _written(check.dividend) or check.node
            where = facts.elsewhere(check.node, node)
            yield Report(
                node,
                f"{dividend} is not divisible by {divisor} ({dividend} % {divisor} = "
                f"{dividend.value % divisor.value}): the heads cannot split the model width"
                + (f" (checked{where})" if where else ""),
                hint="choose n_heads that divides d_model (d_k = d_model // n_heads)",
            )
        for construction in facts.constructions:
            names = HEADED_LAYERS.get(construction.kind)
            if names is None:
                continue
            width, heads = (dim_of(construction.params.get(name)) for name in names)
            if width is None or heads is None or not width.is_const or not heads.is_const or heads.value == 0:
                continue
            if width.value % heads.value:
                node = construction.run.origin() or construction.node  # type: ignore[union-attr]
                yield Report(
                    node,
                    f"nn.{construction.kind} with {names[0]}={width.value} and {names[1]}={heads.value}: "
                    f"{width.value} % {heads.value} = {width.value % heads.value}, it raises at construction",
                    hint="choose a head count that divides the width",
                )


def _naming_the_split(facts: FileFacts, conflict, node) -> str:
    """The conflict's detail, reported at ``node``, naming the head split when it is in another file."""
    where = facts.elsewhere(conflict.node, node)
    return f"{conflict.detail} (the head split{where})" if where else conflict.detail


def _written(value: object):
    origin = getattr(value, "origin", None) if isinstance(value, IntValue) else None
    return origin.node if origin is not None else None


def _one_per_split(conflicts) -> list:
    """One conflict per head split: a split met in several contexts (its method analysed alone, and
    again through the construction that configures it) is one bug. The context that knows the
    construction wins, so the finding lands where the sizes are given."""
    chosen: dict[int, object] = {}
    for conflict in conflicts:
        known = chosen.get(id(conflict.node))
        if known is None or (_origin(known) is None and _origin(conflict) is not None):
            chosen[id(conflict.node)] = conflict
    return list(chosen.values())


def _origin(conflict):
    return conflict.run.origin()
