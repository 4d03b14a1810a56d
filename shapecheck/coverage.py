"""How much of a file the engine could see: functions analysed, tensor values with a known shape.

One count, shared by ``shapecheck lint`` (the coverage line and the JSON ``coverage`` field) and
``benchmarks/shapes_coverage.py``. Every tensor bound by an assignment in the standalone analysis
of each function (what ``shapecheck shapes`` prints) is

- **full**: a shape with every dim known (an int, a symbol such as ``n_heads`` or an expression
  such as ``d_model//n_heads`` all count as known);
- **partial**: a shape with an unnamed dim or a variadic ``*batch`` part;
- **unknown**: no shape at all.

It also lists the parameters that reached a tensor operation with no shape at all in a function's
standalone analysis: an annotation there is what would let the engine check that function.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from shapecheck.engine.facts.records import FileFacts
from shapecheck.engine.symbolic.shapes import is_anonymous
from shapecheck.engine.domain.values import TensorValue

#: Receivers that are never tensors the user could annotate.
_NOT_INPUTS = frozenset({"self", "cls"})


@dataclass(frozen=True)
class UnknownInput:
    """A parameter used as a tensor whose shape the engine never learned."""

    path: str
    function: str
    parameter: str

    def advice(self) -> str:
        return f'{self.path}: annotate {self.parameter}: Float[Tensor, "b t d"] (its own dims) in {self.function}'


@dataclass
class Coverage:
    """Counts for one file or, added up, for a whole run."""

    functions: int = 0
    full: int = 0
    partial: int = 0
    unknown: int = 0
    unknown_inputs: list[UnknownInput] = field(default_factory=list)

    @property
    def values(self) -> int:
        return self.full + self.partial + self.unknown

    def add(self, other: Coverage) -> None:
        self.functions += other.functions
        self.full += other.full
        self.partial += other.partial
        self.unknown += other.unknown
        self.unknown_inputs.extend(other.unknown_inputs)

    def known_share(self) -> float | None:
        """The share of tensor values whose shape is fully known (None: no tensor values)."""
        return self.full / self.values if self.values else None

    def line(self) -> str:
        """``Coverage: 12 functions analysed; 180 of 240 tensor values (75%) have a known shape.``"""
        functions = f"{self.functions} function{'s' if self.functions != 1 else ''} analysed"
        if not self.values:
            return f"Coverage: {functions}; no tensor values found."
        share = round(100 * self.full / self.values)
        partly = f", {self.partial} partly known" if self.partial else ""
        return (
            f"Coverage: {functions}; {self.full} of {self.values} tensor values ({share}%) "
            f"have a fully known shape{partly}."
        )

    def to_json(self) -> dict[str, object]:
        share = self.known_share()
        return {
            "functions": self.functions,
            "tensor_values": self.values,
            "full": self.full,
            "partial": self.partial,
            "unknown": self.unknown,
            "known_share": None if share is None else round(share, 4),
        }


def shape_known(shape) -> bool:
    """Every dim named, counted or computed; no variadic part."""
    return not shape.variadic and not any(is_anonymous(dim) for dim in shape.dims)


def count(facts: FileFacts, include_inlined: bool = False) -> Coverage:
    """The coverage of one file's facts (standalone analyses only unless ``include_inlined``)."""
    coverage = Coverage()
    for run in facts.runs:
        if run.inlined and not include_inlined:
            continue
        coverage.functions += 1
        for assignment in run.assignments:
            value = assignment.value
            if not isinstance(value, TensorValue):
                continue
            if value.shape is None:
                coverage.unknown += 1
            elif shape_known(value.shape):
                coverage.full += 1
            else:
                coverage.partial += 1
    coverage.unknown_inputs = unknown_inputs(facts)
    return coverage


def unknown_inputs(facts: FileFacts) -> list[UnknownInput]:
    """Unannotated parameters of standalone analyses that reached a tensor op without a shape.

    Functions that some call site of the file inlines with actual arguments are left out: the
    engine sees their inputs there.
    """
    inlined = {id(run.node) for run in facts.runs if run.inlined}
    parameters: dict[int, dict[str, cst.Param]] = {}
    found: dict[tuple[str, str], UnknownInput] = {}
    for event in facts.events:
        run = event.run
        if run is None or run.node is None or run.inlined or id(run.node) in inlined:
            continue
        params = parameters.get(id(run.node))
        if params is None:
            params = parameters[id(run.node)] = _unannotated(run.node)
        if not params:
            continue
        for node, value in zip(event.arg_nodes, event.args):
            if not isinstance(node, cst.Name) or node.value not in params:
                continue
            if isinstance(value, TensorValue) and value.shape is not None:
                continue
            key = (run.qualname, node.value)
            if key not in found:
                found[key] = UnknownInput(facts.path, run.qualname, node.value)
    return list(found.values())


def _unannotated(function: cst.FunctionDef) -> dict[str, cst.Param]:
    params = function.params
    every = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    return {p.name.value: p for p in every if p.annotation is None and p.name.value not in _NOT_INPUTS}

