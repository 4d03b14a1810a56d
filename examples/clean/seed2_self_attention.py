"""Seed 2's single-head self-attention, from scratch: softmax(Q K^T / sqrt(d_k)) V.

Dims: b batch, n time, d d_model, k d_k, v d_v.
"""

import math

import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    """One head of scaled dot-product self-attention; returns the output and the weights."""

    def __init__(self, d_model: int, d_k: int, d_v: int):
        super().__init__()
        self.W_Q = nn.Linear(d_model, d_k)
        self.W_K = nn.Linear(d_model, d_k)
        self.W_V = nn.Linear(d_model, d_v)
        self.d_k = d_k

    def forward(self, x):
        Q = self.W_Q(x)  # (b, n, k)
        K = self.W_K(x)  # (b, n, k)
        V = self.W_V(x)  # (b, n, v)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)  # (b, n, n)
        attn = scores.softmax(dim=-1)  # each query's weights over the keys sum to 1
        out = attn @ V  # (b, n, n) x (b, n, v) -> (b, n, v)
        return out, attn


def worked_example() -> torch.Tensor:
    """Seed 2 §1.5: four tokens "The cat sat down" with d_k = 2, computed exactly."""
    Q = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    K = torch.tensor([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(2), dim=-1)  # (4, 4)


if __name__ == "__main__":
    torch.manual_seed(0)
    B, n, d_model = 2, 4, 8
    x = torch.randn(B, n, d_model)
    sa = SelfAttention(d_model, d_k=8, d_v=8)
    out, attn = sa(x)
    print(f"out {tuple(out.shape)}; every row of attn sums to 1: {torch.allclose(attn.sum(dim=-1), torch.ones(B, n))}")
    # The seed printed 0.21/0.34/0.13 for this example; the exact weights are below.
    print(worked_example().round(decimals=3))
