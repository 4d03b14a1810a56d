"""SC203 mask-polarity: an nn.MultiheadAttention-style mask handed to F.scaled_dot_product_attention.

Bug: ``triu(ones, diagonal=1)`` marks the *blocked* future (the ``nn.MultiheadAttention`` convention,
True = masked out), but ``scaled_dot_product_attention`` reads a bool mask as True = *may attend*.
Each query now sees only the future. How it shows: run this file; the output at position 0
changes when only the last token changes, and the last position attends to nothing.
"""

# b batch, t time, c d_model, nh heads, hs head size
import torch
import torch.nn as nn
from torch.nn import functional as G


class FlashCausalAttention(nn.Module):
    def __init__(self, d_model: int = 64, n_heads: int = 4):
        super().__init__()
        assert d_model % n_heads == 0, f"d_model {d_model} % n_heads {n_heads} != 0"
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)  # (B, nh, T, hs)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        y = G.scaled_dot_product_attention(q, k, v, attn_mask=future)  # BUG: SC203
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


if __name__ == "__main__":
    torch.manual_seed(0)
    attn = FlashCausalAttention()
    x = torch.randn(1, 6, 64)
    x2 = x.clone()
    x2[:, -1] = torch.randn(64)
    moved = (attn(x)[:, 0] - attn(x2)[:, 0]).abs().max().item()
    print(f"SC203: True=blocked mask given to SDPA (True=attend); output 0 moves by {moved:.3f} when the last token changes.")
