"""Engine behaviour that mutation testing found unpinned in the functions changed after their
modules' runs (session ``mut25``, benchmarks/README.md): ``symbolic/shapes.matmul`` / ``reshape``,
``ops/arithmetic.tensor_binary`` and its helpers, ``ops/elementwise._softmax`` / ``_reduce`` /
``_along_tokens``, ``ops/factories._new_factory``, ``ops/nn_modules._convolution`` and its helpers
and ``construct``, ``ops/base.promoted`` / ``loop_index``, ``ops/products._outer``, ``ops/scalars._range``
and ``ops/sequences._enumerate``.

Black-box through the engine, like tests/test_mutation_kills_ops.py: each test analyses a small
function and asserts the shape, dtype, tags or conflicts the engine infers; shapes and dtypes are
what torch 2.13 gives (each checked in a scratch script).
"""

from __future__ import annotations

from fractions import Fraction

from test_engine_ops import _shape
from test_mutation_kills_ops import _run


def _found(conflicts) -> list[tuple[str, str]]:
    return [(c.kind, c.detail) for c in conflicts]


# --- symbolic/shapes.py: matmul ------------------------------------------------------------------


def test_matmul_of_a_query_with_hidden_leading_dims_presumes_they_fit_the_keys_batch() -> None:
    """``matmul``'s ``presume_fit`` for the batch dims: a query annotated ``... t d`` (its leading
    dims hidden) times keys of ``(b, h, d, t)`` gives ``(*, b, h, t, t)``, the hidden prefix taken to
    fit (torch: a ``(b, h, t, d)`` or ``(t, d)`` query both give ``(b, h, t, t)``); without it the
    batch dims were lost (``(*, t, t)``)."""
    values, conflicts = _run(
        """
        def f(q: Float[Tensor, "... t d"], k: Float[Tensor, "b h t d"]):
            scores = q @ k.transpose(-2, -1)
            weights = torch.matmul(q, k.transpose(-2, -1))
        """
    )
    assert conflicts == []
    assert _shape(values["scores"]) == _shape(values["weights"]) == "(*, b, h, t, t)"


# --- symbolic/shapes.py: reshape -----------------------------------------------------------------

NANOGPT_SPLIT = """
class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x: Float[Tensor, "b t c"]):
        B, T, C = x.size()
        {assertion}
        q = x.view(B, T, self.n_head, self.n_head * (self.n_embd // self.n_head))
        k = x.view(B, -1, self.n_head, self.n_head * (self.n_embd // self.n_head))
        v = x.view(B, T, self.n_head, self.n_embd // self.n_head)
"""


def test_a_head_split_using_the_head_count_twice_is_found_through_an_asserted_width() -> None:
    """``reshape`` reads the head-count tests (``differ_by_head_count``,
    ``leaves_a_fraction_of_the_head_count``) under the path's assumptions: with ``assert C ==
    self.n_embd`` the width ``c`` is ``n_embd``, so ``view(B, T, h, h * (n_embd // h))`` has the
    head count once too often (torch raises for every h > 1) and so does the ``-1`` form (the -1
    would be t / h); the correct split ``view(B, T, h, n_embd // h)`` is clean. Without the assert
    ``c`` and ``n_embd`` are unrelated sizes: the first view is taken to define ``c``."""
    values, conflicts = _run(NANOGPT_SPLIT.format(assertion="assert C == self.n_embd"), "CausalSelfAttention.forward")
    assert _found(conflicts) == [
        (
            "reshape",
            "cannot view a tensor of shape (b, t, c) (numel b*c*t) as (b, t, n_head, n_head*(n_embd//n_head)) "
            "(numel b*n_head**2*t*(n_embd//n_head))",
        ),
        (
            "reshape",
            "cannot view a tensor of shape (b, t, c) (numel b*c*t) as (b, -1, n_head, n_head*(n_embd//n_head)): "
            "the other sizes multiply to b*n_head**2*(n_embd//n_head), so the -1 would be "
            "(b*c*t) / (b*n_head**2*(n_embd//n_head))",
        ),
    ]
    assert values["k"].shape is None
    assert _shape(values["v"]) == "(b, t, n_head, n_embd//n_head)"
    values, conflicts = _run(NANOGPT_SPLIT.format(assertion="pass"), "CausalSelfAttention.forward")
    assert not any("as (b, t, n_head, n_head*(n_embd//n_head))" in detail for _, detail in _found(conflicts))
    assert _shape(values["q"]) == "(b, t, n_head, n_head*(n_embd//n_head))"


