"""torch.nn's built-in attention layers and their axis convention (``batch_first``).

``nn.MultiheadAttention`` and the ``nn.Transformer*`` layers read ``(seq, batch, feature)`` unless
built with ``batch_first=True``. ``batch_first_evidence`` answers, for one call of such a layer,
whether its input is provably laid out ``(batch, seq, feature)`` instead, and why:

- a key padding mask ``(b, s)`` whose axes match axes 0 and 1 of the sequence it pads;
- an attention mask ``(t, s)`` (or ``(batch * heads, t, s)``) whose target length ``t`` is axis 1
  of the input (not axis 0);
- for an input of unknown shape, the sizes the code read off its axes stand for them
  (``T = x.shape[1]`` then a ``(T, T)`` mask; ``FileFacts.front_sizes``);
- token embeddings with positions added whose length is the input's axis 1 (``tok(ids) +
  pos(arange(T))`` gives ``(B, T, d)``; a seq-first model adds ``(T, 1, d)`` to ``(T, B, d)``);
- a ``batch_first=True`` layer elsewhere in the file called on a tensor whose first two axes are
  this input's first two.

The two axes must not be provably equal (a square input tells nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shapecheck.engine.domain.tags import PathShapeTag
from shapecheck.engine.domain.values import ConstValue, ModuleValue, PositionTag, TensorValue
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.engine.symbolic.dims import Dim, Truth, equal
from shapecheck.engine.symbolic.shapes import Shape

#: Forward parameters (after the module) of each layer.
FORWARD_PARAMETERS: dict[str, tuple[str, ...]] = {
    "MultiheadAttention": ("query", "key", "value", "key_padding_mask", "need_weights", "attn_mask"),
    "TransformerEncoderLayer": ("src", "src_mask", "src_key_padding_mask", "is_causal"),
    "TransformerEncoder": ("src", "mask", "src_key_padding_mask", "is_causal"),
    "TransformerDecoderLayer": ("tgt", "memory", "tgt_mask", "memory_mask", "tgt_key_padding_mask", "memory_key_padding_mask"),
    "TransformerDecoder": ("tgt", "memory", "tgt_mask", "memory_mask", "tgt_key_padding_mask", "memory_key_padding_mask"),
    "Transformer": ("src", "tgt", "src_mask", "tgt_mask", "memory_mask", "src_key_padding_mask", "tgt_key_padding_mask", "memory_key_padding_mask"),
}
#: (padding mask, the sequence it pads)
_PADDING = {
    "MultiheadAttention": (("key_padding_mask", "key"),),
    "TransformerEncoderLayer": (("src_key_padding_mask", "src"),),
    "TransformerEncoder": (("src_key_padding_mask", "src"),),
    "TransformerDecoderLayer": (("tgt_key_padding_mask", "tgt"), ("memory_key_padding_mask", "memory")),
    "TransformerDecoder": (("tgt_key_padding_mask", "tgt"), ("memory_key_padding_mask", "memory")),
    "Transformer": (("src_key_padding_mask", "src"), ("tgt_key_padding_mask", "tgt"), ("memory_key_padding_mask", "src")),
}
#: (square mask, the sequence whose length it has)
_SQUARE = {
    "MultiheadAttention": (("attn_mask", "query"),),
    "TransformerEncoderLayer": (("src_mask", "src"),),
    "TransformerEncoder": (("mask", "src"),),
    "TransformerDecoderLayer": (("tgt_mask", "tgt"),),
    "TransformerDecoder": (("tgt_mask", "tgt"),),
    "Transformer": (("src_mask", "src"), ("tgt_mask", "tgt")),
}
#: The layer a stack was built from.
_STACKED = {"TransformerEncoder": "encoder_layer", "TransformerDecoder": "decoder_layer"}


@dataclass(frozen=True)
class LayerCall:
    """One call of a built-in attention layer."""

    event: OpEvent
    module: ModuleValue
    input: TensorValue  # query / src / tgt
    #: The file's sizes read off the front of tensors of unknown shape (``FileFacts.front_sizes``).
    front_sizes: dict = field(default_factory=dict, compare=False, repr=False)

    def argument(self, name: str) -> TensorValue | None:
        names = FORWARD_PARAMETERS[self.module.kind]
        index = names.index(name) + 1
        if not self.event.has_arg(index, name):
            return None
        value = self.event.arg(index, name)
        return value if isinstance(value, TensorValue) else None

    def front(self, name: str, axis: int) -> Dim | None:
        """The size the code read off axis ``axis`` of the argument ``name`` while its shape was
        unknown (``T = x.shape[1]``), or None. The argument is the value passed, the same object the
        size was read off (a parameter the engine cannot see stays one object until rebound)."""
        names = FORWARD_PARAMETERS[self.module.kind]
        index = names.index(name) + 1
        if not self.event.has_arg(index, name):
            return None
        value = self.event.arg(index, name)
        entry = self.front_sizes.get((id(value), axis))
        return entry[1] if entry is not None and entry[0] is value else None


def seq_first_layer(module: ModuleValue) -> ModuleValue | None:
    """The layer whose ``batch_first`` is missing: the layer itself, or for a stack
    (``nn.TransformerEncoder(layer, n)``) the layer it repeats (where ``batch_first=True`` goes)."""
    stacked = _STACKED.get(module.kind)
    if stacked is not None:
        layer = module.params.get(stacked)
        return layer if isinstance(layer, ModuleValue) else None  # a stack repeats a layer, never a stack
    return module


def batch_first(module: ModuleValue) -> bool | None:
    """The layer's ``batch_first``: False when not given, None when the engine cannot read it."""
    stacked = _STACKED.get(module.kind)
    if stacked is not None:
        layer = module.params.get(stacked)
        return batch_first(layer) if isinstance(layer, ModuleValue) else None
    value = module.params.get("batch_first")
    if value is None:
        return False
    if isinstance(value, ConstValue) and isinstance(value.value, bool):
        return value.value
    return None


