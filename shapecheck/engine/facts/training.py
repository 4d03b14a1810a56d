"""Questions the training-loop rules ask (SC601-SC603), answered from the recorded facts.

- ``has_dropout``: does a model hold a layer that behaves differently in train and eval mode
  (dropout with a rate not known to be 0, batch norm, torch Transformer layers)?
- ``training_calls`` / ``evaluation_calls``: forward calls of a script's model whose output
  reaches ``loss.backward()`` (a training step), or that run with gradients off (an evaluation).
- ``loss_calls``: cross-entropy style losses with their logits and targets;
  ``regression_loss_calls``: MSE / L1 style losses with their prediction and target.
- ``has_causal_attention``: the file's attention masks the future somewhere (a language model).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from shapecheck.engine.domain.tags import ModelOutputTag, SequenceOriginTag, WindowPath
from shapecheck.engine.domain.values import (
    ConstValue,
    MaskedTag,
    ModuleValue,
    ObjectValue,
    TensorValue,
    TriangleTag,
    TupleValue,
    Value,
    scale_of,
)
from shapecheck.engine.facts.records import FileFacts, ModelCall, OpEvent
from shapecheck.engine.symbolic.dims import Truth, equal

#: Layers that act differently in train and eval mode, with the argument that can switch them off
#: (a dropout rate of 0) and its default.
MODE_DEPENDENT = {
    "Dropout": ("p", 0.5),
    "Dropout1d": ("p", 0.5),
    "Dropout2d": ("p", 0.5),
    "Dropout3d": ("p", 0.5),
    "AlphaDropout": ("p", 0.5),
    "FeatureAlphaDropout": ("p", 0.5),
    "MultiheadAttention": ("dropout", 0.0),
    "TransformerEncoderLayer": ("dropout", 0.1),
    "TransformerDecoderLayer": ("dropout", 0.1),
    "Transformer": ("dropout", 0.1),
    "BatchNorm1d": (None, None),
    "BatchNorm2d": (None, None),
    "BatchNorm3d": (None, None),
    "SyncBatchNorm": (None, None),
}


def _rate_may_be_positive(module: ModuleValue, name: str, default: float) -> bool:
    if name not in module.params:
        return default > 0
    value = module.params[name]
    rate = scale_of(value)
    number = rate.value if rate is not None else None
    if number is None:
        return not (isinstance(value, ConstValue) and value.value is None)
    return number > 0


def mode_dependent_layer(value: Value, depth: int = 0, seen: set[int] | None = None) -> str | None:
    """The first layer inside ``value`` that behaves differently in train and eval mode, as
    ``nn.Dropout(...)``-style text, or None."""
    seen = seen if seen is not None else set()
    if depth > 12 or id(value) in seen:
        return None
    seen.add(id(value))
    if isinstance(value, ModuleValue):
        switch = MODE_DEPENDENT.get(value.kind)
        if switch is not None:
            name, default = switch
            if name is None or _rate_may_be_positive(value, name, default):
                return f"nn.{value.kind}"
        children = list(value.items) + list(value.params.values())
    elif isinstance(value, ObjectValue):
        children = list(value.attrs.values())
    elif isinstance(value, TupleValue):
        children = list(value.items)
    else:
        element = getattr(value, "element", None)  # a Repeated list of layers
        children = [element] if element is not None else []
    for child in children:
        found = mode_dependent_layer(child, depth + 1, seen)
        if found is not None:
            return found
    return None


def backpropagated(facts: FileFacts) -> set[int]:
    """The forward calls (by node id) whose outputs reach a ``backward()``: training steps."""
    nodes: set[int] = set()
    for event in facts.events_of("backward"):
        tag = event.tensor(0).tag(ModelOutputTag)
        if tag is not None:
            nodes.add(id(tag.node))
    return nodes


def training_calls(facts: FileFacts) -> list[ModelCall]:
    """Forward calls with gradients on whose output reaches ``loss.backward()``."""
    trained = backpropagated(facts)
    return [call for call in facts.model_calls if call.grad is not False and id(call.node) in trained]


def evaluation_calls(facts: FileFacts) -> list[ModelCall]:
    """Forward calls under ``torch.no_grad()`` / ``torch.inference_mode()``."""
    return [call for call in facts.model_calls if call.grad is False]


def report_node(call: ModelCall):
    """Where to point for a model call: the call itself, or, when it is the model calling itself
    from one of its own methods (``self(idx)`` in ``generate``), the script's call of that method."""
    run = call.run
    node = call.node
    while run is not None and run.instance is call.model and run.call_node is not None:
        node = run.call_node
        run = run.parent
    return node


