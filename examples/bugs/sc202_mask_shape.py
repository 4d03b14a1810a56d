"""SC202 mask-shape: a decoder block that gives nn.MultiheadAttention a (B, T, T) causal mask.

Bug: ``nn.MultiheadAttention`` wants ``attn_mask`` of shape ``(T, T)`` or ``(B * num_heads, T, T)``;
a per-batch ``(B, T, T)`` mask matches neither. How it shows: run this file; the call raises a
``RuntimeError`` about the mask shape (seed 2, section 7.2).
"""

# b batch, t time, d d_model
import torch
from torch import nn


class DecoderBlock(nn.Module):
    """Pre-norm decoder block: masked self-attention then a feed-forward net."""

    def __init__(self, d_model: int = 32, n_heads: int = 4):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        B, T, _ = x.shape
        future = torch.ones(B, T, T, dtype=torch.bool, device=x.device).triu(1)  # (B, T, T)
        h = self.ln1(x)
        y, _ = self.self_attn(h, h, h, attn_mask=future, need_weights=False)  # BUG: SC202
        x = x + y
        return x + self.ffn(self.ln2(x))


if __name__ == "__main__":
    block = DecoderBlock().train()  # training mode takes the general (non fast-path) route
    try:
        block(torch.randn(3, 5, 32))
        print("SC202: no error (unexpected)")
    except (RuntimeError, AssertionError) as err:
        print(f"SC202: (B, T, T) attn_mask given to nn.MultiheadAttention -> {type(err).__name__}: {err}")
