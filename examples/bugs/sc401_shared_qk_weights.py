"""SC401 shared-qk-weights: seed 1's anecdote, W_Q and W_K bound to the same Parameter.

Bug: ``self.W_Q = self.W_K = nn.Parameter(...)`` makes queries and keys the same projection, so
the score matrix Q K^T = X W W^T X^T is symmetric: token i attends to j exactly as j attends to i,
and the gradient updates of "asking" and "answering" are the same (seed 1, §3.2 实操心得).
How it shows: run this file; the two weights are one tensor, the scores are symmetric, and they
stay tied after an optimiser step.
"""

# b batch, t time, d d_model, k head dim
import math

import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, d_model: int = 768, d_k: int = 64):
        super().__init__()
        self.d_k = d_k
        self.W_Q = self.W_K = nn.Parameter(torch.randn(d_model, d_k) / math.sqrt(d_model))  # BUG: SC401
        self.W_V = nn.Parameter(torch.randn(d_model, d_k) / math.sqrt(d_model))

    def forward(self, x):
        Q, K, V = x @ self.W_Q, x @ self.W_K, x @ self.W_V  # (b, t, k) each
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)  # (b, t, t)
        return torch.softmax(scores, dim=-1) @ V, scores


if __name__ == "__main__":
    torch.manual_seed(0)
    attn = SelfAttention()
    optim = torch.optim.SGD(attn.parameters(), lr=0.1)
    out, scores = attn(torch.randn(1, 5, 768))
    out.pow(2).mean().backward()
    optim.step()
    symmetric = torch.allclose(scores, scores.transpose(-2, -1), atol=1e-5)
    print(
        f"SC401: W_Q is W_K: {attn.W_Q is attn.W_K}; scores symmetric: {symmetric}; "
        f"still equal after a step: {torch.allclose(attn.W_Q, attn.W_K)}."
    )