@dataclass(frozen=True)
class LossCall:
    """A classification loss over logits: ``F.cross_entropy`` / ``F.nll_loss`` /
    ``nn.CrossEntropyLoss()(...)``."""

    event: OpEvent
    logits: TensorValue
    target: TensorValue
    logits_node: object
    target_node: object


LOSS_OPS = ("cross_entropy", "nll_loss")
LOSS_MODULES = ("module.CrossEntropyLoss", "module.NLLLoss")


def loss_calls(facts: FileFacts) -> Iterator[LossCall]:
    for event in facts.events_of(*LOSS_OPS):
        yield LossCall(event, event.tensor(0, "input"), event.tensor(1, "target"), event.arg_node(0, "input"), event.arg_node(1, "target"))
    for event in facts.events_of(*LOSS_MODULES):
        yield LossCall(event, event.tensor(1, "input"), event.tensor(2, "target"), event.arg_node(1, "input"), event.arg_node(2, "target"))


REGRESSION_OPS = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss")
REGRESSION_MODULES = ("module.MSELoss", "module.L1Loss", "module.SmoothL1Loss", "module.HuberLoss")


def regression_loss_calls(facts: FileFacts) -> Iterator[LossCall]:
    """Losses of a prediction against a target of the same shape: ``F.mse_loss`` / ``F.l1_loss`` /
    ``F.smooth_l1_loss`` / ``F.huber_loss`` and their ``nn`` layers (the prediction in ``logits``)."""
    for event in facts.events_of(*REGRESSION_OPS):
        yield LossCall(event, event.tensor(0, "input"), event.tensor(1, "target"), event.arg_node(0, "input"), event.arg_node(1, "target"))
    for event in facts.events_of(*REGRESSION_MODULES):
        yield LossCall(event, event.tensor(1, "input"), event.tensor(2, "target"), event.arg_node(1, "input"), event.arg_node(2, "target"))


def sequence_origin(tensor: TensorValue) -> SequenceOriginTag | None:
    return tensor.tag(SequenceOriginTag)


def same_positions(inputs: SequenceOriginTag, targets: SequenceOriginTag, assumptions: object) -> tuple[WindowPath, WindowPath] | None:
    """A window of ``inputs`` and one of ``targets`` that one path meets (``WindowPath.meets``),
    provably at the same offset of the same sequence, or None. Windows kept per path (a prefix cut
    on one side of an ``if`` only) are compared path by path, never across paths that exclude
    each other."""
    if inputs.source is not targets.source:
        return None
    for window in inputs.windows():
        for target in targets.windows():
            if window.offset is None or target.offset is None or not window.meets(target):
                continue
            if equal(window.offset, target.offset, assumptions) is Truth.TRUE:  # type: ignore[arg-type]
                return window, target
    return None


def has_causal_attention(facts: FileFacts) -> bool:
    """Some attention of the file masks the future (a triangular mask, ``is_causal=True``)."""
    cached = getattr(facts, "_causal", None)
    if cached is not None:
        return cached
    answer = False
    for event in facts.events:
        if event.op == "scaled_dot_product_attention" and event.has_arg(5, "is_causal"):
            flag = event.arg(5, "is_causal")
            if not (isinstance(flag, ConstValue) and flag.value in (False, None)):
                answer = True
                break
        result = event.result
        if isinstance(result, TensorValue):
            masked = result.tag(MaskedTag)
            triangle = result.tag(TriangleTag)
            if (masked is not None and any(tag.causal for tag in masked.chain())) or (
                triangle is not None and (triangle.true_is_future is not None or triangle.additive)
            ):
                answer = True
                break
    facts._causal = answer  # type: ignore[attr-defined]
    return answer
