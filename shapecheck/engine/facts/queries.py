"""Questions rules ask of the facts, answered once here so that rules stay small.

A node evaluated in several contexts (standalone, and inlined where a caller passes real arguments)
has several events. A finding that depends on what a context knows (was the query scaled by the
caller? was a mask passed?) must hold in every context: ``in_every_context``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import libcst as cst

from shapecheck.engine.domain.tags import AttentionOutputTag, ParameterTag
from shapecheck.engine.domain.values import (
    ClassInfo,
    ConstValue,
    MaskedTag,
    ProbsTag,
    ProjectionTag,
    ScoresTag,
    TensorValue,
    TupleValue,
    Value,
    as_tensor,
    int_of,
    scale_of,
)
from shapecheck.engine.facts.records import FileFacts, FunctionRun, OpEvent


def by_node(events: Iterable[OpEvent]) -> dict[cst.CSTNode, list[OpEvent]]:
    table: dict[cst.CSTNode, list[OpEvent]] = {}
    for event in events:
        table.setdefault(event.node, []).append(event)
    return table


def in_every_context(
    events: Iterable[OpEvent],
    predicate: Callable[[OpEvent], "bool | None"],
    lands: "Callable[[OpEvent], object] | None" = None,
) -> Iterator[OpEvent]:
    """For each node: the first event for which ``predicate`` is True, provided no context of that
    node answers False. ``None`` means the context cannot tell (a standalone helper that does not
    know what its caller passes) and does not count either way.

    ``lands`` (optional) says where the finding of a context lands when that is not the event's
    node (SC102 reports where the factor was written): contexts are then grouped by both, so that
    a helper shared by several callers (transformers' ``eager_attention_forward``, given each
    class's ``self.scaling``) is judged per caller, and one caller's right factor does not clear
    another's wrong one. The contexts that land on one place must still all agree."""
    groups: dict[object, list[OpEvent]] = {}
    for event in events:
        place = lands(event) if lands is not None else None
        groups.setdefault((event.node, place), []).append(event)
    for group in groups.values():
        verdicts = [(predicate(event), event) for event in group]
        if any(verdict is False for verdict, _ in verdicts):
            continue
        for verdict, event in verdicts:
            if verdict is True:
                yield event
                break


def in_some_context(events: Iterable[OpEvent], predicate: Callable[[OpEvent], bool]) -> Iterator[OpEvent]:
    """For each node: the first event for which ``predicate`` holds."""
    for group in by_node(events).values():
        for event in group:
            if predicate(event):
                yield event
                break


def softmax_over_scores(facts: FileFacts) -> list[OpEvent]:
    """softmax / log_softmax events whose input is attention scores."""
    return [
        event
        for event in facts.events_of("softmax") + facts.events_of("log_softmax")
        if event.tensor(0, "input").has(ScoresTag)
    ]


def softmax_dim(event: OpEvent) -> int | None | str:
    """The softmax dim as an int, None when not given (implicit), "?" when unknown."""
    if event.has_arg(1, "dim"):
        value = int_of(event.arg(1, "dim"))
        return value if value is not None else "?"
    return None


def projection_of(tensor: TensorValue) -> ProjectionTag | None:
    return tensor.tag(ProjectionTag)


def is_bool_true(value: Value) -> bool:
    return isinstance(value, ConstValue) and value.value is True


def given(event: OpEvent, index: int, name: str) -> bool:
    """The argument was passed and is not a literal None."""
    if not event.has_arg(index, name):
        return False
    value = event.arg(index, name)
    return not (isinstance(value, ConstValue) and value.value is None)


def enclosing_classes(run: FunctionRun | None) -> list[ClassInfo]:
    """The classes of this run and of the runs that inlined it, innermost first."""
    classes: list[ClassInfo] = []
    while run is not None:
        if run.cls is not None and run.cls not in classes:
            classes.append(run.cls)
        run = run.parent
    return classes


@dataclass(frozen=True)
class SelfAttention:
    """Whether query and key of an attention come from the same input tensor."""

    known: bool
    same: bool


def _input_identity(tensor: TensorValue) -> object | None:
    projection = tensor.tag(ProjectionTag)
    if projection is None:
        return None
    return projection


def is_weight(tensor: TensorValue) -> bool:
    return tensor.has(ParameterTag)


def tensor_arg(event: OpEvent, index: int, name: str | None = None) -> TensorValue:
    return as_tensor(event.arg(index, name))


def self_attention(query: TensorValue, key: TensorValue) -> SelfAttention:
    """Query and key projected from the same tensor (self-attention), from different ones (cross),
    or not known."""
    q, k = query.tag(ProjectionTag), key.tag(ProjectionTag)
    if q is None or k is None:
        return SelfAttention(False, False)
    if q.ident is k.ident:
        return SelfAttention(True, True)
    if q.source is not None and k.source is not None:
        return SelfAttention(True, q.source is k.source)
    return SelfAttention(False, False)


@dataclass(frozen=True)
class MaskApplication:
    """A mask applied to attention scores by filling: ``masked_fill(mask, fill)`` or
    ``torch.where(cond, scores, fill)`` / ``torch.where(cond, fill, scores)``.

    ``true_blocks`` says whether the fill lands where the mask is True.
    """

    event: OpEvent
    scores: TensorValue
    mask: TensorValue
    fill: object  # values.Scale | None
    true_blocks: bool
    mask_node: cst.CSTNode | None


def mask_applications(facts: FileFacts) -> list[MaskApplication]:

    found: list[MaskApplication] = []
    for event in facts.events_of("masked_fill"):
        found.append(
            MaskApplication(
                event,
                event.tensor(0, "input"),
                event.tensor(1, "mask"),
                scale_of(event.arg(2, "value")),
                True,
                event.arg_node(1, "mask"),
            )
        )
    for event in facts.events_of("where"):
        tag = event.result_tensor.tag(MaskedTag)
        if tag is None or tag.node is not event.node or tag.mask is None:
            continue
        scores = event.tensor(2, "other") if tag.blocked_when else event.tensor(1, "input")
        found.append(MaskApplication(event, scores, tag.mask, tag.fill, bool(tag.blocked_when), event.arg_node(0, "condition")))
    return found


@dataclass(frozen=True)
class AttentionFacts:
    """Which softmaxes are attention: their probabilities are contracted with values (``p @ v``).

    A softmax over a ``q @ k^T``-shaped product that is never applied to values (a matching score,
    a pointer network, a similarity for a loss) is not attention, and attention rules leave it be.
    """

    softmaxes: frozenset[cst.CSTNode]
    mask_nodes: frozenset[cst.CSTNode]  # mask applications whose scores reach those softmaxes
    renormalized: frozenset[cst.CSTNode]  # softmaxes whose output is divided by its own sum (slots)


def attention_facts(facts: FileFacts) -> AttentionFacts:
    cached = getattr(facts, "_attention", None)
    if cached is not None:
        return cached

    softmaxes: set[cst.CSTNode] = set()
    for event in facts.events:
        result = event.result
        if isinstance(result, TensorValue):
            tag = result.tag(AttentionOutputTag)
            if tag is not None and tag.node is event.node and tag.softmax is not None:
                softmaxes.add(tag.softmax)
                # the softmaxes of other paths the weights came from (a join keeps them all)
                softmaxes.update(
                    probs.node for arg in event.args if isinstance(arg, TensorValue) for probs in arg.tags if type(probs) is ProbsTag and not probs.log
                )
    # Probabilities returned to a caller the file does not show: the values product is elsewhere.

    called = {id(run.node) for run in facts.runs if run.inlined}
    for run in facts.runs:
        if id(run.node) in called:
            continue  # its callers are in the file: what they do with the result is visible
        returned = run.returns.items if isinstance(run.returns, TupleValue) else (run.returns,)
        for value in returned:
            if isinstance(value, TensorValue):
                probs = value.tag(ProbsTag)
                if probs is not None and not probs.log and probs.scores.has(ScoresTag):
                    softmaxes.add(probs.node)
    masks: set[cst.CSTNode] = set()
    for event in facts.events_of("softmax") + facts.events_of("log_softmax"):
        if event.node in softmaxes:
            masked = event.tensor(0, "input").tag(MaskedTag)
            if masked is not None:
                masks.update(tag.node for tag in masked.chain())
    renormalized = _renormalized(facts)
    answer = AttentionFacts(frozenset(softmaxes), frozenset(masks), frozenset(renormalized))
    facts._attention = answer  # type: ignore[attr-defined]
    return answer


def _renormalized(facts: FileFacts) -> set[cst.CSTNode]:
    """Softmaxes whose probabilities are divided by their own sum (``p / (p.sum(-1) + eps)``):
    slot attention normalises over another axis first, on purpose."""

    producer: dict[int, OpEvent] = {}
    for event in facts.events_of("sum") + facts.events_of("binary"):
        producer[id(event.result)] = event

    def sums_of(value: object, node: cst.CSTNode, depth: int = 0) -> bool:
        event = producer.get(id(value))
        if event is None or depth > 3:
            return False
        if event.op == "sum":
            probs = event.tensor(0, "input").tag(ProbsTag)
            return probs is not None and probs.node is node
        return any(sums_of(arg, node, depth + 1) for arg in event.args[:2])

    found: set[cst.CSTNode] = set()
    for event in facts.events_of("binary"):
        operator = getattr(event.kwargs.get("operator"), "value", None)
        if operator != "truediv" or len(event.args) < 2:
            continue
        probs = event.tensor(0).tag(ProbsTag)
        if probs is not None and sums_of(event.args[1], probs.node):
            found.add(probs.node)
    return found


def attention_softmaxes(facts: FileFacts) -> list[OpEvent]:
    """Softmax events over attention scores whose probabilities reach the values."""
    nodes = attention_facts(facts).softmaxes
    return [event for event in softmax_over_scores(facts) if event.node in nodes]