def test_a_minus_one_left_with_the_head_count_over_an_unnamed_size_is_no_finding() -> None:
    """``reshape``'s ``-1`` that would be the sequence over the head count is a mismatch (very
    likely wrong), not a conflict: over a sequence axis nobody named (``_``) the engine says nothing,
    as for any mismatch over a size that may be anything; over a named one it is a finding."""
    src = """
    class Attention(nn.Module):
        def __init__(self, dim, num_heads):
            super().__init__()
            self.num_heads = num_heads

        def forward(self, x: Float[Tensor, "b {seq} d"]):
            B, N, C = x.shape
            q = x.reshape(B, -1, self.num_heads, self.num_heads * (C // self.num_heads))
    """
    values, conflicts = _run(src.format(seq="_"), "Attention.forward")
    assert conflicts == []
    assert values["q"].shape is None
    values, conflicts = _run(src.format(seq="n"), "Attention.forward")
    assert [kind for kind, _ in _found(conflicts)] == ["reshape"]


def test_a_minus_one_over_a_size_nobody_named_is_itself_a_size_nobody_knows() -> None:
    """``reshape``: what is left of an anonymous size (``_``) by a ``-1`` is anonymous too, one new
    ``_``, not a product with the other sizes (torch: ``(2, 7, 4)`` reshaped to ``(2, -1)`` is
    ``(2, 28)``, ``(-1, 4)`` is ``(14, 4)``): ``flatten(1)``-style reshapes of an input with an
    unnamed axis, then split back with the same width."""
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b _ d"]):
            B, N, C = x.shape
            flat = x.reshape(B, -1)
            back = flat.view(B, -1, C)
            rows = x.reshape(-1, C)
        """
    )
    assert conflicts == []
    found = {name: _shape(values[name]) for name in ("flat", "back", "rows")}
    assert found == {"flat": "(b, _)", "back": "(b, _, d)", "rows": "(_, d)"}
    flat = values["flat"].shape.dims[1]
    assert flat.symbols() and all(s.startswith("_") for s in flat.symbols())
    assert len(flat.symbols()) == 1  # one size of its own, not ``_ * d``


# --- ops/arithmetic.py: tensor_binary, _scaled_parameter, _single_number --------------------------

SCALED_TABLES = """
class Positions(nn.Module):
    def __init__(self, num_patches: int = 16, hidden: int = 32):
        super().__init__()
        self.pos_embed = nn.Parameter(torch.randn(1, num_patches, hidden))
        self.alpha = nn.Parameter(torch.ones(1))
        self.temperature = nn.Parameter(torch.ones(1))
        self.inv_freq = nn.Parameter(torch.randn(hidden // 2))
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: Float[Tensor, "b n d"], shape):
        scaled = self.pos_embed * self.alpha
        tempered = self.pos_embed / self.temperature
        periods = 1.0 / self.inv_freq
        ratio = self.temperature / self.pos_embed
        gate = (1 - self.alpha.tanh()) * self.temperature
        normed = self.weight * x
        fixed = self.weight * torch.randn(2, 16, 32)
        hidden = x.reshape(*shape)
        unknown = self.weight * hidden
"""


def test_a_parameter_times_or_over_a_one_element_parameter_is_still_that_parameter() -> None:
    """``_scaled_parameter`` / ``_single_number``: a table times or over a one-element parameter (a
    ReZero gain, a learned temperature) keeps the table's identity, on either side of ``*`` and on
    the left of ``/``; a number or a one-element tensor divided by a table is not the table
    (``1.0 / inv_freq``: periods, ``temperature / table``); a gain of one element gated by another
    (``(1 - alpha.tanh()) * temperature``) is the right-hand parameter. A parameter times a tensor
    of several elements (RMSNorm's ``weight * x``, of any shape, known, symbolic or unknown) is
    not the parameter. Shapes as torch gives them."""
    from shapecheck.engine.domain.tags import ParameterTag

    values, conflicts = _run(SCALED_TABLES, "Positions.forward")
    assert conflicts == []

    def parameter(name: str) -> str | None:
        tag = values[name].tag(ParameterTag)
        return None if tag is None else tag.ident.label

    found = {name: (_shape(values[name]), parameter(name)) for name in (
        "scaled", "tempered", "periods", "ratio", "gate", "normed", "fixed", "unknown")}
    assert found == {
        "scaled": ("(1, 16, 32)", "self.pos_embed"),
        "tempered": ("(1, 16, 32)", "self.pos_embed"),
        "periods": ("(16)", None),
        "ratio": ("(1, 16, 32)", None),
        "gate": ("(1)", "self.temperature"),
        "normed": ("(b, n, 32)", None),
        "fixed": ("(2, 16, 32)", None),
        "unknown": ("(*, 32)", None),
    }


def test_only_the_four_arithmetic_operators_make_a_broadcast_embedding_a_bias_or_a_gain() -> None:
    """``tensor_binary``: a style embedding of ``(b, 1, d)`` added to (or multiplying) hidden states
    is a bias or a gain, not the tokens (its token-embedding tag is dropped); a power or a floor
    division by it is neither, and the result keeps what it was computed from, as for any other
    op. Shapes as torch gives them."""
    from shapecheck.engine.domain.values import TokenEmbeddingTag

    values, conflicts = _run(
        """
        class Styled(nn.Module):
            def __init__(self, n_styles: int = 4, d: int = 32):
                super().__init__()
                self.style = nn.Embedding(n_styles, d)

            def forward(self, x: Float[Tensor, "b t d"], style_id: Int[Tensor, "b"]):
                s = self.style(style_id)[:, None, :]
                added = x + s
                gained = x * s
                powered = x ** s
                floored = x // s
        """,
        "Styled.forward",
    )
    assert conflicts == []
    found = {name: (_shape(values[name]), values[name].has(TokenEmbeddingTag)) for name in (
        "s", "added", "gained", "powered", "floored")}
    assert found == {
        "s": ("(b, 1, 32)", True),
        "added": ("(b, t, 32)", False),
        "gained": ("(b, t, 32)", False),
        "powered": ("(b, t, 32)", True),
        "floored": ("(b, t, 32)", True),
    }


TWICE_DIVIDED = """
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, dim: int = 64, num_heads: int = 4):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, scale, temperature):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = q / torch.tensor(scale)
        q = q / torch.tensor(temperature)
        attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)
