"""Questions about memory layout and head layout, asked of view / reshape and matmul events.

- ``non_contiguous_merge``: a ``.view`` that merges axes a transpose / permute left apart in memory
  (it raises "view size is not compatible with input tensor's size and stride").
- ``heads_split_without_transpose``: ``(b, t, d_model)`` viewed straight as ``(b, h, t, d_model/h)``.
- ``heads_merged_without_transpose``: ``(b, h, t, d_k)`` reshaped straight to ``(b, t, h * d_k)``.
- ``misplaced_key_transpose``: the right operand of ``q @ k^T`` reordered so that the axis it
  contracts is not the key's feature axis (``k.T`` of a 3-D key, ``k.transpose(1, 2)`` of a 4-D one).

Every answer is worked out from symbolic dims that are provably equal (``Truth.TRUE``); an unknown
dim never produces an answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from shapecheck.engine.domain.joins import is_path_join, path_sizes
from shapecheck.engine.domain.tags import AttentionOutputTag, CauseTag, KeyTransposed, LayerOutputTag, Permuted, Reordered
from shapecheck.engine.domain.values import ProbsTag, ProjectionTag, TensorValue, TokenEmbeddingTag, TupleValue, Value, dim_of
from shapecheck.engine.facts.records import OpEvent
from shapecheck.engine.symbolic.dims import Assumptions, Dim, Truth, equal, product
from shapecheck.engine.symbolic.shapes import Shape, is_anonymous


@dataclass(frozen=True)
class Merge:
    """Axes ``first..last`` of the source that one axis of the view's result holds."""

    first: int
    last: int
    result_axis: int


def _is(a: Dim, b: Dim, assumptions: object) -> bool:
    return equal(a, b, assumptions) is Truth.TRUE  # type: ignore[arg-type]


def _may_be(a: Dim, b: Dim, assumptions: object) -> bool:
    """Equal, or not known to differ because one is unnamed or differs between paths."""
    return _is(a, b, assumptions) or any(is_anonymous(d) or is_path_join(d) for d in (a, b))


def _on_a_path(a: Dim, b: Dim, assumptions: object) -> bool:
    """Equal, or ``b`` differs between paths (``a|c``) and is ``a`` on one of them."""
    if _is(a, b, assumptions):
        return True
    return b.name is not None and is_path_join(b) and str(a) in path_sizes(b.name)


def _one(dim: Dim) -> bool:
    return dim.is_const and dim.value == 1


def fixed_dims(shape: Shape | None, rank: int | None = None) -> tuple[Dim, ...] | None:
    if shape is None or shape.variadic or (rank is not None and shape.rank != rank):
        return None
    return shape.dims


def axis_groups(source: tuple[Dim, ...], result: tuple[Dim, ...], assumptions: object) -> list[Merge] | None:
    """How a reshape maps source axes to result axes: the merges (several source axes into one).
    None when the grouping cannot be proven (an unknown size, a product that never matches)."""
    merges: list[Merge] = []
    i = j = 0
    while i < len(source) and j < len(result):
        if _is(source[i], result[j], assumptions):
            i, j = i + 1, j + 1
            continue
        # several source axes into one result axis
        for end in range(i + 1, len(source)):
            if _is(product(source[i : end + 1]), result[j], assumptions):
                merges.append(Merge(i, end, j))
                i, j = end + 1, j + 1
                break
        else:
            # one source axis split into several result axes
            for end in range(j + 1, len(result)):
                if _is(source[i], product(result[j : end + 1]), assumptions):
                    i, j = i + 1, end + 1
                    break
            else:
                return None
    if i != len(source) or j != len(result):
        return None
    return merges


def _leading_groups(source: tuple[Dim, ...], result: tuple[Dim, ...], assumptions: Assumptions) -> list[Merge] | None:
    """``axis_groups``, where a leading size of unknown value on both sides (a ``-1`` the engine
    could only name, Swin's ``view(-1, H, W, C)`` of ``(_, H // ws, ws, ...)``) is the same count
    when the other axes group exactly: the two sides hold as many elements."""
    merges = axis_groups(source, result, assumptions)
    if merges is not None or not source or not result:
        return merges
    if is_anonymous(source[0]) and is_anonymous(result[0]):
        rest = _trailing_groups(source[1:], result[1:], assumptions)
        return None if rest is None else [Merge(m.first + 1, m.last + 1, m.result_axis + 1) for m in rest]
    return _trailing_groups(source, result, assumptions)


