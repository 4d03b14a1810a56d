"""SC304 sinusoidal-pe-formula: the sinusoidal table with the minus sign of the exponent lost.

Bug: ``div_term = exp(arange(0, d, 2) * (log(10000) / d))`` computes 10000^(+2i/d) instead of
10000^(-2i/d): the frequencies grow with the dimension instead of shrinking, so the high dims
rotate thousands of radians per token and the table no longer encodes smooth, relative
position. How it shows: run this file; it compares the table with the formula of seed 1 §3.1.
"""

# t position, d d_model
import math

import torch
from torch import nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int = 64, max_len: int = 128):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1).float()  # (t, 1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (math.log(10000.0) / d_model))  # BUG: SC304
        pe = torch.zeros(max_len, d_model)  # (t, d)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)
        self.register_buffer("freq", div_term)

    def forward(self, x):
        return x + self.pe[: x.size(1)]


def reference_table(max_len: int, d_model: int) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d))."""
    pos = torch.arange(max_len).float()[:, None]
    angle = pos / 10000 ** (torch.arange(0, d_model, 2).float() / d_model)
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)


if __name__ == "__main__":
    pe = PositionalEncoding()
    diff = (pe.pe - reference_table(128, 64)).abs().max().item()
    print(
        f"SC304: last frequency is {pe.freq[-1].item():.0f} rad/token (reference {1 / 10000 ** (62 / 64):.5f}); "
        f"table differs from the formula by up to {diff:.2f}."
    )
