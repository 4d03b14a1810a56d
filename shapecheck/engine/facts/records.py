"""What rules read: the facts the engine computed about one file.

The interpreter records every operation it evaluated as an ``OpEvent`` (the op, the node, the abstract
arguments and result, the function it ran in), every provable shape contradiction as a
``ShapeConflict``, every module it saw constructed as a ``ModuleConstruction``, and for
``shapecheck shapes`` the value of every assignment. A node evaluated in several contexts (standalone
and inlined into a caller) has several events; the linter reports each (rule, node) once.
"""

from __future__ import annotations

from collections import defaultdict
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from shapecheck.engine.domain.arguments import Arguments
from shapecheck.engine.domain.joins import path_sizes
from shapecheck.engine.domain.values import (
    UNKNOWN,
    ClassInfo,
    ModuleIdent,
    TensorValue,
    Value,
    as_tensor,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.imports import ImportTable


@dataclass(eq=False)
class FunctionRun:
    """One analysis of one function: standalone, or inlined at a call site."""

    qualname: str
    node: cst.FunctionDef
    cls: ClassInfo | None
    inlined: bool
    parent: "FunctionRun | None" = None  # the run that called this one (inlined runs)
    call_node: cst.CSTNode | None = None  # the call site that inlined it
    instance: object = None  # values.ObjectValue bound to ``self``, if a method
    #: inlined runs: the argument expression of the call site bound to each parameter it gives
    arguments: dict[str, cst.CSTNode] = field(default_factory=dict)
    assignments: list["Assignment"] = field(default_factory=list)
    returns: Value = UNKNOWN

    def chain(self) -> Iterator["FunctionRun"]:
        """This run and the runs that called it, innermost first."""
        run: FunctionRun | None = self
        while run is not None:
            yield run
            run = run.parent

    def origin(self) -> cst.CSTNode | None:
        """The outermost place that created the objects this run works on: the instantiation
        (``EncoderLayer(d_model=512, n_heads=6)``) whose arguments reached here, if any."""
        origin = call = None
        for run in self.chain():
            ident = getattr(run.instance, "ident", None)
            node = getattr(ident, "node", None)
            if node is not None:
                origin = node
            elif run.inlined and run.call_node is not None and run.instance is None:
                if origin is None:
                    call = call or run.call_node
                elif passes_arguments(run.call_node):
                    origin = run.call_node  # a factory that got the values (``make(512, n_heads=6)``)
        return origin or call

    def parameters(self) -> set[str]:
        """The names of this run's function's parameters."""
        params = self.node.params
        return {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}

    def call_that_chose(self, expression: cst.CSTNode | None) -> cst.CSTNode | None:
        """The call site that chose the value of ``expression``, an argument written in this run's
        function, when it is a parameter of an inlined helper (followed up through helpers that pass
        it on, by the argument each call site bound); None when the value is written here. A
        parameter left at its default counts as chosen by the call that left it out."""
        run: FunctionRun | None = self
        place = None
        while isinstance(expression, cst.Name) and run is not None and run.inlined and isinstance(run.call_node, cst.Call):
            if expression.value not in run.parameters():
                break
            place, expression, run = run.call_node, run.arguments.get(expression.value), run.parent
        return place

    @property
    def root(self) -> "FunctionRun":
        run = self
        while run.parent is not None:
            run = run.parent
        return run


def passes_arguments(node: cst.CSTNode | None) -> bool:
    """A call that gives its callee arguments (``make(512, n_heads=6)``)."""
    return isinstance(node, cst.Call) and bool(node.args)


@dataclass(eq=False)
class Assignment:
    """A name bound at a statement, with the value it got (for ``shapecheck shapes``)."""

    node: cst.CSTNode
    name: str
    value: Value


@dataclass(eq=False)
class OpEvent(Arguments):
    """One evaluated operation: ``op`` is canonical ("softmax", "matmul", "masked_fill", "add"...)."""

    op: str
    node: cst.CSTNode
    args: tuple[Value, ...]
    kwargs: dict[str, Value]
    result: Value
    run: FunctionRun | None
    arg_nodes: tuple[cst.CSTNode | None, ...] = ()
    kwarg_nodes: dict[str, cst.CSTNode] = field(default_factory=dict)
    assumptions: object = None  # the dims.Assumptions of the path the op ran on

    @property
    def result_tensor(self) -> TensorValue:
        return as_tensor(self.result)


@dataclass(eq=False)
class ShapeConflict:
    """A provable contradiction between two shapes at one node.

    ``kind``: "matmul" (inner dims), "key-transpose" (a matmul whose key was transposed over the
    wrong axes: SC504 reports the transpose, so SC505 stays quiet), "linear" (in_features vs input),
    "broadcast" (elementwise op),
    "reshape" (numel), "annotation" (value vs jaxtyping annotation), "layer-chain" (consecutive
    layers of a Sequential). ``detail`` is a complete human sentence naming both shapes.
    """

    kind: str
    node: cst.CSTNode
    detail: str
    op: str = ""
    run: FunctionRun | None = None
    #: the suspect ops (earlier conflicts, concatenations) the operands were computed from
    causes: frozenset = frozenset()
    #: what to change, when the op knows better than the rule's generic hint
    hint: str | None = None
    #: where the fix goes when that is not ``node`` (the configuration default of a head count)
    at: cst.CSTNode | None = None


@dataclass(eq=False)
class ModuleConstruction:
    """A torch.nn layer constructed in the file (``nn.Linear(d_model, d_model)``)."""

    kind: str
    node: cst.Call
    ident: ModuleIdent
    params: dict[str, Value]
    run: FunctionRun | None


@dataclass(eq=False)
class AttributeAssignment:
    """``self.name = value`` in a method of a class (``owner``)."""

    owner: ClassInfo
    name: str
    node: cst.CSTNode
    value: Value
    run: FunctionRun | None


@dataclass(eq=False)
class Divisibility:
    """A check the code makes that ``dividend % divisor == 0`` (assert or raise), and its verdict."""

    node: cst.CSTNode
    dividend: Value
    divisor: Value
    holds: bool | None  # None: not decidable with what is known
    run: FunctionRun | None


@dataclass(eq=False)
class ModelCall:
    """A forward call of a model the path tracks (built on the path, or switched by train/eval).

    ``modes`` is the set of train / eval modes it may be in (``domain.modes``); ``grad`` whether
    gradients are on (False inside ``torch.no_grad()`` / a ``@torch.no_grad()`` function, None when
    a standalone function cannot tell). ``model`` is the ObjectValue or ModuleValue called.
    """

    ident: ModuleIdent
    model: Value
    node: cst.CSTNode
    modes: frozenset | None
    grad: bool | None
    run: FunctionRun | None


@dataclass(eq=False)
class InternalError:
    """An exception the engine caught while evaluating ``node``: a bug in shapecheck, counted and
    shown (``--verbose``), never silently dropped. ``where`` is the engine's file and line."""

    op: str
    node: cst.CSTNode
    error: str
    where: str


@dataclass(eq=False)
class FileFacts:
    """Everything the engine learned about one file."""

    module: cst.Module
    source: str
    path: str
    imports: "ImportTable | None" = None
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    runs: list[FunctionRun] = field(default_factory=list)
    events: list[OpEvent] = field(default_factory=list)
    conflicts: list[ShapeConflict] = field(default_factory=list)
    constructions: list[ModuleConstruction] = field(default_factory=list)
    attribute_assignments: list[AttributeAssignment] = field(default_factory=list)
    divisibility: list[Divisibility] = field(default_factory=list)
    instantiations: list[tuple[cst.Call, ClassInfo]] = field(default_factory=list)
    internal_errors: list[InternalError] = field(default_factory=list)
    #: Set by the linter before rules run: (path, line) of a node of this file or of a project module
    #: it imports (the engine itself knows no positions).
    #: Paths of the other project modules the analysis read (their text decides these facts too).
    project_reads: list[str] = field(default_factory=list)
    locator: "Callable[[cst.CSTNode], tuple[str, int] | None] | None" = field(default=None, repr=False)
    model_calls: list[ModelCall] = field(default_factory=list)
    #: Sizes read at run time from tensors of unknown shape (``x.shape[1]``): the input's own sizes.
    read_sizes: set = field(default_factory=set)
    #: ``x.shape[i]`` (i >= 0) read off a tensor of unknown shape: (id of the tensor, i) -> (the
    #: tensor, the size read), so that a size says which axis of which input it is (``T = x.shape[1]``
    #: then a ``(T, T)`` mask: the mask's rows are the input's axis 1).
    front_sizes: dict = field(default_factory=dict)
    #: Names of the sizes the engine made up for inputs it could not see (``n37``, ``size4``).
    invented_sizes: set = field(default_factory=set)
    _by_op: dict[str, list[OpEvent]] | None = field(default=None, repr=False)

    def made_up(self, dim: "Dim") -> bool:
        """A size the engine had to invent (anonymous ``_``, a fresh ``n37``, or a join of such
        sizes ``n90|n98``), not one the code computed: never the ground for a finding."""
        from shapecheck.engine.symbolic.shapes import ANONYMOUS_PREFIX

        parts = (part for name in dim.symbols() for part in path_sizes(name))
        return any(part.startswith(ANONYMOUS_PREFIX) or part in self.invented_sizes for part in parts)

    def events_of(self, *ops: str) -> list[OpEvent]:
        """All events of the given canonical ops, in evaluation order."""
        if self._by_op is None:
            table: dict[str, list[OpEvent]] = defaultdict(list)
            for event in self.events:
                table[event.op].append(event)
            self._by_op = table
        if len(ops) == 1:
            return self._by_op.get(ops[0], [])
        return [event for event in self.events if event.op in ops]

    def elsewhere(self, evidence: cst.CSTNode, finding: cst.CSTNode) -> str:
        """`` in masks.py:10`` when ``evidence`` lies in another file than ``finding`` (the path
        relative to the finding's folder), else the empty string."""
        if self.locator is None:
            return ""
        here, there = self.locator(finding), self.locator(evidence)
        if here is None or there is None or here[0] == there[0]:
            return ""
        relative = os.path.relpath(there[0], os.path.dirname(here[0]) or ".")
        return f" in {relative}:{there[1]}"

    def conflicts_of(self, *kinds: str) -> Iterator[ShapeConflict]:
        return (conflict for conflict in self.conflicts if conflict.kind in kinds)

    def tensors_assigned(self) -> Iterable[tuple[FunctionRun, Assignment]]:
        for run in self.runs:
            for assignment in run.assignments:
                if isinstance(assignment.value, TensorValue):
                    yield run, assignment

