import math
import torch
import torch.nn as nn


class MultiHead(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.d_model = d_model
        self.n_heads = n_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        assert C == self.d_model
        q = self.q(x).view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)
        k = self.k(x).view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)
        by_dk = (q @ k.transpose(-2, -1) / (self.d_model // self.n_heads)).softmax(-1)
        by_sqrt = (q @ k.transpose(-2, -1) * math.sqrt(self.d_model // self.n_heads)).softmax(-1)
        return by_dk, by_sqrt
