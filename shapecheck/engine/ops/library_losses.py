"""Op rules for losses of libraries the engine does not read that stand in for torch's own.

``torch_einops_utils.cross_entropy(logits, target, ignore_index=-100, reduction='mean',
class_dim=1)`` (lucidrains' utilities, which x-transformers and the other models of that family
import in place of ``F.cross_entropy``) takes torch's arguments in torch's layout: the classes on
axis 1 of the logits, one target per other position. It computes the same loss with a log-softmax
of its own (checked against the source of torch-einops-utils 0.2.0, ``stable_softmax.py``). Its
calls are recorded as ``cross_entropy`` events, so the rules and facts that read torch's
cross-entropy (SC602, SC603, the next-token evidence of SC204) read it too.

Its third and fourth positional parameters are ``ignore_index`` and ``reduction`` (torch's third is
``weight``): they are passed on by keyword. A ``class_dim`` other than 1 moves the classes to the
last axis first; that layout is not modelled, and the call stays an unknown call.
``dispatch.call_qualified`` asks ``torch_call`` for the torch call to apply.
"""

from __future__ import annotations

from shapecheck.engine.domain.values import int_of
from shapecheck.engine.ops.base import Call

#: Qualified names of the stand-ins, with the torch op each is.
LIBRARY_LOSSES = {
    "torch_einops_utils.cross_entropy": "cross_entropy",
    "torch_einops_utils.stable_softmax.cross_entropy": "cross_entropy",
}

#: The stand-ins' parameters after the logits and the targets, in order.
PARAMETERS = ("ignore_index", "reduction", "class_dim")

#: Their keywords for the logits and the targets, with torch's names.
KEYWORDS = (("logits", "input"), ("target", "target"))


def torch_call(qualname: str, call: Call) -> tuple[str, Call] | None:
    """The torch op a library loss named ``qualname`` is, with its arguments as torch takes them
    (``cross_entropy(logits, target, ...)``), or None: not such a loss, or a layout not modelled
    (the classes on an axis other than 1)."""
    op = LIBRARY_LOSSES.get(qualname)
    if op is None:
        return None
    kwargs = dict(call.kwargs)
    kwarg_nodes = dict(call.kwarg_nodes)
    for index, name in enumerate(PARAMETERS, start=2):
        if index < len(call.args) and name not in kwargs:
            kwargs[name] = call.args[index]
            node = call.arg_nodes[index] if index < len(call.arg_nodes) else None
            if node is not None:
                kwarg_nodes[name] = node
    if "class_dim" in kwargs:
        if int_of(kwargs.pop("class_dim")) != 1:
            return None
        kwarg_nodes.pop("class_dim", None)
    for name, keyword in KEYWORDS:
        if name in kwargs:
            kwargs[keyword] = kwargs.pop(name)
            if name in kwarg_nodes:
                kwarg_nodes[keyword] = kwarg_nodes.pop(name)
    return op, Call(call.node, call.args[:2], kwargs, call.arg_nodes[:2], kwarg_nodes)
