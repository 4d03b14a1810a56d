"""Tensor shapes over symbolic dims, and the shape algebra of the common torch ops.

A :class:`Shape` is a tuple of known trailing :class:`~shapecheck.engine.dims.Dim` s, optionally
preceded by an unknown number of leading dims (``variadic``, as in jaxtyping ``"*batch d"``). A fully
unknown shape is ``None`` at the call sites, never a Shape.

Every function here follows the engine's contract: it may know less, it is never wrong. A
``conflict`` is reported only when the op fails for *every* value of the symbols (each symbol an
integer >= 1). A result shape describes the op's result *when the op succeeds*: if ``x`` and ``y``
broadcast and ``y`` is provably not 1, the result dim is ``y`` whatever ``x`` is.
"""

from __future__ import annotations

from collections.abc import Callable

from dataclasses import dataclass
from typing import Iterable, Sequence

from shapecheck.engine.symbolic.dims import (
    Assumptions,
    Dim,
    DimLike,
    Truth,
    as_dim,
    differ_by_head_count,
    differ_once_exact,
    leaves_a_fraction_of_the_head_count,
    widens_a_head_split,
    divides,
    equal,
    exact_div,
    product,
    sym,
)

__all__ = [
    "BroadcastResult",
    "MatmulResult",
    "ReshapeResult",
    "Shape",
    "broadcast",
    "broadcast_dim",
    "contradiction",
    "is_anonymous",
    "matmul",
    "normalize_index",
    "numel",
    "permute",
    "product",
    "product_sum",
    "reshape",
    "squeeze",
    "transpose",
    "unsqueeze",
]

ANONYMOUS_PREFIX = "_@"
"""Symbols named ``_@<n>`` stand for one unnamed dim each (jaxtyping ``_``, ``#b``)."""


_ONE_TERMS = Dim.const(1)._terms


def is_anonymous(d: Dim) -> bool:
    """True for a fresh anonymous dim (printed as ``_``)."""
    name = d.name
    return name is not None and name.startswith(ANONYMOUS_PREFIX)


@dataclass(frozen=True, slots=True)
class Shape:
    """Known trailing dims, after an unknown number of leading dims when ``variadic``.

    ``Shape((b, t, d))`` is ``(b, t, d)``; ``Shape((d,), variadic=True)`` is ``(*, d)``. Ints given
    in ``dims`` are converted to constant Dims.
    """

    dims: tuple[Dim, ...]
    variadic: bool = False

    def __post_init__(self) -> None:
        dims = self.dims
        if dims.__class__ is tuple:
            for x in dims:
                if x.__class__ is not Dim:
                    break
            else:
                return
        object.__setattr__(self, "dims", tuple([as_dim(x) for x in dims]))

    @staticmethod
    def of(*dims: DimLike, variadic: bool = False) -> Shape:
        """``Shape.of(b, t, 512)``."""
        return Shape(tuple(as_dim(x) for x in dims), variadic)

    @property
    def rank(self) -> int | None:
        """Number of dims, None when variadic."""
        return None if self.variadic else len(self.dims)

    @property
    def min_rank(self) -> int:
        """The number of dims known to exist."""
        return len(self.dims)

    def dim(self, i: int) -> Dim | None:
        """Dim ``i`` (negative counts from the end); None when out of range or hidden by the
        variadic prefix."""
        n = len(self.dims)
        if i < 0:
            return self.dims[i] if i >= -n else None
        if self.variadic or i >= n:
            return None
        return self.dims[i]

    def with_dim(self, i: int, d: DimLike) -> Shape | None:
        """A copy with position ``i`` of ``dims`` replaced (negative counts from the end; for a
        variadic shape a non-negative ``i`` indexes the known trailing dims). None if out of range."""
        n = len(self.dims)
        if not -n <= i < n:
            return None
        dims = list(self.dims)
        dims[i] = as_dim(d)
        return Shape(tuple(dims), self.variadic)

    def to_json(self) -> list[int | str] | None:
        """Dims as ints or strings; a variadic shape starts with ``"*"``."""
        out: list[int | str] = ["*"] if self.variadic else []
        out.extend(dim_text(x) if is_anonymous(x) else x.to_json() for x in self.dims)
        return out

    def __str__(self) -> str:
        parts = ["*"] if self.variadic else []
        parts.extend(dim_text(x) for x in self.dims)
        return f"({', '.join(parts)})"


