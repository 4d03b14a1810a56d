"""SC405 residual-shape-mismatch: a speech-style encoder whose residual skips the input projection.

Bug: the 80-dim filterbank features are projected to d_model = 64 for attention, but the residual
adds the attention output back onto the raw 80-dim features. ``y = x + Sublayer(x)`` needs both
sides to have the same width (seed 2, §7.5). How it shows: run this file; the add raises a
``RuntimeError`` about sizes 80 and 64.
"""

# b batch, t frames, f n_mels, d d_model
import torch
from torch import nn


class ConformerishStem(nn.Module):
    def __init__(self, n_mels: int = 80, d_model: int = 64, n_heads: int = 4):
        super().__init__()
        self.in_proj = nn.Linear(n_mels, d_model)  # (b, t, f) -> (b, t, d)
        self.norm = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, features):
        h = self.norm(self.in_proj(features))
        y, _ = self.attn(h, h, h, need_weights=False)  # (b, t, d)
        return features + y  # BUG: SC405


if __name__ == "__main__":
    stem = ConformerishStem()
    try:
        stem(torch.randn(2, 50, 80))
        print("SC405: no error (unexpected)")
    except RuntimeError as err:
        print(f"SC405: residual adds (2, 50, 80) features to a (2, 50, 64) attention output -> RuntimeError: {err}")
