"""Joining the values two control-flow paths give one name.

The join keeps what both paths agree on. Provenance tags are unioned: a rule that asks "was the
score matrix scaled / masked?" must not fire when one path did it (precision first); rules that look
for a bad operation read the operation's own event, not the joined value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import libcst as cst

from shapecheck.engine.domain.tags import SequenceOriginTag, SequenceSource, joined_moves
from shapecheck.engine.domain.tags import PathShapeTag, Permuted, Repeated, Reordered, leading_items, open_tuple
from shapecheck.engine.domain.values import (
    UNKNOWN,
    BoundMethod,
    ConstValue,
    EitherFunction,
    either_string,
    string_options,
    EitherModule,
    EitherSizes,
    FloatValue,
    FunctionValue,
    IntValue,
    ObjectValue,
    QualifiedValue,
    Opaque,
    PositionTag,
    ProbsTag,
    ProjectionTag,
    ShapeValue,
    TensorValue,
    TupleValue,
    Value,
    is_module_value,
)
from shapecheck.engine.symbolic.dims import Dim
from shapecheck.engine.symbolic.annotations import fresh_anonymous
from shapecheck.engine.symbolic.shapes import Shape, is_anonymous


def join_values(left: Value, right: Value, site: object = None) -> Value:
    """What a name holds after two paths merge. ``site``: the branching node (an ``if`` statement or
    expression) whose body gave ``left`` and whose ``else`` gave ``right``, when the caller knows it:
    windows of one sequence that differ between the sides are then kept per path."""
    if left is right:
        return left
    if isinstance(left, TensorValue) and isinstance(right, TensorValue):
        return join_tensors(left, right, site)
    if isinstance(left, IntValue) and isinstance(right, IntValue):
        return left if left.dim == right.dim else _join_sizes(left.dim, right.dim)
    # An optional tensor (``self.pos_embed = nn.Parameter(...) if n else None``): the code that uses
    # it runs only where it is a tensor (``if self.pos_embed is not None:``), so it is the tensor.
    if isinstance(left, TensorValue) and _is_none(right):
        return left
    if isinstance(right, TensorValue) and _is_none(left):
        return right
    # An optional term of a sum (``token_type_embeds = self.w(ids) if ids is not None else 0``):
    # zero adds nothing, so what the sum may hold is what the tensor holds.
    if isinstance(left, TensorValue) and _is_zero(right):
        return left
    if isinstance(right, TensorValue) and _is_zero(left):
        return right
    # An optional layer (``self.q_proj = None if lora else nn.Linear(...)``): the code that calls
    # it runs only where it is set (``if self.q_lora_rank is None: self.q_proj(x)``), so it is the
    # layer, as a layer set to None by an ``if`` statement on the other path is.
    if is_module_value(left) and _is_none(right):
        return left
    if is_module_value(right) and _is_none(left):
        return right
    # ``if token_emb is None: token_emb = TokenEmbedding(dim, n)`` (or ``norm if norm is not None
    # else nn.LayerNorm(d)``) run standalone: the parameter is whatever module callers pass, the
    # default built on the other path says what it stands for (as for a tensor's fallback below).
    if is_module_value(left) and isinstance(right, Opaque):
        return left
    if is_module_value(right) and isinstance(left, Opaque):
        return right
    # ``key_states = cache.layers[i].keys`` on one path (read out of an object the engine cannot
    # see), ``self.k_proj(x).view(...)`` on the other: the name holds one kind of tensor, and the
    # path the engine can follow says which.
    if isinstance(left, TensorValue) and _read_from_the_unseen(right):
        return left
    if isinstance(right, TensorValue) and _read_from_the_unseen(left):
        return right
    # ``if position_ids is None: position_ids = self.position_ids[:, :t]`` run standalone: the
    # parameter is whatever callers pass, the fallback says what it stands for. The provenance is
    # kept (unioned, as between two tensors); the shape and dtype are the callers'.
    if isinstance(left, Opaque) and isinstance(right, TensorValue):
        left, right = right, left
    if isinstance(left, TensorValue) and isinstance(right, Opaque):
        # What the tensor's path built is kept as that path's shape (``PathShapeTag``).
        built = (PathShapeTag(left.shape),) if left.shape is not None and left.tag(PathShapeTag) is None else ()
        return TensorValue(None, None, left.tags + built, left.node)
    if isinstance(left, TupleValue) and isinstance(right, TupleValue) and len(left.items) == len(right.items):
        return TupleValue(tuple(join_values(a, b, site) for a, b in zip(left.items, right.items)))
    prefixes = _join_prefixes(left, right, site)
    if prefixes is not None:
        return prefixes
    if is_module_value(left) and is_module_value(right):
        return _either(left, right)
    if _is_function(left) and _is_function(right):
        return _either_function(left, right)
    strings = (string_options(left), string_options(right))
    if strings[0] is not None and strings[1] is not None:
        # ``layout = "b h t d"`` on one path, ``"b t h d"`` on the other: either.
        return either_string(strings[0] + strings[1])
    # A list before a loop that appends to it, and after: any number of items like both's.
    if isinstance(left, Repeated) and isinstance(right, Repeated):
        return Repeated(join_values(left.element, right.element))
    if isinstance(left, Repeated) and isinstance(right, TupleValue):
        left, right = right, left
    if isinstance(left, TupleValue) and isinstance(right, Repeated):
        return Repeated(join_all((right.element,) + left.items))
    if isinstance(left, (ShapeValue, EitherSizes)) and isinstance(right, (ShapeValue, EitherSizes)):
        if left != right:
            either = _either_sizes(left, right)
            if either is not None:
                return either
        elif type(left) is ShapeValue and type(right) is ShapeValue:
            return _also_sizes(left, right)
    try:
        if left == right:
            return left
    except Exception:  # pragma: no cover - defensive: exotic equality
        return UNKNOWN
    return UNKNOWN


def _join_windows(left: SequenceOriginTag, right: SequenceOriginTag) -> SequenceOriginTag:
    """One window of one sequence on two paths, after the merge: the length both paths agree on
    (else unknown), cut explicitly only if cut on both paths, moved by an unseen call if on either."""
    sliced = left.sliced and right.sliced
    return _moved_as_both(left, right, SequenceOriginTag(
        left.source,
        left.offset,
        left.length if left.length == right.length else None,
        sliced,
        left.node if sliced else None,
        left.axis if left.axis == right.axis else None,
        left.opaque or right.opaque,
    ))


#: At most this many per-path windows are kept for one tensor (nested branches multiply them).
MAX_WINDOW_PATHS = 8


def _windows_per_path(left: SequenceOriginTag, right: SequenceOriginTag, site: object) -> SequenceOriginTag | None:
    """Windows of one sequence that differ between the two sides of the branch ``site``
    (``logits[:, p:]`` where a prefix was given, ``logits`` where not): kept per path, each with the
    side it came from, so that a window can be compared with the windows met on the same path
    (``WindowPath.meets``). None when there would be too many."""
    key = id(site)
    paths = tuple(replace(window, sides=window.sides + ((key, 0),)) for window in left.windows()) + tuple(
        replace(window, sides=window.sides + ((key, 1),)) for window in right.windows()
    )
    if len(paths) > MAX_WINDOW_PATHS:
        return None
    sliced = left.sliced and right.sliced
    return _moved_as_both(left, right, SequenceOriginTag(
        left.source,
        None,
        left.length if left.length == right.length else None,
        sliced,
        left.node if sliced else None,
        left.axis if left.axis == right.axis else None,
        left.opaque or right.opaque,
        paths,
    ))


def _moved_as_both(left: SequenceOriginTag, right: SequenceOriginTag, joined: SequenceOriginTag) -> SequenceOriginTag:
    """``joined`` with the unseen calls both sides' tokens went through (``joined_moves``)."""
    moved = joined_moves(left, right)
    return replace(joined, opaque=moved.opaque, moves=moved.moves)


