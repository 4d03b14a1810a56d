"""torch.nn layers: their constructor arguments, attributes, and forward shape rules.

Constructor arguments are bound by name whether given by position or keyword, so rules read
``module.param("in_features")`` without caring how the user spelled the call.
"""

from __future__ import annotations

from dataclasses import replace

from collections.abc import Callable
from typing import TYPE_CHECKING

import libcst as cst

from shapecheck.engine.domain.layers import ACTIVATIONS, SHAPE_PRESERVING, torch_layer
from shapecheck.engine.domain.tags import (
    AttentionOutputTag,
    DictValue,
    LayerOutputTag,
    ParameterTag,
    Repeated,
)
from shapecheck.engine.domain.values import (
    UNKNOWN,
    BoundMethod,
    ConstValue,
    IntValue,
    ModuleIdent,
    ModuleValue,
    ObjectValue,
    Opaque,
    MaskedTag,
    PositionTag,
    ProbsTag,
    ProjectionTag,
    ScaleTag,
    ScoresTag,
    TensorValue,
    TokenEmbeddingTag,
    TriangleTag,
    TupleValue,
    Value,
    as_tensor,
    dim_of,
)
from shapecheck.engine.facts.records import ModuleConstruction, passes_arguments
from shapecheck.engine.ops.base import (
    OPS,
    Call,
    apply,
    attended,
    conflict,
    lineage,
    loss_lineage,
    unify,
    unknown_call,
)
from shapecheck.engine.symbolic.dims import Dim, Truth, equal
from shapecheck.engine.symbolic.annotations import fresh_anonymous
from shapecheck.engine.symbolic.shapes import Shape

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter

#: Positional parameter names of the layers the engine knows.
SIGNATURES: dict[str, tuple[str, ...]] = {
    "Linear": ("in_features", "out_features", "bias"),
    "LazyLinear": ("out_features", "bias"),
    "Bilinear": ("in1_features", "in2_features", "out_features"),
    "Embedding": ("num_embeddings", "embedding_dim", "padding_idx"),
    "LayerNorm": ("normalized_shape", "eps", "elementwise_affine"),
    "RMSNorm": ("normalized_shape", "eps", "elementwise_affine"),
    "Dropout": ("p", "inplace"),
    "Softmax": ("dim",),
    "LogSoftmax": ("dim",),
    "MultiheadAttention": ("embed_dim", "num_heads", "dropout", "bias", "add_bias_kv", "add_zero_attn", "kdim", "vdim", "batch_first"),
    "TransformerEncoderLayer": ("d_model", "nhead", "dim_feedforward", "dropout", "activation", "layer_norm_eps", "batch_first"),
    "TransformerDecoderLayer": ("d_model", "nhead", "dim_feedforward", "dropout", "activation", "layer_norm_eps", "batch_first"),
    "TransformerEncoder": ("encoder_layer", "num_layers", "norm"),
    "TransformerDecoder": ("decoder_layer", "num_layers", "norm"),
    "Transformer": ("d_model", "nhead", "num_encoder_layers", "num_decoder_layers", "dim_feedforward", "dropout",
                    "activation", "custom_encoder", "custom_decoder", "layer_norm_eps", "batch_first"),
    "Parameter": ("data", "requires_grad"),
    "Buffer": ("data", "persistent"),
    "Sequential": (),
    "ModuleList": ("modules",),
    "ModuleDict": ("modules",),
    "CrossEntropyLoss": ("weight",),
    "NLLLoss": ("weight",),
    "MSELoss": ("size_average", "reduce", "reduction"),
    "L1Loss": ("size_average", "reduce", "reduction"),
    "SmoothL1Loss": ("size_average", "reduce", "reduction", "beta"),
    "HuberLoss": ("reduction", "delta"),
    "Conv1d": ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias"),
    "Conv2d": ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias"),
    "Conv3d": ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias"),
    "GroupNorm": ("num_groups", "num_channels", "eps", "affine"),
    "InstanceNorm1d": ("num_features", "eps", "momentum", "affine", "track_running_stats"),
    "InstanceNorm2d": ("num_features", "eps", "momentum", "affine", "track_running_stats"),
    "InstanceNorm3d": ("num_features", "eps", "momentum", "affine", "track_running_stats"),
}
#: Pooling layers and the number of spatial axes they slide over.
POOLINGS = {"MaxPool1d": 1, "MaxPool2d": 2, "MaxPool3d": 3, "AvgPool1d": 1, "AvgPool2d": 2, "AvgPool3d": 3}
for _kind in POOLINGS:
    SIGNATURES[_kind] = (
        ("kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode")
        if _kind.startswith("Max") else ("kernel_size", "stride", "padding", "ceil_mode")
    )
