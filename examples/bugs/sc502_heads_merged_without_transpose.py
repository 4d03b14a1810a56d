"""SC502 heads-merged-without-transpose: seed-style multi-head attention that merges the heads
with a reshape and no transpose.

Bug: ``out.reshape(batch, seq, d_model)`` on (batch, heads, seq, d_k): the element count is right,
so nothing raises, but every "token" of the result is a slice of one head across several positions.
How it shows: run this file; the output differs from the correct transpose-then-reshape merge,
and in this causal model token 0's output changes when only token 1 of the input changes.
"""

# b batch, t time, h heads, d_k head dim
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int = 64, n_heads: int = 4):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)
        self.W_V = nn.Linear(d_model, d_model)

    def heads(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        Q = self.W_Q(x).view(batch, seq, self.n_heads, self.d_k).transpose(1, 2)
        K = self.W_K(x).view(batch, seq, self.n_heads, self.d_k).transpose(1, 2)
        V = self.W_V(x).view(batch, seq, self.n_heads, self.d_k).transpose(1, 2)
        causal = torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1)
        scores = (Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)).masked_fill(causal, float("-inf"))
        return torch.softmax(scores, dim=-1) @ V  # (b, h, t, d_k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, d_model = x.shape
        out = self.heads(x)
        return out.reshape(batch, seq, d_model)  # BUG: SC502


if __name__ == "__main__":
    torch.manual_seed(0)
    mha = MultiHeadAttention()
    x = torch.randn(1, 8, 64)
    wrong = mha(x)
    right = mha.heads(x).transpose(1, 2).reshape(1, 8, 64)
    changed = x.clone()
    changed[:, 1] += 1.0
    leak = (mha(changed)[:, 0] - wrong[:, 0]).abs().max().item()
    print(f"SC502: max |wrong - right| = {(wrong - right).abs().max().item():.3f}; "
          f"token 0 changes by {leak:.3f} when only token 1 changes (causal: it must not change)")