def join_all(values: "Sequence[Value]") -> Value:
    """What any one of ``values`` is: their join, left to right (at least one value)."""
    joined = values[0]
    for value in values[1:]:
        joined = join_values(joined, value)
    return joined


def _either(left: Value, right: Value) -> Value:
    """The modules two paths put under one name, each once (by identity)."""
    options: list[Value] = []
    for value in (left, right):
        for option in value.options if isinstance(value, EitherModule) else (value,):
            if not any(option is seen for seen in options):
                options.append(option)
    if len(options) > EitherModule.MAX_OPTIONS:
        return UNKNOWN
    return options[0] if len(options) == 1 else EitherModule(tuple(options))


def _is_function(value: Value) -> bool:
    """A function of the analysed code or an imported callee, or a choice of those."""
    return isinstance(value, (FunctionValue, QualifiedValue, EitherFunction))


def _either_function(left: Value, right: Value) -> Value:
    """The functions two paths put under one name, each once."""
    options: list[Value] = []
    for value in (left, right):
        for option in value.options if isinstance(value, EitherFunction) else (value,):
            if not any(option is seen or option == seen for seen in options):
                options.append(option)
    if len(options) > EitherFunction.MAX_OPTIONS:
        return UNKNOWN
    return options[0] if len(options) == 1 else EitherFunction(tuple(options))