#: Convolutions and the number of spatial axes they slide over.
CONVOLUTIONS = {"Conv1d": 1, "Conv2d": 2, "Conv3d": 3}
#: Layers whose output width is their own: feeding one into a Linear of another width is a broken chain.
WIDTH_CHANGING = {"module.Linear", "module.Sequential", "module.Embedding", "module.LazyLinear"}


def bind(kind: str, call: Call) -> dict[str, Value]:
    names = SIGNATURES.get(kind, ())
    params: dict[str, Value] = {}
    for index, value in enumerate(call.args):
        if index < len(names):
            params[names[index]] = value
    for key, value in call.kwargs.items():
        params[key] = value
    return params


def construct(interp: "Interpreter", kind: str, call: Call, frame: "Frame") -> Value:
    """``nn.<kind>(...)``: a ModuleValue (or, for ``nn.Parameter``, the parameter tensor)."""
    if kind == "Parameter" or kind == "parameter.Parameter":
        data = as_tensor(call.arg(0, "data"))
        ident = ModuleIdent("nn.Parameter(...)", call.node)
        # A parameter is learned: what "may" have been positional in its initial values (a layer
        # scale ``config.init * torch.ones(d)``) is not what it holds. A positional table it was
        # initialised with (a sinusoidal init) still is one.
        tags = tuple(tag for tag in lineage(data) if not (type(tag) is PositionTag and tag.kind == "unknown"))
        return TensorValue(data.shape, data.dtype or "float", tags + (ParameterTag(ident, data.shape),), call.node)
    if kind == "Buffer" or kind == "parameter.Buffer":
        # ``self.pe = nn.Buffer(table, persistent=False)`` (torch >= 2.5): the tensor, registered as a
        # buffer of the module the attribute is set on (as ``register_buffer`` does).
        data = call.arg(0, "data")
        return as_buffer(data, ModuleIdent("nn.Buffer(...)", call.node), call.node) if isinstance(data, TensorValue) else data
    if kind.endswith("generate_square_subsequent_mask"):
        size = dim_of(call.arg(0, "sz"))
        shape = Shape((size, size)) if size is not None else None
        return TensorValue(shape, "float", (TriangleTag(False, 1, call.node, full_size=size, additive=True),), call.node)
    if kind in ("functional", "init") or kind.startswith(("functional.", "init.", "utils.")):
        return UNKNOWN
    params = bind(kind, call)
    ident = ModuleIdent(f"nn.{kind}(...)", call.node)
    items: tuple[Value, ...] = ()
    named: dict[str, Value] = {}
    repeated = False
    if kind == "Sequential":
        items = tuple(call.args)
        if len(items) == 1 and isinstance(items[0], Repeated):
            items, repeated = (items[0].element,), True  # nn.Sequential(*[Block() for _ in range(n)])
        elif isinstance(call.arg(0), DictValue):
            named = dict(call.arg(0).entries)  # type: ignore[union-attr]
            items = tuple(named.values())
        if _check_chain(interp, items, call, frame):
            params["__broken__"] = ConstValue(True)
    elif kind in ("ModuleList", "ModuleDict"):
        content = call.arg(0, "modules")
        if isinstance(content, TupleValue):
            items = content.items
        elif isinstance(content, Repeated):
            items, repeated = (content.element,), True
        elif isinstance(content, DictValue):
            named = dict(content.entries)
    module = ModuleValue(kind, params, ident, call.node, items, named, repeated)
    interp.facts.constructions.append(ModuleConstruction(kind, call.node, ident, params, frame.run))  # type: ignore[arg-type]
    return module


def _check_chain(interp: "Interpreter", items: tuple[Value, ...], call: Call, frame: "Frame") -> bool:
    """Consecutive Linear layers of a Sequential must agree: out_features of one = in_features of the next."""
    previous: ModuleValue | None = None
    broken = [False]
    for index, item in enumerate(items):
        item = torch_layer(item)
        if not isinstance(item, ModuleValue):
            previous = None
            continue
        if item.kind in SHAPE_PRESERVING:
            continue
        if item.kind == "Linear":
            if previous is not None:
                out_dim, in_dim = dim_of(previous.param("out_features")), dim_of(item.param("in_features"))
                if out_dim is not None and in_dim is not None and equal(out_dim, in_dim, frame.assumptions) is Truth.FALSE:
                    broken[0] = True
                    node = call.arg_nodes[index] if index < len(call.arg_nodes) and call.arg_nodes[index] is not None else call.node
                    conflict(
                        interp,
                        "layer-chain",
                        node,
                        f"layer {index} expects {in_dim} input features but the layer before it produces {out_dim}",
                        frame,
                        "Sequential",
                    )
            previous = item
        else:
            previous = None
    return broken[0]