def _trailing_groups(source: tuple[Dim, ...], result: tuple[Dim, ...], assumptions: Assumptions) -> list[Merge] | None:
    """``axis_groups``, where a last size of unknown value on both sides (the channels a window
    reverse keeps with ``view(B, H, W, -1)``) is the same count when the other axes group exactly."""
    merges = axis_groups(source, result, assumptions)
    if merges is not None or len(source) < 2 or len(result) < 2 or not (is_anonymous(source[-1]) and is_anonymous(result[-1])):
        return merges
    return axis_groups(source[:-1], result[:-1], assumptions)


def axis_blocks(source: tuple[Dim, ...], result: tuple[Dim, ...], assumptions: object) -> list[Merge] | None:
    """How a reshape regroups axes, where a run of source axes becomes a run of result axes of the
    same element count, neither a merge nor a split (``(t, b * h, d)`` viewed as ``(t, b, h * d)``:
    axes 1..2 hold ``b * h * d`` elements on both sides). Each shortest such run of two source axes
    or more is returned as a merge of those axes (``view`` needs them adjacent in memory, as it
    needs merged axes). None when some run cannot be matched, or keeps a size of its own on both
    sides."""
    merges: list[Merge] = []
    i = j = 0
    while i < len(source) and j < len(result):
        found = None
        for span in range(2, len(source) - i + len(result) - j + 1):
            for width in range(1, span):
                end_i, end_j = i + width - 1, j + span - width - 1
                if end_i < len(source) and end_j < len(result) and _is(product(source[i : end_i + 1]), product(result[j : end_j + 1]), assumptions):
                    found = (end_i, end_j)
                    break
            if found is not None:
                break
        if found is None:
            return None
        end_i, end_j = found
        if end_i > i and not _shortest(source[i : end_i + 1], result[j : end_j + 1], assumptions):
            return None
        if end_j > j and any(_is(a, b, assumptions) for a in source[i : end_i + 1] for b in result[j : end_j + 1]):
            # a size on both sides of the run (``(h, t, d)`` read as ``(t, h * d)``): the view
            # reinterprets an axis it keeps, heads merged without their transpose (SC502's
            # question), not a merge of axes left apart; unanswered
            return None
        if end_i > i:
            merges.append(Merge(i, end_i, j))
        i, j = end_i + 1, end_j + 1
    if i != len(source) or j != len(result):
        return None
    return merges


def _shortest(source: tuple[Dim, ...], result: tuple[Dim, ...], assumptions: object) -> bool:
    """No shorter runs at the start of these two hold as many elements, for any sizes >= 2 (a size
    of 1 adds an axis that groups either way): the run is one block that ``view`` must read as one
    stretch of memory, not two blocks the engine could not tell apart."""
    for k in range(1, len(source)):
        for m in range(1, len(result)):
            if equal(product(source[:k]), product(result[:m]), assumptions, min_symbol=2) is not Truth.FALSE:  # type: ignore[arg-type]
                return False
    return True


def _windows_divide(assumptions: Assumptions | None, dims: tuple[Dim, ...]) -> Assumptions:
    """The path's assumptions, plus ``den`` divides ``num`` for every ``num // den`` of the sizes: a
    view of windows (Swin's ``(B, H // ws, ws, ...)`` merged back to ``(B, H, ...)``) runs only when
    the windows tile the axis, so where it runs ``(H // ws) * ws`` is ``H``."""
    extended = assumptions.copy() if assumptions is not None else Assumptions()
    for dim in dims:
        for num, den in dim.floor_divisions():
            extended.add_divisible(num, den)
    return extended


