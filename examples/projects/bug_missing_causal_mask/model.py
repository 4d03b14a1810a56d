"""A GPT: token and position embeddings, attention blocks, a head over the vocabulary."""

import torch
import torch.nn as nn

import attention


class Block(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.ln = nn.LayerNorm(d_model)
        self.attn = attention.SelfAttention(d_model, n_heads)

    def forward(self, x):
        return x + self.attn(self.ln(x))


class GPT(nn.Module):
    def __init__(self, vocab_size=64, d_model=32, n_heads=4, max_len=16, n_layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList([Block(d_model, n_heads) for _ in range(n_layers)])
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(T))
        for block in self.blocks:
            x = block(x)
        return self.head(x)
