"""SC301 pe-concatenated: seed 1's sinusoidal positional encoding concatenated to the embeddings.

Bug: ``torch.cat([token_embed, pos_enc], dim=-1)`` doubles the feature width to 2 * d_model
instead of adding position into the same d_model features ("位置编码是加法不是拼接", seed 1 §3.1).
Every layer built for d_model then fails. How it shows: run this file; the embedding comes out
(B, T, 1024) while the encoder expects (B, T, 512).
"""

# b batch, t time, d d_model, v vocab
import math

import torch
from torch import nn


class SinusoidalPositionalEncoding(nn.Module):
    """The fixed table PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(same)."""

    def __init__(self, d_model: int = 512, max_len: int = 512):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1).float()  # (max_len, 1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int = 30522, d_model: int = 512, max_len: int = 512):
        super().__init__()
        self.d_model = d_model
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = SinusoidalPositionalEncoding(d_model, max_len)

    def forward(self, ids):
        B, T = ids.shape
        token_embed = self.embed(ids) * math.sqrt(self.d_model)  # (B, T, d)
        pos_enc = self.pos.pe[:T].unsqueeze(0).expand(B, T, self.d_model)  # (B, T, d)
        return torch.cat([token_embed, pos_enc], dim=-1)  # BUG: SC301


if __name__ == "__main__":
    ids = torch.tensor([[101, 1045, 2293, 17953, 102]])  # [CLS] I love NLP [SEP]
    x = TokenEmbedding()(ids)
    print(f"SC301: PE concatenated instead of added: embeddings are {tuple(x.shape)}, an encoder with d_model=512 expects (1, 5, 512).")
