"""Encoder blocks. This module and model.py import each other (an import cycle)."""

import math

import torch.nn as nn

from minibert import model
from minibert.constants import FF_MULT


class BertSelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.head_size = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def split(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.heads, self.head_size).transpose(1, 2)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_size)
        context = scores.softmax(dim=-1) @ v
        return context.transpose(1, 2).reshape(B, T, C)


class BertLayer(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.attention = BertSelfAttention(hidden, heads)
        self.norm1 = nn.LayerNorm(hidden)
        self.ff = nn.Sequential(nn.Linear(hidden, FF_MULT * hidden), nn.GELU(), nn.Linear(FF_MULT * hidden, hidden))
        self.norm2 = nn.LayerNorm(hidden)
        self.max_positions = model.MAX_POSITIONS

    def forward(self, x):
        x = self.norm1(x + self.attention(x))
        return self.norm2(x + self.ff(x))
