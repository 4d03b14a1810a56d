"""SC402 heads-not-divisible: seed 1's EncoderLayer built with d_model=512 and n_heads=6.

Bug: 512 is not a multiple of 6, so the model width cannot be split into equal heads. Seed 1's
attention asserts it up front (the good case: a clear error at build time); without the assert the
head split would fail later in ``view``. How it shows: run this file; building the layer raises
``AssertionError: d_model 512 must be divisible by n_heads 6``.
"""

# b batch, t time, d d_model, h heads, k head dim
import torch.nn as nn


class SimpleMultiHeadAttention(nn.Module):
    def __init__(self, d_model: int = 512, n_heads: int = 8, dropout: float = 0.1):
        super().__init__()
        assert d_model % n_heads == 0, f"d_model {d_model} must be divisible by n_heads {n_heads}"
        self.d_model, self.n_heads = d_model, n_heads
        self.d_k = d_model // n_heads  # 64 for d_model=512, n_heads=8
        self.W_Q = nn.Linear(d_model, d_model, bias=False)
        self.W_K = nn.Linear(d_model, d_model, bias=False)
        self.W_V = nn.Linear(d_model, d_model, bias=False)
        self.W_O = nn.Linear(d_model, d_model, bias=False)
        self.dropout = nn.Dropout(dropout)


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int = 512, n_heads: int = 8, d_ff: int = 2048, dropout: float = 0.1):
        super().__init__()
        self.self_attn = SimpleMultiHeadAttention(d_model, n_heads, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)


def build_encoder() -> EncoderLayer:
    return EncoderLayer(d_model=512, n_heads=6)  # BUG: SC402


if __name__ == "__main__":
    try:
        build_encoder()
        print("SC402: no error (unexpected)")
    except AssertionError as err:
        print(f"SC402: 512 model dims cannot be split into 6 equal heads -> AssertionError: {err}")