def dim_text(d: Dim) -> str:
    """A dim as messages show it: an unnamed one as ``_``."""
    return "_" if is_anonymous(d) else str(d)


def _as_dims(sizes: Iterable[DimLike]) -> tuple[Dim, ...]:
    return tuple(as_dim(x) for x in sizes)


def _is_one(d: Dim) -> bool:
    return d._terms == _ONE_TERMS


def _one(d: Dim, assumptions: Assumptions | None) -> bool:
    return d == 1 or (assumptions is not None and equal(d, 1, assumptions) is Truth.TRUE)


def _not_one(d: Dim, assumptions: Assumptions | None) -> bool:
    return equal(d, 1, assumptions) is Truth.FALSE


def numel(shape: Shape | None) -> Dim | None:
    """The number of elements, None when unknown (variadic or None)."""
    if shape is None or shape.variadic:
        return None
    try:
        return product(shape.dims)
    except ArithmeticError:
        return None


def product_sum(dims: Sequence[Dim | None]) -> Dim | None:
    """The sum of dims (as torch.cat adds sizes along an axis); None if any is None."""
    total = Dim.const(0)
    for x in dims:
        if x is None:
            return None
        total = total + x
    return total


# --- broadcasting ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BroadcastResult:
    """``shape``: the broadcast shape, None when unknown or on a conflict.

    ``conflict``: ``(axis, x, y)`` with a negative ``axis`` counted from the end, when broadcasting
    ``x`` with ``y`` fails for every value of the symbols (each >= 1): they are provably different
    and neither can be 1 (``3`` vs ``4``, ``3*d`` vs ``d+1``).

    ``mismatch``: the same test with every symbol >= 2, so it fails unless some symbol is 1
    (``d`` vs ``3*d``, ``t`` vs ``t+1``): very likely a bug, never certain. ``conflict`` implies
    ``mismatch``; the first such axis from the end is reported.
    """

    shape: Shape | None
    conflict: tuple[int, Dim, Dim] | None = None
    mismatch: tuple[int, Dim, Dim] | None = None


def broadcast_dim(
    x: Dim, y: Dim, assumptions: Assumptions | None = None, presume_fit: "Callable[[Dim], bool] | None" = None
) -> Dim:
    """The broadcast of two dims assuming the op succeeds.

    Equal -> x; one is 1 -> the other; one provably not 1 -> that one (the other is 1 or equal to
    it). Otherwise the deterministic symbol ``max(x,y)`` (args in canonical order): the same inputs
    give the same symbol, which never equals anything else provably.

    ``presume_fit``: tells the sizes nobody knows (besides anonymous dims: sizes the engine
    invented for an input it could not see). Such a size is taken to fit the other side, which is
    then the result: ``scores + mask`` with a mask of unknown size has the scores' size. This is
    the reading a person gives such code; it is never used to report a conflict.
    """
    if x == y or _is_one(y):
        return x
    if _is_one(x):
        return y
    eq = equal(x, y, assumptions)
    if eq is Truth.TRUE:
        return x
    if _not_one(y, assumptions):
        return y
    if _not_one(x, assumptions):
        return x
    if presume_fit is not None:
        x_unknown, y_unknown = is_anonymous(x) or presume_fit(x), is_anonymous(y) or presume_fit(y)
        if x_unknown != y_unknown:
            return y if x_unknown else x
    first, second = sorted((x, y), key=Dim.sort_key)
    if is_anonymous(first) or is_anonymous(second):
        # one side is a size nobody knows: so is the result (still one dim, still never provably
        # equal to anything), printed ``_``
        return sym(f"{ANONYMOUS_PREFIX}max({first},{second})")
    return sym(f"max({first},{second})")


def _cannot_broadcast(x: Dim, y: Dim, assumptions: Assumptions | None, low: int) -> bool:
    """x and y differ and neither is 1, for every symbol value >= low."""
    return (
        equal(x, y, assumptions, min_symbol=low) is Truth.FALSE
        and equal(x, 1, assumptions, min_symbol=low) is Truth.FALSE
        and equal(y, 1, assumptions, min_symbol=low) is Truth.FALSE
    )


