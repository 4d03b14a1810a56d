"""Layer builders of libraries the engine does not read that stand in for torch's own.

``torch_einops_utils.nn.Sequential(*modules)`` (lucidrains' utilities, which x-transformers and the
other models of that family import) is ``nn.Sequential`` of the modules that are not None (checked
against the source of torch-einops-utils 0.2.0, ``nn.py``: ``PyTorchSequential(*filter(exists,
modules))``). A module the engine cannot tell from None stays in, as an unknown layer: the chain of
layers is checked only across what is known. ``dispatch.call_qualified`` asks ``torch_call`` for the
torch call to make.
"""

from __future__ import annotations

from collections.abc import Callable

from shapecheck.engine.domain.tags import DictValue
from shapecheck.engine.domain.values import ConstValue, IntValue, TupleValue, Value, int_of
from shapecheck.engine.ops.base import Call
from shapecheck.engine.symbolic.dims import Dim

#: Qualified names of the stand-ins, with the torch layer each builds.
LIBRARY_LAYERS = {
    "torch_einops_utils.nn.Sequential": "torch.nn.Sequential",
    "torch_einops_utils.Sequential": "torch.nn.Sequential",
}


def torch_call(qualname: str, call: Call) -> tuple[str, Call] | None:
    """The torch layer a library builder named ``qualname`` makes, with the arguments torch gets
    (the modules left out when they are None), or None when it is not such a builder."""
    builder = BUILDERS.get(qualname)
    if builder is not None:
        return builder(call)
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


# ------------------------------------------------------------------------------------ timm, mmpretrain
#
# Layer factories of timm and mmpretrain that pick a torch layer from their arguments (sources read
# in timm 1.0.31 and mmpretrain 1.2.0). Each is followed only where the arguments say which torch
# layer it builds; any other choice (a kernel list, experts, dynamic 'same' padding, a norm the
# engine does not model) stays an unknown call.


def _timm_create_conv2d(call: Call) -> tuple[str, Call] | None:
    """``timm.layers.create_conv2d(in, out, kernel_size, **kwargs)`` (``create_conv2d.py``): an int
    kernel and no ``num_experts`` make ``create_conv2d_pad``'s ``nn.Conv2d`` with ``groups = in`` when
    ``depthwise``, ``bias=False`` unless given, and the padding of ``get_padding_value``: ``''`` (the
    default) is ``((stride - 1) + dilation * (k - 1)) // 2``, ``'valid'`` 0, ``'same'`` the same
    number where it is static (stride 1, even ``dilation * (k - 1)``); an int is itself."""
    if len(call.args) < 3:
        return None
    kwargs = dict(call.kwargs)
    kernel = int_of(call.args[2])
    if kernel is None or "num_experts" in kwargs or "**" in kwargs:
        return None
    stride, dilation = _int_kwarg(kwargs, "stride", 1), _int_kwarg(kwargs, "dilation", 1)
    padding = kwargs.pop("padding", ConstValue(""))
    if stride is None or dilation is None:
        return None
    if isinstance(padding, ConstValue) and isinstance(padding.value, str):
        mode = padding.value.lower()
        static = stride == 1 and (dilation * (kernel - 1)) % 2 == 0
        if mode == "valid":
            amount = 0
        elif mode == "same" and not static:
            return None  # timm's Conv2dSame pads at run time
        else:
            amount = ((stride - 1) + dilation * (kernel - 1)) // 2
        padding = IntValue(Dim.const(amount))
    elif int_of(padding) is None:
        return None
    depthwise = kwargs.pop("depthwise", ConstValue(False))
    if not (isinstance(depthwise, ConstValue) and isinstance(depthwise.value, bool)):
        return None
    if depthwise.value:
        kwargs["groups"] = call.args[0]
    kwargs.setdefault("bias", ConstValue(False))
    kwargs["padding"] = padding
    args = call.args[:3]
    return "torch.nn.Conv2d", Call(call.node, args, kwargs, call.arg_nodes[:3], {})


#: timm's ``_NORM_MAP`` (``create_norm.py``), the names that are torch's own layers.
_TIMM_NORMS = {"batchnorm": "BatchNorm2d", "batchnorm2d": "BatchNorm2d", "batchnorm1d": "BatchNorm1d"}


