"""Rule decisions of SC504 and SC602 that mutation testing found unpinned (benchmarks/mutation_testing.py).

Each test names its rule code, so ``-k SC504`` / ``-k SC602`` selects it with the rule's other tests. Every
shape and every "raises" / "runs" said below was checked against torch 2.13.
"""

from __future__ import annotations

from shapecheck.linter import lint_source


def _lint(code: str, rules: set[str] | None):
    result = lint_source(code, "snippet.py", rules)
    assert result.error is None, result.error
    return result


# ------------------------------------------------------------------------------------------- SC504

SC504_FUNCTION_AND_IN_PLACE_FORMS = """import torch
from jaxtyping import Float
from torch import Tensor, transpose


def scores(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], cached: Float[Tensor, "b h t 64"]):
    dims = (1, 2)
    key_and_dim = (k, 1)
    a = q @ torch.permute(k, (0, 2, 1, 3))
    b = q @ torch.Tensor.transpose(k, 1, 2)
    c = q @ torch.transpose(k, *dims)
    d = q @ k.t()
    e = q @ transpose(k, 1, 2)
    f = q @ torch.transpose(*key_and_dim, 2)
    cached.transpose_(1, 2)
    g = q @ cached
    return a, b, c, d, e, f, g
"""


def test_SC504_fixes_of_function_forms_and_none_for_an_in_place_transpose() -> None:
    """``_fix``: a reordering function of torch (``torch.permute``, ``torch.Tensor.transpose``, dims
    unpacked from a tuple) becomes ``transpose(k, -2, -1)`` of the same module; ``k.t()`` of a batched
    key (torch raises: "t() expects a tensor with <= 2 dimensions") becomes ``.transpose(-2, -1)``; no
    fix for a bare ``transpose`` imported from torch, a key unpacked from a tuple, or the in-place
    ``cached.transpose_(1, 2)`` (a statement: the fix would drop the transpose). All seven products
    raise in torch for ``t != h``."""
    from shapecheck.fixes import fix_module

    result = _lint(SC504_FUNCTION_AND_IN_PLACE_FORMS, {"SC504"})
    function, method = "transpose the key's last two axes: transpose(k, -2, -1)", "transpose the key's last two axes: .transpose(-2, -1)"
    assert [(d.line, d.column, d.fix.message if d.fix else None) for d in result.diagnostics] == [
        (9, 13, function), (10, 13, function), (11, 13, function), (12, 13, method), (13, 13, None), (14, 13, None),
        (15, 5, None),
    ]
    fixed = fix_module(result.module, SC504_FUNCTION_AND_IN_PLACE_FORMS, result.diagnostics).fixed.splitlines()
    assert fixed[8:16] == [
        "    a = q @ torch.transpose(k, -2, -1)",
        "    b = q @ torch.Tensor.transpose(k, -2, -1)",
        "    c = q @ torch.transpose(k, -2, -1)",
        "    d = q @ k.transpose(-2, -1)",
        "    e = q @ transpose(k, 1, 2)",
        "    f = q @ torch.transpose(*key_and_dim, 2)",
        "    cached.transpose_(1, 2)",
        "    g = q @ cached",
    ]


SC504_AFTER_A_WRONG_ANNOTATION = """import torch.nn as nn
from jaxtyping import Float
from torch import Tensor


class QueryHeads(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)

    def forward(self, x: Float[Tensor, "b 10 64"]):
        b, t, _ = x.shape
        q: Float[Tensor, "b 4 10 16"] = self.query(x).view(b, t, self.n_heads, self.head_dim)
        k = self.key(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        return q @ k.transpose(1, 2)


class KeyHeads(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)

    def forward(self, x: Float[Tensor, "b 10 64"]):
        b, t, _ = x.shape
        q = self.query(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k: Float[Tensor, "b 4 10 16"] = self.key(x).view(b, t, self.n_heads, self.head_dim)
        return q @ k.transpose(1, 2)
"""


