"""SC401 shared-qk-weights."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.domain.tags import ParameterTag
from shapecheck.engine.domain.values import (
    ModuleValue,
    ProjectionTag,
    ScoresTag,
    TensorValue,
)
from shapecheck.engine.facts.queries import attention_softmaxes, by_node
from shapecheck.engine.facts.records import FileFacts
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class SharedQKWeights(Rule):
    """Query and key computed by the same module or parameter.

    ## What it does
    Finds attention scores whose query and key come out of the very same projection: the same
    `nn.Linear` object assigned to two attributes (`self.W_K = self.W_Q`), one `nn.Parameter`
    bound to both (`self.W_Q = self.W_K = W`), or one projection output used as both q and k. It
    compares module identity, not names; the three parts of a fused `c_attn` split are distinct.
    It points at the assignment that makes the second name share the first one's weights.

    ## Why is this bad?
    With shared weights q = k, so the score matrix is symmetric and every token attends most to
    itself; the gradients of "what I look for" and "what I offer" are tied together. The model
    runs and trains, and learns much less than it could.

    ## Example
    ```python
    self.W_Q = nn.Linear(d_model, d_model)
    self.W_K = self.W_Q
    ```

    ## Use instead
    ```python
    self.W_Q = nn.Linear(d_model, d_model)
    self.W_K = nn.Linear(d_model, d_model)
    ```
    """

    code = "SC401"
    name = "shared-qk-weights"
    severity = Severity.ERROR
    summary = "Query and key projections are the same module or parameter."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        scores_events = attention_softmaxes(facts) + facts.events_of("scaled_dot_product_attention")
        for node, events in by_node(scores_events).items():
            for event in events:
                if event.op == "scaled_dot_product_attention":
                    query, key = event.tensor(0, "query"), event.tensor(1, "key")
                else:
                    tag = event.tensor(0, "input").tag(ScoresTag)
                    query, key = tag.query, tag.key
                shared = _shared(query, key)
                if shared is None:
                    continue
                key_projection = key.tag(ProjectionTag)
                # Where the second name is bound to the first one's weights (one finding however many
                # attentions use them), else each key computed with the query's projection: its call.
                where = _second_binding(facts, shared.ident) or key_projection.node
                label = shared.ident.label
                yield Report(
                    where,
                    f"query and key are both computed by {label}: the scores are symmetric and q and k cannot "
                    "learn different roles",
                    hint="give the key its own projection (a separate nn.Linear / nn.Parameter)",
                )
                break


def _shared(query: TensorValue, key: TensorValue) -> ProjectionTag | None:
    q, k = query.tag(ProjectionTag), key.tag(ProjectionTag)
    if q is None or k is None or q.ident is not k.ident or q.part != k.part:
        return None
    return q


def _second_binding(facts: FileFacts, ident: object):
    """The attribute assignment that binds ``ident`` to a second name of one class (``self.W_K =
    self.W_Q``, ``self.W_Q = self.W_K = W``). The same name bound again (its ``__init__`` run in
    another context with the same module) is not a second one."""
    names: dict[str, set[str]] = {}
    for assignment in facts.attribute_assignments:
        if _ident_of(assignment.value) is ident:
            bound = names.setdefault(assignment.owner.qualname, set())
            bound.add(assignment.name)
            if len(bound) == 2:
                return assignment.node
    return None


def _ident_of(value) -> object | None:
    if isinstance(value, ModuleValue):
        return value.ident
    if isinstance(value, TensorValue):
        parameter = value.tag(ParameterTag)
        return parameter.ident if parameter is not None else None
    return None
