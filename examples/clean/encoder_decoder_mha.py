"""An encoder-decoder Transformer on nn.MultiheadAttention: a bidirectional encoder (no causal
mask, padding masked with key_padding_mask), and a decoder whose self-attention gets a (T, T) bool
causal mask (True = blocked) while its cross-attention over the encoder output gets none.

Dims: b batch, s source time, t target time, d d_model, f d_ff, v vocab.
"""

import math

import torch
from torch import nn


class SinusoidalPositionalEncoding(nn.Module):
    def __init__(self, d_model: int, max_len: int = 256):
        super().__init__()
        position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)  # (max_len, d)

    def forward(self, x):
        return x + self.pe[: x.size(1)]  # (b, t, d) + (t, d)


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, dropout=dropout, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x, src_padding):
        h = self.norm1(x)
        x = x + self.self_attn(h, h, h, key_padding_mask=src_padding, need_weights=False)[0]
        return x + self.ff(self.norm2(x))


class DecoderLayer(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, dropout=dropout, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(d_model, n_heads, dropout=dropout, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)

    def forward(self, y, memory, src_padding):
        T = y.size(1)
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=y.device), diagonal=1)  # (t, t), True = future
        h = self.norm1(y)
        y = y + self.self_attn(h, h, h, attn_mask=causal, need_weights=False)[0]
        h = self.norm2(y)
        y = y + self.cross_attn(h, memory, memory, key_padding_mask=src_padding, need_weights=False)[0]
        return y + self.ff(self.norm3(y))


class Seq2SeqTransformer(nn.Module):
    def __init__(self, vocab_size: int = 100, d_model: int = 64, n_heads: int = 4, d_ff: int = 128, n_layers: int = 2, pad_id: int = 0):
        super().__init__()
        self.pad_id = pad_id
        self.scale = math.sqrt(d_model)
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        self.pos = SinusoidalPositionalEncoding(d_model)
        self.encoder = nn.ModuleList([EncoderLayer(d_model, n_heads, d_ff) for _ in range(n_layers)])
        self.decoder = nn.ModuleList([DecoderLayer(d_model, n_heads, d_ff) for _ in range(n_layers)])
        self.norm = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, vocab_size)

    def forward(self, src, tgt):
        src_padding = src == self.pad_id  # (b, s), True = padding
        memory = self.pos(self.embed(src) * self.scale)
        for layer in self.encoder:
            memory = layer(memory, src_padding)
        y = self.pos(self.embed(tgt) * self.scale)
        for layer in self.decoder:
            y = layer(y, memory, src_padding)
        return self.out(self.norm(y))  # (b, t, v)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = Seq2SeqTransformer()
    model.eval()
    src = torch.tensor([[5, 6, 7, 8, 0, 0], [9, 10, 11, 12, 13, 14]])
    tgt = torch.tensor([[1, 20, 21, 22, 23], [1, 30, 31, 32, 33]])
    with torch.no_grad():
        logits = model(src, tgt)
        tgt2 = tgt.clone()
        tgt2[:, -1] = 99
        causal = torch.allclose(logits[:, :-1], model(src, tgt2)[:, :-1], atol=1e-5)
    print(f"logits {tuple(logits.shape)}; earlier target positions ignore later ones: {causal}")
