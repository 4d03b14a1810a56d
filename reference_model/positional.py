"""Position schemes compared in the second seed: sinusoidal, learned, rotary (RoPE) and ALiBi.

Dims: b batch, h heads, t time, d_model model width, head_dim width of one query/key head.

Self-attention is permutation-equivariant, so order has to be put in explicitly:
- sinusoidal and learned tables are *added* to the token embeddings (never concatenated), sliced to
  the first t rows;
- RoPE rotates queries and keys (not values) by an angle proportional to their position, so that
  q_m . k_n depends on m - n only;
- ALiBi adds a per-head linear penalty -slope_h * |i - j| to the attention scores.

Walk-through (the first seed's 5-token sentence, d_model 512, table built for 512 positions):

    >>> import torch
    >>> from reference_model import SinusoidalPositionalEncoding
    >>> pe = SinusoidalPositionalEncoding(d_model=512, max_len=512)
    >>> tuple(pe.table.shape)                            # (max_len, d_model)
    (512, 512)
    >>> x = torch.randn(1, 5, 512)                       # (b, t, d_model) token embeddings
    >>> tuple(pe(x).shape)                               # x + table[:5]: added, same shape
    (1, 5, 512)
"""

import math

import torch
from jaxtyping import Float
from torch import Tensor, nn

from reference_model.checking import typechecked

__all__ = [
    "LearnedPositionalEncoding",
    "RotaryEmbedding",
    "SinusoidalPositionalEncoding",
    "alibi_bias",
    "alibi_slopes",
    "sinusoidal_table",
]


def _check_length(t: int, max_len: int) -> None:
    if t > max_len:
        raise ValueError(f"sequence length t={t} exceeds the table's max_len={max_len}")


@typechecked
def sinusoidal_table(max_len: int, d_model: int) -> Float[Tensor, "max_len d_model"]:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model))."""
    if d_model % 2 != 0:
        raise ValueError(f"sinusoidal encoding needs an even d_model, got d_model={d_model}")
    pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model / 2,): 0, 2, 4, ...
    angle = pos / torch.pow(10000.0, two_i / d_model)  # (max_len, d_model / 2)
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)  # even slots: sin
    table[:, 1::2] = torch.cos(angle)  # odd slots: cos, same frequency as the slot before
    return table.float()


class SinusoidalPositionalEncoding(nn.Module):
    """Fixed sin/cos table (Vaswani et al. 2017), added to the embeddings; no parameters."""

    def __init__(self, d_model: int, max_len: int) -> None:
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)

    @typechecked
    def forward(self, x: Float[Tensor, "b t d_model"]) -> Float[Tensor, "b t d_model"]:
        """Add the encodings of positions 0..t-1."""
        t = x.size(1)
        _check_length(t, self.max_len)
        return x + self.table[:t]  # (b, t, d_model) + (t, d_model)


class LearnedPositionalEncoding(nn.Module):
    """A trained table of max_len position vectors (BERT, GPT-2), added to the embeddings."""

    def __init__(self, d_model: int, max_len: int) -> None:
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.embedding = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.embedding.weight, mean=0.0, std=0.02)

    @typechecked
    def forward(self, x: Float[Tensor, "b t d_model"]) -> Float[Tensor, "b t d_model"]:
        """Add the learned vectors of positions 0..t-1."""
        t = x.size(1)
        _check_length(t, self.max_len)
        positions = torch.arange(t, device=x.device)  # (t,)
        return x + self.embedding(positions)  # (b, t, d_model) + (t, d_model)


class RotaryEmbedding(nn.Module):
    """RoPE (Su et al. 2021): rotate each pair (x[2i], x[2i+1]) by the angle pos * base^(-2i/head_dim)."""

    def __init__(self, head_dim: int, max_len: int, base: float = 10000.0) -> None:
        super().__init__()
        if head_dim % 2 != 0:
            raise ValueError(f"RoPE rotates pairs of features: head_dim={head_dim} must be even")
        self.head_dim = head_dim
        self.max_len = max_len
        pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (max_len, 1)
        inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
        angle = pos * inv_freq  # (max_len, head_dim / 2)
        self.register_buffer("cos", torch.cos(angle).float(), persistent=False)
        self.register_buffer("sin", torch.sin(angle).float(), persistent=False)

    @typechecked
    def forward(self, x: Float[Tensor, "*batch t head_dim"]) -> Float[Tensor, "*batch t head_dim"]:
        """Rotate queries or keys at positions 0..t-1 (apply to both q and k, never to v)."""
        t = x.size(-2)
        _check_length(t, self.max_len)
        cos, sin = self.cos[:t], self.sin[:t]  # (t, head_dim / 2)
        even, odd = x[..., 0::2], x[..., 1::2]  # (*batch, t, head_dim / 2) each
        rotated = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
        return rotated.flatten(-2)  # (*batch, t, head_dim / 2, 2) -> (*batch, t, head_dim)


def alibi_slopes(n_heads: int) -> list[float]:
    """Head slopes of ALiBi (Press et al. 2022): 2^(-8/n), 2^(-16/n), ... for n a power of two.

    Otherwise the slopes of the closest power of two p below n, then every other slope of 2p.
    """

    def geometric(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (k + 1) for k in range(n)]

    if n_heads <= 0:
        raise ValueError(f"n_heads must be positive, got n_heads={n_heads}")
    p = 2 ** math.floor(math.log2(n_heads))
    return geometric(p) + geometric(2 * p)[0::2][: n_heads - p]


@typechecked
def alibi_bias(n_heads: int, t: int) -> Float[Tensor, "h t t"]:
    """Per-head bias -slope_h * |i - j| to add to (b, h, t, t) scores; zero on the diagonal."""
    slopes = torch.tensor(alibi_slopes(n_heads)).view(n_heads, 1, 1)  # (h, 1, 1)
    pos = torch.arange(t)
    distance = (pos.view(t, 1) - pos.view(1, t)).abs().float()  # (t, t): |i - j|
    return -slopes * distance  # (h, 1, 1) * (t, t) -> (h, t, t)