def _join_prefixes(left: Value, right: Value, site: object) -> Value | None:
    """Tuples of two lengths, or a tuple whose length is open (``OpenTuple``): the items both
    start with, the rest open. A tuple on one path and, on the other, a value out of view or a
    record (Hugging Face's ``return (h,) + rest`` if not ``return_dict``, else ``return
    BaseModelOutput(...)``): the tuple's items, as the path the engine can follow says what the
    name holds (``outputs[0]`` is the same tensor either way). None: not such a pair."""
    sides: list[tuple[Value, ...] | None] = []
    for value in (left, right):
        items = leading_items(value)
        if items is None and not (_read_from_the_unseen(value) or _is_record(value) or _made_by_unseen_call(value)):
            return None
        sides.append(items)
    if sides[0] is None or sides[1] is None:
        known = sides[0] if sides[0] is not None else sides[1]
        return open_tuple(known) if known is not None else None
    return open_tuple(tuple(join_values(a, b, site) for a, b in zip(sides[0], sides[1])))


def _either_sizes(left: ShapeValue | EitherSizes, right: ShapeValue | EitherSizes) -> EitherSizes | None:
    """``input_shape = input_ids.size()`` on one path and ``inputs_embeds.size()[:-1]`` on the
    other (Hugging Face's either-input idiom), of inputs whose shapes are unknown: the sizes of one
    or the other, each path's kept, so that unpacking them (``batch_size, seq_length =
    input_shape``) says what shape each input had on its own path. None: other sizes."""
    options = tuple(
        option for side in (left, right) for option in (side.options if isinstance(side, EitherSizes) else (side,))
    )
    if len(options) > 4 or any(
        option.shape is not None or option.extra or type(option.source) is not cst.Name for option in options
    ):
        return None
    return EitherSizes(options)


def _also_sizes(left: ShapeValue, right: ShapeValue) -> ShapeValue:
    """Sizes of unknown shape that compare equal but were read off two inputs (``hidden_states.shape
    if encoder_hidden_states is None else encoder_hidden_states.shape``): the first input's, as
    before, with the second's kept beside (``also``) for unpacking to refine it on its own path."""
    if type(left.source) is not cst.Name or type(right.source) is not cst.Name or left.source.value == right.source.value:
        return left
    if left.shape is not None or right.shape is not None or left.extra or right.extra:
        return left
    return replace(left, also=left.also + (right,) + right.also)


def _is_record(value: Value) -> bool:
    """An instance of a class that is not a module (a dataclass of outputs)."""
    return isinstance(value, ObjectValue) and not value.cls.is_module


