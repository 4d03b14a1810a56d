"""SC406 linear-chain-mismatch: seed 1's PositionwiseFeedForward with linear2's sizes swapped.

Bug: ``linear1`` maps d_model -> d_ff, so ``linear2`` must map d_ff -> d_model; it was written
``nn.Linear(d_model, d_ff)``. How it shows: run this file; the second layer raises seed 1's
"RuntimeError: mat1 and mat2 shapes cannot be multiplied".
"""

# b batch, t time, d d_model, f d_ff
import torch
import torch.nn as nn
import torch.nn.functional as F


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model: int = 512, d_ff: int = 2048, dropout: float = 0.1):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_model, d_ff)  # BUG: SC406

    def forward(self, x):
        x = F.gelu(self.linear1(x))  # (b, t, f)
        x = self.dropout(x)
        x = self.linear2(x)
        return x


if __name__ == "__main__":
    ffn = PositionwiseFeedForward()
    try:
        ffn(torch.randn(1, 5, 512))
        print("SC406: no error (unexpected)")
    except RuntimeError as err:
        print(f"SC406: linear1 outputs 2048 features but linear2 expects 512 -> RuntimeError: {err}")