def layer_calls(facts: FileFacts) -> list[LayerCall]:
    calls = []
    for kind in FORWARD_PARAMETERS:
        for event in facts.events_of("module." + kind):
            module = event.arg(0)
            if isinstance(module, ModuleValue):
                first = FORWARD_PARAMETERS[kind][0]
                calls.append(LayerCall(event, module, event.tensor(1, first), facts.front_sizes))
    return calls


def _three_d(tensor: TensorValue | None) -> Shape | None:
    if tensor is None or tensor.shape is None or tensor.shape.variadic or tensor.shape.rank != 3:
        return None
    return tensor.shape


def _leading(call: LayerCall, name: str) -> tuple[Dim | None, Dim | None] | None:
    """Axes 0 and 1 of a layer's argument ``name``: from its shape when it is known to be 3-D, else
    the sizes the code read off it (``T = x.shape[1]`` on an input of unknown shape: axis 1 is
    ``T``, whatever its rank; an axis not read is None). None when neither is known."""
    tensor = call.argument(name)
    shape = _three_d(tensor)
    if shape is not None:
        return shape.dims[0], shape.dims[1]
    if tensor is not None and tensor.shape is not None and not tensor.shape.variadic:
        return None  # a known rank other than 3: not a (seq, batch, feature) input at all
    dims = (call.front(name, 0), call.front(name, 1))
    return dims if any(dim is not None for dim in dims) else None


def _mask_shape(mask: TensorValue | None) -> tuple[Shape | None, PathShapeTag | None]:
    """A mask's shape, and the path it holds on when only one: a mask the function builds on one
    path where the other passes the caller's (``if self.causal: attn_mask = self._get_mask(t)``)
    has the built shape on that path (``PathShapeTag``), which is where the layer misreads it."""
    if mask is None:
        return None, None
    if mask.shape is not None:
        return mask.shape, None
    built = mask.tag(PathShapeTag)
    return (built.shape, built) if built is not None else (None, None)


def _is(a, b, assumptions) -> bool:
    return equal(a, b, assumptions) is Truth.TRUE


def batch_first_evidence(call: LayerCall, calls: list[LayerCall]) -> str | None:
    """Why ``call``'s input is provably ``(batch, seq, feature)``, or None."""
    assumptions = call.event.assumptions
    kind = call.module.kind
    for mask_name, sequence_name in _PADDING[kind]:
        mask, leading = call.argument(mask_name), _leading(call, sequence_name)
        if mask is None or leading is None or mask.shape is None or mask.shape.variadic or mask.rank != 2:
            continue
        s0, s1 = leading
        if s0 is None or s1 is None or _is(s0, s1, assumptions):
            continue
        if _is(mask.shape.dims[0], s0, assumptions) and _is(mask.shape.dims[1], s1, assumptions):
            sequence = _three_d(call.argument(sequence_name))
            seen = str(sequence) if sequence is not None else f"(sizes {s0} and {s1} read off its axes 0 and 1)"
            return f"its {mask_name} {mask.shape} is (batch, seq) and matches axes 0 and 1 of the {sequence_name} {seen}"
    for mask_name, sequence_name in _SQUARE[kind]:
        mask, sequence = call.argument(mask_name), call.argument(sequence_name)
        leading = _leading(call, sequence_name)
        shape, path = _mask_shape(mask)
        if leading is None or shape is None or shape.variadic or shape.rank not in (2, 3):
            continue
        # A mask built on one path is compared under that path's assumptions, where the layer misreads it.
        where = path.assumptions if path is not None and path.assumptions is not None else assumptions
        s0, s1 = leading
        rows = shape.dims[-2]  # (L, S), or (N * num_heads, L, S): L is the query's length
        if s1 is None or not _is(rows, s1, where):
            continue
        if s0 is not None and (_is(rows, s0, where) or _is(s0, s1, where)):
            continue
        layout = "(seq, seq)" if shape.rank == 2 else "(batch * heads, seq, key seq)"
        named = f"its {mask_name} {shape}" + (" (on the path that builds it)" if path is not None else "")
        if rows != s1:
            named += f", where {rows} = {s1},"  # equal by the path's assumptions (``assert t == k.shape[1]``)
        if _three_d(sequence) is not None:
            return f"{named} is {layout} with seq = axis 1 of the {sequence_name} {sequence.shape}"
        return f"{named} is {layout} with seq = {s1}, the size read off axis 1 of the {sequence_name}"
    shape = _three_d(call.input)
    if shape is None or _is(shape.dims[0], shape.dims[1], assumptions):
        return None
    positions = call.input.tag(PositionTag)
    if positions is not None and positions.kind == "added" and positions.full_length is not None:
        length = positions.full_length
        if _is(length, shape.dims[1], assumptions) and not _is(length, shape.dims[0], assumptions):
            return f"positions of length {length} were added along its axis 1: it is (batch, seq, feature)"
    for other in calls:
        if other is call or batch_first(other.module) is not True:
            continue
        seen = _three_d(other.input)
        if seen is not None and all(_is(a, b, assumptions) for a, b in zip(seen.dims[:2], shape.dims[:2])):
            return (
                f"a batch_first=True {other.module.ident.label} in the same file is called on {seen}, whose "
                f"(batch, seq) axes are this input's axes 0 and 1"
            )
    return None
