"""SC403 head-split-mismatch: nanoGPT-style attention that splits the keys into heads of size C.

Bug: ``k.view(B, T, n_head, C)`` asks for n_head * C features per token where there are only C;
the head size must be ``C // n_head``. How it shows: run this file; ``view`` raises
``RuntimeError: shape '[...]' is invalid for input of size ...``.
"""

# B batch, T time, C n_embd, nh heads, hs head size
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    n_embd: int = 64  # embedding dim
    n_head: int = 4  # attention heads


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        assert config.n_embd % config.n_head == 0, f"n_embd {config.n_embd} % n_head {config.n_head} != 0"
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)

    def forward(self, x):
        B, T, C = x.size()  # batch, sequence length, embedding dim
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C).transpose(1, 2)  # BUG: SC403
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


if __name__ == "__main__":
    attn = CausalSelfAttention(GPTConfig())
    try:
        attn(torch.randn(2, 8, 64))
        print("SC403: no error (unexpected)")
    except RuntimeError as err:
        print(f"SC403: keys split into {attn.n_head} heads of 64 instead of 16 -> RuntimeError: {err}")