"""


def test_a_query_divided_twice_by_tensors_of_unknown_shape_is_maybe_scaled() -> None:
    """``tensor_binary``: a division by a tensor of unknown shape is "maybe scaled" whether the
    query was scaled before or not. It used to be so only for an unscaled query: ``q / scale /
    temperature`` lost the first division's "maybe" (since 0da6152 only a written factor survives
    the product branch), and SC101 called the scores unscaled (a false positive; one division alone
    was clean)."""
    from shapecheck.engine.domain.values import ScaleTag
    from shapecheck.linter import lint_source

    values, conflicts = _run(
        """
        def f(q: Float[Tensor, "b h t d"], scale, temperature):
            once = q / torch.tensor(scale)
            twice = once / torch.tensor(temperature)
            halved = q * 0.5
            then = halved / torch.tensor(temperature)
        """
    )
    assert conflicts == []
    tags = {name: values[name].tag(ScaleTag) for name in ("once", "twice", "then")}
    assert all(tag is not None and tag.factor is None and tag.readable is None for tag in tags.values())
    result = lint_source(TWICE_DIVIDED, "snippet.py")
    assert result.error is None
    assert [d.code for d in result.diagnostics] == []


def test_a_query_scaled_twice_by_written_numbers_carries_the_product() -> None:
    """``tensor_binary``: scaling a scaled tensor again by a number multiplies the factors
    (``q * d_k ** -0.25`` then ``* d_k ** -0.25`` in the product's other half: ``d_k ** -0.5``);
    a factor that is not a number (a tensor of unknown shape) leaves it unknown."""
    from shapecheck.engine.domain.values import Scale, ScaleTag
    from shapecheck.engine.symbolic.dims import sym

    values, conflicts = _run(
        """
        def f(q: Float[Tensor, "b h t d"], k: Float[Tensor, "b h t d"], temperature):
            d_k = q.shape[-1]
            q1 = q * d_k ** -0.25
            q2 = q1 * d_k ** -0.25
            q3 = q1 * 2
            q4 = q1 / torch.tensor(temperature)
        """
    )
    assert conflicts == []
    factors = {name: values[name].tag(ScaleTag).factor for name in ("q1", "q2", "q3", "q4")}
    d = sym("d")
    assert factors == {
        "q1": Scale(1.0, ((d, Fraction(-1, 4)),)),
        "q2": Scale(1.0, ((d, Fraction(-1, 2)),)),
        "q3": Scale(2.0, ((d, Fraction(-1, 4)),)),
        "q4": None,
    }


# --- ops/elementwise.py: _along_tokens -------------------------------------------------------------


def test_a_running_count_of_a_mask_is_positions_only_along_the_tokens() -> None:
    """``_along_tokens``: ``torch.cumsum(mask, dim=1)`` of an integer ``(b, t)`` mask is the position
    of each token past the padding (RoBERTa's ``create_position_ids_from_input_ids``), and so is
    ``dim=-1``; down the batch (``dim=0``, ``dim=-2``: the same axis of a 2-D mask), over an axis
    the code does not give, or along axis 0 of a tensor of unknown shape, it is no position. The
    shape is the mask's (torch: cumsum keeps the shape)."""
    from shapecheck.engine.domain.values import PositionTag

    values, conflicts = _run(
        """
        def f(input_ids: Int[Tensor, "b t"], flags, axis: int, padding_idx: int = 1):
            mask = input_ids.ne(padding_idx).int()
            positions = torch.cumsum(mask, dim=1)
            last = mask.cumsum(-1)
            down = torch.cumsum(mask, dim=0)
            down_from_end = mask.cumsum(dim=-2)
            unknown_axis = mask.cumsum(axis)
            unknown_shape = torch.cumsum(flags.int(), 0)
        """
    )
    assert conflicts == []
    names = ("positions", "last", "down", "down_from_end", "unknown_axis")
    found = {name: (_shape(values[name]), values[name].has(PositionTag)) for name in names}
    assert found == {
        "positions": ("(b, t)", True),
        "last": ("(b, t)", True),
        "down": ("(b, t)", False),
        "down_from_end": ("(b, t)", False),
        "unknown_axis": ("(b, t)", False),
    }
    assert values["unknown_shape"].shape is None and not values["unknown_shape"].has(PositionTag)


def test_an_elementwise_max_against_a_tensor_of_unknown_shape_has_an_unknown_shape() -> None:
    """``_reduce``'s ``torch.max(a, b)`` (elementwise, not a reduction): OPT's clamp of the scores
    at the dtype's minimum keeps the scores' shape (torch: ``(2, 3, 4, 5)`` against a 0-dim
    tensor); against ``torch.tensor(floor)`` of a value the engine cannot read, the shape is
    unknown (a number or a list), never a made-up one, and nothing raises."""
    values, conflicts = _run(
        """
        def f(attn_weights: Float[Tensor, "b h t s"], floor):
            floored = torch.max(attn_weights, torch.tensor(torch.finfo(attn_weights.dtype).min))
            clipped = torch.max(attn_weights, torch.tensor(floor))
        """
    )
    assert conflicts == []
    assert (_shape(values["floored"]), values["floored"].dtype) == ("(b, h, t, s)", "float")
    assert values["clipped"].shape is None


def test_a_reduction_over_trailing_axes_of_a_tensor_of_unknown_rank_keeps_the_others() -> None:
    """``_reduce`` of ``(*, h, d)`` over axes counted from the end: an RMSNorm's
    ``x.pow(2).mean(-1, keepdim=True)`` is ``(*, h, 1)`` and ``x.sum(-1)`` is ``(*, h)`` (torch:
    ``(2, 3, 4, 5)`` gives ``(2, 3, 4, 1)`` and ``(2, 3, 4)``): only the reduced axis changes."""
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "... h d"]):
            variance = x.pow(2).mean(-1, keepdim=True)
            total = x.sum(-1)
            both = x.amax((-2, -1), keepdim=True)
        """
    )
    assert conflicts == []
    found = {name: _shape(values[name]) for name in ("variance", "total", "both")}
    assert found == {"variance": "(*, h, 1)", "total": "(*, h)", "both": "(*, 1, 1)"}


def test_a_reduction_over_an_axis_the_code_does_not_give_is_a_tensor_of_unknown_shape() -> None:
    """``_reduce`` over an axis the engine cannot read (``x.sum(dim)``) or of a tensor of unknown
    shape: a tensor of unknown shape still, made at that call, of the reduction's dtype (torch:
    the sum of a bool mask is int64, of floats float, ``mean`` float) and computed from what went in
    (the softmax's weights stay normalised)."""
    from test_mutation_kills_ops import _code

    from shapecheck.engine.domain.tags import NormalisedTag
    from shapecheck.engine.domain.values import TensorValue

    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t d"], mask: Bool[Tensor, "b t"], dim: int, h):
            pooled = x.sum(dim)
            counts = mask.sum(dim)
            probs = torch.softmax(x, dim=-1)
            total = probs.sum(dim)
            hidden = h.mean(-1)
        """
    )
    assert conflicts == []
    found = {
        name: (type(values[name]).__name__, _shape(values[name]), values[name].dtype, _code(values[name].node))
        for name in ("pooled", "counts", "total")
    }
    assert found == {
        "pooled": ("TensorValue", None, "float", "x.sum(dim)"),
        "counts": ("TensorValue", None, "int", "mask.sum(dim)"),
        "total": ("TensorValue", None, "float", "probs.sum(dim)"),
    }
    assert values["total"].has(NormalisedTag)
    assert isinstance(values["hidden"], TensorValue) and values["hidden"].shape is None


def test_a_softmax_is_normalised_where_it_was_first_taken() -> None:
    """``_softmax``: the weights are normalised at the softmax that made them (the tag's node); a
    softmax of weights already normalised keeps where they first were (a second softmax changes
    nothing of that)."""
    from test_mutation_kills_ops import _code

    from shapecheck.engine.domain.tags import NormalisedTag

    values, conflicts = _run(
        """
        def f(scores: Float[Tensor, "b h t t"]):
            probs = scores.softmax(dim=-1)
            again = F.softmax(probs, dim=-1)
        """
    )
    assert conflicts == []
    where = {name: _code(values[name].tag(NormalisedTag).node) for name in ("probs", "again")}
    assert where == {"probs": "scores.softmax(dim=-1)", "again": "scores.softmax(dim=-1)"}


def test_a_reduction_over_an_axis_out_of_range_is_a_tensor_of_unknown_shape() -> None:
    """``_reduce`` over an axis the tensor does not have (``x.sum(2)`` of ``(b, t)``: torch raises
    IndexError) gives up on the shape, keeping the dtype, the call and what went in."""
    from test_mutation_kills_ops import _code

    from shapecheck.engine.domain.tags import NormalisedTag
    from shapecheck.engine.domain.values import TensorValue

    values, conflicts = _run(
        """
        def f(mask: Bool[Tensor, "b t"]):
            probs = torch.softmax(mask.float(), dim=-1)
            bad = mask.sum(2)
            worse = probs.mean(-3)
        """
    )
    assert conflicts == []
    found = {name: (type(values[name]).__name__, values[name].shape, values[name].dtype, _code(values[name].node))
             for name in ("bad", "worse")}
    assert found == {
        "bad": ("TensorValue", None, "int", "mask.sum(2)"),
        "worse": ("TensorValue", None, "float", "probs.mean(-3)"),
    }
    assert values["worse"].has(NormalisedTag)


# --- ops/factories.py: _new_factory -------------------------------------------------------------


def test_new_full_gives_its_size_and_fill_positionally_or_by_keyword() -> None:
    """``_new_factory`` for ``new_full``: ``scores.new_full((t, t), float("-inf"))`` (a causal mask
    filled with -inf before ``triu``) and the keyword form ``new_full(size=..., fill_value=...)``
    have the given size, the receiver's dtype and every element the fill value (torch: ``(4, 4)``
    float32 of a float32 tensor, ``(2, 4)`` int64 of an int64 one; a fill the code names stays that
    symbol)."""
    from shapecheck.engine.domain.tags import FilledTag
    from shapecheck.engine.domain.values import Scale
    from shapecheck.engine.symbolic.dims import sym

    values, conflicts = _run(
        """
        def f(scores: Float[Tensor, "b h t t"], ids: Int[Tensor, "b t"], pad: int):
            T = scores.size(-1)
            mask = scores.new_full((T, T), float("-inf"))
            keyword = ids.new_full(size=(2, T), fill_value=0)
            unknown = ids.new_full((2, T), pad)
        """
    )
    assert conflicts == []
    found = {name: (_shape(values[name]), values[name].dtype) for name in ("mask", "keyword", "unknown")}
    assert found == {"mask": ("(t, t)", "float"), "keyword": ("(2, t)", "int"), "unknown": ("(2, t)", "int")}
    assert values["mask"].tag(FilledTag).value == Scale(float("-inf"))
    assert values["keyword"].tag(FilledTag).value == Scale(0.0)
    assert values["unknown"].tag(FilledTag).value == Scale.of_dim(sym("pad"))  # a symbolic fill


def test_new_zeros_ones_and_empty_hold_what_their_names_say() -> None:
    """``_new_factory``: ``x.new_zeros(b, t, d)`` is all zeros and ``new_ones`` all ones (a
    ``FilledTag``, as ``torch.zeros`` / ``ones``), ``new_empty`` holds nothing known; each is a new
    tensor made at its call, with the receiver's dtype (torch: ``(2, 3, 4)`` float32 of a float32
    tensor, ``(2, 3)`` bool of a bool one). ``new_zeros(*shape)`` with sizes the engine cannot read
    has an unknown shape."""
    from test_mutation_kills_ops import _code

    from shapecheck.engine.domain.tags import FilledTag
    from shapecheck.engine.domain.values import Scale

    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t d"], mask: Bool[Tensor, "b t"], shape):
            B, T, D = x.shape
            zeros = x.new_zeros(B, T, D)
            ones = mask.new_ones((B, T))
            empty = x.new_empty(B, D)
            unknown = x.new_zeros(*shape)
        """
    )
    assert conflicts == []
    found = {
        name: (_shape(values[name]), values[name].dtype, values[name].tags, _code(values[name].node))
        for name in ("zeros", "ones", "empty", "unknown")
    }
    assert found == {
        "zeros": ("(b, t, d)", "float", (FilledTag(Scale(0.0)),), "x.new_zeros(B, T, D)"),
        "ones": ("(b, t)", "bool", (FilledTag(Scale(1.0)),), "mask.new_ones((B, T))"),
        "empty": ("(b, d)", "float", (), "x.new_empty(B, D)"),
        "unknown": (None, "float", (FilledTag(Scale(0.0)),), "x.new_zeros(*shape)"),
    }