def test_SC504_a_wrong_key_transpose_after_a_wrong_query_or_key_annotation_is_a_follow_on() -> None:
    """``check``'s ``causes`` of both operands: the heads of ``q`` (first class) or of ``k`` (second)
    are never moved, so the annotation (b, 4, 10, 16) contradicts the inferred (b, 10, 4, 16) (SC506,
    the root); the engine goes on with the annotated shape, and the product with ``k.transpose(1, 2)``
    is reported by SC504 alone, and left out as a follow-on with every rule on: in the first class the
    cause is on the query only, in the second on the key only."""
    alone = _lint(SC504_AFTER_A_WRONG_ANNOTATION, {"SC504"})
    assert [(d.code, d.line, d.column) for d in alone.diagnostics] == [("SC504", 17, 20), ("SC504", 31, 20)]
    every = _lint(SC504_AFTER_A_WRONG_ANNOTATION, None)
    assert [(d.code, d.line, d.column) for d in every.diagnostics] == [("SC506", 15, 9), ("SC506", 30, 9)]


SC504_HEAD_SIZES_ASSERTED_EQUAL = """import torch
from jaxtyping import Float
from torch import Tensor


def attend(q: Float[Tensor, "b h t d_q"], k: Float[Tensor, "b h s d_k"], v: Float[Tensor, "b h s d_v"]):
    assert q.size(-1) == k.size(-1), "queries and keys must have the same head size"
    scores = q @ k.transpose(1, 2) / q.size(-1) ** 0.5
    return torch.softmax(scores, dim=-1) @ v


def attend_unchecked(q: Float[Tensor, "b h t d_q"], k: Float[Tensor, "b h s d_k"]):
    return q @ k.transpose(1, 2)
"""


def test_SC504_query_and_key_head_sizes_known_equal_only_by_an_assert() -> None:
    """``check`` and ``_verdict`` pass the path's assumptions: ``d_q == d_k`` is known only from the
    assert, so the query's last axis is the key's feature axis there (a finding, with the key's shape
    in the message), and nothing is claimed where the two head sizes are never compared."""
    result = _lint(SC504_HEAD_SIZES_ASSERTED_EQUAL, {"SC504"})
    assert [(d.line, d.column, d.message) for d in result.diagnostics] == [
        (
            8,
            18,
            "the key (b, h, s, d_k) is reordered to axis order (0, 2, 1, 3), giving (b, s, h, d_k), so q (b, h, t, d_q) "
            "@ k contracts h instead of the key's feature dim: expected the last two axes swapped, (b, h, d_k, s)",
        )
    ]


SC504_QUERY_OF_UNKNOWN_SHAPE = """import torch
from torch import nn


class ClassAttention(nn.Module):
    def __init__(self, dim=128, num_heads=8, query_dim=None):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, dim // num_heads
        self.q = nn.Linear(query_dim if query_dim is not None else dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)

    def forward(self, x, cls_token):
        B, N, C = x.shape
        k, v = self.kv(x).reshape(B, N, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        q = self.q(cls_token)
        attn = q @ k.transpose(1, 2)
        return attn.softmax(dim=-1) @ v
"""


def test_SC504_the_message_for_a_query_of_unknown_shape_names_no_query_shape() -> None:
    """``check``'s ``query_shape`` fallback: the query's projection has an unknown input width
    (``query_dim if query_dim is not None else dim``; ``query_dim or dim`` is now the size
    ``query_dim|128``) and an unknown input, so its shape is unknown; the key projections are
    known, and the message says ``q @ k`` with no shape (and no ``None``)."""
    result = _lint(SC504_QUERY_OF_UNKNOWN_SHAPE, {"SC504"})
    assert [(d.line, d.column, d.message) for d in result.diagnostics] == [
        (
            16,
            20,
            "the key (B, 8, N, 16) is reordered to axis order (0, 2, 1, 3), giving (B, N, 8, 16), so q @ k contracts 8 "
            "instead of the key's feature dim: expected the last two axes swapped, (B, 8, 16, N)",
        )
    ]


