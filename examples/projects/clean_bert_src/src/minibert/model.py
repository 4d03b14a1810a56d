"""The encoder: learned positions, a stack of BertLayers, a pooled output."""

import torch
import torch.nn as nn

from minibert.constants import HEADS, HIDDEN

MAX_POSITIONS = 64

__all__ = ["BertEncoder", "MAX_POSITIONS"]


class BertEncoder(nn.Module):
    def __init__(self, vocab_size=120, hidden=HIDDEN, heads=HEADS, layers=2):
        super().__init__()
        from minibert.blocks import BertLayer

        self.embed = nn.Embedding(vocab_size, hidden)
        self.positions = nn.Embedding(MAX_POSITIONS, hidden)
        self.layers = nn.ModuleList([BertLayer(hidden, heads) for _ in range(layers)])
        self.pool = nn.Linear(hidden, hidden)

    def forward(self, idx):
        x = self.embed(idx) + self.positions(torch.arange(idx.shape[1]))
        for layer in self.layers:
            x = layer(x)
        return self.pool(x[:, 0]).tanh()
