"""SC102 wrong-attention-scale: nanoGPT-style attention scaled by 1/sqrt(n_embd) instead of 1/sqrt(head size).

Bug: the scores are multiplied by ``1 / sqrt(C)`` where ``C = n_embd`` (the model width), but each head
only has ``C // n_head`` dims, so the scores are shrunk ``sqrt(n_head)`` times too much. How it
shows: run this file; the attention rows come out nearly uniform (entropy close to log(t)), so the
model starts out unable to focus and learns more slowly.
"""

# b batch, t time, c n_embd, nh heads, hs head size
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    block_size: int = 64  # longest sequence
    n_embd: int = 256  # model width
    n_head: int = 16  # heads; head size = 16


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        assert config.n_embd % config.n_head == 0, f"n_embd {config.n_embd} % n_head {config.n_head} != 0"
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        bs = config.block_size
        self.register_buffer("bias", torch.tril(torch.ones(bs, bs)).view(1, 1, bs, bs))

    def forward(self, x):
        B, T, C = x.size()  # batch, sequence length, embedding dim
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C))  # BUG: SC102
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)  # (B, nh, T, T)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)  # (B, nh, T, hs) -> (B, T, C)
        return self.c_proj(y), att


if __name__ == "__main__":
    torch.manual_seed(0)
    cfg = GPTConfig()
    attn = CausalSelfAttention(cfg)
    _, att = attn(torch.randn(2, cfg.block_size, cfg.n_embd) * 3.0)
    last_row = att[:, :, -1, :]  # the row that sees all block_size keys
    entropy = -(last_row * last_row.clamp_min(1e-12).log()).sum(-1).mean().item()
    print(
        f"SC102: scores scaled by 1/sqrt({cfg.n_embd}) instead of 1/sqrt({cfg.n_embd // cfg.n_head}); "
        f"last-row entropy {entropy:.3f} vs uniform {math.log(cfg.block_size):.3f}: attention is nearly flat."
    )