# --- ops/nn_modules.py: _convolution and its helpers ------------------------------------------------

CONV_OVER_TOKENS = """
class ConvPositions(nn.Module):
    def __init__(self, vocab: int = 100, dim: int = 32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.peg = nn.Conv2d(dim, dim, 3, 1, 1, groups=dim)
        self.same = nn.Conv2d(dim, dim, 3, padding="same", groups=dim)
        self.repeated = nn.Conv2d(dim, dim, 3, padding=(1,), groups=dim)
        self.valid = nn.Conv2d(dim, dim, 3, padding="valid")
        self.zero = nn.Conv2d(dim, dim, 3, padding=0)
        self.pairs = nn.Conv2d(dim, dim, 3, padding=(0, 0))
        self.one = nn.Conv2d(dim, dim, 3, padding=(0,))
        self.plain = nn.Conv2d(dim, dim, 3)

    def forward(self, ids: Int[Tensor, "b 16"]):
        x = self.embed(ids)
        B, N, C = x.shape
        grid = x.transpose(1, 2).reshape(B, C, 4, 4)
        peg = self.peg(grid)
        same = self.same(grid)
        repeated = self.repeated(grid)
        valid = self.valid(grid)
        zero = self.zero(grid)
        pairs = self.pairs(grid)
        one = self.one(grid)
        plain = self.plain(grid)
"""