def broadcast(
    a: Shape, b: Shape, assumptions: Assumptions | None = None, presume_fit: "Callable[[Dim], bool] | None" = None
) -> BroadcastResult:
    """torch broadcasting of two shapes (see :class:`BroadcastResult`).

    Variadic inputs give a variadic result whose known trailing dims stop at the first position
    where one side is hidden by its prefix, unless the other side is provably not 1 there.
    ``presume_fit`` (see :func:`broadcast_dim`): a side hidden by its prefix, or of anonymous size,
    is taken to fit the other side's size when that size is not 1.
    """
    na, nb = len(a.dims), len(b.dims)
    if a.variadic == b.variadic and a.dims == b.dims:
        return BroadcastResult(a)
    out: list[Dim] = []
    known = True
    mismatch = None
    for k in range(1, max(na, nb) + 1):
        x = a.dims[-k] if k <= na else (None if a.variadic else _ONE)
        y = b.dims[-k] if k <= nb else (None if b.variadic else _ONE)
        if x is None or y is None:
            other = y if x is None else x
            # the hidden side is 1 or equal to `other` when `other` is provably not 1
            if known and other is not None and (_not_one(other, assumptions) or (presume_fit is not None and not _is_one(other))):
                out.append(other)
            else:
                known = False
            continue
        if x != y and not _is_one(x) and not _is_one(y):
            if _cannot_broadcast(x, y, assumptions, 2):  # implied by the test with symbols >= 1
                if _cannot_broadcast(x, y, assumptions, 1):
                    return BroadcastResult(None, (-k, x, y), mismatch or (-k, x, y))
                if mismatch is None:
                    mismatch = (-k, x, y)
        if known:
            out.append(broadcast_dim(x, y, assumptions, presume_fit))
    out.reverse()
    return BroadcastResult(Shape(tuple(out), a.variadic or b.variadic), None, mismatch)


_ONE = Dim.const(1)


# --- matmul ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MatmulResult:
    """``shape``: the result shape (None when unknown or on a conflict).

    ``conflict``: ``(a_dim, b_dim)`` when the contracted dims are provably different (matmul never
    broadcasts them, so this fails for every symbol value). ``mismatch``: ``(a_dim, b_dim)`` when
    they differ for every symbol >= 2 (``h*d`` vs ``d``): very likely a bug, never certain; implied
    by ``conflict``. ``batch_conflict`` / ``batch_mismatch``: ``(axis, x, y)`` as in
    :class:`BroadcastResult`, for the batch dims (axis counted from the end of the batch dims).
    """

    shape: Shape | None
    conflict: tuple[Dim, Dim] | None = None
    batch_conflict: tuple[int, Dim, Dim] | None = None
    mismatch: tuple[Dim, Dim] | None = None
    batch_mismatch: tuple[int, Dim, Dim] | None = None


def _is_1d(s: Shape) -> bool | None:
    if not s.variadic:
        return len(s.dims) == 1
    return False if len(s.dims) >= 2 else None


def matmul(
    a: Shape, b: Shape, assumptions: Assumptions | None = None, presume_fit: "Callable[[Dim], bool] | None" = None
) -> MatmulResult:
    """torch.matmul: 1-D operands, batch broadcasting (``presume_fit`` as in :func:`broadcast`)
    and the inner-dim check."""
    if (not a.variadic and not a.dims) or (not b.variadic and not b.dims):
        return MatmulResult(None)  # 0-D operands are an error in torch; not ours to report
    a1, b1 = _is_1d(a), _is_1d(b)
    if b1 is None:
        # b is (*, n) or (*): the contracted dim is n (b 1-D) or hidden (b N-D)
        return MatmulResult(None)
    inner_b = b.dims[0] if b1 else b.dims[-2]
    inner_a = a.dims[-1] if a.dims else None
    mismatch = None
    if inner_a is not None and inner_a != inner_b:
        if equal(inner_a, inner_b, assumptions) is Truth.FALSE:
            return MatmulResult(None, (inner_a, inner_b), None, (inner_a, inner_b))
        if equal(inner_a, inner_b, assumptions, min_symbol=2) is Truth.FALSE:
            mismatch = (inner_a, inner_b)
    if a1 is None:
        # a is (*, k) or (*): a 1-D gives b's batch + (p,) (or () for 1-D b); N-D gives (*, m, p)
        if b1:
            return MatmulResult(Shape((), True), mismatch=mismatch)
        return MatmulResult(Shape((b.dims[-1],), True), mismatch=mismatch)
    a_rows = () if a1 else (a.dims[-2],)
    b_cols = () if b1 else (b.dims[-1],)
    a_batch = Shape(() if a1 else a.dims[:-2], a.variadic)
    b_batch = Shape(() if b1 else b.dims[:-2], b.variadic)
    batch = broadcast(a_batch, b_batch, assumptions, presume_fit)
    if batch.conflict is not None:
        return MatmulResult(None, None, batch.conflict, mismatch, batch.mismatch)
    assert batch.shape is not None
    shape = Shape(batch.shape.dims + a_rows + b_cols, batch.shape.variadic)
    return MatmulResult(shape, None, None, mismatch, batch.mismatch)