def _timm_create_norm_layer(call: Call) -> tuple[str, Call] | None:
    """``timm.layers.create_norm_layer('batchnorm2d', num_features, **kwargs)``: ``get_norm_layer``
    reads the name without underscores, lower case, from ``_NORM_MAP``; the BatchNorm names are
    torch's layers."""
    if len(call.args) < 2 or not isinstance(call.args[0], ConstValue) or not isinstance(call.args[0].value, str):
        return None
    kind = _TIMM_NORMS.get(call.args[0].value.replace("_", "").lower())
    if kind is None:
        return None
    return "torch.nn." + kind, Call(call.node, call.args[1:2], dict(call.kwargs), call.arg_nodes[1:2], dict(call.kwarg_nodes))


#: mmpretrain's norm registry names that are torch's BatchNorm layers (``MODELS`` registers torch's
#: norms under mmengine's abbreviations).
_MM_NORMS = {"BN": "BatchNorm2d", "BN1d": "BatchNorm1d", "BN2d": "BatchNorm2d", "BN3d": "BatchNorm3d", "SyncBN": "SyncBatchNorm"}


def _mmpretrain_build_norm_layer(call: Call) -> tuple[str, Call] | None:
    """``mmpretrain.models.utils.build_norm_layer(dict(type='BN1d'), num_features)``
    (``models/utils/norm.py``): the registry's layer for ``cfg['type']``, built with
    ``num_features`` and the other keys of ``cfg`` (``eps`` defaulting to 1e-5)."""
    cfg = call.arg(0, "cfg")
    if len(call.args) + len(call.kwargs) < 2 or not isinstance(cfg, DictValue):
        return None
    kind = cfg.get("type")
    if not (isinstance(kind, ConstValue) and isinstance(kind.value, str)) or kind.value not in _MM_NORMS:
        return None
    features = call.arg(1, "num_features")
    kwargs = {key: value for key, value in cfg.entries if key not in ("type", "requires_grad")}
    return "torch.nn." + _MM_NORMS[kind.value], Call(call.node, (features,), kwargs, call.arg_nodes[1:2], {})


def _int_kwarg(kwargs: dict[str, Value], name: str, default: int) -> int | None:
    value = kwargs.get(name)
    return default if value is None else int_of(value)


BUILDERS: dict[str, Callable[[Call], "tuple[str, Call] | None"]] = {
    "timm.layers.create_conv2d": _timm_create_conv2d,
    "timm.layers.create_conv2d.create_conv2d": _timm_create_conv2d,
    "timm.layers.create_norm_layer": _timm_create_norm_layer,
    "timm.layers.create_norm.create_norm_layer": _timm_create_norm_layer,
    "mmpretrain.models.utils.build_norm_layer": _mmpretrain_build_norm_layer,
    "mmpretrain.models.utils.norm.build_norm_layer": _mmpretrain_build_norm_layer,
}


_HELPERS = ("timm.layers.to_2tuple", "timm.layers.helpers.to_2tuple")

#: Library functions that are torch's own under another name: xformers' ``ops.unbind(x, dim)``
#: (``xformers/ops/unbind.py``: ``torch.unbind`` whose pieces share one storage) in audiocraft.
TORCH_EQUIVALENTS = {"xformers.ops.unbind": "torch.unbind", "xformers.ops.unbind.unbind": "torch.unbind"}


def located(qualname: str, path: str | None) -> str:
    """A relative name (``..utils.build_norm_layer``, its file read alone, so not resolved through
    the project) resolved against the file's own location when that gives one of the library names
    above: ``mmpretrain/models/backbones/levit.py`` is in package ``mmpretrain.models.backbones``.
    Any other name is returned as it is."""
    if not qualname.startswith(".") or not path:
        return qualname
    dots = len(qualname) - len(qualname.lstrip("."))
    parts = [part for part in path.replace("\\", "/").split("/") if part][:-1]  # the file's package folders
    if dots - 1 >= len(parts):
        return qualname
    base = ".".join(parts[: len(parts) - (dots - 1)] + [qualname[dots:]])
    for known in (*BUILDERS, *_HELPERS):
        if base == known or base.endswith("/" + known) or base.endswith("." + known):
            return known
    return qualname


def library_value(qualname: str, call: Call) -> Value | None:
    """What a library helper that only rearranges its argument returns: timm's ``to_2tuple(x)``
    (``helpers.py``, ``_ntuple(2)``) repeats a number twice and keeps a tuple as it is."""
    if qualname not in _HELPERS or len(call.args) != 1 or call.kwargs:
        return None
    value = call.args[0]
    if isinstance(value, TupleValue):
        return value
    if isinstance(value, IntValue):
        return TupleValue((value, value))
    return None