def test_a_zero_padded_conv_over_tokens_gives_them_positions_an_unpadded_one_does_not() -> None:
    """``_padded`` / ``_all_zero`` / ``_token_kind``: a depthwise conv over token embeddings laid out
    as a grid (CPVT's PEG) gives positions when it pads (``padding=1``, ``"same"``, a one-item
    ``(1,)`` that torch repeats over both axes), not when it does not (``"valid"``, ``0``,
    ``(0, 0)``, ``(0,)``, no padding). Shapes as torch gives them: ``(b, 32, 4, 4)`` padded,
    ``(b, 32, 2, 2)`` not."""
    from test_mutation_kills_ops import _code

    from shapecheck.engine.domain.values import PositionTag

    values, conflicts = _run(CONV_OVER_TOKENS, "ConvPositions.forward")
    assert conflicts == []
    names = ("peg", "same", "repeated", "valid", "zero", "pairs", "one", "plain")
    found = {name: (_shape(values[name]), values[name].has(PositionTag)) for name in names}
    padded, unpadded = "(b, 32, 4, 4)", "(b, 32, 2, 2)"
    assert found == {
        "peg": (padded, True),
        "same": (padded, True),
        "repeated": (padded, True),
        "valid": (unpadded, False),
        "zero": (unpadded, False),
        "pairs": (unpadded, False),
        "one": (unpadded, False),
        "plain": (unpadded, False),
    }
    assert {values[name].tag(PositionTag).kind for name in ("peg", "same", "repeated")} == {"conv"}
    assert _code(values["peg"].tag(PositionTag).node) == "self.peg(grid)"  # made at the conv


