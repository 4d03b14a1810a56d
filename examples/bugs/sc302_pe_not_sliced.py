"""SC302 pe-not-sliced: seed 1's positional table added whole to a short sentence.

Bug: ``x + self.pe`` adds all ``max_len`` rows of the table to a sequence of ``T`` tokens; only
``self.pe[:, :T]`` lines up. It works only when every sequence is exactly max_len long. How it
shows: run this file; a 5-token sentence raises a broadcasting ``RuntimeError``.
"""

# b batch, t time, d d_model
import math

import torch
from torch import nn


class PositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal table to (b, t, d) embeddings."""

    def __init__(self, d_model: int = 512, max_len: int = 512, dropout: float = 0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        position = torch.arange(max_len).unsqueeze(1).float()
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = torch.zeros(1, max_len, d_model)  # (1, max_len, d)
        pe[0, :, 0::2] = torch.sin(position * div_term)
        pe[0, :, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe  # BUG: SC302
        return self.dropout(x)


if __name__ == "__main__":
    embed = torch.randn(1, 5, 512)  # [CLS] I love NLP [SEP]
    try:
        PositionalEncoding()(embed)
        print("SC302: no error (unexpected)")
    except RuntimeError as err:
        print(f"SC302: whole (1, 512, 512) table added to a 5-token sequence -> RuntimeError: {err}")
