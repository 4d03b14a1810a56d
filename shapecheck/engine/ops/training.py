"""Training-loop ops: what a training script does to its models and gradients, recorded for the
training-loop rules (SC601-SC603). Which models a path builds, their train / eval mode along the
path, whether gradients are on, every forward call of such a model, ``loss.backward()``, and the
index tensors windows are cut with (``torch.randint``, ``.tolist()``).

``torch.no_grad()`` / ``torch.inference_mode()`` / ``torch.set_grad_enabled(False)`` blocks and
``@torch.no_grad()`` functions turn gradients off; ``model.train()`` / ``model.eval()`` /
``model.train(False)`` set a model's mode (``domain.modes``). Models are recognised by structure: an
instance of an ``nn.Module`` subclass of the file, or a torch.nn layer, built outside any module's
own methods (a script's model, not a submodule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from shapecheck.engine.domain import modes
from shapecheck.engine.domain.tags import ModelOutputTag, Repeated
from shapecheck.engine.domain.values import (
    UNKNOWN,
    ConstValue,
    IntValue,
    ModuleIdent,
    ModuleValue,
    ObjectValue,
    QualifiedValue,
    TensorValue,
    TupleValue,
    Value,
)
from shapecheck.engine.facts.records import ModelCall
from shapecheck.engine.ops.base import Call, element_symbol, register

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter

#: Context managers and decorators that switch gradients off (True: they switch them on).
GRAD_SWITCHES = {
    "torch.no_grad": False,
    "torch.inference_mode": False,
    "torch.autograd.no_grad": False,
    "torch.autograd.grad_mode.no_grad": False,
    "torch.autograd.inference_mode": False,
    "torch.enable_grad": True,
}


def track_new_model(ident: ModuleIdent, node: cst.CSTNode, frame: "Frame") -> None:
    """A model built on this path starts in training mode. Layers a module builds for itself (in its
    own methods) are its submodules, not models of the script."""
    owner = frame.run.cls
    if owner is not None and owner.is_module:
        return
    frame.modes[ident] = modes.state(modes.TRAIN, node)


def adopt_children(args: "list[Value]", frame: "Frame") -> None:
    """Models passed to a constructor become its submodules: their mode is the parent's now."""
    for value in args:
        ident = getattr(value, "ident", None)
        if isinstance(value, (ModuleValue, ObjectValue)) and ident is not None:
            frame.modes.pop(ident, None)
        elif isinstance(value, TupleValue):
            adopt_children(list(value.items), frame)


def forget_modes(frame: "Frame", call: "Call", passed_only: bool) -> None:
    """A call the engine does not follow may switch modes: of the models passed to it
    (``passed_only``), or of every model of the path. They become unknown there."""
    if not frame.modes:
        return
    if passed_only:
        idents = [getattr(value, "ident", None) for value in list(call.args) + list(call.kwargs.values())]
        idents = [ident for ident in idents if ident is not None and ident in frame.modes]
    else:
        idents = list(frame.modes)
    for ident in idents:
        frame.modes[ident] = modes.state(modes.UNKNOWN_MODE, call.node)


def set_mode(receiver: Value, name: str, call: "Call", frame: "Frame") -> Value:
    """``model.train()``, ``model.train(False)``, ``model.eval()``: returns the model (torch does)."""
    ident = getattr(receiver, "ident", None)
    if ident is None:
        return receiver
    mode = modes.EVAL if name == "eval" else modes.TRAIN
    if name == "train" and call.has_arg(0, "mode"):
        flag = call.arg(0, "mode")
        if isinstance(flag, ConstValue) and isinstance(flag.value, bool):
            mode = modes.TRAIN if flag.value else modes.EVAL
        else:
            mode = modes.UNKNOWN_MODE
    frame.modes[ident] = modes.state(mode, call.node)
    return receiver


def is_mode_switch(receiver: Value, name: str) -> bool:
    if name not in ("train", "eval"):
        return False
    if isinstance(receiver, ObjectValue):
        return receiver.cls.is_module and name not in receiver.cls.methods
    return isinstance(receiver, ModuleValue)


def mark_output(result: Value, call: "Call") -> Value:
    """The output of a forward call of a script's model: tagged with the call (tuples item by item)."""
    if isinstance(result, TensorValue):
        if result.has(ModelOutputTag):
            return result  # a loss module over a model's logits: the model's call is what trains
        return result.with_tag(ModelOutputTag(call.node))
    if isinstance(result, TupleValue):
        return TupleValue(tuple(mark_output(item, call) for item in result.items))
    return result


