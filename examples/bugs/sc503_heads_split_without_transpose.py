"""SC503 heads-split-without-transpose: Hugging Face-style attention that splits the heads with a
reshape straight to (bsz, heads, q_len, head_dim).

Bug: ``q_proj(hidden_states).reshape(bsz, num_heads, q_len, head_dim)``: the count is right, so
nothing raises, but the "heads" are rows of consecutive tokens, not slices of each token's
features. How it shows: run this file; the attention weights differ from the ones computed with the
correct ``view(bsz, q_len, num_heads, head_dim).transpose(1, 2)`` split.
"""

# b batch, t time, h heads, d head dim
import math

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, hidden_size: int = 64, num_heads: int = 4):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, hidden_size // num_heads
        self.q_proj = nn.Linear(hidden_size, hidden_size)
        self.k_proj = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states).reshape(bsz, self.num_heads, q_len, self.head_dim)  # BUG: SC503
        key_states = self.k_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        return weights.softmax(dim=-1)


if __name__ == "__main__":
    torch.manual_seed(0)
    attn = Attention()
    x = torch.randn(2, 6, 64)
    q = attn.q_proj(x).view(2, 6, 4, 16).transpose(1, 2)
    k = attn.k_proj(x).view(2, 6, 4, 16).transpose(1, 2)
    right = (q @ k.transpose(-2, -1) / math.sqrt(16)).softmax(dim=-1)
    print(f"SC503: max |weights - correct weights| = {(attn(x) - right).abs().max().item():.3f}")
