"""A T5-style bidirectional encoder: a learned relative-position bias per head (bucketed by
distance) is added to the scores, so no positional table is added to the tokens. Scores are
scaled by the head size; the padding mask is an additive float bias.

Dims: b batch, i query time, j key time, h heads, k head dim, d d_model.
"""

import math

import torch as th
from torch import nn
from torch.nn import functional as G


def relative_buckets(n: int, num_buckets: int, max_distance: int, device=None) -> th.Tensor:
    """Map (j - i) to a bucket: exact for small distances, log-spaced up to max_distance, per sign."""
    rel = th.arange(n, device=device)[None, :] - th.arange(n, device=device)[:, None]  # (i, j)
    half = num_buckets // 2
    sign_offset = (rel > 0).long() * half
    dist = rel.abs()
    exact = half // 2
    log_bucket = exact + (th.log(dist.float().clamp(min=1) / exact) / math.log(max_distance / exact) * (half - exact)).long()
    log_bucket = log_bucket.clamp(max=half - 1)
    return sign_offset + th.where(dist < exact, dist, log_bucket)  # (i, j) in [0, num_buckets)


class RelativeBiasAttention(nn.Module):
    def __init__(self, d_model: int = 64, n_heads: int = 4, num_buckets: int = 32, max_distance: int = 128):
        super().__init__()
        assert d_model % n_heads == 0, f"d_model {d_model} must be divisible by n_heads {n_heads}"
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.num_buckets, self.max_distance = num_buckets, max_distance
        self.q = nn.Linear(d_model, d_model, bias=False)
        self.k = nn.Linear(d_model, d_model, bias=False)
        self.v = nn.Linear(d_model, d_model, bias=False)
        self.o = nn.Linear(d_model, d_model, bias=False)
        self.relative_attention_bias = nn.Embedding(num_buckets, n_heads)

    def forward(self, x, pad_bias):
        B, T, C = x.shape
        q = self.q(x).view(B, T, self.n_heads, self.d_k).transpose(1, 2)  # (b, h, i, k)
        k = self.k(x).view(B, T, self.n_heads, self.d_k).transpose(1, 2)  # (b, h, j, k)
        v = self.v(x).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        scores = th.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)  # (b, h, i, j)
        buckets = relative_buckets(T, self.num_buckets, self.max_distance, device=x.device)
        position_bias = self.relative_attention_bias(buckets).permute(2, 0, 1)  # (h, i, j)
        weights = G.softmax(scores + position_bias + pad_bias, dim=-1)
        out = th.matmul(weights, v).transpose(1, 2).reshape(B, T, C)
        return self.o(out)


class RelativeEncoder(nn.Module):
    def __init__(self, vocab_size: int = 100, d_model: int = 64, n_heads: int = 4, pad_id: int = 0):
        super().__init__()
        self.pad_id = pad_id
        self.embed = nn.Embedding(vocab_size, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = RelativeBiasAttention(d_model, n_heads)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.ReLU(), nn.Linear(4 * d_model, d_model))

    def forward(self, ids):
        keep = ids != self.pad_id  # (b, j), True = real token
        pad_bias = th.zeros(keep.shape, device=ids.device).masked_fill(~keep, float("-inf"))[:, None, None, :]
        x = self.embed(ids)  # position enters through the relative bias
        x = x + self.attn(self.norm1(x), pad_bias)
        return x + self.ff(self.norm2(x))


if __name__ == "__main__":
    th.manual_seed(0)
    model = RelativeEncoder()
    model.eval()
    ids = th.tensor([[5, 6, 7, 8, 0, 0], [9, 10, 11, 12, 13, 14]])
    with th.no_grad():
        out = model(ids)
        moved = not th.allclose(model(ids.flip(dims=[1]))[1].flip(dims=[0]), out[1], atol=1e-5)
    print(f"out {tuple(out.shape)}; finite: {th.isfinite(out).all().item()}; relative bias breaks permutation symmetry: {moved}")
