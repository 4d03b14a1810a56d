import math
import torch
import torch.nn as nn


class MultiHead(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        assert C == self.d_model
        q = self.q(x).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        k = self.k(x).view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        return (q @ k.transpose(-2, -1) / math.sqrt(C)).softmax(-1)
