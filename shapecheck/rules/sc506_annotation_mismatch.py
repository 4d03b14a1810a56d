"""SC506 annotation-mismatch."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.facts.records import FileFacts
from shapecheck.rules import _examples
from shapecheck.rules._conflicts import conflict_reports
from shapecheck.rules.base import Report, Rule


class AnnotationMismatch(Rule):
    """An inferred shape that contradicts a jaxtyping annotation.

    ## What it does
    Compares the shapes the engine infers with jaxtyping annotations: arguments passed to an
    annotated function of the same file, values returned from it, and annotated assignments
    (`y: Float[Tensor, "b t d"] = ...`). Dim names are unified with the file's values, so an
    annotation `"b t d_model"` contradicts a tensor whose last dim is provably not `d_model`.

    ## Why is this bad?
    The annotation documents a contract the code breaks. With runtime checking on (jaxtyping +
    beartype) the call raises; with it off, the wrong shape travels on until a later layer crashes
    far from the cause, or broadcasts silently into a wrong result.

    ## Example
    ```python
    def head(x: Float[Tensor, "b t d_model"]) -> Float[Tensor, "b t vocab"]:
        return x.mean(-1)
    ```

    ## Use instead
    ```python
    def head(x: Float[Tensor, "b t d_model"]) -> Float[Tensor, "b t"]:
        return x.mean(-1)
    ```
    """

    code = "SC506"
    name = "annotation-mismatch"
    severity = Severity.ERROR
    summary = "Inferred shape contradicts a jaxtyping annotation."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        yield from conflict_reports(facts, ("annotation",), "make the value fit the annotation, or fix the annotation")