def forward(interp: "Interpreter", module: ModuleValue, call: Call, frame: "Frame") -> Value:
    """Call a layer: its forward rule, with the module itself as argument 0 of the event."""

    name = "module." + module.kind
    if name not in OPS:

        return unknown_call(call)
    full = Call(call.node, (module,) + call.args, call.kwargs, (None,) + call.arg_nodes, call.kwarg_nodes)
    return apply(interp, name, full, frame)


def _input(call: Call) -> TensorValue:
    return as_tensor(call.arg(1, "input"))


def _shape_preserving(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    module: ModuleValue = call.args[0]  # type: ignore[assignment]
    x = _input(call)
    if module.kind in ("Dropout", "Identity", "Dropout1d", "Dropout2d", "AlphaDropout"):
        return x
    result = TensorValue(x.shape, x.dtype, lineage(x), call.node)
    layer = x.tag(LayerOutputTag)
    return result.with_tag(layer) if layer is not None else result


def _batch_norm(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``nn.BatchNorm1d/2d/3d``: the input's shape. Per channel it is an affine map (running
    statistics and a learned gain and bias: at inference it folds into the layer before it, as
    timm's and LeViT's conv-norm pairs are fused), so unlike a per-token norm (``LayerNorm``, a
    QK-norm) it does not set the scale of attention scores computed from its output."""
    x = _input(call)
    result = TensorValue(x.shape, x.dtype or "float", lineage(x), call.node)
    layer = x.tag(LayerOutputTag)
    return result.with_tag(layer) if layer is not None else result


def linear_output(
    interp: "Interpreter",
    x: TensorValue,
    in_features: Dim | None,
    out_features: Dim | None,
    node: cst.CSTNode,
    frame: "Frame",
    what: str,
    built: cst.CSTNode | None = None,
) -> TensorValue:
    """The output of a linear map of ``x``. ``built`` is the layer's constructor call: when the layers
    do not chain, the fix goes there (its ``in_features``), so the conflict points at it."""
    shape = None
    if x.shape is not None:
        last = x.shape.dim(-1)
        if last is not None and in_features is not None:
            unify(frame, last, in_features)
        if last is not None and in_features is not None and equal(last, in_features, frame.assumptions) is Truth.FALSE:
            # Fed straight from another layer: the layers do not chain (SC406); otherwise the input
            # of a matrix product has the wrong width (SC505).
            chained = x.has(LayerOutputTag)
            before = len(interp.facts.conflicts)
            conflict(
                interp,
                "layer-chain" if chained else "linear",
                node,
                f"{what} expects {in_features} input features but the input has shape {x.shape} (last dim {last})",
                frame,
                "linear",
            )
            recorded = interp.facts.conflicts[before]
            interp.facts.conflicts[before] = replace(
                recorded,
                detail=recorded.detail + _applied_in(frame) if chained and built is not None else recorded.detail,
                hint=f"the widths disagree: {what} is built with in_features={in_features} but receives {last}; "
                f"build it with in_features={last}, or give it an input of width {in_features}",
                at=built if chained else None,
            )
        if out_features is not None and (x.shape.variadic or x.shape.rank):
            shape = x.shape.with_dim(-1, out_features) if x.shape.dims else None
    elif in_features is not None and out_features is not None:
        shape = Shape((out_features,), variadic=True)
    return TensorValue(shape, "float", lineage(x), node)


def _refine_input(interp: "Interpreter", call: Call, frame: "Frame", last: Dim | None) -> TensorValue:
    """An input of unknown shape consumed by a layer with known in_features: its last dim is known."""
    x = _input(call)
    node = call.arg_nodes[1] if len(call.arg_nodes) > 1 else None
    if x.shape is None and last is not None and isinstance(node, cst.Name):
        current = frame.env.get(node.value)
        if current is None or isinstance(current, Opaque) or (isinstance(current, TensorValue) and current.shape is None):
            refined = TensorValue(Shape((last,), variadic=True), "float", x.tags, node)
            frame.env[node.value] = refined
            return refined
    return x


def _linear(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    module: ModuleValue = call.args[0]  # type: ignore[assignment]
    in_features = dim_of(module.param("in_features"))
    x = _refine_input(interp, call, frame, in_features)
    out_features = dim_of(module.param("out_features"))
    if out_features is None and x.shape is not None:
        # An nn.Linear whose width the engine cannot read (``nn.Linear(d, self.out_dim)``, ``out_dim``
        # unseen) still keeps the input's leading dims and rank: only the last dim is unnamed. (Not
        # ``F.linear`` with a weight of unknown shape: a 1-D weight drops the last axis.)
        out_features = fresh_anonymous()
    result = linear_output(
        interp, x, in_features, out_features, call.node, frame, _label(module), _sizes_written(interp, module)
    )
    source = x if x.shape is not None or x.tags or x.node is not None else None
    result = result.with_tag(LayerOutputTag(_label(module)))
    return result.with_tag(ProjectionTag(module.ident, (), source, call.node))


def _convolution(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``nn.Conv1d/2d/3d``: (N, C_in, *spatial) or (C_in, *spatial) -> C_out channels, each
    spatial size ``(L + 2p - d(k - 1) - 1) // s + 1`` (a patch embedding: ``H // p``). An input of
    unknown shape still gives the channel axis and the spatial rank."""
    module: ModuleValue = call.args[0]  # type: ignore[assignment]
    spatial = CONVOLUTIONS[module.kind]
    x = _input(call)
    in_channels, out_channels = dim_of(module.param("in_channels")), dim_of(module.param("out_channels"))
    if x.shape is None or (not x.shape.variadic and x.shape.rank not in (spatial + 1, spatial + 2)) or len(x.shape.dims) < spatial + 1:
        sizes = tuple(fresh_anonymous() for _ in range(spatial))
        shape = Shape(((out_channels if out_channels is not None else fresh_anonymous()),) + sizes, variadic=True)
        result = TensorValue(shape, "float", lineage(x), call.node).with_tag(LayerOutputTag(_label(module)))
        kind = _token_kind(module, spatial, x, call.node, out_channels)
        return result.with_tag(kind) if kind is not None else result
    channels = x.shape.dims[-(spatial + 1)]
    if in_channels is not None:
        unify(frame, channels, in_channels)
        if equal(channels, in_channels, frame.assumptions) is Truth.FALSE:
            chained = x.has(LayerOutputTag)
            conflict(
                interp,
                "layer-chain" if chained else "linear",
                call.node,
                f"{_label(module)} expects {in_channels} input channels but the input has shape {x.shape} "
                f"({channels} channels at axis {-(spatial + 1)})" + (_applied_in(frame) if chained else ""),
                frame,
                "conv",
            )
            if chained:
                interp.facts.conflicts[-1] = replace(interp.facts.conflicts[-1], at=_sizes_written(interp, module))
    sizes = tuple(
        _conv_size(size, _per_axis(_conv_arg(module, "kernel_size"), axis, spatial), _per_axis(_conv_arg(module, "stride"), axis, spatial, 1),
                   _conv_arg(module, "padding"), axis, spatial, _per_axis(_conv_arg(module, "dilation"), axis, spatial, 1))
        for axis, size in enumerate(x.shape.dims[-spatial:])
    )
    out = out_channels if out_channels is not None else fresh_anonymous()
    shape = Shape(x.shape.dims[: -(spatial + 1)] + (out,) + sizes, x.shape.variadic)
    result = TensorValue(shape, "float", lineage(x), call.node).with_tag(LayerOutputTag(_label(module)))
    if _mixes_heads(module, spatial, x, in_channels, out_channels, frame):
        roles = tuple(tag for tag in x.tags if type(tag) in ATTENTION_ROLES)
        return replace(result, tags=tuple(tag for tag in result.tags if type(tag) not in ATTENTION_ROLES) + roles)
    kind = _token_kind(module, spatial, x, call.node, out_channels)
    return result.with_tag(kind) if kind is not None else result


#: What attention scores or weights are, kept by a layer that mixes their heads.
ATTENTION_ROLES = (ScoresTag, ProbsTag, ScaleTag, MaskedTag)


def _mixes_heads(
    module: ModuleValue, spatial: int, x: TensorValue, in_channels: Dim | None, out_channels: Dim | None, frame: "Frame"
) -> bool:
    """Talking heads (EfficientFormer v2): a 1x1 ``nn.Conv2d(heads, heads, 1)`` over attention
    scores or weights ``(b, heads, n, m)`` mixes the heads at each (query, key) pair, so what comes
    out is still scores (before a softmax) or weights (after it), with their scale and mask. A
    kernel wider than one, a stride or a padding would move the key positions."""
    if spatial != 2 or not (x.has(ScoresTag) or x.has(ProbsTag)) or x.shape is None or x.shape.rank != 4:
        return False
    if in_channels is None or out_channels is None or equal(in_channels, out_channels, frame.assumptions) is not Truth.TRUE:
        return False
    for name, default in (("kernel_size", None), ("stride", 1), ("dilation", 1)):
        for axis in range(spatial):
            size = _per_axis(_conv_arg(module, name), axis, spatial, default)
            if size is None or not (size.is_const and size.value == 1):
                return False
    padding = _conv_arg(module, "padding")
    return padding is None or (isinstance(padding, ConstValue) and padding.value in (0, "valid", "same")) or all(
        (size := _per_axis(padding, axis, spatial, 0)) is not None and size.is_const and size.value == 0 for axis in range(spatial)
    )


def _pooling(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``nn.MaxPool2d`` / ``nn.AvgPool2d`` (and 1d / 3d): the channels and the leading axes kept, each
    spatial size ``(L + 2p - d(k - 1) - 1) // s + 1`` (stride defaulting to the kernel size;
    ``ceil_mode`` rounds up: unknown). A maximum or a mean of the input's own values: no scale, no
    new width (hieradet's query pooling)."""
    module: ModuleValue = call.args[0]  # type: ignore[assignment]
    spatial = POOLINGS[module.kind]
    x = _input(call)
    ceil = module.params.get("ceil_mode")
    exact = ceil is None or (isinstance(ceil, ConstValue) and ceil.value is False)
    indices = module.params.get("return_indices")
    if indices is not None and not (isinstance(indices, ConstValue) and indices.value is False):
        return unknown_call(call)  # (values, indices), or maybe
    if x.shape is None or len(x.shape.dims) < spatial + 1:
        shape = Shape(tuple(fresh_anonymous() for _ in range(spatial + 1)), variadic=True)
        return TensorValue(shape, x.dtype, lineage(x), call.node)
    kernel = _conv_arg(module, "kernel_size")
    stride = _conv_arg(module, "stride") or kernel  # torch: stride defaults to kernel_size
    sizes = tuple(
        _conv_size(size, _per_axis(kernel, axis, spatial), _per_axis(stride, axis, spatial),
                   _conv_arg(module, "padding"), axis, spatial, _per_axis(_conv_arg(module, "dilation"), axis, spatial, 1))
        if exact else fresh_anonymous()
        for axis, size in enumerate(x.shape.dims[-spatial:])
    )
    return TensorValue(Shape(x.shape.dims[:-spatial] + sizes, x.shape.variadic), x.dtype, lineage(x), call.node)


def _token_kind(module: ModuleValue, spatial: int, x: TensorValue, node: cst.CSTNode, width: Dim | None) -> object | None:
    """What a convolution makes of the tokens. Cutting an input that is not yet tokens into
    non-overlapping patches (``kernel_size == stride > 1``, no padding: a ViT's patch embedding)
    makes each patch a token embedding, with no position of its own. A zero-padded window over
    tokens (a depthwise conv position encoding, CPVT's PEG, CoaT's ConvPosEnc) tells each token
    where it sits from the zeros at the border: positional information."""
    if x.has(TokenEmbeddingTag) or x.has(PositionTag):
        if x.has(TokenEmbeddingTag) and not x.has(PositionTag) and _padded(module, spatial):
            return PositionTag(node, "conv")
        return None
    if _patchify(module, spatial):
        return TokenEmbeddingTag(node, width)
    return None


def _patchify(module: ModuleValue, spatial: int) -> bool:
    padding = _conv_arg(module, "padding")
    if not (padding is None or (isinstance(padding, ConstValue) and padding.value == "valid") or _all_zero(padding, spatial)):
        return False
    for axis in range(spatial):
        kernel = _per_axis(_conv_arg(module, "kernel_size"), axis, spatial)
        stride = _per_axis(_conv_arg(module, "stride"), axis, spatial, 1)
        dilation = _per_axis(_conv_arg(module, "dilation"), axis, spatial, 1)
        if kernel is None or stride is None or not (dilation == 1) or not (kernel == stride):
            return False
        if stride.is_const and stride.value <= 1:
            return False
    return True


def _padded(module: ModuleValue, spatial: int) -> bool:
    """Padding given and not zero on every axis: an amount, or ``"same"`` (never zero), not ``"valid"``."""
    padding = _conv_arg(module, "padding")
    return padding is not None and not _all_zero(padding, spatial) and not (isinstance(padding, ConstValue) and padding.value == "valid")


def _all_zero(padding: Value, spatial: int) -> bool:
    return all(_per_axis(padding, axis, spatial, 0) == 0 for axis in range(spatial))


def _conv_arg(module: ModuleValue, name: str) -> Value | None:
    """A conv argument as given, None when the call left it out (its default applies). A value
    given but unreadable (``stride=helper()``) is UNKNOWN, never the default."""
    return module.params.get(name)


def _per_axis(value: Value | None, axis: int, spatial: int, default: int | None = None) -> Dim | None:
    """One axis of a conv argument given as an int or a tuple (``kernel_size=(3, 3)``; torch
    repeats a one-item tuple over the axes)."""
    if value is None:
        return Dim.const(default) if default is not None else None
    if isinstance(value, TupleValue):
        if len(value.items) == 1 and default is not None:
            return dim_of(value.items[0])  # stride, padding, dilation: torch repeats one item (not a kernel size)
        return dim_of(value.items[axis]) if len(value.items) == spatial else None
    return dim_of(value)


def _conv_size(size: Dim, kernel: Dim | None, stride: Dim | None, padding: Value, axis: int, spatial: int, dilation: Dim | None) -> Dim:
    if isinstance(padding, ConstValue) and padding.value == "same":
        return size
    pad = Dim.const(0) if padding is None or (isinstance(padding, ConstValue) and padding.value == "valid") else _per_axis(padding, axis, spatial, 0)
    if kernel is None or stride is None or pad is None or dilation is None:
        return fresh_anonymous()
    if pad == 0 and dilation == 1 and kernel == stride:
        return size // stride  # non-overlapping patches: (L - p) // p + 1 is L // p
    try:
        return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1
    except (TypeError, ValueError, ZeroDivisionError):
        return fresh_anonymous()


def _sizes_written(interp: "Interpreter", module: ModuleValue) -> cst.CSTNode | None:
    """Where a layer's sizes were written: its constructor call, or, when a helper function built it
    from its own arguments (``make_proj(d_in, d_out)``), the outermost call that passed them."""
    built = layer_built(interp, module.ident)
    return built[0] if built is not None else module.node


def layer_built(interp: "Interpreter", ident: object) -> "tuple[cst.CSTNode, ModuleConstruction] | None":
    """Where the layer of this identity had its sizes written (see ``_sizes_written``), and its
    construction; None when the file did not construct it."""
    for built in reversed(interp.facts.constructions):
        if built.ident == ident:
            site, run = built.node, built.run
            while run is not None and run.inlined and run.instance is None and run.cls is None and passes_arguments(run.call_node):
                site, run = run.call_node, run.parent
            return site, built
    return None


def _applied_in(frame: "Frame") -> str:
    """`` where `Block.forward` applies it``: names the call when the finding is at the constructor."""
    run = frame.run
    return f" where `{run.qualname}` applies it" if run is not None and run.qualname else ""


def _label(module: ModuleValue) -> str:
    return module.ident.label if module.ident.label.startswith("self.") else f"nn.{module.kind}"


def _embedding(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    module: ModuleValue = call.args[0]  # type: ignore[assignment]
    ids = _input(call)
    dim = dim_of(module.param("embedding_dim"))
    shape = None
    if ids.shape is not None and dim is not None:
        shape = Shape(ids.shape.dims + (dim,), ids.shape.variadic)
    elif dim is not None:
        shape = Shape((dim,), variadic=True)
    position = ids.tag(PositionTag)
    if position is not None:
        # Looked up with positions: a table as long as the positions asked for.
        length = ids.shape.dim(-1) if ids.shape is not None else None
        tag: object = PositionTag(call.node, "table", length, sliced=False)
        return TensorValue(shape, "float", (tag,), call.node)
    tags = (TokenEmbeddingTag(call.node, dim),) + lineage(ids)
    if call.arg(1, "input") is UNKNOWN:
        # Ids that came out of a callee the engine cannot see (``pos_ids = helper(...)``), not the
        # model's input: they may be positions, so the lookup may be a positional embedding.
        tags = tags + (PositionTag(call.node, "unknown"),)
    return TensorValue(shape, "float", tags, call.node)


def _layer_norm(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    module: ModuleValue = call.args[0]  # type: ignore[assignment]
    normalized = dim_of(module.param("normalized_shape"))
    x = _refine_input(interp, call, frame, normalized)
    # A norm has a learned gain: a normalised query or key (QK-norm) sets its own scale.
    result = TensorValue(x.shape, x.dtype or "float", lineage(x) + (ScaleTag(None, call.node),), call.node)
    layer = x.tag(LayerOutputTag)
    return result.with_tag(layer) if layer is not None else result


def _softmax_module(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    module: ModuleValue = call.args[0]  # type: ignore[assignment]
    inner = Call(call.node, (call.arg(1, "input"),), {"dim": module.param("dim")}, call.arg_nodes[1:2])
    return apply(interp, "softmax", inner, frame)


def _sequential(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    module: ModuleValue = call.args[0]  # type: ignore[assignment]
    if "__broken__" in module.params:
        return UNKNOWN  # already reported where the layers were chained
    value: Value = call.arg(1, "input")
    for item in module.items:
        inner = Call(call.node, (value,), {}, call.arg_nodes[1:2])
        value = interp.call(item, inner, frame)
    return value


def _multihead_attention(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    query = as_tensor(call.arg(1, "query"))
    module: ModuleValue = call.args[0]  # type: ignore[assignment]
    embed = dim_of(module.param("embed_dim"))
    shape = query.shape
    if shape is not None and embed is not None and not shape.variadic:
        shape = shape.with_dim(-1, embed)
    out = TensorValue(shape, "float", lineage(query), call.node).with_tag(AttentionOutputTag(call.node))
    out = attended(out, query, call.node)
    return TupleValue((out, TensorValue(None, "float", (), call.node)))


def _encoder_layer(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """An encoder or decoder layer (or stack): its output is shaped like its first input, ``src``
    or, for a decoder, ``tgt`` (by position or keyword)."""
    module: ModuleValue = call.args[0]  # type: ignore[assignment]
    first = "tgt" if module.kind.startswith("TransformerDecoder") else "src"
    x = as_tensor(call.arg(1, first)) if call.has(1, first) else _input(call)
    out = TensorValue(x.shape, x.dtype, lineage(x), call.node).with_tag(AttentionOutputTag(call.node))
    return attended(out, x, call.node)


def _transformer(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``nn.Transformer()(src, tgt)``: the decoder's output, shaped like ``tgt``."""
    tgt = as_tensor(call.arg(2, "tgt"))
    return TensorValue(tgt.shape, tgt.dtype, lineage(tgt), call.node).with_tag(AttentionOutputTag(call.node))


def _cross_entropy_module(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return TensorValue(Shape(()), "float", loss_lineage(as_tensor(call.arg(1, "input"))), call.node)


def _regression_loss_module(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``nn.MSELoss()(pred, target)`` and the like (argument 0 is the layer)."""
    return TensorValue(None, "float", loss_lineage(as_tensor(call.arg(1, "input"))), call.node)


FORWARD: dict[str, Callable[["Interpreter", Call, "Frame"], Value]] = {
    "Linear": _linear,
    "Embedding": _embedding,
    "LayerNorm": _layer_norm,
    "RMSNorm": _layer_norm,
    "Softmax": _softmax_module,
    "LogSoftmax": _softmax_module,
    "Sequential": _sequential,
    "MultiheadAttention": _multihead_attention,
    "TransformerEncoderLayer": _encoder_layer,
    "TransformerDecoderLayer": _encoder_layer,
    "TransformerEncoder": _encoder_layer,
    "TransformerDecoder": _encoder_layer,
    "Transformer": _transformer,
    "CrossEntropyLoss": _cross_entropy_module,
    "NLLLoss": _cross_entropy_module,
    "MSELoss": _regression_loss_module,
    "L1Loss": _regression_loss_module,
    "SmoothL1Loss": _regression_loss_module,
    "HuberLoss": _regression_loss_module,
    "BatchNorm1d": _batch_norm,
    "BatchNorm2d": _batch_norm,
    "BatchNorm3d": _batch_norm,
    "SyncBatchNorm": _batch_norm,
    "GroupNorm": _batch_norm,
    "InstanceNorm1d": _batch_norm,
    "InstanceNorm2d": _batch_norm,
    "InstanceNorm3d": _batch_norm,
    "Conv1d": _convolution,
    "Conv2d": _convolution,
    "Conv3d": _convolution,
}


def register_forward_ops() -> None:

    for kind, rule in FORWARD.items():
        OPS["module." + kind] = rule
    for kind in SHAPE_PRESERVING:
        OPS["module." + kind] = _shape_preserving
    for kind in POOLINGS:
        OPS["module." + kind] = _pooling


register_forward_ops()


def module_attribute(interp: "Interpreter", module: ModuleValue, attr: str, node: cst.CSTNode, frame: "Frame") -> Value:
    if attr in module.named:
        return module.named[attr]  # self.transformer.wte of an nn.ModuleDict(dict(wte=...))
    if attr in module.params:
        return module.params[attr]
    if attr == "weight":
        shape = None
        if module.kind == "Linear":
            out_features, in_features = dim_of(module.param("out_features")), dim_of(module.param("in_features"))
            if out_features is not None and in_features is not None:
                shape = Shape((out_features, in_features))
        elif module.kind == "Embedding":
            num, dim = dim_of(module.param("num_embeddings")), dim_of(module.param("embedding_dim"))
            if num is not None and dim is not None:
                shape = Shape((num, dim))
        elif module.kind in ("LayerNorm", "RMSNorm"):
            normalized = dim_of(module.param("normalized_shape"))
            shape = Shape((normalized,)) if normalized is not None else None
        return TensorValue(shape, "float", (ParameterTag(module.ident),), node)
    if attr == "bias":
        out_features = dim_of(module.param("out_features"))
        return TensorValue(Shape((out_features,)) if out_features is not None else None, "float", (ParameterTag(module.ident),), node)
    return BoundMethod(module, attr)


def call_module_method(interp: "Interpreter", module: ModuleValue, name: str, call: Call, frame: "Frame") -> Value:
    if name in ("forward", "__call__"):
        return forward(interp, module, call, frame)
    if name in ("append",) and module.kind in ("ModuleList", "Sequential") and call.args and not module.repeated:
        module.items = module.items + (call.args[0],)
        return ConstValue(None)
    if name in ("extend",) and module.kind == "ModuleList":
        added = call.arg(0)
        if isinstance(added, Repeated) and not module.items:
            module.items, module.repeated = (added.element,), True
        elif isinstance(added, TupleValue) and not module.repeated:
            module.items = module.items + added.items
        else:
            module.items, module.repeated = (), False  # what it holds is no longer known
        return ConstValue(None)
    if name in RETURNS_SELF:
        return module
    if module.named and name in ("values", "items", "keys"):
        entries = list(module.named.items())
        if name == "values":
            return TupleValue(tuple(value for _, value in entries))
        if name == "keys":
            return TupleValue(tuple(ConstValue(key) for key, _ in entries))
        return TupleValue(tuple(TupleValue((ConstValue(key), value)) for key, value in entries))
    return UNKNOWN


#: Module methods that return the module itself (``Model(cfg).eval()`` is still the model).
RETURNS_SELF = frozenset(
    {"eval", "train", "to", "cuda", "cpu", "half", "float", "double", "bfloat16", "requires_grad_", "type", "share_memory"}
)


def register(interp: "Interpreter", owner: ObjectValue, call: Call, frame: "Frame") -> Value:
    """``self.register_buffer("mask", tensor)``: the buffer becomes an attribute of the module."""
    name = call.arg(0, "name")
    value = call.arg(1, "tensor") if "tensor" in call.kwargs or len(call.args) > 1 else call.arg(1, "param")
    if not (isinstance(name, ConstValue) and isinstance(name.value, str)):
        return ConstValue(None)
    owner.attrs[name.value] = as_buffer(as_tensor(value), ModuleIdent(f"self.{name.value}", call.node), call.node)
    return ConstValue(None)


def as_buffer(tensor: TensorValue, ident: ModuleIdent, node) -> TensorValue:
    """``tensor`` registered as a buffer of a module: a parameter-like tensor, and a positional
    table of its first non-1 axis's length (not sliced) when it holds positions."""
    tensor = tensor.with_tag(ParameterTag(ident, tensor.shape))
    position = tensor.tag(PositionTag)
    if position is not None and tensor.shape is not None and not tensor.shape.variadic:
        length = next((d for d in tensor.shape.dims if not (d.is_const and d.value == 1)), None)
        tensor = tensor.with_tag(PositionTag(node, "table", length, sliced=False, grid=position.grid))
    return tensor


def is_module_value(value: Value) -> bool:
    return isinstance(value, (ModuleValue, ObjectValue))


def const_int(value: Value) -> int | None:
    if isinstance(value, IntValue) and value.dim.is_const:
        return value.dim.value
    return None
