"""SC104 mask-after-softmax: a functional attention() helper that masks the probabilities.

Bug: the causal mask is applied *after* softmax (``masked_fill(mask == 0, 0.0)`` on the
probabilities). The rows no longer sum to one, and since softmax already normalised over all keys,
the future still leaks in through the denominator. How it shows: run this file; the rows sum to
less than 1 and the output at position 0 changes when only the last token changes.
"""

# b batch, t time, d d_model, h heads, k head dim
import math

import torch
import torch.nn.functional as F
from torch import nn


def attention(query, key, value, mask=None):
    """Scaled dot-product attention; mask is 1 where a query may look."""
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.size(-1))  # (b, h, t, t)
    p_attn = F.softmax(scores, dim=-1)
    if mask is not None:
        p_attn = p_attn.masked_fill(mask == 0, 0.0)  # BUG: SC104
    return torch.matmul(p_attn, value), p_attn


class MaskedMultiHeadAttention(nn.Module):
    def __init__(self, d_model: int = 64, n_heads: int = 4, max_len: int = 32):
        super().__init__()
        assert d_model % n_heads == 0, f"d_model {d_model} % n_heads {n_heads} != 0"
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.w_qkv = nn.Linear(d_model, 3 * d_model)
        self.w_out = nn.Linear(d_model, d_model)
        self.register_buffer("subsequent", torch.tril(torch.ones(max_len, max_len)))

    def forward(self, x):
        b, t, d = x.shape
        qkv = self.w_qkv(x).view(b, t, 3, self.n_heads, self.d_k).permute(2, 0, 3, 1, 4)  # (3, b, h, t, k)
        out, p_attn = attention(qkv[0], qkv[1], qkv[2], mask=self.subsequent[:t, :t])
        return self.w_out(out.transpose(1, 2).reshape(b, t, d)), p_attn


if __name__ == "__main__":
    torch.manual_seed(0)
    mha = MaskedMultiHeadAttention()
    x = torch.randn(1, 8, 64)
    y, p = mha(x)
    x2 = x.clone()
    x2[:, -1] = torch.randn(64)
    y2, _ = mha(x2)
    leak = (y[:, 0] - y2[:, 0]).abs().max().item()
    print(
        f"SC104: masked after softmax, row 0 sums to {p[0, 0, 0].sum().item():.2f}, not 1; changing the last "
        f"token moves output 0 by {leak:.3f} (future leaks through the softmax denominator)."
    )