def _made_by_unseen_call(value: Value) -> bool:
    """The result of calling something out of view on tensors (``BaseModelOutput(last_hidden_state=h)``
    of an imported class): a tensor only maybe, of nothing known but what the call may have done
    (``unknown_call``'s mark: positions maybe given, on the call's own node; the ops that tag
    positions on their own node know the shape or the dtype of what they make)."""
    if not isinstance(value, TensorValue) or value.shape is not None or value.dtype is not None:
        return False
    return any(type(tag) is PositionTag and tag.node is value.node for tag in value.tags)


def _read_from_the_unseen(value: Value) -> bool:
    """Nothing known (an unknown call's result, an item of an unseen container), or an attribute
    read off such a value (``cache.layers[i].keys``, which reads as a bound method of an unknown)."""
    return value is UNKNOWN or (isinstance(value, BoundMethod) and value.receiver is UNKNOWN)


def _join_sizes(left: Dim, right: Dim) -> Value:
    """Two sizes a name has on two paths (``head_dim = attn_head_dim`` on one, ``dim // num_heads``
    on the other): the size ``a|b``, equal to nothing known but itself, so that what is computed from
    it on every path (``head_dim ** -0.5`` and the head split) still agrees. Sizes already joined, or
    unnamed, give an unknown (a loop does not grow a chain of joins)."""
    if is_path_join(left) or is_path_join(right) or is_anonymous(left) or is_anonymous(right):
        return UNKNOWN
    joined = path_join(left, right)
    return IntValue(joined) if joined is not None else UNKNOWN


def unseen_or_size(left: Value, right: Value) -> Value | None:
    """``getattr(config, "head_dim", None) or hidden_size // heads``: a value the engine cannot see
    (an attribute of a configuration it does not read) or, when that is falsy, a size. Where the
    code takes the result for a size (the fallback is one), it is the size ``a|b``, one or the
    other, as a size a name holds on two paths is. None when the operands are not such a pair (a
    number given to a ``float | None`` parameter stays a number)."""
    if type(left) is not Opaque or not isinstance(right, IntValue):
        return None
    joined = _join_sizes(left.as_dim(), right.dim)
    return joined if isinstance(joined, IntValue) else None


def _is_none(value: Value) -> bool:
    return isinstance(value, ConstValue) and value.value is None


def _is_zero(value: Value) -> bool:
    """The number 0 (``0`` or ``0.``)."""
    if isinstance(value, IntValue):
        return value.dim.is_const and value.dim.value == 0
    return isinstance(value, FloatValue) and value.scale.coef == 0 and not value.scale.factors


#: Joins the names of a size that differs between paths: ``a|b`` is ``a`` on one path, ``b`` on another.
PATH_SEPARATOR = "|"


def path_sizes(symbol: str) -> list[str]:
    """The names a symbol stands for on the different paths (``a|b`` -> ``[a, b]``; a plain symbol is
    its own one name)."""
    return symbol.split(PATH_SEPARATOR)


def path_join(a: Dim, b: Dim) -> Dim | None:
    """The size that is ``a`` on one path and ``b`` on another (``a|b``), or None when no symbol can
    name it."""
    try:
        return Dim.sym(f"{a}{PATH_SEPARATOR}{b}")
    except ValueError:
        return None


def is_path_join(dim: Dim) -> bool:
    """A size with a symbol that differs between paths (``a|b``): equal to nothing known."""
    return any(PATH_SEPARATOR in symbol for symbol in dim.symbols())


def may_agree_on_a_path(a: Dim, b: Dim) -> bool:
    """Two sizes, at least one a single path-joined symbol, that share a path's size: on that path
    they are equal (``ids|embeds`` and ``ids|embeds|position_ids``)."""
    if a.name is None or b.name is None or not (is_path_join(a) or is_path_join(b)):
        return False
    return bool(set(path_sizes(a.name)) & set(path_sizes(b.name)))