def non_contiguous_merge(event: OpEvent) -> tuple[Permuted, Merge] | None:
    """A ``view`` whose source was reordered (transpose / permute) and not made contiguous, merging
    axes that are no longer next to each other in memory."""
    if event.op != "view":
        return None
    source = event.tensor(0)
    layout = source.tag(Permuted)
    result = event.result_tensor
    dims, target = fixed_dims(source.shape), fixed_dims(result.shape)
    if layout is None or dims is None or target is None or len(dims) != layout.rank:
        return None
    exact = _windows_divide(event.assumptions, dims + target)
    merges = _leading_groups(dims, target, exact)
    if merges is None and not _infers_a_size(event):
        # a -1 holds whatever the other sizes leave: a run over the whole tensor always matches
        merges = axis_blocks(dims, target, exact)
    if merges is None:
        return None
    for merge in merges:
        sizes = dims[merge.first : merge.last + 1]
        if any(_one(d) for d in sizes):
            continue
        if not layout.merges_adjacent(merge.first, merge.last):
            return layout, merge
    return None


def _infers_a_size(event: OpEvent) -> bool:
    """The view was given a -1 (``view(1, -1, dim)``, or one in a tuple of sizes), or sizes the
    engine cannot read."""
    sizes: list[Value] = []
    for value in event.args[1:]:
        sizes.extend(value.items if isinstance(value, TupleValue) else (value,))
    for value in sizes:
        dim = dim_of(value)
        if dim is None or (dim.is_const and dim.value == -1):
            return True
    return not sizes


def is_attention_data(tensor: TensorValue) -> bool:
    """Hidden states or their projections: what attention splits into heads and merges back."""
    return any(tensor.has(kind) for kind in (ProjectionTag, TokenEmbeddingTag, LayerOutputTag, AttentionOutputTag))


def heads_split_without_transpose(event: OpEvent) -> tuple[Shape, Shape] | None:
    """``(b, t, d)`` viewed as ``(b, h, t, d // h)``: result axis 2 is the source's axis 1 (time)
    and result axis 1 (the head count) is not time. The source is attention data (a projection,
    hidden states); the numbers of elements agree (the op ran without a conflict)."""
    if event.op not in ("view", "reshape"):
        return None
    source, result = event.tensor(0), event.result_tensor
    dims, target = fixed_dims(source.shape, 3), fixed_dims(result.shape, 4)
    if target is not None and not source.has(Permuted) and _width_split_apart(source.shape, target, event.assumptions):
        return source.shape, result.shape  # type: ignore[return-value]
    if dims is None or target is None or not is_attention_data(source) or source.has(Permuted):
        return None
    assumptions = event.assumptions
    b, t, d = dims
    rb, heads, rt, head_dim = target
    if not (_is(rb, b, assumptions) and _is(rt, t, assumptions)):
        return None
    if _one(heads) or _one(head_dim) or _is(heads, t, assumptions) or _one(t):
        return None
    if not _is(heads * head_dim, d, assumptions):
        return None
    return source.shape, result.shape  # type: ignore[return-value]


def _width_split_apart(shape: Shape | None, target: tuple[Dim, ...], assumptions: Assumptions | None) -> bool:
    """``(*, e)`` viewed as ``(b, h, X, e // h)``: the last axis, whatever the rank before it (a
    projection by a layer the engine cannot see, known only by the width read off it), is split
    into ``h`` and ``d`` with ``h * d == e`` once every floor division is exact, and a third axis of
    a size other than 1 (the tokens, often a ``-1``) sits between them. In memory the ``h * d``
    features of a token are adjacent, so the head axis placed before the tokens takes its rows
    from several tokens: a head split without the transpose, whatever the data."""
    if shape is None or not shape.dims or len(target) != 4:
        return False
    width = shape.dims[-1]
    heads, between, head_dim = target[1:]
    if any(_one(d) for d in (heads, between, head_dim)) or is_anonymous(width) or is_path_join(width):
        return False
    exact = _windows_divide(assumptions, (width,) + target)
    if _is(heads, between, exact) or _is(between, head_dim, exact):
        return False
    return _is(heads * head_dim, width, exact) and not is_anonymous(heads) and not is_anonymous(head_dim)


