"""Engine values and tensor tags that the op rules create and the rules read.

Values: ``Repeated`` (a list of like items), ``OpenTuple`` (a tuple's first items), ``DictValue``, ``LambdaValue``, ``PartialValue``,
``DtypeValue``, ``FinfoValue``, ``SplitTuple``. Tags (attached to a ``TensorValue``):
``KeyTransposed``, ``Permuted``, ``KernelLayout``, ``Reordered``, ``AttentionOutputTag``,
``ParameterTag``, ``LayerOutputTag``, ``FilledTag``, ``CauseTag``, ``NormalisedTag``, ``StreamTag``, ``ShiftTag``,
``PaddingTag``, ``SequenceOriginTag``, ``LeadingOfUnknownRank``. The general values and tags live in ``values``.
"""

from __future__ import annotations

from dataclasses import replace, dataclass, field

import libcst as cst

from shapecheck.engine.domain.values import UNKNOWN, ClassInfo, ObjectValue, Scale, TensorValue, TupleValue, Value
from shapecheck.engine.symbolic.dims import Dim
from shapecheck.engine.symbolic.shapes import Shape


@dataclass(frozen=True, slots=True)
class Repeated(Value):
    """A list built by a comprehension: every item is like ``element``."""

    element: Value


@dataclass(frozen=True, slots=True)
class OpenTuple(Value):
    """A tuple whose first items are known and whose further items, if any, are not: a known tuple
    extended by one the engine cannot see (``(sequence_output,) + encoder_outputs[1:]``), a filtered
    comprehension over known items (``tuple(v for v in [h, all_h] if v is not None)``), or the tuple
    one path returns where another returns a record out of view (Hugging Face's ``return_dict``).
    Its known items answer ``outputs[0]`` and ``outputs[1:]``; its length is unknown."""

    prefix: tuple[Value, ...]


def open_tuple(prefix: tuple[Value, ...]) -> Value:
    """The tuple that starts with ``prefix`` and may go on; nothing known when no item is."""
    return OpenTuple(prefix) if prefix else UNKNOWN


def leading_items(value: Value) -> tuple[Value, ...] | None:
    """The items known to start the sequence ``value``: a tuple's, or an open tuple's prefix."""
    if isinstance(value, TupleValue):
        return value.items
    if isinstance(value, OpenTuple):
        return value.prefix
    return None


@dataclass(frozen=True, slots=True)
class DictValue(Value):
    """A dict with constant string keys (``dict(wte=..., h=...)`` or ``{"wte": ...}``)."""

    entries: tuple[tuple[str, Value], ...]

    def get(self, key: str) -> Value | None:
        for name, value in self.entries:
            if name == key:
                return value
        return None


@dataclass(frozen=True, slots=True, eq=False)
class LambdaValue(Value):
    """A ``lambda``: its node and the names it can see where it was written."""

    node: cst.Lambda
    env: dict[str, Value]


@dataclass(frozen=True, slots=True, eq=False)
class PartialValue(Value):
    """``functools.partial(nn.Linear, bias=False)``: a callee with arguments bound in advance."""

    function: Value
    args: tuple[Value, ...]
    kwargs: dict[str, Value]


@dataclass(frozen=True, slots=True)
class DtypeValue(Value):
    """``torch.float32``, ``torch.bool`` ...: the dtype class it stands for."""

    dtype: str | None


@dataclass(frozen=True, slots=True)
class FinfoValue(Value):
    """``torch.finfo(dtype)``: its ``.min`` is a large negative number."""


@dataclass(frozen=True, slots=True)
class SplitTuple(Value):
    """The pieces of ``split`` / ``chunk`` / ``unbind``: each piece knows its index."""

    pieces: tuple[Value, ...] | None  # None: the number of pieces is unknown
    template: TensorValue
    exact: bool = False  # every piece has the template's shape (the split divides evenly)