# --- reshape -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReshapeResult:
    """``shape``: the new shape (None when unknown or on a conflict).

    ``conflict``: ``(src_numel, target_numel)`` when the element counts provably differ; with a -1
    in the sizes, ``target_numel`` is the product of the other sizes and the conflict means it
    provably does not divide ``src_numel``. ``mismatch``: the same pair when the counts differ for
    every symbol >= 2 (``view(b, t, h, d)`` of a ``(b, t, d)`` tensor: equal only if ``h == 1``):
    very likely a bug, never certain; implied by ``conflict``. ``exact``: ``(src_numel, known)`` when
    a -1 was solved as the exact quotient of the two: the view runs only if ``known`` divides
    ``src_numel``, which the caller may assume from then on.
    """

    shape: Shape | None
    conflict: tuple[Dim, Dim] | None = None
    mismatch: tuple[Dim, Dim] | None = None
    exact: tuple[Dim, Dim] | None = None


def reshape(src: Shape | None, sizes: Sequence[DimLike], assumptions: Assumptions | None = None) -> ReshapeResult:
    """``view`` / ``reshape``: resolve a single -1 and check the element count.

    A resolved -1 is the exact quotient numel(src) / product(other sizes): exact because the op
    fails otherwise (printed ``d_model//n_heads``; ``n_heads`` times it is ``d_model``). When the
    other sizes are not a single term the quotient is a FloorDiv, equally correct. Without a -1 the
    result is the sizes even when the source shape is unknown.
    """
    try:
        dims = _as_dims(sizes)
    except TypeError:
        return ReshapeResult(None)
    infer = []
    for i, x in enumerate(dims):
        v = x.value
        if v is not None and v < 0:
            if v != -1 or infer:
                return ReshapeResult(None)
            infer.append(i)
    total = numel(src)
    try:
        if not infer:
            if total is not None and total != (target := product(dims)):
                if equal(total, target, assumptions) is Truth.FALSE:
                    return ReshapeResult(None, (total, target), (total, target))
                if (
                    equal(total, target, assumptions, min_symbol=2) is Truth.FALSE
                    or differ_by_head_count(total, target, assumptions)
                    or differ_once_exact(total, target, assumptions)
                ):
                    return ReshapeResult(Shape(dims), None, (total, target))
            return ReshapeResult(Shape(dims))
        if total is None:
            if src is not None and src.variadic and src.dims:
                # ``view(b, -1, h, h * (e // h))`` of ``(*, e)``: the sizes after the -1 split the
                # width ``e`` (they divide it by the head count) into the head count times it.
                width, split = src.dims[-1], product(dims[infer[0] + 1 :])
                if widens_a_head_split(width, split, assumptions):
                    return ReshapeResult(None, None, (width, split))
            return ReshapeResult(None)
        known = product(x for i, x in enumerate(dims) if i != infer[0])
        if known == 0:
            return ReshapeResult(None)
        if divides(known, total, assumptions) is Truth.FALSE:
            return ReshapeResult(None, (total, known), (total, known))
        if leaves_a_fraction_of_the_head_count(total, known, assumptions):
            # ``view(b, -1, h, h * d)``: the -1 would be the sequence over the head count.
            return ReshapeResult(None, None, (total, known))
        missing = exact_div(total, known)
        if assumptions is not None:
            missing = assumptions.simplify(missing)
        if any(symbol.startswith(ANONYMOUS_PREFIX) for symbol in missing.symbols()) and not is_anonymous(missing):
            # what is left of a size nobody knows is one: printed ``_``, never provably equal
            missing = sym(f"{ANONYMOUS_PREFIX}({missing})")
    except ArithmeticError:
        return ReshapeResult(None)
    out = list(dims)
    out[infer[0]] = missing
    return ReshapeResult(Shape(tuple(out)), exact=(total, known))