SC504_KEY_OF_UNKNOWN_SHAPE = """from torch import nn


class FrameCrossAttention(nn.Module):
    \"\"\"Each frame's latents attend to that frame's context tokens: x (b, f, l, dim), context (b, f, n, c).\"\"\"

    def __init__(self, dim=128, context_dim=None):
        super().__init__()
        self.scale = dim**-0.5
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(context_dim if context_dim is not None else dim, dim, bias=False)
        self.to_v = nn.Linear(context_dim if context_dim is not None else dim, dim, bias=False)

    def forward(self, x, context):
        q = self.to_q(x)
        k, v = self.to_k(context), self.to_v(context)
        sim = q @ k.permute(0, 2, 1, 3) * self.scale
        return sim.softmax(dim=-1) @ v


class FrameAttention(nn.Module):
    def __init__(self, dim=128):
        super().__init__()
        self.scale = dim**-0.5
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(dim, dim, bias=False)
        self.to_v = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        q, k, v = self.to_q(x), self.to_k(x), self.to_v(x)
        sim = q @ k.permute(0, 2, 1, 3) * self.scale
        return sim.softmax(dim=-1) @ v
"""


def test_SC504_the_message_for_a_key_of_unknown_or_partly_known_shape() -> None:
    """``check``'s ``before`` and ``_expected``'s fallback: the key projection of a context of unknown
    width (``context_dim if context_dim is not None else dim``) has an unknown shape, so the message
    names no source shape and says ``k.transpose(-2, -1)``; a projection of known width of an input of unknown shape is ``(*, 128)``
    (its rank unknown), named as such, with the same fallback. The queries, ``(*, 128)``, and the keys
    are projections. (torch: q (2, 3, 5, 128) @ k.permute(0, 2, 1, 3) of a (2, 3, 7, 128) key raises;
    ``k.transpose(-2, -1)`` gives (2, 3, 5, 7).)"""
    result = _lint(SC504_KEY_OF_UNKNOWN_SHAPE, {"SC504"})
    assert [(d.line, d.column, d.message) for d in result.diagnostics] == [
        (
            17,
            19,
            "the key is reordered to axis order (0, 2, 1, 3), giving (n1, n3, n2, n4), so q (*, 128) @ k contracts n2 "
            "instead of the key's feature dim: expected the last two axes swapped, k.transpose(-2, -1)",
        ),
        (
            31,
            19,
            "the key (*, 128) is reordered to axis order (0, 2, 1, 3), giving (n5, n7, n6, 128), so q (*, 128) @ k "
            "contracts n6 instead of the key's feature dim: expected the last two axes swapped, k.transpose(-2, -1)",
        ),
    ]


# ------------------------------------------------------------------------------------------- SC602

SC602_ONE_SAMPLE = """import torch
import torch.nn.functional as F


def per_sample_losses():
    head = torch.nn.Linear(32, 10)
    x = torch.randn(4, 32)
    labels = torch.randint(0, 10, (4,))
    losses = []
    for i in range(x.size(0)):
        logits = head(x[i])
        losses.append(F.cross_entropy(logits, labels[i : i + 1]))
        losses.append(F.cross_entropy(logits, labels[i]))
        losses.append(F.nll_loss(F.log_softmax(logits, dim=-1), labels[i : i + 1]))
        losses.append(F.cross_entropy(logits, labels[i : i + 2]))
        one_hot = torch.zeros(10, dtype=torch.long)
        one_hot[labels[i]] = 1
        losses.append(F.cross_entropy(logits, one_hot))
        losses.append(F.cross_entropy(logits, one_hot.float()))
        losses.append(F.cross_entropy(logits, labels.view(2, 2)))
    return losses
"""


