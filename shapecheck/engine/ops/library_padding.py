"""Padding helpers of libraries the engine does not read, given as the one op they are.

torch-einops-utils (lucidrains' utilities, which x-transformers and the other models of that family
import) pads one axis with ``pad_at_dim(t, (before, after), *, dim=-1, value=0.)``, and with
``pad_left_at_dim(t, n, **kwargs)`` / ``pad_right_at_dim(t, n, **kwargs)``, which are
``pad_at_dim(t, (n, 0), ...)`` / ``pad_at_dim(t, (0, n), ...)`` (checked against the source of
torch-einops-utils 0.2.0, ``torch_einops_utils.py``). ``dispatch.call_qualified`` asks
``torch_call`` for the op (``shapes._pad_at_dim``) and its arguments. Without this they were
unknown calls: a window of a token sequence padded on the right was taken as moved (opaque).
"""

from __future__ import annotations

from shapecheck.engine.domain.values import IntValue, TupleValue
from shapecheck.engine.ops.base import Call
from shapecheck.engine.symbolic.dims import Dim

#: Qualified names of the helpers, with where the one amount goes: "both" takes the pair as given,
#: "before" / "after" put the one amount on that side (the other side 0).
PADDING_HELPERS = {
    "torch_einops_utils.pad_at_dim": "both",
    "torch_einops_utils.torch_einops_utils.pad_at_dim": "both",
    "torch_einops_utils.pad_left_at_dim": "before",
    "torch_einops_utils.torch_einops_utils.pad_left_at_dim": "before",
    "torch_einops_utils.pad_right_at_dim": "after",
    "torch_einops_utils.torch_einops_utils.pad_right_at_dim": "after",
}

OP = "torch_einops_utils.pad_at_dim"


def torch_call(qualname: str, call: Call) -> tuple[str, Call] | None:
    """The op a padding helper named ``qualname`` is, with its arguments as ``pad_at_dim`` takes them
    (``(t, (before, after))``, ``dim`` by keyword), or None: not such a helper, or called with
    arguments it does not take (the pad given by keyword, a positional ``dim``)."""
    side = PADDING_HELPERS.get(qualname)
    if side is None or len(call.args) != 2 or set(call.kwargs) - {"dim", "value"}:
        return None
    amount = call.args[1]
    if side == "both":
        pad = amount
    else:
        zero = IntValue(Dim.const(0))
        pad = TupleValue((amount, zero) if side == "before" else (zero, amount))
    kwargs = {key: value for key, value in call.kwargs.items() if key == "dim"}
    nodes = {key: node for key, node in call.kwarg_nodes.items() if key == "dim"}
    return OP, Call(call.node, (call.args[0], pad), kwargs, call.arg_nodes[:2], nodes)
