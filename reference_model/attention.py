"""Scaled dot-product attention, multi-head attention and causal self-attention.

Dims: b batch, h heads, t time (t_q queries, t_k keys/values), d_model model width,
      d_k head width of queries/keys, d_v head width of values (d_k = d_v = d_model // h here).
Masks are bool and True means *blocked* (the nn.MultiheadAttention convention; note that
F.scaled_dot_product_attention uses the opposite: True = may attend).

Walk-through (the first seed's "[CLS] I love NLP [SEP]", batch 1, d_model 512, 8 heads):

    >>> import torch
    >>> from reference_model import MultiHeadAttention
    >>> mha = MultiHeadAttention(d_model=512, n_heads=8)
    >>> x = torch.randn(1, 5, 512)                       # (b, t, d_model)
    >>> out, weights = mha(x, x, x)
    >>> tuple(out.shape), tuple(weights.shape)          # (b, t, d_model), (b, h, t_q, t_k)
    ((1, 5, 512), (1, 8, 5, 5))
    >>> bool(torch.allclose(weights.sum(-1), torch.ones(1, 8, 5)))  # each row is a distribution
    True
"""

import math

import torch
import torch.nn.functional as F
from jaxtyping import Bool, Float
from torch import Tensor, nn

from reference_model.checking import typechecked

__all__ = [
    "CausalSelfAttention",
    "MultiHeadAttention",
    "causal_mask",
    "scaled_dot_product_attention",
]


@typechecked
def scaled_dot_product_attention(
    q: Float[Tensor, "*batch t_q d_k"],
    k: Float[Tensor, "*batch t_k d_k"],
    v: Float[Tensor, "*batch t_k d_v"],
    mask: Bool[Tensor, "*#batch #t_q t_k"] | None = None,
    *,
    bias: Float[Tensor, "*#batch #t_q t_k"] | None = None,
    dropout_p: float = 0.0,
) -> tuple[Float[Tensor, "*batch t_q d_v"], Float[Tensor, "*batch t_q t_k"]]:
    """softmax(q k^T / sqrt(d_k) + bias, masked where ``mask`` is True) v -> (out, weights).

    ``bias`` is added to the scaled scores (ALiBi); ``dropout_p`` drops attention weights (pass 0.0
    in eval mode). The returned weights are the softmax before dropout: every row sums to 1, except
    a row whose keys are all blocked, which is NaN (as in PyTorch).
    """
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (*, t_q, d_k) @ (*, d_k, t_k) -> (*, t_q, t_k)
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))  # blocked keys get zero weight
    weights = torch.softmax(scores, dim=-1)  # over keys: each query row sums to 1
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0.0 else weights
    out = dropped @ v  # (*, t_q, t_k) @ (*, t_k, d_v) -> (*, t_q, d_v)
    return out, weights


@typechecked
def causal_mask(t: int, device: torch.device | None = None) -> Bool[Tensor, "t t"]:
    """Mask out subsequent positions: True above the diagonal (query i may not see key j > i)."""
    return torch.triu(torch.ones(t, t, dtype=torch.bool, device=device), diagonal=1)


# The two reshapes here run inside every attention call. They carry annotations for readers and
# for `shapecheck lint`, but are not runtime-checked: the modules calling them are, and each
# checked call costs a few hundred microseconds (see benchmarks/runtime_overhead.py).


def _split_heads(x: Float[Tensor, "b t d_model"], n_heads: int) -> Float[Tensor, "b h t d_k"]:
    """(b, t, d_model) -> (b, h, t, d_k): cut the width into heads, then move h before t."""
    b, t, d_model = x.shape
    d_k = d_model // n_heads
    return x.view(b, t, n_heads, d_k).transpose(1, 2)  # (b, t, h, d_k) -> (b, h, t, d_k)


def _merge_heads(x: Float[Tensor, "b h t d_k"]) -> Float[Tensor, "b t d_model"]:
    """(b, h, t, d_k) -> (b, t, h * d_k): move h back next to d_k, then join them."""
    b, h, t, d_k = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d_k)  # (b, t, h, d_k) -> (b, t, d_model)