def test_SC602_one_sample_logits_take_a_0d_or_a_one_element_target() -> None:
    """``mismatch`` on 1-D logits ``(10,)``: torch accepts a 0-d class index and a ``(1,)`` one (no
    finding: the ``(1,)`` target was a false positive); it raises for ``(2,)`` ("For 1D input, 1D
    target must have size 1"), for an integer one-hot ``(10,)`` (the logits' shape reads as class
    probabilities: "Expected floating point type for target with class probabilities, got Long") and
    for ``(2, 2)`` ("0D or 1D target tensor expected"); float probabilities of the logits' shape run."""
    result = _lint(SC602_ONE_SAMPLE, {"SC602"})
    assert [(d.line, d.column, d.message) for d in result.diagnostics] == [
        (
            15,
            23,
            "cross_entropy gets logits (10) with targets (2): integer class targets of 1-D logits are one class "
            "index, expected targets () or (1)",
        ),
        (
            18,
            23,
            "cross_entropy gets logits (10) with targets (10): integer class targets of 1-D logits are one class "
            "index, expected targets () or (1)",
        ),
        (
            20,
            23,
            "cross_entropy gets logits (10) with targets (2, 2): the ranks do not fit, expected targets () or (1) "
            "(the classes are dim 0 of the logits, 10)",
        ),
    ]


SC602_UNSHIFTED_CHUNK = """import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor


def chunk_loss(logits: Float[Tensor, "b v t"], chunk: Int[Tensor, "b s"]):
    # each row of the chunk holds block_size + 1 tokens, as the data loader reads them
    assert chunk.size(1) == logits.size(2) + 1
    return F.cross_entropy(logits, chunk)


def window_loss(logits: Float[Tensor, "b v t"], window: Int[Tensor, "b s"]):
    return F.cross_entropy(logits, window)
"""


def test_SC602_targets_one_position_longer_than_the_logits_by_an_assert() -> None:
    """``mismatch``'s position pairs use the path's assumptions: ``s == t + 1`` is known only from the
    assert, so logits dim 2 (t) provably differs from targets dim 1 (torch: "Expected target size
    [2, 8], got [2, 9]"); without the assert the two lengths may be equal and nothing is claimed."""
    result = _lint(SC602_UNSHIFTED_CHUNK, {"SC602"})
    assert [(d.line, d.column, d.message) for d in result.diagnostics] == [
        (
            9,
            12,
            "cross_entropy gets logits (b, v, t) with targets (b, s): logits dim 2 (t) must equal targets dim 1 (s), "
            "expected targets (b, t)",
        )
    ]


SC602_ONE_SAMPLE_SIZES_BY_ASSERT = """import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor


def one_hot_loss(logits: Float[Tensor, "v"], target: Int[Tensor, "n"]):
    assert target.size(0) == logits.size(0), "one entry per class"
    return F.cross_entropy(logits, target)


def two_crop_loss(logits: Float[Tensor, "v"], labels: Int[Tensor, "n"]):
    assert labels.size(0) == 2, "a label for each of the two crops"
    return F.cross_entropy(logits, labels)


def sample_loss(logits: Float[Tensor, "v"], labels: Int[Tensor, "n"]):
    return F.cross_entropy(logits, labels)
"""


def test_SC602_one_sample_logits_with_target_sizes_known_only_by_an_assert() -> None:
    """``mismatch``'s 1-D exemption uses the path's assumptions: integer targets asserted as long as the
    ``(v,)`` logits read as class probabilities (torch raises for int), and two labels asserted (torch
    raises: "1D target must have size 1") are reported; an ``(n,)`` target never sized may be the one
    class index torch accepts, and nothing is claimed."""
    result = _lint(SC602_ONE_SAMPLE_SIZES_BY_ASSERT, {"SC602"})
    message = (
        "cross_entropy gets logits (v) with targets (n): integer class targets of 1-D logits are one class index, "
        "expected targets () or (1)"
    )
    assert [(d.line, d.column, d.message) for d in result.diagnostics] == [(8, 12, message), (13, 12, message)]