@dataclass(frozen=True, slots=True)
class LeadingOfUnknownRank:
    """This tensor is a view ``(*leading, a, b)`` whose leading dims are those of ``base``, a tensor
    of unknown rank: Hugging Face's head split ``x.view(*hidden_states.shape[:-1], -1, head_dim)``.
    Moving the heads in front of the sequence (``transpose(1, 2)``) then tells that the leading
    dims are two, batch and sequence (see ``ops.shapes.presumed_leading``). Kept only until the
    next op that changes the shape."""

    base: Value = field(compare=False)


@dataclass(frozen=True, slots=True)
class WrittenSplit:
    """The last axis of this tensor is the last size ``size`` a view or reshape wrote (``node``):
    a head split's head dim, followed through shape-only ops (transpose, ``contiguous``, casts).
    Read only while the tensor's last dim is still ``size``."""

    node: cst.CSTNode = field(compare=False)
    size: Dim


@dataclass(frozen=True, slots=True)
class KeyTransposed:
    """This tensor is ``source`` with its last two axes swapped (``k.transpose(-2, -1)``)."""

    source: TensorValue


@dataclass(frozen=True, slots=True)
class Permuted:
    """This tensor is a strided view of a contiguous one with its axes reordered (transpose, permute,
    ``.T``): axis ``i`` here is axis ``order[i]`` there. ``node`` is the latest reordering call and
    ``steps`` how many reorderings were chained. ``contiguous()``, ``reshape`` and every op that
    writes a new tensor drop it; reordering back to the identity drops it too."""

    order: tuple[int, ...]
    node: cst.CSTNode

    @property
    def rank(self) -> int:
        return len(self.order)

    def merges_adjacent(self, first: int, last: int) -> bool:
        """Whether axes ``first..last`` (here) are consecutive in memory, so a view may merge them."""
        return all(self.order[a + 1] == self.order[a] + 1 for a in range(first, last))


@dataclass(frozen=True, slots=True)
class KernelLayout:
    """A kernel chose this tensor's memory layout (``F.scaled_dot_product_attention`` may return a
    tensor whose ``transpose(1, 2)`` is the contiguous one): no ``Permuted`` is derived from it."""

    node: cst.CSTNode


@dataclass(frozen=True, slots=True)
class Reordered:
    """This tensor is ``source`` with its axes reordered by one call (``node``): axis ``i`` here is
    axis ``order[i]`` of ``source``. Kept only until the next op that changes the shape."""

    order: tuple[int, ...]
    node: cst.CSTNode
    source: "TensorValue | None" = field(default=None, compare=False)

    @property
    def rank(self) -> int:
        return len(self.order)

    def contracts_features(self) -> bool:
        """As the right operand of a matmul, whether its axis -2 (the contracted one) is the last
        (feature) axis of ``source``: ``k.transpose(-2, -1)`` and ``permute(0, 2, 3, 1)`` of
        ``(b, t, h, d)`` yes; ``k.transpose(1, 2)`` of a 4-D key or ``k.T`` of a 3-D one no."""
        return self.order[-2] == self.rank - 1


@dataclass(frozen=True, slots=True)
class AttentionOutputTag:
    """probs @ v: the attention output. ``softmax`` is the node that made the probabilities and
    ``key_axis`` the axis of the probabilities contracted with the values: the real key axis."""

    node: cst.CSTNode
    softmax: cst.CSTNode | None = None
    key_axis: int | None = None


@dataclass(frozen=True, slots=True)
class ParameterTag:
    """This tensor is a parameter or buffer of a module (a weight matrix); ``shape`` as declared."""

    ident: object
    shape: Shape | None = None
    #: ``weight[:d]`` / ``weight[d:2 * d]``: the rows of a fused weight this piece is (its slice as
    #: written), so that the pieces project differently; None for the whole parameter.
    rows: str | None = None

    @property
    def per_position(self) -> bool:
        """Declared as a table with one row per position: (max_len, d) or (1, max_len, d)."""
        shape = self.shape
        if shape is None or shape.variadic or shape.rank is None or shape.rank < 2:
            return False
        rows = shape.dims[-2]
        return not (rows.is_const and rows.value == 1)