# --- axis manipulation -------------------------------------------------------------------------


def normalize_index(i: int, rank: int | None) -> int | None:
    """``i`` in ``[0, rank)`` (negative counts from the end); None when out of range or rank unknown."""
    if rank is None or not -rank <= i < rank:
        return None
    return i % rank


def _trailing_index(s: Shape, i: int) -> int | None:
    """Position in ``s.dims`` of axis ``i`` (non-negative only when not variadic)."""
    n = len(s.dims)
    if s.variadic:
        return i + n if -n <= i < 0 else None
    return normalize_index(i, n)


def transpose(shape: Shape, i: int, j: int) -> Shape | None:
    """Swap axes ``i`` and ``j``; None when out of range or hidden by a variadic prefix."""
    a, b = _trailing_index(shape, i), _trailing_index(shape, j)
    if a is None or b is None:
        return None
    dims = list(shape.dims)
    dims[a], dims[b] = dims[b], dims[a]
    return Shape(tuple(dims), shape.variadic)


def permute(shape: Shape, order: Sequence[int]) -> Shape | None:
    """Reorder axes; None unless ``order`` is a permutation of all axes of a known-rank shape."""
    if shape.variadic or len(order) != len(shape.dims):
        return None
    rank = len(shape.dims)
    axes = [normalize_index(i, rank) for i in order]
    if None in axes or len(set(axes)) != rank:
        return None
    return Shape(tuple(shape.dims[i] for i in axes))  # type: ignore[index]


def squeeze(shape: Shape, dim: int | Sequence[int] | None = None, assumptions: Assumptions | None = None) -> Shape | None:
    """Drop size-1 axes (all, or those in ``dim``). A dim that might or might not be 1 makes the
    result unknown (None)."""
    if dim is None:
        if shape.variadic:
            return None
        kept = []
        for x in shape.dims:
            if _one(x, assumptions):
                continue
            if not _not_one(x, assumptions):
                return None
            kept.append(x)
        return Shape(tuple(kept))
    axes = [dim] if isinstance(dim, int) else list(dim)
    positions = set()
    for i in axes:
        p = _trailing_index(shape, i)
        if p is None:
            return None
        x = shape.dims[p]
        if _one(x, assumptions):
            positions.add(p)
        elif not _not_one(x, assumptions):
            return None
    return Shape(tuple(x for p, x in enumerate(shape.dims) if p not in positions), shape.variadic)


def unsqueeze(shape: Shape, dim: int) -> Shape | None:
    """Insert a size-1 axis at ``dim`` (valid range ``[-rank-1, rank]``); None when out of range or
    hidden by a variadic prefix."""
    n = len(shape.dims)
    if dim < 0:
        p = dim + n + 1
        if p < 0 or (not shape.variadic and p > n):
            return None
    else:
        if shape.variadic or dim > n:
            return None
        p = dim
    return Shape(shape.dims[:p] + (_ONE,) + shape.dims[p:], shape.variadic)


# --- comparison with a declaration -----------------------------------------------------------------


def contradiction(inferred: Shape, declared: Shape, assumptions: Assumptions | None = None) -> str | None:
    """Why ``inferred`` provably cannot be ``declared`` (a sentence fragment), or None.

    Ranks contradict when one side has a known rank below the other's known minimum; dims
    contradict when aligned from the end they are provably different (:func:`equal` is FALSE).
    """
    ni, nd = len(inferred.dims), len(declared.dims)
    if not inferred.variadic and not declared.variadic and ni != nd:
        return f"rank {ni} vs {nd}"
    if not inferred.variadic and declared.variadic and ni < nd:
        return f"rank {ni} vs at least {nd}"
    if inferred.variadic and not declared.variadic and nd < ni:
        return f"rank at least {ni} vs {nd}"
    for k in range(1, min(ni, nd) + 1):
        x, y = inferred.dims[-k], declared.dims[-k]
        if x != y and equal(x, y, assumptions) is Truth.FALSE:
            axis = ni - k if not inferred.variadic else -k
            return f"dim {axis} is {dim_text(x)}, annotated {dim_text(y)}"
    return None