CONV_STACK = """
class PatchEmbed(nn.Module):
    def __init__(self, in_chans: int = 3, embed_dim: int = 32, patch_size: int = 4):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.stem = nn.Conv2d(in_chans, 16, 3, padding=1)
        self.body = nn.Conv2d(32, 64, 3, padding=1)

    def forward(self, pixel_values, image: Float[Tensor, "b 3 h w"]):
        patches = self.proj(pixel_values)
        smooth = self.stem(pixel_values)
        feats = self.body(self.stem(image))
"""


def test_a_conv_over_an_input_of_unknown_shape_still_says_what_it_makes() -> None:
    """``_convolution`` of an input of unknown shape (``pixel_values`` unannotated): a ViT patch
    embedding (``kernel_size == stride``) still makes token embeddings, of its width (32), at its
    call; a padded 3x3 stem makes none (only its layer output). Shapes: the channels and the
    spatial rank (torch: ``(b, 32, h / 4, w / 4)`` and ``(b, 16, h, w)``)."""
    from test_mutation_kills_ops import _code

    from shapecheck.engine.domain.tags import LayerOutputTag
    from shapecheck.engine.domain.values import TokenEmbeddingTag
    from shapecheck.engine.symbolic.dims import Dim

    values, conflicts = _run(CONV_STACK, "PatchEmbed.forward")
    patches, smooth = values["patches"], values["smooth"]
    assert (_shape(patches), _shape(smooth)) == ("(*, 32, _, _)", "(*, 16, _, _)")
    token = patches.tag(TokenEmbeddingTag)
    assert (_code(token.node), token.width) == ("self.proj(pixel_values)", Dim.const(32))
    assert smooth.tags == (LayerOutputTag("self.stem"),)