@dataclass(frozen=True, slots=True)
class LayerOutputTag:
    """The output of a width-changing layer (Linear, Embedding), through width-preserving ones
    (activations, dropout, norms): what the next layer's in_features must match."""

    label: str


@dataclass(frozen=True, slots=True)
class PathShapeTag:
    """The shape this tensor has on the path that built it, where another path holds a value the
    engine cannot see (``if self.causal: attn_mask = self._get_mask(t)`` with ``attn_mask`` a
    parameter): after the merge the shape is the caller's, unknown, but on that path it is
    ``shape``. Only the join sets it; computations do not carry it (``lineage``)."""

    shape: object  # Shape
    #: The assumptions of the path that built it (``assert t == k.shape[1]`` there), set at the merge.
    assumptions: object = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class FilledTag:
    """Every element of this tensor is ``value`` (zeros, ones, full)."""

    value: Scale


@dataclass(frozen=True, slots=True)
class CauseTag:
    """The nodes of the suspect ops this tensor was computed from: ops whose shapes conflicted and
    concatenations (which change a width). A finding downstream of a reported one is its follow-on,
    and the linter reports only the root (one root cause, one finding)."""

    nodes: frozenset


@dataclass(frozen=True, slots=True)
class NormalisedTag:
    """Computed from the output of a softmax (``node``, the first one met): a distribution, or a
    mixture of distributions (a gate mixing content and positional attention). Added to attention
    probabilities it keeps them a distribution; anything else added to them does not (SC104)."""

    node: cst.CSTNode


@dataclass(frozen=True, slots=True)
class StreamTag:
    """The attention sites this tensor's stream has passed through as the query side: a
    self-attention's output carries its query's sites and its own; a cross-attention's output does
    not carry what the keys and values passed through (an encoder's sites stay with the encoder).
    Where the stream ends (next-token logits, sampled tokens) tells which sites must be causal."""

    sites: frozenset


@dataclass(frozen=True, slots=True)
class ShiftTag:
    """Sliced by one position at one end of an axis (``logits[:, :-1]``, ``labels[..., 1:]``): the
    next-token shift of a language-model loss."""

    node: cst.CSTNode


@dataclass(frozen=True, slots=True)
class PaddingTag:
    """A mask computed by comparing token ids with a value (``ids == pad_id``): it hides padding,
    it is not a causal mask."""

    node: cst.CSTNode


class SequenceSource:
    """The identity of one token sequence (a tensor of ids that windows are cut from)."""

    __slots__ = ("node",)

    def __init__(self, node: cst.CSTNode | None) -> None:
        self.node = node


