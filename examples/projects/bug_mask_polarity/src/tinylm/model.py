"""The LM: embeddings, one attention block, a head over the vocabulary."""

import torch
import torch.nn as nn

from tinylm import masks
from tinylm.attention import SelfAttention


class TinyLM(nn.Module):
    def __init__(self, vocab_size=50, d_model=64, n_heads=4, max_len=32):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.attn = SelfAttention(d_model, n_heads)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(T))
        x = x + self.attn(x, masks.causal_mask(T))
        return self.head(x)