def test_a_conv_fed_by_a_conv_of_other_channels_is_a_broken_layer_chain() -> None:
    """``_convolution``: a conv whose input channels differ from the conv before it (16 made, 32
    expected: torch raises) is a broken layer chain, reported where the layer's sizes were
    written; fed by anything else it is a plain channel mismatch."""
    from test_mutation_kills_ops import _code

    values, conflicts = _run(CONV_STACK, "PatchEmbed.forward")
    found = [(c.kind, c.detail, _code(c.at)) for c in conflicts]
    assert found == [(
        "layer-chain",
        "self.body expects 32 input channels but the input has shape (b, 16, h, w) (16 channels at axis -3) "
        "where `PatchEmbed.forward` applies it",
        "nn.Conv2d(32, 64, 3, padding=1)",
    )]
    values, conflicts = _run(CONV_STACK.replace("self.body(self.stem(image))", "self.body(image)"), "PatchEmbed.forward")
    assert [(c.kind, c.detail) for c in conflicts] == [
        ("linear", "self.body expects 32 input channels but the input has shape (b, 3, h, w) (3 channels at axis -3)")
    ]


PATCHES = """
class Patches(nn.Module):
    def __init__(self, vocab: int = 100, dim: int = 32, **conv_kwargs):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, kernel_size=4, stride=4)
        self.zero = nn.Conv2d(3, dim, 4, stride=4, padding=0)
        self.valid = nn.Conv2d(3, dim, 4, stride=4, padding="valid")
        self.pairs = nn.Conv2d(3, dim, (4, 4), stride=(4, 4), dilation=(1, 1))
        self.one = nn.Conv2d(3, dim, 4, stride=(4,))
        self.dilated = nn.Conv2d(3, dim, 4, stride=4, dilation=2)
        self.no_stride = nn.Conv2d(3, dim, kernel_size=2)
        self.pointwise = nn.Conv2d(3, dim, 1)
        self.configured = nn.Conv2d(3, dim, **conv_kwargs)
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(1, 16, dim))
        self.peg = nn.Conv2d(dim, dim, 3, 1, 1, groups=dim)

    def forward(self, image: Float[Tensor, "b 3 16 16"], ids: Int[Tensor, "b 16"], coords):
        patch = self.patch(image)
        zero = self.zero(image)
        valid = self.valid(image)
        pairs = self.pairs(image)
        one = self.one(image)
        dilated = self.dilated(image)
        no_stride = self.no_stride(image)
        pointwise = self.pointwise(image)
        configured = self.configured(image)
        placed = self.patch(image + coords)
        x = self.embed(ids) + self.pos
        B, N, C = x.shape
        grid = x.transpose(1, 2).reshape(B, C, 4, 4)
        peg = self.peg(grid)
"""