def heads_merged_without_transpose(event: OpEvent) -> tuple[Shape, Shape] | None:
    """``(b, h, t, d_k)`` reshaped to ``(b, t, h * d_k)``: result axis 1 is the source's axis 2
    (time) and the last result axis holds source axes 1 and 3, which are not next to each other.
    The source is attention data (an attention output, a projection split into heads)."""
    if event.op not in ("view", "reshape"):
        return None
    source, result = event.tensor(0), event.result_tensor
    dims, target = fixed_dims(source.shape, 4), fixed_dims(result.shape, 3)
    if dims is None or target is None or not is_attention_data(source):
        return None
    assumptions = event.assumptions
    b, heads, t, head_dim = dims
    rb, rt, width = target
    if not (_is(rb, b, assumptions) and _is(rt, t, assumptions)):
        return None
    if _one(heads) or _one(head_dim) or _is(heads, t, assumptions) or _one(t):
        return None
    # The reshape ran: batch and time kept, so the width holds the other two axes (``reshape(B, N,
    # C)`` with ``C`` read off the input) unless it provably does not (another path's sizes).
    if equal(width, heads * head_dim, _windows_divide(assumptions, (width, heads, head_dim))) is Truth.FALSE:  # type: ignore[arg-type]
        return None
    return source.shape, result.shape  # type: ignore[return-value]


def misplaced_key_transpose(a: TensorValue, b: TensorValue, assumptions: object) -> Reordered | None:
    """``a @ b`` where ``b`` is a key reordered so that the contracted axis (-2) is not its feature
    axis, while the query ``a`` has that feature size last: attention scores over the wrong axes.
    The query is a projection, or shaped exactly like the key."""
    layout = b.tag(Reordered)
    if layout is None or layout.rank < 3 or layout.contracts_features() or a.has(ProbsTag):
        return None
    query, key = fixed_dims(a.shape, layout.rank), fixed_dims(b.shape, layout.rank)
    if query is None and key is not None and layout.order[-1] == layout.rank - 1:
        # A query of unknown shape against a key projection whose features are still last, so
        # that its axis -2 (the one contracted) is a head or token axis: both are projections
        # (never attention weights), so the query contracts its features with something else.
        return layout if a.has(ProjectionTag) and b.has(ProjectionTag) and not a.has(KeyTransposed) else None
    if query is None or key is None:
        return None
    feature = key[layout.order.index(layout.rank - 1)]
    if not _is(query[-1], feature, assumptions):
        return None
    if layout.order[-1] == layout.rank - 1 and all(_on_a_path(x, y, assumptions) for x, y in zip(query[:-2], key[:-2])):
        # Reordered into the query's own layout (the head move both had, ``(b, t, h, d)`` to
        # ``(b, h, t, d)``): the key was not transposed at all, which the product reports
        # (``ops.products``), not a transpose over the wrong axes. A key whose batch differs
        # between paths (``batch|batch_enc``: its own tokens, or an encoder's) has the query's
        # batch on one of them: still the query's layout.
        return None
    source = fixed_dims(layout.source.shape, layout.rank) if layout.source is not None else None
    # Shaped like the key: the same batch and head axes and the same feature size; the sequence
    # lengths may differ (cross-attention, a query pooled to fewer tokens).
    # A size nobody knows (a key given back by a cache the engine cannot see) or that differs
    # between paths (``repeat_kv``'s heads: n_kv, or n_kv * n_rep) is presumed to fit.
    same_shape = source is not None and all(_may_be(x, y, assumptions) for x, y in zip(query[:-2], source[:-2]))
    # The left operand is a query: a projection (its last axis is features), or shaped like the
    # key. Attention weights (whose last axis is key positions) times values never qualify, even
    # when the engine did not recognise them as probabilities.
    if not (a.has(ProjectionTag) or same_shape):
        return None
    return layout


def causes(*tensors: TensorValue) -> frozenset:
    """The suspect ops (``CauseTag``) these tensors were computed from: a finding on them may be the
    follow-on of a finding there (the linter then reports only the root)."""
    nodes: frozenset = frozenset()
    for tensor in tensors:
        tag = tensor.tag(CauseTag) if isinstance(tensor, TensorValue) else None
        if tag is not None:
            nodes |= tag.nodes
    return nodes