def join_shapes(left: Shape | None, right: Shape | None) -> Shape | None:
    """Shapes of the same rank keep their rank; a dim that differs between the paths becomes the
    symbol ``a|b``, equal to nothing known (so never the ground for a finding; a dim unnamed on
    one path stays unnamed, ``_``). Shapes of
    different or unknown ranks keep their common trailing dims after an unknown prefix: a loop
    whose body turns ``(b, t, d)`` into ``(*, b, t, d)`` leaves ``(*, b, t, d)``."""
    if left == right:
        return left
    if left is None or right is None:
        return None
    variadic = left.variadic
    if left.variadic != right.variadic or len(left.dims) != len(right.dims):
        common = min(len(left.dims), len(right.dims))
        if common == 0:
            return None
        left, right = Shape(left.dims[-common:], True), Shape(right.dims[-common:], True)
        variadic = True
    dims = []
    for a, b in zip(left.dims, right.dims):
        if a == b:
            dims.append(a)
            continue
        if is_anonymous(a) or is_anonymous(b):
            dims.append(fresh_anonymous())  # unnamed on one path: unnamed after the merge
            continue
        joined = path_join(a, b)
        if joined is None:
            return None
        dims.append(joined)
    return Shape(tuple(dims), variadic)


def join_tensors(left: TensorValue, right: TensorValue, site: object = None) -> TensorValue:
    shape = join_shapes(left.shape, right.shape)
    dtype = left.dtype if left.dtype == right.dtype else None
    kinds = {type(tag) for tag in left.tags}
    tags = left.tags + tuple(tag for tag in right.tags if type(tag) not in kinds)
    # Probabilities of two softmaxes (``softmax(x, dtype=float32)`` on one path, ``softmax(x)`` on
    # the other): both reach what follows, so both are kept (``tag`` reads the first).
    tags = tags + tuple(
        tag for tag in right.tags if type(tag) is ProbsTag and ProbsTag in kinds and all(tag.node is not kept.node for kept in left.tags if type(kept) is ProbsTag)
    )
    origins = left.tag(SequenceOriginTag), right.tag(SequenceOriginTag)
    per_path = None
    if (
        site is not None and origins[0] is not None and origins[1] is not None and origins[0] != origins[1]
        and origins[0].source is origins[1].source
        and (origins[0].offset != origins[1].offset or origins[0].paths or origins[1].paths)
    ):
        # ``if exists(prefix): logits = logits[:, p:]``: a window on each path, kept per path.
        per_path = _windows_per_path(origins[0], origins[1], site)
    if per_path is not None:
        tags = tuple(tag for tag in tags if type(tag) is not SequenceOriginTag) + (per_path,)
    elif (
        origins[0] is not None and origins[1] is not None and origins[0] != origins[1]
        and origins[0].source is origins[1].source and origins[0].offset == origins[1].offset
        and not (origins[0].paths or origins[1].paths)
    ):
        # One window of one sequence (the tokens on one path, what a layer the engine cannot see
        # made of them on the other): still that window. Windows at different offsets
        # (``data[:n]`` or ``data[n:]``) are a sequence of their own, below.
        tags = tuple(tag for tag in tags if type(tag) is not SequenceOriginTag) + (_join_windows(*origins),)
    elif origins[0] is not None and origins[1] is not None and origins[0] != origins[1]:
        # ``data = train_data if split == "train" else val_data``: a sequence of its own.
        length = shape.dims[-1] if shape is not None and shape.dims else None
        axis = origins[0].axis if origins[0].axis == origins[1].axis else None
        fresh = SequenceOriginTag(SequenceSource(None), Dim.const(0), length, False, None, axis)
        tags = tuple(tag for tag in tags if type(tag) is not SequenceOriginTag) + (fresh,)
    # A memory layout holds after the merge only when both paths leave the same one.
    for layout in (Permuted, Reordered):
        if left.tag(layout) != right.tag(layout):
            tags = tuple(tag for tag in tags if type(tag) is not layout)
    # Two paths' projections (a query from the fused qkv on one, from the caller on the other, a key
    # from another piece of it): which projection made the tensor is not known after the merge.
    projections = left.tag(ProjectionTag), right.tag(ProjectionTag)
    if projections[0] is not None and projections[1] is not None and projections[0] != projections[1]:
        tags = tuple(tag for tag in tags if type(tag) is not ProjectionTag)
    return replace(left, shape=shape, dtype=dtype, tags=tags)
