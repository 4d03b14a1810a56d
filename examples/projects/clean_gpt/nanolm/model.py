"""The GPT; its head shares the token embedding's weight (trap: tying across files)."""

import torch
import torch.nn as nn

from .embeddings import TokenEmbedding
from .layers import CausalSelfAttention


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.tok = TokenEmbedding(config.vocab_size, config.n_embd)
        self.pos = nn.Embedding(config.block_size, config.n_embd)
        self.ln = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.head.weight = self.tok.weight_table.weight

    def forward(self, idx, mask):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(T))
        x = x + self.attn(self.ln(x), mask)
        return self.head(x)