def test_only_a_non_overlapping_unpadded_strided_conv_cuts_an_image_into_patch_tokens() -> None:
    """``_patchify`` / ``_token_kind`` / ``_per_axis``: ``kernel_size == stride > 1`` with no
    padding (none given, ``0``, ``"valid"``), stride and kernel as ints, pairs or a one-item tuple
    torch repeats, dilation 1: a ViT patch embedding, whose output is token embeddings of its width
    made at that call. A dilated kernel (overlapping), a kernel with the default stride 1, a 1x1
    conv and an input that already carries positions make none; a conv built from ``**kwargs`` the
    engine cannot read keeps its channels and gives up on the spatial sizes. Shapes as torch gives
    them."""
    from test_mutation_kills_ops import _code

    from shapecheck.engine.domain.tags import LayerOutputTag
    from shapecheck.engine.domain.values import PositionTag, TokenEmbeddingTag

    values, conflicts = _run(PATCHES, "Patches.forward")
    assert conflicts == []

    def token(name: str):
        tag = values[name].tag(TokenEmbeddingTag)
        return None if tag is None else (_code(tag.node), str(tag.width))

    names = ("patch", "zero", "valid", "pairs", "one", "dilated", "no_stride", "pointwise", "configured")
    found = {name: (_shape(values[name]), token(name)) for name in names}
    assert found == {
        "patch": ("(b, 32, 4, 4)", ("self.patch(image)", "32")),
        "zero": ("(b, 32, 4, 4)", ("self.zero(image)", "32")),
        "valid": ("(b, 32, 4, 4)", ("self.valid(image)", "32")),
        "pairs": ("(b, 32, 4, 4)", ("self.pairs(image)", "32")),
        "one": ("(b, 32, 4, 4)", ("self.one(image)", "32")),
        "dilated": ("(b, 32, 3, 3)", None),
        "no_stride": ("(b, 32, 15, 15)", None),
        "pointwise": ("(b, 32, 16, 16)", None),
        "configured": ("(b, 32, _, _)", None),
    }
    assert values["pointwise"].tags == (LayerOutputTag("self.pointwise"),)
    placed = values["placed"]
    assert not placed.has(TokenEmbeddingTag) and placed.tag(PositionTag).kind == "unknown"
    # token embeddings that already carry positions: a padded conv over them adds none of its own
    peg = values["peg"]
    assert token("peg") == ("self.embed(ids)", "32")
    assert (peg.tag(PositionTag).kind, _code(peg.tag(PositionTag).node)) == ("added", "self.embed(ids) + self.pos")


def test_scores_plus_a_bias_or_times_a_triangle_are_masked_scores() -> None:
    """``tensor_binary``: attention scores plus a bias (an additive mask) or times a 0/1 triangle
    (a multiplicative causal mask) stay the scores, with the mask recorded at that operation: the
    other operand, a zero fill for the product, causal for the triangle. Shapes as torch gives
    them (``(b, h, t, t)``)."""
    from test_mutation_kills_ops import _code

    from shapecheck.engine.domain.values import MaskedTag, Scale, ScoresTag

    values, conflicts = _run(
        """
        def f(q: Float[Tensor, "b h t d"], k: Float[Tensor, "b h t d"], bias: Float[Tensor, "1 1 t t"]):
            T = q.size(-2)
            mask = torch.tril(torch.ones(T, T))
            att = q @ k.transpose(-2, -1)
            added = att + bias
            gated = att * mask
        """
    )
    assert conflicts == []

    def masked(name: str):
        tag = values[name].tag(MaskedTag)
        return (_code(tag.node), tag.fill, tag.blocked_when, tag.causal, _shape(tag.mask))

    assert {name: (_shape(values[name]), values[name].has(ScoresTag), masked(name)) for name in ("added", "gated")} == {
        "added": ("(b, h, t, t)", True, ("att + bias", None, None, False, "(1, 1, t, t)")),
        "gated": ("(b, h, t, t)", True, ("att * mask", Scale(0.0), False, True, "(t, t)")),
    }


def test_three_dimensional_scores_times_a_value_the_engine_cannot_see_keep_their_rank() -> None:
    """``_result_shape``: ``(b, t, t)`` scores times an unseen value (a head mask passed in) are
    still ``(b, t, t)``: a mask or a gain onto scores fits them, as for ``+``; a plain 3-D tensor
    times it may grow leading dims. (torch: ``(2, 5, 5)`` times a ``(2, 1, 5)`` or 0-dim mask is
    ``(2, 5, 5)``.)"""
    values, conflicts = _run(
        """
        def f(q: Float[Tensor, "b t d"], k: Float[Tensor, "b t d"], head_mask):
            att = q @ k.transpose(-2, -1)
            gated = att * head_mask
            biased = att + head_mask
            scaled = q * head_mask
        """
    )
    assert conflicts == []
    found = {name: _shape(values[name]) for name in ("gated", "biased", "scaled")}
    assert found == {"gated": "(b, t, t)", "biased": "(b, t, t)", "scaled": "(*, b, t, d)"}
