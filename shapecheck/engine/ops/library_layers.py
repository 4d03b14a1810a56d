"""Layer builders of libraries the engine does not read that stand in for torch's own.

``torch_einops_utils.nn.Sequential(*modules)`` (lucidrains' utilities, which x-transformers and the
other models of that family import) is ``nn.Sequential`` of the modules that are not None (checked
against the source of torch-einops-utils 0.2.0, ``nn.py``: ``PyTorchSequential(*filter(exists,
modules))``). A module the engine cannot tell from None stays in, as an unknown layer: the chain of
layers is checked only across what is known. ``dispatch.call_qualified`` asks ``torch_call`` for the
torch call to make.
"""

from __future__ import annotations

from shapecheck.engine.domain.values import ConstValue
from shapecheck.engine.ops.base import Call

#: Qualified names of the stand-ins, with the torch layer each builds.
LIBRARY_LAYERS = {
    "torch_einops_utils.nn.Sequential": "torch.nn.Sequential",
    "torch_einops_utils.Sequential": "torch.nn.Sequential",
}


def torch_call(qualname: str, call: Call) -> tuple[str, Call] | None:
    """The torch layer a library builder named ``qualname`` makes, with the arguments torch gets
    (the modules left out when they are None), or None when it is not such a builder."""
    layer = LIBRARY_LAYERS.get(qualname)
    if layer is None:
        return None
    kept = [
        (value, node)
        for value, node in zip(call.args, call.arg_nodes + (None,) * (len(call.args) - len(call.arg_nodes)))
        if not (isinstance(value, ConstValue) and value.value is None)
    ]
    args = tuple(value for value, _ in kept)
    nodes = tuple(node for _, node in kept)
    return layer, Call(call.node, args, call.kwargs, nodes, call.kwarg_nodes)