@dataclass(frozen=True, slots=True)
class SequenceOriginTag:
    """This tensor holds the tokens of ``source`` from position ``offset`` on, along a time axis of
    ``length`` positions, or was computed position by position from them (a model's logits keep the
    tag of its input ids). ``x = data[i:i+T]`` has offset i, ``y = data[i+1:i+T+1]`` offset i+1,
    ``logits[:, :-1]`` the offset of the logits. ``sliced``: the window was cut explicitly at
    ``node``. ``axis``: the time axis counted from the start, kept only while the tensor is indexed
    (so that a tensor of unknown shape, ``data[:n]`` then ``data[i:i+T]``, still has its axis).
    ``opaque``: the tokens went through a call the engine does not see (``torch.roll``, a helper of
    another module), which may have moved them. ``moves``: then the nodes of the unseen calls they
    went through, in order, when that is all that may have moved them (windows moved by the very
    same calls were moved alike, so they still compare with one another: ``same_moves``); empty
    where they may have been moved in ways that do not compare (padded before, rolled, joined from
    different calls).
    Offsets compare next-token targets with inputs (SC603).
    ``paths``: windows of this one sequence that differ from path to path (``logits[:, p:]`` under
    ``if exists(prefix):``, the plain output otherwise), each a ``WindowPath`` with the branch sides
    that lead to it; ``offset`` is then None. Empty for a window that is the same on every path."""

    source: SequenceSource
    offset: Dim | None
    length: Dim | None
    sliced: bool
    node: cst.CSTNode | None = None
    axis: int | None = None
    opaque: bool = False  # passed through a call the engine does not see (it may have shifted them)
    paths: "tuple[WindowPath, ...]" = ()
    moves: tuple = ()

    def same_moves(self, other: "SequenceOriginTag") -> bool:
        """Do these windows (targets) hold their positions as moved by no unseen call that ``other``
        (a prediction) did not go through too: neither went through one, or both came out of the
        same one, ``other`` perhaps through more after it (``embed[:, :-1]`` fed to a layer the
        engine cannot see, against windows of the same ``embed = self.net(ids)``)? Predictions are
        taken as computed position by position, as everywhere in SC603."""
        if not self.opaque:
            return True
        mine, theirs = self.moves, other.moves if other.opaque else ()
        return bool(mine) and len(mine) <= len(theirs) and all(a is b for a, b in zip(mine, theirs))

    def windows(self) -> "tuple[WindowPath, ...]":
        """The window on each path: the ``paths``, or the one window this tag is."""
        return self.paths or (WindowPath((), self.offset, self.sliced, self.node),)


#: At most this many unseen calls are kept in a window's ``moves`` (a loop applying one grows it).
MAX_MOVES = 16


def joined_moves(left: SequenceOriginTag, right: SequenceOriginTag) -> SequenceOriginTag:
    """``left`` with the ``opaque`` / ``moves`` of a window after two paths (or two operands) met:
    moved on either, by the same unseen calls on both if that is known, else in ways that do not
    compare (no ``moves``)."""
    same = len(left.moves) == len(right.moves) and all(a is b for a, b in zip(left.moves, right.moves))
    opaque = left.opaque or right.opaque
    moves = left.moves if same else ()
    return left if (opaque, moves) == (left.opaque, left.moves) else replace(left, opaque=opaque, moves=moves)


def moved_by(tag: SequenceOriginTag, node: object) -> SequenceOriginTag:
    """``tag`` after its tokens went through the unseen call ``node`` as well."""
    known = not tag.opaque or bool(tag.moves)
    moves = tag.moves + (node,) if known and len(tag.moves) < MAX_MOVES else ()
    return replace(tag, opaque=True, moves=moves)


@dataclass(frozen=True, slots=True)
class WindowPath:
    """One path's window of a sequence (``SequenceOriginTag.paths``): its offset, whether and where
    it was cut, and ``sides``, the branch taken at each merge it went through, as pairs (the
    branching node's id, 0 for the ``if`` / body side, 1 for the ``else`` side). Two windows whose
    sides agree at every branch both went through can be met on one path."""

    sides: tuple[tuple[int, int], ...]
    offset: Dim | None
    sliced: bool
    node: cst.CSTNode | None = None

    def meets(self, other: "WindowPath") -> bool:
        taken = dict(self.sides)
        return all(taken.get(site, side) == side for site, side in other.sides)


@dataclass(frozen=True, slots=True)
class ModelOutputTag:
    """Computed from the output of the forward call ``node`` of a script's model (a loss that
    ``backward()`` is called on tells which forward calls are training steps)."""

    node: cst.CSTNode


@dataclass(frozen=True, slots=True, eq=False)
class SuperValue(Value):
    """``super()`` inside a method of ``cls``: calls go to the parents of ``cls`` (a project class,
    or the torch.nn layer it derives from), with ``instance`` as self."""

    instance: ObjectValue
    cls: ClassInfo