def _check_divisible(d_model: int, n_heads: int) -> None:
    if n_heads <= 0 or d_model % n_heads != 0:
        raise ValueError(
            f"d_model={d_model} must be divisible by n_heads={n_heads} "
            f"(each head gets d_model // n_heads features; {d_model} % {n_heads} = "
            f"{d_model % n_heads if n_heads > 0 else 'undefined'})"
        )


class MultiHeadAttention(nn.Module):
    """Multi-head attention with named projections W_Q, W_K, W_V (d_model -> d_model) and W_O.

    Self-attention passes the same tensor three times; cross-attention passes the decoder states
    as ``query`` and the encoder memory as ``key`` and ``value``.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True) -> None:
        super().__init__()
        _check_divisible(d_model, n_heads)
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads  # 64 for d_model=512, n_heads=8
        self.dropout_p = dropout  # on the attention weights, in training mode only
        self.W_Q = nn.Linear(d_model, d_model, bias=bias)  # h query heads side by side
        self.W_K = nn.Linear(d_model, d_model, bias=bias)
        self.W_V = nn.Linear(d_model, d_model, bias=bias)
        self.W_O = nn.Linear(d_model, d_model, bias=bias)  # mixes the concatenated heads

    @typechecked
    def forward(
        self,
        query: Float[Tensor, "b t_q d_model"],
        key: Float[Tensor, "b t_k d_model"],
        value: Float[Tensor, "b t_k d_model"],
        mask: Bool[Tensor, "#t_q t_k"] | Bool[Tensor, "#b #h #t_q t_k"] | None = None,
    ) -> tuple[Float[Tensor, "b t_q d_model"], Float[Tensor, "b h t_q t_k"]]:
        """Attend from each query position to all unmasked key positions, in every head."""
        # 1. project, then split d_model into h heads of d_k: (b, t, d_model) -> (b, h, t, d_k)
        q = _split_heads(self.W_Q(query), self.n_heads)
        k = _split_heads(self.W_K(key), self.n_heads)
        v = _split_heads(self.W_V(value), self.n_heads)
        # 2. attend in every head at once: (b, h, t_q, d_k) -> (b, h, t_q, d_k), weights (b, h, t_q, t_k)
        dropout_p = self.dropout_p if self.training else 0.0
        heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p=dropout_p)
        # 3. concatenate the heads and mix them: (b, h, t_q, d_k) -> (b, t_q, d_model)
        return self.W_O(_merge_heads(heads)), weights


class CausalSelfAttention(nn.Module):
    """Masked self-attention for decoders: position i attends to positions 0..i only."""

    def __init__(self, d_model: int, n_heads: int, max_len: int, dropout: float = 0.0) -> None:
        super().__init__()
        _check_divisible(d_model, n_heads)
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.max_len = max_len
        self.dropout_p = dropout  # on the attention weights, in training mode only
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)
        self.W_V = nn.Linear(d_model, d_model)
        self.W_O = nn.Linear(d_model, d_model)
        # (max_len, max_len), True above the diagonal; sliced to (t, t) in forward
        self.register_buffer("mask", causal_mask(max_len), persistent=False)

    @typechecked
    def forward(self, x: Float[Tensor, "b t d_model"]) -> Float[Tensor, "b t d_model"]:
        """Self-attention over the prefix of every position."""
        b, t, d_model = x.shape  # batch, sequence length, model width
        if t > self.max_len:
            raise ValueError(f"sequence length t={t} exceeds max_len={self.max_len}")
        q = _split_heads(self.W_Q(x), self.n_heads)  # (b, h, t, d_k)
        k = _split_heads(self.W_K(x), self.n_heads)  # (b, h, t, d_k)
        v = _split_heads(self.W_V(x), self.n_heads)  # (b, h, t, d_k)
        dropout_p = self.dropout_p if self.training else 0.0
        mask = self.mask[:t, :t]  # (t, t): the future of every query is blocked
        heads, _ = scaled_dot_product_attention(q, k, v, mask, dropout_p=dropout_p)
        return self.W_O(_merge_heads(heads))  # (b, h, t, d_k) -> (b, t, d_model)
