"""SC501 view-non-contiguous: nanoGPT-style attention (the manual path) that merges the heads with
a bare view.

Bug: ``y.transpose(1, 2).view(B, T, C)``: after the transpose the memory is still in (B, nh, T, hs)
order, and ``view`` cannot merge nh and hs without a copy. How it shows: run this file; ``view``
raises ``RuntimeError: view size is not compatible with input tensor's size and stride``.
"""

# B batch, T time, C n_embd, nh heads, hs head size
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int = 64, n_head: int = 4):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # (B, nh, T, T)
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = F.softmax(att.masked_fill(~causal, float("-inf")), dim=-1)
        y = att @ v  # (B, nh, T, hs)
        y = y.transpose(1, 2).view(B, T, C)  # BUG: SC501
        return self.c_proj(y)


if __name__ == "__main__":
    attn = CausalSelfAttention()
    try:
        attn(torch.randn(2, 8, 64))
        print("SC501: no error (unexpected)")
    except RuntimeError as err:
        print(f"SC501: view after transpose -> RuntimeError: {err}")
