"""A small GPT put together from the config and the layers."""

import torch
import torch.nn as nn

from config import GPTConfig
from layers import CausalSelfAttention


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln = nn.LayerNorm(config.n_embd)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

    def forward(self, idx):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T))
        x = x + self.attn(self.ln(x))
        return self.lm_head(x)