#: nn.Module methods that return the module itself.
RETURN_SELF = ("to", "cuda", "cpu", "float", "half", "double", "bfloat16", "requires_grad_", "share_memory", "to_empty")


def returns_itself(receiver: Value, name: str) -> bool:
    if name not in RETURN_SELF:
        return False
    if isinstance(receiver, ObjectValue):
        return receiver.cls.is_module and name not in receiver.cls.methods
    return isinstance(receiver, ModuleValue)


def record_model_call(interp: "Interpreter", model: ObjectValue | ModuleValue, call: "Call", frame: "Frame") -> bool:
    """A forward call of a model whose mode this path tracks (False: not such a model)."""
    state = frame.modes.get(model.ident)
    if state is None:
        return False
    interp.facts.model_calls.append(ModelCall(model.ident, model, call.node, state, frame.grad, frame.run))
    return True


def grad_switch(interp: "Interpreter", item: cst.BaseExpression, frame: "Frame") -> bool | None:
    """What a ``with`` item or a decorator does to gradients: False (off), True (on), None (nothing
    known). ``torch.set_grad_enabled(flag)`` counts only with a literal flag."""
    func = item.func if isinstance(item, cst.Call) else item
    if _never_a_grad_switch(interp, func, frame):
        return None
    callee = interp.eval(func, frame)
    if not isinstance(callee, QualifiedValue):
        return None
    name = callee.qualname
    if name in GRAD_SWITCHES:
        if name.endswith("inference_mode") and isinstance(item, cst.Call) and item.args:
            flag = interp.eval(item.args[0].value, frame)
            return False if isinstance(flag, ConstValue) and flag.value is True else None
        return GRAD_SWITCHES[name]
    if name in ("torch.set_grad_enabled", "torch.autograd.set_grad_enabled") and isinstance(item, cst.Call) and item.args:
        flag = interp.eval(item.args[0].value, frame)
        if isinstance(flag, ConstValue) and isinstance(flag.value, bool):
            return flag.value
    return None


#: The last part of the name of every grad switch: a name from outside torch that ends otherwise is none.
_SWITCH_NAMES = frozenset(name.rsplit(".", 1)[1] for name in GRAD_SWITCHES) | {"set_grad_enabled"}


def _never_a_grad_switch(interp: "Interpreter", func: cst.BaseExpression, frame: "Frame") -> bool:
    """True for an imported name outside torch whose last part is no grad switch's
    (``@auto_docstring``, ``@can_return_tuple``): decided from the import alone, so that reading a
    decorator never loads the project module that defines it (a re-export of ``torch.no_grad``
    keeps its name and is still followed)."""
    parts: list[str] = []
    while isinstance(func, cst.Attribute):
        parts.append(func.attr.value)
        func = func.value
    if not isinstance(func, cst.Name):
        return False
    head = frame.env[func.value] if func.value in frame.env else interp.globals.get(func.value)
    if not isinstance(head, QualifiedValue):
        return False
    qualname = ".".join([head.qualname, *reversed(parts)])
    return qualname.split(".", 1)[0] != "torch" and qualname.rsplit(".", 1)[-1] not in _SWITCH_NAMES


def grad_disabled_by_decorator(interp: "Interpreter", node: cst.FunctionDef) -> bool:
    """``@torch.no_grad()`` / ``@torch.inference_mode()`` on the function."""
    if not node.decorators:
        return False
    frame = interp._module_frame()  # decorators are read in the module's scope
    return any(grad_switch(interp, decorator.decorator, frame) is False for decorator in node.decorators)


def _backward(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``loss.backward()`` (and ``scaler.scale(loss).backward()``): a training step; the event is the fact."""
    return ConstValue(None)


def _tolist(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``starts.tolist()`` of 1-D int tensor: its elements, one symbol for all of them."""
    tensor = call.tensor(0)
    if tensor.dtype == "int" and tensor.rank == 1:
        return Repeated(IntValue(element_symbol(interp, tensor)))
    return UNKNOWN


# ------------------------------------------------------------------------------------ registration
# One line per rule, after the definitions, so that the registry holds each module-level function (no
# decorator: mutation testing can then reach the rule bodies, see benchmarks/mutation_testing.py).

register(_backward, "backward")
register(_tolist, "tolist")
