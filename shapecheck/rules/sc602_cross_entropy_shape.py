"""SC602 cross-entropy-shape."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.facts.queries import in_every_context
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.engine.facts.training import LossCall, loss_calls
from shapecheck.engine.symbolic.dims import Truth, equal
from shapecheck.engine.symbolic.shapes import Shape
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class CrossEntropyShape(Rule):
    """Logits and targets of `cross_entropy` whose shapes do not fit together.

    ## What it does
    Compares the shapes of the logits and the class-index targets of `F.cross_entropy`,
    `F.nll_loss`, `nn.CrossEntropyLoss` and `nn.NLLLoss`. PyTorch wants the classes on dim 1:
    logits `(N, C)` with targets `(N,)`, or `(N, C, d1, ...)` with targets `(N, d1, ...)`. It
    flags sequence logits `(B, T, V)` given with targets `(B, T)` (classes on the last dim),
    targets of the wrong rank (`(B, T, V)` logits with flattened `(B*T,)` targets, or flattened
    `(B*T, V)` logits with `(B, T)` targets), and batch or position dims that provably differ. It
    stays quiet on `(B*T, V)` with `(B*T,)`, on `(B, V, T)` with `(B, T)`, and on float targets of
    the logits' shape (class probabilities).

    ## Why is this bad?
    A rank or size mismatch crashes at the first step. Worse, `(B, T, V)` logits with `(B, T)`
    targets run whenever `T == V`, treating positions as classes: the loss falls and the model
    learns nothing useful.

    ## Example
    ```python
    logits = model(idx)                      # (B, T, V)
    loss = F.cross_entropy(logits, targets)  # targets (B, T)
    ```

    ## Use instead
    ```python
    B, T, V = logits.shape
    loss = F.cross_entropy(logits.view(B * T, V), targets.view(B * T))
    # or: F.cross_entropy(logits.transpose(1, 2), targets)
    ```
    """

    code = "SC602"
    name = "cross-entropy-shape"
    severity = Severity.ERROR
    summary = "cross_entropy on (B,T,V) logits without flattening or moving the class dim."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        losses = {id(loss.event): loss for loss in loss_calls(facts)}
        problems: dict[int, tuple[str, str]] = {}

        def verdict(event: OpEvent) -> bool | None:
            loss = losses[id(event)]
            problem = mismatch(loss, event.assumptions)
            if problem is None:
                return None if _unknown(loss) else False
            problems[id(event)] = problem
            return True

        for event in in_every_context([loss.event for loss in losses.values()], verdict):
            message, hint = problems[id(event)]
            yield Report(event.node, message, hint=hint)


def _unknown(loss: LossCall) -> bool:
    return not (_known(loss.logits.shape) and _known(loss.target.shape))


def _known(shape: Shape | None) -> bool:
    return shape is not None and not shape.variadic and shape.rank is not None


def mismatch(loss: LossCall, assumptions: object) -> tuple[str, str] | None:
    """(message, hint) when the logits and targets cannot fit, or None."""
    logits, target = loss.logits.shape, loss.target.shape
    if logits is not None and logits.variadic and _known(target) and logits.min_rank >= target.rank + 2:  # type: ignore[union-attr, operator]
        # logits of unknown rank but at least that of the targets + 2 (``(*, _, _, V)`` with ``(N,)``)
        return (
            f"{loss.event.op.replace('module.', '')} gets logits {logits} with targets {target}: the ranks do not fit, "
            f"logits of at least {logits.min_rank} dims want targets of {logits.min_rank - 1} or more",
            "flatten both: logits.view(-1, logits.size(-1)) and targets.view(-1)",
        )
    if not (_known(logits) and _known(target)) or logits.rank == 0:  # type: ignore[union-attr]
        return None
    rank, target_rank = logits.rank, target.rank  # type: ignore[union-attr]
    dims, target_dims = logits.dims, target.dims  # type: ignore[union-attr]
    # 1-D logits (one sample's classes) take a 0-d class index or one of shape (1,)
    expected = str(Shape((dims[0],) + dims[2:])) if rank >= 2 else "() or (1)"
    seen = f"logits {logits} with targets {target}"
    what = loss.event.op.replace("module.", "")
    if target_rank == rank:
        if loss.target.dtype != "int":
            return None  # class probabilities of the logits' shape, or a dtype not known
        if rank == 1 and _one_index(dims[0], target_dims[0], assumptions):
            return None
        return (
            f"{what} gets {seen}: integer class targets "
            f"{'must drop the class dim' if rank >= 2 else 'of 1-D logits are one class index'}, expected targets {expected}",
            "pass class indices of shape (N, ...) without the class dim",
        )
    if target_rank != rank - 1:
        classes = 1 if rank >= 2 else 0
        return (
            f"{what} gets {seen}: the ranks do not fit, expected targets {expected} "
            f"(the classes are dim {classes} of the logits, {dims[classes]})",
            "flatten both: logits.view(-1, logits.size(-1)) and targets.view(-1)",
        )
    if rank == 1:
        return None
    pairs = [(0, 0)] + [(axis, axis - 1) for axis in range(2, rank)]
    classes_last = rank >= 3 and _classes_last(dims, target_dims, assumptions)
    for axis, target_axis in pairs if not classes_last else ():
        if equal(dims[axis], target_dims[target_axis], assumptions) is Truth.FALSE:  # type: ignore[arg-type]
            return (
                f"{what} gets {seen}: logits dim {axis} ({dims[axis]}) must equal targets dim "
                f"{target_axis} ({target_dims[target_axis]}), expected targets {expected}",
                "flatten both: logits.view(-1, logits.size(-1)) and targets.view(-1)",
            )
    if classes_last:
        return (
            f"{what} gets {seen}: the classes ({dims[-1]}) are on the last dim, but "
            f"{what} reads dim 1 ({dims[1]}) as the classes; expected logits "
            f"{Shape((dims[0], dims[-1]) + dims[1:-1])} or flattened ({dims[0]}*{dims[1]}, {dims[-1]})",
            "flatten: F.cross_entropy(logits.view(-1, V), targets.view(-1)), or logits.transpose(1, 2)",
        )
    return None


def _one_index(classes, target_size, assumptions: object) -> bool:
    """(C,) logits with int targets of shape (n,): torch reads targets of the logits' shape as class
    probabilities (an error for int targets) and otherwise wants n == 1, one class index. True when
    that may be what is given: n is not the classes and not provably other than 1."""
    if equal(classes, target_size, assumptions) is Truth.TRUE:  # type: ignore[arg-type]
        return False
    return equal(target_size, 1, assumptions) is not Truth.FALSE  # type: ignore[arg-type]


def _classes_last(dims: tuple, target_dims: tuple, assumptions: object) -> bool:
    """Targets shaped like the logits without their last dim: the classes are last."""
    if equal(dims[1], dims[-1], assumptions) is Truth.TRUE:  # type: ignore[arg-type]
        return False
    return all(equal(a, b, assumptions) is Truth.TRUE for a, b in zip(dims[:-1], target_dims))  # type: ignore[arg-type]
